/* SPDX-License-Identifier: MIT */
/*
 * Owns the watch over the bootstrap's links once set-up is over (boot.h):
 * nothing more travels on them but a leave byte, so a link that closes
 * without one says its rank is gone, whatever it was doing.  Rank 0 hears
 * every rank and passes a death on by closing its links to the others.
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/boot_int.h"
#include "common/log.h"

/* The one byte a rank that leaves on purpose sends. */
#define ZSM_BOOT_LEAVE 0x4c

/* What arrived on fd: 1 a leave, 0 nothing yet, -1 the link is gone. */
static int zsm_boot_watch_link(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	unsigned char byte = 0;
	ssize_t n;

	if (poll(&p, 1, 0) <= 0)
		return 0;
	n = recv(fd, &byte, 1, MSG_DONTWAIT);
	if (n == 1 && byte == ZSM_BOOT_LEAVE)
		return 1;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* EOF, a reset, or a byte nobody sends now: the rank is gone or
	 * out of step, which is the same to its peers. */
	return -1;
}

static void zsm_boot_watch_drop(struct zsm_boot *b, int r)
{
	close(b->fds[r]);
	b->fds[r] = -1;
}

int zsm_boot_watch(struct zsm_boot *b, int *gone)
{
	int links = b->rank == 0 ? b->nranks : 1;

	*gone = -1;
	for (int r = b->rank == 0 ? 1 : 0; r < links; r++) {
		int got;

		if (b->fds[r] < 0)
			continue;
		got = zsm_boot_watch_link(b->fds[r]);
		if (got > 0)
			zsm_boot_watch_drop(b, r);
		if (got >= 0)
			continue;
		*gone = r;
		/* Rank 0 passes it on: every other rank sees its link to
		 * rank 0 close. */
		for (int k = 0; k < links; k++)
			if (b->fds[k] >= 0)
				zsm_boot_watch_drop(b, k);
		return -ECONNRESET;
	}
	return 0;
}

void zsm_boot_leave(struct zsm_boot *b)
{
	const unsigned char byte = ZSM_BOOT_LEAVE;
	int links = b->rank == 0 ? b->nranks : 1;

	for (int r = b->rank == 0 ? 1 : 0; r < links; r++)
		if (b->fds[r] >= 0 &&
		    send(b->fds[r], &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
			ZSM_INFO("boot: the leave byte to rank %d was not sent",
				 r);
}
