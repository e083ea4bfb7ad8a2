/* write-model.c — writes a synthetic model trace (model-trace.h) at size N:
 *   write-model [--quad BYTES] [--workspace-at N] [--branch-at N]
 *               [--data-size] [--layers L] [--steps S] PATH N
 * for the CLI tests and by hand. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model-trace.h"

int main(int argc, char **argv)
{
	struct model_params mp;
	int i = 1;
	model_params_default(&mp);
	for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--data-size")) {
			mp.data_size = true;
			continue;
		}
		unsigned long long v = strtoull(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--quad"))
			mp.quad = v;
		else if (!strcmp(argv[i], "--workspace-at"))
			mp.workspace_at = v;
		else if (!strcmp(argv[i], "--branch-at"))
			mp.branch_at = v;
		else if (!strcmp(argv[i], "--layers"))
			mp.layers = (unsigned)v;
		else if (!strcmp(argv[i], "--steps"))
			mp.steps = (unsigned)v;
		else
			break;
		i++;
	}
	if (argc - i != 2 || mp.layers < 1) {
		fprintf(stderr,
		        "usage: write-model [--quad BYTES] [--workspace-at N] [--branch-at N] "
		        "[--data-size] [--layers L] [--steps S] PATH N\n");
		return 2;
	}
	int rc = model_trace_write(argv[i], &mp, strtoull(argv[i + 1], NULL, 10));
	if (rc < 0) {
		fprintf(stderr, "write-model: %s: %s\n", argv[i], strerror(-rc));
		return 1;
	}
	return 0;
}
