/* write-trace — writes one of the analyze tests' hand-written traces
 * (fixtures.c) for the report goldens: write-trace NAME PATH. */
#include "config.h"

#include <stdio.h>

#include "fixtures.h"

int main(int argc, char **argv)
{
	enum fx_trace which;

	if (argc != 3 || fx_from_name(argv[1], &which) < 0) {
		fprintf(stderr, "usage: write-trace "
		                "main|main-replays|asis|asis-no-sample|ooms|oom-loop PATH\n");
		return 2;
	}
	if (fx_write(which, argv[2]) < 0) {
		fprintf(stderr, "write-trace: could not write %s\n", argv[2]);
		return 1;
	}
	return 0;
}
