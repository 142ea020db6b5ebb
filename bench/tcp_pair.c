/* SPDX-License-Identifier: MIT */
/*
 * tcp-pair [--both] [--verify] SIZE COUNT: what the kernel's own TCP
 * carries over loopback here, one way and both ways at once, the baseline
 * bench/coll-vs-put.sh sets beside zsm's put and AllGather on tcp.
 *
 * Two processes on 127.0.0.1.  Rank 0 sends COUNT messages of SIZE bytes
 * (K/M/G suffixes) to rank 1 over one connection with blocking send();
 * rank 1 takes them with blocking recv().  --both: rank 1 sends as many to
 * rank 0 over a second connection at the same time, a sending and a
 * receiving thread in each process, the traffic of a two-rank AllGather.
 * Each side cycles through 4 buffers of SIZE, so that large messages come
 * from memory rather than the cache, as a 64 MiB put's do; they are
 * touched before the connections are made, so that both directions start
 * together.  A receiver's time runs from its first byte to its last.
 *
 * Prints one line: the GB/s (1e9 bytes/s) rank 1 received, and with
 * --both then the GB/s rank 0 received.  --verify fills every message
 * with a pattern of its direction and number and checks every byte on
 * arrival (for tests: it slows the receiver).  Exit 0, 1 when a transfer
 * or a check failed, 2 on bad arguments.  A receive that waits longer
 * than TCP_PAIR_WAIT_S fails rather than hang.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TCP_PAIR_SLOTS 4
#define TCP_PAIR_WAIT_S 60

struct tcp_pair_dir {
	int fd;
	unsigned char *buf; /* TCP_PAIR_SLOTS x size, touched */
	int dir; /* 0: rank 0 to 1, 1: rank 1 to 0 */
	size_t size;
	long count;
	int verify;
	double gbps;
	int failed;
};

static double tcp_pair_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned char tcp_pair_byte(int dir, long msg, size_t i)
{
	return (unsigned char)((i * 131u + (size_t)msg * 29u +
				(size_t)dir * 101u + 7u) % 251u);
}

static unsigned char *tcp_pair_buffers(size_t size)
{
	size_t n = size * TCP_PAIR_SLOTS;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "tcp-pair: no memory for %zu bytes: %s\n", n,
			strerror(errno));
		return NULL;
	}
	memset(p, 0x5a, n);
	return p;
}

static void *tcp_pair_send(void *arg)
{
	struct tcp_pair_dir *d = arg;
	unsigned char *buf = d->buf;

	for (long m = 0; m < d->count && !d->failed; m++) {
		unsigned char *p = buf + (size_t)(m % TCP_PAIR_SLOTS) * d->size;

		if (d->verify)
			for (size_t i = 0; i < d->size; i++)
				p[i] = tcp_pair_byte(d->dir, m, i);
		for (size_t off = 0; off < d->size;) {
			ssize_t r = send(d->fd, p + off, d->size - off,
					 MSG_NOSIGNAL);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				fprintf(stderr,
					"tcp-pair: send of message %ld "
					"failed: %s\n",
					m, r < 0 ? strerror(errno) : "closed");
				d->failed = 1;
				break;
			}
			off += (size_t)r;
		}
	}
	return NULL;
}

static void *tcp_pair_recv(void *arg)
{
	struct tcp_pair_dir *d = arg;
	unsigned char *buf = d->buf;
	double t0 = 0;

	for (long m = 0; m < d->count && !d->failed; m++) {
		unsigned char *p = buf + (size_t)(m % TCP_PAIR_SLOTS) * d->size;

		for (size_t off = 0; off < d->size;) {
			ssize_t r = recv(d->fd, p + off, d->size - off, 0);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				fprintf(stderr,
					"tcp-pair: receive of message %ld "
					"failed: %s\n",
					m,
					r == 0 ? "the peer closed"
					: errno == EAGAIN
						? "nothing came in time"
						: strerror(errno));
				d->failed = 1;
				break;
			}
			if (t0 == 0)
				t0 = tcp_pair_now();
			off += (size_t)r;
		}
		for (size_t i = 0; d->verify && !d->failed && i < d->size; i++)
			if (p[i] != tcp_pair_byte(d->dir, m, i)) {
				fprintf(stderr,
					"tcp-pair: message %ld, byte %zu is "
					"wrong\n",
					m, i);
				d->failed = 1;
			}
	}
	if (!d->failed && d->size && d->count)
		d->gbps = (double)d->size * (double)d->count /
			  (tcp_pair_now() - t0) / 1e9;
	return NULL;
}

static int tcp_pair_timeout(int fd)
{
	struct timeval tv = {.tv_sec = TCP_PAIR_WAIT_S};

	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	       setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A listening socket on 127.0.0.1, its port in *port; -1 on failure. */
static int tcp_pair_listen(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* The timeout bounds accept() too, should the peer never come. */
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(fd, 2) || getsockname(fd, (struct sockaddr *)&a, &len) ||
	    tcp_pair_timeout(fd)) {
		fprintf(stderr, "tcp-pair: no listening socket on 127.0.0.1: "
				"%s\n",
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int tcp_pair_connect(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    tcp_pair_timeout(fd)) {
		fprintf(stderr, "tcp-pair: connecting to 127.0.0.1:%d: %s\n",
			port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int tcp_pair_accept(int lfd)
{
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0 || tcp_pair_timeout(fd)) {
		if (errno == EAGAIN)
			fprintf(stderr, "tcp-pair: the other rank did not "
					"connect within %d s\n",
				TCP_PAIR_WAIT_S);
		else
			fprintf(stderr, "tcp-pair: accepting: %s\n",
				strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Runs one side's directions; 0 when all went well. */
static int tcp_pair_run(struct tcp_pair_dir *out, struct tcp_pair_dir *in)
{
	pthread_t t[2];
	int n = 0;

	if (out && !pthread_create(&t[n], NULL, tcp_pair_send, out))
		n++;
	else if (out)
		out->failed = 1;
	if (in && !pthread_create(&t[n], NULL, tcp_pair_recv, in))
		n++;
	else if (in)
		in->failed = 1;
	while (n--)
		pthread_join(t[n], NULL);
	return (out && out->failed) || (in && in->failed);
}

static int tcp_pair_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	if (*end || v > ((size_t)1 << 34))
		return -1;
	*out = (size_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	int both = 0, verify = 0, a = 1, p01, p10 = 0, l01, l10 = -1, st;
	int pipefd[2];
	size_t size;
	long count;
	char *end;
	pid_t child;

	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--both"))
			both = 1;
		else if (!strcmp(argv[a], "--verify"))
			verify = 1;
		else
			break;
	}
	count = a + 1 < argc ? strtol(argv[a + 1], &end, 10) : 0;
	if (argc - a != 2 || tcp_pair_size(argv[a], &size) || *end ||
	    count < 1 || size == 0) {
		fprintf(stderr, "usage: tcp-pair [--both] [--verify] SIZE "
				"COUNT (SIZE > 0 with K/M/G, COUNT >= 1)\n");
		return 2;
	}
	l01 = tcp_pair_listen(&p01);
	if (l01 < 0 || (both && (l10 = tcp_pair_listen(&p10)) < 0) ||
	    pipe(pipefd))
		return 1;
	child = fork();
	if (child < 0) {
		fprintf(stderr, "tcp-pair: fork: %s\n", strerror(errno));
		return 1;
	}
	if (child == 0) {
		/* rank 1: receives on 0 -> 1, sends on 1 -> 0 */
		struct tcp_pair_dir in = {.dir = 0, .size = size,
					  .count = count, .verify = verify};
		struct tcp_pair_dir out = {.dir = 1, .size = size,
					   .count = count, .verify = verify};
		int bad;

		/* Each listener belongs to its accepting rank alone, so that
		 * a rank gone before it accepted refuses or resets the other's
		 * connection at once instead of leaving it to its timeout. */
		if (both)
			close(l10);
		close(pipefd[0]);
		/* Buffers first: the connections are the start line, and
		 * both directions begin right after them. */
		in.buf = tcp_pair_buffers(size);
		out.buf = both ? tcp_pair_buffers(size) : NULL;
		if (!in.buf || (both && !out.buf))
			_exit(1);
		in.fd = tcp_pair_accept(l01);
		out.fd = both ? tcp_pair_connect(p10) : -1;
		bad = in.fd < 0 || (both && out.fd < 0) ||
		      tcp_pair_run(both ? &out : NULL, &in);
		if (write(pipefd[1], &in.gbps, sizeof(in.gbps)) !=
		    sizeof(in.gbps))
			bad = 1;
		_exit(bad);
	}
	{
		struct tcp_pair_dir out = {.dir = 0, .size = size,
					   .count = count, .verify = verify};
		struct tcp_pair_dir in = {.dir = 1, .size = size,
					  .count = count, .verify = verify};
		double g01 = 0;
		int bad;

		close(l01);
		close(pipefd[1]);
		out.buf = tcp_pair_buffers(size);
		in.buf = both ? tcp_pair_buffers(size) : NULL;
		bad = !out.buf || (both && !in.buf);
		out.fd = bad ? -1 : tcp_pair_connect(p01);
		in.fd = both && !bad && out.fd >= 0 ? tcp_pair_accept(l10) : -1;
		bad = bad || out.fd < 0 || (both && in.fd < 0) ||
		      tcp_pair_run(&out, both ? &in : NULL);
		/* The connections close before the wait, so that a rank 1
		 * still waiting on a failed rank 0 sees the end at once; one
		 * still waiting for a connection is ended. */
		if (out.fd >= 0)
			close(out.fd);
		if (in.fd >= 0)
			close(in.fd);
		if (bad)
			kill(child, SIGKILL);
		else if (read(pipefd[0], &g01, sizeof(g01)) != sizeof(g01))
			bad = 1;
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad = 1;
		if (bad) {
			fprintf(stderr, "tcp-pair: the transfer failed\n");
			return 1;
		}
		if (both)
			printf("%.3f %.3f\n", g01, in.gbps);
		else
			printf("%.3f\n", g01);
	}
	return 0;
}
