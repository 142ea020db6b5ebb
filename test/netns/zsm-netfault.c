/* SPDX-License-Identifier: MIT */
/*
 * zsm-netfault: one rank of a pair that drives several comms of any NCCL
 * net plugin (test/lib/zsm_client) between two network namespaces while
 * the network between them fails.  The two ranks meet over a Unix socket
 * (--ctl PATH; the namespaces share the file system), never over the
 * network under test, so their own talk survives the fault.
 *
 *   linkdown  comms in both directions with a stream of messages and a
 *             receive and a send outstanding on every comm; rank 0 runs
 *             --cut, then both ranks time, per comm, when test() fails
 *             its requests and with what; rank 0 runs --restore, the old
 *             comms are closed, and fresh comms must carry byte-exact data.
 *   congest   the link stays up; every rank posts many large sends on
 *             every send comm and posts no receive for --hold seconds:
 *             the queues fill, and no request may fail.
 *   stop      rank 0 stops rank 1's process (SIGSTOP) for --hold s with
 *             messages in flight on every comm: nothing may fail, every
 *             message must arrive once it goes on (SIGCONT).
 *   kill      rank 0 kills rank 1 (SIGKILL) likewise: every comm of rank
 *             0 must fail all its requests within --bound s.
 *   refused   rank 1 listens and exits; rank 0's connect to it must fail
 *             within --bound s.
 *   corrupt   rank 0 sends, rank 1 receives and checks every byte of many
 *             messages whose words a tc program may alter in flight
 *             (zsm-tamper), counting altered messages that test()
 *             reported as good.  With ZSM_CHECKSUM=1 in the environment
 *             one such message fails the run; without, it is a number.
 *
 * Prints one line per comm and "PASS"/"FAIL: why"; exit 0, 1, or 77.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"
#include "oob_net.h"
#include "pattern.h"
#include "zsm_client.h"

#define NF_MAX_COMMS 64
/* Stream messages in flight per comm (linkdown); receive slots (congest). */
#define NF_WINDOW 4
#define NF_SLOTS 16
#define NF_MAX_DEPTH 256
#define NF_REQS (NF_MAX_DEPTH + NF_WINDOW + 2)
#define NF_STREAM_LEN (256u << 10)
/* Above rxm's eager and segmented limits: the send waits for its receive. */
#define NF_STUCK_LEN (1u << 20)
#define NF_TAG_STREAM 0
#define NF_TAG_STUCK_RECV 1 /* the peer never sends it */
#define NF_TAG_STUCK_SEND 2 /* the peer never receives it */
#define NF_TAG_FRESH 7
#define NF_CONNECT_MS 90000
#define NF_MS 1000000ull

enum nf_mode { NF_LINKDOWN, NF_CONGEST, NF_CORRUPT, NF_STOP, NF_KILL,
	       NF_REFUSED };

struct nf_opts {
	const char *plugin;
	const char *ctl;
	const char *cut;
	const char *restore;
	enum nf_mode mode;
	int rank;
	int comms;
	int depth;
	size_t size;
	unsigned bound_s;
	unsigned hold_s;
	unsigned drain_s;
	int msgs;
	unsigned timeout_s;
	int dev;
};

struct nf_req {
	void *req;
	int tag;
	uint64_t seq; /* stream or message number */
	int slot;     /* the buffer it holds, -1 for none */
	size_t len;
	unsigned char *buf;
};

struct nf_comm {
	void *comm;
	void *mh;
	int is_send;
	int idx;
	unsigned char *region;
	size_t region_len;
	struct nf_req reqs[NF_REQS];
	int nreq;
	/*
	 * Buffers in use by a request.  Requests may finish in any order,
	 * so a buffer is taken when free, not by message number.
	 */
	uint32_t busy;
	uint64_t posted, done; /* stream or message numbers */
	/* After the cut (linkdown) or ever (congest, corrupt). */
	uint64_t first_err_ns, resolved_ns;
	int first_err, nerr, nok;
	int stopped;
};

struct nf {
	struct nf_opts o;
	struct zsm_client *c;
	int ctl;
	struct nf_comm comm[2 * NF_MAX_COMMS];
	int ncomm;
	/* Failures of this rank, for the verdict. */
	int failures;
	int cut_done;
	/* The peer's value at the next meeting point, read early. */
	int64_t early;
	int have_early;
	/* Stream messages per comm (stop), 0 for no end. */
	uint64_t stream_cap;
	/* corrupt: what the receiver saw. */
	long long good, silent, err_altered, err_intact, short_len;
};

static void nf_vsay(struct nf *nf, const char *what, const char *fmt,
		    va_list ap)
{
	printf("rank %d: %s", nf->o.rank, what);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

static void nf_say(struct nf *nf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void nf_say(struct nf *nf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nf_vsay(nf, "", fmt, ap);
	va_end(ap);
}

/* A failure of this rank: counted for the verdict; -1 for "return". */
static int nf_fail(struct nf *nf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int nf_fail(struct nf *nf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nf_vsay(nf, "FAIL: ", fmt, ap);
	va_end(ap);
	nf->failures++;
	return -1;
}

static double nf_s(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void nf_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static const char *nf_doing = "starting";

static void nf_on_alarm(int sig)
{
	static const char msg[] = "zsm-netfault: FAIL: the run's time limit "
				  "rang while ";
	ssize_t r;

	(void)sig;
	r = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	r = write(STDOUT_FILENO, nf_doing, strlen(nf_doing));
	r = write(STDOUT_FILENO, "\n", 1);
	(void)r;
	_exit(1);
}

/* ---- the control stream (a Unix socket: off the network under test) */

static int nf_ctl_open(struct nf *nf)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t deadline = zsm_client_now_ns() + 60000 * NF_MS;
	int fd, lfd;

	if (strlen(nf->o.ctl) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "zsm-netfault: --ctl path too long\n");
		return -1;
	}
	strcpy(sa.sun_path, nf->o.ctl);
	if (nf->o.rank == 0) {
		unlink(nf->o.ctl);
		lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(lfd, 1)) {
			perror("zsm-netfault: control socket");
			return -1;
		}
		fd = accept(lfd, NULL, NULL);
		close(lfd);
		unlink(nf->o.ctl);
		if (fd < 0)
			perror("zsm-netfault: accept");
		nf->ctl = fd;
		return fd < 0 ? -1 : 0;
	}
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		close(fd);
		if (zsm_client_now_ns() > deadline) {
			fprintf(stderr, "zsm-netfault: rank 0 never listened "
					"at %s\n",
				nf->o.ctl);
			return -1;
		}
		nf_sleep_ms(20);
	}
	nf->ctl = fd;
	return 0;
}

static int nf_send(struct nf *nf, const void *p, size_t len)
{
	return oob_net_send_all(nf->ctl, p, len);
}

static int nf_recv(struct nf *nf, void *p, size_t len)
{
	return oob_net_recv_all(nf->ctl, p, len, -1);
}

/*
 * Swap one value with the peer (every meeting point of the two ranks is
 * one).  A value that nf_peer_quit read early is the peer's half.
 */
static int nf_swap(struct nf *nf, int64_t mine, int64_t *theirs)
{
	if (!nf_send(nf, &mine, sizeof(mine)) && nf->have_early) {
		*theirs = nf->early;
		nf->have_early = 0;
		return 0;
	}
	if (nf_recv(nf, theirs, sizeof(*theirs))) {
		fprintf(stderr, "zsm-netfault: rank %d: the peer is gone\n",
			nf->o.rank);
		return -1;
	}
	return 0;
}

static int nf_barrier(struct nf *nf)
{
	int64_t x;

	return nf_swap(nf, 0, &x);
}

/* Whether the peer has sent something or hung up. */
static int nf_ctl_ready(struct nf *nf)
{
	struct pollfd p = { .fd = nf->ctl, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/*
 * In a loop that waits for the network: the peer reached the next
 * meeting point first.  Its value there is its count of failures: one
 * that failed ends our wait too, instead of leaving it to a time limit.
 */
static int nf_peer_quit(struct nf *nf)
{
	if (nf->have_early || !nf_ctl_ready(nf))
		return 0;
	if (nf_recv(nf, &nf->early, sizeof(nf->early)))
		return nf_fail(nf, "the peer is gone");
	nf->have_early = 1;
	if (!nf->early)
		return 0;
	return nf_fail(nf, "the peer stopped early (it failed: see its "
			   "lines)");
}

/* ---- data patterns */

/* Seed of message seq on comm idx sent by rank: distinct per message. */
static uint32_t nf_seed(int rank, int idx, uint64_t seq)
{
	return (uint32_t)(rank * 0x01000193u) ^ (uint32_t)(idx << 20) ^
	       (uint32_t)seq ^ 0x9e3779b9u;
}

/*
 * corrupt's words: 8 bytes, "zsm!" then 4 bytes of a hash of the seed and
 * the word's index.  zsm-tamper alters only a word that starts with the
 * marker, so it hits message data, never a protocol header; the hash
 * bytes pick the words, so that only some messages are hit.
 */
static const unsigned char nf_marker[4] = { 'z', 's', 'm', '!' };

static uint32_t nf_word_hash(uint32_t seed, uint64_t k)
{
	uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull ^ seed;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint32_t)x;
}

static void nf_words_fill(unsigned char *p, size_t len, uint32_t seed)
{
	for (size_t k = 0; k * 8 < len; k++) {
		uint32_t h = nf_word_hash(seed, k);

		memcpy(p + 8 * k, nf_marker, 4);
		memcpy(p + 8 * k + 4, &h, 4);
	}
}

static long nf_words_check(const unsigned char *p, size_t len, uint32_t seed)
{
	unsigned char w[8];

	for (size_t k = 0; k * 8 < len; k++) {
		uint32_t h = nf_word_hash(seed, k);

		memcpy(w, nf_marker, 4);
		memcpy(w + 4, &h, 4);
		if (memcmp(p + 8 * k, w, 8))
			return (long)(8 * k);
	}
	return -1;
}

/* ---- comms */

static int nf_plugin_open(struct nf *nf)
{
	struct zsm_client_props props;
	int r, ndev = 0;

	r = zsm_client_open(nf->o.plugin, 0, &nf->c);
	if (r)
		return nf_fail(nf, "cannot open %s", nf->o.plugin);
	r = zsm_client_init(nf->c, 0x6e6574666c74ull);
	if (!r)
		r = zsm_client_devices(nf->c, &ndev);
	if (r || ndev < 1)
		return nf_fail(nf, "init/devices: %s, %d devices",
			       zsm_client_result_str(r), ndev);
	if (nf->o.dev >= ndev)
		return nf_fail(nf, "no device %d (%d devices)", nf->o.dev,
			       ndev);
	r = zsm_client_get_properties(nf->c, nf->o.dev, &props);
	if (r)
		return nf_fail(nf, "getProperties: %s",
			       zsm_client_result_str(r));
	nf_say(nf, "%s ABI v%d, device %d of %d: %s", nf->o.plugin,
	       zsm_client_abi(nf->c), nf->o.dev, ndev,
	       props.name ? props.name : "?");
	return 0;
}

/*
 * n comm pairs each way: n listens, the handles swapped, n connects and
 * n accepts driven together (the peer does the same).  Appends to
 * nf->comm: send comms get even places from base, receive comms odd.
 */
static int nf_connect_all(struct nf *nf, int n, size_t region_len,
			  int type)
{
	static char mine[NF_MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE];
	static char theirs[NF_MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE];
	void *listen[NF_MAX_COMMS] = { 0 };
	uint64_t t0 = zsm_client_now_ns(), deadline;
	int base = nf->ncomm, left = 2 * n, r;

	nf_doing = "connecting";
	for (int i = 0; i < n; i++) {
		r = zsm_client_listen(nf->c, nf->o.dev, mine[i], &listen[i]);
		if (r)
			return nf_fail(nf, "listen: %s",
				       zsm_client_result_str(r));
	}
	if (nf_send(nf, mine, sizeof(mine[0]) * (size_t)n) ||
	    nf_recv(nf, theirs, sizeof(theirs[0]) * (size_t)n))
		return nf_fail(nf, "the peer is gone");
	for (int i = 0; i < 2 * n; i++) {
		struct nf_comm *m = &nf->comm[base + i];

		memset(m, 0, sizeof(*m));
		m->is_send = !(i & 1);
		m->idx = base / 2 + i / 2;
	}
	deadline = t0 + NF_CONNECT_MS * NF_MS;
	while (left) {
		for (int i = 0; i < 2 * n; i++) {
			struct nf_comm *m = &nf->comm[base + i];

			if (m->comm)
				continue;
			if (m->is_send)
				r = zsm_client_connect(nf->c, nf->o.dev,
						       theirs[i / 2], &m->comm);
			else
				r = zsm_client_accept(nf->c, listen[i / 2],
						      &m->comm);
			if (r)
				return nf_fail(nf, "%s of comm %d: %s",
					       m->is_send ? "connect"
							  : "accept",
					       m->idx,
					       zsm_client_result_str(r));
			left -= m->comm != NULL;
		}
		if (left && nf_peer_quit(nf))
			return -1;
		if (left && zsm_client_now_ns() > deadline)
			return nf_fail(nf, "%d of %d connects and accepts "
					   "unfinished after %d s",
				       left, 2 * n, NF_CONNECT_MS / 1000);
		if (left)
			nf_sleep_ms(1);
	}
	for (int i = 0; i < n; i++)
		zsm_client_close_listen(nf->c, listen[i]);
	for (int i = 0; i < 2 * n; i++) {
		struct nf_comm *m = &nf->comm[base + i];

		m->region_len = region_len;
		m->region = malloc(region_len);
		if (!m->region)
			return nf_fail(nf, "out of memory");
		memset(m->region, 0, region_len);
		r = zsm_client_reg_mr(nf->c, m->comm, m->region, region_len,
				      type, &m->mh);
		if (r)
			return nf_fail(nf, "regMr: %s",
				       zsm_client_result_str(r));
	}
	nf->ncomm = base + 2 * n;
	nf_say(nf, "%d send and %d receive comms connected in %.3f s", n, n,
	       nf_s(zsm_client_now_ns() - t0));
	return 0;
}

/*
 * Close comms from index from on, as NCCL does (deregMr, then close),
 * requests outstanding or not.  With free_buffers the buffers go back to
 * malloc at once, as NCCL's would: a plugin that still writes into them
 * corrupts what malloc hands out next.
 */
static void nf_close_all(struct nf *nf, int from, int free_buffers)
{
	for (int i = from; i < nf->ncomm; i++) {
		struct nf_comm *m = &nf->comm[i];
		int r1, r2;

		r1 = zsm_client_dereg_mr(nf->c, m->comm, m->mh);
		r2 = m->is_send ? zsm_client_close_send(nf->c, m->comm)
				: zsm_client_close_recv(nf->c, m->comm);
		if (r1 || r2)
			nf_say(nf, "closing %s comm %d: deregMr %s, close %s",
			       m->is_send ? "send" : "receive", m->idx,
			       zsm_client_result_str(r1),
			       zsm_client_result_str(r2));
		if (free_buffers)
			free(m->region);
		m->region = NULL;
	}
	nf->ncomm = from;
}

/* Post one send or receive; 1 when posted, 0 "try again", -1 error. */
static int nf_post(struct nf *nf, struct nf_comm *m, int tag, uint64_t seq,
		   int slot, unsigned char *buf, size_t len, int *err)
{
	struct nf_req *q = &m->reqs[m->nreq];
	int tags[1] = { tag };
	void *datas[1] = { buf }, *mhs[1] = { m->mh };
	size_t sizes[1] = { len };
	void *req = NULL;

	*err = m->is_send
		       ? zsm_client_isend(nf->c, m->comm, buf, len, tag, m->mh,
					  &req)
		       : zsm_client_irecv(nf->c, m->comm, 1, datas, sizes,
					  tags, mhs, &req);
	if (*err)
		return -1;
	if (!req)
		return 0;
	*q = (struct nf_req){ .req = req, .tag = tag, .seq = seq,
			      .slot = slot, .buf = buf, .len = len };
	m->nreq++;
	return 1;
}

/* A free buffer of the n at the start of m's region, or -1. */
static int nf_slot_take(struct nf_comm *m, int n)
{
	for (int k = 0; k < n; k++)
		if (!(m->busy & (1u << k))) {
			m->busy |= 1u << k;
			return k;
		}
	return -1;
}

static void nf_slot_put(struct nf_comm *m, int slot)
{
	if (slot >= 0)
		m->busy &= ~(1u << slot);
}

static void nf_drop_req(struct nf_comm *m, int i)
{
	nf_slot_put(m, m->reqs[i].slot);
	m->reqs[i] = m->reqs[--m->nreq];
}

/* An error on m: the first is kept, with its time. */
static void nf_note_err(struct nf_comm *m, int err, uint64_t now)
{
	if (!m->nerr++) {
		m->first_err = err;
		m->first_err_ns = now;
	}
	m->stopped = 1;
}

/* ---- linkdown */

/* Keep NF_WINDOW stream messages posted on a comm that has not failed. */
static void nf_stream_fill(struct nf *nf, struct nf_comm *m, uint64_t now)
{
	int in_flight = 0, err, r;

	for (int i = 0; i < m->nreq; i++)
		in_flight += m->reqs[i].tag == NF_TAG_STREAM;
	while (!m->stopped && in_flight < NF_WINDOW &&
	       (!nf->stream_cap || m->posted < nf->stream_cap)) {
		int slot = nf_slot_take(m, NF_WINDOW);
		unsigned char *buf = m->region + (size_t)slot * NF_STREAM_LEN;

		if (m->is_send)
			zsm_pattern_fill(buf, NF_STREAM_LEN,
					 nf_seed(nf->o.rank, m->idx,
						 m->posted));
		r = nf_post(nf, m, NF_TAG_STREAM, m->posted, slot, buf,
			    NF_STREAM_LEN, &err);
		if (r <= 0)
			nf_slot_put(m, slot);
		if (r < 0)
			nf_note_err(m, err, now);
		if (r <= 0)
			return;
		m->posted++;
		in_flight++;
	}
}

/*
 * Test every request of m once.  Before the cut (cut_ns 0) an error
 * fails the run; after it, errors are what we wait for.
 */
static void nf_linkdown_poll(struct nf *nf, struct nf_comm *m,
			     uint64_t cut_ns)
{
	for (int i = 0; i < m->nreq; i++) {
		struct nf_req *q = &m->reqs[i];
		uint64_t now;
		int done = 0, size = -1, r;
		long bad;

		r = zsm_client_test(nf->c, q->req, &done, &size);
		if (!r && !done)
			continue;
		now = zsm_client_now_ns();
		if (r) {
			if (!cut_ns)
				nf_fail(nf, "%s comm %d: test() failed before "
					    "the cut: %s",
					m->is_send ? "send" : "receive", m->idx,
					zsm_client_result_str(r));
			nf_note_err(m, r, now);
		} else if (!m->is_send && q->tag == NF_TAG_STREAM) {
			bad = zsm_pattern_check(
				q->buf, q->len,
				nf_seed(1 - nf->o.rank, m->idx, q->seq));
			if (size != (int)q->len || bad >= 0)
				nf_fail(nf, "receive comm %d: message %" PRIu64
					    " came %d bytes, first bad byte %ld",
					m->idx, q->seq, size, bad);
			m->done++;
			m->nok += cut_ns != 0;
		} else if (q->tag == NF_TAG_STREAM) {
			m->done++;
			m->nok += cut_ns != 0;
		} else if (m->is_send) {
			/* The peer's own receives let it go, and a provider
			 * may complete a send the peer has not matched:
			 * libfabric's own tcp RDM keeps it there (over rxm
			 * one this large goes by rendezvous and stays
			 * incomplete).  The stream's sends still need the
			 * peer. */
			m->nok += cut_ns != 0;
		} else {
			nf_fail(nf, "%s comm %d: the request of tag %d, which "
				    "the peer never matches, completed",
				m->is_send ? "send" : "receive", m->idx,
				q->tag);
		}
		if (cut_ns)
			m->resolved_ns = now;
		nf_drop_req(m, i--);
	}
}

static int nf_watch_cut(struct nf *nf, uint64_t cut_ns);

/* Traffic first: every comm moves some stream messages. */
static int nf_warm_up(struct nf *nf)
{
	uint64_t t0 = zsm_client_now_ns();

	nf_doing = "warming up the stream";
	for (;;) {
		int warm = 1;

		for (int i = 0; i < nf->ncomm; i++) {
			nf_stream_fill(nf, &nf->comm[i], 0);
			nf_linkdown_poll(nf, &nf->comm[i], 0);
			warm &= nf->comm[i].done >= 2 * NF_WINDOW;
		}
		if (nf->failures || nf_peer_quit(nf))
			return -1;
		if (warm)
			return 0;
		if (zsm_client_now_ns() - t0 > 60000 * NF_MS)
			return nf_fail(nf, "the stream moved too little in "
					   "60 s before any fault");
	}
}

static int nf_linkdown_phase(struct nf *nf)
{
	uint64_t cut_ns = 0, t_ready;
	int64_t peer_cut = 0;
	int i, err;

	if (nf_connect_all(nf, nf->o.comms,
			   NF_WINDOW * NF_STREAM_LEN + NF_STUCK_LEN,
			   NCCL_PTR_HOST))
		return -1;
	t_ready = zsm_client_now_ns();
	if (nf_warm_up(nf))
		return -1;
	/* A receive that only an error can end, and a send that the peer
	 * never matches (see nf_linkdown_poll), on every comm. */
	for (i = 0; i < nf->ncomm; i++) {
		struct nf_comm *m = &nf->comm[i];
		unsigned char *buf = m->region + NF_WINDOW * NF_STREAM_LEN;
		int tag = m->is_send ? NF_TAG_STUCK_SEND : NF_TAG_STUCK_RECV;
		int r;

		do {
			r = nf_post(nf, m, tag, 0, -1, buf, NF_STUCK_LEN,
				    &err);
			nf_linkdown_poll(nf, m, 0);
		} while (r == 0);
		if (r < 0)
			return nf_fail(nf, "posting the lasting request: %s",
				       zsm_client_result_str(err));
	}
	nf_say(nf, "stream running on every comm (%.3f s), a lasting send "
		   "and receive posted on each",
	       nf_s(zsm_client_now_ns() - t_ready));
	/* Both sides ready, or neither goes on. */
	if (nf_swap(nf, nf->failures, &peer_cut) || nf->failures || peer_cut)
		return -1;

	nf_doing = "waiting for the comms to fail";
	if (nf->o.rank == 0) {
		int st = system(nf->o.cut);

		/* Sent even when the cut failed: rank 1 waits for it. */
		cut_ns = zsm_client_now_ns();
		nf_send(nf, &cut_ns, sizeof(cut_ns));
		nf_say(nf, "cut: %s", nf->o.cut);
		if (st)
			nf_fail(nf, "the cut command exited %d", st);
	}
	return nf_watch_cut(nf, cut_ns);
}

/*
 * After the cut at cut_ns (0 on rank 1 of linkdown: it comes over the
 * control stream), drive every comm until each has failed all its
 * requests or --bound seconds passed, and say when and how each failed.
 */
static int nf_watch_cut(struct nf *nf, uint64_t cut_ns)
{
	uint64_t deadline = 0, now;
	int64_t peer_cut = 0;
	int left, i;

	/* Rank 1 keeps driving its comms until the cut's time arrives. */
	for (;;) {
		now = zsm_client_now_ns();
		if (!cut_ns && nf_ctl_ready(nf)) {
			if (nf_recv(nf, &peer_cut, sizeof(peer_cut)))
				return nf_fail(nf, "the peer is gone");
			cut_ns = (uint64_t)peer_cut;
		}
		if (cut_ns && !deadline)
			deadline = cut_ns + (uint64_t)nf->o.bound_s * 1000 * NF_MS;
		left = 0;
		for (i = 0; i < nf->ncomm; i++) {
			struct nf_comm *m = &nf->comm[i];

			nf_stream_fill(nf, m, now);
			nf_linkdown_poll(nf, m, cut_ns);
			left += !m->nerr || m->nreq;
		}
		if (cut_ns && (!left || now > deadline))
			break;
		/* Poll as NCCL's proxy would, without eating a core. */
		usleep(200);
	}
	nf->cut_done = 1;
	nf_say(nf, "%s %.3f s after the cut: %d of %d comms failed every "
		   "request",
	       left ? "gave up" : "done", nf_s(now - cut_ns),
	       nf->ncomm - left, nf->ncomm);
	for (i = 0; i < nf->ncomm; i++) {
		struct nf_comm *m = &nf->comm[i];
		const char *kind = m->is_send ? "send" : "recv";

		if (m->nerr && !m->nreq)
			nf_say(nf, "%s comm %d: first error %.3f s after the "
				   "cut (%s), %d requests failed, last at "
				   "%.3f s; %d completed after the cut",
			       kind, m->idx,
			       nf_s(m->first_err_ns - cut_ns),
			       zsm_client_result_str(m->first_err), m->nerr,
			       nf_s(m->resolved_ns - cut_ns), m->nok);
		else if (m->nerr)
			nf_fail(nf, "%s comm %d: first error %.3f s after the "
				    "cut (%s), but %d requests still pending "
				    "after %u s",
				kind, m->idx, nf_s(m->first_err_ns - cut_ns),
				zsm_client_result_str(m->first_err), m->nreq,
				nf->o.bound_s);
		else
			nf_fail(nf, "%s comm %d: no error within %u s of the "
				    "cut; %d requests pending, %d completed "
				    "after the cut",
				kind, m->idx, nf->o.bound_s, m->nreq, m->nok);
	}
	if (!left) {
		uint64_t lo = UINT64_MAX, hi = 0, all = 0;

		for (i = 0; i < nf->ncomm; i++) {
			struct nf_comm *m = &nf->comm[i];

			lo = m->first_err_ns < lo ? m->first_err_ns : lo;
			hi = m->first_err_ns > hi ? m->first_err_ns : hi;
			all = m->resolved_ns > all ? m->resolved_ns : all;
		}
		nf_say(nf, "measured: first errors %.3f to %.3f s after the "
			   "cut, every request of every comm failed by %.3f s "
			   "(bound %u s)",
		       nf_s(lo - cut_ns), nf_s(hi - cut_ns), nf_s(all - cut_ns),
		       nf->o.bound_s);
	}
	return 0;
}

/* Fresh comms after the fault: sizes across every protocol, both ways. */
static int nf_fresh_phase(struct nf *nf)
{
	static const size_t sizes[] = { 0, 1, 4096, 65536, 1 << 20, 4 << 20 };
	const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
	uint64_t t0 = zsm_client_now_ns(), deadline;
	int from = nf->ncomm, err;

	if (nf_connect_all(nf, 2, 4u << 20, NCCL_PTR_HOST))
		return -1;
	nf_doing = "moving data over the fresh comms";
	deadline = zsm_client_now_ns() + 30000 * NF_MS;
	for (size_t s = 0; s < nsizes; s++) {
		int left = 0;

		for (int i = from; i < nf->ncomm; i++) {
			struct nf_comm *m = &nf->comm[i];
			int r;

			if (m->is_send)
				zsm_pattern_fill(m->region, sizes[s],
						 nf_seed(nf->o.rank, m->idx, s));
			else
				memset(m->region, 0, sizes[s]);
			do {
				r = nf_post(nf, m, NF_TAG_FRESH, s, -1,
					    m->region, sizes[s], &err);
			} while (!r && zsm_client_now_ns() < deadline &&
				 !nf_peer_quit(nf));
			if (r <= 0)
				return nf_fail(nf, "posting on fresh comm %d: "
						   "%s",
					       m->idx, zsm_client_result_str(err));
			left++;
		}
		while (left) {
			for (int i = from; i < nf->ncomm; i++) {
				struct nf_comm *m = &nf->comm[i];
				int done = 0, size = -1, r;
				long bad;

				if (!m->nreq)
					continue;
				r = zsm_client_test(nf->c, m->reqs[0].req,
						    &done, &size);
				if (r)
					return nf_fail(nf, "fresh comm %d, %zu "
							   "bytes: %s",
						       m->idx, sizes[s],
						       zsm_client_result_str(r));
				if (!done)
					continue;
				m->nreq = 0;
				left--;
				if (m->is_send)
					continue;
				bad = zsm_pattern_check(
					m->region, sizes[s],
					nf_seed(1 - nf->o.rank, m->idx, s));
				if (size != (int)sizes[s] || bad >= 0)
					return nf_fail(nf, "fresh comm %d: %zu "
							   "bytes came as %d, "
							   "first bad byte %ld",
						       m->idx, sizes[s], size,
						       bad);
			}
			if (left && nf_peer_quit(nf))
				return -1;
			if (left && zsm_client_now_ns() > deadline)
				return nf_fail(nf, "fresh comms: %zu-byte "
						   "messages not done in 30 s",
					       sizes[s]);
		}
	}
	nf_say(nf, "fresh comms: connected and moved %zu sizes (0 to 4 MiB) "
		   "both ways, every byte right, in %.3f s",
	       nsizes, nf_s(zsm_client_now_ns() - t0));
	return 0;
}

static int nf_linkdown(struct nf *nf)
{
	int64_t peer_fail = 0;
	uint64_t t0;
	int r = nf_linkdown_phase(nf), st;

	/* Nothing was cut: nothing to restore or to watch. */
	if (r && !nf->cut_done)
		return -1;
	/* Both ranks watch to the end before the link comes back. */
	if (nf_swap(nf, nf->failures, &peer_fail))
		return -1;
	if (nf->o.rank == 0) {
		st = system(nf->o.restore);
		nf_say(nf, "restore: %s%s", nf->o.restore,
		       st ? " (exited non-zero)" : "");
		if (st)
			nf_fail(nf, "the restore command failed");
	}
	if (nf_barrier(nf))
		return -1;
	nf_doing = "closing the failed comms";
	t0 = zsm_client_now_ns();
	nf_close_all(nf, 0, 1);
	nf_say(nf, "closed the old comms in %.3f s",
	       nf_s(zsm_client_now_ns() - t0));
	if (nf_barrier(nf))
		return -1;
	return nf_fresh_phase(nf);
}

/* ---- the peer's process, not the network: stop, kill, refused */

/* Both ranks: a stream on every comm, and the peer's pid. */
static int nf_peer_start(struct nf *nf, pid_t *peer)
{
	int64_t theirs = 0;

	/* The pids first: a value that comes while the peer connects is
	 * taken for its verdict (nf_peer_quit). */
	if (nf_swap(nf, (int64_t)getpid(), &theirs) ||
	    nf_connect_all(nf, nf->o.comms, NF_WINDOW * NF_STREAM_LEN,
			   NCCL_PTR_HOST))
		return -1;
	*peer = (pid_t)theirs;
	return nf_warm_up(nf);
}

/* Messages the receive comms have taken so far. */
static uint64_t nf_received(struct nf *nf)
{
	uint64_t n = 0;

	for (int i = 0; i < nf->ncomm; i++)
		n += nf->comm[i].is_send ? 0 : nf->comm[i].done;
	return n;
}

/*
 * stop: rank 0 stops rank 1 (SIGSTOP) for --hold seconds while every
 * comm has messages in flight both ways, then lets it go on (SIGCONT).
 * No request may fail, on either side, and every comm's --msgs stream
 * messages must arrive intact.  That the stream stood still during the
 * stop proves the peer was stopped.
 */
/* When rank 0 stopped the peer and let it go on (0: not yet). */
struct nf_stop_clock {
	uint64_t stop_ns, cont_ns, at_1s;
};

/* Rank 0: stop the peer, then let it go on after --hold s. */
static int nf_stop_step(struct nf *nf, pid_t peer, struct nf_stop_clock *k,
			uint64_t now)
{
	if (!k->stop_ns) {
		if (kill(peer, SIGSTOP))
			return nf_fail(nf, "kill(SIGSTOP): %s", strerror(errno));
		k->stop_ns = now;
		nf_say(nf, "stopped the peer (pid %d) for %u s", (int)peer,
		       nf->o.hold_s);
	} else if (!k->cont_ns && !k->at_1s &&
		   now - k->stop_ns >= 1000 * NF_MS) {
		k->at_1s = nf_received(nf) + 1;
	} else if (!k->cont_ns &&
		   now - k->stop_ns >= nf->o.hold_s * 1000 * NF_MS) {
		if (nf_received(nf) + 1 != k->at_1s)
			nf_fail(nf, "messages arrived from the stopped peer: "
				    "was it stopped?");
		kill(peer, SIGCONT);
		k->cont_ns = now;
		nf_say(nf, "let the peer go on after %.3f s",
		       nf_s(now - k->stop_ns));
	}
	return 0;
}

/* Both ranks: every comm's stream to its end, rank 0 stopping the peer
 * on the way. */
static int nf_stop_stream(struct nf *nf, pid_t peer, struct nf_stop_clock *k)
{
	uint64_t t0 = zsm_client_now_ns(), limit;
	int left;

	limit = t0 + ((uint64_t)nf->o.hold_s + nf->o.drain_s) * 1000 * NF_MS;
	nf_doing = "streaming through the stop";
	do {
		uint64_t now = zsm_client_now_ns();

		left = 0;
		for (int i = 0; i < nf->ncomm; i++) {
			nf_stream_fill(nf, &nf->comm[i], now);
			nf_linkdown_poll(nf, &nf->comm[i], 0);
			left += nf->comm[i].done < nf->stream_cap;
		}
		if (nf->o.rank == 0 && nf_stop_step(nf, peer, k, now))
			return -1;
		if (nf->failures || nf_peer_quit(nf))
			return -1;
		if (zsm_client_now_ns() > limit)
			return nf_fail(nf, "%d comms unfinished %u s after "
					   "the start",
				       left, nf->o.hold_s + nf->o.drain_s);
		usleep(200);
	} while (left || (nf->o.rank == 0 && !k->cont_ns));
	nf_say(nf, "every comm moved its %d messages intact, none failed, "
		   "in %.3f s%s",
	       nf->o.msgs, nf_s(zsm_client_now_ns() - t0),
	       k->cont_ns ? " (the stop included)" : "");
	return 0;
}

/*
 * stop: rank 0 stops rank 1 (SIGSTOP) for --hold seconds while every
 * comm has messages in flight both ways, then lets it go on (SIGCONT).
 * No request may fail, on either side, and every comm's --msgs stream
 * messages must arrive intact.  That the stream stood still during the
 * stop proves the peer was stopped.
 */
static int nf_stop(struct nf *nf)
{
	struct nf_stop_clock k = { 0 };
	pid_t peer;
	int r;

	nf->stream_cap = (uint64_t)nf->o.msgs;
	if (nf_peer_start(nf, &peer))
		return -1;
	r = nf_stop_stream(nf, peer, &k);
	/* Whatever failed, the peer is not left stopped. */
	if (k.stop_ns && !k.cont_ns)
		kill(peer, SIGCONT);
	if (r)
		return r;
	/* Both done before either closes: a send done may still be on its
	 * way. */
	if (nf_barrier(nf))
		return -1;
	nf_close_all(nf, 0, 1);
	return 0;
}

/*
 * kill: rank 0 kills rank 1 (SIGKILL) while every comm has messages in
 * flight both ways; every comm of rank 0 must fail all its requests
 * within --bound seconds.  Rank 1 just streams until it dies.
 */
static int nf_kill(struct nf *nf)
{
	uint64_t t0;
	pid_t peer;
	int r;

	if (nf_peer_start(nf, &peer))
		return -1;
	if (nf->o.rank == 1) {
		nf_doing = "streaming until rank 0 kills this process";
		t0 = zsm_client_now_ns();
		while (zsm_client_now_ns() - t0 < 60000 * NF_MS) {
			for (int i = 0; i < nf->ncomm; i++) {
				nf_stream_fill(nf, &nf->comm[i], 0);
				nf_linkdown_poll(nf, &nf->comm[i], 0);
			}
			usleep(200);
		}
		return nf_fail(nf, "still alive 60 s after the warm-up");
	}
	if (kill(peer, SIGKILL))
		return nf_fail(nf, "kill(SIGKILL): %s", strerror(errno));
	t0 = zsm_client_now_ns();
	nf_say(nf, "killed the peer (pid %d)", (int)peer);
	nf_doing = "waiting for the comms to fail";
	r = nf_watch_cut(nf, t0);
	nf_close_all(nf, 0, 1);
	return r;
}

/*
 * refused: rank 1 listens, hands its handle over and exits; rank 0 then
 * connects to it, and the connect must fail within --bound seconds (the
 * host refuses the port), not wait for ZSM_CONNECT_TIMEOUT_MS.
 */
static int nf_refused(struct nf *nf)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE], eof;
	uint64_t t0, now;
	void *listen = NULL, *comm = NULL;
	int r;

	if (nf->o.rank == 1) {
		r = zsm_client_listen(nf->c, nf->o.dev, handle, &listen);
		if (r)
			return nf_fail(nf, "listen: %s",
				       zsm_client_result_str(r));
		nf_send(nf, handle, sizeof(handle));
		nf_say(nf, "listening; exiting without a word");
		fflush(stdout);
		_exit(0);
	}
	nf_doing = "waiting for the listener to exit";
	if (nf_recv(nf, handle, sizeof(handle)))
		return nf_fail(nf, "no handle from the peer");
	if (!nf_recv(nf, &eof, 1))
		return nf_fail(nf, "the peer sent more than its handle");
	nf_doing = "connecting to the listener that exited";
	t0 = zsm_client_now_ns();
	do {
		r = zsm_client_connect(nf->c, nf->o.dev, handle, &comm);
		now = zsm_client_now_ns();
		if (r || comm)
			break;
		usleep(1000);
	} while (now - t0 < (uint64_t)nf->o.bound_s * 1000 * NF_MS);
	if (comm)
		return nf_fail(nf, "a connect to a listener that exited "
				   "succeeded");
	if (!r)
		return nf_fail(nf, "a connect to a listener that exited was "
				   "still pending after %u s",
			       nf->o.bound_s);
	nf_say(nf, "measured: the connect failed %.3f s after it began "
		   "(%s; bound %u s)",
	       nf_s(now - t0), zsm_client_result_str(r), nf->o.bound_s);
	return 0;
}

/* ---- congest */

static unsigned char *nf_slot(struct nf_comm *m, int slot)
{
	return m->region + (size_t)slot * (m->region_len / NF_SLOTS);
}

static int nf_congest(struct nf *nf)
{
	uint64_t t0, hold_end, deadline, now, last_report = 0;
	size_t len = nf->o.size;
	int posted_recvs = 0, i, err, left;
	long long refused = 0;

	if (nf_connect_all(nf, nf->o.comms, NF_SLOTS * len, NCCL_PTR_HOST))
		return -1;
	for (i = 0; i < nf->ncomm; i++) {
		struct nf_comm *m = &nf->comm[i];

		if (m->is_send)
			for (int s = 0; s < NF_SLOTS; s++)
				zsm_pattern_fill(nf_slot(m, s), len,
						 nf_seed(nf->o.rank, m->idx,
							 (uint64_t)s));
	}
	if (nf_barrier(nf))
		return -1;
	nf_doing = "holding receives back while the sends wait";
	t0 = zsm_client_now_ns();
	hold_end = t0 + (uint64_t)nf->o.hold_s * 1000 * NF_MS;
	deadline = hold_end + (uint64_t)nf->o.drain_s * 1000 * NF_MS;
	for (;;) {
		now = zsm_client_now_ns();
		if (!posted_recvs && now >= hold_end) {
			posted_recvs = 1;
			nf_doing = "draining after the hold";
			nf_say(nf, "hold over after %.3f s: posting receives",
			       nf_s(now - t0));
		}
		left = 0;
		for (i = 0; i < nf->ncomm; i++) {
			struct nf_comm *m = &nf->comm[i];
			int cap = m->is_send ? nf->o.depth : NF_SLOTS;

			/* Sends: all at once; receives: NF_SLOTS at a time. */
			while (!m->stopped && (m->is_send || posted_recvs) &&
			       m->nreq < cap && m->posted < (uint64_t)nf->o.depth) {
				/* A send reads the buffer of its pattern,
				 * which never changes; a receive takes a
				 * free one. */
				int pat = (int)(m->posted % NF_SLOTS);
				int slot = m->is_send ? -1
						      : nf_slot_take(m, NF_SLOTS);
				int r = nf_post(nf, m, NF_TAG_STREAM, m->posted,
						slot,
						nf_slot(m, m->is_send ? pat
								      : slot),
						len, &err);

				if (r <= 0)
					nf_slot_put(m, slot);

				if (r < 0 && !m->nerr)
					nf_fail(nf, "%s comm %d: posting message "
						    "%" PRIu64 " failed: %s",
						m->is_send ? "send" : "receive",
						m->idx, m->posted,
						zsm_client_result_str(err));
				if (r < 0)
					nf_note_err(m, err, now);
				if (r <= 0) {
					refused += r == 0;
					break;
				}
				m->posted++;
			}
			for (int k = 0; k < m->nreq; k++) {
				struct nf_req *q = &m->reqs[k];
				int done = 0, size = -1, r;
				long bad;

				r = zsm_client_test(nf->c, q->req, &done,
						    &size);
				if (!r && !done)
					continue;
				if (r) {
					/* One line per comm: its first. */
					if (!m->nerr)
						nf_fail(nf, "%s comm %d: message "
							    "%" PRIu64 " failed "
							    "%.3f s into the "
							    "run: %s",
							m->is_send ? "send"
								   : "receive",
							m->idx, q->seq,
							nf_s(now - t0),
							zsm_client_result_str(r));
					nf_note_err(m, r, now);
				} else if (!m->is_send) {
					bad = zsm_pattern_check(
						q->buf, len,
						nf_seed(1 - nf->o.rank, m->idx,
							q->seq % NF_SLOTS));
					if (size != (int)len || bad >= 0)
						nf_fail(nf, "receive comm %d: "
							    "message %" PRIu64
							    " came %d bytes, "
							    "first bad byte "
							    "%ld",
							m->idx, q->seq, size,
							bad);
				}
				if (!r) {
					m->done++;
					if (m->is_send && !posted_recvs)
						m->nok++;
				}
				nf_drop_req(m, k--);
			}
			left += !m->stopped && m->done < (uint64_t)nf->o.depth;
		}
		if (!left || nf->failures || nf_peer_quit(nf))
			break;
		if (now > deadline) {
			nf_fail(nf, "%d comms unfinished %u s after the hold",
				left, nf->o.drain_s);
			break;
		}
		if (now - last_report > 4000 * NF_MS && !posted_recvs) {
			long long pend = 0;

			for (i = 0; i < nf->ncomm; i++)
				pend += nf->comm[i].nreq;
			nf_say(nf, "%.1f s: %lld requests pending, no error",
			       nf_s(now - t0), pend);
			last_report = now;
		}
		usleep(200);
	}
	{
		long long sent = 0, got = 0, early = 0;

		for (i = 0; i < nf->ncomm; i++) {
			if (nf->comm[i].is_send) {
				sent += (long long)nf->comm[i].done;
				early += nf->comm[i].nok;
			} else {
				got += (long long)nf->comm[i].done;
			}
		}
		nf_say(nf, "%lld sends (%lld done during the hold) and %lld "
			   "receives of %zu bytes done in %.3f s; %lld posts "
			   "answered 'try again'",
		       sent, early, got, len,
		       nf_s(zsm_client_now_ns() - t0), refused);
	}
	nf_close_all(nf, 0, 1);
	return 0;
}

/* ---- corrupt */

/* Message k's size: every protocol of rxm (eager, segmented, rendezvous). */
static size_t nf_corrupt_len(uint64_t k)
{
	static const size_t sizes[] = { 1 << 20, 65536, 262144, 16384,
					4 << 20, 131072 };

	return sizes[k % (sizeof(sizes) / sizeof(sizes[0]))];
}

#define NF_CORRUPT_MAX (4u << 20)

static void nf_corrupt_recv_done(struct nf *nf, struct nf_comm *m,
				 struct nf_req *q, int r, int size)
{
	long bad = nf_words_check(q->buf, q->len,
				  nf_seed(0, m->idx, q->seq));

	if (r) {
		/* An error that the data bears out, or one on intact data
		 * (a false alarm, or a comm failed by an earlier one). */
		if (bad >= 0)
			nf->err_altered++;
		else
			nf->err_intact++;
		if (!m->nerr++) {
			m->first_err = r;
			nf_say(nf, "comm %d: message %" PRIu64 " (%zu bytes): "
				   "test() says %s; its bytes are %s",
			       m->idx, q->seq, q->len, zsm_client_result_str(r),
			       bad >= 0 ? "altered" : "intact");
		}
	} else if (size != (int)q->len) {
		nf->short_len++;
		nf_fail(nf, "comm %d: message %" PRIu64 " of %zu bytes came "
			    "as %d",
			m->idx, q->seq, q->len, size);
	} else if (bad >= 0) {
		if (!nf->silent++)
			nf_say(nf, "comm %d: message %" PRIu64 " (%zu bytes) "
				   "reported good, altered from byte %ld",
			       m->idx, q->seq, q->len, bad);
	} else {
		nf->good++;
	}
}

static int nf_corrupt(struct nf *nf)
{
	int strict = getenv("ZSM_CHECKSUM") &&
		     !strcmp(getenv("ZSM_CHECKSUM"), "1");
	uint64_t t0, last = 0, now;
	int i, err, left;
	int64_t peer = 0;

	/* Rank 0's send comms and rank 1's receive comms carry the data. */
	if (nf_connect_all(nf, nf->o.comms, NF_WINDOW * NF_CORRUPT_MAX,
			   NCCL_PTR_HOST))
		return -1;
	if (nf_barrier(nf))
		return -1;
	nf_doing = "moving the messages";
	t0 = zsm_client_now_ns();
	last = t0;
	for (;;) {
		now = zsm_client_now_ns();
		left = 0;
		for (i = 0; i < nf->ncomm; i++) {
			struct nf_comm *m = &nf->comm[i];

			if (m->is_send != (nf->o.rank == 0))
				continue;
			while (!m->stopped && m->nreq < NF_WINDOW &&
			       m->posted < (uint64_t)nf->o.msgs) {
				size_t len = nf_corrupt_len(m->posted);
				int slot = nf_slot_take(m, NF_WINDOW), r;
				unsigned char *buf =
					m->region + (size_t)slot * NF_CORRUPT_MAX;

				if (m->is_send)
					nf_words_fill(buf, len,
						      nf_seed(0, m->idx,
							      m->posted));
				else
					memset(buf, 0, len);
				r = nf_post(nf, m, NF_TAG_STREAM, m->posted,
					    slot, buf, len, &err);
				if (r <= 0)
					nf_slot_put(m, slot);
				if (r < 0) {
					/* A failed comm refuses new work. */
					if (!m->is_send)
						nf->err_intact++;
					nf_note_err(m, err, now);
				}
				if (r <= 0)
					break;
				m->posted++;
				last = now;
			}
			for (int k = 0; k < m->nreq; k++) {
				struct nf_req *q = &m->reqs[k];
				int done = 0, size = -1, r;

				r = zsm_client_test(nf->c, q->req, &done,
						    &size);
				if (!r && !done)
					continue;
				if (!m->is_send)
					nf_corrupt_recv_done(nf, m, q, r, size);
				else if (r)
					nf_note_err(m, r, now);
				m->done++;
				last = now;
				nf_drop_req(m, k--);
			}
			left += !m->stopped && m->done < (uint64_t)nf->o.msgs;
			left += m->nreq;
		}
		if (!left)
			break;
		/*
		 * The receiver ends the run: a receive comm failed by an
		 * error leaves the sender's last sends waiting for ever.
		 */
		if (nf->o.rank == 0 && nf_ctl_ready(nf))
			break;
		if (nf->o.rank == 1 &&
		    now - last > (uint64_t)nf->o.drain_s * 1000 * NF_MS) {
			nf_fail(nf, "no request finished for %u s: a hang",
				nf->o.drain_s);
			break;
		}
		usleep(100);
	}
	now = zsm_client_now_ns();
	if (nf->o.rank == 0) {
		long long errs = 0, sent = 0;

		for (i = 0; i < nf->ncomm; i++) {
			if (!nf->comm[i].is_send)
				continue;
			errs += nf->comm[i].nerr;
			sent += (long long)nf->comm[i].done;
		}
		nf_say(nf, "%lld of %d sends on %d comms finished in %.3f s, "
			   "%lld of them with an error",
		       sent, nf->o.msgs * nf->o.comms, nf->o.comms,
		       nf_s(now - t0), errs);
	} else {
		long long total = nf->good + nf->silent + nf->err_altered +
				  nf->err_intact + nf->short_len;

		nf_say(nf, "received %lld messages in %.3f s: %lld intact and "
			   "good, %lld ALTERED BUT REPORTED GOOD, %lld errors "
			   "on altered data, %lld errors on intact data "
			   "(ZSM_CHECKSUM %s)",
		       total, nf_s(now - t0), nf->good, nf->silent,
		       nf->err_altered, nf->err_intact,
		       strict ? "=1: every altered message must fail"
			      : "off: informational");
		printf("undetected=%lld detected=%lld intact=%lld "
		       "errors_on_intact=%lld\n",
		       nf->silent, nf->err_altered, nf->good, nf->err_intact);
		if (strict && nf->silent)
			nf_fail(nf, "with ZSM_CHECKSUM=1, %lld altered "
				    "messages were reported as good receives",
				nf->silent);
	}
	/* The sender stays until the receiver has its verdict. */
	nf_swap(nf, nf->failures, &peer);
	/*
	 * The sender may close with sends outstanding (the receiver ended
	 * the run): its buffers stay allocated, so that this test judges
	 * the checksum alone, not what a plugin does with them after close
	 * (linkdown does).
	 */
	nf_close_all(nf, 0, 0);
	return 0;
}

/* ---- main */

static void nf_usage(void)
{
	fprintf(stderr,
		"usage: zsm-netfault --plugin SO --rank 0|1 --ctl PATH\n"
		"         --mode linkdown|congest|corrupt|stop|kill|refused "
		"[options]\n"
		"  --comms N     comm pairs each way (default 4)\n"
		"  --cut CMD     linkdown, rank 0: shell command taking the "
		"network down\n"
		"  --restore CMD linkdown, rank 0: shell command bringing it "
		"back\n"
		"  --bound S     linkdown, kill: seconds after the cut within "
		"which every\n"
		"                comm must fail; refused: the connect "
		"(default 20)\n"
		"  --hold S      congest: seconds before receives are posted; "
		"stop: how long\n"
		"                the peer is stopped (default 12)\n"
		"  --depth N     congest: sends per send comm (default 128)\n"
		"  --size B      congest: bytes per send (default 262144)\n"
		"  --msgs N      corrupt, stop: messages per comm (default 48)\n"
		"  --drain S     congest: seconds to drain after the hold; "
		"corrupt: longest\n"
		"                wait for any request (default 60)\n"
		"  --timeout S   the whole run's limit (default 300)\n");
}

static int nf_parse(int argc, char **argv, struct nf_opts *o)
{
	o->rank = -1;
	o->comms = 4;
	o->bound_s = 20;
	o->hold_s = 12;
	o->depth = 128;
	o->size = 262144;
	o->msgs = 48;
	o->drain_s = 60;
	o->timeout_s = 300;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			nf_usage();
			return -1;
		}
		i++;
		if (!strcmp(a, "--plugin"))
			o->plugin = v;
		else if (!strcmp(a, "--ctl"))
			o->ctl = v;
		else if (!strcmp(a, "--cut"))
			o->cut = v;
		else if (!strcmp(a, "--restore"))
			o->restore = v;
		else if (!strcmp(a, "--rank"))
			o->rank = atoi(v);
		else if (!strcmp(a, "--comms"))
			o->comms = atoi(v);
		else if (!strcmp(a, "--bound"))
			o->bound_s = (unsigned)atoi(v);
		else if (!strcmp(a, "--hold"))
			o->hold_s = (unsigned)atoi(v);
		else if (!strcmp(a, "--depth"))
			o->depth = atoi(v);
		else if (!strcmp(a, "--size"))
			o->size = (size_t)atol(v);
		else if (!strcmp(a, "--msgs"))
			o->msgs = atoi(v);
		else if (!strcmp(a, "--drain"))
			o->drain_s = (unsigned)atoi(v);
		else if (!strcmp(a, "--timeout"))
			o->timeout_s = (unsigned)atoi(v);
		else if (!strcmp(a, "--mode"))
			o->mode = !strcmp(v, "linkdown") ? NF_LINKDOWN
				  : !strcmp(v, "congest") ? NF_CONGEST
				  : !strcmp(v, "corrupt") ? NF_CORRUPT
				  : !strcmp(v, "stop")	  ? NF_STOP
				  : !strcmp(v, "kill")	  ? NF_KILL
				  : !strcmp(v, "refused") ? NF_REFUSED
							  : (enum nf_mode)-1;
		else {
			nf_usage();
			return -1;
		}
	}
	if (!o->plugin || !o->ctl || (o->rank != 0 && o->rank != 1) ||
	    (int)o->mode < 0 || o->comms < 1 || o->comms > NF_MAX_COMMS ||
	    o->depth < 1 || o->depth > NF_MAX_DEPTH || o->size < 8 ||
	    o->size > (64u << 20) || o->msgs < 1 || !o->timeout_s ||
	    (o->mode == NF_LINKDOWN && o->rank == 0 &&
	     (!o->cut || !o->restore))) {
		nf_usage();
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct nf nf;
	struct sigaction sa;
	int64_t peer_fail = 0;
	int r;

	if (nf_parse(argc, argv, &nf.o))
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = nf_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	alarm(nf.o.timeout_s);
	if (nf_ctl_open(&nf))
		return 1;
	if (nf_plugin_open(&nf))
		return 1;
	switch (nf.o.mode) {
	case NF_LINKDOWN:
		r = nf_linkdown(&nf);
		break;
	case NF_CONGEST:
		r = nf_congest(&nf);
		break;
	case NF_STOP:
		r = nf_stop(&nf);
		break;
	case NF_KILL:
		r = nf_kill(&nf);
		break;
	case NF_REFUSED:
		r = nf_refused(&nf);
		break;
	default:
		r = nf_corrupt(&nf);
		break;
	}
	nf_doing = "finishing";
	/* Each rank's verdict counts for both (kill, refused: the peer is
	 * gone by design, and rank 0's alone counts). */
	if (nf.o.mode != NF_KILL && nf.o.mode != NF_REFUSED &&
	    nf_swap(&nf, nf.failures + (r != 0), &peer_fail))
		nf.failures++;
	/* A finalize that hangs should not cost the whole run's limit. */
	nf_doing = "in finalize";
	alarm(60);
	zsm_client_finalize(nf.c);
	alarm(0);
	if (nf.failures || r) {
		printf("rank %d: FAIL (%d failures here, %lld on the peer)\n",
		       nf.o.rank, nf.failures, (long long)peer_fail);
		return 1;
	}
	printf("rank %d: PASS%s\n", nf.o.rank,
	       peer_fail ? " here, but the peer failed" : "");
	return peer_fail ? 1 : 0;
}
