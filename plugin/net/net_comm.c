/* SPDX-License-Identifier: MIT */
/*
 * Owns comms: the listen/connect/accept handshake (the messages are
 * checked by net_ctrl.c before they get here), its time limits, and the
 * two-step close (NCCL's close queues it; the engine frees the comm once
 * no operation refers to it).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "ce/ce.h"
#include "common/handle.h"
#include "common/host.h"
#include "common/log.h"
#include "common/param.h"
#include "net/net.h"

void zsm_net_handle_encode(struct zsm_net_handle *h, uint32_t listen_id,
			   uint32_t nonce, const void *addr, size_t addr_len,
			   uint64_t host_hash)
{
	memset(h, 0, sizeof(*h));
	h->magic = ZSM_HANDLE_MAGIC;
	h->version = ZSM_HANDLE_VERSION;
	h->addr_len = (uint16_t)addr_len;
	h->listen_id = listen_id;
	h->nonce = nonce;
	h->pid = (uint32_t)getpid();
	h->host_hash = host_hash;
	memcpy(h->addr, addr, addr_len);
}

int zsm_net_handle_check(const struct zsm_net_handle *h)
{
	if (h->magic != ZSM_HANDLE_MAGIC) {
		ZSM_WARN("net: connect: not a zsm handle (magic 0x%08x, "
			 "expected 0x%08x): was it made by another plugin?",
			 h->magic, ZSM_HANDLE_MAGIC);
		return -EINVAL;
	}
	if (h->version != ZSM_HANDLE_VERSION) {
		ZSM_WARN("net: connect: handle version %u, this zsm speaks "
			 "%u: mixed zsm versions across ranks?",
			 h->version, ZSM_HANDLE_VERSION);
		return -EINVAL;
	}
	if (h->addr_len == 0 || h->addr_len > ZSM_NET_ADDR_MAX ||
	    h->listen_id == 0 || h->listen_id > ZSM_TAG_ID_MAX ||
	    h->nonce == 0 || h->pid == 0) {
		ZSM_WARN("net: connect: damaged handle (address %u bytes, "
			 "listen id %u)",
			 h->addr_len, h->listen_id);
		return -EINVAL;
	}
	return 0;
}

static uint64_t zsm_net_timeout_ns(void)
{
	return (uint64_t)zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS) * 1000000ULL;
}

static struct zsm_net_comm *zsm_net_comm_new(struct zsm_net_ep *ep, int type)
{
	struct zsm_net_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (zsm_idmap_add(&ep->ids, c, &c->local_id)) {
		free(c);
		return NULL;
	}
	c->type = (uint8_t)type;
	c->ep = ep;
	c->key = zsm_random64();
	c->data_key = (uint32_t)(zsm_random64() & ZSM_CQ_KEY_MASK);
	c->peer = FI_ADDR_NOTAVAIL;
	c->started_ns = zsm_now_ns();
	pthread_mutex_init(&c->pool_lock, NULL);
	c->close_req.desc.ops = &zsm_net_ops;
	c->close_req.desc.fifo = &c->fifo;
	c->close_req.type = ZSM_REQ_CLOSE;
	c->close_req.comm = c;
	c->ep_next = ep->comms;
	ep->comms = c;
	return c;
}

static void zsm_net_comm_unlink(struct zsm_net_comm **head,
				struct zsm_net_comm *c,
				size_t next_off)
{
	for (struct zsm_net_comm **pp = head; *pp;
	     pp = (struct zsm_net_comm **)((char *)*pp + next_off)) {
		if (*pp == c) {
			*pp = *(struct zsm_net_comm **)((char *)c + next_off);
			return;
		}
	}
}

/* A receive comm leaves its listener's list (accepted, closed, expired). */
static void zsm_net_comm_leave_listener(struct zsm_net_comm *rc)
{
	if (!rc->listener)
		return;
	zsm_net_comm_unlink(&rc->listener->accept_head, rc,
			    offsetof(struct zsm_net_comm, accept_next));
	rc->listener->naccept--;
	rc->listener = NULL;
	rc->accept_next = NULL;
}

struct zsm_net_close_wait {
	atomic_int quiet;
};

/*
 * The closer may return once the provider writes none of the comm's
 * buffers: NCCL frees them next.  Receives are cancelled by the close
 * and come back at once unless a transfer into them is under way.  A
 * send the provider still holds only reads its buffer, and may wait for
 * a peer that is closing too: it is not waited for.
 */
static void zsm_net_comm_tell_closer(struct zsm_net_comm *comm, int freeing)
{
	if (!comm->close_wait ||
	    (!freeing && comm->recv_ops && !comm->peer_gone))
		return;
	/* release: pairs with the acquire in zsm_net_comm_close. */
	atomic_store_explicit(&comm->close_wait->quiet, 1,
			      memory_order_release);
	comm->close_wait = NULL;
}

void zsm_net_comm_free(struct zsm_net_comm *comm)
{
	struct zsm_net_ep *ep = comm->ep;
	uint64_t h;

	zsm_net_comm_tell_closer(comm, 1);
	if (comm->ce)
		zsm_ce_chan_close(comm->ce, -ECANCELED);
	comm->ce = NULL;
	zsm_net_comm_leave_listener(comm);
	zsm_net_comm_unlink(&ep->comms, comm,
			    offsetof(struct zsm_net_comm, ep_next));
	if (comm->ctrl_queued) {
		struct zsm_net_comm *prev = NULL;

		for (struct zsm_net_comm *c = ep->ctrl_head; c;
		     prev = c, c = c->ctrl_next) {
			if (c != comm)
				continue;
			if (prev)
				prev->ctrl_next = c->ctrl_next;
			else
				ep->ctrl_head = c->ctrl_next;
			if (ep->ctrl_tail == c)
				ep->ctrl_tail = prev;
			break;
		}
	}
	zsm_idmap_remove(&ep->ids, comm->local_id);
	zsm_net_peer_put(comm->peer_obj);
	zsm_net_req_pool_fini(comm);
	/* Teardown frees comms NCCL never closed: their handles die too. */
	/* acquire: pairs with the release in zsm_entry_publish_comm. */
	h = atomic_load_explicit(&comm->handle, memory_order_acquire);
	if (h) {
		void *obj;

		zsm_handle_close(h,
				 comm->type == ZSM_COMM_SEND   ? ZSM_H_SEND
				 : comm->type == ZSM_COMM_RECV ? ZSM_H_RECV
							       : ZSM_H_LISTEN,
				 &obj);
	}
	free(comm);
}

static void zsm_net_comm_cancel_recvs(struct zsm_net_comm *comm)
{
	struct fid_ep *ep = comm->ep->ep;

	for (struct zsm_net_req_slab *s = comm->slabs; s; s = s->next) {
		for (int i = 0; i < ZSM_REQ_SLAB; i++) {
			struct zsm_net_req *r = &s->reqs[i];

			if (r->type != ZSM_REQ_RECV)
				continue;
			for (int k = 0; k < r->n; k++)
				if (r->ops[k].posted == 1)
					fi_cancel(&ep->fid, &r->ops[k].fi_ctx);
		}
	}
}

/*
 * Requests of a failed comm the provider still holds: report them now.
 * Sends it may never complete (rxm neither fails nor cancels sends to a
 * vanished peer); a receive into which a transfer was under way cannot
 * be cancelled, and one from a peer declared dead may never come back
 * either.  test() gets the error at once; the request stays
 * out of the pool until the provider gives it back or the comm goes.
 */
static void zsm_net_comm_orphan_posted(struct zsm_net_comm *comm, int err)
{
	for (struct zsm_net_req_slab *s = comm->slabs; s; s = s->next) {
		for (int i = 0; i < ZSM_REQ_SLAB; i++) {
			struct zsm_net_req *r = &s->reqs[i];
			int posted = 0;

			if (r->type != ZSM_REQ_SEND && r->type != ZSM_REQ_RECV)
				continue;
			for (int k = 0; k < r->n; k++)
				posted |= r->ops[k].posted == 1;
			/* relaxed: the engine is the only writer. */
			if (posted && r->remaining &&
			    !atomic_load_explicit(&r->orphan,
						  memory_order_relaxed) &&
			    (r->type == ZSM_REQ_SEND || comm->peer_gone))
				zsm_net_req_orphan(r, err);
		}
	}
}

static const char *zsm_net_comm_kind(const struct zsm_net_comm *c)
{
	return c->type == ZSM_COMM_SEND	  ? "send"
	       : c->type == ZSM_COMM_RECV ? "receive"
					  : "listen";
}

void zsm_net_comm_fail(struct zsm_net_comm *comm, int err, const char *why)
{
	int zero = 0;

	/* release: pairs with the acquires in isend/irecv/connect, which
	 * then refuse new work on this comm. */
	if (!atomic_compare_exchange_strong_explicit(&comm->error, &zero, err,
						     memory_order_release,
						     memory_order_relaxed))
		return;
	if (why)
		ZSM_WARN("net: %s: %s comm %u (peer pid %u): %s; failing it",
			 comm->ep->dev->name, zsm_net_comm_kind(comm),
			 comm->local_id, comm->peer_pid, why);
	/* release: pairs with the acquire in zsm_net_comm_connect. */
	atomic_store_explicit(&comm->state, ZSM_COMM_FAILED,
			      memory_order_release);
	/* Receives from a failed peer would wait forever. */
	zsm_net_comm_cancel_recvs(comm);
	zsm_net_comm_orphan_posted(comm, err);
	if (comm->ce)
		zsm_ce_chan_fail(comm->ce, err);
}

/* Where the peer runs, said once when the comm is established. */
static void zsm_net_comm_set_peer(struct zsm_net_comm *comm, uint32_t pid,
				  uint64_t host_hash)
{
	comm->peer_pid = pid;
	comm->peer_host_hash = host_hash;
	comm->same_host = host_hash == zsm_host_hash();
}

static void zsm_net_comm_say_connected(const struct zsm_net_comm *comm)
{
	ZSM_INFO("net: %s: %s comm %u connected to comm %u of pid %u, %s%s",
		 comm->ep->dev->name, zsm_net_comm_kind(comm), comm->local_id,
		 comm->peer_id, comm->peer_pid,
		 comm->same_host ? "same host" : "other host",
		 comm->ce ? ", data by cross-memory attach" : "");
}

/* The peer's address into the vector and its liveness record. */
static int zsm_net_comm_set_addr(struct zsm_net_comm *comm, const void *addr)
{
	int ret = zsm_net_ep_av_insert(comm->ep, addr, &comm->peer);

	if (ret)
		return ret;
	return zsm_net_peer_get(comm->ep, comm->peer, comm->same_host,
				comm->peer_pid, &comm->peer_obj);
}

/* A CONN_REQ reached a listen comm: make the receive comm and answer. */
void zsm_net_comm_on_req(struct zsm_net_comm *lc,
			 const struct zsm_ctrl_msg *m)
{
	struct zsm_net_ep *ep = lc->ep;
	struct zsm_net_comm *rc, **tail;
	char why[256];

	if (zsm_net_ep_addr_check(ep, m->addr, m->addr_len, why,
				  sizeof(why))) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_ADDRESS, why);
		return;
	}
	/* The same request again (a replay, or a retry of one in flight)
	 * is not a new connection. */
	for (rc = lc->accept_head; rc; rc = rc->accept_next)
		if (rc->peer_id == m->src_id && rc->peer_key == m->reply_key) {
			zsm_net_ctrl_drop(ep, ZSM_DROP_REPLAY,
					  "its receive comm exists");
			return;
		}
	if (lc->naccept >= ZSM_NET_ACCEPT_MAX) {
		fi_addr_t to;

		ZSM_WARN("net: %s: listen comm %u already holds %d "
			 "connections nobody accepted: refusing one from pid "
			 "%u",
			 ep->dev->name, lc->local_id, lc->naccept, m->pid);
		if (zsm_net_ep_av_insert(ep, m->addr, &to) == 0)
			zsm_net_ctrl_nack(ep, m, to, -EBUSY);
		return;
	}
	rc = zsm_net_comm_new(ep, ZSM_COMM_RECV);
	if (!rc) {
		ZSM_WARN("net: %s: out of memory accepting a connection",
			 ep->dev->name);
		return;
	}
	rc->peer_id = m->src_id;
	rc->peer_key = m->reply_key;
	zsm_net_credit_recv_init(&rc->credit,
				 (uint32_t)zsm_param_int(ZSM_P_EARLY_MSGS));
	zsm_net_comm_set_peer(rc, m->pid, m->host_hash);
	if (zsm_net_comm_set_addr(rc, m->addr)) {
		zsm_net_comm_post_close(rc);
		return;
	}
	rc->listener = lc;
	for (tail = &lc->accept_head; *tail; tail = &(*tail)->accept_next)
		;
	*tail = rc;
	lc->naccept++;
	/* A connector on this host that can be read gets a window: it
	 * takes it from our pid, the one its handle names. */
	if ((m->flags & ZSM_CTRL_CE_WANT) && rc->same_host &&
	    zsm_ce_enabled() &&
	    zsm_ce_chan_create(&rc->ce, (pid_t)m->pid, m->ce_addr,
			       rc->local_id, rc->key, why, sizeof(why))) {
		static int told;

		if (!told++)
			ZSM_INFO("ce: pid %u is on this host, but %s: its "
				 "comms (and any like it) use the network",
				 m->pid, why);
	}
	ZSM_TRACE("net: %s: listen comm %u answers comm %u of pid %u with "
		  "receive comm %u",
		  ep->dev->name, lc->local_id, m->src_id, m->pid,
		  rc->local_id);
	zsm_net_ctrl_want(rc, ZSM_CTRL_CONN_ACK);
}

/* Connector: the listener's answer. */
void zsm_net_comm_on_ack(struct zsm_net_comm *sc, const struct zsm_ctrl_msg *m)
{
	char why[256];

	if (m->status < 0) {
		snprintf(why, sizeof(why),
			 "listener %u of pid %u refused the connection: %s",
			 sc->peer_id, sc->handle_pid,
			 m->status == -EBUSY
				 ? "it holds too many unaccepted connections"
				 : "it is closed, or the handle is stale");
		zsm_net_comm_fail(sc, m->status == -EBUSY ? -EBUSY
							  : -ECONNREFUSED,
				  why);
		return;
	}
	if (m->pid != sc->handle_pid || m->data_key & ~ZSM_CQ_KEY_MASK ||
	    m->credit == 0) {
		zsm_net_ctrl_drop(sc->ep, ZSM_DROP_MALFORMED,
				  "an answer that is not the handle's pid's");
		return;
	}
	sc->peer_id = m->src_id;
	sc->peer_key = m->reply_key;
	sc->data_key = m->data_key;
	zsm_net_credit_send_init(&sc->credit, m->credit);
	zsm_net_comm_set_peer(sc, m->pid, m->host_hash);
	zsm_net_peer_heard(sc->peer_obj, sc->ep->pass_ns);
	if ((m->flags & ZSM_CTRL_CE_OFFER) && sc->same_host &&
	    zsm_ce_enabled() &&
	    zsm_ce_chan_attach(&sc->ce, (pid_t)sc->handle_pid, m->ce_fd,
			       m->ce_addr, m->src_id, m->reply_key, why,
			       sizeof(why))) {
		static int told;

		if (!told++)
			ZSM_INFO("ce: pid %u is on this host, but %s: its "
				 "comms (and any like it) use the network",
				 sc->handle_pid, why);
	}
	if (sc->ce)
		zsm_ce_chan_start(sc->ce, sc, (pid_t)sc->peer_pid);
	zsm_net_ctrl_want(sc, ZSM_CTRL_CONN_DONE);
	zsm_net_comm_say_connected(sc);
	/* release: pairs with the acquire in zsm_net_comm_connect; the
	 * peer's ids, keys and channel first. */
	atomic_store_explicit(&sc->state, ZSM_COMM_CONNECTED,
			      memory_order_release);
}

void zsm_net_comm_grant_check(struct zsm_net_comm *rc)
{
	/* relaxed: the engine's own write (zsm_net_comm_fail). */
	if (rc->ce || rc->closing ||
	    atomic_load_explicit(&rc->error, memory_order_relaxed) ||
	    !zsm_net_credit_want_grant(&rc->credit))
		return;
	zsm_net_ctrl_want(rc, ZSM_CTRL_GRANT);
}

/* Sender: the receiver posted more; held sends go on the next pass. */
void zsm_net_comm_on_grant(struct zsm_net_comm *sc,
			   const struct zsm_ctrl_msg *m)
{
	zsm_net_peer_heard(sc->peer_obj, sc->ep->pass_ns);
	zsm_net_credit_on_grant(&sc->credit, m->credit);
}

/* Listener: the connector took our window or not; accept() may take rc. */
void zsm_net_comm_on_done(struct zsm_net_comm *rc,
			  const struct zsm_ctrl_msg *m)
{
	zsm_net_peer_heard(rc->peer_obj, rc->ep->pass_ns);
	if (rc->ce && (m->flags & ZSM_CTRL_CE_ON)) {
		zsm_ce_chan_start(rc->ce, rc, (pid_t)rc->peer_pid);
	} else if (rc->ce) {
		zsm_ce_chan_close(rc->ce, -ECANCELED);
		rc->ce = NULL;
	}
	zsm_net_comm_say_connected(rc);
	/* relaxed: accept() reads it under the engine lock. */
	atomic_store_explicit(&rc->state, ZSM_COMM_CONNECTED,
			      memory_order_relaxed);
}

int zsm_net_comm_listen(int dev, struct zsm_net_handle *h,
			struct zsm_net_comm **out)
{
	struct zsm_net_ep *ep;
	struct zsm_net_comm *lc;
	int ret;

	zsm_proxy_lock();
	ret = zsm_net_ep_get(&zsm_net_topo.devs[dev], &ep);
	if (ret)
		goto out;
	ret = -ENOMEM;
	lc = zsm_net_comm_new(ep, ZSM_COMM_LISTEN);
	if (!lc)
		goto out;
	lc->nonce = (uint32_t)zsm_random64() | 1; /* never 0 */
	/* relaxed: nobody reads a listen comm's state before listen()
	 * returns it. */
	atomic_store_explicit(&lc->state, ZSM_COMM_CONNECTED,
			      memory_order_relaxed);
	zsm_net_handle_encode(h, lc->local_id, lc->nonce, ep->addr,
			      ep->addr_len, zsm_host_hash());
	*out = lc;
	ret = 0;
out:
	zsm_proxy_unlock();
	return ret;
}

/* Whether pid, on this host, is a process (it may be stopped). */
static int zsm_net_pid_alive(uint32_t pid)
{
	return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

static int zsm_net_connect_start(int dev, struct zsm_net_handle *h,
				 struct zsm_net_comm **out)
{
	struct zsm_net_ep *ep;
	struct zsm_net_comm *sc;
	char why[160];
	int ret;

	ret = zsm_net_ep_get(&zsm_net_topo.devs[dev], &ep);
	if (ret)
		return ret;
	if (zsm_net_ep_addr_check(ep, h->addr, h->addr_len, why,
				  sizeof(why))) {
		ZSM_WARN("net: connect: the handle's address is not one %s "
			 "can reach (%s): ranks on different providers?",
			 ep->dev->name, why);
		return -EINVAL;
	}
	/* A listener on this host whose process is gone refuses now. */
	if (h->host_hash == zsm_host_hash() && !zsm_net_pid_alive(h->pid)) {
		ZSM_WARN("net: connect: the listener's process (pid %u, this "
			 "host) is not running",
			 h->pid);
		return -ECONNREFUSED;
	}
	sc = zsm_net_comm_new(ep, ZSM_COMM_SEND);
	if (!sc)
		return -ENOMEM;
	sc->nonce = h->nonce;
	sc->peer_id = h->listen_id;
	sc->handle_pid = h->pid;
	zsm_net_comm_set_peer(sc, h->pid, h->host_hash);
	ret = zsm_net_comm_set_addr(sc, h->addr);
	if (ret) {
		zsm_net_comm_post_close(sc);
		return ret;
	}
	/* Sent by the next engine pass: the first send to a new peer makes
	 * rxm open a connection, which can take tens of milliseconds, and
	 * NCCL's connect() calls must stay quick. */
	zsm_net_ctrl_want(sc, ZSM_CTRL_CONN_REQ);
	h->conn_id = sc->local_id;
	h->conn_start_ns = sc->started_ns;
	*out = sc;
	return 0;
}

/* The connect in progress h names, or NULL with *err saying why. */
static struct zsm_net_comm *zsm_net_connect_find(int dev,
						 const struct zsm_net_handle *h,
						 int *err)
{
	struct zsm_net_comm *c =
		zsm_net_dev_find_comm(&zsm_net_topo.devs[dev], h->conn_id);

	/* acquire: pairs with the release in zsm_entry_publish_comm. */
	if (c && c->type == ZSM_COMM_SEND &&
	    !atomic_load_explicit(&c->handle, memory_order_acquire) &&
	    !c->closing &&
	    c->nonce == h->nonce && c->started_ns == h->conn_start_ns)
		return c;
	/* The engine gave it up: it ran out of time and nobody asked. */
	if (zsm_now_ns() - h->conn_start_ns > zsm_net_timeout_ns()) {
		ZSM_WARN("net: connect to listener %u timed out after %lld ms "
			 "(ZSM_CONNECT_TIMEOUT_MS): is the peer alive and "
			 "reachable?",
			 h->listen_id, zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS));
		*err = -ETIMEDOUT;
	} else {
		ZSM_WARN("net: connect: the handle names a connection in "
			 "progress that does not exist (copied or stale "
			 "handle)");
		*err = -EINVAL;
	}
	return NULL;
}

int zsm_net_comm_connect(int dev, struct zsm_net_handle *h,
			 struct zsm_net_comm **out)
{
	struct zsm_net_comm *sc = NULL;
	int ret = 0, state;

	*out = NULL;
	ret = zsm_net_handle_check(h);
	if (ret)
		return ret;
	/* The proxy thread is in a pass (a new rxm connection can hold it
	 * for tens of ms): "not yet", NCCL calls again. */
	if (zsm_proxy_caller_enter())
		return 0;
	if (h->conn_id == 0)
		ret = zsm_net_connect_start(dev, h, &sc);
	else
		sc = zsm_net_connect_find(dev, h, &ret);
	if (ret || !sc)
		goto out;
	if (zsm_proxy_caller_drives())
		zsm_proxy_pass_locked();
	/* acquire: pairs with the release in zsm_net_comm_on_ack and
	 * zsm_net_comm_fail. */
	state = atomic_load_explicit(&sc->state, memory_order_acquire);
	if (state == ZSM_COMM_CONNECTED) {
		*out = sc;
	} else if (state == ZSM_COMM_FAILED) {
		/* relaxed: ordered by the acquire of state above. */
		ret = atomic_load_explicit(&sc->error, memory_order_relaxed);
		h->conn_id = 0;
		zsm_net_comm_post_close(sc);
	}
out:
	zsm_proxy_caller_leave();
	return ret;
}

int zsm_net_comm_accept(struct zsm_net_comm *lc, struct zsm_net_comm **out)
{
	struct zsm_net_comm *rc;

	*out = NULL;
	/* As in connect: never wait for the proxy thread's pass. */
	if (zsm_proxy_caller_enter())
		return 0;
	if (zsm_proxy_caller_drives())
		zsm_proxy_pass_locked();
	for (rc = lc->accept_head; rc; rc = rc->accept_next)
		/* relaxed: written by the engine, whose lock we hold. */
		if (atomic_load_explicit(&rc->state, memory_order_relaxed) ==
		    ZSM_COMM_CONNECTED)
			break;
	if (rc) {
		zsm_net_comm_leave_listener(rc);
		*out = rc;
	}
	zsm_proxy_caller_leave();
	return 0;
}

void zsm_net_comm_maybe_free(struct zsm_net_comm *comm)
{
	if (!comm->closing)
		return;
	zsm_net_comm_tell_closer(comm, 0);
	if (comm->ops_posted == 0)
		zsm_net_comm_free(comm);
}

/* Engine: stop using the comm, cancel its receives, free it when idle. */
int zsm_net_comm_post_close(struct zsm_net_comm *comm)
{
	comm->closing = 1;
	if (comm->ce) {
		zsm_ce_chan_close(comm->ce, -ECANCELED);
		comm->ce = NULL;
	}
	/* Receive comms nobody accepted go with their listener. */
	while (comm->accept_head)
		zsm_net_comm_post_close(comm->accept_head);
	zsm_net_comm_leave_listener(comm);
	comm->ctrl_want = 0;
	zsm_net_comm_cancel_recvs(comm);
	zsm_net_comm_maybe_free(comm);
	return 0;
}

/* How long a close waits for the provider to give the buffers back. */
#define ZSM_NET_CLOSE_WAIT_NS (5ULL * 1000000000ULL)

int zsm_net_comm_close(struct zsm_net_comm *comm)
{
	struct zsm_net_close_wait w;
	uint64_t t0 = zsm_now_ns();
	uint32_t id = comm->local_id;

	atomic_init(&w.quiet, 0);
	/* release: pairs with the acquire in zsm_net_ep_post_op, which may
	 * see it before the close itself is queued (held sends go first). */
	atomic_store_explicit(&comm->close_asked, 1, memory_order_release);
	/* Published to the engine by the queue with the close itself; the
	 * comm may be freed as soon as it is queued. */
	comm->close_wait = &w;
	zsm_proxy_submit_wait(&comm->close_req.desc);
	/* acquire: pairs with the release in zsm_net_comm_tell_closer. */
	while (!atomic_load_explicit(&w.quiet, memory_order_acquire)) {
		if (zsm_now_ns() - t0 > ZSM_NET_CLOSE_WAIT_NS) {
			ZSM_WARN("net: close of comm %u: the provider still "
				 "holds some of its transfers after %llu s; "
				 "their buffers must stay allocated",
				 id, ZSM_NET_CLOSE_WAIT_NS / 1000000000ULL);
			/* The engine must not tell a frame that is gone; a
			 * comm not quiet yet is not freed yet either. */
			zsm_proxy_lock();
			if (!atomic_load_explicit(&w.quiet,
						  memory_order_relaxed))
				comm->close_wait = NULL;
			zsm_proxy_unlock();
			break;
		}
		if (!zsm_proxy_pass())
			sched_yield();
	}
	return 0;
}

/*
 * Handshakes run out of time by themselves, whether NCCL asks again or
 * not: a connect without an answer fails (NCCL's next connect() says so,
 * or the comm is freed once nobody came back for it), a receive comm
 * whose connector never confirmed is dropped.
 */
void zsm_net_comm_expire(struct zsm_net_ep *ep, uint64_t now)
{
	uint64_t limit = zsm_net_timeout_ns();
	struct zsm_net_comm *c, *next;
	char why[128];

	for (c = ep->comms; c; c = next) {
		/* A comm made during this pass is younger than now. */
		uint64_t age = now > c->started_ns ? now - c->started_ns : 0;
		int state;

		next = c->ep_next;
		/* acquire: pairs with the release in zsm_entry_publish_comm
		 * and zsm_entry_close. */
		if (c->closing || c->type == ZSM_COMM_LISTEN ||
		    atomic_load_explicit(&c->handle, memory_order_acquire))
			continue;
		/* relaxed: the engine is the only writer. */
		state = atomic_load_explicit(&c->state, memory_order_relaxed);
		if (c->type == ZSM_COMM_RECV) {
			if (state == ZSM_COMM_CONNECTING && age > limit) {
				ZSM_INFO("net: %s: pid %u never confirmed the "
					 "connection to listen comm %u; "
					 "dropping it",
					 ep->dev->name, c->peer_pid,
					 c->listener ? c->listener->local_id
						     : 0);
				zsm_net_comm_post_close(c);
			}
			continue;
		}
		if (state == ZSM_COMM_CONNECTING && age > limit) {
			snprintf(why, sizeof(why),
				 "no answer from listener %u in %lld ms "
				 "(ZSM_CONNECT_TIMEOUT_MS): is the peer alive "
				 "and reachable?",
				 c->peer_id,
				 zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS));
			zsm_net_comm_fail(c, -ETIMEDOUT, why);
		} else if (age > 2 * limit) {
			/* Nobody came back for it: abandoned. */
			zsm_net_comm_post_close(c);
		}
	}
}
