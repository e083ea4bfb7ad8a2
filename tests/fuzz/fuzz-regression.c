/* fuzz-regression.c — runs every file of a corpus folder through a fuzz
 * target as an ordinary test (built with any compiler, no libFuzzer), one
 * TAP case per file in name order. A target signals a failure by aborting,
 * so a failing input ends the run (meson reports the crash) after the last
 * "ok" names the input before it. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz-target.h"

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Reads path whole; NULL if it is not a readable regular file. */
static uint8_t *read_input(const char *path, size_t *len)
{
	struct stat st;
	FILE *f;
	uint8_t *buf;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	f = fopen(path, "rb");
	buf = malloc((size_t)st.st_size + 1);
	if (!f || !buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*len = (size_t)st.st_size;
	return buf;
}

int main(int argc, char **argv)
{
	struct dirent **names;
	int n, cases = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-FOLDER\n", argv[0]);
		return 2;
	}
	n = scandir(argv[1], &names, NULL, by_name);
	if (n < 0) {
		printf("Bail out! %s: cannot list the corpus\n", argv[1]);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		size_t len;
		uint8_t *buf;

		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]->d_name);
		buf = names[i]->d_name[0] == '.' ? NULL : read_input(path, &len);
		if (buf) {
			fflush(stdout);
			LLVMFuzzerTestOneInput(buf, len);
			printf("ok %d - %s\n", ++cases, names[i]->d_name);
			free(buf);
		}
		free(names[i]);
	}
	free(names);
	/* An empty corpus would test nothing. */
	if (!cases)
		printf("not ok %d - the corpus %s holds no input\n", ++cases, argv[1]);
	printf("1..%d\n", cases);
	return 0;
}
