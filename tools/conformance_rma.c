/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma: NCCL 2.30's RMA table of any plugin
 * (ncclRmaPlugin_v14, else _v13, else ncclGinPlugin_v13, as NCCL looks
 * them up, or exactly --rma-abi's), driven as NCCL's RMA and GIN proxies
 * drive it, by N ranks forked from this process afresh for each check.
 * The ranks share one anonymous page, which stands in for NCCL's
 * bootstrap: the listen handles' all-gather, barriers, each rank's
 * reason to fail and what it was doing.  Each rank sets its host
 * identity (--hosts, --hostid-env) before it loads the plugin, so that a
 * plugin telling hosts apart by it takes its network path between ranks
 * of different identities.  Every wait has a deadline and says what it
 * waited for; a check that runs past its limit is killed with its ranks
 * and fails, naming what each was doing.  Section numbers in the
 * messages are nccl-plugin-abi.md's.
 *
 * This file has the checks every run starts with (rma_load, rma_gpu), the
 * catalog and its runner; the other checks are conformance_rma_*.c's, a
 * family a file, on the helpers of conformance_rma_int.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance_rma_int.h"
#include "zsm_client.h"

/* rma_gpu: what --gpu needs, before any check */

static int rc_check_gpu(struct rk *k)
{
	char why[RC_WHY];
	unsigned ptr;

	rc_doing(k, "opening the CUDA driver");
	if (rc_gpu_open(k, why, sizeof(why)))
		return rc_skip(k, "GPU %d: %s", rc_o.gpu_ord[k->rank % 2], why);
	RC_TRY(rc_start(k));
	ptr = (unsigned)k->props.ptrSupport;
	RC_TRY(rc_leave(k, 1));
	if (!(ptr & NCCL_PTR_CUDA))
		return rc_skip(k, "getProperties(%d): ptrSupport 0x%x lacks "
				  "NCCL_PTR_CUDA: NCCL registers no GPU window "
				  "with this plugin",
			       rc_o.dev, ptr);
	if (k->rank == 0)
		rc_note(k, "CUDA driver %d, even ranks on GPU %d, odd ranks on "
			   "GPU %d; ptrSupport 0x%x",
			k->cu.driver_version, rc_o.gpu_ord[0], rc_o.gpu_ord[1],
			ptr);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_load: what every check uses */

static int rc_check_load(struct rk *k)
{
	char why[RC_WHY];
	void *ctx = NULL;
	int ndev = 0, r;

	if (k->rank)
		return OOB_PASS;
	if (rma_client_open(&k->t, rc_o.plugin, rc_o.abi, why, sizeof(why)))
		return rc_fail(k, "%s", why);
	rc_sh->abi = k->t.abi;
	snprintf(rc_sh->sym, sizeof(rc_sh->sym), "%s", k->t.sym);
	snprintf(rc_sh->name, sizeof(rc_sh->name), "%s",
		 k->t.name ? k->t.name : "(NULL)");
	r = k->t.init(&ctx, RC_COMM_ID, zsm_client_logger);
	if (r != ncclSuccess) {
		rma_client_close(&k->t);
		return rc_skip(k, "%s.init returned %s: the RMA table is not "
				  "usable here (zsm: ZSM_RMA=1 turns it on)",
			       rc_sh->sym, rc_res(r));
	}
	r = k->t.devices(&ndev);
	if (r != ncclSuccess || ndev <= 0) {
		k->t.finalize(ctx);
		rma_client_close(&k->t);
		return rc_skip(k, "devices returned %s and %d devices",
			       rc_res(r), ndev);
	}
	if (rc_o.dev >= ndev) {
		k->t.finalize(ctx);
		rma_client_close(&k->t);
		return rc_fail(k, "device %d asked for, the plugin has %d",
			       rc_o.dev, ndev);
	}
	r = k->t.finalize(ctx);
	rma_client_close(&k->t);
	if (r != ncclSuccess)
		return rc_fail(k, "finalize returned %s", rc_res(r));
	rc_note(k, "%s '%s' of %s, %d device%s", rc_sh->sym, rc_sh->name,
		rc_o.plugin, ndev, ndev == 1 ? "" : "s");
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* The catalog and its runner */

struct rc_check {
	const char *name;
	int (*fn)(struct rk *k);
	unsigned timeout_s;
	int solo; /* rank 0 alone */
	const char *what;
	/* NCCL's rule it holds the plugin to, for the FAIL line. */
	const char *rule;
};

static const struct rc_check rc_load = {
	"rma_load", rc_check_load, 30, 1,
	"the table loads, init succeeds, devices > 0", NULL
};

/* With --gpu every check's windows are GPU memory, once this passed. */
static const struct rc_check rc_gpu = {
	"rma_gpu", rc_check_gpu, 30, 0,
	"every rank's CUDA device is there and the plugin advertises "
	"NCCL_PTR_CUDA",
	NULL
};

static const struct rc_check rc_checks[] = {
	{ "rma_init_connect", rc_check_init_connect, 60, 0,
	  "init twice, connect on contexts not listen's, GIN_PROXY, every "
	  "link carries data",
	  "init runs twice per comm and connect gets another plugin's "
	  "context; netDeviceType is GIN_PROXY (3.1, 3.3 set-up, 6.4, 6.9)" },
	{ "rma_register", rc_check_register, 60, 0,
	  "symmetric registrations in NCCL's order and flags reach every "
	  "peer's copy",
	  "regMrSym is collective, in one order on every rank, and its "
	  "handle addresses every peer's copy; signals FORCE_SO|"
	  "SIGNAL_NEVER_RESET, data 0, host memory too (3.3 registration)" },
	{ "rma_put_get", rc_check_put_get, 60, 0,
	  "puts and gets from 0 bytes to --max-size at odd offsets, "
	  "byte-exact, nothing around them written",
	  "offsets are relative to each rank's window; a put or get moves "
	  "exactly its bytes (3.3 registration, data operations)" },
	{ "rma_signal_order", rc_check_signal_order, 60, 0,
	  "a strong signal's reader finds every earlier put's bytes",
	  "when a strong signal is visible, its put and every earlier put "
	  "and signal on the context are (3.3 data operations)" },
	{ "rma_signal_only", rc_check_signal_only, 60, 0,
	  "signals alone (size 0, NULL handles): INC adds 1, ADD its value, "
	  "exactly",
	  "size 0 is a signal alone with NULL handles; INC adds 1, ADD adds "
	  "signalValue (3.3 data operations, 6.11)" },
	{ "rma_contexts", rc_check_contexts, 60, 0,
	  "contexts take and finish work while another's is outstanding",
	  "a context is an independent ordering domain; NCCL's credits are "
	  "per context (3.3 contexts, data operations)" },
	{ "rma_credits", rc_check_credits, 60, 0,
	  "32 x maxRecvs puts in flight to every peer, each with a request",
	  "iput and iputSignal always return a request; NCCL keeps up to 32 "
	  "x maxRecvs in flight per peer (3.3 data operations, 6.7)" },
	{ "rma_peer_dies", rc_check_peer_dies, 60, 0,
	  "a killed peer is an error within the limit, nothing hangs",
	  "a dead peer is an error of test, iputSignal or queryLastError; "
	  "NCCL's proxy otherwise waits for ever (3.3 error handling, 6.15)" },
	{ "rma_last_error", rc_check_last_error, 60, 0,
	  "queryLastError false on healthy comms, true once a peer died",
	  "queryLastError reports a failed comm (3.2, 3.3 error handling)" },
	{ "rma_finalize_failed_init", rc_check_finalize_failed_init, 30, 1,
	  "finalize after a failed init does not crash",
	  "NCCL 2.28.9 calls finalize even when init failed (1.5, 6.13)" },
};

#define RC_NCHECKS (sizeof(rc_checks) / sizeof(rc_checks[0]))

size_t rc_default_max_size(int nranks)
{
	/* Two regions of this size a rank: about 4 GiB of windows in all,
	 * 1 GiB with 2 ranks. */
	return ((size_t)2 << 30) / (size_t)nranks;
}

void rc_list(void)
{
	for (size_t i = 0; i < RC_NCHECKS; i++)
		printf("%-24s %s\n", rc_checks[i].name, rc_checks[i].what);
}

int rc_known(const char *name, size_t len)
{
	for (size_t i = 0; i < RC_NCHECKS; i++)
		if (strlen(rc_checks[i].name) == len &&
		    !strncmp(rc_checks[i].name, name, len))
			return 1;
	return 0;
}

/* A check's limit: the catalog's, grown with the work asked for. */
static unsigned rc_limit(const struct rc_check *c)
{
	unsigned s = c->timeout_s;

	if (rc_o.timeout_s)
		return (unsigned)rc_o.timeout_s * (unsigned)rc_o.scale;
	if (c->fn == rc_check_put_get)
		s += (unsigned)(rc_o.max_size >> 23); /* 8 MiB a second */
	if (c->fn == rc_check_signal_order)
		s += (unsigned)(rc_o.signals / 5000);
	return s * (unsigned)rc_o.scale;
}

static void rc_child(const struct rc_check *c, int rank, int n,
		     unsigned limit_s, pid_t parent)
{
	struct rk k;
	char id[32];

	/* Die with the tool, and in any case a while after the limit. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(OOB_FAIL);
	alarm(limit_s + 30);
	memset(&k, 0, sizeof(k));
	k.rank = rank;
	k.n = n;
	/* Before the plugin loads, which may read it at once. */
	if (rc_o.hostid_env) {
		snprintf(id, sizeof(id), "rmahost%d", rank % rc_o.hosts);
		setenv(rc_o.hostid_env, id, 1);
	}
	int s = c->fn(&k);

	fflush(NULL);
	_exit(s == OOB_PASS || s == OOB_SKIP ? s : OOB_FAIL);
}

/* Kill every rank still running and reap it, saying why in its slot. */
static void rc_kill_all(const pid_t *pid, int *res, int n, const char *why,
			int secondary)
{
	for (int r = 0; r < n; r++) {
		if (res[r] >= 0)
			continue;
		kill(pid[r], SIGKILL);
	}
	for (int r = 0; r < n; r++) {
		if (res[r] >= 0)
			continue;
		waitpid(pid[r], NULL, 0);
		res[r] = OOB_FAIL;
		char doing[RC_DOING + 1];

		snprintf(doing, sizeof(doing), "%s",
			 rc_sh->doing[r][0] ? rc_sh->doing[r] : "starting");
		snprintf(rc_sh->why[r], RC_WHY, "%s while %s", why, doing);
		rc_sh->secondary[r] = secondary;
	}
}

/* Fork the check's ranks, wait for them within its limit, print the
 * verdict; OOB_PASS, OOB_SKIP or OOB_FAIL. */
static int rc_run(const struct rc_check *c, unsigned limit_s)
{
	const int n = c->solo ? 1 : rc_o.nranks;
	pid_t pid[RC_MAX_RANKS], parent = getpid();
	int res[RC_MAX_RANKS], alive = 0, result = OOB_PASS;
	uint64_t t0, failed_at = 0;
	char why[1600] = "";
	struct rc_shared keep;

	/* A fresh page but for rma_load's findings. */
	memcpy(&keep, rc_sh, sizeof(keep));
	memset(rc_sh, 0, sizeof(*rc_sh));
	rc_sh->abi = keep.abi;
	memcpy(rc_sh->sym, keep.sym, sizeof(keep.sym));
	memcpy(rc_sh->name, keep.name, sizeof(keep.name));
	fflush(NULL);
	for (int r = 0; r < n; r++) {
		res[r] = -1;
		pid[r] = fork();
		if (pid[r] == 0)
			rc_child(c, r, n, limit_s, parent);
		if (pid[r] < 0) {
			res[r] = OOB_FAIL;
			snprintf(rc_sh->why[r], RC_WHY, "fork: %s",
				 strerror(errno));
			/* release: pairs with rc_stopped in the ranks. */
			atomic_store_explicit(&rc_sh->failed, 1,
					      memory_order_release);
			failed_at = zsm_client_now_ns();
		} else {
			alive++;
		}
	}
	t0 = zsm_client_now_ns();
	while (alive) {
		int st, r = -1;
		pid_t p = waitpid(-1, &st, WNOHANG);

		for (int i = 0; p > 0 && i < n; i++)
			if (pid[i] == p)
				r = i;
		if (r >= 0) {
			alive--;
			/* acquire: pairs with rc_die's release store. */
			int wanted = atomic_load_explicit(&rc_sh->victim,
							  memory_order_acquire) ==
				     r + 1;

			if (WIFEXITED(st)) {
				res[r] = WEXITSTATUS(st);
				if (res[r] != OOB_PASS && res[r] != OOB_SKIP)
					res[r] = OOB_FAIL;
			} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL &&
				   wanted) {
				res[r] = OOB_PASS;
			} else {
				res[r] = OOB_FAIL;
				snprintf(rc_sh->why[r], RC_WHY,
					 "crashed (%s) while %s",
					 WIFSIGNALED(st)
						 ? strsignal(WTERMSIG(st))
						 : "?",
					 rc_sh->doing[r]);
				rc_sh->secondary[r] = 0;
			}
			if (res[r] == OOB_FAIL && !failed_at) {
				failed_at = zsm_client_now_ns();
				/* release: pairs with rc_stopped. */
				atomic_store_explicit(&rc_sh->failed, 1,
						      memory_order_release);
			}
			continue;
		}
		if (p < 0 && errno != EINTR)
			break;
		if (rc_ms_since(t0) > (long)limit_s * 1000) {
			snprintf(why, sizeof(why), "timed out after %u s",
				 limit_s);
			rc_kill_all(pid, res, n, why, 0);
			break;
		}
		if (failed_at &&
		    (long)((zsm_client_now_ns() - failed_at) / 1000000ULL) >
			    RC_GRACE_MS) {
			snprintf(why, sizeof(why),
				 "killed %ld ms after another rank failed",
				 RC_GRACE_MS);
			rc_kill_all(pid, res, n, why, 1);
			break;
		}
		rc_nap_us(2000);
	}
	why[0] = '\0';
	for (int r = 0; r < n; r++) {
		if (res[r] == OOB_FAIL)
			result = OOB_FAIL;
		else if (res[r] == OOB_SKIP && result == OOB_PASS)
			result = OOB_SKIP;
	}
	/* The reasons: first-hand ones, or the others when there are none;
	 * two in full, then the other ranks' numbers (with the first's
	 * reason, or one not shown). */
	for (int pass = 0, shown = 0, first = -1; pass < 2 && !why[0];
	     pass++) {
		char more[64] = "";

		for (int r = 0; r < n; r++) {
			size_t used = strlen(why);

			if (!rc_sh->why[r][0] || rc_sh->secondary[r] != pass)
				continue;
			if (result == OOB_FAIL && res[r] != OOB_FAIL)
				continue;
			if (first < 0)
				first = r;
			/* The first reason again is only one rank more. */
			if ((r == first ||
			     strcmp(rc_sh->why[r], rc_sh->why[first])) &&
			    shown++ < 2) {
				snprintf(why + used, sizeof(why) - used,
					 "%srank %d: %s", used ? "; " : "", r,
					 rc_sh->why[r]);
				continue;
			}
			used = strlen(more);
			snprintf(more + used, sizeof(more) - used, "%s%d",
				 used ? ", " : "", r);
		}
		if (more[0]) {
			size_t used = strlen(why);

			snprintf(why + used, sizeof(why) - used,
				 "; rank%s %s too", strchr(more, ',') ? "s" : "",
				 more);
		}
	}
	for (int r = 0; r < n; r++)
		if (rc_sh->note[r][0])
			printf("# %s: %s\n", c->name, rc_sh->note[r]);
	if (c->fn == rc_check_signal_order) {
		uint64_t sum = 0, bad = 0;

		for (int r = 0; r < n; r++) {
			sum += rc_sh->checked[r];
			bad += rc_sh->violations[r];
		}
		if (sum)
			printf("# %s: %llu strong signals read and checked by "
			       "the ranks that finished, %llu violations\n",
			       c->name, (unsigned long long)sum,
			       (unsigned long long)bad);
	}
	if (result == OOB_PASS)
		printf("PASS %s: %s\n", c->name, c->what);
	else if (result == OOB_SKIP)
		printf("SKIP %s: %s\n", c->name, why[0] ? why : "skipped");
	else
		printf("FAIL %s: %s%s%s%s\n", c->name,
		       why[0] ? why
			      : "a rank ended with a failure status but no "
				"reason (see stderr)",
		       c->rule ? " [rule: " : "", c->rule ? c->rule : "",
		       c->rule ? "]" : "");
	fflush(stdout);
	return result;
}

int rc_main(const struct rc_opts *o)
{
	int passed = 0, failed = 0, skipped = 0, r;

	rc_o = *o;
	if (!rc_o.hosts)
		rc_o.hosts = rc_o.nranks;
	if (!rc_o.max_size)
		rc_o.max_size = rc_default_max_size(rc_o.nranks);
	if (!rc_o.signals)
		rc_o.signals = rc_o.gpu ? RC_DEFAULT_SIGNALS_GPU
					: RC_DEFAULT_SIGNALS;
	if (rc_o.scale < 1)
		rc_o.scale = 1;
	if (access(rc_o.plugin, R_OK)) {
		printf("FAIL rma_load: %s: %s\n", rc_o.plugin, strerror(errno));
		printf("0 passed, 1 failed, 0 skipped\n");
		return OOB_FAIL;
	}
	rc_sh = mmap(NULL, sizeof(*rc_sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rc_sh == MAP_FAILED) {
		perror("zsm-conformance: mmap");
		return OOB_FAIL;
	}
	memset(rc_sh, 0, sizeof(*rc_sh));
	r = rc_run(&rc_load, rc_limit(&rc_load));
	if (r == OOB_PASS && rc_o.gpu)
		r = rc_run(&rc_gpu, rc_limit(&rc_gpu));
	if (r == OOB_SKIP) {
		for (size_t i = 0; i < RC_NCHECKS; i++)
			skipped += lb_selected(rc_o.only, rc_checks[i].name);
		printf("0 passed, 0 failed, %d skipped\n", skipped);
		return OOB_SKIP;
	}
	if (r != OOB_PASS) {
		printf("0 passed, 1 failed, 0 skipped\n");
		return OOB_FAIL;
	}
	for (size_t i = 0; i < RC_NCHECKS; i++) {
		if (!lb_selected(rc_o.only, rc_checks[i].name))
			continue;
		r = rc_run(&rc_checks[i], rc_limit(&rc_checks[i]));
		passed += r == OOB_PASS;
		skipped += r == OOB_SKIP;
		failed += r == OOB_FAIL;
	}
	printf("# plugin %s, %s, %d ranks as %d host%s (%s), device %d, "
	       "max size %zu, %ld signals",
	       rc_o.plugin, rc_sh->sym, rc_o.nranks, rc_o.hosts,
	       rc_o.hosts == 1 ? "" : "s",
	       rc_o.hostid_env ? rc_o.hostid_env : "no host variable",
	       rc_o.dev, rc_o.max_size, rc_o.signals);
	if (rc_o.gpu)
		printf(", windows on GPU %d (even ranks) and %d (odd)",
		       rc_o.gpu_ord[0], rc_o.gpu_ord[1]);
	printf("\n");
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	fflush(stdout);
	if (failed)
		return OOB_FAIL;
	/* Nothing could run: a skip. */
	return passed ? OOB_PASS : OOB_SKIP;
}
