/* SPDX-License-Identifier: MIT */
/*
 * Owns comms: the listen/connect/accept handshake over control messages,
 * the probing of silent peers, and the two-step close (NCCL's close queues
 * it; the engine frees the comm once no operation refers to it).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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

/* Comms whose connect() is still running; engine lock. */
static struct zsm_net_comm *zsm_net_connecting[64];

static uint32_t zsm_net_nonce(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)zsm_now_ns() ^ (uint32_t)getpid() << 16;
	return v | 1; /* never 0 */
}

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
	    h->nonce == 0) {
		ZSM_WARN("net: connect: damaged handle (address %u bytes, "
			 "listen id %u)",
			 h->addr_len, h->listen_id);
		return -EINVAL;
	}
	return 0;
}

static struct zsm_net_comm *zsm_net_comm_new(struct zsm_net_ep *ep, int type)
{
	struct zsm_net_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->type = (uint8_t)type;
	c->ep = ep;
	c->local_id = zsm_net_ep_new_id(ep);
	c->started_ns = zsm_now_ns();
	c->last_event_ns = c->started_ns;
	pthread_mutex_init(&c->pool_lock, NULL);
	c->close_req.desc.ops = &zsm_net_ops;
	c->close_req.desc.fifo = &c->fifo;
	c->close_req.type = ZSM_REQ_CLOSE;
	c->close_req.comm = c;
	c->ep_next = ep->comms;
	ep->comms = c;
	return c;
}

void zsm_net_comm_free(struct zsm_net_comm *comm)
{
	struct zsm_net_comm **pp;

	if (comm->ctrl_pending)
		comm->ep->nctrl_pending--;
	if (comm->ce)
		zsm_ce_chan_close(comm->ce, -ECANCELED);
	for (pp = &comm->ep->comms; *pp; pp = &(*pp)->ep_next) {
		if (*pp == comm) {
			*pp = comm->ep_next;
			break;
		}
	}
	for (size_t i = 0; i < 64; i++)
		if (zsm_net_connecting[i] == comm)
			zsm_net_connecting[i] = NULL;
	zsm_net_req_pool_fini(comm);
	/* Teardown frees comms NCCL never closed: their handles die too. */
	if (comm->handle) {
		void *obj;

		zsm_handle_close(comm->handle,
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

	if (comm->ctrl_op.posted == 1)
		fi_cancel(&ep->fid, &comm->ctrl_op.fi_ctx);
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

/* Posted sends to a failed peer: report them now, the provider keeps them. */
static void zsm_net_comm_orphan_sends(struct zsm_net_comm *comm, int err)
{
	for (struct zsm_net_req_slab *s = comm->slabs; s; s = s->next) {
		for (int i = 0; i < ZSM_REQ_SLAB; i++) {
			struct zsm_net_req *r = &s->reqs[i];

			if (r->type == ZSM_REQ_SEND && r->remaining &&
			    r->ops[0].posted == 1)
				zsm_net_req_orphan(r, err);
		}
	}
}

void zsm_net_comm_fail(struct zsm_net_comm *comm, int err)
{
	int zero = 0;

	/* release: pairs with the acquires in isend/irecv/connect, which
	 * then refuse new work on this comm. */
	if (atomic_compare_exchange_strong_explicit(&comm->error, &zero, err,
						    memory_order_release,
						    memory_order_relaxed))
	{
		/* release: pairs with the acquire in zsm_net_comm_connect. */
		atomic_store_explicit(&comm->state, ZSM_COMM_FAILED,
				      memory_order_release);
		/* Receives from a failed peer would wait forever. */
		zsm_net_comm_cancel_recvs(comm);
		zsm_net_comm_orphan_sends(comm, err);
	}
}

static int zsm_net_ctrl_post_recv(struct zsm_net_comm *comm,
				  enum zsm_ctrl_type t)
{
	struct zsm_net_op *op = &comm->ctrl_op;
	ssize_t ret;

	op->kind = ZSM_OP_CTRL_RECV;
	op->owner = comm;
	op->index = (uint8_t)t;
	/* A receive is refused only while the provider is short of
	 * resources, which progress frees; bounded all the same. */
	for (int tries = 0; tries < 1000; tries++) {
		ret = fi_trecv(comm->ep->ep, &comm->ctrl_in,
			       sizeof(comm->ctrl_in), NULL, FI_ADDR_UNSPEC,
			       zsm_tag_ctrl(comm->local_id, t), 0,
			       &op->fi_ctx);
		if (ret != -FI_EAGAIN)
			break;
		zsm_net_ep_progress(comm->ep);
	}
	if (ret) {
		ZSM_WARN("net: %s: posting a control receive failed: %s",
			 comm->ep->dev->name, zsm_fi_strerror((int)-ret));
		return -EIO;
	}
	op->posted = 1;
	comm->ops_posted++;
	return 0;
}

/*
 * One attempt at a control send.  -EAGAIN means the provider refused it
 * for now: rxm says so, for ever, while it fails to reach a process that
 * is gone, so nobody may spin on it with the engine lock held.
 */
static int zsm_net_ctrl_send(struct zsm_net_comm *comm, uint32_t to_id,
			     enum zsm_ctrl_type t, size_t len)
{
	struct zsm_net_op *op = &comm->ctrl_send_op;
	ssize_t ret;

	op->kind = ZSM_OP_CTRL_SEND;
	op->owner = comm;
	op->index = (uint8_t)t;
	comm->ctrl_out.magic = ZSM_HANDLE_MAGIC;
	comm->ctrl_out.version = ZSM_HANDLE_VERSION;
	comm->ctrl_out.type = (uint16_t)t;
	comm->ctrl_out.host_hash = zsm_host_hash();
	comm->ctrl_out.pid = (uint32_t)getpid();
	ret = fi_tsend(comm->ep->ep, &comm->ctrl_out, len, NULL, comm->peer,
		       zsm_tag_ctrl(to_id, t), &op->fi_ctx);
	if (ret == -FI_EAGAIN)
		return -EAGAIN;
	if (ret) {
		ZSM_WARN("net: %s: sending a control message failed: %s",
			 comm->ep->dev->name, zsm_fi_strerror((int)-ret));
		return -EIO;
	}
	op->posted = 1;
	comm->ops_posted++;
	return 0;
}

/* The handshake's messages: sent now, or by a later engine pass. */
static int zsm_net_ctrl_send_or_defer(struct zsm_net_comm *comm,
				      enum zsm_ctrl_type t)
{
	int ret = zsm_net_ctrl_send(comm, comm->peer_id, t,
				    sizeof(comm->ctrl_out));

	if (ret == -EAGAIN) {
		comm->ctrl_pending = (uint8_t)t;
		comm->ep->nctrl_pending++;
		return 0;
	}
	return ret;
}

void zsm_net_comm_retry_ctrl(struct zsm_net_ep *ep)
{
	for (struct zsm_net_comm *c = ep->comms; c; c = c->ep_next) {
		int ret;

		if (!c->ctrl_pending)
			continue;
		ret = zsm_net_ctrl_send(c, c->peer_id, c->ctrl_pending,
					sizeof(c->ctrl_out));
		if (ret == -EAGAIN)
			continue;
		c->ctrl_pending = 0;
		ep->nctrl_pending--;
		if (ret)
			zsm_net_comm_fail(c, ret);
	}
}

/*
 * A CONN_REQ or CONN_ACK as received.  The version is checked before any
 * field after it is read: another version's layout would misparse.
 */
static int zsm_net_ctrl_check(const struct zsm_net_comm *comm, size_t len,
			      const char *what)
{
	const struct zsm_ctrl_msg *m = &comm->ctrl_in;

	if (len < offsetof(struct zsm_ctrl_msg, type) ||
	    m->magic != ZSM_HANDLE_MAGIC) {
		ZSM_WARN("net: %s: dropping a %s that is not zsm's (%zu "
			 "bytes)",
			 comm->ep->dev->name, what, len);
		return -EPROTO;
	}
	if (m->version != ZSM_HANDLE_VERSION) {
		ZSM_WARN("net: %s: refusing a %s of zsm wire version %u, this "
			 "zsm speaks %u: mixed zsm versions across ranks?",
			 comm->ep->dev->name, what, m->version,
			 ZSM_HANDLE_VERSION);
		return -EPROTO;
	}
	if (len < ZSM_CTRL_HDR_LEN) {
		ZSM_WARN("net: %s: dropping a %s of %zu bytes, shorter than "
			 "its %zu-byte header",
			 comm->ep->dev->name, what, len,
			 (size_t)ZSM_CTRL_HDR_LEN);
		return -EPROTO;
	}
	return 0;
}

/* Where the peer runs, from its CONN_REQ or CONN_ACK. */
static void zsm_net_comm_set_peer(struct zsm_net_comm *comm,
				  const struct zsm_ctrl_msg *m)
{
	comm->peer_host_hash = m->host_hash;
	comm->peer_pid = m->pid;
	comm->same_host = m->host_hash == zsm_host_hash();
	ZSM_INFO("net: %s: %s comm %u connected to comm %u of pid %u, %s",
		 comm->ep->dev->name,
		 comm->type == ZSM_COMM_SEND ? "send" : "receive",
		 comm->local_id, comm->peer_id, comm->peer_pid,
		 comm->same_host ? "same host" : "other host");
}

/*
 * A connector on this host offered a ce window: map it.  A refusal (a
 * container, ptrace rules) keeps the comm on net, said once at INFO.
 */
static int zsm_net_listen_try_ce(struct zsm_net_comm *rc,
				 const struct zsm_ctrl_msg *m)
{
	static int told;
	char why[256] = "";

	if (m->ce_fd < 0 || m->host_hash != zsm_host_hash() ||
	    !zsm_ce_enabled())
		return 0;
	if (zsm_ce_chan_attach(&rc->ce, (pid_t)m->pid, m->ce_fd, m->ce_addr,
			       why, sizeof(why))) {
		if (!told++)
			ZSM_INFO("ce: pid %u is on this host, but %s: its "
				 "comms (and any like it) use the network",
				 m->pid, why);
		return 0;
	}
	zsm_ce_chan_start(rc->ce, rc, (pid_t)m->pid);
	ZSM_INFO("ce: receive comm %u takes pid %u's data by "
		 "cross-memory attach",
		 rc->local_id, m->pid);
	return 1;
}

/* A CONN_REQ reached a listen comm: make the receive comm and answer. */
static void zsm_net_listen_on_req(struct zsm_net_comm *lc, size_t len)
{
	const struct zsm_ctrl_msg *m = &lc->ctrl_in;
	struct zsm_net_comm *rc, **tail;
	fi_addr_t peer;

	if (zsm_net_ctrl_check(lc, len, "connection request"))
		return;
	if (m->nonce != lc->nonce || m->addr_len == 0 ||
	    m->addr_len > ZSM_NET_ADDR_MAX ||
	    len < ZSM_CTRL_HDR_LEN + m->addr_len) {
		ZSM_WARN("net: %s: dropping a connection request that does "
			 "not match this listener (stale handle?)",
			 lc->ep->dev->name);
		return;
	}
	if (zsm_net_ep_av_insert(lc->ep, m->addr, &peer))
		return;
	rc = zsm_net_comm_new(lc->ep, ZSM_COMM_RECV);
	if (!rc) {
		ZSM_WARN("net: %s: out of memory accepting a connection",
			 lc->ep->dev->name);
		return;
	}
	rc->peer = peer;
	rc->peer_id = m->id;
	rc->nonce = m->nonce;
	rc->ctrl_out.nonce = m->nonce;
	rc->ctrl_out.id = rc->local_id;
	rc->ctrl_out.ce_fd = -1;
	rc->ctrl_out.ce_flags = zsm_net_listen_try_ce(rc, m) ? ZSM_CTRL_CE_ON
							     : 0;
	/* The sender probes us too: take its probes as they come. */
	if (zsm_net_ctrl_post_recv(rc, ZSM_CTRL_PING) ||
	    zsm_net_ctrl_send_or_defer(rc, ZSM_CTRL_CONN_ACK)) {
		zsm_net_comm_post_close(rc);
		return;
	}
	zsm_net_comm_set_peer(rc, m);
	/* relaxed: accept() reads it under the engine lock. */
	atomic_store_explicit(&rc->state, ZSM_COMM_CONNECTED,
			      memory_order_relaxed);
	for (tail = &lc->accept_head; *tail; tail = &(*tail)->accept_next)
		;
	*tail = rc;
}

/* Connector: the listener's answer says whether it took our window. */
static void zsm_net_connect_ce(struct zsm_net_comm *comm)
{
	if (!comm->ce)
		return;
	if (comm->ctrl_in.ce_flags & ZSM_CTRL_CE_ON) {
		zsm_ce_chan_start(comm->ce, comm, (pid_t)comm->peer_pid);
		return;
	}
	zsm_ce_chan_close(comm->ce, -ECANCELED);
	comm->ce = NULL;
}

void zsm_net_ctrl_complete(struct zsm_net_op *op, int err, size_t len)
{
	struct zsm_net_comm *comm = op->owner;

	op->posted = 2;
	comm->ops_posted--;
	comm->last_event_ns = comm->ep->pass_ns;
	if (op->kind == ZSM_OP_CTRL_SEND) {
		if (err && err != -ECANCELED) {
			ZSM_WARN("net: %s: the peer did not take a control "
				 "message: %s",
				 comm->ep->dev->name, strerror(-err));
			zsm_net_comm_fail(comm, -ECONNRESET);
		}
	} else if (!err && !comm->closing) {
		if (comm->type == ZSM_COMM_LISTEN) {
			zsm_net_listen_on_req(comm, len);
			zsm_net_ctrl_post_recv(comm, ZSM_CTRL_CONN_REQ);
		} else if (comm->type == ZSM_COMM_SEND &&
			   op->index == ZSM_CTRL_CONN_ACK) {
			if (zsm_net_ctrl_check(comm, len,
					       "connection answer")) {
				zsm_net_comm_fail(comm, -EPROTO);
			} else if (comm->ctrl_in.nonce != comm->nonce ||
				   comm->ctrl_in.id == 0) {
				ZSM_WARN("net: %s: connection answer does not "
					 "match the request",
					 comm->ep->dev->name);
				zsm_net_comm_fail(comm, -EPROTO);
			} else {
				comm->peer_id = comm->ctrl_in.id;
				zsm_net_comm_set_peer(comm, &comm->ctrl_in);
				zsm_net_connect_ce(comm);
				/* release: pairs with the acquire in
				 * zsm_net_comm_connect; peer_id and the
				 * peer's host first. */
				atomic_store_explicit(&comm->state,
						      ZSM_COMM_CONNECTED,
						      memory_order_release);
			}
			zsm_net_ctrl_post_recv(comm, ZSM_CTRL_PING);
		} else {
			/* A peer's liveness probe: nothing to answer. */
			zsm_net_ctrl_post_recv(comm, ZSM_CTRL_PING);
		}
	} else if (err == -EMSGSIZE && op->kind == ZSM_OP_CTRL_RECV &&
		   !comm->closing) {
		/* Larger than any message of this wire version: a connector
		 * that skipped the handle's version check. */
		ZSM_WARN("net: %s: dropping a control message larger than "
			 "wire version %u's: mixed zsm versions across ranks?",
			 comm->ep->dev->name, ZSM_HANDLE_VERSION);
		if (comm->type == ZSM_COMM_LISTEN)
			zsm_net_ctrl_post_recv(comm, ZSM_CTRL_CONN_REQ);
		else
			zsm_net_comm_fail(comm, -EPROTO);
	} else if (err && err != -ECANCELED) {
		zsm_net_comm_fail(comm, err);
	}
	if (comm->closing)
		zsm_net_comm_maybe_free(comm);
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
	lc->nonce = zsm_net_nonce();
	ret = zsm_net_ctrl_post_recv(lc, ZSM_CTRL_CONN_REQ);
	if (ret) {
		zsm_net_comm_free(lc);
		goto out;
	}
	/* relaxed: nobody reads a listen comm's state before listen()
	 * returns it. */
	atomic_store_explicit(&lc->state, ZSM_COMM_CONNECTED,
			      memory_order_relaxed);
	zsm_net_handle_encode(h, lc->local_id, lc->nonce, ep->addr,
			      ep->addr_len, zsm_host_hash());
	*out = lc;
out:
	zsm_proxy_unlock();
	return ret;
}

static int zsm_net_connect_start(int dev, struct zsm_net_handle *h,
				 struct zsm_net_comm **out)
{
	struct zsm_net_ep *ep;
	struct zsm_net_comm *sc;
	size_t slot;
	int ret;

	for (slot = 0; slot < 64; slot++)
		if (!zsm_net_connecting[slot])
			break;
	if (slot == 64)
		return -EAGAIN; /* NCCL calls again */
	ret = zsm_net_ep_get(&zsm_net_topo.devs[dev], &ep);
	if (ret)
		return ret;
	if (h->addr_len != ep->addr_len) {
		ZSM_WARN("net: connect: the handle's address (%u bytes) is "
			 "not one %s understands (%zu bytes): ranks on "
			 "different providers?",
			 h->addr_len, ep->dev->name, ep->addr_len);
		return -EINVAL;
	}
	sc = zsm_net_comm_new(ep, ZSM_COMM_SEND);
	if (!sc)
		return -ENOMEM;
	sc->nonce = h->nonce;
	sc->peer_id = h->listen_id;
	ret = zsm_net_ep_av_insert(ep, h->addr, &sc->peer);
	if (ret)
		goto err;
	ret = zsm_net_ctrl_post_recv(sc, ZSM_CTRL_CONN_ACK);
	if (ret)
		goto err;
	sc->ctrl_out.nonce = h->nonce;
	sc->ctrl_out.id = sc->local_id;
	sc->ctrl_out.addr_len = (uint32_t)ep->addr_len;
	memcpy(sc->ctrl_out.addr, ep->addr, ep->addr_len);
	sc->ctrl_out.ce_fd = -1;
	/* A listener on this host may take the data over ce: offer it a
	 * window; its answer says whether it could use it. */
	if (h->host_hash == zsm_host_hash() && zsm_ce_enabled()) {
		int fd;
		uint64_t addr;

		if (!zsm_ce_chan_create(&sc->ce, &fd, &addr)) {
			sc->ctrl_out.ce_fd = fd;
			sc->ctrl_out.ce_addr = addr;
		}
	}
	/* The first send to a new peer makes rxm open a connection, which
	 * can take tens of milliseconds: leave it to the proxy thread, so
	 * that NCCL's connect() calls stay quick. */
	if (zsm_proxy_caller_drives()) {
		ret = zsm_net_ctrl_send_or_defer(sc, ZSM_CTRL_CONN_REQ);
	} else {
		sc->ctrl_pending = ZSM_CTRL_CONN_REQ;
		ep->nctrl_pending++;
	}
	if (ret)
		goto err;
	zsm_net_connecting[slot] = sc;
	h->conn_id = sc->local_id;
	*out = sc;
	return 0;
err:
	/* Posted control operations end when the comm is freed. */
	zsm_net_comm_post_close(sc);
	return ret;
}

static struct zsm_net_comm *zsm_net_connect_find(const struct zsm_net_handle *h)
{
	for (size_t i = 0; i < 64; i++) {
		struct zsm_net_comm *c = zsm_net_connecting[i];

		if (c && c->local_id == h->conn_id && c->nonce == h->nonce)
			return c;
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
	if (h->conn_id == 0) {
		ret = zsm_net_connect_start(dev, h, &sc);
		if (ret == -EAGAIN)
			ret = 0;
		if (ret || !sc)
			goto out;
	} else {
		sc = zsm_net_connect_find(h);
		if (!sc) {
			ZSM_WARN("net: connect: the handle names a connection "
				 "in progress that does not exist (copied or "
				 "stale handle)");
			ret = -EINVAL;
			goto out;
		}
	}
	if (zsm_proxy_caller_drives())
		zsm_proxy_pass_locked();
	/* acquire: pairs with the release in zsm_net_ctrl_complete. */
	state = atomic_load_explicit(&sc->state, memory_order_acquire);
	if (state == ZSM_COMM_CONNECTED) {
		for (size_t i = 0; i < 64; i++)
			if (zsm_net_connecting[i] == sc)
				zsm_net_connecting[i] = NULL;
		*out = sc;
	} else if (state == ZSM_COMM_FAILED ||
		   zsm_now_ns() - sc->started_ns >
			   (uint64_t)zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS) *
				   1000000ULL) {
		if (state == ZSM_COMM_FAILED)
			/* relaxed: ordered by the acquire of state above. */
			ret = atomic_load_explicit(&sc->error,
						   memory_order_relaxed);
		else {
			ZSM_WARN("net: connect to listener %u timed out after "
				 "%lld ms (ZSM_CONNECT_TIMEOUT_MS): is the "
				 "peer alive and reachable?",
				 h->listen_id,
				 zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS));
			ret = -ETIMEDOUT;
		}
		for (size_t i = 0; i < 64; i++)
			if (zsm_net_connecting[i] == sc)
				zsm_net_connecting[i] = NULL;
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
	rc = lc->accept_head;
	if (rc) {
		lc->accept_head = rc->accept_next;
		rc->accept_next = NULL;
		*out = rc;
	}
	zsm_proxy_caller_leave();
	return 0;
}

void zsm_net_comm_maybe_free(struct zsm_net_comm *comm)
{
	if (comm->closing && comm->ops_posted == 0)
		zsm_net_comm_free(comm);
}

/* Engine: stop using the comm, cancel its receives, free it when idle. */
int zsm_net_comm_post_close(struct zsm_net_comm *comm)
{
	struct zsm_net_comm *rc, *next;

	comm->closing = 1;
	if (comm->ce) {
		zsm_ce_chan_close(comm->ce, -ECANCELED);
		comm->ce = NULL;
	}
	/* Receive comms nobody accepted go with their listener. */
	for (rc = comm->accept_head; rc; rc = next) {
		next = rc->accept_next;
		zsm_net_comm_post_close(rc);
	}
	comm->accept_head = NULL;
	if (comm->ctrl_pending) {
		comm->ctrl_pending = 0;
		comm->ep->nctrl_pending--;
	}
	zsm_net_comm_cancel_recvs(comm);
	zsm_net_comm_maybe_free(comm);
	return 0;
}

int zsm_net_comm_close(struct zsm_net_comm *comm)
{
	zsm_proxy_submit_wait(&comm->close_req.desc);
	/* Inline mode has no thread: make sure the close is handled. */
	zsm_proxy_pass();
	return 0;
}

/*
 * A comm with work outstanding and no traffic for ZSM_PEER_CHECK_MS asks
 * whether its peer is still there with a 0-byte probe.  A probe that fails,
 * or that the provider keeps refusing (rxm refuses, for ever, to send to a
 * process that is gone) for ZSM_PEER_PROBE_FAILS periods, fails the comm:
 * its receives are cancelled and its sends reported, instead of hanging.
 */
#define ZSM_PEER_PROBE_FAILS 4

void zsm_net_comm_check_peers(struct zsm_net_ep *ep, uint64_t now)
{
	uint64_t every = (uint64_t)zsm_param_int(ZSM_P_PEER_CHECK_MS) * 1000000;

	if (!every || now < ep->next_peer_check_ns)
		return;
	/* Walking every comm is not for each pass of the hot loop. */
	ep->next_peer_check_ns = now + every / 4;
	for (struct zsm_net_comm *c = ep->comms; c; c = c->ep_next) {
		if ((c->type != ZSM_COMM_SEND && c->type != ZSM_COMM_RECV) ||
		    c->closing || c->ctrl_send_op.posted == 1 ||
		    c->ctrl_pending || (!c->data_ops && !c->deferred))
			continue;
		if (!c->probe_refused_ns && now - c->last_event_ns < every)
			continue;
		/* relaxed: the engine is the only writer. */
		if (atomic_load_explicit(&c->error, memory_order_relaxed))
			continue;
		if (zsm_net_ctrl_send(c, c->peer_id, ZSM_CTRL_PING, 0) !=
		    -EAGAIN) {
			c->probe_refused_ns = 0;
			c->last_event_ns = now;
			continue;
		}
		if (!c->probe_refused_ns) {
			c->probe_refused_ns = now;
		} else if (now - c->probe_refused_ns >=
			   ZSM_PEER_PROBE_FAILS * every) {
			ZSM_WARN("net: %s: the peer of comm %u has taken no "
				 "probe for %llu ms: its process is gone or "
				 "unreachable; failing the comm",
				 ep->dev->name, c->local_id,
				 (unsigned long long)((now -
						       c->probe_refused_ns) /
						      1000000));
			zsm_net_comm_fail(c, -ECONNRESET);
		}
	}
}
