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

#include "pattern.h"
#include "size_arg.h"

#define TCP_PAIR_SLOTS 4
#define TCP_PAIR_WAIT_S 60

struct tcp_pair_opts {
	size_t size;
	long count;
	int both, verify;
};

/* One direction as one rank sees it: sending or receiving on fd. */
struct tcp_pair_dir {
	const struct tcp_pair_opts *o;
	int fd;
	unsigned char *buf; /* TCP_PAIR_SLOTS x size, touched */
	int dir; /* 0: rank 0 to 1, 1: rank 1 to 0 */
	double gbps; /* receiving: what came in */
	int failed;
};

static double tcp_pair_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Message m of direction dir: its pattern's seed. */
static uint32_t tcp_pair_seed(int dir, long m)
{
	return (uint32_t)m * 2u + (uint32_t)dir;
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

/* Moves message m's n bytes at p through d's socket, sending or
 * receiving; stamps *t0 at the first byte in.  0, or -1 (said). */
static int tcp_pair_io(struct tcp_pair_dir *d, int send_it, long m,
		       unsigned char *p, size_t n, double *t0)
{
	for (size_t off = 0; off < n;) {
		ssize_t r = send_it ? send(d->fd, p + off, n - off,
					   MSG_NOSIGNAL)
				    : recv(d->fd, p + off, n - off, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "tcp-pair: %s of message %ld failed: "
					"%s\n",
				send_it ? "send" : "receive", m,
				r == 0		? "the peer closed"
				: errno == EAGAIN ? "nothing moved in time"
						  : strerror(errno));
			return -1;
		}
		if (t0 && *t0 == 0)
			*t0 = tcp_pair_now();
		off += (size_t)r;
	}
	return 0;
}

static void *tcp_pair_send(void *arg)
{
	struct tcp_pair_dir *d = arg;
	size_t size = d->o->size;

	for (long m = 0; m < d->o->count && !d->failed; m++) {
		unsigned char *p = d->buf + (size_t)(m % TCP_PAIR_SLOTS) * size;

		if (d->o->verify)
			zsm_pattern_fill(p, size, tcp_pair_seed(d->dir, m));
		d->failed = tcp_pair_io(d, 1, m, p, size, NULL) != 0;
	}
	return NULL;
}

static void *tcp_pair_recv(void *arg)
{
	struct tcp_pair_dir *d = arg;
	size_t size = d->o->size;
	double t0 = 0;

	for (long m = 0; m < d->o->count && !d->failed; m++) {
		unsigned char *p = d->buf + (size_t)(m % TCP_PAIR_SLOTS) * size;
		long bad;

		d->failed = tcp_pair_io(d, 0, m, p, size, &t0) != 0;
		if (d->failed || !d->o->verify)
			continue;
		bad = zsm_pattern_check(p, size, tcp_pair_seed(d->dir, m));
		if (bad >= 0) {
			fprintf(stderr,
				"tcp-pair: message %ld, byte %ld is wrong\n",
				m, bad);
			d->failed = 1;
		}
	}
	if (!d->failed)
		d->gbps = (double)size * (double)d->o->count /
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

/*
 * One rank's side.  Direction d is connected by rank d and accepted by the
 * other; rank r sends on direction r and receives on the other.  Rank 1
 * hands its figure to rank 0 through fd_out.  0 when all went well.
 */
static int tcp_pair_rank(const struct tcp_pair_opts *o, int rank,
			 const int *lfd, const int *port, int fd_out,
			 double *gbps)
{
	struct tcp_pair_dir d[2];
	int n = o->both ? 2 : 1, bad = 0;

	/* Buffers first: the connections are the start line, and both
	 * directions begin right after them. */
	for (int i = 0; i < n; i++) {
		d[i] = (struct tcp_pair_dir){.o = o, .fd = -1, .dir = i};
		d[i].buf = tcp_pair_buffers(o->size);
		bad |= !d[i].buf;
	}
	for (int i = 0; i < n && !bad; i++) {
		d[i].fd = rank == i ? tcp_pair_connect(port[i])
				    : tcp_pair_accept(lfd[i]);
		bad = d[i].fd < 0;
	}
	if (!bad)
		bad = tcp_pair_run(rank < n ? &d[rank] : NULL,
				   1 - rank < n ? &d[1 - rank] : NULL);
	if (rank == 1 && write(fd_out, &d[0].gbps, sizeof(d[0].gbps)) !=
				 sizeof(d[0].gbps))
		bad = 1;
	/* Closed before rank 0 waits, so that a rank 1 still waiting on a
	 * failed rank 0 sees the end at once. */
	for (int i = 0; i < n; i++)
		if (d[i].fd >= 0)
			close(d[i].fd);
	*gbps = o->both ? d[1].gbps : 0;
	return bad;
}

int main(int argc, char **argv)
{
	struct tcp_pair_opts o = {0};
	int a = 1, port[2] = {0}, lfd[2] = {-1, -1}, pipefd[2], st, bad;
	double g01 = 0, g10;
	const char *send_end;
	char *end;
	pid_t child;

	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--both"))
			o.both = 1;
		else if (!strcmp(argv[a], "--verify"))
			o.verify = 1;
		else
			break;
	}
	o.count = a + 1 < argc ? strtol(argv[a + 1], &end, 10) : 0;
	if (argc - a != 2 || zsm_size_arg(argv[a], &o.size, &send_end) ||
	    *send_end || *end || o.count < 1 || o.size == 0 ||
	    o.size > ((size_t)1 << 34)) {
		fprintf(stderr, "usage: tcp-pair [--both] [--verify] SIZE "
				"COUNT (SIZE > 0 with K/M/G, COUNT >= 1)\n");
		return 2;
	}
	for (int i = 0; i < (o.both ? 2 : 1); i++)
		if ((lfd[i] = tcp_pair_listen(&port[i])) < 0)
			return 1;
	if (pipe(pipefd))
		return 1;
	child = fork();
	if (child < 0) {
		fprintf(stderr, "tcp-pair: fork: %s\n", strerror(errno));
		return 1;
	}
	/* Each listener belongs to its accepting rank alone, so that a rank
	 * gone before it accepted refuses or resets the other's connection
	 * at once instead of leaving it to its timeout. */
	if (child == 0) {
		if (lfd[1] >= 0)
			close(lfd[1]);
		close(pipefd[0]);
		_exit(tcp_pair_rank(&o, 1, lfd, port, pipefd[1], &g10));
	}
	close(lfd[0]);
	close(pipefd[1]);
	bad = tcp_pair_rank(&o, 0, lfd, port, -1, &g10);
	/* One still waiting for a connection is ended. */
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
	if (o.both)
		printf("%.3f %.3f\n", g01, g10);
	else
		printf("%.3f\n", g01);
	return 0;
}
