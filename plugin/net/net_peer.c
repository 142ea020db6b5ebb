/* SPDX-License-Identifier: MIT */
/*
 * Owns liveness: one record per peer process (address) of an endpoint,
 * shared by every comm to it, since those comms share the provider's
 * connection and live or die with it.
 *
 * A peer on this host is watched through a pidfd, which turns readable
 * when its process exits: a process that is merely stopped (a debugger,
 * SIGSTOP) is alive.  Any other peer is judged by what we hear from it:
 * every message from it, and every send of ours it took, is word that it
 * lives.  While a comm to it has work outstanding and nothing was heard
 * for ZSM_PEER_CHECK_MS, a PING asks it to answer (PONG); nothing heard
 * for twice that fails every comm to it, whether the PING went out, sits
 * in a full queue or is lost behind a link that is down, provided it
 * was asked at least ZSM_PEER_CHECK_MS before (a check that runs late
 * asks first).  A queue that is
 * full because the peer is slow is not silence: its sends still finish.
 * Nor is a large message on its way: over a stream (tcp) the PONG queues
 * behind the bytes the peer sends us first, and a 1 GiB receive brings
 * no completion until its last byte.  Every completion is word, so the
 * silence allowed grows by the time the largest receive we posted from
 * the peer takes to fill at 10 MB/s (ZSM_NET_PEER_NS_PER_BYTE).  One-
 * sided bytes are no different, but no receive announces the peer's
 * puts to us: a get's read streams from the peer, and in an exchange
 * (every collective) the peer's puts to us match ours to it, so the
 * bytes of our puts and gets in flight with the peer count too, all of
 * them, since the PONG waits behind every put queued ahead of it.
 *
 * Silence alone cannot tell a process that died from one that is
 * stopped, or from a link that is down for a while: all three answer
 * nothing, and the provider (tcp;ofi_rxm) tells us nothing either, since
 * it retries a refused connection for ever behind -FI_EAGAIN.  So the
 * silence allowed is long (ZSM_PEER_TIMEOUT_MS: outages of 10 s pass),
 * and a question left unanswered (a PING, or a connect's CONN_REQ) for
 * a check interval makes us knock: a TCP connect to the peer's own
 * address, which on tcp is the socket its provider listens on.  A host
 * that refuses the knock (a reset) has no such process any more, and
 * every comm to it fails at once; a knock that connects, or that gets
 * no answer (a link down, a host gone), proves nothing, and silence
 * keeps its course.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/param.h"
#include "net/net.h"

/*
 * The slowest a live connection is taken to drain what we asked for:
 * 10 MB/s, 100 ns a byte, below any fabric zsm serves even when shared
 * and loaded (with a 1 GiB receive posted a dead peer is found 107 s
 * later; with NCCL's usual 4 MiB steps 0.4 s).
 */
#define ZSM_NET_PEER_NS_PER_BYTE 100ULL

struct zsm_net_peer {
	struct zsm_net_peer *next;
	struct zsm_net_ep *ep;
	fi_addr_t addr;
	int refs;	/* comms using it */
	int pidfd;	/* a peer on this host, or -1 */
	uint32_t pid;
	uint64_t heard_ns;
	uint64_t probe_ns; /* a PING is out since, or 0 */
	/* Its clock runs: the last check found work waiting for it. */
	int watched;
	int failed;
	uint32_t early; /* allowed to its receive comms, in all */
	/* Where to knock (knock_len 0: a provider whose address is no
	 * listening TCP socket), the knock in flight (-1: none), and when
	 * the last one began. */
	struct sockaddr_storage knock_to;
	socklen_t knock_len;
	int knock_fd;
	uint64_t knock_ns;
};

static int zsm_net_peer_pidfd(uint32_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * Where p may be knocked at: the tcp provider's address (alone or under
 * rxm) is the socket it listens on.  Other providers' socket addresses
 * need not be (verbs' are rdma-cm ports), and a refusal there would
 * prove nothing: they are never knocked.
 */
static void zsm_net_peer_set_knock(struct zsm_net_peer *p, const void *name)
{
	const struct zsm_net_ep *ep = p->ep;
	const struct fi_info *fi = ep->dev ? ep->dev->info : NULL;
	sa_family_t family;

	if (!name || !fi || !fi->fabric_attr || !fi->fabric_attr->prov_name ||
	    strncmp(fi->fabric_attr->prov_name, "tcp", 3) != 0 ||
	    (fi->fabric_attr->prov_name[3] != '\0' &&
	     fi->fabric_attr->prov_name[3] != ';'))
		return;
	if (ep->fi.addr_format != FI_SOCKADDR &&
	    ep->fi.addr_format != FI_SOCKADDR_IN &&
	    ep->fi.addr_format != FI_SOCKADDR_IN6)
		return;
	memcpy(&family, name, sizeof(family));
	if ((family == AF_INET &&
	     ep->fi.addr_len >= sizeof(struct sockaddr_in)) ||
	    (family == AF_INET6 &&
	     ep->fi.addr_len >= sizeof(struct sockaddr_in6))) {
		p->knock_len = family == AF_INET ? sizeof(struct sockaddr_in)
						 : sizeof(struct sockaddr_in6);
		memcpy(&p->knock_to, name, p->knock_len);
	}
}

int zsm_net_peer_get(struct zsm_net_ep *ep, fi_addr_t addr, int same_host,
		     uint32_t pid, const void *name, struct zsm_net_peer **out)
{
	struct zsm_net_peer *p;

	for (p = ep->peers; p; p = p->next) {
		if (p->addr == addr && !p->failed) {
			p->refs++;
			*out = p;
			return 0;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ep = ep;
	p->addr = addr;
	p->refs = 1;
	p->pid = pid;
	p->pidfd = -1;
	p->knock_fd = -1;
	if (same_host) {
		/* Without a pidfd (fds exhausted, an old kernel) the peer is
		 * judged by what is heard from it, like a remote one. */
		p->pidfd = zsm_net_peer_pidfd(pid);
		if (p->pidfd < 0)
			ZSM_INFO("net: %s: no pidfd for pid %u on this host "
				 "(%s): its comms are watched by probes",
				 ep->dev->name, pid, strerror(errno));
	}
	if (p->pidfd < 0)
		zsm_net_peer_set_knock(p, name);
	p->next = ep->peers;
	ep->peers = p;
	*out = p;
	return 0;
}

void zsm_net_peer_put(struct zsm_net_peer *p)
{
	struct zsm_net_peer **pp;

	if (!p || --p->refs > 0)
		return;
	for (pp = &p->ep->peers; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->knock_fd >= 0)
		close(p->knock_fd);
	free(p);
}

uint32_t zsm_net_peer_early_take(struct zsm_net_peer *p, uint32_t want,
				 uint32_t cap)
{
	uint32_t left;

	if (!p)
		return 0;
	left = p->early >= cap ? 0 : cap - p->early;
	if (want > left)
		want = left;
	p->early += want;
	return want;
}

void zsm_net_peer_early_give(struct zsm_net_peer *p, uint32_t n)
{
	if (p)
		p->early -= n < p->early ? n : p->early;
}

void zsm_net_peer_heard(struct zsm_net_peer *p, uint64_t now)
{
	if (!p)
		return;
	/* Never back: a caller's time may be another endpoint's last
	 * pass, and one never passed has 0 (a path's link made ready
	 * during path 0's pass once put the clock 21 hours back, and one
	 * unanswered probe failed the comm). */
	if (now > p->heard_ns)
		p->heard_ns = now;
	p->probe_ns = 0;
}

static void zsm_net_peer_knock_end(struct zsm_net_peer *p)
{
	if (p->knock_fd >= 0)
		close(p->knock_fd);
	p->knock_fd = -1;
}

/* Every comm to p fails with err and why (said once, here). */
static void zsm_net_peer_fail(struct zsm_net_peer *p, int err, const char *why)
{
	int n = 0;

	p->failed = 1;
	zsm_net_peer_knock_end(p);
	for (struct zsm_net_comm *c = p->ep->comms; c; c = c->ep_next) {
		if (c->remote.obj != p)
			continue;
		c->remote.gone = 1;
		/* A comm whose data moved to another transport has that
		 * transport's own detector, which says it. */
		if (c->closing || (c->owner && c->owner->tp != c))
			continue;
		/* A comm over several paths has a peer record on each: the
		 * first to find the peer gone says it; a later one reports
		 * what its links still hold for the peer (a receive under
		 * way, which no cancel ends). */
		if (zsm_net_comm_failed(c)) {
			zsm_net_comm_fail_reqs(zsm_net_path_top(c), err);
			continue;
		}
		zsm_net_comm_fail(c, err, NULL);
		n++;
	}
	if (n) {
		struct zsm_net_dev *dev = p->ep->dev;
		char where[96] = "";

		/* With paths, the one whose link went quiet, and its NIC:
		 * the one to look at on a device over several. */
		if (dev->paths > 1)
			snprintf(where, sizeof(where), ", path %d (NIC %s)",
				 p->ep->path, zsm_net_rail_nic(dev, p->ep->path));
		ZSM_WARN("net: %s%s: %s; failing its %d comm(s)", dev->name,
			 where, why, n);
	}
	/* Closers waiting for those comms' receives need not any more: a
	 * gone process moves nothing, and a silent one's transfers end when
	 * its endpoint closes (zsm_net_ep_retire). */
	for (struct zsm_net_comm *c = p->ep->comms; c; c = c->ep_next)
		if (c->remote.obj == p && c->closing)
			zsm_net_comm_maybe_free(c);
}

/* Whether some comm to p waits for the peer: data in the provider, or
 * what zsm_net_comm_waits counts (a path's link whose comm's sends wait
 * for its first GRANT, which only that path brings, was once asked by
 * no check: a path dead from the start hung both ranks past
 * ZSM_PEER_TIMEOUT_MS, failed by nothing). */
static struct zsm_net_comm *zsm_net_peer_busy(struct zsm_net_peer *p)
{
	for (struct zsm_net_comm *c = p->ep->comms; c; c = c->ep_next)
		if (c->remote.obj == p && !c->closing &&
		    (c->posted.data || zsm_net_comm_waits(c)) &&
		    c->remote.id &&
		    !zsm_net_comm_failed(c))
			return c;
	return NULL;
}

/* How long the bytes that may be streaming from p may keep it silent. */
static uint64_t zsm_net_peer_inbound_ns(struct zsm_net_peer *p)
{
	uint64_t bytes = 0;

	for (struct zsm_net_comm *c = p->ep->comms; c; c = c->ep_next) {
		if (c->remote.obj != p || c->closing)
			continue;
		if (c->posted.recv_max > bytes)
			bytes = c->posted.recv_max;
		if (c->rma.bytes > bytes)
			bytes = c->rma.bytes;
	}
	return bytes * ZSM_NET_PEER_NS_PER_BYTE;
}

/* Whether a question to p (a PING, or a connect's CONN_REQ) has waited a
 * check interval for its answer. */
static int zsm_net_peer_unanswered(struct zsm_net_peer *p, uint64_t now)
{
	uint64_t tick = zsm_comm_check_ns();

	if (p->probe_ns && now - p->probe_ns >= tick)
		return 1;
	for (struct zsm_net_comm *c = p->ep->comms; c; c = c->ep_next)
		if (c->remote.obj == p && !c->closing &&
		    c->type == ZSM_COMM_SEND &&
		    c->hs == ZSM_COMM_CONNECTING && now > c->started_ns &&
		    now - c->started_ns >= tick)
			return 1;
	return 0;
}

/* Whether a knock's error is the peer's host saying nobody listens. */
static int zsm_net_peer_refused(int err)
{
	return err == ECONNREFUSED || err == ECONNRESET;
}

/* Start a knock at p; 1 when it was refused at once (loopback). */
static int zsm_net_peer_knock_start(struct zsm_net_peer *p, uint64_t now)
{
	int fd = socket(p->knock_to.ss_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;

	p->knock_ns = now;
	if (fd < 0) {
		/* Out of fds, say: silence keeps its course. */
		ZSM_TRACE("net: knock: socket: %s", strerror(errno));
		return 0;
	}
	if (connect(fd, (const struct sockaddr *)&p->knock_to,
		    p->knock_len) == 0) {
		close(fd);
		return 0;
	}
	err = errno; /* close() may change it */
	if (err == EINPROGRESS) {
		p->knock_fd = fd;
		return 0;
	}
	close(fd);
	return zsm_net_peer_refused(err);
}

/* The knock in flight: 1 when refused; ended when answered or when it
 * waited `every' (no answer: a link down or a host gone says nothing). */
static int zsm_net_peer_knock_poll(struct zsm_net_peer *p, uint64_t now,
				   uint64_t every)
{
	struct pollfd pfd = {.fd = p->knock_fd, .events = POLLOUT};
	socklen_t len = sizeof(int);
	int err = 0;

	if (poll(&pfd, 1, 0) != 1) {
		if (now - p->knock_ns >= every)
			zsm_net_peer_knock_end(p);
		return 0;
	}
	if (getsockopt(p->knock_fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	zsm_net_peer_knock_end(p);
	return zsm_net_peer_refused(err);
}

/* Knock at p while a question to it is unanswered, one knock at a time
 * and at most one every `every'; 1 when its host refused one. */
static int zsm_net_peer_knock(struct zsm_net_peer *p, uint64_t now,
			      uint64_t every)
{
	if (!p->knock_len)
		return 0;
	if (p->knock_fd >= 0)
		return zsm_net_peer_knock_poll(p, now, every);
	if ((p->knock_ns && now - p->knock_ns < every) ||
	    !zsm_net_peer_unanswered(p, now))
		return 0;
	return zsm_net_peer_knock_start(p, now);
}

/* The peer's process is gone: its host refused a knock. */
static void zsm_net_peer_fail_refused(struct zsm_net_peer *p)
{
	char host[INET6_ADDRSTRLEN] = "?", why[192];
	const void *ip;
	in_port_t port;

	if (p->knock_to.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&p->knock_to;

		ip = &a->sin_addr;
		port = a->sin_port;
	} else {
		const struct sockaddr_in6 *a = (const void *)&p->knock_to;

		ip = &a->sin6_addr;
		port = a->sin6_port;
	}
	inet_ntop(p->knock_to.ss_family, ip, host, sizeof(host));
	snprintf(why, sizeof(why),
		 "pid %u is gone: it left a question unanswered, and its "
		 "host %s refuses connections to its port %u",
		 p->pid, host, ntohs(port));
	zsm_net_peer_fail(p, -ECONNRESET, why);
}

/* Silence: a probe after `every', the verdict after the time allowed. */
static void zsm_net_peer_judge(struct zsm_net_peer *p, uint64_t now,
			       uint64_t every, struct zsm_net_comm *busy)
{
	uint64_t allowed = (uint64_t)zsm_param_int(ZSM_P_PEER_TIMEOUT_MS) *
			   1000000ULL;
	char why[224];

	if (allowed < 2 * every)
		allowed = 2 * every;
	/* A probe goes out after ZSM_PEER_CHECK_MS of silence, and the
	 * peer counts as gone only once it had that long again to answer
	 * it while we were looking: a check that ran late (a loaded
	 * machine) sends the probe first, it does not judge the time it
	 * did not watch. */
	if (now - p->heard_ns >= every && !p->probe_ns) {
		p->probe_ns = now;
		zsm_net_ctrl_want(busy, ZSM_CTRL_PING);
		return;
	}
	if (!p->probe_ns || now - p->probe_ns < every ||
	    now - p->heard_ns < allowed + zsm_net_peer_inbound_ns(p))
		return;
	/* Its connection may come back with transfers in it: an endpoint of
	 * their own from now on.  So may the connections of the other paths
	 * of its comms, to the same process, whose own records no longer
	 * watch it once the comms failed (their transfers read buffers
	 * NCCL frees after the close). */
	zsm_net_ep_retire(p->ep);
	for (struct zsm_net_comm *c = p->ep->comms; c; c = c->ep_next)
		if (c->remote.obj == p)
			zsm_net_path_retire_links(c);
	snprintf(why, sizeof(why),
		 "nothing heard from pid %u for %llu ms (ZSM_PEER_TIMEOUT_MS="
		 "%lld, a probe unanswered for %llu ms): its host is gone or "
		 "unreachable, or the process stopped",
		 p->pid,
		 (unsigned long long)((now - p->heard_ns) / 1000000ULL),
		 zsm_param_int(ZSM_P_PEER_TIMEOUT_MS),
		 (unsigned long long)((now - p->probe_ns) / 1000000ULL));
	zsm_net_peer_fail(p, -ECONNRESET, why);
}

void zsm_net_peer_check(struct zsm_net_ep *ep, uint64_t now)
{
	uint64_t every = (uint64_t)zsm_param_int(ZSM_P_PEER_CHECK_MS) *
			 1000000ULL;
	char why[96];

	for (struct zsm_net_peer *p = ep->peers; p; p = p->next) {
		struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
		struct zsm_net_comm *busy;

		if (p->failed)
			continue;
		if (p->pidfd >= 0) {
			if (poll(&pfd, 1, 0) == 1) {
				snprintf(why, sizeof(why),
					 "pid %u on this host has exited",
					 p->pid);
				zsm_net_peer_fail(p, -ECONNRESET, why);
			}
			continue;
		}
		if (every && zsm_net_peer_knock(p, now, every)) {
			zsm_net_peer_fail_refused(p);
			continue;
		}
		busy = every ? zsm_net_peer_busy(p) : NULL;
		if (!busy || !p->watched || p->heard_ns > now) {
			/* Idle: the clock starts when a check first finds
			 * work, not when the record was made (its endpoint's
			 * last pass, which may be long ago). */
			p->heard_ns = now;
			p->probe_ns = 0;
			p->watched = busy != NULL;
			continue;
		}
		zsm_net_peer_judge(p, now, every, busy);
	}
}
