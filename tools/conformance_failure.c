/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance's checks of closes and failures: close_inflight,
 * peer_dies_recv and peer_dies_send (a dead peer is an error, not a hang)
 * and peer_closes; pd_still_works, which init_cycles uses too.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "pattern.h"

/* ---------------------------------------------------------------------- */
/* closing comms with requests in flight */

int check_close_inflight(int rank, void *arg)
{
	void *send_a = NULL, *recv_a = NULL, *send_b = NULL, *recv_b = NULL;
	void *req[8];
	struct lb_ctx x;
	struct lb_buf ba, bb;
	int i;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	/* A: receives that never match.  B: sends nobody receives. */
	LB_TRY(lb_connect_pair(&x, &send_a, &recv_a));
	LB_TRY(lb_connect_pair(&x, &send_b, &recv_b));
	LB_TRY(lb_buf_alloc(&ba, (size_t)x.max_recvs * 4096));
	LB_TRY(lb_buf_alloc(&bb, 4u << 20));
	if (rank == 1) {
		void *data[LB_RECVS_MAX], *mhs[LB_RECVS_MAX];
		size_t ss[LB_RECVS_MAX];
		int tags[LB_RECVS_MAX];

		LB_TRY(lb_buf_reg(&x, &ba, recv_a));
		for (i = 0; i < x.max_recvs; i++) {
			data[i] = ba.p + i * 4096;
			mhs[i] = ba.mh;
			ss[i] = 4096;
			tags[i] = i;
		}
		for (i = 0; i < 4; i++)
			LB_TRY(lb_post_recv(&x, recv_a, 1, data, ss, tags, mhs,
					    &req[i]));
		/* A grouped one too, of maxRecvs (single where it is 1). */
		LB_TRY(lb_post_recv(&x, recv_a, x.max_recvs, data, ss, tags,
				    mhs, &req[4]));
	} else {
		LB_TRY(lb_buf_reg(&x, &bb, send_b));
		zsm_pattern_fill(bb.p, bb.size, 3);
		/* Eager-sized and large (rendezvous-sized) sends. */
		LB_TRY(lb_post_send(&x, send_b, bb.p, 64, 0, bb.mh, &req[0]));
		LB_TRY(lb_post_send(&x, send_b, bb.p, bb.size, 0, bb.mh,
				    &req[1]));
		LB_TRY(lb_post_send(&x, send_b, bb.p, 1u << 20, 0, bb.mh,
				    &req[2]));
	}
	LB_OOB(oob_barrier());
	lb_idle_ms(50);
	/* NCCL's order: deregister, then close. */
	LB_TRY(lb_buf_free(&x, rank ? &ba : &bb));
	if (rank == 1) {
		LB_CALL(&x, zsm_client_close_recv(x.c, recv_a));
		LB_CALL(&x, zsm_client_close_recv(x.c, recv_b));
	} else {
		LB_CALL(&x, zsm_client_close_send(x.c, send_b));
		LB_CALL(&x, zsm_client_close_send(x.c, send_a));
	}
	LB_TRY(lb_buf_free(&x, rank ? &bb : &ba));
	LB_OOB(oob_barrier());

	/* A fresh connection still works. */
	LB_TRY(lb_connect_pair(&x, &x.send, &x.recv));
	{
		struct lb_buf b;
		int sizes[64];
		void *r;

		LB_TRY(lb_buf_alloc(&b, 1000));
		LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
		if (rank == 0) {
			zsm_pattern_fill(b.p, 1000, 8);
			LB_TRY(lb_post_send(&x, x.send, b.p, 1000, 0, b.mh,
					    &r));
		} else {
			LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &b.size,
					    (int[]){ 0 }, &b.mh, &r));
		}
		LB_TRY(lb_wait(&x, r, sizes, "transfer after the closes"));
		if (rank == 1)
			LB_EXPECT(sizes[0] == 1000 &&
					  zsm_pattern_check(b.p, 1000, 8) < 0,
				  "transfer after the closes: wrong data");
		LB_OOB(oob_barrier());
		LB_TRY(lb_buf_free(&x, &b));
	}
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* a peer that dies makes the survivor's requests fail, not hang */

/*
 * How soon the survivor must see an error: NCCL only learns of a dead peer
 * from the plugin (2.5, error codes), and the peer here is killed on this
 * host, whose kernel closes its connections at once, so any transport can
 * know within seconds; 15 s is generous.  The dying side is always rank 1:
 * rank 0's exit status is the check's result, and rank 1 dies with it.
 */
#define PD_DETECT_MS (15000 * lb_scale)
/*
 * The survivor's alarm from the peer's death on: a test() or isend that
 * never returns times out naming the step (oob_doing) soon after
 * PD_DETECT_MS, and the closing steps after get a fresh allowance.
 */
#define PD_ALARM_S ((unsigned)(PD_DETECT_MS / 1000 + 5))
#define PD_AFTER_S ((unsigned)(30 * lb_scale))
#define PD_SLOT 4096
#define PD_SINGLE 4
#define PD_SEND_SIZE (1u << 20)
#define PD_SEND_DEPTH 8

/*
 * Once the dead peer's comm is closed, the plugin still carries traffic:
 * with the peer gone, this rank connects to itself and sends a message.
 */
int pd_still_works(struct lb_ctx *x)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *listen = NULL, *send = NULL, *recv = NULL, *sreq, *rreq;
	size_t size = 1000;
	const char *what;
	struct lb_buf b;
	int sizes[64], r;

	oob_doing("connecting to itself after the peer died");
	memset(handle, 0, sizeof(handle));
	LB_CALL(x, zsm_client_listen(x->c, x->dev, handle, &listen));
	LB_EXPECT(listen, "listen after the peer died returned success and "
			  "NULL listenComm");
	r = zsm_client_connect_accept(x->c, x->dev, handle, listen, &send,
				      &recv, LB_CONNECT_MS, &what);
	LB_EXPECT(!r, "%s to itself after the peer died returned %s", what,
		  zsm_client_result_str(r));
	LB_CALL(x, zsm_client_close_listen(x->c, listen));
	LB_TRY(lb_buf_alloc(&b, 2 * size));
	LB_TRY(lb_buf_reg(x, &b, recv));
	zsm_pattern_fill(b.p + size, size, 47);
	LB_TRY(lb_post_recv(x, recv, 1, &b.vp, &size, (int[]){ 0 }, &b.mh,
			    &rreq));
	LB_TRY(lb_post_send(x, send, b.p + size, size, 0, b.mh, &sreq));
	LB_TRY(lb_wait(x, sreq, sizes, "send to self after the peer died"));
	LB_TRY(lb_wait(x, rreq, sizes, "receive from self after the peer "
				       "died"));
	LB_EXPECT(sizes[0] == (int)size && zsm_pattern_check(b.p, size, 47) < 0,
		  "message to self after the peer died: size %d or data wrong",
		  sizes[0]);
	LB_TRY(lb_buf_free(x, &b));
	LB_CALL(x, zsm_client_close_send(x->c, send));
	LB_CALL(x, zsm_client_close_recv(x->c, recv));
	oob_doing("finalizing after the peer died");
	return OOB_PASS;
}

int check_peer_dies_recv(int rank, void *arg)
{
	void *req[PD_SINGLE + 1], *data[LB_RECVS_MAX], *mhs[LB_RECVS_MAX];
	int tags[LB_RECVS_MAX], sizes[64], pending, done, r, i;
	double first_ms = -1, last_ms = 0;
	size_t ss[LB_RECVS_MAX], size = PD_SLOT;
	int first = ncclSuccess, other = ncclSuccess;
	unsigned warns;
	struct lb_ctx x;
	struct lb_buf b;
	uint64_t t0;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	/* Reversed (1 -> 0): the sender is the rank that can die. */
	LB_TRY(lb_connect_to(&x, 0, &x.send, &x.recv));
	LB_TRY(lb_buf_alloc(&b, (size_t)(PD_SINGLE + x.max_recvs) * PD_SLOT));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.send : x.recv));
	if (rank == 1) {
		/* The connection carried data before its sender vanished. */
		zsm_pattern_fill(b.p, PD_SLOT, 41);
		LB_TRY(lb_post_send(&x, x.send, b.p, PD_SLOT, 0, b.mh,
				    &req[0]));
		LB_TRY(lb_wait(&x, req[0], sizes, "send before dying"));
		LB_OOB(oob_barrier());
		oob_die();
	}
	LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &size, (int[]){ 0 }, &b.mh,
			    &req[0]));
	LB_TRY(lb_wait(&x, req[0], sizes, "receive before the peer died"));
	LB_EXPECT(sizes[0] == PD_SLOT &&
			  zsm_pattern_check(b.p, PD_SLOT, 41) < 0,
		  "message before the peer died: size %d or data wrong",
		  sizes[0]);
	/* Receives nothing will match: single ones, then a grouped one. */
	for (i = 0; i < x.max_recvs; i++) {
		data[i] = b.p + (size_t)(PD_SINGLE + i) * PD_SLOT;
		mhs[i] = b.mh;
		ss[i] = PD_SLOT;
		tags[i] = 10 + i;
	}
	for (i = 0; i < PD_SINGLE; i++) {
		void *d = b.p + (size_t)i * PD_SLOT;

		LB_TRY(lb_post_recv(&x, x.recv, 1, &d, &size,
				    (int[]){ 1 + i }, &b.mh, &req[i]));
	}
	LB_TRY(lb_post_recv(&x, x.recv, x.max_recvs, data, ss, tags, mhs,
			    &req[PD_SINGLE]));
	/* From before the barrier, whose waits drive our requests. */
	warns = zsm_client_warns();
	/* Rank 1 dies once this returns; no out-of-band traffic after. */
	LB_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	oob_set_timeout(PD_ALARM_S);
	oob_doing("testing receives whose sender died");
	/* NCCL tests each request until done or an error; so do we. */
	for (pending = PD_SINGLE + 1; pending;) {
		for (i = 0; i <= PD_SINGLE; i++) {
			if (!req[i])
				continue;
			r = zsm_client_test(x.c, req[i], &done, sizes);
			LB_EXPECT(r || !done,
				  "receive %d succeeded though its sender "
				  "died without sending (size %d)",
				  i, sizes[0]);
			if (!r)
				continue;
			last_ms = lb_ms_since(t0);
			if (first_ms < 0) {
				first_ms = last_ms;
				first = r;
			}
			if (r != ncclRemoteError)
				other = r;
			req[i] = NULL;
			pending--;
		}
		if (pending && lb_ms_since(t0) >= PD_DETECT_MS && first_ms < 0)
			return oob_fail("no error ever came: %d s after the "
					"sender was killed, all %d receives "
					"still pend (test: success, not done, "
					"every time).  NCCL learns of a dead "
					"peer only from the plugin: a job "
					"would hang (2.5 error codes)",
					PD_DETECT_MS / 1000, PD_SINGLE + 1);
		LB_EXPECT(!pending || lb_ms_since(t0) < PD_DETECT_MS,
			  "sender dead for %d ms: %d of %d receives still "
			  "pending without an error (the first failed with "
			  "%s after %.0f ms)",
			  PD_DETECT_MS, pending, PD_SINGLE + 1,
			  zsm_client_result_str(first), first_ms);
	}
	printf("# abi %d rank 0: receives from the dead sender failed with "
	       "%s after %.0f ms, the last after %.0f ms\n",
	       lb_opts.abi, zsm_client_result_str(first), first_ms, last_ms);
	/* zsm: one failure, the peer's: said once, every request told. */
	LB_EXPECT(!lb_opts.zsm_rules || other == ncclSuccess,
		  "zsm's rule: every receive from a dead peer fails with "
		  "ncclRemoteError, one got %s",
		  zsm_client_result_str(other));
	LB_EXPECT(!lb_opts.zsm_rules || zsm_client_warns() - warns == 1,
		  "zsm's rule: one WARN line for the dead peer, got %u",
		  zsm_client_warns() - warns);
	oob_set_timeout(PD_AFTER_S);
	oob_doing("closing the receive comm whose sender died");
	/* NCCL's order after an error: deregister, then close. */
	LB_TRY(lb_buf_free(&x, &b));
	LB_CALL(&x, zsm_client_close_recv(x.c, x.recv));
	x.recv = NULL;
	LB_TRY(pd_still_works(&x));
	return lb_teardown(&x);
}

int check_peer_dies_send(int rank, void *arg)
{
	void *req[PD_SEND_DEPTH] = { 0 };
	int sizes[64], ok = 0, posted = 0, done, r = ncclSuccess, i;
	const char *from = NULL;
	struct lb_ctx x;
	struct lb_buf b;
	unsigned warns;
	uint64_t t0;
	double ms;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, PD_SEND_SIZE));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	/* One rendezvous-sized message first: the path works. */
	if (rank == 1) {
		LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &b.size,
				    (int[]){ 0 }, &b.mh, &req[0]));
		LB_TRY(lb_wait(&x, req[0], sizes, "receive before dying"));
		LB_EXPECT(sizes[0] == (int)PD_SEND_SIZE &&
				  zsm_pattern_check(b.p, PD_SEND_SIZE, 43) < 0,
			  "message before dying: size %d or data wrong",
			  sizes[0]);
		LB_OOB(oob_barrier());
		oob_die();
	}
	zsm_pattern_fill(b.p, PD_SEND_SIZE, 43);
	LB_TRY(lb_post_send(&x, x.send, b.p, PD_SEND_SIZE, 0, b.mh, &req[0]));
	LB_TRY(lb_wait(&x, req[0], sizes, "send before the peer died"));
	/* Half the sends are in flight, unmatched, when the receiver dies. */
	for (i = 0; i < PD_SEND_DEPTH / 2; i++, posted++)
		LB_TRY(lb_post_send(&x, x.send, b.p, PD_SEND_SIZE, 1, b.mh,
				    &req[i]));
	/* From before the barrier, whose waits drive our requests. */
	warns = zsm_client_warns();
	/* Rank 1 dies once this returns; no out-of-band traffic after. */
	LB_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	oob_set_timeout(PD_ALARM_S);
	oob_doing("sending to a receiver that died");
	/*
	 * The rest go out once the provider has seen the connection drop,
	 * to a peer that is gone; then PD_SEND_DEPTH stay in flight, as a
	 * pipelining NCCL would keep them.
	 */
	lb_idle_ms(300);
	while (!from) {
		for (i = 0; i < PD_SEND_DEPTH && !from; i++) {
			if (!req[i]) {
				r = zsm_client_isend(x.c, x.send, b.p,
						     PD_SEND_SIZE, 1, b.mh,
						     &req[i]);
				if (r)
					from = "isend";
				else if (req[i])
					posted++;
				continue;
			}
			r = zsm_client_test(x.c, req[i], &done, sizes);
			if (r) {
				from = "test";
				req[i] = NULL;
			} else if (done) {
				ok++;
				req[i] = NULL;
			}
		}
		LB_EXPECT(from || lb_ms_since(t0) < PD_DETECT_MS,
			  "no error ever came: %d s after the receiver was "
			  "killed, %d sends posted to it, %d reported success, "
			  "the rest still pend.  NCCL learns of a dead peer "
			  "only from the plugin: a job would hang (2.5 error "
			  "codes)",
			  PD_DETECT_MS / 1000, posted, ok);
	}
	ms = lb_ms_since(t0);
	printf("# abi %d rank 0: sending to the dead receiver: %s returned "
	       "%s after %.0f ms (%d sends posted, %d succeeded)\n",
	       lb_opts.abi, from, zsm_client_result_str(r), ms, posted, ok);
	LB_EXPECT(!lb_opts.zsm_rules || r == ncclRemoteError,
		  "zsm's rule: sending to a dead peer fails with "
		  "ncclRemoteError, got %s",
		  zsm_client_result_str(r));
	LB_EXPECT(!lb_opts.zsm_rules || zsm_client_warns() - warns == 1,
		  "zsm's rule: one WARN line for the dead peer, got %u",
		  zsm_client_warns() - warns);
	oob_set_timeout(PD_AFTER_S);
	oob_doing("closing the send comm whose receiver died");
	/* NCCL stops testing at the first error: close with sends left. */
	LB_TRY(lb_buf_free(&x, &b));
	LB_CALL(&x, zsm_client_close_send(x.c, x.send));
	x.send = NULL;
	LB_TRY(pd_still_works(&x));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* peer_closes: a comm whose live peer closed fails its requests */

/*
 * zsm's rule (docs/design.md, "Same rules on every transport"): a comm
 * whose peer closed its end fails, whatever the message's size, whether
 * the request was in flight at the close or posted after it: a closed
 * receiver takes nothing, and a send reported done would be a lie.  The
 * peer process stays alive, so no liveness check can say it.  zsm says
 * so within a round trip of the close; the limit is generous.
 */
#define PC_FAIL_MS (5000 * lb_scale)
#define PC_LARGE ((size_t)4 << 20)
#define PC_SMALL ((size_t)64)
/* The sender's comms: in flight at the close (large, small), posted
 * after it (small, large). */
#define PC_COMMS 4

static const size_t pc_sizes[PC_COMMS] = { PC_LARGE, PC_SMALL, PC_SMALL,
					   PC_LARGE };

/*
 * Test req until it ends (an error from isend counts: r and no req):
 * it must end in ncclRemoteError within PC_FAIL_MS of t0.
 */
static int pc_expect_fail(struct lb_ctx *x, void *req, int r, uint64_t t0,
			  const char *what)
{
	int done = 0, sizes[LB_RECVS_MAX];

	while (!r && !done) {
		r = zsm_client_test(x->c, req, &done, sizes);
		LB_EXPECT(r || !done,
			  "%s: reported done though its peer had closed the "
			  "comm (nothing took it)",
			  what);
		LB_EXPECT(r || lb_ms_since(t0) < PC_FAIL_MS,
			  "%s: still pending %d ms after its peer closed the "
			  "comm: nothing will ever end it",
			  what, PC_FAIL_MS);
	}
	LB_EXPECT(r == ncclRemoteError,
		  "zsm's rule: %s to a closed peer fails with "
		  "ncclRemoteError, got %s",
		  what, zsm_client_result_str(r));
	printf("# abi %d rank %d: %s failed with %s after %.0f ms\n",
	       lb_opts.abi, x->rank, what, zsm_client_result_str(r),
	       lb_ms_since(t0));
	return OOB_PASS;
}

/* Rank 0: sends on comms whose receiver (rank 1) closes them, and
 * closes back, on which rank 1 waits for a message. */
static int pc_sender(struct lb_ctx *x, void **comms, struct lb_buf *b,
		     struct lb_buf *bb, void *back)
{
	static const char *const what[PC_COMMS] = {
		"a 4 MiB send in flight at the close",
		"a 64 B send in flight at the close",
		"a 64 B send posted after the close",
		"a 4 MiB send posted after the close",
	};
	void *req[PC_COMMS] = { 0 };
	int r[PC_COMMS] = { 0 };
	uint64_t t0;

	for (int i = 0; i < 2; i++)
		LB_TRY(lb_post_send(x, comms[i], b[i].p, pc_sizes[i], 0,
				    b[i].mh, &req[i]));
	LB_OOB(oob_barrier()); /* posted */
	LB_TRY(lb_buf_free(x, bb));
	LB_CALL(x, zsm_client_close_send(x->c, back));
	LB_OOB(oob_barrier()); /* both closed */
	t0 = zsm_client_now_ns();
	for (int i = 2; i < PC_COMMS; i++) {
		r[i] = zsm_client_isend(x->c, comms[i], b[i].p, pc_sizes[i],
					0, b[i].mh, &req[i]);
		LB_EXPECT(r[i] || req[i],
			  "%s: isend returned no request", what[i]);
	}
	for (int i = 0; i < PC_COMMS; i++)
		LB_TRY(pc_expect_fail(x, req[i], r[i], t0, what[i]));
	return OOB_PASS;
}

int check_peer_closes(int rank, void *arg)
{
	void *comms[PC_COMMS] = { 0 }, *back = NULL, *rreq = NULL;
	struct lb_buf b[PC_COMMS], bb;
	struct lb_ctx x;
	uint64_t t0;
	int i;

	(void)arg;
	if (!lb_opts.zsm_rules)
		return oob_skip("what a peer's close does is zsm's rule "
				"(--zsm-rules); NCCL leaves it open");
	LB_TRY(lb_open(&x, rank));
	for (i = 0; i < PC_COMMS; i++) {
		LB_TRY(lb_connect_pair(&x, rank ? NULL : &comms[i],
				       rank ? &comms[i] : NULL));
		LB_TRY(lb_buf_alloc(&b[i], pc_sizes[i]));
		LB_TRY(lb_buf_reg(&x, &b[i], comms[i]));
	}
	/* And one where rank 1 waits to receive and rank 0 closes. */
	LB_TRY(lb_connect_pair(&x, rank ? NULL : &back, rank ? &back : NULL));
	LB_TRY(lb_buf_alloc(&bb, PC_SMALL));
	LB_TRY(lb_buf_reg(&x, &bb, back));
	if (rank == 0) {
		LB_TRY(pc_sender(&x, comms, b, &bb, back));
	} else {
		LB_TRY(lb_post_recv(&x, back, 1, &bb.vp, &bb.size,
				    (int[]){ 0 }, &bb.mh, &rreq));
		LB_OOB(oob_barrier()); /* posted */
		for (i = 0; i < PC_COMMS; i++) {
			LB_TRY(lb_buf_free(&x, &b[i]));
			LB_CALL(&x, zsm_client_close_recv(x.c, comms[i]));
		}
		LB_OOB(oob_barrier()); /* closed */
		t0 = zsm_client_now_ns();
		LB_TRY(pc_expect_fail(&x, rreq, 0, t0,
				      "a receive whose sender closed"));
	}
	LB_OOB(oob_barrier());
	oob_doing("closing the comms whose peer closed");
	if (rank == 0) {
		for (i = 0; i < PC_COMMS; i++) {
			LB_TRY(lb_buf_free(&x, &b[i]));
			LB_CALL(&x, zsm_client_close_send(x.c, comms[i]));
		}
	} else {
		LB_TRY(lb_buf_free(&x, &bb));
		LB_CALL(&x, zsm_client_close_recv(x.c, back));
	}
	return lb_teardown(&x);
}
