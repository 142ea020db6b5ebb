/* SPDX-License-Identifier: MIT */
/*
 * Owns a bootstrap communicator's life: the meeting at rank 0, the table
 * of addresses, failure and fini.
 *
 * Every rank connects to rank 0 and the collectives go through it (a
 * star).  That costs rank 0 nranks times the data, which set-up traffic
 * (addresses, handles) can afford; a ring over the addresses in the
 * table is the way out if that changes.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/boot_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/param.h"

int zsm_boot_rank(const struct zsm_boot *boot)
{
	return boot->rank;
}

int zsm_boot_nranks(const struct zsm_boot *boot)
{
	return boot->nranks;
}

static void zsm_boot_close_all(struct zsm_boot *b)
{
	for (int r = 0; r < (b->rank == 0 ? b->nranks : 1); r++) {
		if (b->fds[r] >= 0)
			close(b->fds[r]);
		b->fds[r] = -1;
	}
}

/* A rank accepted by rank 0, or a connection still saying hello. */
struct zsm_boot_conn {
	int fd;
	size_t got;
	struct zsm_boot_hello hello;
};

struct zsm_boot_meet {
	struct zsm_boot *b;
	uint64_t nonce;
	struct zsm_boot_conn *conns; /* saying hello */
	int nconns, cap;
	int *told;  /* fds of ranks that said hello, to answer */
	int ntold;
	int err;
};

static void zsm_boot_meet_drop(struct zsm_boot_meet *m, int i)
{
	m->conns[i] = m->conns[--m->nconns];
}

/* A whole hello from conn i: refuse it, record an error, or take it. */
static void zsm_boot_meet_hello(struct zsm_boot_meet *m, int i)
{
	struct zsm_boot *b = m->b;
	struct zsm_boot_hello h = m->conns[i].hello;
	int fd = m->conns[i].fd;
	char where[64];

	zsm_boot_meet_drop(m, i);
	zsm_boot_hello_swap(&h);
	if (h.magic != ZSM_BOOT_MAGIC || h.version != ZSM_BOOT_VERSION ||
	    h.nonce != m->nonce) {
		/* Another job's, an old run's, or not zsm at all: it never
		 * counts as a rank. */
		ZSM_INFO("boot: refused a connection that brought another "
			 "id (magic 0x%x version %u)", h.magic, h.version);
		close(fd);
		return;
	}
	m->told[m->ntold++] = fd;
	zsm_boot_addr_str(&h.addr, where, sizeof(where));
	if (h.nranks != (uint32_t)b->nranks) {
		ZSM_WARN("boot: rank %u (%s) says there are %u ranks, rank 0 "
			 "says %d", h.rank, where, h.nranks, b->nranks);
		m->err = -EINVAL;
		return;
	}
	if (h.rank == 0 || h.rank >= (uint32_t)b->nranks) {
		ZSM_WARN("boot: a connection from %s says it is rank %u, "
			 "not in [1, %d)", where, h.rank, b->nranks);
		m->err = -EINVAL;
		return;
	}
	if (b->fds[h.rank] >= 0) {
		ZSM_WARN("boot: rank %u came twice (again from %s)", h.rank,
			 where);
		m->err = -EINVAL;
		return;
	}
	b->fds[h.rank] = fd;
	b->addrs[h.rank] = h.addr;
}

static int zsm_boot_meet_accept(struct zsm_boot_meet *m)
{
	for (;;) {
		int fd, ret = zsm_boot_sock_accept(m->b->listen_fd, &fd);

		if (ret == -EAGAIN || ret == -EWOULDBLOCK || ret == -EINTR)
			return 0;
		if (ret == -ECONNABORTED)
			continue;
		if (ret) {
			ZSM_WARN("boot: accept failed: %s", strerror(-ret));
			return ret;
		}
		if (m->nconns == m->cap) {
			int cap = m->cap * 2;
			void *p = realloc(m->conns, sizeof(*m->conns) * cap);

			if (!p) {
				close(fd);
				return -ENOMEM;
			}
			m->conns = p;
			m->cap = cap;
		}
		m->conns[m->nconns++] = (struct zsm_boot_conn){.fd = fd};
	}
}

/* Rank 0: wait until nranks - 1 connections brought this id's nonce. */
static int zsm_boot_meet_wait(struct zsm_boot_meet *m, uint64_t deadline)
{
	struct zsm_boot *b = m->b;
	struct pollfd *p = NULL;
	int ret = 0;

	while (m->ntold < b->nranks - 1) {
		uint64_t now = zsm_now_ns();
		int n = 1 + m->nconns, ms;
		void *np = realloc(p, sizeof(*p) * n);

		if (!np) {
			ret = -ENOMEM;
			break;
		}
		p = np;
		p[0] = (struct pollfd){.fd = b->listen_fd, .events = POLLIN};
		for (int i = 0; i < m->nconns; i++)
			p[1 + i] = (struct pollfd){.fd = m->conns[i].fd,
						   .events = POLLIN};
		ms = now >= deadline ? 0
				     : (int)((deadline - now + 999999) / 1000000);
		if (ms == 0) {
			ZSM_WARN("boot: %d of %d ranks came to rank 0 within "
				 "%d ms", m->ntold + 1, b->nranks,
				 b->timeout_ms);
			ret = -ETIMEDOUT;
			break;
		}
		if (poll(p, n, ms) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		/* Backwards: taking a hello moves the last conn into i. */
		for (int i = n - 2; i >= 0; i--) {
			struct zsm_boot_conn *c = &m->conns[i];

			/* Enough have come: any more (a surplus rank) must not
			 * overrun told; they are closed below. */
			if (m->ntold == b->nranks - 1)
				break;
			if (!p[1 + i].revents)
				continue;
			ret = zsm_boot_sock_recv_some(c->fd, &c->hello,
						      sizeof(c->hello),
						      &c->got);
			if (ret) {
				/* Gone before its hello: not a rank. */
				close(c->fd);
				zsm_boot_meet_drop(m, i);
				ret = 0;
			} else if (c->got == sizeof(c->hello)) {
				zsm_boot_meet_hello(m, i);
			}
		}
		if (p[0].revents) {
			ret = zsm_boot_meet_accept(m);
			if (ret)
				break;
		}
	}
	free(p);
	for (int i = 0; i < m->nconns; i++)
		close(m->conns[i].fd);
	m->nconns = 0;
	return ret;
}

/* Rank 0: tell every rank that came how init ended; the table on success. */
static int zsm_boot_meet_answer(struct zsm_boot_meet *m, int status,
				uint64_t deadline)
{
	struct zsm_boot *b = m->b;
	struct zsm_boot_reply r = {.magic = ZSM_BOOT_MAGIC, .status = status,
				   .nranks = (uint32_t)b->nranks};
	struct zsm_boot_addr *table = NULL;
	int ret = 0;

	zsm_boot_reply_swap(&r);
	if (!status) {
		table = malloc(sizeof(*table) * b->nranks);
		if (!table)
			return -ENOMEM;
		memcpy(table, b->addrs, sizeof(*table) * b->nranks);
		for (int i = 0; i < b->nranks; i++)
			zsm_boot_addr_swap(&table[i]);
	}
	for (int i = 0; i < m->ntold && !ret; i++) {
		ret = zsm_boot_sock_send(m->told[i], &r, sizeof(r), deadline);
		if (!ret && table)
			ret = zsm_boot_sock_send(m->told[i], table,
						 sizeof(*table) * b->nranks,
						 deadline);
	}
	if (ret)
		ZSM_WARN("boot: rank 0 could not send the table: %s",
			 strerror(-ret));
	free(table);
	return ret;
}

static int zsm_boot_root_init(struct zsm_boot *b,
			      const struct zsm_boot_id_fields *f,
			      uint64_t deadline)
{
	struct zsm_boot_meet m = {.b = b, .nonce = f->nonce, .cap = 8};
	char where[64];
	int ret;

	b->listen_fd = zsm_boot_id_take_listener(f->nonce);
	if (b->listen_fd < 0) {
		/* An id from the environment: nobody listens yet. */
		ret = zsm_boot_sock_listen(&f->addr, &b->listen_fd,
					   &b->addrs[0]);
		if (ret) {
			zsm_boot_addr_str(&f->addr, where, sizeof(where));
			ZSM_WARN("boot: rank 0 cannot listen on %s: %s", where,
				 strerror(-ret));
			b->listen_fd = -1;
			return ret;
		}
	}
	b->addrs[0] = f->addr;
	m.conns = malloc(sizeof(*m.conns) * m.cap);
	m.told = malloc(sizeof(*m.told) * b->nranks);
	if (!m.conns || !m.told) {
		free(m.conns);
		free(m.told);
		return -ENOMEM;
	}
	ret = zsm_boot_meet_wait(&m, deadline);
	if (!ret)
		ret = m.err;
	/* Those that came learn the outcome now rather than at their own
	 * deadline; a failure to tell them is theirs to find. */
	if (zsm_boot_meet_answer(&m, ret, deadline) && !ret)
		ret = -ECONNRESET;
	if (ret) {
		for (int i = 0; i < m.ntold; i++)
			close(m.told[i]);
		for (int r = 1; r < b->nranks; r++)
			b->fds[r] = -1;
	}
	free(m.conns);
	free(m.told);
	return ret;
}

static int zsm_boot_leaf_init(struct zsm_boot *b,
			      const struct zsm_boot_id_fields *f,
			      uint64_t deadline)
{
	struct zsm_boot_hello h = {.magic = ZSM_BOOT_MAGIC,
				   .version = ZSM_BOOT_VERSION,
				   .nonce = f->nonce, .rank = (uint32_t)b->rank,
				   .nranks = (uint32_t)b->nranks};
	struct zsm_boot_reply r;
	struct zsm_boot_addr mine;
	char where[64];
	int ret;

	zsm_boot_addr_str(&f->addr, where, sizeof(where));
	ret = zsm_boot_sock_connect(&f->addr, deadline, &b->fds[0]);
	if (ret) {
		ZSM_WARN("boot: rank %d could not reach rank 0 at %s within "
			 "%d ms: %s", b->rank, where, b->timeout_ms,
			 strerror(-ret));
		b->fds[0] = -1;
		return ret;
	}
	/* Listen where rank 0 reached us from: an address it can route. */
	ret = zsm_boot_sock_local(b->fds[0], &mine);
	if (!ret) {
		mine.port = 0;
		ret = zsm_boot_sock_listen(&mine, &b->listen_fd, &h.addr);
	}
	if (ret) {
		ZSM_WARN("boot: rank %d cannot open its listener: %s",
			 b->rank, strerror(-ret));
		b->listen_fd = -1;
		return ret;
	}
	zsm_boot_hello_swap(&h);
	ret = zsm_boot_sock_send(b->fds[0], &h, sizeof(h), deadline);
	if (!ret)
		ret = zsm_boot_sock_recv(b->fds[0], &r, sizeof(r), deadline);
	if (ret == -ECONNRESET) {
		ZSM_WARN("boot: rank 0 at %s closed rank %d's connection "
			 "without an answer: the id is another job's (wrong "
			 "nonce), or rank 0 failed", where, b->rank);
		return ret;
	}
	if (ret) {
		ZSM_WARN("boot: rank %d got no answer from rank 0 at %s: %s",
			 b->rank, where, strerror(-ret));
		return ret;
	}
	zsm_boot_reply_swap(&r);
	if (r.magic != ZSM_BOOT_MAGIC || r.status > 0 || r.status < -4095 ||
	    (!r.status && r.nranks != (uint32_t)b->nranks)) {
		ZSM_WARN("boot: rank 0 at %s answered rank %d with garbage",
			 where, b->rank);
		return -EPROTO;
	}
	if (r.status) {
		ZSM_WARN("boot: rank 0 at %s failed the init of rank %d: %s "
			 "(its log says why)", where, b->rank,
			 strerror(-r.status));
		return r.status;
	}
	ret = zsm_boot_sock_recv(b->fds[0], b->addrs,
				 sizeof(*b->addrs) * b->nranks, deadline);
	if (ret) {
		ZSM_WARN("boot: rank %d lost rank 0 at %s while reading the "
			 "table: %s", b->rank, where, strerror(-ret));
		return ret;
	}
	for (int i = 0; i < b->nranks; i++)
		zsm_boot_addr_swap(&b->addrs[i]);
	return 0;
}

int zsm_boot_init(const struct zsm_boot_id *id, int rank, int nranks,
		  int timeout_ms, struct zsm_boot **out)
{
	struct zsm_boot_id_fields f;
	struct zsm_boot *b;
	int ret;

	*out = NULL;
	if (nranks < 1 || nranks > 65535 || rank < 0 || rank >= nranks) {
		ZSM_WARN("boot: rank %d of %d ranks: need 0 <= rank < nranks "
			 "<= 65535", rank, nranks);
		return -EINVAL;
	}
	ret = zsm_boot_id_decode(id, &f);
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->rank = rank;
	b->nranks = nranks;
	b->timeout_ms = timeout_ms > 0 ? timeout_ms
				       : (int)zsm_param_int(ZSM_P_BOOT_TIMEOUT_MS);
	b->listen_fd = -1;
	b->fds = malloc(sizeof(*b->fds) * (rank == 0 ? nranks : 1));
	b->addrs = calloc((size_t)nranks, sizeof(*b->addrs));
	if (!b->fds || !b->addrs) {
		free(b->fds);
		free(b->addrs);
		free(b);
		return -ENOMEM;
	}
	for (int r = 0; r < (rank == 0 ? nranks : 1); r++)
		b->fds[r] = -1;
	/* A process that made the id but is not rank 0 (a launcher that
	 * forks) must not keep rank 0's listener alive past rank 0. */
	if (rank != 0)
		zsm_boot_id_drop(id);
	if (rank == 0)
		ret = zsm_boot_root_init(b, &f, zsm_boot_deadline(b->timeout_ms));
	else
		ret = zsm_boot_leaf_init(b, &f, zsm_boot_deadline(b->timeout_ms));
	if (ret) {
		zsm_boot_fini(b);
		return ret;
	}
	*out = b;
	return 0;
}

void zsm_boot_fail(struct zsm_boot *b, int err)
{
	if (!b->err)
		b->err = err;
	zsm_boot_close_all(b);
}

void zsm_boot_fini(struct zsm_boot *b)
{
	if (!b)
		return;
	zsm_boot_close_all(b);
	if (b->listen_fd >= 0)
		close(b->listen_fd);
	free(b->fds);
	free(b->addrs);
	free(b);
}
