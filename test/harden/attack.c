/* SPDX-License-Identifier: MIT */
/*
 * Cases of a hostile process that reaches the endpoint (issue 12,
 * findings 6 and 7): it knows zsm's wire format, the victim's address and
 * (worst case) the handle NCCL's bootstrap carried, and guesses comm ids
 * the way they used to be handed out (one after another from the
 * listener's).  Nothing it sends may land in a receive, fail a comm,
 * pose as a connection or make the listener take another process's fd.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attacker.h"
#include "harden.h"

#define H_GUESSES 32
#define H_HANDLE NCCL_NET_HANDLE_MAXSIZE

int h_listen_victim(struct h_ctx *x, char *handle, void **listen,
		    struct h_victim *v)
{
	if (x->rank == 1) {
		H_CALL(zsm_client_listen(x->c, 0, handle, listen));
		H_OOB(oob_send(handle, H_HANDLE));
	} else {
		H_OOB(oob_recv(handle, H_HANDLE));
		h_victim_from_handle(v, handle);
	}
	return OOB_PASS;
}

/* Rank 1 listens; both learn the handle; rank 0 opens an attacker. */
static int h_attack_setup(struct h_ctx *x, int rank, char *handle,
			  void **listen, struct h_victim *v,
			  struct h_attacker **a)
{
	H_TRY(h_open(x, rank));
	H_TRY(h_listen_victim(x, handle, listen, v));
	if (rank == 0)
		H_EXPECT(!h_attacker_open(a, v), "no attacker endpoint");
	return OOB_PASS;
}

/* The legitimate connection on the handle rank 1 listened on. */
static int h_attack_connect(struct h_ctx *x, char *handle, void *listen)
{
	const char *what;
	int r;

	if (x->rank == 1) {
		r = zsm_client_connect_accept(x->c, 0, NULL, listen, NULL,
					      &x->recv, H_MS(20000), &what);
		H_EXPECT(!r, "%s returned %s", what, zsm_client_result_str(r));
		H_CALL(zsm_client_close_listen(x->c, listen));
	} else {
		r = zsm_client_connect_accept(x->c, 0, handle, NULL, &x->send,
					      NULL, H_MS(20000), &what);
		H_EXPECT(!r, "%s returned %s", what, zsm_client_result_str(r));
	}
	return OOB_PASS;
}

/* Junk of size bytes on tag 1 for every id a guess reaches. */
static int h_attack_data(struct h_attacker *a, const struct h_victim *v,
			 size_t size)
{
	unsigned char junk[1000];

	memset(junk, 0xEE, sizeof(junk));
	for (uint32_t k = 1; k <= H_GUESSES; k++)
		H_EXPECT(!h_attacker_data(a, v->listen_id + k, 1, junk,
					  size < sizeof(junk) ? size
							      : sizeof(junk),
					  0, 0),
			 "sending junk");
	return OOB_PASS;
}

/*
 * Data from a process that is not the comm's peer, for the ids a guess
 * reaches, sent after the comm exists and its receive is posted: the
 * receive must take only the peer's message.
 */
int h_case_inject(int rank, void *arg)
{
	char handle[H_HANDLE] = {0};
	struct h_attacker *a = NULL;
	struct h_victim v;
	struct h_ctx x;
	void *listen = NULL;

	(void)arg;
	H_TRY(h_attack_setup(&x, rank, handle, &listen, &v, &a));
	H_TRY(h_attack_connect(&x, handle, listen));
	H_OOB(oob_barrier());
	if (rank == 0) {
		/* h_exchange's receive is posted by now on rank 1. */
		H_OOB(oob_barrier());
		H_TRY(h_attack_data(a, &v, 1000));
		usleep(200000);
	} else {
		H_OOB(oob_barrier());
	}
	H_TRY(h_exchange(&x, 1000, 21));
	H_OOB(oob_barrier());
	h_attacker_close(a);
	return h_teardown(&x);
}

/*
 * Data sent before the comm exists, for the ids it would get: the new
 * comm's first receive must take its peer's first message.
 */
int h_case_preload(int rank, void *arg)
{
	char handle[H_HANDLE] = {0};
	struct h_attacker *a = NULL;
	struct h_victim v;
	struct h_ctx x;
	void *listen = NULL;

	(void)arg;
	H_TRY(h_attack_setup(&x, rank, handle, &listen, &v, &a));
	if (rank == 0) {
		H_TRY(h_attack_data(a, &v, 1000));
		usleep(200000);
	}
	H_OOB(oob_barrier());
	H_TRY(h_attack_connect(&x, handle, listen));
	H_OOB(oob_barrier());
	H_TRY(h_exchange(&x, 1000, 33));
	H_OOB(oob_barrier());
	h_attacker_close(a);
	return h_teardown(&x);
}

/*
 * Control messages larger than any of zsm's, and of random bytes, for
 * every id a guess reaches: no comm may fail for them.
 */
int h_case_probe_oversize(int rank, void *arg)
{
	char handle[H_HANDLE] = {0};
	struct h_attacker *a = NULL;
	static unsigned char big[8192];
	struct h_victim v;
	struct h_ctx x;
	void *listen = NULL;

	(void)arg;
	H_TRY(h_attack_setup(&x, rank, handle, &listen, &v, &a));
	H_TRY(h_attack_connect(&x, handle, listen));
	H_OOB(oob_barrier());
	if (rank == 0) {
		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = (unsigned char)(i * 29 + 3);
		/* Every control type, oversized, to each guessed id. */
		for (uint32_t k = 0; k <= H_GUESSES; k++)
			for (unsigned t = 1; t <= 5; t++)
				H_EXPECT(!h_attacker_ctrl(a, v.listen_id + k, t,
							  big, sizeof(big)),
					 "sending an oversized probe");
		usleep(300000);
	}
	H_OOB(oob_barrier());
	H_TRY(h_exchange(&x, 5000, 44));
	H_TRY(h_exchange(&x, 300000, 45));
	H_OOB(oob_barrier());
	h_attacker_close(a);
	return h_teardown(&x);
}

/*
 * Answers to the connector that the listener never sent, for the ids a
 * connector's comm would have, naming a comm id whose top bit reaches the
 * tag's control flag: the connection must be the real one.
 */
int h_case_forged_ack(int rank, void *arg)
{
	char handle[H_HANDLE] = {0};
	struct h_attacker *a = NULL;
	unsigned char ack[256];
	struct h_victim v;
	struct h_ctx x;
	void *listen = NULL;
	size_t len;

	(void)arg;
	H_TRY(h_attack_setup(&x, rank, handle, &listen, &v, &a));
	if (rank == 0) {
		struct h_victim me = v;
		struct h_attacker *b = NULL;
		char own[H_HANDLE] = {0};
		void *own_listen;

		/* The forged answers go to the connector, rank 0 itself: a
		 * handle of a listener of its own says where it is. */
		H_CALL(zsm_client_listen(x.c, 0, own, &own_listen));
		h_victim_from_handle(&me, own);
		H_EXPECT(!h_attacker_open(&b, &me), "no attacker endpoint");
		/* Start the real connect, then flood forged answers to
		 * the first ids of rank 0's endpoint before the real one
		 * can land. */
		x.send = NULL;
		H_CALL(zsm_client_connect(x.c, 0, handle, &x.send));
		for (int round = 0; round < 4; round++)
			for (uint32_t id = 1; id <= H_GUESSES; id++) {
				len = h_attacker_conn_ack(&v, ack, id,
							  (1u << 23) | id, 0);
				H_EXPECT(len, "unknown wire version");
				h_attacker_ctrl(b, id, 2, ack, len);
			}
		h_attacker_close(b);
		H_CALL(zsm_client_close_listen(x.c, own_listen));
	}
	H_TRY(h_attack_connect(&x, handle, listen));
	H_OOB(oob_barrier());
	H_TRY(h_exchange(&x, 2000, 55));
	H_OOB(oob_barrier());
	h_attacker_close(a);
	return h_teardown(&x);
}

/*
 * A connection request naming another process (here: a helper child,
 * which keeps a memfd of exactly a ce window's size with a window's
 * header) and one of its fds: the listener must not take that fd.  The
 * helper's memfd is named, so a mapping of it shows in the listener's
 * maps.
 */
#define H_WINDOW_NAME "zsm-harden-victim"

static int h_listener_maps(const char *name)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, name) != NULL;
	fclose(f);
	return found;
}

int h_case_fd_steal(int rank, void *arg)
{
	char handle[H_HANDLE] = {0};
	struct h_attacker *a = NULL;
	unsigned char req[256];
	struct h_victim v;
	struct h_ctx x;
	void *listen = NULL;
	size_t len, win = 66176; /* a ce window, versions 3 to 6 */
	int mfd = -1, found;

	(void)arg;
	H_TRY(h_attack_setup(&x, rank, handle, &listen, &v, &a));
	if (rank == 0) {
		/* ce's window version of the victim's wire version. */
		uint32_t head[2] = {0x45434d5aU, v.version == 3   ? 3
						 : v.version < 8 ? 4
						 : v.version < 9 ? 5
								 : 6};
		void *p;

		/* Rank 0 plays the process whose fd is named. */
		mfd = memfd_create(H_WINDOW_NAME, 0);
		H_EXPECT(mfd >= 0 && ftruncate(mfd, (off_t)win) == 0,
			 "memfd");
		p = mmap(NULL, win, PROT_READ | PROT_WRITE, MAP_SHARED, mfd,
			 0);
		H_EXPECT(p != MAP_FAILED, "mmap");
		memcpy(p, head, sizeof(head));
		len = h_attacker_conn_req(a, &v, req, 4243,
					  (uint32_t)getpid(), mfd,
					  (uint64_t)(uintptr_t)p, 99);
		H_EXPECT(len, "unknown wire version %u", v.version);
		for (int i = 0; i < 3; i++) {
			H_EXPECT(!h_attacker_ctrl(a, v.listen_id, 1, req, len),
				 "sending the request");
			usleep(100000);
			h_attacker_poll(a);
		}
	}
	H_OOB(oob_barrier());
	if (rank == 1) {
		/* Let the listener's engine handle what came. */
		void *comm = NULL;

		for (int i = 0; i < 50; i++) {
			zsm_client_accept(x.c, listen, &comm);
			usleep(10000);
		}
		found = h_listener_maps(H_WINDOW_NAME);
		H_EXPECT(found == 0,
			 "the listener %s a mapping of another process's fd "
			 "that a connection request named",
			 found > 0 ? "holds" : "cannot read its maps to check for");
		H_CALL(zsm_client_close_listen(x.c, listen));
	}
	H_OOB(oob_barrier());
	if (mfd >= 0)
		close(mfd);
	h_attacker_close(a);
	return h_teardown(&x);
}

/*
 * The same connection request, many times (a replay): at most one
 * receive comm, which accept() never hands out unless its connector
 * completes the handshake, so the real connection is the one accepted.
 */
int h_case_replay(int rank, void *arg)
{
	char handle[H_HANDLE] = {0};
	struct h_attacker *a = NULL;
	unsigned char req[256];
	struct h_victim v;
	struct h_ctx x;
	void *listen = NULL;
	size_t len;

	(void)arg;
	H_TRY(h_attack_setup(&x, rank, handle, &listen, &v, &a));
	if (rank == 0) {
		len = h_attacker_conn_req(a, &v, req, 4244, (uint32_t)getpid(),
					  -1, 0, 1234);
		H_EXPECT(len, "unknown wire version %u", v.version);
		for (int i = 0; i < 50; i++) {
			H_EXPECT(!h_attacker_ctrl(a, v.listen_id, 1, req, len),
				 "sending the request");
			h_attacker_poll(a);
		}
		usleep(300000);
	}
	H_OOB(oob_barrier());
	H_TRY(h_attack_connect(&x, handle, listen));
	H_OOB(oob_barrier());
	if (h_exchange(&x, 3000, 66) != OOB_PASS)
		return oob_fail("accept() gave a connection that carries "
				"nothing: a replayed request's");
	H_OOB(oob_barrier());
	h_attacker_close(a);
	return h_teardown(&x);
}
