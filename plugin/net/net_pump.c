/* SPDX-License-Identifier: MIT */
/*
 * Owns duplex devices (ZSM_NET_DUPLEX) and their endpoints' pump threads.
 *
 * tcp;ofi_rxm moves bytes on the host's CPUs, inside whichever call
 * drives the provider, and one endpoint's calls run one at a time.  With
 * every comm of a device on one endpoint, driven by the engine, the bytes
 * a process sends and the bytes it receives share one core: on the GPU
 * machine a put both ways at once got 0.67 of one way's rate each way,
 * the engine's thread at 100 % of a core in both.  A duplex device puts
 * the comms peers connect to (listeners and what they accept) on a second
 * endpoint with a domain of its own, so its own provider locks, and gives
 * each endpoint a pump: a thread that drives the provider for it outside
 * the engine lock.  fi_cq_read with no room for completions moves bytes
 * and leaves the completions to the engine, which the pump wakes.  A
 * rank's puts then go out through one endpoint and its peers' puts come
 * in through the other, each on its own core.
 *
 * The pump spins while zsm has sends in its endpoint, and for a while
 * after the provider showed anything; otherwise it sleeps on the
 * endpoint's fd, which turns readable when bytes come, and on an eventfd
 * the engine writes when it gives the endpoint sends.  Posted receives
 * alone do not keep it spinning: NCCL keeps receives posted all the
 * time, and they need the fd only.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/param.h"
#include "net/net.h"

/* How long the pump keeps driving without a sleep after the provider or
 * zsm last had something for it. */
#define ZSM_NET_PUMP_SPIN_NS 200000ULL
/* Completions the engine has not taken for this long are left to it,
 * and the pump naps this long between looks. */
#define ZSM_NET_PUMP_STALE_NS 2000000ULL
#define ZSM_NET_PUMP_NAP_MS 1
/* ZSM_NET_DUPLEX=auto wants more CPUs than this: where cores are few,
 * two more threads driving the provider take them from the engine and
 * the application, which drive it too. */
#define ZSM_NET_DUPLEX_MAX_CPUS_OFF 4
/* ZSM_NET_TX_PUMPS=auto gives a second sending pump above this many CPUs:
 * it spins beside the first while sends are in flight, and on a small
 * machine three spinning threads a rank starve the engine's. */
#define ZSM_NET_TX_PUMPS_MAX_CPUS_ONE 8

struct zsm_net_pump {
	struct zsm_net_ep *ep;
	pthread_t thread;
	atomic_int stop;
	/* Asleep on the endpoint's fd and its eventfd, which the engine
	 * writes when it gives the endpoint sends (zsm_net_pump_wake). */
	atomic_int asleep;
	int efd;
	/* A helper (ZSM_NET_TX_PUMPS) drives only while zsm has sends in
	 * the endpoint and sleeps on its eventfd alone otherwise: bytes
	 * coming in are the first pump's to notice. */
	int helper;
	struct zsm_net_pump *next;
};

void zsm_net_dev_plan_duplex(struct zsm_net_dev *dev)
{
	int64_t mode = zsm_param_int(ZSM_P_NET_DUPLEX); /* auto|0|1 */
	int64_t pumps = zsm_param_int(ZSM_P_NET_TX_PUMPS); /* auto|1|2|3|4 */
	const char *prov = dev->info->fabric_attr->prov_name;
	char *why = dev->duplex_why;
	size_t len = sizeof(dev->duplex_why), at;
	int cpus = zsm_proxy_cpus();

	dev->duplex = 0;
	if (mode != 0) {
		dev->duplex = mode == 2;
		snprintf(why, len, "%s (ZSM_NET_DUPLEX=%d)",
			 dev->duplex ? "on" : "off", dev->duplex);
	} else if (strcmp(prov, "tcp;ofi_rxm") != 0) {
		/* libfabric's own tcp and sockets move bytes on the host's
		 * CPUs too, but duplex was measured on tcp;ofi_rxm only. */
		int host = strncmp(prov, "tcp", 3) == 0 ||
			   strcmp(prov, "sockets") == 0;

		snprintf(why, len,
			 host ? "off: %s, not measured with it (auto)"
			      : "off: %s moves bytes without the host's CPUs "
				"(auto)",
			 prov);
	} else if (cpus <= ZSM_NET_DUPLEX_MAX_CPUS_OFF) {
		snprintf(why, len, "off: %d CPUs, %d or fewer (auto)", cpus,
			 ZSM_NET_DUPLEX_MAX_CPUS_OFF);
	} else {
		dev->duplex = 1;
		snprintf(why, len, "on: tcp on %d CPUs (auto)", cpus);
	}
	dev->tx_pumps = pumps ? (int)pumps
			: cpus > ZSM_NET_TX_PUMPS_MAX_CPUS_ONE ? 2
							       : 1;
	at = strlen(why);
	if (dev->duplex && at < len)
		snprintf(why + at, len - at, "; %d sending pump%s (%s)",
			 dev->tx_pumps, dev->tx_pumps > 1 ? "s" : "",
			 pumps ? "ZSM_NET_TX_PUMPS" : "auto");
	ZSM_INFO("net: %s: duplex endpoints and pumps: %s", dev->name, why);
}

/*
 * Sleep until bytes come (the endpoint's fd), the engine gives the
 * endpoint sends or the pump is stopped (the eventfd), with no timeout:
 * the pump only speeds the provider up, the engine's own passes never
 * rely on it, and an idle process makes no wake-ups.  Whether it woke
 * for the fd.
 */
static int zsm_net_pump_sleep(struct zsm_net_pump *p)
{
	struct pollfd fds[2] = {{.fd = p->efd, .events = POLLIN},
				{.fd = p->ep->fi.wait_fd, .events = POLLIN}};
	uint64_t v;
	int n;

	/* relaxed store, then the seq_cst fence pairing with the one in
	 * zsm_net_pump_wake (Dekker): either the engine sees us asleep, or
	 * we see the work it gave the endpoint, or the stop. */
	atomic_store_explicit(&p->asleep, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	/* relaxed: ordered by the fence above. */
	if (atomic_load_explicit(&p->ep->pump_busy, memory_order_relaxed) ||
	    atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		atomic_store_explicit(&p->asleep, 0, memory_order_relaxed);
		return 0;
	}
	n = poll(fds, p->ep->fi.wait_fd >= 0 && !p->helper ? 2 : 1, -1);
	/* relaxed: only the wake-up decision reads it. */
	atomic_store_explicit(&p->asleep, 0, memory_order_relaxed);
	if (n > 0 && (fds[0].revents & POLLIN))
		(void)!read(p->efd, &v, sizeof(v));
	return n > 0 && fds[1].revents;
}

static void *zsm_net_pump_main(void *arg)
{
	struct zsm_net_pump *p = arg;
	struct zsm_net_ep *ep = p->ep;
	struct fid *cq = &ep->fi.cq->fid;
	uint64_t spin_until = 0, pending_since = 0;

	/* relaxed: stop is a request; the join is the synchronisation. */
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		/* No room: the provider moves bytes, completions stay. */
		ssize_t n = fi_cq_read(ep->fi.cq, NULL, 0);
		uint64_t now = zsm_now_ns();

		if (p->helper) {
			/* relaxed: a hint, see zsm_net_ep_pump_hint. */
			if (!atomic_load_explicit(&ep->pump_busy,
						  memory_order_relaxed))
				(void)zsm_net_pump_sleep(p);
			continue;
		}
		/* 0: completions wait for the engine; -FI_EAVAIL: a
		 * failure does.  More bytes usually follow them: keep
		 * driving, unless the engine has not taken them for a
		 * while (ZSM_PROXY=inline between test() calls), where a
		 * spin would only burn the core; the fd cannot help then
		 * (it stays readable while they wait). */
		if (n == -FI_EAGAIN) {
			pending_since = 0;
		} else {
			zsm_proxy_wake();
			if (!pending_since)
				pending_since = now;
			if (now - pending_since < ZSM_NET_PUMP_STALE_NS)
				spin_until = now + ZSM_NET_PUMP_SPIN_NS;
		}
		/* relaxed: a hint, see zsm_net_ep_pump_hint. */
		if (atomic_load_explicit(&ep->pump_busy, memory_order_relaxed))
			spin_until = now + ZSM_NET_PUMP_SPIN_NS;
		if (now < spin_until)
			continue;
		if (n != -FI_EAGAIN) {
			(void)poll(NULL, 0, ZSM_NET_PUMP_NAP_MS);
			continue;
		}
		/* Not 0: the provider has something already. */
		if (ep->fi.wait_fd >= 0 &&
		    fi_trywait(ep->fi.fabric, &cq, 1) != 0) {
			spin_until = now + ZSM_NET_PUMP_SPIN_NS;
			continue;
		}
		if (zsm_net_pump_sleep(p))
			spin_until = zsm_now_ns() + ZSM_NET_PUMP_SPIN_NS;
	}
	return NULL;
}

void zsm_net_pump_wake(struct zsm_net_ep *ep)
{
	uint64_t one = 1;

	/* seq_cst fence: pairs with the one in zsm_net_pump_sleep. */
	atomic_thread_fence(memory_order_seq_cst);
	for (struct zsm_net_pump *p = ep->pump; p; p = p->next)
		/* relaxed: ordered by the fence above. */
		if (atomic_load_explicit(&p->asleep, memory_order_relaxed))
			(void)!write(p->efd, &one, sizeof(one));
}

static int zsm_net_pump_start_one(struct zsm_net_ep *ep, int helper)
{
	struct zsm_net_pump *p = calloc(1, sizeof(*p));
	const char *name = helper ? "zsm-pump-tx+" : "zsm-pump-tx";
	int ret;

	if (ep->rx_role)
		name = "zsm-pump-rx";
	if (!p)
		return -ENOMEM;
	p->ep = ep;
	p->helper = helper;
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0) {
		ret = -errno;
		free(p);
		return ret;
	}
	/* The thread is not running yet; pthread_create publishes these. */
	atomic_init(&p->stop, 0);
	atomic_init(&p->asleep, 0);
	ret = -pthread_create(&p->thread, NULL, zsm_net_pump_main, p);
	if (ret) {
		close(p->efd);
		free(p);
		return ret;
	}
	(void)pthread_setname_np(p->thread, name);
	p->next = ep->pump;
	ep->pump = p;
	return 0;
}

int zsm_net_pump_start(struct zsm_net_ep *ep)
{
	int n = ep->rx_role ? 1 : ep->dev->tx_pumps;
	int ret = zsm_net_pump_start_one(ep, 0);

	/* Helpers are extras: without one the endpoint is only slower. */
	for (int i = 1; !ret && i < n; i++)
		if (zsm_net_pump_start_one(ep, 1)) {
			ZSM_WARN("net: %s: %d of %d pump threads for the "
				 "sending endpoint",
				 ep->dev->name, i, n);
			break;
		}
	return ret;
}

void zsm_net_pump_stop(struct zsm_net_ep *ep)
{
	struct zsm_net_pump *p;

	/* relaxed: the join below is what orders the thread's end; the
	 * wake's fence makes a sleeping pump see it. */
	for (p = ep->pump; p; p = p->next)
		atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
	zsm_net_pump_wake(ep);
	while ((p = ep->pump)) {
		pthread_join(p->thread, NULL);
		close(p->efd);
		ep->pump = p->next;
		free(p);
	}
}
