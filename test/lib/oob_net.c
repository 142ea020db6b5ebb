/* SPDX-License-Identifier: MIT */
/*
 * A run across hosts: rank 0 listens at the rendezvous address, every
 * other rank connects and says which rank it is and where it listens for
 * its partner; rank 0 checks that the ranks add up and tells each odd rank
 * where its even partner listens.  Pairs then talk directly: one control
 * stream for the life of the run and a fresh stream per check.
 */
#include "oob.h"
#include "oob_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OOB_NET_MAGIC 0x7a736d6fu /* "zsmo" */
#define OOB_NET_VERSION 1
#define OOB_NET_HOST_LEN 64
#define OOB_NET_MSG_LEN 160
/* How often a connect to a peer not yet listening is retried. */
#define OOB_NET_RETRY_MS 100

/* What each rank tells rank 0.  Integers in network order. */
struct oob_net_hello {
	uint32_t magic;
	uint32_t version;
	int32_t rank;
	int32_t nranks;
	uint32_t pair_port;
};

/* What rank 0 answers: go (with the partner's address) or why not. */
struct oob_net_assign {
	uint32_t magic;
	int32_t status; /* 0 or -1 */
	uint32_t port;
	char host[OOB_NET_HOST_LEN];
	char msg[OOB_NET_MSG_LEN];
};

static struct {
	int joined;
	int rank, nranks;
	int ctl_fd;	 /* partner's main process */
	int listen_fd;	 /* even ranks: the partner connects here */
	int *rdv_fds;	 /* rank 0: one per other rank; else [0] */
	int nrdv;
	char partner_host[OOB_NET_HOST_LEN];
	char partner_port[16];
} oob_net = { .ctl_fd = -1, .listen_fd = -1 };

static long long oob_net_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline, at least 0. */
static int oob_net_left(long long deadline)
{
	long long left = deadline - oob_net_now_ms();

	return left > 0 ? (int)(left > 1 << 30 ? 1 << 30 : left) : 0;
}

static void oob_net_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void oob_net_tune(int fd)
{
	int one = 1;

	/* Barriers are one byte each way: Nagle would add 40 ms to each. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int oob_net_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t r;

	while (len) {
		r = send(fd, p, len, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			errno = r ? errno : EPIPE;
			return -1;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int oob_net_recv_all(int fd, void *buf, size_t len, int deadline_ms)
{
	long long deadline = oob_net_now_ms() + deadline_ms;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char *p = buf;
	ssize_t r;
	int n;

	while (len) {
		if (deadline_ms >= 0) {
			n = poll(&pfd, 1, oob_net_left(deadline));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				errno = n ? errno : ETIMEDOUT;
				return -1;
			}
		}
		r = recv(fd, p, len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			errno = r ? errno : ECONNRESET;
			return -1;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* "HOST:PORT" or "[V6ADDR]:PORT" into its parts; 0 or -1. */
static int oob_net_split(const char *s, char *host, size_t hlen, char *port,
			 size_t plen)
{
	const char *colon, *h = s;
	size_t n;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return -1;
		h = s + 1;
		n = (size_t)(end - h);
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		n = (size_t)(colon - s);
	}
	if (!n || n >= hlen || !colon[1] || strlen(colon + 1) >= plen)
		return -1;
	memcpy(host, h, n);
	host[n] = '\0';
	strcpy(port, colon + 1);
	n = strspn(port, "0123456789");
	if (port[n] || atoi(port) < 1 || atoi(port) > 65535)
		return -1;
	return 0;
}

/* Listen on the wildcard address of family at port ("0": any). */
static int oob_net_listen(int family, const char *port)
{
	struct addrinfo hints, *res = NULL;
	int fd, one = 1, r;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(NULL, port, &hints, &res);
	if (r) {
		fprintf(stderr, "oob: listen on port %s: %s\n", port,
			gai_strerror(r));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 64)) {
			fprintf(stderr, "oob: listen on port %s: %s\n", port,
				strerror(errno));
			close(fd);
			fd = -1;
		}
	} else {
		perror("oob: socket");
	}
	freeaddrinfo(res);
	return fd;
}

static int oob_net_accept(int lfd, long long deadline)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int fd, n;

	for (;;) {
		n = poll(&pfd, 1, oob_net_left(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n ? errno : ETIMEDOUT;
			return -1;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd >= 0)
			oob_net_tune(fd);
		return fd;
	}
}

/*
 * Connect to host:port, retrying while nobody listens there yet (the
 * other side may start later) until deadline.
 */
static int oob_net_connect(const char *host, const char *port,
			   long long deadline, const char *what)
{
	struct addrinfo hints, *res = NULL, *ai;
	int fd = -1, r, err = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	for (;;) {
		r = getaddrinfo(host, port, &hints, &res);
		if (r == EAI_AGAIN && oob_net_left(deadline)) {
			oob_net_sleep_ms(OOB_NET_RETRY_MS);
			continue;
		}
		if (r) {
			fprintf(stderr, "oob: %s %s:%s: %s\n", what, host,
				port, gai_strerror(r));
			return -1;
		}
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC,
				    0);
			if (fd < 0) {
				err = errno;
				continue;
			}
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
				break;
			err = errno;
			close(fd);
			fd = -1;
		}
		freeaddrinfo(res);
		res = NULL;
		if (fd >= 0) {
			oob_net_tune(fd);
			return fd;
		}
		if (!oob_net_left(deadline) ||
		    (err != ECONNREFUSED && err != ETIMEDOUT &&
		     err != EHOSTUNREACH && err != ENETUNREACH &&
		     err != EINTR)) {
			fprintf(stderr, "oob: %s %s:%s: %s\n", what, host,
				port, strerror(err));
			return -1;
		}
		oob_net_sleep_ms(OOB_NET_RETRY_MS);
	}
}

/* The port a listening socket got, as text. */
static int oob_net_port_of(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[OOB_NET_HOST_LEN];

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), buf,
			(socklen_t)len, NI_NUMERICHOST | NI_NUMERICSERV))
		return -1;
	return 0;
}

/* The numeric address of one end of a connected socket. */
static int oob_net_host_of(int fd, int peer, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int r = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
		     : getsockname(fd, (struct sockaddr *)&ss, &sl);

	if (r || getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)len,
			     NULL, 0, NI_NUMERICHOST))
		return -1;
	return 0;
}

static int oob_net_family_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return AF_UNSPEC;
	return ss.ss_family;
}

/* Say who we are on a fresh pair stream, or check who the partner is. */
static int oob_net_greet(int fd, int accepting, long long deadline)
{
	uint32_t v = htonl((uint32_t)oob_net.rank), want;

	if (!accepting)
		return oob_net_send_all(fd, &v, sizeof(v));
	if (oob_net_recv_all(fd, &v, sizeof(v), oob_net_left(deadline)))
		return -1;
	want = (uint32_t)(oob_net.rank + 1);
	if (ntohl(v) != want) {
		fprintf(stderr, "oob: rank %d: a connection from rank %u, "
				"expected my partner %u\n",
			oob_net.rank, ntohl(v), want);
		return -1;
	}
	return 0;
}

/* Even ranks: take the partner's next connection. */
static int oob_net_pair_accept(long long deadline)
{
	int fd;

	for (;;) {
		fd = oob_net_accept(oob_net.listen_fd, deadline);
		if (fd < 0)
			return -1;
		if (!oob_net_greet(fd, 1, deadline))
			return fd;
		/* A stranger, or the partner's retry of a stream it gave up
		 * on: drop it and keep waiting while time is left. */
		close(fd);
		if (!oob_net_left(deadline))
			return -1;
	}
}

static int oob_net_pair_connect(long long deadline)
{
	int fd = oob_net_connect(oob_net.partner_host, oob_net.partner_port,
				 deadline, "connect to partner at");

	if (fd >= 0 && oob_net_greet(fd, 0, deadline)) {
		close(fd);
		return -1;
	}
	return fd;
}

int oob_net_data_open(unsigned timeout_s)
{
	long long deadline = oob_net_now_ms() + (long long)timeout_s * 1000;
	int fd;

	fd = oob_net.rank % 2 ? oob_net_pair_connect(deadline)
			      : oob_net_pair_accept(deadline);
	if (fd < 0)
		fprintf(stderr, "oob: rank %d: no stream to partner rank %d "
				"within %u s: %s\n",
			oob_net.rank, oob_net_partner(), timeout_s,
			strerror(errno));
	return fd;
}

static void oob_net_assign_err(struct oob_net_assign *a, const char *fmt,
			       ...) __attribute__((format(printf, 2, 3)));

static void oob_net_assign_err(struct oob_net_assign *a, const char *fmt,
			       ...)
{
	va_list ap;

	memset(a, 0, sizeof(*a));
	a->magic = htonl(OOB_NET_MAGIC);
	a->status = (int32_t)htonl((uint32_t)-1);
	va_start(ap, fmt);
	vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
	va_end(ap);
}

/* Rank 0: gather the others, check them, and tell each its partner. */
static int oob_net_gather(int lfd, long long deadline)
{
	struct oob_net_hello h;
	struct oob_net_assign *as, err;
	uint32_t *ports;
	int i, n = oob_net.nranks - 1, fd, r, ret = -1, bad = 0;
	int *by_rank;

	as = calloc((size_t)oob_net.nranks, sizeof(*as));
	ports = calloc((size_t)oob_net.nranks, sizeof(*ports));
	by_rank = calloc((size_t)oob_net.nranks, sizeof(*by_rank));
	if (!as || !ports || !by_rank)
		goto out;
	for (i = 0; i < n; i++) {
		fd = oob_net_accept(lfd, deadline);
		if (fd < 0) {
			fprintf(stderr, "oob: rank 0: %d of %d ranks joined "
					"within the limit: %s\n",
				i + 1, oob_net.nranks, strerror(errno));
			goto out;
		}
		oob_net.rdv_fds[i] = fd;
		oob_net.nrdv = i + 1;
		if (oob_net_recv_all(fd, &h, sizeof(h),
				     oob_net_left(deadline)) ||
		    ntohl(h.magic) != OOB_NET_MAGIC) {
			fprintf(stderr, "oob: rank 0: a stranger at the "
					"rendezvous address\n");
			goto out;
		}
		r = (int)ntohl((uint32_t)h.rank);
		if (ntohl(h.version) != OOB_NET_VERSION) {
			oob_net_assign_err(&err, "rank 0 speaks version %d of "
						 "the rendezvous, not yours",
					   OOB_NET_VERSION);
			bad = 1;
		} else if ((int)ntohl((uint32_t)h.nranks) != oob_net.nranks) {
			oob_net_assign_err(&err, "rank 0 was told nranks %d, "
						 "not yours", oob_net.nranks);
			bad = 1;
		} else if (r < 1 || r >= oob_net.nranks || by_rank[r]) {
			oob_net_assign_err(&err, "rank %d is out of range or "
						 "taken twice", r);
			bad = 1;
		}
		if (bad) {
			fprintf(stderr, "oob: rank 0: %s\n", err.msg);
			oob_net_send_all(fd, &err, sizeof(err));
			goto out;
		}
		by_rank[r] = fd;
		ports[r] = ntohl(h.pair_port);
	}
	/* Rank 0's own partner reaches it the way rank 1 reached it. */
	for (r = 1; r < oob_net.nranks; r++) {
		struct oob_net_assign *a = &as[r];
		int src = r % 2 ? r - 1 : -1;

		a->magic = htonl(OOB_NET_MAGIC);
		if (src == 0) {
			char lport[16];

			if (oob_net_host_of(by_rank[1], 0, a->host,
					    sizeof(a->host)) ||
			    oob_net_port_of(oob_net.listen_fd, lport,
					    sizeof(lport)))
				goto out;
			a->port = htonl((uint32_t)atoi(lport));
		} else if (src > 0) {
			if (oob_net_host_of(by_rank[src], 1, a->host,
					    sizeof(a->host)))
				goto out;
			a->port = htonl(ports[src]);
		}
		if (oob_net_send_all(by_rank[r], a, sizeof(*a)))
			goto out;
	}
	ret = 0;
out:
	if (ret && !bad) {
		oob_net_assign_err(&err, "rank 0 could not gather every rank "
					 "(%d ranks)", oob_net.nranks);
		for (i = 0; i < oob_net.nrdv; i++)
			oob_net_send_all(oob_net.rdv_fds[i], &err, sizeof(err));
	}
	free(as);
	free(ports);
	free(by_rank);
	return ret;
}

/* Ranks other than 0: say hello, learn the partner's address. */
static int oob_net_hello(const char *host, const char *port,
			 long long deadline)
{
	struct oob_net_hello h;
	struct oob_net_assign a;
	char pport[16] = "0";
	int fd;

	fd = oob_net_connect(host, port, deadline, "rendezvous with rank 0 at");
	if (fd < 0)
		return -1;
	oob_net.rdv_fds[0] = fd;
	oob_net.nrdv = 1;
	if (oob_net.rank % 2 == 0) {
		oob_net.listen_fd = oob_net_listen(oob_net_family_of(fd), "0");
		if (oob_net.listen_fd < 0 ||
		    oob_net_port_of(oob_net.listen_fd, pport, sizeof(pport)))
			return -1;
	}
	memset(&h, 0, sizeof(h));
	h.magic = htonl(OOB_NET_MAGIC);
	h.version = htonl(OOB_NET_VERSION);
	h.rank = (int32_t)htonl((uint32_t)oob_net.rank);
	h.nranks = (int32_t)htonl((uint32_t)oob_net.nranks);
	h.pair_port = htonl((uint32_t)atoi(pport));
	if (oob_net_send_all(fd, &h, sizeof(h)) ||
	    oob_net_recv_all(fd, &a, sizeof(a), oob_net_left(deadline))) {
		fprintf(stderr, "oob: rank %d: no answer from rank 0 at "
				"%s:%s: %s\n",
			oob_net.rank, host, port, strerror(errno));
		return -1;
	}
	a.msg[sizeof(a.msg) - 1] = '\0';
	a.host[sizeof(a.host) - 1] = '\0';
	if (ntohl(a.magic) != OOB_NET_MAGIC || a.status) {
		fprintf(stderr, "oob: rank %d: rank 0 refused: %s\n",
			oob_net.rank, a.msg[0] ? a.msg : "a stranger answered");
		return -1;
	}
	if (oob_net.rank % 2) {
		snprintf(oob_net.partner_host, sizeof(oob_net.partner_host),
			 "%s", a.host);
		snprintf(oob_net.partner_port, sizeof(oob_net.partner_port),
			 "%u", ntohl(a.port));
	}
	return 0;
}

int oob_join(const struct oob_launch *l, unsigned timeout_s)
{
	long long deadline = oob_net_now_ms() + (long long)timeout_s * 1000;
	char host[256], port[16];
	int lfd = -1, ret = -1;

	if (oob_net.joined)
		return 0;
	if (l->nranks < 2 || l->nranks % 2) {
		fprintf(stderr, "oob: %d ranks: the ranks run in pairs, so "
				"the count must be even and at least 2\n",
			l->nranks);
		return -1;
	}
	if (l->rank < 0 || l->rank >= l->nranks) {
		fprintf(stderr, "oob: rank %d is not in 0..%d\n", l->rank,
			l->nranks - 1);
		return -1;
	}
	if (!l->rendezvous || oob_net_split(l->rendezvous, host, sizeof(host),
					    port, sizeof(port))) {
		fprintf(stderr, "oob: rendezvous '%s' is not HOST:PORT with a "
				"port in 1..65535\n",
			l->rendezvous ? l->rendezvous : "");
		return -1;
	}
	oob_net.rank = l->rank;
	oob_net.nranks = l->nranks;
	oob_net.rdv_fds = calloc((size_t)l->nranks, sizeof(int));
	if (!oob_net.rdv_fds)
		return -1;
	if (l->rank == 0) {
		/* The others reach us at HOST; listen on every address so a
		 * name that resolves differently here still works. */
		struct addrinfo hints, *res = NULL;
		int family = AF_INET;

		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		if (!getaddrinfo(host, NULL, &hints, &res) && res) {
			family = res->ai_family;
			freeaddrinfo(res);
		}
		lfd = oob_net_listen(family, port);
		oob_net.listen_fd = oob_net_listen(family, "0");
		if (lfd < 0 || oob_net.listen_fd < 0 ||
		    oob_net_gather(lfd, deadline))
			goto out;
	} else if (oob_net_hello(host, port, deadline)) {
		goto out;
	}
	oob_net.ctl_fd = oob_net.rank % 2 ? oob_net_pair_connect(deadline)
					  : oob_net_pair_accept(deadline);
	if (oob_net.ctl_fd < 0) {
		fprintf(stderr, "oob: rank %d: partner rank %d did not "
				"connect within %u s\n",
			oob_net.rank, oob_net_partner(), timeout_s);
		goto out;
	}
	oob_net.joined = 1;
	ret = 0;
out:
	if (lfd >= 0)
		close(lfd);
	return ret;
}

int oob_net_joined(void)
{
	return oob_net.joined;
}

int oob_joined(void)
{
	return oob_net.joined;
}

int oob_net_pair_rank(void)
{
	return oob_net.rank % 2;
}

int oob_net_partner(void)
{
	return oob_net.rank % 2 ? oob_net.rank - 1 : oob_net.rank + 1;
}

int oob_net_ctl_fd(void)
{
	return oob_net.ctl_fd;
}

int oob_global_rank(void)
{
	return oob_net.joined ? oob_net.rank : oob_rank() < 0 ? 0 : oob_rank();
}

int oob_global_size(void)
{
	return oob_net.joined ? oob_net.nranks : 2;
}

void oob_net_close_in_child(int keep_fd)
{
	int i;

	for (i = 0; i < oob_net.nrdv; i++)
		if (oob_net.rdv_fds[i] != keep_fd)
			close(oob_net.rdv_fds[i]);
	if (oob_net.listen_fd >= 0 && oob_net.listen_fd != keep_fd)
		close(oob_net.listen_fd);
	if (oob_net.ctl_fd >= 0 && oob_net.ctl_fd != keep_fd)
		close(oob_net.ctl_fd);
	oob_net.nrdv = 0;
	oob_net.listen_fd = -1;
	oob_net.ctl_fd = -1;
}

int oob_totals(int counts[3])
{
	uint32_t wire[3];
	int i, k, fd;

	if (!oob_net.joined)
		return 0;
	if (oob_net.rank == 0) {
		/* Each other pair's even rank reports once. */
		for (i = 0; i < oob_net.nrdv; i++) {
			fd = oob_net.rdv_fds[i];
			if (oob_net_recv_all(fd, wire, sizeof(wire), -1) == 0) {
				for (k = 0; k < 3; k++)
					counts[k] += (int)ntohl(wire[k]);
			} else if (errno != ECONNRESET) {
				return -1;
			}
		}
		return 0;
	}
	if (oob_net.rank % 2 == 0) {
		for (k = 0; k < 3; k++)
			wire[k] = htonl((uint32_t)counts[k]);
		if (oob_net_send_all(oob_net.rdv_fds[0], wire, sizeof(wire)))
			return -1;
	}
	/* Odd ranks hang up without a word: rank 0 sees the close. */
	close(oob_net.rdv_fds[0]);
	oob_net.nrdv = 0;
	return 0;
}

/* A launcher's rank and size variables, as whole numbers. */
static int oob_env_int(const char *name, int *out)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 1 << 20) {
		fprintf(stderr, "oob: %s='%s' is not a rank or size\n", name,
			s);
		return -1;
	}
	*out = (int)v;
	return 1;
}

int oob_launch_resolve(struct oob_launch *l, const char *tool)
{
	struct oob_launch env = { .rank = -1, .nranks = -1 };
	int found;

	/* Options given in full win over a launcher's variables. */
	if (l->rendezvous && !l->source && l->rank >= 0 && l->nranks >= 0)
		l->source = "--rank/--nranks";
	found = oob_launch_from_env(l->rendezvous ? l : &env);
	if (found < 0)
		return -1;
	if (!l->rendezvous) {
		if (l->rank >= 0 || l->nranks >= 0) {
			fprintf(stderr, "%s: --rank and --nranks need "
					"--rendezvous HOST:PORT\n",
				tool);
			return -1;
		}
		if (found && env.nranks > 1)
			fprintf(stderr, "%s: started by %s as rank %d of %d "
					"without --rendezvous: this rank runs "
					"its own one-host pair\n",
				tool, env.source, env.rank, env.nranks);
		return 0;
	}
	if (l->rank < 0 || l->nranks < 0) {
		fprintf(stderr, "%s: --rendezvous needs --rank and --nranks, "
				"or a launcher (mpirun, srun, PMI) that sets "
				"them\n",
			tool);
		return -1;
	}
	if (!l->source)
		l->source = "--rank/--nranks";
	return 0;
}

int oob_pair_values(const char *s, long max, int out[2])
{
	char *end;
	long v;

	for (int i = 0; i < 2; i++) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 0 || v > max)
			return -1;
		out[i] = (int)v;
		if (!*end) {
			if (i == 0)
				out[1] = out[0];
			return 0;
		}
		if (*end != ',' || i == 1)
			return -1;
		s = end + 1;
	}
	return -1;
}

int oob_launch_from_env(struct oob_launch *l)
{
	static const struct {
		const char *rank, *size, *who;
	} launchers[] = {
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpirun" },
		{ "SLURM_PROCID", "SLURM_NTASKS", "srun" },
		{ "PMI_RANK", "PMI_SIZE", "PMI" },
	};
	size_t i;
	int rank = -1, size = -1, a, b;

	for (i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		a = oob_env_int(launchers[i].rank, &rank);
		b = oob_env_int(launchers[i].size, &size);
		if (a < 0 || b < 0)
			return -1;
		if (a && b)
			break;
	}
	if (i == sizeof(launchers) / sizeof(launchers[0]))
		return 0;
	if (l->rank < 0)
		l->rank = rank;
	if (l->nranks < 0)
		l->nranks = size;
	if (!l->source)
		l->source = launchers[i].who;
	return 1;
}
