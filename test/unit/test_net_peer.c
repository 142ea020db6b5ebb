/* SPDX-License-Identifier: MIT */
/*
 * Liveness (net_peer.c) on a fake endpoint: silence fails a peer's comms
 * after 2 x ZSM_PEER_CHECK_MS, but not while a message it may be sending
 * us, or one-sided bytes between us, can still be on their way.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/param.h"
#include "core/comm.h"
#include "net/net.h"
#include "net/net_api.h"
#include "zsm_test.h"

#define MS 1000000ULL
#define T0 (1000000ULL * MS) /* any start, far from 0 */

struct fake {
	struct zsm_net_dev dev;
	struct zsm_net_ep ep;
	struct zsm_net_comm *comm;
	struct zsm_comm *owner; /* the core's comm the link carries */
	struct zsm_net_peer *peer;
};

static const char *no_env(const char *name)
{
	(void)name;
	return NULL;
}

/* One receive comm with work outstanding, to a peer on another host. */
static void fake_open(struct fake *f, uint64_t recv_max)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(zsm_param_load(no_env), 0);
	snprintf(f->dev.name, sizeof(f->dev.name), "fake0");
	f->dev.ep = &f->ep;
	f->ep.dev = &f->dev;
	f->ep.pass_ns = T0;
	f->comm = calloc(1, sizeof(*f->comm));
	assert_non_null(f->comm);
	f->comm->ep = &f->ep;
	f->comm->type = ZSM_COMM_RECV;
	f->comm->local_id = 1;
	f->comm->peer_id = 2;
	f->comm->data_ops = 1;
	f->comm->recv_ops = 1;
	f->comm->recv_max = recv_max;
	f->ep.comms = f->comm;
	f->owner = zsm_comm_new(ZSM_COMM_RECV);
	assert_non_null(f->owner);
	zsm_comm_bind(f->owner, &zsm_net_comm_ops, f->comm, 1, "fake0");
	f->comm->owner = f->owner;
	zsm_assert_int_eq(zsm_net_peer_get(&f->ep, 5, 0, 4242, &f->peer), 0);
	f->comm->peer_obj = f->peer;
}

static int fake_failed(struct fake *f)
{
	return zsm_comm_error(f->owner);
}

static void fake_close(struct fake *f)
{
	zsm_net_peer_put(f->peer);
	zsm_comm_release(f->owner);
	free(f->comm);
}

static void test_net_peer_silence_fails_comms(void **state)
{
	struct fake f;

	(void)state;
	fake_open(&f, 4096);
	zsm_net_peer_check(&f.ep, T0 + 1500 * MS);
	assert_true(f.comm->ctrl_want & (1u << ZSM_CTRL_PING));
	assert_int_equal(fake_failed(&f), 0);
	/* Silent for twice the setting, but the probe went out only 0.5 s
	 * ago: it gets the whole setting to be answered. */
	zsm_net_peer_check(&f.ep, T0 + 2010 * MS);
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 2510 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* A check that comes late (the machine was busy) asks before it judges:
 * the silence it did not watch is no proof. */
static void test_net_peer_late_check_probes_first(void **state)
{
	struct fake f;

	(void)state;
	fake_open(&f, 4096);
	zsm_net_peer_check(&f.ep, T0 + 2600 * MS);
	assert_true(f.comm->ctrl_want & (1u << ZSM_CTRL_PING));
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 3200 * MS);
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 3600 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* 1 GiB at 10 MB/s: up to 107.4 s more before silence means death. */
static void test_net_peer_large_receive_is_not_silence(void **state)
{
	struct fake f;

	(void)state;
	fake_open(&f, 1ULL << 30);
	zsm_net_peer_check(&f.ep, T0 + 1500 * MS);
	zsm_net_peer_check(&f.ep, T0 + 3000 * MS);
	zsm_net_peer_check(&f.ep, T0 + 100000 * MS);
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 109500 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* 64 MiB of puts in flight to the peer (its own to us, as large in an
 * exchange, hold its PONG back): 6.7 s more. */
static void test_net_peer_rma_in_flight_is_not_silence(void **state)
{
	struct fake f;

	(void)state;
	fake_open(&f, 4096);
	f.comm->rma_bytes = 64ULL << 20;
	zsm_net_peer_check(&f.ep, T0 + 1500 * MS);
	assert_true(f.comm->ctrl_want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_check(&f.ep, T0 + 3000 * MS);
	zsm_net_peer_check(&f.ep, T0 + 8600 * MS);
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 8800 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* What is heard restarts the clock, whatever the receive's size. */
static void test_net_peer_heard_restarts_clock(void **state)
{
	struct fake f;

	(void)state;
	fake_open(&f, 4096);
	zsm_net_peer_check(&f.ep, T0 + 1500 * MS);
	zsm_net_peer_heard(f.peer, T0 + 1900 * MS);
	/* The next probe goes at 1 s of the new silence. */
	f.comm->ctrl_want = 0;
	zsm_net_peer_check(&f.ep, T0 + 2950 * MS);
	assert_true(f.comm->ctrl_want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_check(&f.ep, T0 + 3800 * MS);
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 3950 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* A send held until its receive is known posted (net_credit.h) waits
 * for the peer as one in flight does: silence fails it, it does not pend
 * for ever. */
static void test_net_peer_held_send_is_watched(void **state)
{
	struct zsm_net_req *held = calloc(1, sizeof(*held));
	struct fake f;

	(void)state;
	assert_non_null(held);
	fake_open(&f, 0);
	f.comm->type = ZSM_COMM_SEND;
	f.comm->data_ops = 0;
	f.comm->recv_ops = 0;
	held->base.type = ZSM_REQ_SEND;
	held->base.comm = f.owner;
	atomic_store(&held->base.state, ZSM_REQ_PENDING);
	f.comm->held = held;
	zsm_net_peer_check(&f.ep, T0 + 1500 * MS);
	assert_true(f.comm->ctrl_want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_check(&f.ep, T0 + 2510 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	zsm_assert_int_eq(atomic_load(&held->base.state), -ECONNRESET);
	assert_null(f.comm->held);
	fake_close(&f);
	free(held);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_peer_silence_fails_comms),
		cmocka_unit_test(test_net_peer_late_check_probes_first),
		cmocka_unit_test(test_net_peer_large_receive_is_not_silence),
		cmocka_unit_test(test_net_peer_rma_in_flight_is_not_silence),
		cmocka_unit_test(test_net_peer_heard_restarts_clock),
		cmocka_unit_test(test_net_peer_held_send_is_watched),
	};

	return cmocka_run_group_tests_name("net_peer", tests, NULL, NULL);
}
