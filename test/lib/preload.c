/* SPDX-License-Identifier: MIT */
/*
 * Owns ZSM_CLIENT_PRELOAD.  Debian 12's libfabric 1.17 pulls in
 * libinfinipath, whose constructor spends 0.2 s calibrating the clock at
 * every load; a harness whose ranks each load the plugin (and so
 * libfabric) pays that per rank and per check, a fifth of a short check's
 * time.  Loaded once before the ranks fork, the library is already there
 * when a rank's plugin asks for it by name.
 *
 * The dispositions a load changes are put back (psm takes SIGSEGV and
 * others for its backtraces), so that the ranks keep the harness's own
 * handlers and the default ones, as they would have without the preload;
 * the plugin restores what a load changed in the same way when it loads
 * libfabric itself.
 */
#include "preload.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int preload_one(const char *name)
{
	static struct sigaction before[NSIG];
	static unsigned char saved[NSIG];

	for (int sig = 1; sig < NSIG; sig++)
		saved[sig] = sigaction(sig, NULL, &before[sig]) == 0;
	if (!dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "ZSM_CLIENT_PRELOAD: cannot load %s: %s\n",
			name, dlerror());
		return -1;
	}
	for (int sig = 1; sig < NSIG; sig++)
		if (saved[sig])
			(void)sigaction(sig, &before[sig], NULL);
	return 0;
}

int preload_from_env(void)
{
	const char *env = getenv("ZSM_CLIENT_PRELOAD");
	char *list, *save = NULL;
	int ret = 0;

	if (!env || !*env)
		return 0;
	list = strdup(env);
	if (!list) {
		fprintf(stderr, "ZSM_CLIENT_PRELOAD: out of memory\n");
		return -1;
	}
	for (char *name = strtok_r(list, ":", &save); name && ret == 0;
	     name = strtok_r(NULL, ":", &save))
		ret = preload_one(name);
	free(list);
	return ret;
}
