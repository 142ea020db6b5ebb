/* SPDX-License-Identifier: MIT */
/*
 * Settings through the real ncclNet table: init with a ZSM_* value that
 * is malformed, or that names a provider or NIC zsm cannot use (also
 * because FI_PROVIDER hides it), must give ncclInvalidUsage and a WARN
 * naming the variable and the text, as NCCL would see them.  One child
 * process per case, since the plugin reads its settings at the first
 * init; a well-formed case shows the rest can pass.
 * usage: init_settings PLUGIN.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "zsm_client.h"

struct settings_case {
	const char *var;
	const char *value;
	int want; /* ncclResult_t */
	/* What the WARN must hold, besides the variable's name. */
	const char *warn_has;
};

static const struct settings_case settings_cases[] = {
	{"ZSM_PROVIDER", "nothere", ncclInvalidUsage,
	 "ZSM_PROVIDER=nothere matches no provider"},
	{"ZSM_DOMAIN", "lo,eth9", ncclInvalidUsage,
	 "eth9 is not a domain libfabric offers"},
	{"ZSM_DOMAIN", "lo,,eth0", ncclInvalidUsage, "item 2 is empty"},
	{"ZSM_DOMAIN", "lo,", ncclInvalidUsage, "item 2 is empty"},
	{"ZSM_CONNECT_TIMEOUT_MS", "0400", ncclInvalidUsage, "'0400'"},
	{"ZSM_CONNECT_TIMEOUT_MS", "0x100", ncclInvalidUsage, "'0x100'"},
	{"ZSM_CONNECT_TIMEOUT_MS", "+1", ncclInvalidUsage, "'+1'"},
	{"ZSM_CONNECT_TIMEOUT_MS", " 5", ncclInvalidUsage, "' 5'"},
	/* The same forms inside the range, where only the syntax is wrong. */
	{"ZSM_CONNECT_TIMEOUT_MS", "+1000", ncclInvalidUsage, "'+1000'"},
	{"ZSM_CONNECT_TIMEOUT_MS", " 5000", ncclInvalidUsage, "' 5000'"},
	{"ZSM_PROXY_SPIN_US", "+1", ncclInvalidUsage, "'+1'"},
	{"ZSM_PROXY_SPIN_US", " 5", ncclInvalidUsage, "' 5'"},
	/* libfabric's own filter hides tcp: the message must name it, not
	 * only the ZSM_* name it made fail (issue 32, finding 11). */
	{"FI_PROVIDER", "efa", ncclInvalidUsage,
	 "FI_PROVIDER=efa limits libfabric"},
	/* Well formed: init works, so the refusals above are the values'. */
	{"ZSM_CONNECT_TIMEOUT_MS", "400", ncclSuccess, NULL},
};

static const char *settings_plugin;

/* Run one case; returns 0 when it behaved.  Runs in the child. */
static int settings_run(void *arg)
{
	const struct settings_case *k = arg;
	struct zsm_client *c;
	FILE *cap = tmpfile();
	char log[8192];
	size_t n;
	int r, ok;

	setenv("ZSM_PROVIDER", "tcp", 1);
	setenv("ZSM_DOMAIN", "lo", 1);
	setenv(k->var, k->value, 1);
	if (!cap || zsm_client_open(settings_plugin, 0, &c) != ncclSuccess)
		return 1;
	/* The plugin's WARNs reach stderr through zsm_client_logger. */
	fflush(stderr);
	if (dup2(fileno(cap), STDERR_FILENO) < 0)
		return 1;
	r = zsm_client_init(c, 0x7a736d53u);
	fflush(stderr);
	rewind(cap);
	n = fread(log, 1, sizeof(log) - 1, cap);
	log[n] = '\0';
	ok = r == k->want;
	if (k->warn_has)
		ok = ok && strstr(log, k->var) && strstr(log, k->warn_has);
	printf("%s %s='%s': %s (want %s)\n", ok ? "ok  " : "FAIL", k->var,
	       k->value, zsm_client_result_str(r),
	       zsm_client_result_str(k->want));
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
		printf("       %s\n", line);
	if (k->warn_has && !ok)
		printf("       want a WARN naming %s with \"%s\"\n", k->var,
		       k->warn_has);
	if (r == ncclSuccess)
		zsm_client_finalize(c);
	zsm_client_close(c);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	size_t ncase = sizeof(settings_cases) / sizeof(settings_cases[0]);
	int failures = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
		return 2;
	}
	settings_plugin = argv[1];
	for (size_t i = 0; i < ncase; i++)
		if (zsm_child_run(settings_run,
				  (void *)&settings_cases[i]) != 0)
			failures++;
	printf("%s: %d of %zu case(s) failed\n", argv[0], failures, ncase);
	return failures ? 1 : 0;
}
