# What ran at the peak and at each OOM, in the words of the report, on the
# hand-written traces KERNELS_GPU and KERNELS_LAUNCH (tests/analyze/
# fixtures.c works out each answer): GPU times say running or ended, launch
# times say they are launch times; at the OOM on stream 3, which launched
# nothing, the kernel is on another stream and the words say so.
for t in kernels-gpu kernels-launch; do
    "$WRITE_TRACE" $t $t.db
    echo "== $t"
    "$MEMTRACE" report $t.db | grep -A3 -E '^At the peak|at that moment:'
done
