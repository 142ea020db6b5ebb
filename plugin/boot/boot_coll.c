/* SPDX-License-Identifier: MIT */
/*
 * Owns the bootstrap's collectives, all through rank 0 (boot_init.c says
 * why a star).  Each message is a zsm_boot_msg head and its data; the
 * reader knows what it expects and compares before it reads a byte of
 * data, so a peer out of step or sending garbage fails the call instead
 * of writing anywhere else.
 */
#include <errno.h>
#include <string.h>

#include "boot/boot_int.h"
#include "common/log.h"

static const char *zsm_boot_op_name(unsigned op)
{
	return op == ZSM_BOOT_OP_ALLGATHER ? "allgather"
	       : op == ZSM_BOOT_OP_BCAST   ? "bcast"
					   : "?";
}

/* Fail the communicator for a link to peer, naming it once. */
static int zsm_boot_link_failed(struct zsm_boot *b, int peer, int err,
				const char *op)
{
	if (err == -ECONNRESET && b->rank != 0)
		ZSM_WARN("boot: rank %d, %s: rank 0 closed its connection "
			 "(it died, or failed because another rank did)",
			 b->rank, op);
	else if (err == -ECONNRESET)
		ZSM_WARN("boot: rank 0, %s: rank %d closed its connection "
			 "(it died or left)", op, peer);
	else if (err == -ETIMEDOUT)
		ZSM_WARN("boot: rank %d, %s: rank %d was silent for %d ms",
			 b->rank, op, peer, b->timeout_ms);
	else
		ZSM_WARN("boot: rank %d, %s with rank %d failed: %s", b->rank,
			 op, peer, strerror(-err));
	zsm_boot_fail(b, err);
	return err;
}

static int zsm_boot_send_msg(struct zsm_boot *b, int peer,
			     const struct zsm_boot_msg *want, const void *data,
			     uint64_t deadline)
{
	struct zsm_boot_msg m = *want;
	int fd = b->fds[b->rank == 0 ? peer : 0];
	int ret;

	zsm_boot_msg_swap(&m);
	ret = zsm_boot_sock_send(fd, &m, sizeof(m), deadline);
	if (!ret)
		ret = zsm_boot_sock_send(fd, data, want->bytes, deadline);
	if (ret)
		return zsm_boot_link_failed(b, peer, ret,
					    zsm_boot_op_name(want->op));
	return 0;
}

static int zsm_boot_recv_msg(struct zsm_boot *b, int peer,
			     const struct zsm_boot_msg *want, void *data,
			     uint64_t deadline)
{
	const char *op = zsm_boot_op_name(want->op);
	int fd = b->fds[b->rank == 0 ? peer : 0];
	struct zsm_boot_msg m;
	int ret;

	ret = zsm_boot_sock_recv(fd, &m, sizeof(m), deadline);
	if (ret)
		return zsm_boot_link_failed(b, peer, ret, op);
	zsm_boot_msg_swap(&m);
	if (m.magic != ZSM_BOOT_MAGIC || m.op != want->op ||
	    m.root != want->root || m.seq != want->seq ||
	    m.bytes != want->bytes) {
		ZSM_WARN("boot: rank %d, call %u (%s of %llu bytes, root %u): "
			 "rank %d sent call %u (%s of %llu bytes, root %u)",
			 b->rank, want->seq, op,
			 (unsigned long long)want->bytes, want->root, peer,
			 m.seq, zsm_boot_op_name(m.op),
			 (unsigned long long)m.bytes, m.root);
		zsm_boot_fail(b, -EPROTO);
		return -EPROTO;
	}
	ret = zsm_boot_sock_recv(fd, data, want->bytes, deadline);
	if (ret)
		return zsm_boot_link_failed(b, peer, ret, op);
	return 0;
}

int zsm_boot_allgather(struct zsm_boot *b, void *buf, size_t bytes_per_rank)
{
	struct zsm_boot_msg one = {.magic = ZSM_BOOT_MAGIC,
				   .op = ZSM_BOOT_OP_ALLGATHER,
				   .bytes = bytes_per_rank};
	struct zsm_boot_msg all;
	char *p = buf;
	uint64_t deadline;
	size_t total;
	int ret;

	if (b->err)
		return b->err;
	if (__builtin_mul_overflow(bytes_per_rank, (size_t)b->nranks, &total))
		return -EOVERFLOW;
	one.seq = ++b->seq;
	all = one;
	all.bytes = total;
	deadline = zsm_boot_deadline(b->timeout_ms);
	if (b->rank != 0) {
		ret = zsm_boot_send_msg(b, 0, &one,
					p + (size_t)b->rank * bytes_per_rank,
					deadline);
		if (!ret)
			ret = zsm_boot_recv_msg(b, 0, &all, p, deadline);
		return ret;
	}
	/* The others' sends wait in their socket buffers (or block on a
	 * full one) until rank 0 comes to them: no order deadlocks. */
	for (int r = 1; r < b->nranks; r++) {
		ret = zsm_boot_recv_msg(b, r, &one,
					p + (size_t)r * bytes_per_rank,
					deadline);
		if (ret)
			return ret;
	}
	for (int r = 1; r < b->nranks; r++) {
		ret = zsm_boot_send_msg(b, r, &all, p, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

int zsm_boot_bcast(struct zsm_boot *b, void *buf, size_t bytes, int root)
{
	struct zsm_boot_msg m = {.magic = ZSM_BOOT_MAGIC,
				 .op = ZSM_BOOT_OP_BCAST,
				 .root = (uint16_t)root, .bytes = bytes};
	uint64_t deadline;
	int ret;

	if (b->err)
		return b->err;
	if (root < 0 || root >= b->nranks) {
		ZSM_WARN("boot: bcast from root %d of %d ranks", root,
			 b->nranks);
		return -EINVAL;
	}
	m.seq = ++b->seq;
	deadline = zsm_boot_deadline(b->timeout_ms);
	if (b->rank != 0)
		return b->rank == root
			       ? zsm_boot_send_msg(b, 0, &m, buf, deadline)
			       : zsm_boot_recv_msg(b, 0, &m, buf, deadline);
	if (root != 0) {
		ret = zsm_boot_recv_msg(b, root, &m, buf, deadline);
		if (ret)
			return ret;
	}
	for (int r = 1; r < b->nranks; r++) {
		if (r == root)
			continue;
		ret = zsm_boot_send_msg(b, r, &m, buf, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

int zsm_boot_barrier(struct zsm_boot *b)
{
	/* An allgather of nothing: nobody leaves before everyone came. */
	return zsm_boot_allgather(b, NULL, 0);
}
