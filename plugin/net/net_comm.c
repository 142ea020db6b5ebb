/* SPDX-License-Identifier: MIT */
/*
 * Owns net's links: the listen/connect/accept handshake (the messages
 * are checked by net_ctrl.c before they get here, and the core reads
 * and answers the offers they carry), its time limits, and a link's end
 * (the engine frees it once no operation refers to it).
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

#include "common/host.h"
#include "common/log.h"
#include "common/param.h"
#include "net/net.h"
#include "net/net_api.h"

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

int zsm_net_handle_ok(const void *handle)
{
	return zsm_net_handle_check(handle) == 0;
}

struct zsm_net_comm *zsm_net_comm_new(struct zsm_net_ep *ep, int type)
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
	c->remote.addr = FI_ADDR_NOTAVAIL;
	c->started_ns = zsm_now_ns();
	c->paths.n = 1;
	c->paths.link[0] = c;
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
	if (!rc->accept.listener)
		return;
	zsm_net_comm_unlink(&rc->accept.listener->accept.head, rc,
			    offsetof(struct zsm_net_comm, accept.next));
	rc->accept.listener->accept.n--;
	rc->accept.listener = NULL;
	rc->accept.next = NULL;
}

/* The links of comm's paths still there (not the comm itself). */
static int zsm_net_comm_path_links(const struct zsm_net_comm *comm)
{
	int n = 0;

	for (int j = 1; j < comm->paths.n; j++)
		n += comm->paths.link[j] != NULL;
	return n;
}

/* Whether the provider may still write a receive of comm's, on any of
 * its paths. */
static int zsm_net_comm_recvs_out(const struct zsm_net_comm *comm)
{
	for (int j = 0; j < comm->paths.n; j++) {
		const struct zsm_net_comm *l = comm->paths.link[j];

		if (l && l->posted.recv && !l->remote.gone)
			return 1;
	}
	return 0;
}

/*
 * The closer may return once the provider writes none of the comm's
 * buffers: NCCL frees them next.  Receives are cancelled by the close
 * and come back at once unless a transfer into them is under way.  A
 * send the provider still holds only reads its buffer, and may wait for
 * a peer that is closing too: it is not waited for.
 */
static void zsm_net_comm_tell_closer(struct zsm_net_comm *comm, int freeing)
{
	if (!comm->owner || comm->owner->tp != comm ||
	    (!freeing && zsm_net_comm_recvs_out(comm)))
		return;
	zsm_comm_quiet(comm->owner);
}

/* Ties between a comm and its paths' links, undone as either goes. */
static void zsm_net_comm_path_unlink(struct zsm_net_comm *comm)
{
	if (comm->paths.parent) {
		comm->paths.parent->paths.link[comm->paths.index] = NULL;
		comm->paths.parent = NULL;
	}
	for (int j = 1; j < comm->paths.n; j++)
		if (comm->paths.link[j])
			comm->paths.link[j]->paths.parent = NULL;
	zsm_net_path_seq_fini(&comm->paths.seq);
}

void zsm_net_comm_free(struct zsm_net_comm *comm)
{
	struct zsm_net_ep *ep = comm->ep;

	zsm_net_comm_tell_closer(comm, 1);
	zsm_net_comm_path_unlink(comm);
	zsm_net_comm_leave_listener(comm);
	zsm_net_rma_comm_fini(comm);
	zsm_net_comm_unlink(&ep->comms, comm,
			    offsetof(struct zsm_net_comm, ep_next));
	if (comm->ctrl.queued) {
		struct zsm_net_comm *prev = NULL;

		for (struct zsm_net_comm *c = ep->ctrl.head; c;
		     prev = c, c = c->ctrl.next) {
			if (c != comm)
				continue;
			if (prev)
				prev->ctrl.next = c->ctrl.next;
			else
				ep->ctrl.head = c->ctrl.next;
			if (ep->ctrl.tail == c)
				ep->ctrl.tail = prev;
			break;
		}
	}
	zsm_idmap_remove(&ep->ids, comm->local_id);
	if (comm->type == ZSM_COMM_RECV)
		zsm_net_peer_early_give(comm->remote.obj, comm->credit.early);
	zsm_net_peer_put(comm->remote.obj);
	/* The core's comm goes with its link. */
	if (comm->owner)
		zsm_comm_link_gone(comm->owner, comm);
	free(comm);
}

/* Each request of the link's owner that net posted, in turn. */
static struct zsm_net_req *zsm_net_comm_next_req(struct zsm_net_comm *comm,
						 struct zsm_net_req *prev)
{
	struct zsm_req *r;

	if (!comm->owner || comm->owner->tp != comm)
		return NULL;
	r = zsm_req_next(comm->owner, prev ? &prev->base : NULL);
	return r ? zsm_net_req_of(r) : NULL;
}

static void zsm_net_comm_cancel_recvs(struct zsm_net_comm *comm)
{
	for (struct zsm_net_req *r = zsm_net_comm_next_req(comm, NULL); r;
	     r = zsm_net_comm_next_req(comm, r)) {
		if (r->base.type != ZSM_REQ_RECV)
			continue;
		/* Each on the endpoint of the link it went on. */
		for (int k = 0; k < r->base.n; k++)
			if (r->ops[k].posted == 1)
				fi_cancel(&r->ops[k].link->ep->fi.ep->fid,
					  &r->ops[k].fi_ctx);
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
	/* Every path goes to the same process: one path's peer record
	 * that found it gone speaks for all (the others, their comm
	 * failed, no longer watch it). */
	int gone = 0;

	for (int j = 0; j < comm->paths.n; j++)
		gone |= comm->paths.link[j] && comm->paths.link[j]->remote.gone;
	for (struct zsm_net_req *r = zsm_net_comm_next_req(comm, NULL); r;
	     r = zsm_net_comm_next_req(comm, r)) {
		int posted = 0;

		if (r->base.type != ZSM_REQ_SEND && r->base.type != ZSM_REQ_RECV)
			continue;
		for (int k = 0; k < r->base.n; k++)
			posted |= r->ops[k].posted == 1;
		/* relaxed: the engine is the only writer. */
		if (posted && r->base.remaining &&
		    !atomic_load_explicit(&r->base.orphan,
					  memory_order_relaxed) &&
		    (r->base.type == ZSM_REQ_SEND || gone))
			zsm_req_orphan(&r->base, err);
	}
}

void zsm_net_comm_fail_reqs(struct zsm_net_comm *comm, int err)
{
	/* Its paths' links first: the requests are all the comm's. */
	for (int j = 1; j < comm->paths.n; j++) {
		struct zsm_net_comm *l = comm->paths.link[j];

		if (!l || l->failed)
			continue;
		l->failed = 1;
		l->hs = ZSM_COMM_FAILED;
		zsm_net_req_report_held(l, err);
	}
	comm->failed = 1;
	comm->hs = ZSM_COMM_FAILED;
	/* Receives from a failed peer would wait forever. */
	zsm_net_comm_cancel_recvs(comm);
	zsm_net_comm_orphan_posted(comm, err);
	/* Held sends may never have reached a receive. */
	zsm_net_req_report_held(comm, err);
	/* Our sender's puts wait for a SIGNALED, and this comm applies no
	 * more SIGNALs: say it failed (a refusal said so already). */
	if (comm->type == ZSM_COMM_RECV && comm->ep->windows &&
	    !comm->remote.gone && !comm->closing && !comm->credit.closed) {
		if (!comm->rma.status)
			comm->rma.status = err < 0 ? err : -EIO;
		zsm_net_ctrl_want(comm, ZSM_CTRL_SIGNALED);
	}
}

void zsm_net_comm_fail(struct zsm_net_comm *comm, int err, const char *why)
{
	/* A path's link fails with its comm, which says so once, naming
	 * the path. */
	if (comm->paths.parent) {
		char w[256];

		if (why)
			snprintf(w, sizeof(w), "path %d (NIC %s): %s",
				 comm->paths.index,
				 zsm_net_rail_nic(comm->ep->dev, comm->ep->path),
				 why);
		zsm_net_comm_fail(comm->paths.parent, err, why ? w : NULL);
		return;
	}
	if (comm->failed)
		return;
	comm->failed = 1;
	comm->hs = ZSM_COMM_FAILED;
	/* The core says it once and comes back for the requests; a link
	 * whose comm moved to another transport fails that comm too (its
	 * handshake link is gone).  One without a comm has nothing to
	 * tell. */
	if (comm->owner)
		zsm_comm_fail(comm->owner, err, why);
	zsm_net_comm_fail_reqs(comm, err);
}

int zsm_net_comm_failed(const struct zsm_net_comm *comm)
{
	if (comm->paths.parent)
		comm = comm->paths.parent;
	return comm->failed || (comm->owner && zsm_comm_error(comm->owner));
}

/* Where the peer runs, said once when the comm is established. */
void zsm_net_comm_set_peer(struct zsm_net_comm *comm, uint32_t pid,
			   uint64_t host_hash)
{
	comm->remote.pid = pid;
	comm->remote.host_hash = host_hash;
	comm->remote.same_host = host_hash == zsm_host_hash();
}

/* The peer, for the core. */
static void zsm_net_comm_peer(const struct zsm_net_comm *comm,
			      struct zsm_peer *p)
{
	p->host_hash = comm->remote.host_hash;
	p->pid = comm->remote.pid;
	p->same_host = comm->remote.same_host;
	p->comm_id = comm->remote.id;
}

/* A message's opaque offer, checked for length. */
static void zsm_net_comm_offer_in(const struct zsm_ctrl_msg *m,
				  struct zsm_offer *o)
{
	memset(o, 0, sizeof(*o));
	if (m->offer_len > sizeof(o->bytes))
		return;
	o->len = m->offer_len;
	memcpy(o->bytes, m->offer, m->offer_len);
}

/* The peer's address into the vector and its liveness record. */
int zsm_net_comm_set_addr(struct zsm_net_comm *comm, const void *addr)
{
	int ret = zsm_net_ep_av_insert(comm->ep, addr, &comm->remote.addr);

	if (ret)
		return ret;
	return zsm_net_peer_get(comm->ep, comm->remote.addr,
				comm->remote.same_host, comm->remote.pid, addr,
				&comm->remote.obj);
}

/* A CONN_REQ reached a listen comm: make the receive comm and answer. */
void zsm_net_comm_on_req(struct zsm_net_comm *lc,
			 const struct zsm_ctrl_msg *m)
{
	struct zsm_net_ep *ep = lc->ep;
	struct zsm_net_comm *rc, **tail;
	struct zsm_offer offer;
	struct zsm_peer peer;
	char why[256];

	if (zsm_net_ep_addr_check(ep, m->addr, m->addr_len, why,
				  sizeof(why))) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_ADDRESS, why);
		return;
	}
	/* The same request again (a replay, or a retry of one in flight)
	 * is not a new connection. */
	for (rc = lc->accept.head; rc; rc = rc->accept.next)
		if (rc->remote.id == m->src_id &&
		    rc->remote.key == m->reply_key) {
			zsm_net_ctrl_drop(ep, ZSM_DROP_REPLAY,
					  "its receive comm exists");
			return;
		}
	if (lc->accept.n >= ZSM_NET_ACCEPT_MAX) {
		fi_addr_t to;

		ZSM_WARN("net: %s: listen comm %u already holds %d "
			 "connections nobody accepted: refusing one from pid "
			 "%u",
			 ep->dev->name, lc->local_id, lc->accept.n, m->pid);
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
	/* A sweep for strays that holds its tags stops now. */
	zsm_net_drain_comm_made(ep);
	rc->remote.id = m->src_id;
	rc->remote.key = m->reply_key;
	zsm_net_comm_set_peer(rc, m->pid, m->host_hash);
	if (zsm_net_comm_set_addr(rc, m->addr)) {
		zsm_net_comm_post_close(rc);
		return;
	}
	/* The allowance, within what the peer's comms may hold in all
	 * (zsm_net_dev's early_peer); the CONN_ACK tells the sender. */
	zsm_net_credit_recv_init(
		&rc->credit,
		zsm_net_peer_early_take(
			rc->remote.obj,
			(uint32_t)zsm_param_int(ZSM_P_EARLY_MSGS),
			ep->dev->early_peer));
	/* The core's comm for it, and its answer to what else the
	 * connector offered. */
	zsm_net_comm_peer(rc, &peer);
	zsm_net_comm_offer_in(m, &offer);
	if (zsm_comm_incoming(lc->owner, &zsm_net_comm_ops, rc, rc->local_id,
			      &peer, &offer, &rc->owner, &rc->ctrl.offer)) {
		ZSM_WARN("net: %s: out of memory accepting a connection",
			 ep->dev->name);
		zsm_net_comm_post_close(rc);
		return;
	}
	rc->accept.listener = lc;
	for (tail = &lc->accept.head; *tail; tail = &(*tail)->accept.next)
		;
	*tail = rc;
	lc->accept.n++;
	ZSM_TRACE("net: %s: listen comm %u answers comm %u of pid %u with "
		  "receive comm %u",
		  ep->dev->name, lc->local_id, m->src_id, m->pid,
		  rc->local_id);
	zsm_net_path_accept(rc, m->paths);
	zsm_net_ctrl_want(rc, ZSM_CTRL_CONN_ACK);
}

/* Connector: the listener's answer. */
void zsm_net_comm_on_ack(struct zsm_net_comm *sc, const struct zsm_ctrl_msg *m)
{
	struct zsm_offer answer;
	struct zsm_peer peer;
	char why[256];

	if (m->status < 0) {
		snprintf(why, sizeof(why),
			 "listener %u of pid %u refused the connection: %s",
			 sc->remote.id, sc->remote.handle_pid,
			 m->status == -EBUSY
				 ? "it holds too many unaccepted connections"
				 : "it is closed, or the handle is stale");
		zsm_net_comm_fail(sc, m->status == -EBUSY ? -EBUSY
							  : -ECONNREFUSED,
				  why);
		return;
	}
	if (m->pid != sc->remote.handle_pid || m->data_key & ~ZSM_CQ_KEY_MASK) {
		zsm_net_ctrl_drop(sc->ep, ZSM_DROP_MALFORMED,
				  "an answer that is not the handle's pid's");
		return;
	}
	if (zsm_net_path_agreed(sc, m->paths)) {
		snprintf(why, sizeof(why),
			 "listener %u of pid %u answered with %u paths, and "
			 "this process offered %d (ZSM_NET_PATHS)",
			 sc->remote.id, m->pid, m->paths, sc->ep->dev->paths);
		zsm_net_comm_fail(sc, -EPROTO, why);
		return;
	}
	sc->remote.id = m->src_id;
	sc->remote.key = m->reply_key;
	sc->data_key = m->data_key;
	zsm_net_credit_send_init(&sc->credit, m->credit);
	zsm_net_comm_set_peer(sc, m->pid, m->host_hash);
	zsm_net_peer_heard(sc->remote.obj, sc->ep->pass.begin_ns);
	sc->hs = ZSM_COMM_CONNECTED;
	/* The core picks the comm's transport from the answer (the pid is
	 * the handle's, which NCCL's bootstrap brought) and says what it
	 * took; connect() returns the comm from here on. */
	zsm_net_comm_peer(sc, &peer);
	zsm_net_comm_offer_in(m, &answer);
	zsm_net_ctrl_want(sc, ZSM_CTRL_CONN_DONE);
	zsm_comm_answered(sc->owner, &peer, &answer, &sc->ctrl.offer);
}

int zsm_net_comm_is_data(const struct zsm_net_comm *c)
{
	if (c->paths.parent)
		c = c->paths.parent;
	return c->owner && c->owner->tp == c;
}

void zsm_net_comm_grant_check(struct zsm_net_comm *rc)
{
	if (!zsm_net_comm_is_data(rc) || rc->closing ||
	    zsm_net_comm_failed(rc) ||
	    !zsm_net_credit_want_grant(&rc->credit))
		return;
	zsm_net_ctrl_want(rc, ZSM_CTRL_GRANT);
}

int zsm_net_comm_waits(const struct zsm_net_comm *c)
{
	return c->posted.deferred || c->held ||
	       (c->paths.parent && c->paths.parent->posted.deferred);
}

/* The endpoint's timed work: a quiet comm's GRANT that the small-receive
 * rule held back goes now (net_credit.h says when one is held). */
void zsm_net_comm_grant_late(struct zsm_net_ep *ep)
{
	for (struct zsm_net_comm *c = ep->comms; c; c = c->ep_next)
		if (c->type == ZSM_COMM_RECV &&
		    zsm_net_credit_want_late_grant(&c->credit) &&
		    zsm_net_comm_is_data(c) && !c->closing &&
		    !zsm_net_comm_failed(c))
			zsm_net_ctrl_want(c, ZSM_CTRL_GRANT);
}

/* Sender: the receiver posted more; held sends go on the next pass. */
void zsm_net_comm_on_grant(struct zsm_net_comm *sc,
			   const struct zsm_ctrl_msg *m)
{
	zsm_net_peer_heard(sc->remote.obj, sc->ep->pass.begin_ns);
	if (zsm_net_credit_on_grant(&sc->credit, m->credit))
		zsm_net_req_report_held(sc, 0);
}

/*
 * The peer closed its comm.  A receiver that closed takes nothing more,
 * and its CLOSE counts the messages it took: sends up to there arrived
 * and are done (held ones too: NCCL's receiver may close before the
 * GRANT that would have freed them went), and the sender's comm fails
 * if it sent one beyond or has one posted.  A sender that closed sends
 * nothing more: only receives beyond the messages its CLOSE counts would
 * wait for ever.  A comm with nothing that waits stays quiet, since in
 * NCCL's teardown both ends close in either order.
 */
void zsm_net_comm_on_close(struct zsm_net_comm *c,
			   const struct zsm_ctrl_msg *m)
{
	zsm_net_peer_heard(c->remote.obj, c->ep->pass.begin_ns);
	if (c->type == ZSM_COMM_RECV) {
		c->credit.closed = 1;
		c->credit.final = m->sent;
		if (zsm_net_credit_unmatched(&c->credit, 0))
			zsm_net_comm_fail(c, -ECONNRESET,
					  "the sender closed its comm with "
					  "receives posted that nothing it "
					  "sent will match");
		return;
	}
	/* Sends wait in the comm's queue, whichever path they are for. */
	if (zsm_net_credit_on_close(&c->credit, m->sent) ||
	    zsm_net_path_top(c)->posted.deferred) {
		zsm_net_comm_fail(c, -ECONNRESET,
				  "the receiver closed its comm: the sends it "
				  "did not take are lost");
		return;
	}
	zsm_net_req_report_held(c, 0);
	/* What is still held are puts whose SIGNAL the peer never said it
	 * applied: a SIGNALED it owed goes before its CLOSE. */
	if (c->held)
		zsm_net_comm_fail(c, -ECONNRESET,
				  "the target closed its comm before it "
				  "applied the signals of puts in flight");
}

int zsm_net_comm_peer_closed(struct zsm_net_comm *comm, struct zsm_req *b)
{
	const struct zsm_net_req *req = zsm_net_req_of(b);
	unsigned unposted = 0;

	if (!comm->credit.closed || zsm_net_comm_failed(comm) ||
	    b->type == ZSM_REQ_FLUSH)
		return 0;
	if (b->type == ZSM_REQ_RECV) {
		for (int i = 0; i < b->n; i++)
			unposted += !req->ops[i].posted;
		if (!zsm_net_credit_unmatched(&comm->credit, unposted))
			return 0;
		zsm_net_comm_fail(comm, -ECONNRESET,
				  "the sender closed its comm: nothing will "
				  "match this receive");
	} else {
		zsm_net_comm_fail(comm, -ECONNRESET,
				  "the receiver closed its comm");
	}
	return -ECONNRESET;
}

/* Listener: the connector took what we answered or not; accept() may
 * take rc. */
void zsm_net_comm_on_done(struct zsm_net_comm *rc,
			  const struct zsm_ctrl_msg *m)
{
	struct zsm_offer done;

	zsm_net_peer_heard(rc->remote.obj, rc->ep->pass.begin_ns);
	rc->hs = ZSM_COMM_CONNECTED;
	zsm_net_comm_offer_in(m, &done);
	if (rc->owner)
		zsm_comm_confirmed(rc->owner, &done);
	zsm_net_path_confirmed(rc);
}

int zsm_net_listen(int dev, void *handle, struct zsm_comm *owner)
{
	struct zsm_net_ep *ep;
	struct zsm_net_comm *lc;
	int ret;

	ret = zsm_net_ep_get_rx(&zsm_net_topo.devs[dev], &ep);
	if (ret)
		return ret;
	lc = zsm_net_comm_new(ep, ZSM_COMM_LISTEN);
	if (!lc)
		return -ENOMEM;
	lc->nonce = (uint32_t)zsm_random64() | 1; /* never 0 */
	lc->hs = ZSM_COMM_CONNECTED;
	lc->owner = owner;
	zsm_comm_bind(owner, &zsm_net_comm_ops, lc, lc->local_id,
		      ep->dev->name);
	/* relaxed: nobody reads a listen comm's state before listen()
	 * returns it. */
	atomic_store_explicit(&owner->state, ZSM_COMM_CONNECTED,
			      memory_order_relaxed);
	zsm_net_handle_encode(handle, lc->local_id, lc->nonce, ep->fi.addr,
			      ep->fi.addr_len, zsm_host_hash());
	return 0;
}

/* Whether pid, on this host, is a process (it may be stopped). */
static int zsm_net_pid_alive(uint32_t pid)
{
	return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

int zsm_net_connect_start(int dev, void *handle, struct zsm_comm *owner)
{
	struct zsm_net_handle *h = handle;
	struct zsm_net_ep *ep;
	struct zsm_net_comm *sc;
	char why[160];
	int ret;

	ret = zsm_net_handle_check(h);
	if (ret)
		return ret;
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
	sc->remote.id = h->listen_id;
	sc->remote.handle_pid = h->pid;
	zsm_net_comm_set_peer(sc, h->pid, h->host_hash);
	sc->owner = owner;
	zsm_comm_bind(owner, &zsm_net_comm_ops, sc, sc->local_id,
		      ep->dev->name);
	zsm_net_comm_peer(sc, &owner->peer);
	ret = zsm_net_comm_set_addr(sc, h->addr);
	if (ret) {
		/* The core closes its comm, which takes this link along. */
		return ret;
	}
	/* What else the comm could use, for the listener to answer. */
	zsm_comm_offer(owner, &sc->ctrl.offer);
	/* Sent by the next engine pass: the first send to a new peer makes
	 * rxm open a connection, which can take tens of milliseconds, and
	 * NCCL's connect() calls must stay quick. */
	zsm_net_ctrl_want(sc, ZSM_CTRL_CONN_REQ);
	h->conn_id = sc->local_id;
	h->conn_start_ns = sc->started_ns;
	return 0;
}

int zsm_net_connect_find(int dev, void *handle, struct zsm_comm **out)
{
	struct zsm_net_handle *h = handle;
	struct zsm_net_comm *c;
	int ret = zsm_net_handle_check(h);

	if (ret)
		return ret;
	if (h->conn_id == 0)
		return 0;
	c = zsm_net_dev_find_comm(&zsm_net_topo.devs[dev], h->conn_id);
	/* acquire: pairs with the release in zsm_entry_publish_comm.  A
	 * comm given out once and closed since is not found again. */
	if (c && c->type == ZSM_COMM_SEND && c->owner &&
	    !atomic_load_explicit(&c->owner->published,
				  memory_order_acquire) &&
	    !c->closing && c->nonce == h->nonce &&
	    c->started_ns == h->conn_start_ns) {
		*out = c->owner;
		return 1;
	}
	/* The engine gave it up: it ran out of time and nobody asked. */
	if (zsm_now_ns() - h->conn_start_ns > zsm_net_timeout_ns()) {
		ZSM_WARN("net: connect to listener %u timed out after %lld ms "
			 "(ZSM_CONNECT_TIMEOUT_MS): is the peer alive and "
			 "reachable?",
			 h->listen_id, zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS));
		return -ETIMEDOUT;
	}
	ZSM_WARN("net: connect: the handle names a connection in progress "
		 "that does not exist (copied or stale handle)");
	return -EINVAL;
}

void zsm_net_connect_forget(void *handle)
{
	((struct zsm_net_handle *)handle)->conn_id = 0;
}

struct zsm_comm *zsm_net_accept(struct zsm_comm *owner)
{
	struct zsm_net_comm *lc = owner->tp, *rc;

	for (rc = lc->accept.head; rc; rc = rc->accept.next)
		if (rc->hs == ZSM_COMM_CONNECTED && rc->owner)
			break;
	if (!rc)
		return NULL;
	zsm_net_comm_leave_listener(rc);
	return rc->owner;
}

void zsm_net_comm_maybe_free(struct zsm_net_comm *comm)
{
	struct zsm_net_comm *top = zsm_net_path_top(comm);

	if (!comm->closing)
		return;
	zsm_net_comm_tell_closer(top, 0);
	/* Its CLOSE goes first (net_ctrl.c gives it up if it cannot); a
	 * comm goes after its paths' links, whose operations name its
	 * requests. */
	if (comm->posted.ops == 0 && !comm->ctrl.want &&
	    !zsm_net_comm_path_links(comm))
		zsm_net_comm_free(comm);
	else
		return;
	if (top != comm)
		zsm_net_comm_maybe_free(top);
}

/*
 * Whether the peer must hear that NCCL closed this comm: it carried data
 * and the peer knows it, and the peer is neither gone nor closed itself.
 * Else a sender would wait for ever for GRANTs, its early messages
 * dropped, and a receiver for messages that never come.
 */
static int zsm_net_comm_owes_close(const struct zsm_net_comm *comm)
{
	return zsm_net_comm_is_data(comm) && comm->remote.key &&
	       !comm->remote.gone && !comm->credit.closed &&
	       (comm->hs == ZSM_COMM_CONNECTED || comm->hs == ZSM_COMM_FAILED);
}

/* Engine: stop using the comm, cancel its receives, free it when idle. */
int zsm_net_comm_post_close(struct zsm_net_comm *comm)
{
	int tell = zsm_net_comm_owes_close(comm);

	if (zsm_net_comm_is_data(comm))
		zsm_net_path_report(comm);
	/* Its paths' links first, while it is not closing itself: the last
	 * of them to go would free it (zsm_net_comm_maybe_free). */
	for (int j = 1; j < comm->paths.n; j++)
		if (comm->paths.link[j] && !comm->paths.link[j]->closing)
			zsm_net_comm_post_close(comm->paths.link[j]);
	comm->closing = 1;
	/* Receive comms nobody accepted go with their listener. */
	while (comm->accept.head)
		zsm_net_comm_post_close(comm->accept.head);
	zsm_net_comm_leave_listener(comm);
	/* A SIGNALED still owed goes first (its bit is lower than CLOSE's):
	 * the sender fails the puts a CLOSE finds unanswered. */
	comm->ctrl.want &= tell ? 1u << ZSM_CTRL_SIGNALED : 0;
	if (tell) {
		comm->closed_ns = zsm_now_ns();
		comm->credit.taken = comm->credit.arrived;
		zsm_net_ctrl_want(comm, ZSM_CTRL_CLOSE);
	}
	zsm_net_comm_cancel_recvs(comm);
	zsm_net_comm_maybe_free(comm);
	return 0;
}

/* The comm ops' close: NCCL closed the comm this link carries. */
static void zsm_net_comm_close_op(struct zsm_comm *c)
{
	zsm_net_comm_post_close(c->tp);
}

/* The comm ops' drop_link: the comm moved to another transport or
 * closes, and this link was only its handshake's. */
static void zsm_net_comm_drop_link(void *tp)
{
	struct zsm_net_comm *comm = tp;

	comm->owner = NULL;
	zsm_net_comm_post_close(comm);
}

static void zsm_net_comm_fail_op(struct zsm_comm *c, int err)
{
	zsm_net_comm_fail_reqs(c->tp, err);
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
		/* acquire: pairs with the release in zsm_entry_publish_comm.
		 * A comm that was given out is freed by its close alone,
		 * which is queued behind what it still has held: its handle
		 * turns 0 before that close reaches the engine, and freeing
		 * it here as abandoned left the queue pointing into freed
		 * memory (seen under TSan, a close after a peer died). */
		if (c->closing || c->type == ZSM_COMM_LISTEN ||
		    (c->owner && atomic_load_explicit(&c->owner->published,
						      memory_order_acquire)))
			continue;
		state = c->hs;
		/* A path's link lives with its comm: only a receive link
		 * whose sender never named itself is given up, and the
		 * comm with it (its share of the data would never come). */
		if (c->paths.parent) {
			if (state == ZSM_COMM_CONNECTING && age > limit)
				zsm_net_comm_fail(c, -ETIMEDOUT,
						  "the peer's link never named "
						  "itself (ZSM_CONNECT_TIMEOUT_MS)");
			continue;
		}
		if (c->type == ZSM_COMM_RECV) {
			if (state == ZSM_COMM_CONNECTING && age > limit) {
				ZSM_INFO("net: %s: pid %u never confirmed the "
					 "connection to listen comm %u; "
					 "dropping it",
					 ep->dev->name, c->remote.pid,
					 c->accept.listener
						 ? c->accept.listener->local_id
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
				 c->remote.id,
				 zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS));
			zsm_net_comm_fail(c, -ETIMEDOUT, why);
		} else if (age > 2 * limit) {
			/* Nobody came back for it: abandoned. */
			zsm_net_comm_post_close(c);
		}
	}
}

static int zsm_net_comm_needs_mr(const struct zsm_comm *c)
{
	const struct zsm_net_comm *comm = c->tp;

	return comm->ep->fi.needs_mr;
}

const struct zsm_comm_ops zsm_net_comm_ops = {
	.name = "net",
	.req_size = sizeof(struct zsm_net_req),
	.req_clear = offsetof(struct zsm_net_req, mr_desc) -
		     sizeof(struct zsm_req),
	.post = {
		[ZSM_REQ_SEND] = zsm_net_ep_post_send,
		[ZSM_REQ_RECV] = zsm_net_ep_post_recv,
		[ZSM_REQ_FLUSH] = zsm_net_ep_post_flush,
		[ZSM_REQ_PUT] = zsm_net_ep_post_rma,
		[ZSM_REQ_GET] = zsm_net_ep_post_rma,
	},
	.close = zsm_net_comm_close_op,
	.fail = zsm_net_comm_fail_op,
	.reg_mr = zsm_net_mr_reg_op,
	.mr_free = zsm_net_mr_free_op,
	.mr_forget = NULL,
	.flush = zsm_net_flush_op,
	.needs_mr = zsm_net_comm_needs_mr,
	.drop_link = zsm_net_comm_drop_link,
	.reg_window = zsm_net_rma_reg_window_op,
	.can_signal = zsm_net_rma_can_signal,
};
