# A pickle that would build objects is refused in one line, exit 1, and
# nothing is left under the output name (nor a temporary file beside it).
printf '\x80\x02cos\nsystem\n(S"true"\ntR.' > evil.pickle
"$MEMTRACE" import evil.pickle -o out.db
echo "exit $?"
printf 'Thread,Time,Action,Pointer,Size,Stream\n1,2,allocate\n' > bad.csv
"$MEMTRACE" import bad.csv -o out.db
echo "exit $?"
"$MEMTRACE" import missing.pickle -o out.db
echo "exit $?"
ls -A
