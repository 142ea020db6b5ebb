/* SPDX-License-Identifier: MIT */
/*
 * Loading the plugin and initialising it through the real table must
 * leave the application's signal handlers in place: Debian's libfabric
 * pulls in a library whose constructor replaces them (net_fi_lib.h).
 * Two children: one where the plugin is the first to load libfabric, one
 * where the application loaded it earlier (nothing to put back then, and
 * the plugin must still work).
 * usage: test_signals PLUGIN.so
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "zsm_client.h"

/* What a crash handler takes; SIGINT is the one raised. */
static const int signals_watched[] = {SIGSEGV, SIGBUS, SIGILL,
				      SIGABRT, SIGTERM, SIGINT};
#define SIGNALS_N (sizeof(signals_watched) / sizeof(signals_watched[0]))

static volatile sig_atomic_t signals_caught;

static void signals_handler(int sig)
{
	if (sig == SIGINT)
		signals_caught++;
}

/* How many watched signals no longer run signals_handler; says which. */
static int signals_lost(const char *when)
{
	int lost = 0;

	for (size_t i = 0; i < SIGNALS_N; i++) {
		struct sigaction now;
		int sig = signals_watched[i];

		if (sigaction(sig, NULL, &now) != 0 ||
		    now.sa_handler != signals_handler ||
		    (now.sa_flags & SA_SIGINFO)) {
			Dl_info where;
			void *addr;

			memcpy(&addr, &now.sa_handler, sizeof(addr));
			printf("FAIL %s: SIG%s's handler is no longer ours "
			       "(%p, in %s)\n",
			       when, sigabbrev_np(sig), addr,
			       dladdr(addr, &where) && where.dli_fname
				       ? where.dli_fname
				       : "?");
			lost++;
		}
	}
	return lost;
}

static const char *signals_plugin;

/* One scenario; returns 0 when it behaved.  Runs in a child. */
static int signals_run(void *arg)
{
	const int preload = *(const int *)arg;
	struct sigaction sa;
	struct zsm_client *c;
	int failures = 0, r;

	if (preload && !dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL)) {
		printf("FAIL cannot load libfabric.so.1: %s\n", dlerror());
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = signals_handler;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < SIGNALS_N; i++)
		sigaction(signals_watched[i], &sa, NULL);
	if (zsm_client_open(signals_plugin, 0, &c) != ncclSuccess)
		return 1;
	failures += signals_lost("after dlopen");
	r = zsm_client_init(c, 0x7a736d51u);
	if (r != ncclSuccess) {
		printf("FAIL init: %s\n", zsm_client_result_str(r));
		failures++;
	}
	failures += signals_lost("after init");
	/* Raised only when the handler is ours: a foreign one may exit. */
	if (!failures) {
		raise(SIGINT);
		if (signals_caught != 1) {
			printf("FAIL raise(SIGINT) did not run our handler\n");
			failures++;
		}
	}
	if (r == ncclSuccess)
		zsm_client_finalize(c);
	zsm_client_close(c);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"plugin loads libfabric",
					    "libfabric loaded before"};
	static const int preloads[] = {0, 1};
	int failures = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
		return 2;
	}
	signals_plugin = argv[1];
	for (int preload = 0; preload < 2; preload++) {
		if (zsm_child_run(signals_run, (void *)&preloads[preload])) {
			printf("FAIL %s\n", names[preload]);
			failures++;
		} else {
			printf("ok   %s: the %zu handlers stay ours, SIGINT "
			       "runs ours\n",
			       names[preload], SIGNALS_N);
		}
	}
	return failures ? 1 : 0;
}
