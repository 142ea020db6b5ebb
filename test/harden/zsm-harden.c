/* SPDX-License-Identifier: MIT */
/*
 * zsm-harden: what misuse, forks and hostile peers do to a plugin, through
 * its ncclNetPlugin table as NCCL reaches it.  Each case is one numbered
 * finding of issue 12 (see the table at the end); each runs in fresh
 * forked processes with a time limit and prints PASS, SKIP or FAIL.
 *
 *   zsm-harden --plugin PATH [--case NAME[,NAME...]] [--list]
 *
 * Pointed at an older build of the plugin, a case shows the finding: that
 * is how each regression test was shown to fail before its fix.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harden.h"

struct h_opts h_opts = {.plugin = NULL, .scale = 1};

int h_open(struct h_ctx *x, int rank)
{
	int ndev = -1, r;

	memset(x, 0, sizeof(*x));
	x->rank = rank;
	r = zsm_client_open(h_opts.plugin, 12, &x->c);
	H_EXPECT(!r, "open %s: %s", h_opts.plugin, zsm_client_result_str(r));
	r = zsm_client_init(x->c, 0x68617264u);
	H_EXPECT(!r, "init returned %s", zsm_client_result_str(r));
	H_CALL(zsm_client_devices(x->c, &ndev));
	H_EXPECT(ndev > 0, "no device");
	return OOB_PASS;
}

int h_connect(struct h_ctx *x, int listener, void **send, void **recv)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	const char *what;
	void *listen = NULL;
	int r;

	if (x->rank == listener) {
		memset(handle, 0, sizeof(handle));
		H_CALL(zsm_client_listen(x->c, 0, handle, &listen));
		H_OOB(oob_send(handle, sizeof(handle)));
		r = zsm_client_connect_accept(x->c, 0, NULL, listen, NULL,
					      recv, H_MS(20000), &what);
		H_EXPECT(!r, "%s returned %s", what, zsm_client_result_str(r));
		H_CALL(zsm_client_close_listen(x->c, listen));
	} else {
		H_OOB(oob_recv(handle, sizeof(handle)));
		r = zsm_client_connect_accept(x->c, 0, handle, NULL, send, NULL,
					      H_MS(20000), &what);
		H_EXPECT(!r, "%s returned %s", what, zsm_client_result_str(r));
	}
	return OOB_PASS;
}

int h_setup(struct h_ctx *x, int rank)
{
	H_TRY(h_open(x, rank));
	/* Rank 0 sends to rank 1 on the pair's first connection. */
	H_TRY(h_connect(x, 1, &x->send, &x->recv));
	H_OOB(oob_barrier());
	return OOB_PASS;
}

int h_post_send(struct h_ctx *x, void *comm, void *data, size_t size, int tag,
		void *mh, void **req)
{
	uint64_t t0 = zsm_client_now_ns();
	int r;

	for (;;) {
		*req = NULL;
		r = zsm_client_isend(x->c, comm, data, size, tag, mh, req);
		H_EXPECT(!r, "isend(%zu bytes) returned %s", size,
			 zsm_client_result_str(r));
		if (*req)
			return OOB_PASS;
		H_EXPECT(zsm_client_now_ns() - t0 < H_NS(20000),
			 "isend kept returning a NULL request");
	}
}

int h_post_recv(struct h_ctx *x, void *comm, void *data, size_t size, int tag,
		void *mh, void **req)
{
	uint64_t t0 = zsm_client_now_ns();
	int r;

	for (;;) {
		*req = NULL;
		r = zsm_client_irecv(x->c, comm, 1, &data, &size, &tag, &mh,
				     req);
		H_EXPECT(!r, "irecv(%zu bytes) returned %s", size,
			 zsm_client_result_str(r));
		if (*req)
			return OOB_PASS;
		H_EXPECT(zsm_client_now_ns() - t0 < H_NS(20000),
			 "irecv kept returning a NULL request");
	}
}

int h_wait(struct h_ctx *x, void *req, int *size, const char *what)
{
	int r = zsm_client_wait(x->c, req, size, H_MS(20000));

	H_EXPECT(r != ZSM_CLIENT_TIMEOUT, "%s: not done in time", what);
	H_EXPECT(!r, "%s: test returned %s", what, zsm_client_result_str(r));
	return OOB_PASS;
}

/* One message from rank 0 to rank 1, every byte checked. */
int h_exchange(struct h_ctx *x, size_t size, unsigned char seed)
{
	unsigned char *buf = malloc(size ? size : 1);
	void *req;
	int got = -1, st;

	H_EXPECT(buf, "out of memory");
	if (x->rank == 0) {
		for (size_t i = 0; i < size; i++)
			buf[i] = (unsigned char)(seed + i * 7);
		st = h_post_send(x, x->send, buf, size, 1, NULL, &req);
		if (st == OOB_PASS)
			st = h_wait(x, req, NULL, "send");
	} else {
		memset(buf, 0, size ? size : 1);
		st = h_post_recv(x, x->recv, buf, size, 1, NULL, &req);
		if (st == OOB_PASS)
			st = h_wait(x, req, &got, "receive");
		for (size_t i = 0; st == OOB_PASS && i < size; i++)
			if (buf[i] != (unsigned char)(seed + i * 7))
				st = oob_fail("byte %zu of %zu arrived wrong",
					      i, size);
		if (st == OOB_PASS && got != (int)size)
			st = oob_fail("received size %d, sent %zu", got, size);
	}
	free(buf);
	return st;
}

long h_rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Lines with text in what fd has had written to it so far. */
int h_log_lines(int fd, const char *text)
{
	char buf[4096];
	int lines = 0;
	FILE *f;

	lseek(fd, 0, SEEK_SET);
	f = fdopen(dup(fd), "r");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		lines += strstr(buf, text) != NULL;
	fclose(f);
	return lines;
}

int h_log_capture(int *saved)
{
	char path[] = "/tmp/zsm-harden-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	*saved = dup(2);
	dup2(fd, 2);
	return fd;
}

int h_teardown(struct h_ctx *x)
{
	if (x->send)
		H_CALL(zsm_client_close_send(x->c, x->send));
	if (x->recv)
		H_CALL(zsm_client_close_recv(x->c, x->recv));
	H_CALL(zsm_client_finalize(x->c));
	zsm_client_close(x->c);
	x->c = NULL;
	return OOB_PASS;
}

/* The case table: name, the issue's case, what a pass shows. */
static const struct h_case h_cases[] = {
	{"misuse", h_case_misuse, 60, "3, 9",
	 "double closes, stale requests, NULL and bad arguments: clear "
	 "errors, no crash"},
	{"fork", h_case_fork, 120, "4",
	 "a child forked after init fails its calls at once, exits without "
	 "hanging and leaves the parent's comms working"},
	{"connect_abandon", h_case_connect_abandon, 120, "2",
	 "100 connects started and left expire; a fresh one works"},
	{"refused_fast", h_case_refused_fast, 120, "2",
	 "a closed listener, a wrong nonce and a dead listener refuse at "
	 "once"},
	{"bad_address", h_case_bad_address, 60, "5",
	 "addresses of another family are refused; later connects work"},
	{"inject", h_case_inject, 60, "6",
	 "data from a process that is not the peer never lands in a receive"},
	{"preload", h_case_preload, 60, "6",
	 "data sent before a comm exists is not its first message"},
	{"probe_oversize", h_case_probe_oversize, 60, "6",
	 "oversized and malformed control messages fail no comm"},
	{"forged_ack", h_case_forged_ack, 60, "6",
	 "forged connection answers (ids past the tag's id bits) are "
	 "dropped"},
	{"fd_steal", h_case_fd_steal, 60, "6",
	 "a connection request naming another process's fd takes no fd"},
	{"replay", h_case_replay, 60, "7",
	 "a request replayed 50 times is one connection, never accepted in "
	 "place of the real one"},
	{"strays", h_case_strays, 90, "7",
	 "20000 messages for no live comm do not stay in memory"},
	{"strays_behind", h_case_strays_behind, 90, "32.6",
	 "strays behind a message a live comm keeps are dropped; the kept "
	 "one arrives"},
	{"strays_connect", h_case_strays_connect, 90, "32.6",
	 "a comm made while strays keep coming gets its early messages"},
	{"early", h_case_early, 120, "7",
	 "a sender 20000 messages ahead of its receiver costs it no memory; "
	 "every message arrives once receives are posted"},
	{"early_peer", h_case_early_peer, 90, "32.6",
	 "20 comms of one peer sending their early messages at once stop "
	 "none of them, whatever order the receives come in"},
	{"close_held", h_case_close_held, 60, "2",
	 "a close with sends waiting for receives never posted does not "
	 "wait for them"},
	{"ctrl_junk", h_case_ctrl_junk, 60, "9",
	 "2000 malformed control messages give a few log lines, not 2000"},
	{"ctrl_flood", h_case_ctrl_flood, 90, "32.5",
	 "under 8000 junk control messages a second a connect is answered "
	 "within 1 s and a live comm keeps working"},
	{"fd_limit", h_case_fd_limit, 120, "10",
	 "out of fds, every comm still notices its peer's death"},
	{"finalize_queued", h_case_finalize_queued, 60, "32.5",
	 "finalize with 400 untested sends and the comm open posts none of "
	 "them"},
	{"deliver_held", h_case_deliver_held, 90, "32.1",
	 "a message sent early reaches its receive, posted behind more "
	 "receives than the provider holds"},
};
#define H_NCASES (sizeof(h_cases) / sizeof(h_cases[0]))

static int h_selected(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return 1;
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *only = NULL, *scale = getenv("ZSM_TEST_TIME_SCALE");
	const char *preload = getenv("LD_PRELOAD");
	int passed = 0, failed = 0, skipped = 0;

	/* A rank that fails returns without its teardown, and ASan's abort
	 * at exit (a leak, abort_on_error=1) drops a full stdout buffer:
	 * the FAIL line must be out before that. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--plugin") && i + 1 < argc) {
			h_opts.plugin = argv[++i];
		} else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--list")) {
			for (size_t k = 0; k < H_NCASES; k++)
				printf("%-16s case %-6s %s\n", h_cases[k].name,
				       h_cases[k].issue, h_cases[k].what);
			return 0;
		} else {
			fprintf(stderr,
				"usage: zsm-harden --plugin PATH [--case "
				"NAME,...] [--list]\n");
			return 2;
		}
	}
	if (!h_opts.plugin) {
		fprintf(stderr, "zsm-harden: --plugin is required\n");
		return 2;
	}
	if (scale && atoi(scale) >= 1)
		h_opts.scale = atoi(scale);
	else if (preload && strstr(preload, "vgpreload"))
		h_opts.scale = 10;
	for (size_t k = 0; k < H_NCASES; k++) {
		int r;

		if (only && !h_selected(only, h_cases[k].name))
			continue;
		r = oob_check(h_cases[k].name, h_cases[k].what, NULL,
			      h_cases[k].fn, NULL,
			      h_cases[k].timeout_s * h_opts.scale);
		passed += r == OOB_PASS;
		skipped += r == OOB_SKIP;
		failed += r == OOB_FAIL;
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	if (failed)
		return 1;
	return passed ? 0 : 77;
}
