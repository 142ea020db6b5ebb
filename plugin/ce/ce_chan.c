/* SPDX-License-Identifier: MIT */
/*
 * Owns ce channels: the sender's shared window, the receiver's mapping of
 * it, the checks that decide whether a same-host comm may use ce, and the
 * close that makes sure no copy touches a closed sender's memory.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ce/ce.h"
#include "ce/ce_int.h"
#include "common/cuda.h"
#include "common/idmap.h"
#include "common/log.h"
#include "common/param.h"
#include "proxy/proxy.h"

/* How long a closing side waits for the peer's copy in flight. */
#define ZSM_CE_CLOSE_WAIT_NS (5ULL * 1000000000ULL)

int zsm_ce_enabled(void)
{
	return (int)zsm_param_int(ZSM_P_CE);
}

static int zsm_ce_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

int zsm_ce_pidfd_getfd(int pidfd, int fd)
{
#ifdef SYS_pidfd_getfd
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
#else
	(void)pidfd;
	(void)fd;
	errno = ENOSYS;
	return -1;
#endif
}

static struct zsm_ce_chan *zsm_ce_chan_new(int side)
{
	struct zsm_ce_chan *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->memfd = -1;
	ch->pidfd = -1;
	ch->side = side;
	return ch;
}

static void zsm_ce_chan_free(struct zsm_ce_chan *ch)
{
	zsm_ce_cuda_chan_fini(ch);
	if (ch->win)
		munmap(ch->win, ch->win_len);
	if (ch->memfd >= 0)
		close(ch->memfd);
	if (ch->pidfd >= 0)
		close(ch->pidfd);
	free(ch);
}

static const uint32_t zsm_ce_probe_word = ZSM_CE_MAGIC;

uint64_t zsm_ce_probe_addr(void)
{
	return (uint64_t)(uintptr_t)&zsm_ce_probe_word;
}

/* Read the ZSM_CE_MAGIC word at addr in pid: 0, or -errno with why. */
static int zsm_ce_probe(pid_t pid, uint64_t addr, char *why, size_t why_len)
{
	uint32_t magic = 0;
	struct iovec local = {.iov_base = &magic, .iov_len = sizeof(magic)};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr,
			       .iov_len = sizeof(magic)};

	errno = 0;
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) ==
		    (ssize_t)sizeof(magic) &&
	    magic == ZSM_CE_MAGIC)
		return 0;
	snprintf(why, why_len, "process_vm_readv of pid %d: %s%s", (int)pid,
		 errno ? strerror(errno) : "read something else",
		 errno == EPERM ? " (ptrace not allowed: "
				  "kernel.yama.ptrace_scope, or a container "
				  "without CAP_SYS_PTRACE?)"
				: "");
	return errno ? -errno : -EPROTO;
}

/* The peer's pidfd, its death detector: no pidfd, no channel. */
static int zsm_ce_chan_watch(struct zsm_ce_chan *ch, pid_t pid, char *why,
			     size_t why_len)
{
	ch->pidfd = zsm_ce_pidfd_open(pid);
	if (ch->pidfd >= 0)
		return 0;
	snprintf(why, why_len, "pidfd_open(%d): %s", (int)pid,
		 strerror(errno));
	return -errno;
}

int zsm_ce_chan_create(struct zsm_ce_chan **out, pid_t sender,
		       uint64_t probe_addr, uint32_t id, uint64_t key,
		       char *why, size_t why_len)
{
	struct zsm_ce_chan *ch;
	int ret;

	*out = NULL;
	ret = zsm_ce_probe(sender, probe_addr, why, why_len);
	if (ret)
		return ret;
	ch = zsm_ce_chan_new(ZSM_CE_RECEIVER);
	if (!ch)
		return -ENOMEM;
	ret = zsm_ce_chan_watch(ch, sender, why, why_len);
	if (ret)
		goto err;
	ch->win_len = sizeof(*ch->win);
	ch->memfd = memfd_create("zsm-ce", MFD_CLOEXEC);
	if (ch->memfd < 0 || ftruncate(ch->memfd, (off_t)ch->win_len)) {
		ret = -errno;
		snprintf(why, why_len, "no shared window (memfd: %s)",
			 strerror(errno));
		goto err;
	}
	ch->win = mmap(NULL, ch->win_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ch->memfd, 0);
	if (ch->win == MAP_FAILED) {
		ch->win = NULL;
		ret = -errno;
		snprintf(why, why_len, "mapping a %zu-byte window: %s",
			 ch->win_len, strerror(errno));
		goto err;
	}
	/* A fresh memfd reads as zeros: every slot is empty. */
	ch->win->magic = ZSM_CE_MAGIC;
	ch->win->version = ZSM_CE_VERSION;
	ch->win->comm_id = id;
	ch->win->key = key;
	*out = ch;
	return 0;
err:
	zsm_ce_chan_free(ch);
	return ret;
}

int zsm_ce_chan_offer(const struct zsm_ce_chan *ch, int32_t *fd,
		      uint64_t *addr)
{
	if (!ch->win)
		return -ENOENT;
	*fd = ch->side == ZSM_CE_RECEIVER ? ch->memfd : -1;
	*addr = (uint64_t)(uintptr_t)ch->win;
	return ch->side == ZSM_CE_RECEIVER && ch->memfd < 0 ? -ENOENT : 0;
}

int zsm_ce_chan_attach(struct zsm_ce_chan **out, pid_t receiver, int fd,
		       uint64_t addr, uint32_t id, uint64_t key, char *why,
		       size_t why_len)
{
	struct zsm_ce_chan *ch = zsm_ce_chan_new(ZSM_CE_SENDER);
	struct stat st;
	int ret, myfd = -1;

	*out = NULL;
	if (!ch)
		return -ENOMEM;
	ret = zsm_ce_chan_watch(ch, receiver, why, why_len);
	if (ret)
		goto err;
	/* Needs the same permission as ptrace, like the copies later; the
	 * fd is the receiver's, the process the handle named. */
	myfd = zsm_ce_pidfd_getfd(ch->pidfd, fd);
	if (myfd < 0) {
		ret = -errno;
		snprintf(why, why_len,
			 "pidfd_getfd of pid %d's window: %s%s", (int)receiver,
			 strerror(errno),
			 errno == EPERM ? " (ptrace not allowed: "
					  "kernel.yama.ptrace_scope, or a "
					  "container without CAP_SYS_PTRACE?)"
					: "");
		goto err;
	}
	if (fstat(myfd, &st) || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != sizeof(*ch->win)) {
		ret = -EPROTO;
		snprintf(why, why_len, "pid %d's fd %d is not a window of %zu "
				       "bytes",
			 (int)receiver, fd, sizeof(*ch->win));
		goto err;
	}
	ch->win_len = sizeof(*ch->win);
	ch->win = mmap(NULL, ch->win_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       myfd, 0);
	if (ch->win == MAP_FAILED) {
		ch->win = NULL;
		ret = -errno;
		snprintf(why, why_len, "mmap of pid %d's window: %s",
			 (int)receiver, strerror(errno));
		goto err;
	}
	if (ch->win->magic != ZSM_CE_MAGIC ||
	    ch->win->version != ZSM_CE_VERSION || ch->win->comm_id != id ||
	    ch->win->key != key) {
		ret = -EPROTO;
		snprintf(why, why_len, "pid %d's fd %d is not the ce window "
				       "(version %d) of its comm %u",
			 (int)receiver, fd, ZSM_CE_VERSION, id);
		goto err;
	}
	/* The copies write into the receiver's memory: try it once now, on
	 * the window's own first word, so a refusal keeps the comm on net. */
	ret = zsm_ce_probe(receiver, addr, why, why_len);
	if (ret)
		goto err;
	close(myfd);
	*out = ch;
	return 0;
err:
	if (myfd >= 0)
		close(myfd);
	zsm_ce_chan_free(ch);
	return ret;
}

void zsm_ce_chan_start(struct zsm_ce_chan *ch, struct zsm_comm *comm,
		       pid_t peer)
{
	ch->comm = comm;
	ch->peer_pid = peer;
	/* The sender has its own copy of the window's fd by now, and the
	 * mapping outlives ours: one fd less per comm. */
	if (ch->memfd >= 0) {
		close(ch->memfd);
		ch->memfd = -1;
	}
	ch->next_chan = zsm_ce_chans;
	zsm_ce_chans = ch;
}

void zsm_ce_chan_fail(struct zsm_ce_chan *ch, int err)
{
	if (ch->failed)
		return;
	ch->failed = 1;
	zsm_ce_xfer_abort(ch, err);
}

int zsm_ce_peer_gone(const struct zsm_ce_chan *ch)
{
	struct pollfd pfd = {.fd = ch->pidfd, .events = POLLIN};

	return ch->pidfd >= 0 && poll(&pfd, 1, 0) == 1;
}

void zsm_ce_chan_close(struct zsm_ce_chan *ch, int err)
{
	struct zsm_ce_chan **pp;
	uint64_t t0 = zsm_now_ns();

	for (pp = &zsm_ce_chans; *pp; pp = &(*pp)->next_chan) {
		if (*pp == ch) {
			*pp = ch->next_chan;
			break;
		}
	}
	zsm_ce_xfer_abort(ch, err);
	if (ch->win) {
		/* seq_cst: pairs with the peer's store of busy and load of
		 * closed (see struct zsm_ce_window). */
		atomic_store_explicit(&ch->win->closed[ch->side], 1,
				      memory_order_seq_cst);
		while (ch->pidfd >= 0 &&
		       atomic_load_explicit(&ch->win->busy[!ch->side],
					    memory_order_seq_cst) &&
		       !zsm_ce_peer_gone(ch) &&
		       zsm_now_ns() - t0 < ZSM_CE_CLOSE_WAIT_NS)
			sched_yield();
	}
	zsm_ce_chan_free(ch);
}

size_t zsm_ce_offer(void *buf, size_t cap)
{
	struct zsm_ce_offer_msg m = {.probe_addr = zsm_ce_probe_addr()};

	if (cap < sizeof(m))
		return 0;
	memcpy(buf, &m, sizeof(m));
	return sizeof(m);
}

int zsm_ce_answer(const void *offer, size_t len, pid_t sender, uint32_t id,
		  void **tp, void *answer, size_t cap, size_t *alen, char *why,
		  size_t why_len)
{
	struct zsm_ce_offer_msg o;
	struct zsm_ce_answer_msg a = {.id = id, .key = zsm_random64()};
	struct zsm_ce_chan *ch;
	int ret;

	if (len != sizeof(o) || cap < sizeof(a)) {
		snprintf(why, why_len, "its offer is not ce's");
		return -EPROTO;
	}
	memcpy(&o, offer, sizeof(o));
	ret = zsm_ce_chan_create(&ch, sender, o.probe_addr, id, a.key, why,
				 why_len);
	if (ret)
		return ret;
	if (zsm_ce_chan_offer(ch, &a.fd, &a.addr)) {
		snprintf(why, why_len, "the window has no fd to offer");
		zsm_ce_chan_close(ch, -ECANCELED);
		return -EIO;
	}
	memcpy(answer, &a, sizeof(a));
	*alen = sizeof(a);
	*tp = ch;
	return 0;
}

int zsm_ce_take(const void *answer, size_t len, pid_t receiver, void **tp,
		char *why, size_t why_len)
{
	struct zsm_ce_answer_msg a;
	struct zsm_ce_chan *ch;
	int ret;

	if (len != sizeof(a)) {
		snprintf(why, why_len, "its answer is not ce's");
		return -EPROTO;
	}
	memcpy(&a, answer, sizeof(a));
	ret = zsm_ce_chan_attach(&ch, receiver, a.fd, a.addr, a.id, a.key,
				 why, why_len);
	if (ret)
		return ret;
	*tp = ch;
	return 0;
}

void zsm_ce_start(void *tp, struct zsm_comm *comm)
{
	zsm_ce_chan_start(tp, comm, (pid_t)comm->peer.pid);
}

void zsm_ce_drop(void *tp)
{
	zsm_ce_chan_close(tp, -ECANCELED);
}

/* The comm ops' close: end the channel now, then the comm. */
static void zsm_ce_close_op(struct zsm_comm *c)
{
	zsm_ce_chan_close(c->tp, -ECANCELED);
	c->tp = NULL;
	zsm_comm_release(c);
}

static void zsm_ce_fail_op(struct zsm_comm *c, int err)
{
	zsm_ce_chan_fail(c->tp, err);
}

/* ce's copies are complete on the device before test() says done, and
 * host memory is visible once it did: nothing to read back. */
static int zsm_ce_flush_op(struct zsm_comm *c, int n, void **data,
			   const int *sizes, struct zsm_mr **mrs,
			   struct zsm_req *req, int *flush)
{
	(void)c;
	(void)n;
	(void)data;
	(void)sizes;
	(void)mrs;
	(void)req;
	*flush = 0;
	return 0;
}

static int zsm_ce_needs_mr(const struct zsm_comm *c)
{
	(void)c;
	return 0;
}

/* The window's owner applies every signal after the bytes before it. */
static int zsm_ce_can_signal(struct zsm_comm *c)
{
	(void)c;
	return 0;
}

const struct zsm_comm_ops zsm_ce_comm_ops = {
	.name = "ce",
	.req_size = sizeof(struct zsm_ce_req),
	.req_clear = sizeof(struct zsm_ce_req) - sizeof(struct zsm_req),
	.post = {
		[ZSM_REQ_SEND] = zsm_ce_post_send,
		[ZSM_REQ_RECV] = zsm_ce_post_recv,
		[ZSM_REQ_PUT] = zsm_ce_post_rma,
		[ZSM_REQ_GET] = zsm_ce_post_rma,
	},
	.close = zsm_ce_close_op,
	.fail = zsm_ce_fail_op,
	.reg_mr = zsm_ce_mr_reg,
	.mr_free = zsm_ce_mr_free,
	.mr_forget = zsm_ce_mr_forget,
	.flush = zsm_ce_flush_op,
	.needs_mr = zsm_ce_needs_mr,
	.drop_link = zsm_ce_drop,
	.reg_window = zsm_ce_mr_reg_window,
	.can_signal = zsm_ce_can_signal,
	.connected_note = "data by cross-memory attach",
};

/*
 * Streams share the device's hardware queues, in order, once there are
 * more of them than CUDA_DEVICE_MAX_CONNECTIONS (8 unless set): ce's
 * copy stream may then sit behind NCCL's kernel, which spins until the
 * copy lands.  Frameworks set 1 to order their kernels; say what it
 * costs here.
 */
static void zsm_ce_check_connections(void)
{
	const char *v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	char *end;
	long n;

	if (!v || !*v)
		return;
	n = strtol(v, &end, 10);
	if (*end || n >= 8)
		return;
	ZSM_WARN("ce: CUDA_DEVICE_MAX_CONNECTIONS=%s gives each GPU fewer "
		 "hardware queues than the default 8: ce's copies for a "
		 "same-host comm can queue behind the NCCL kernel that waits "
		 "for them, and NCCL hangs; unset it, or keep GPU buffers "
		 "off ce (ZSM_CE_GPU=0, NCCL_NET_GDR_LEVEL unset)",
		 v);
}

void zsm_ce_init_checks(int gpu)
{
	if (!gpu || !zsm_ce_enabled())
		return;
	/* GPU buffers of same-host comms are copied by ce on a stream while
	 * NCCL's kernel waits for them (docs/ce.md, "Lazy module loading"). */
	if (zsm_cuda_lazy())
		ZSM_WARN("ce: CUDA loads modules lazily (CUDA_MODULE_LOADING="
			 "LAZY, the default): when NCCL hands GPU buffers to "
			 "a same-host comm, a kernel loaded while NCCL's "
			 "kernel waits for one of ce's copies can hold that "
			 "copy back for ever; set CUDA_MODULE_LOADING=EAGER");
	zsm_ce_check_connections();
}

void zsm_ce_fini(unsigned timeout_ms)
{
	zsm_proxy_lock();
	zsm_ce_mr_close_all();
	zsm_proxy_unlock();
	zsm_ce_unmap_stop(timeout_ms);
}
