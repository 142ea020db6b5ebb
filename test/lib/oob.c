/* SPDX-License-Identifier: MIT */
/*
 * The two-process harness: fork, socketpair, alarm-bounded waits, exit
 * status combination and the per-check runner.
 */
#include "oob.h"
#include "oob_net.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OOB_WHY_LEN 768

/* Failure reasons, shared by the oob_check driver and both ranks. */
struct oob_shared {
	char why[2][OOB_WHY_LEN];
	/* Set by oob_die just before rank 1 kills itself. */
	volatile sig_atomic_t rank1_dies;
};

static struct oob_shared *oob_shm;
static int oob_fd = -1;
static int oob_my_rank = -1;
static unsigned oob_timeout_s;
/* What this rank is doing, for the timeout message; see oob_doing. */
static const char *volatile oob_what;
/*
 * Rank 1's pid, whether the SIGCHLD handler reaped it and with what
 * status, and oob_finish's flag that from then on it reaps rank 1
 * itself.  The handler may run on any thread (plugin and driver threads
 * do not block SIGCHLD), so these are atomics (lock-free, safe in a
 * handler), not volatile: each is stored with release and loaded with
 * acquire, so status is visible once reaped is.
 */
static atomic_int oob_child;
static atomic_int oob_child_reaped;
static atomic_int oob_finishing;
static atomic_int oob_child_status;
/* Across hosts: the stream of the check this process runs, or -1. */
static int oob_pair_fd = -1;
/* oob_set_idle */
static int (*oob_idle)(void *arg);
static void *oob_idle_arg;
/* Inside oob_isolated's child: its reason goes to oob_isolated_fd. */
static int oob_in_isolated;
static int oob_isolated_fd = -1;

/* Acquire: pairs with the release stores of oob_set (any thread). */
static int oob_get(atomic_int *v)
{
	return atomic_load_explicit(v, memory_order_acquire);
}

static void oob_set(atomic_int *v, int x)
{
	atomic_store_explicit(v, x, memory_order_release);
}

static void oob_write_str(const char *s)
{
	ssize_t r = write(STDERR_FILENO, s, strlen(s));

	(void)r;
}

/* Async-signal-safe unsigned to text. */
static void oob_utoa(unsigned v, char *buf)
{
	char tmp[16];
	int n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
}

/* Record a reason from a signal handler: only plain stores. */
static void oob_note_parts(int rank, const char *a, const char *b,
			   const char *c, const char *d)
{
	const char *parts[4] = { a, b, c, d };
	char *dst;
	size_t n = 0, k;
	int i;

	if (!oob_shm || rank < 0 || rank > 1 || oob_shm->why[rank][0])
		return;
	dst = oob_shm->why[rank];
	for (i = 0; i < 4; i++)
		for (k = 0; parts[i] && parts[i][k] && n < OOB_WHY_LEN - 1; k++)
			dst[n++] = parts[i][k];
	dst[n] = '\0';
}

static void oob_note_raw(int rank, const char *a, const char *b, const char *c)
{
	oob_note_parts(rank, a, b, c, NULL);
}

static void oob_on_alarm(int sig)
{
	const char *what = oob_what;
	char num[16];

	(void)sig;
	oob_utoa(oob_timeout_s, num);
	oob_note_parts(oob_my_rank, "timed out after ", num,
		       what ? " s while " : " s", what);
	oob_write_str(oob_my_rank == 1 ? "oob: rank 1: timed out after "
				       : "oob: rank 0: timed out after ");
	oob_write_str(num);
	oob_write_str(what ? " s while " : " s");
	if (what)
		oob_write_str(what);
	oob_write_str("\n");
	if (oob_my_rank == 0 && oob_get(&oob_child) > 0)
		kill(oob_get(&oob_child), SIGKILL);
	_exit(OOB_FAIL);
}

/* Rank 0: rank 1 ended by the SIGKILL of oob_die, not by accident. */
static int oob_died_on_purpose(int st)
{
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && oob_shm &&
	       oob_shm->rank1_dies;
}

/* Rank 0: the peer ended; a non-zero end ends us too. */
static void oob_on_child(int sig)
{
	int child = oob_get(&oob_child), saved = errno;
	char num[16];
	int st;

	(void)sig;
	/* Plugin threads do not block SIGCHLD: this may run on any thread. */
	if (oob_get(&oob_finishing) || child <= 0 ||
	    waitpid(child, &st, WNOHANG) != child) {
		errno = saved; /* the interrupted code may be reading it */
		return;
	}
	oob_set(&oob_child_status, st);
	oob_set(&oob_child_reaped, 1);
	if ((WIFEXITED(st) && WEXITSTATUS(st) == OOB_PASS) ||
	    oob_died_on_purpose(st)) {
		errno = saved;
		return;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == OOB_SKIP)
		_exit(OOB_SKIP);
	if (WIFSIGNALED(st)) {
		oob_utoa((unsigned)WTERMSIG(st), num);
		oob_note_raw(1, "killed by signal ", num, NULL);
		oob_write_str("oob: rank 1 killed by signal ");
		oob_write_str(num);
		oob_write_str("\n");
	} else {
		oob_utoa((unsigned)WEXITSTATUS(st), num);
		oob_note_raw(1, "exited with status ", num,
			     " without a reason (a crash? see stderr)");
	}
	_exit(OOB_FAIL);
}

int oob_rank(void)
{
	return oob_my_rank;
}

void oob_set_timeout(unsigned timeout_s)
{
	oob_timeout_s = timeout_s;
	alarm(timeout_s);
}

void oob_doing(const char *what)
{
	oob_what = what;
}

/* Across hosts: no fork; the partner is already at the other end. */
static int oob_start_joined(unsigned timeout_s)
{
	oob_fd = oob_pair_fd >= 0 ? oob_pair_fd : oob_net_ctl_fd();
	oob_my_rank = oob_net_pair_rank();
	oob_set(&oob_child, 0);
	oob_set_timeout(timeout_s);
	return oob_my_rank;
}

int oob_start(unsigned timeout_s)
{
	struct sigaction sa;
	pid_t parent = getpid(), pid;
	int sv[2];

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = oob_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	if (oob_net_joined())
		return oob_start_joined(timeout_s);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		perror("oob: socketpair");
		return -1;
	}

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("oob: fork");
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		/* Die with rank 0, even if it died before prctl ran. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(OOB_FAIL);
		close(sv[0]);
		oob_fd = sv[1];
		oob_my_rank = 1;
		oob_set(&oob_child, 0);
	} else {
		close(sv[1]);
		oob_fd = sv[0];
		oob_my_rank = 0;
		oob_set(&oob_child, pid);
		oob_set(&oob_child_reaped, 0);
		oob_set(&oob_finishing, 0);
		sa.sa_handler = oob_on_child;
		sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
		sigaction(SIGCHLD, &sa, NULL);
	}
	oob_set_timeout(timeout_s);
	return oob_my_rank;
}

/*
 * The peer hung up.  When rank 1 failed, its own reason is the one worth
 * reading: give the SIGCHLD handler a moment to end us with that.
 */
static void oob_peer_gone(void)
{
	struct timespec ts = { 0, 10 * 1000000L };
	int i;

	if (oob_my_rank != 0 || oob_get(&oob_child) <= 0)
		return;
	for (i = 0; i < 200 && !oob_get(&oob_child_reaped); i++)
		nanosleep(&ts, NULL);
}

int oob_send(const void *buf, size_t len)
{
	if (!oob_net_send_all(oob_fd, buf, len))
		return 0;
	oob_peer_gone();
	fprintf(stderr, "oob: rank %d: send to peer: %s\n", oob_my_rank,
		strerror(errno));
	return -1;
}

void oob_set_idle(int (*idle)(void *arg), void *arg)
{
	oob_idle = idle;
	oob_idle_arg = arg;
}

/*
 * Until the peer's data is there, do the rank's idle work.  Any error is
 * left to the read that follows, which reports it.
 */
static void oob_wait_readable(void)
{
	struct pollfd pfd = { .fd = oob_fd, .events = POLLIN };
	int busy, r;

	if (!oob_idle)
		return;
	busy = oob_idle(oob_idle_arg);
	for (;;) {
		r = poll(&pfd, 1, busy ? 1 : -1);
		if (r > 0 || (r < 0 && errno != EINTR))
			return;
		if (r == 0)
			busy = oob_idle(oob_idle_arg);
	}
}

/* Bounded by the alarm, not by a deadline of its own. */
int oob_recv(void *buf, size_t len)
{
	oob_wait_readable();
	if (!oob_net_recv_all(oob_fd, buf, len, -1))
		return 0;
	oob_peer_gone();
	fprintf(stderr, "oob: rank %d: receive from peer: %s\n", oob_my_rank,
		errno == ECONNRESET ? "peer closed" : strerror(errno));
	return -1;
}

int oob_barrier(void)
{
	char token = 'b';

	if (oob_send(&token, 1) || oob_recv(&token, 1))
		return -1;
	return 0;
}

void oob_die(void)
{
	if (oob_my_rank != 1 || !oob_shm) {
		/* Not something rank 0 can survive: fail instead. */
		oob_fail("oob_die called by rank %d%s", oob_my_rank,
			 oob_shm ? "" : " outside oob_check");
		fflush(NULL);
		_exit(OOB_FAIL);
	}
	fflush(NULL);
	oob_shm->rank1_dies = 1;
	for (;;)
		kill(getpid(), SIGKILL);
}

static int oob_combine(int a, int b)
{
	if (a == OOB_FAIL || b == OOB_FAIL)
		return OOB_FAIL;
	if (a == OOB_PASS && b == OOB_PASS)
		return OOB_PASS;
	if ((a == OOB_PASS || a == OOB_SKIP) &&
	    (b == OOB_PASS || b == OOB_SKIP))
		return OOB_SKIP;
	return OOB_FAIL;
}

/*
 * Across hosts.  Inside a check the driver compares results.  Otherwise
 * (zsm-bench) both sides swap statuses; a failing side just hangs up, as
 * a byte it sent could be read as part of whatever the partner awaits.
 */
static int oob_finish_joined(int status)
{
	int32_t mine = status, theirs = OOB_FAIL;

	if (oob_pair_fd >= 0)
		return status;
	if (status != OOB_PASS) {
		shutdown(oob_fd, SHUT_RDWR);
		return oob_combine(status, OOB_PASS);
	}
	if (oob_net_send_all(oob_fd, &mine, sizeof(mine)) ||
	    oob_net_recv_all(oob_fd, &theirs, sizeof(theirs),
			     (int)(oob_timeout_s ? oob_timeout_s : 60) * 1000)) {
		fprintf(stderr, "oob: rank %d: partner rank %d gone before "
				"the end\n",
			oob_global_rank(), oob_net_partner());
		return OOB_FAIL;
	}
	return oob_combine(status, theirs);
}

int oob_finish(int status)
{
	sigset_t set, old;
	int st = 0, child;
	pid_t r, pid;

	alarm(0);
	if (oob_net_joined())
		return oob_finish_joined(status);
	if (oob_my_rank == 1) {
		fflush(NULL);
		_exit(status);
	}
	if (oob_my_rank != 0)
		return status;
	/* From here on we reap the child ourselves. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	oob_set(&oob_finishing, 1);
	pid = oob_get(&oob_child);
	if (status != OOB_PASS && !oob_get(&oob_child_reaped))
		kill(pid, SIGKILL);
	if (oob_get(&oob_child_reaped)) {
		st = oob_get(&oob_child_status);
	} else {
		/* Bounded: rank 1 has its own alarm and dies with us. */
		oob_set_timeout(oob_timeout_s ? oob_timeout_s : 60);
		do
			r = waitpid(pid, &st, 0);
		while (r < 0 && errno == EINTR);
		alarm(0);
		if (r != pid && oob_get(&oob_child_reaped))
			/* the handler got there first */
			st = oob_get(&oob_child_status);
		else if (r != pid)
			st = OOB_FAIL << 8;
	}
	oob_set(&oob_child, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(oob_fd);
	oob_fd = -1;
	if (status != OOB_PASS)
		return oob_combine(status, OOB_PASS);
	if (oob_died_on_purpose(st))
		return OOB_PASS;
	if (WIFEXITED(st))
		child = WEXITSTATUS(st);
	else
		child = OOB_FAIL;
	if (WIFSIGNALED(st)) {
		char why[64];

		snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(st));
		oob_note_raw(1, why, NULL, NULL);
	}
	return oob_combine(status, child);
}

static void oob_vnote(const char *kind, const char *fmt, va_list ap)
{
	char msg[OOB_WHY_LEN];
	int rank = oob_my_rank < 0 ? 0 : oob_my_rank;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (oob_in_isolated) {
		/* The first reason only; the parent reads it at the end. */
		if (oob_isolated_fd >= 0) {
			(void)oob_net_send_all(oob_isolated_fd, msg,
					       strlen(msg));
			close(oob_isolated_fd);
			oob_isolated_fd = -1;
		}
		return;
	}
	if (oob_shm) {
		oob_note_raw(rank, msg, NULL, NULL);
		if (getenv("OOB_VERBOSE"))
			fprintf(stderr, "%s rank %d: %s\n", kind, rank, msg);
	} else {
		fprintf(stderr, "%s: rank %d: %s\n", kind, rank, msg);
	}
}

int oob_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	oob_vnote("FAIL", fmt, ap);
	va_end(ap);
	return OOB_FAIL;
}

int oob_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	oob_vnote("SKIP", fmt, ap);
	va_end(ap);
	return OOB_SKIP;
}

static void oob_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The exit status of a runner as a check result. */
static int oob_runner_result(int st, int rank)
{
	char sig[48];

	if (WIFEXITED(st)) {
		st = WEXITSTATUS(st);
		return st == OOB_PASS || st == OOB_SKIP ? st : OOB_FAIL;
	}
	/* Across hosts the runner is rank 1 itself, and may die on purpose. */
	if (rank == 1 && oob_died_on_purpose(st))
		return OOB_PASS;
	if (WIFSIGNALED(st)) {
		snprintf(sig, sizeof(sig), "killed by signal %d", WTERMSIG(st));
		oob_note_raw(rank, sig, NULL, NULL);
	}
	return OOB_FAIL;
}

/* One side's outcome of a check, as the pair's drivers swap it. */
struct oob_outcome {
	int32_t result;
	char why[OOB_WHY_LEN];
};

/*
 * Across hosts: agree with the partner on the check, open a stream for it,
 * run this rank in a fresh process, and swap outcomes.  A partner that
 * fails or skips first stops our side at once, as the fork mode does.
 */
static int oob_check_pair(const char *name, oob_check_fn fn, void *arg,
			  unsigned timeout_s)
{
	int ctl = oob_net_ctl_fd(), me = oob_net_pair_rank(), other = 1 - me;
	int wait_ms = (int)(2 * timeout_s + 60) * 1000, st = 0, data, r;
	int mine = OOB_FAIL, got = 0, killed = 0, gone = 0, waited_ms = 0;
	struct pollfd pfd = { .fd = ctl, .events = POLLIN };
	struct oob_outcome out, in;
	char names[2][64];
	pid_t runner = -1;

	memset(names, 0, sizeof(names));
	snprintf(names[0], sizeof(names[0]), "%s", name);
	if (oob_net_send_all(ctl, names[0], sizeof(names[0])) ||
	    oob_net_recv_all(ctl, names[1], sizeof(names[1]), wait_ms)) {
		oob_note_raw(other, "partner gone before the check started",
			     NULL, NULL);
		return OOB_FAIL;
	}
	names[1][sizeof(names[1]) - 1] = '\0';
	if (strcmp(names[0], names[1])) {
		oob_note_parts(me, "the partner runs check '", names[1],
			       "': every rank must be given the same checks",
			       NULL);
		return OOB_FAIL;
	}
	data = oob_net_data_open(timeout_s);
	if (data < 0) {
		oob_note_raw(me, "no stream to the partner for this check",
			     NULL, NULL);
	} else {
		fflush(NULL);
		runner = fork();
		if (runner < 0)
			perror("oob: fork");
	}
	if (runner == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		oob_net_close_in_child(data);
		oob_pair_fd = data;
		r = oob_start(timeout_s);
		r = oob_finish(fn(r, arg));
		fflush(NULL);
		_exit(r);
	}
	if (data >= 0)
		close(data);
	/* The runner is bounded by its alarm; the limit is a backstop. */
	while (runner > 0) {
		r = waitpid(runner, &st, WNOHANG);
		if (r == runner) {
			mine = killed ? OOB_PASS : oob_runner_result(st, me);
			break;
		}
		if (r < 0 && errno != EINTR) {
			oob_note_raw(me, "lost the runner", NULL, NULL);
			break;
		}
		if (!got && !gone && poll(&pfd, 1, 5) > 0) {
			if (oob_net_recv_all(ctl, &in, sizeof(in), wait_ms)) {
				gone = 1;
				oob_note_raw(other, "partner's process gone",
					     NULL, NULL);
			} else {
				got = 1;
			}
			/* Our side's verdict no longer matters. */
			if (gone || in.result != OOB_PASS) {
				kill(runner, SIGKILL);
				killed = 1;
			}
		} else if (got || gone) {
			oob_sleep_ms(5);
		}
		waited_ms += 5;
		if (waited_ms >= (int)(timeout_s + 10) * 1000 && !killed) {
			kill(runner, SIGKILL);
			waitpid(runner, &st, 0);
			oob_note_raw(me, "runner did not end", NULL, NULL);
			break;
		}
	}
	memset(&out, 0, sizeof(out));
	out.result = mine;
	memcpy(out.why, oob_shm->why[me], sizeof(out.why));
	if (gone || oob_net_send_all(ctl, &out, sizeof(out)))
		return OOB_FAIL;
	if (!got && oob_net_recv_all(ctl, &in, sizeof(in), wait_ms)) {
		oob_note_raw(other, "partner sent no result", NULL, NULL);
		return OOB_FAIL;
	}
	in.why[sizeof(in.why) - 1] = '\0';
	if (!oob_shm->why[other][0])
		memcpy(oob_shm->why[other], in.why, sizeof(in.why));
	return oob_combine(mine, in.result == OOB_PASS || in.result == OOB_SKIP
				       ? in.result
				       : OOB_FAIL);
}

/* The child's reason, read once it has ended (it is short). */
static void oob_isolated_reason(int fd, char *why, size_t len)
{
	size_t got = 0;
	ssize_t r;

	while (got + 1 < len) {
		r = read(fd, why + got, len - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	why[got] = '\0';
}

int oob_isolated(int (*fn)(void *arg), void *arg, unsigned timeout_s,
		 char *why, size_t len)
{
	unsigned waited_ms = 0, limit_ms = (timeout_s + 5) * 1000, step;
	struct sigaction sa;
	int fds[2], st = 0, result, overdue = 0;
	const char *sig;
	pid_t pid, r;

	why[0] = '\0';
	if (pipe2(fds, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return OOB_FAIL;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return OOB_FAIL;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		/* None of the rank's handlers: a ringing alarm kills this
		 * child alone, and it has no peer to reap or kill. */
		memset(&sa, 0, sizeof(sa));
		sigemptyset(&sa.sa_mask);
		sa.sa_handler = SIG_DFL;
		sigaction(SIGALRM, &sa, NULL);
		sigaction(SIGCHLD, &sa, NULL);
		oob_set(&oob_child, 0);
		oob_in_isolated = 1;
		oob_isolated_fd = fds[1];
		alarm(timeout_s);
		result = fn(arg);
		fflush(NULL);
		_exit(result);
	}
	close(fds[1]);
	/* The child's alarm bounds it; this is a backstop. */
	for (;;) {
		r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			snprintf(why, len, "lost the child: %s",
				 strerror(errno));
			close(fds[0]);
			return OOB_FAIL;
		}
		if (waited_ms >= limit_ms) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			overdue = 1;
			break;
		}
		/* The rank's own requests go on meanwhile. */
		step = oob_idle && oob_idle(oob_idle_arg) ? 1 : 5;
		oob_sleep_ms(step);
		waited_ms += step;
	}
	oob_isolated_reason(fds[0], why, len);
	close(fds[0]);
	if (!overdue && WIFEXITED(st)) {
		result = WEXITSTATUS(st);
		if (result == OOB_PASS || result == OOB_SKIP ||
		    (result == OOB_FAIL && why[0]))
			return result;
		snprintf(why, len, "exited with status %d without a reason "
				   "(valgrind's error status? see stderr)",
			 result);
		return OOB_FAIL;
	}
	if (overdue || WTERMSIG(st) == SIGALRM) {
		snprintf(why, len, "still running after %u s", timeout_s);
		return OOB_FAIL;
	}
	sig = sigabbrev_np(WTERMSIG(st));
	snprintf(why, len, "crashed (SIG%s)", sig ? sig : "?");
	return OOB_FAIL;
}

/* One host: a runner process forks the pair. */
static int oob_check_fork(oob_check_fn fn, void *arg, unsigned timeout_s)
{
	unsigned waited_ms = 0, limit_ms = (timeout_s + 10) * 1000;
	int st = 0, result, rank;
	pid_t runner, r;

	fflush(NULL);
	runner = fork();
	if (runner < 0) {
		perror("oob: fork");
		return OOB_FAIL;
	}
	if (runner == 0) {
		rank = oob_start(timeout_s);
		if (rank < 0)
			_exit(OOB_FAIL);
		result = fn(rank, arg);
		result = oob_finish(result);
		fflush(NULL);
		_exit(result);
	}
	/* The runner is bounded by its alarm; this is only a backstop. */
	for (;;) {
		r = waitpid(runner, &st, WNOHANG);
		if (r == runner)
			break;
		if (r < 0 && errno != EINTR) {
			st = OOB_FAIL << 8;
			break;
		}
		if (waited_ms >= limit_ms) {
			kill(runner, SIGKILL);
			waitpid(runner, &st, 0);
			oob_note_raw(0, "runner did not end", NULL, NULL);
			st = OOB_FAIL << 8;
			break;
		}
		oob_sleep_ms(5);
		waited_ms += 5;
	}
	return oob_runner_result(st, 0);
}

int oob_check(const char *name, const char *what, const char *rule,
	      oob_check_fn fn, void *arg, unsigned timeout_s)
{
	char why[2 * OOB_WHY_LEN + 32], pair[48] = "";
	int result, rank, joined = oob_net_joined();

	if (!oob_shm) {
		oob_shm = mmap(NULL, sizeof(*oob_shm), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (oob_shm == MAP_FAILED) {
			oob_shm = NULL;
			perror("oob: mmap");
			return OOB_FAIL;
		}
	}
	memset(oob_shm, 0, sizeof(*oob_shm));
	if (joined)
		result = oob_check_pair(name, fn, arg, timeout_s);
	else
		result = oob_check_fork(fn, arg, timeout_s);

	/* One line per pair: the even rank prints it. */
	if (joined && oob_net_pair_rank())
		return result;
	if (joined && oob_global_size() > 2)
		snprintf(pair, sizeof(pair), "[ranks %d-%d] ",
			 oob_global_rank(), oob_global_rank() + 1);
	why[0] = '\0';
	for (rank = 0; rank < 2; rank++) {
		size_t used = strlen(why);

		if (!oob_shm->why[rank][0])
			continue;
		snprintf(why + used, sizeof(why) - used, "%srank %d: %s",
			 used ? "; " : "", joined ? oob_global_rank() + rank
						  : rank,
			 oob_shm->why[rank]);
	}
	if (result == OOB_PASS && what)
		printf("%sPASS %s: %s\n", pair, name, what);
	else if (result == OOB_PASS)
		printf("%sPASS %s\n", pair, name);
	else if (result == OOB_SKIP)
		printf("%sSKIP %s: %s\n", pair, name, why[0] ? why : "skipped");
	else
		printf("%sFAIL %s: %s%s%s%s\n", pair, name,
		       why[0] ? why
			      : "a rank ended with a failure status but no "
				"reason (a crash? see stderr)",
		       rule ? " [rule: " : "", rule ? rule : "",
		       rule ? "]" : "");
	fflush(stdout);
	return result;
}
