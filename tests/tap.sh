# tap.sh — TAP for the shell tests, as tests/tap.h is for the C ones.
# Source it ('. "$(dirname "$0")/../tap.sh"'), then:
#   check DESCRIPTION COMMAND...  runs COMMAND; prints "ok N - DESCRIPTION",
#                                 or "not ok N - DESCRIPTION" when it fails
#   tap_done                      prints the plan "1..N" and exits 1 when a
#                                 check failed, else 0
# Declare the test in meson with protocol: 'tap'.
tap_n=0
tap_failed=0
check() {
	tap_what=$1
	shift
	tap_n=$((tap_n + 1))
	if "$@"; then
		echo "ok $tap_n - $tap_what"
	else
		echo "not ok $tap_n - $tap_what"
		tap_failed=1
	fi
}
tap_done() {
	echo "1..$tap_n"
	exit $tap_failed
}
