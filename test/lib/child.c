/* SPDX-License-Identifier: MIT */
/* Owns the fork and wait of zsm_child_run. */
#include "child.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int zsm_child_run(int (*fn)(void *arg), void *arg)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return -1;
	}
	if (pid == 0) {
		int ret = fn(arg);

		fflush(NULL);
		_exit(ret);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status)) {
		printf("the child died by signal %d (%s)\n", WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
		return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
