/* SPDX-License-Identifier: MIT */
/* Owns the bootstrap's TCP sockets: address conversion, connect, I/O. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/boot_int.h"
#include "common/clock.h"

uint64_t zsm_boot_deadline(int timeout_ms)
{
	return zsm_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
}

/* Milliseconds left for poll, at least 1 while any time is left. */
static int zsm_boot_ms_left(uint64_t deadline)
{
	uint64_t now = zsm_now_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}

void zsm_boot_addr_swap(struct zsm_boot_addr *a)
{
	a->family = htole16(a->family);
	a->port = htole16(a->port);
}

void zsm_boot_addr_str(const struct zsm_boot_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	inet_ntop(a->family == 6 ? AF_INET6 : AF_INET, a->ip, ip, sizeof(ip));
	if (a->family == 6)
		snprintf(buf, len, "[%s]:%u", ip, a->port);
	else
		snprintf(buf, len, "%s:%u", ip, a->port);
}

static socklen_t zsm_boot_addr_to_sa(const struct zsm_boot_addr *a,
				     struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == 6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		memcpy(&s6->sin6_addr, a->ip, 16);
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(a->port);
		memcpy(&s4->sin_addr, a->ip, 4);
		return sizeof(*s4);
	}
}

static int zsm_boot_addr_from_sa(const struct sockaddr_storage *ss,
				 struct zsm_boot_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		a->family = 6;
		a->port = ntohs(s6->sin6_port);
		memcpy(a->ip, &s6->sin6_addr, 16);
		return 0;
	}
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		a->family = 4;
		a->port = ntohs(s4->sin_port);
		memcpy(a->ip, &s4->sin_addr, 4);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static int zsm_boot_sock_new(int family, int *fd)
{
	int s = socket(family == 6 ? AF_INET6 : AF_INET,
		       SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;

	if (s < 0)
		return -errno;
	/* Set-up messages are small and wait for answers: no Nagle delay. */
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fd = s;
	return 0;
}

int zsm_boot_sock_local(int fd, struct zsm_boot_addr *a)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	return zsm_boot_addr_from_sa(&ss, a);
}

int zsm_boot_sock_listen(const struct zsm_boot_addr *a, int *fd,
			 struct zsm_boot_addr *bound)
{
	struct sockaddr_storage ss;
	socklen_t len = zsm_boot_addr_to_sa(a, &ss);
	int one = 1, s, ret;

	ret = zsm_boot_sock_new(a->family, &s);
	if (ret)
		return ret;
	/* A rank 0 restarted on a fixed port (ZSM_BOOT_ADDR) must not wait
	 * for the previous run's connections in TIME_WAIT. */
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&ss, len) || listen(s, 1024)) {
		ret = -errno;
		close(s);
		return ret;
	}
	ret = zsm_boot_sock_local(s, bound);
	if (ret) {
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

/* One non-blocking connect attempt, finished within deadline. */
static int zsm_boot_sock_connect_once(const struct sockaddr_storage *ss,
				      socklen_t len, int family,
				      uint64_t deadline, int *fd)
{
	struct pollfd p;
	int s, ret, err = 0;
	socklen_t elen = sizeof(err);

	ret = zsm_boot_sock_new(family, &s);
	if (ret)
		return ret;
	if (connect(s, (const struct sockaddr *)ss, len) == 0)
		goto done;
	if (errno != EINPROGRESS) {
		ret = -errno;
		goto fail;
	}
	p = (struct pollfd){.fd = s, .events = POLLOUT};
	ret = poll(&p, 1, zsm_boot_ms_left(deadline));
	if (ret == 0) {
		ret = -ETIMEDOUT;
		goto fail;
	}
	if (ret < 0) {
		ret = -errno;
		goto fail;
	}
	if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &elen) || err) {
		ret = err ? -err : -errno;
		goto fail;
	}
done:
	*fd = s;
	return 0;
fail:
	close(s);
	return ret;
}

int zsm_boot_sock_connect(const struct zsm_boot_addr *a, uint64_t deadline,
			  int *fd)
{
	struct sockaddr_storage ss;
	socklen_t len = zsm_boot_addr_to_sa(a, &ss);

	for (;;) {
		int ret = zsm_boot_sock_connect_once(&ss, len, a->family,
						     deadline, fd);

		if (ret == 0 || ret == -ETIMEDOUT)
			return ret;
		/* Rank 0 may not listen yet, or its backlog is full. */
		if (ret != -ECONNREFUSED && ret != -EAGAIN &&
		    ret != -ECONNRESET && ret != -ENETUNREACH &&
		    ret != -EHOSTUNREACH)
			return ret;
		if (zsm_boot_ms_left(deadline) == 0)
			return -ETIMEDOUT;
		/* Retry soon, but not in a spin that takes a shared core. */
		poll(NULL, 0, 10);
	}
}

int zsm_boot_sock_accept(int lfd, int *fd)
{
	int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	int one = 1;

	if (s < 0)
		return -errno;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fd = s;
	return 0;
}

/* Wait until fd is ready for events, or the deadline. */
static int zsm_boot_sock_wait(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int ret;

	do {
		int ms = zsm_boot_ms_left(deadline);

		if (ms == 0)
			return -ETIMEDOUT;
		ret = poll(&p, 1, ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	return ret == 0 ? -ETIMEDOUT : 0;
}

int zsm_boot_sock_send(int fd, const void *buf, size_t len,
		       uint64_t deadline)
{
	const char *p = buf;

	while (len > 0) {
		/* MSG_NOSIGNAL: a peer gone is an error here, not SIGPIPE. */
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EPIPE ? -ECONNRESET : -errno;
		int ret = zsm_boot_sock_wait(fd, POLLOUT, deadline);

		if (ret)
			return ret;
	}
	return 0;
}

int zsm_boot_sock_recv_some(int fd, void *buf, size_t len, size_t *done)
{
	while (*done < len) {
		ssize_t n = recv(fd, (char *)buf + *done, len - *done, 0);

		if (n > 0) {
			*done += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	return 0;
}

int zsm_boot_sock_recv(int fd, void *buf, size_t len, uint64_t deadline)
{
	size_t done = 0;

	for (;;) {
		int ret = zsm_boot_sock_recv_some(fd, buf, len, &done);

		if (ret)
			return ret;
		if (done == len)
			return 0;
		ret = zsm_boot_sock_wait(fd, POLLIN, deadline);
		if (ret)
			return ret;
	}
}
