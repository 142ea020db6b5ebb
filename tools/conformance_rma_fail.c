/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma's checks of failures: rma_peer_dies and
 * rma_last_error (a killed peer is an error within the limit, and
 * queryLastError says so) and rma_finalize_failed_init.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance_rma_int.h"
#include "zsm_client.h"

/* ---------------------------------------------------------------------- */
/* rma_peer_dies, rma_last_error */

/* Die at once by SIGKILL, as a crashed rank would, the death marked as
 * wanted for the parent. */
static void rc_die(const struct rk *k) __attribute__((noreturn));
static void rc_die(const struct rk *k)
{
	fflush(NULL);
	/* release: pairs with the parent's and the survivors' acquire
	 * loads; nothing else of this rank comes after it. */
	atomic_store_explicit(&rc_sh->victim, k->rank + 1,
			      memory_order_release);
	for (;;)
		kill(getpid(), SIGKILL);
}

/* queryLastError of each context object: -1 on a call error, else
 * whether any said hasError. */
static int rc_last_error(struct rk *k, struct rc_comm *c, int *res)
{
	int any = 0;

	for (int i = 0; i < c->nctx; i++) {
		bool e = false;
		int r = k->t.last_error(c->ctx[i], &e);

		if (r != ncclSuccess) {
			*res = r;
			return -1;
		}
		any |= e;
	}
	return any;
}

/*
 * A survivor: keep a put to the dead rank outstanding and wait for its
 * signal, as NCCL's proxy would, testing requests, polling queryLastError
 * and putting again every 10 ms, until one of them says the peer failed.
 */
static int rc_detect(struct rk *k, struct rc_comm *c, void *ctx,
		     const struct rc_win *w, const struct rc_win *sig,
		     char *how, size_t len, long *ms)
{
	const int victim = k->n - 1;
	struct rc_sig sg = { (uint64_t)k->rank * 8, sig->mh, 1,
			     NCCL_NET_SIGNAL_OP_ADD };
	uint64_t t0 = zsm_client_now_ns(), dead = 0, last_put = 0;
	int res = 0, peer;

	rc_doing(k, "waiting for dead rank %d's signal", victim);
	for (;;) {
		uint64_t now = zsm_client_now_ns();
		void *req = NULL;
		int r;

		/* acquire: pairs with rc_die's release store. */
		if (!dead && atomic_load_explicit(&rc_sh->victim,
						  memory_order_acquire))
			dead = now;
		rc_idle(k);
		if (rc_reap(k, &res, &peer) >= 0) {
			snprintf(how, len, "test of a request to rank %d "
					   "returned %s",
				 peer, rc_res(res));
			break;
		}
		if (k->progress_res) {
			snprintf(how, len, "rmaProgress returned %s",
				 rc_res(k->progress_res));
			break;
		}
		if (k->t.last_error) {
			r = rc_last_error(k, c, &res);
			if (r) {
				snprintf(how, len, "queryLastError %s",
					 r < 0 ? rc_res(res) : "said hasError");
				break;
			}
		}
		if (now - last_put > 10000000ULL) {
			last_put = now;
			r = rc_put_call(k, ctx, 0, 0, w->mh, 4096, 1u << 20,
					w->mh, victim, &sg, &req);
			if (r != ncclSuccess) {
				snprintf(how, len, "iputSignal returned %s",
					 rc_res(r));
				break;
			}
			if (!req)
				return rc_fail(k, "iputSignal to dead rank %d "
						  "returned ncclSuccess and a "
						  "NULL request: always a "
						  "request or an error (3.3)",
					       victim);
			if (rc_track(k, c->coll, req, victim) < 0)
				return rc_fail(k, "out of memory");
		}
		if (!dead && rc_ms_since(t0) > RC_STEP_MS)
			return rc_fail(k, "rank %d did not die within %ld ms",
				       victim, RC_STEP_MS);
		if (dead && (long)((now - dead) / 1000000ULL) > RC_DETECT_MS)
			return rc_fail(k, "rank %d was killed %ld ms ago with "
					  "requests to it outstanding, and no "
					  "test, iputSignal%s failed: NCCL's "
					  "proxy would wait for ever (3.3 "
					  "error handling, 6.15)",
				       victim, RC_DETECT_MS,
				       k->t.last_error ? " or queryLastError"
						       : "");
		rc_nap_us(200);
	}
	*ms = dead ? (long)((zsm_client_now_ns() - dead) / 1000000ULL) : 0;
	return OOB_PASS;
}

static int rc_peer_death(struct rk *k, int last_error)
{
	const int victim = k->n - 1;
	struct rc_comm *c = &k->cm[0];
	struct rc_win w, sig;
	char how[RC_WHY];
	long ms = 0;
	int res = 0;
	void *ctx;

	RC_TRY(rc_join(k));
	if (last_error && !k->t.last_error)
		return rc_skip(k, "%s.queryLastError is NULL (optional, 3.2)",
			       k->t.sym);
	RC_TRY(rc_ctx(k, c, 2, &ctx));
	RC_TRY(rc_win_alloc(k, &sig, 8 * (size_t)(k->n + 1), 0));
	RC_TRY(rc_win_alloc(k, &w, 2u << 20, 0));
	RC_TRY(rc_reg(k, c, &sig, RC_SIG_FLAGS, "the signal buffer"));
	RC_TRY(rc_reg(k, c, &w, 0, "the data window"));
	/* Healthy first, on both contexts. */
	RC_TRY(rc_exchange(k, c, ctx, 0, &w, 0, &w, 1u << 20, 4096, &sig, 0,
			   1, 600, "traffic on context 0"));
	RC_TRY(rc_exchange(k, c, ctx, 1, &w, 0, &w, 1u << 20, 4096, &sig, 0,
			   2, 700, "traffic on context 1"));
	if (last_error) {
		int r = rc_last_error(k, c, &res);

		if (r)
			return rc_fail(k, "queryLastError on a healthy comm "
					  "%s",
				       r < 0 ? rc_res(res) : "said hasError");
	}
	RC_TRY(rc_barrier(k, "healthy"));
	if (k->rank == victim) {
		uint64_t t0 = zsm_client_now_ns();

		rc_doing(k, "waiting for the others to wait on it");
		/* acquire: pairs with each survivor's release increment. */
		while (atomic_load_explicit(&rc_sh->waiting,
					    memory_order_acquire) < k->n - 1) {
			if (rc_stopped(k, "the survivors"))
				return OOB_FAIL;
			if (rc_ms_since(t0) > RC_STEP_MS)
				return rc_fail(k, "the others did not start "
						  "waiting within %ld ms",
					       RC_STEP_MS);
			rc_idle(k);
			rc_nap_us(50);
		}
		/* Dies with puts of its own in flight. */
		for (int p = 0; p < victim; p++)
			RC_TRY(rc_put(k, c, ctx, 0, 0, w.mh, 1u << 20,
				      1u << 20, w.mh, p, NULL, NULL));
		rc_die(k);
	}
	/* Outstanding before the death: a put and signal to the victim. */
	RC_TRY(rc_put(k, c, ctx, 0, 0, w.mh, 4096, 1u << 20, w.mh, victim,
		      &(struct rc_sig){ (uint64_t)k->rank * 8, sig.mh, 1,
					NCCL_NET_SIGNAL_OP_ADD },
		      NULL));
	/* release: the put is out before the victim may die; pairs with
	 * the victim's acquire load. */
	atomic_fetch_add_explicit(&rc_sh->waiting, 1, memory_order_release);
	RC_TRY(rc_detect(k, c, ctx, &w, &sig, how, sizeof(how), &ms));
	if (last_error) {
		uint64_t t0 = zsm_client_now_ns();
		int r;

		rc_doing(k, "waiting for queryLastError to say so");
		while (!(r = rc_last_error(k, c, &res))) {
			if (rc_ms_since(t0) > RC_STEP_MS)
				return rc_fail(k, "rank %d died and %s, but "
						  "queryLastError still says "
						  "no error after %ld ms (3.2 "
						  "queryLastError)",
					       victim, how, RC_STEP_MS);
			rc_idle(k);
			rc_nap_us(200);
		}
		if (r < 0)
			return rc_fail(k, "queryLastError after rank %d died "
					  "returned %s",
				       victim, rc_res(res));
	}
	/* Teardown with a dead peer must end; its calls may fail. */
	RC_TRY(rc_leave(k, 0));
	rc_win_free(k, &w);
	rc_win_free(k, &sig);
	if (k->rank == 0)
		rc_note(k, "rank %d killed; rank 0 saw it %ld ms later: %s%s",
			victim, ms, how,
			last_error ? "; then queryLastError said hasError"
				   : "");
	return OOB_PASS;
}

int rc_check_peer_dies(struct rk *k)
{
	return rc_peer_death(k, 0);
}

int rc_check_last_error(struct rk *k)
{
	return rc_peer_death(k, 1);
}

/* ---------------------------------------------------------------------- */
/* rma_finalize_failed_init */

int rc_check_finalize_failed_init(struct rk *k)
{
	const char *env = rc_o.init_fail_env;
	char var[128], why[RC_WHY];
	const char *eq;
	void *ctx = NULL;
	int r, f;

	if (k->rank)
		return OOB_PASS;
	if (!env && !strcmp(rc_sh->name, "zsm"))
		env = "ZSM_RMA=0";
	if (!env)
		return rc_skip(k, "no known way to make '%s''s init fail: "
				  "give --init-fail-env VAR=VALUE",
			       rc_sh->name);
	eq = strchr(env, '=');
	snprintf(var, sizeof(var), "%.*s", (int)(eq - env), env);
	setenv(var, eq + 1, 1);
	rc_doing(k, "loading %s with %s", rc_o.plugin, env);
	if (rma_client_open(&k->t, rc_o.plugin, rc_o.abi, why, sizeof(why)))
		return rc_fail(k, "%s", why);
	rc_doing(k, "init with %s", env);
	r = k->t.init(&ctx, RC_COMM_ID, zsm_client_logger);
	if (r == ncclSuccess) {
		k->t.finalize(ctx);
		rma_client_close(&k->t);
		return rc_fail(k, "init succeeded with %s: the check needs an "
				  "init that fails",
			       env);
	}
	/* NCCL 2.28.9 finalizes whatever context a failed init left (1.5,
	 * 6.13): it must not crash. */
	rc_doing(k, "finalize after init failed");
	f = k->t.finalize(ctx);
	rma_client_close(&k->t);
	rc_note(k, "with %s init returned %s; finalize(%s) returned %s", env,
		rc_res(r), ctx ? "its context" : "NULL", rc_res(f));
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
