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

void zsm_ce_chan_start(struct zsm_ce_chan *ch, struct zsm_net_comm *comm,
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
		atomic_store(&ch->win->closed[ch->side], 1);
		while (ch->pidfd >= 0 &&
		       atomic_load(&ch->win->busy[!ch->side]) &&
		       !zsm_ce_peer_gone(ch) &&
		       zsm_now_ns() - t0 < ZSM_CE_CLOSE_WAIT_NS)
			sched_yield();
	}
	zsm_ce_chan_free(ch);
}
