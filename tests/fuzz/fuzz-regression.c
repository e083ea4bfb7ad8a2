/* fuzz-regression.c — runs every file of a corpus folder through a fuzz
 * target as an ordinary test (built with any compiler, no libFuzzer). */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz-target.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-FOLDER\n", argv[0]);
		return 2;
	}
	DIR *dir = opendir(argv[1]);
	if (!dir) {
		perror(argv[1]);
		return 1;
	}
	struct dirent *de;
	int files = 0;
	while ((de = readdir(dir))) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		FILE *f = fopen(path, "rb");
		uint8_t *buf = malloc((size_t)st.st_size + 1);
		if (!f || !buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
			fprintf(stderr, "%s: cannot read\n", path);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
		free(buf);
		files++;
	}
	closedir(dir);
	printf("%d inputs\n", files);
	/* An empty corpus would test nothing. */
	return files > 0 ? 0 : 1;
}
