/* SPDX-License-Identifier: MIT */
/*
 * Owns ce's registrations.  Host memory needs none (the peer's kernel
 * copies it by cross-memory attach), but is moved onto huge pages where
 * the kernel lets it; device memory is recorded with its IPC handle and
 * context, for the peer to open.  Nothing here reaches the provider.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "ce/ce.h"
#include "ce/ce_int.h"
#include "common/handle.h"
#include "common/log.h"

/* Every registration, for teardown: engine lock. */
static struct zsm_ce_mr *zsm_ce_mrs;
int zsm_ce_windows;

/* Link mr into every registration, for teardown. */
static void zsm_ce_mr_link(struct zsm_ce_mr *mr)
{
	zsm_proxy_lock();
	mr->next = zsm_ce_mrs;
	if (zsm_ce_mrs)
		zsm_ce_mrs->prev = &mr->next;
	mr->prev = &zsm_ce_mrs;
	zsm_ce_mrs = mr;
	zsm_proxy_unlock();
}

int zsm_ce_mr_reg(struct zsm_comm *c, void *data, size_t size, int type,
		  int dmabuf_fd, uint64_t offset, struct zsm_mr **out)
{
	struct zsm_ce_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	(void)c;
	(void)dmabuf_fd; /* device memory is mapped by IPC, not dma-buf */
	(void)offset;
	if (!mr)
		return -ENOMEM;
	if (type == ZSM_MEM_CUDA) {
		ret = zsm_ce_cuda_mr_prepare(data, size, &mr->g);
		if (ret) {
			free(mr);
			return ret;
		}
		mr->gpu = 1;
	} else {
		/* A refusal is logged there and costs speed only. */
		(void)zsm_ce_hugepage_prepare(data, size);
	}
	mr->base.type = type;
	mr->base.ops = &zsm_ce_comm_ops;
	/* relaxed: nobody else knows mr yet. */
	atomic_init(&mr->base.refs, 1);
	zsm_ce_mr_link(mr);
	*out = &mr->base;
	return 0;
}

void zsm_ce_mr_free(struct zsm_mr *m)
{
	struct zsm_ce_mr *mr = zsm_container_of(m, struct zsm_ce_mr, base);

	*mr->prev = mr->next;
	if (mr->next)
		mr->next->prev = mr->prev;
	if (mr->window)
		zsm_ce_windows--;
	if (mr->mirror.host) {
		zsm_cuda_win_mirror_free(&mr->mirror);
	} else if (mr->gpu) {
		zsm_ce_cuda_mr_release(&mr->g);
	}
	free(mr);
}

/*
 * A GPU window the peer cannot open: its bytes go out through a pinned
 * host mirror (puts from it), and come in by this process's own copies
 * (puts into it).  0, or -errno (said).
 */
static int zsm_ce_mr_staged(void *data, size_t size, struct zsm_ce_mr *mr,
			    const char *export_why)
{
	char why[256];
	int ret = zsm_cuda_win_mirror_new(&mr->mirror, data, size, why,
					  sizeof(why));

	if (ret) {
		ZSM_WARN("ce: regWindow: %s, and %s", export_why, why);
		return ret;
	}
	ZSM_INFO("ce: a %zu-byte GPU window at %p goes out through host "
		 "memory: %s",
		 size, data, export_why);
	mr->g.ctx = mr->mirror.ctx.ctx;
	mr->g.dev = mr->mirror.ctx.dev;
	mr->g.vmm_fd = -1;
	return 0;
}

int zsm_ce_mr_reg_window(struct zsm_comm *c, void *data, size_t size,
			 int type, struct zsm_mr **out,
			 struct zsm_rma_window *win)
{
	struct zsm_ce_mr *mr;
	char why[256];
	int ret;

	if (type != ZSM_MEM_CUDA) {
		ret = zsm_ce_mr_reg(c, data, size, type, -1, 0, out);
		if (ret)
			return ret;
		mr = zsm_container_of(*out, struct zsm_ce_mr, base);
	} else {
		mr = calloc(1, sizeof(*mr));
		if (!mr)
			return -ENOMEM;
		ret = zsm_ce_cuda_mr_try(data, size, &mr->g, why, sizeof(why));
		if (ret)
			ret = zsm_ce_mr_staged(data, size, mr, why);
		if (ret) {
			free(mr);
			return ret;
		}
		mr->gpu = 1;
		mr->base.type = type;
		mr->base.ops = &zsm_ce_comm_ops;
		/* relaxed: nobody else knows mr yet. */
		atomic_init(&mr->base.refs, 1);
		zsm_ce_mr_link(mr);
		*out = &mr->base;
	}
	zsm_proxy_lock();
	mr->window = 1;
	mr->start = data;
	mr->size = size;
	zsm_ce_windows++;
	/* From now on a receiver channel must be looked at (puts come
	 * unasked): a thread that found nothing busy just before would
	 * otherwise sleep through them for good. */
	zsm_proxy_caller_leave();
	/* Peers write it where it lies in this process: no key to make. */
	win->addr = (uint64_t)(uintptr_t)data;
	win->key = (uint64_t)getpid();
	win->size = size;
	win->flags = mr->gpu ? ZSM_WIN_GPU : 0;
	return 0;
}

struct zsm_ce_mr *zsm_ce_mr_window(uint64_t id)
{
	struct zsm_mr *base;
	struct zsm_ce_mr *mr;

	if (zsm_handle_get(id, ZSM_H_MR, (void **)&base) ||
	    base->ops != &zsm_ce_comm_ops)
		return NULL;
	mr = zsm_container_of(base, struct zsm_ce_mr, base);
	return mr->window ? mr : NULL;
}

void zsm_ce_mr_forget(struct zsm_comm *c, struct zsm_mr *m)
{
	struct zsm_ce_mr *mr = zsm_container_of(m, struct zsm_ce_mr, base);

	/* The receiver holds our allocation open (and its memory alive)
	 * until told: NCCL may free the buffer next. */
	if (mr->gpu && !mr->mirror.host && c->type == ZSM_COMM_SEND && c->tp)
		zsm_ce_chan_forget(c->tp, &mr->g);
}

void zsm_ce_mr_close_all(void)
{
	while (zsm_ce_mrs) {
		struct zsm_ce_mr *mr = zsm_ce_mrs;
		void *obj;

		if (mr->base.handle)
			zsm_handle_close(mr->base.handle, ZSM_H_MR, &obj);
		zsm_ce_mr_free(&mr->base);
	}
}
