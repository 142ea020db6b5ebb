/* SPDX-License-Identifier: MIT */
/* The one-process ce channel pair of ce_pair.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ce_pair.h"
#include "zsm_test.h"

int pair_setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));
	char why[256] = "";
	uint64_t addr;
	int32_t fd;
	int ret;

	assert_non_null(p);
	p->sc.type = ZSM_COMM_SEND;
	p->rc.type = ZSM_COMM_RECV;
	ret = zsm_ce_chan_create(&p->r, getpid(), zsm_ce_probe_addr(),
				 PAIR_ID, PAIR_KEY, why, sizeof(why));
	if (!ret) {
		assert_int_equal(zsm_ce_chan_offer(p->r, &fd, &addr), 0);
		ret = zsm_ce_chan_attach(&p->s, getpid(), fd, addr, PAIR_ID,
					 PAIR_KEY, why, sizeof(why));
	}
	if (ret == -ENOSYS || ret == -EPERM) {
		/* cmocka fails a skip inside a setup: each test skips. */
		print_message("ce: no channel here (%s): skipping\n", why);
		if (p->r)
			zsm_ce_chan_close(p->r, -ECANCELED);
		free(p);
		*state = NULL;
		return 0;
	}
	assert_int_equal(ret, 0);
	p->sc.ops = p->rc.ops = &zsm_ce_comm_ops;
	p->sc.tp = p->s;
	p->rc.tp = p->r;
	p->sc.id = p->rc.id = PAIR_ID;
	p->sc.dev = p->rc.dev = "pair";
	zsm_ce_chan_start(p->s, &p->sc, getpid());
	zsm_ce_chan_start(p->r, &p->rc, getpid());
	*state = p;
	return 0;
}

int pair_teardown(void **state)
{
	struct pair *p = *state;

	if (!p)
		return 0;
	if (p->s)
		zsm_ce_chan_close(p->s, -ECANCELED);
	if (p->r)
		zsm_ce_chan_close(p->r, -ECANCELED);
	free(p);
	return 0;
}

struct pair *need_pair(void **state)
{
	if (!*state)
		skip();
	return *state;
}

void req_init(struct zsm_ce_req *req, struct zsm_comm *c, int type, int n)
{
	memset(req, 0, sizeof(*req));
	req->base.desc.fifo = &c->fifo;
	req->base.comm = c;
	req->base.type = (uint8_t)type;
	req->base.n = (uint8_t)n;
	atomic_store(&req->base.state, ZSM_REQ_PENDING);
}

void post_send(struct pair *p, struct zsm_ce_req *req, void *buf, size_t len,
	       int tag, struct zsm_ce_mr *mh)
{
	req_init(req, &p->sc, ZSM_REQ_SEND, 1);
	req->base.data[0] = buf;
	req->base.len[0] = len;
	req->base.tag[0] = tag;
	req->base.mh[0] = mh ? &mh->base : NULL;
	zsm_assert_int_eq(zsm_ce_comm_ops.post[req->base.type](&req->base), 0);
}

void post_recv(struct pair *p, struct zsm_ce_req *req, int n, void **bufs,
	       const size_t *lens, const int *tags, struct zsm_ce_mr **mhs)
{
	req_init(req, &p->rc, ZSM_REQ_RECV, n);
	for (int i = 0; i < n; i++) {
		req->base.data[i] = bufs[i];
		req->base.len[i] = lens[i];
		req->base.tag[i] = tags[i];
		req->base.mh[i] = mhs && mhs[i] ? &mhs[i]->base : NULL;
	}
	zsm_assert_int_eq(zsm_ce_comm_ops.post[req->base.type](&req->base), 0);
}

void pump(int passes)
{
	while (passes--)
		zsm_ce_progress_ops.progress(zsm_ce_progress_self());
}

int state_of(struct zsm_ce_req *req)
{
	return atomic_load(&req->base.state);
}

int ce_possible(void)
{
	struct zsm_ce_chan *s = NULL, *r = NULL;
	char why[256] = "";
	uint64_t addr;
	int32_t fd;
	int ret;

	ret = zsm_ce_chan_create(&r, getpid(), zsm_ce_probe_addr(), PAIR_ID,
				 PAIR_KEY, why, sizeof(why));
	if (!ret) {
		zsm_ce_chan_offer(r, &fd, &addr);
		ret = zsm_ce_chan_attach(&s, getpid(), fd, addr, PAIR_ID,
					 PAIR_KEY, why, sizeof(why));
	}
	if (s)
		zsm_ce_chan_close(s, -ECANCELED);
	if (r)
		zsm_ce_chan_close(r, -ECANCELED);
	if (ret == -ENOSYS || ret == -EPERM) {
		printf("1..0 # SKIP no ce channel here: %s\n", why);
		return 0;
	}
	return 1;
}
