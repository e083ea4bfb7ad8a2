// fork.cu — a parent and a child process (fork + exec of itself) each
// allocate. The parent allocates 2 MiB, starts "fork.cu child" which
// allocates 3 MiB three times, waits for it, and frees. Expected: two
// process rows (the child names the parent), 1 + 3 allocs.
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sample.h"

int main(int argc, char **argv)
{
	void *p;
	int status = 0;

	if (argc > 1 && !strcmp(argv[1], "child")) {
		for (int i = 0; i < 3; i++) {
			CHECK(cudaMalloc(&p, 3 << 20));
			CHECK(cudaFree(p));
		}
		return 0;
	}
	CHECK(cudaMalloc(&p, 2 << 20));
	pid_t pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	CHECK(cudaFree(p));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
