# Usage errors of export exit 2 with one line each; nothing is written.
T="$SRC/samples/traces/linear-small.db"
"$MEMTRACE" export "$T"; echo "exit $?"
"$MEMTRACE" export "$T" -o out.xyz; echo "exit $?"
"$MEMTRACE" export "$T" -o -; echo "exit $?"
"$MEMTRACE" export "$T" -o out.csv --format nope; echo "exit $?"
"$MEMTRACE" export "$T" -o out.csv --policy caching; echo "exit $?"
"$MEMTRACE" export "$T" -o out.csv --device x; echo "exit $?"
"$MEMTRACE" export "$T" -o out.csv --device 9; echo "exit $?"
"$MEMTRACE" import; echo "exit $?"
"$MEMTRACE" import a b; echo "exit $?"
ls -A
