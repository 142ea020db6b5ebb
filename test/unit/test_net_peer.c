/* SPDX-License-Identifier: MIT */
/*
 * Liveness (net_peer.c) on a fake endpoint: silence fails a peer's comms
 * after ZSM_PEER_TIMEOUT_MS (2 s in the first cases; at least 2 x
 * ZSM_PEER_CHECK_MS), but not while a message it may be sending us, or
 * one-sided bytes between us, can still be on their way; a 10 s stop is
 * survived by default; and a peer whose host refuses a knock at its port
 * (a real socket on 127.0.0.1) fails at once.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/param.h"
#include "core/comm.h"
#include "net/net.h"
#include "net/net_api.h"
#include "zsm_test.h"

#define MS 1000000ULL
#define T0 (1000000ULL * MS) /* any start, far from 0 */

struct fake {
	struct zsm_net_dev dev;
	/* The provider's offer: its name alone is read. */
	struct fi_info info;
	struct fi_fabric_attr fabric;
	struct zsm_net_ep ep;
	struct zsm_net_comm *comm;
	struct zsm_comm *owner; /* the core's comm the link carries */
	struct zsm_net_peer *peer;
};

/* The settings each case runs under: NULL for the defaults. */
static const char *peer_timeout_ms;

static const char *fake_env(const char *name)
{
	if (peer_timeout_ms && strcmp(name, "ZSM_PEER_TIMEOUT_MS") == 0)
		return peer_timeout_ms;
	return NULL;
}

/*
 * One receive comm with work outstanding, to a peer on another host,
 * whose address is name (a struct sockaddr_in, knocked at when prov is a
 * tcp provider), or NULL.
 */
static void fake_open_at(struct fake *f, uint64_t recv_max, const char *prov,
			 const struct sockaddr_in *name)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(zsm_param_load(fake_env), 0);
	f->fabric.prov_name = (char *)prov;
	f->info.fabric_attr = &f->fabric;
	f->dev.info = &f->info;
	f->ep.fi.addr_format = FI_SOCKADDR_IN;
	f->ep.fi.addr_len = sizeof(*name);
	snprintf(f->dev.name, sizeof(f->dev.name), "fake0");
	f->dev.ep = &f->ep;
	f->ep.dev = &f->dev;
	f->ep.pass.begin_ns = T0;
	f->comm = calloc(1, sizeof(*f->comm));
	assert_non_null(f->comm);
	f->comm->ep = &f->ep;
	f->comm->type = ZSM_COMM_RECV;
	f->comm->local_id = 1;
	f->comm->remote.id = 2;
	f->comm->posted.data = 1;
	f->comm->posted.recv = 1;
	f->comm->posted.recv_max = recv_max;
	f->ep.comms = f->comm;
	f->owner = zsm_comm_new(ZSM_COMM_RECV);
	assert_non_null(f->owner);
	zsm_comm_bind(f->owner, &zsm_net_comm_ops, f->comm, 1, "fake0");
	f->comm->owner = f->owner;
	zsm_assert_int_eq(zsm_net_peer_get(&f->ep, 5, 0, 4242, name, &f->peer),
			  0);
	f->comm->remote.obj = f->peer;
	/* The first check that finds the work starts the clock. */
	zsm_net_peer_check(&f->ep, T0);
}

static void fake_open(struct fake *f, uint64_t recv_max)
{
	fake_open_at(f, recv_max, "tcp;ofi_rxm", NULL);
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
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
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
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
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
	f.comm->rma.bytes = 64ULL << 20;
	zsm_net_peer_check(&f.ep, T0 + 1500 * MS);
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
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
	f.comm->ctrl.want = 0;
	zsm_net_peer_check(&f.ep, T0 + 2950 * MS);
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_check(&f.ep, T0 + 3800 * MS);
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 3950 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/*
 * A record made on an endpoint that never had a pass (its time 0: a
 * path's endpoint) and busy at once, then told of word from it with that
 * endpoint's time: the clock starts at the first check and never goes
 * back, so the silence allowed is counted from there (a path dead from
 * the start is still found: test/netns/rails-linkdown.sh).
 */
static void test_net_peer_clock_starts_when_watched(void **state)
{
	struct fake f;

	(void)state;
	fake_open(&f, 4096);
	zsm_net_peer_put(f.peer);
	f.ep.pass.begin_ns = 0;
	zsm_assert_int_eq(zsm_net_peer_get(&f.ep, 6, 0, 4243, NULL, &f.peer),
			  0);
	f.comm->remote.obj = f.peer;
	zsm_net_peer_check(&f.ep, T0 + 100 * MS);
	assert_false(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_heard(f.peer, f.ep.pass.begin_ns);
	zsm_net_peer_check(&f.ep, T0 + 1000 * MS);
	assert_false(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_check(&f.ep, T0 + 1600 * MS);
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_check(&f.ep, T0 + 2050 * MS);
	assert_int_equal(fake_failed(&f), 0);
	zsm_net_peer_check(&f.ep, T0 + 2650 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* A socket address on 127.0.0.1: listening (a live process's port, even
 * a stopped one's: the kernel answers), or a port nobody listens on. */
static int loopback_port(struct sockaddr_in *a, int listening)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)a, len), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)a, &len), 0);
	if (listening) {
		assert_int_equal(listen(fd, 16), 0);
		return fd;
	}
	close(fd); /* bound, never listened: the host refuses the port */
	return -1;
}

/* Checks every 250 ms of fake time from `from' to `to', with real time
 * for a knock's answer to come between them. */
static void check_through(struct fake *f, uint64_t from, uint64_t to)
{
	struct timespec nap = {0, 2 * 1000 * 1000};

	for (uint64_t t = from; t <= to && !fake_failed(f); t += 250 * MS) {
		zsm_net_peer_check(&f->ep, t);
		nanosleep(&nap, NULL);
	}
}

/* By default a peer stopped for 10 s (its kernel still answers the
 * knocks) is alive; silence fails it only after 20 s. */
static void test_net_peer_stop_of_10s_is_survived(void **state)
{
	struct sockaddr_in a;
	int lfd = loopback_port(&a, 1);
	struct fake f;

	(void)state;
	fake_open_at(&f, 4096, "tcp;ofi_rxm", &a);
	check_through(&f, T0, T0 + 12000 * MS);
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
	assert_int_equal(fake_failed(&f), 0);
	check_through(&f, T0 + 12000 * MS, T0 + 19750 * MS);
	assert_int_equal(fake_failed(&f), 0);
	check_through(&f, T0 + 20000 * MS, T0 + 21000 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
	close(lfd);
}

/* A peer whose host refuses the knock is gone: its comms fail once the
 * probe waited one check interval, not after the silence allowed. */
static void test_net_peer_refused_knock_fails_comms(void **state)
{
	struct sockaddr_in a;
	struct fake f;

	(void)state;
	loopback_port(&a, 0);
	fake_open_at(&f, 4096, "tcp;ofi_rxm", &a);
	check_through(&f, T0, T0 + 1000 * MS);
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
	assert_int_equal(fake_failed(&f), 0);
	check_through(&f, T0 + 1250 * MS, T0 + 2000 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* A connect whose listener's host refuses the port fails within a few
 * check intervals, not after ZSM_CONNECT_TIMEOUT_MS. */
static void test_net_peer_refused_connect_fails_at_once(void **state)
{
	struct sockaddr_in a;
	struct fake f;

	(void)state;
	loopback_port(&a, 0);
	fake_open_at(&f, 0, "tcp;ofi_rxm", &a);
	f.comm->type = ZSM_COMM_SEND;
	f.comm->posted.data = 0;
	f.comm->posted.recv = 0;
	f.comm->started_ns = T0;
	check_through(&f, T0, T0 + 750 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	fake_close(&f);
}

/* Other providers' socket addresses are no listening TCP port (verbs'
 * are rdma-cm's): a refusal there proves nothing, and none is asked. */
static void test_net_peer_other_provider_is_not_knocked(void **state)
{
	struct sockaddr_in a;
	struct fake f;

	(void)state;
	loopback_port(&a, 0);
	fake_open_at(&f, 4096, "verbs;ofi_rxm", &a);
	check_through(&f, T0, T0 + 19750 * MS);
	assert_int_equal(fake_failed(&f), 0);
	fake_close(&f);
}

static int with_2s(void **state)
{
	(void)state;
	peer_timeout_ms = "2000";
	return 0;
}

static int with_defaults(void **state)
{
	(void)state;
	peer_timeout_ms = NULL;
	return 0;
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
	f.comm->posted.data = 0;
	f.comm->posted.recv = 0;
	held->base.type = ZSM_REQ_SEND;
	held->base.comm = f.owner;
	atomic_store(&held->base.state, ZSM_REQ_PENDING);
	f.comm->held = held;
	zsm_net_peer_check(&f.ep, T0 + 1500 * MS);
	assert_true(f.comm->ctrl.want & (1u << ZSM_CTRL_PING));
	zsm_net_peer_check(&f.ep, T0 + 2510 * MS);
	zsm_assert_int_eq(fake_failed(&f), -ECONNRESET);
	zsm_assert_int_eq(atomic_load(&held->base.state), -ECONNRESET);
	assert_null(f.comm->held);
	fake_close(&f);
	free(held);
}

/*
 * The early messages a peer's receive comms are allowed stay within the
 * cap however many comms it opens (libfabric's tcp RDM endpoint stops
 * reading a peer past its own limit), and a comm that goes gives its
 * share back; with no cap each comm gets all it asks.
 */
static void test_net_peer_early_stays_within_cap(void **state)
{
	struct fake f;
	uint32_t got = 0;

	(void)state;
	fake_open(&f, 4096);
	for (int comm = 0; comm < 40; comm++)
		got += zsm_net_peer_early_take(f.peer, 4, 32);
	zsm_assert_int_eq(got, 32);
	zsm_assert_int_eq(zsm_net_peer_early_take(f.peer, 4, 32), 0);
	/* A cap that does not divide by the allowance: the last comm gets
	 * what is left. */
	zsm_net_peer_early_give(f.peer, 32);
	zsm_assert_int_eq(zsm_net_peer_early_take(f.peer, 4, 6), 4);
	zsm_assert_int_eq(zsm_net_peer_early_take(f.peer, 4, 6), 2);
	zsm_assert_int_eq(zsm_net_peer_early_take(f.peer, 4, 6), 0);
	/* One comm closes: the next one takes its share. */
	zsm_net_peer_early_give(f.peer, 4);
	zsm_assert_int_eq(zsm_net_peer_early_take(f.peer, 4, 6), 4);
	/* No limit. */
	zsm_assert_int_eq(zsm_net_peer_early_take(f.peer, 4, UINT32_MAX), 4);
	/* A record that never came (the address failed): nothing given. */
	zsm_assert_int_eq(zsm_net_peer_early_take(NULL, 4, UINT32_MAX), 0);
	fake_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_net_peer_silence_fails_comms,
				       with_2s),
		cmocka_unit_test_setup(test_net_peer_late_check_probes_first,
				       with_2s),
		cmocka_unit_test_setup(
			test_net_peer_large_receive_is_not_silence, with_2s),
		cmocka_unit_test_setup(
			test_net_peer_rma_in_flight_is_not_silence, with_2s),
		cmocka_unit_test_setup(test_net_peer_heard_restarts_clock,
				       with_2s),
		cmocka_unit_test_setup(test_net_peer_clock_starts_when_watched,
				       with_2s),
		cmocka_unit_test_setup(test_net_peer_stop_of_10s_is_survived,
				       with_defaults),
		cmocka_unit_test_setup(test_net_peer_refused_knock_fails_comms,
				       with_defaults),
		cmocka_unit_test_setup(
			test_net_peer_refused_connect_fails_at_once,
			with_defaults),
		cmocka_unit_test_setup(
			test_net_peer_other_provider_is_not_knocked,
			with_defaults),
		cmocka_unit_test_setup(test_net_peer_held_send_is_watched,
				       with_2s),
		cmocka_unit_test_setup(test_net_peer_early_stays_within_cap,
				       with_defaults),
	};

	return cmocka_run_group_tests_name("net_peer", tests, NULL, NULL);
}
