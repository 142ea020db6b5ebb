/* SPDX-License-Identifier: MIT */
/*
 * zsm's bootstrap (plugin/boot/) with forked ranks on this host: exact
 * collectives for 2 to 8 ranks, init from faked launcher environments,
 * and the failures every rank must see (a stray id, duplicate ranks,
 * mismatched sizes, a rank killed or silent, rank 0 missing).  Each rank
 * checks its own results and exits 0 when they are what it expected.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot/boot.h"
#include "boot/boot_int.h"
#include "common/param.h"
#include "log_capture.h"
#include "zsm_test.h"

/* Generous: only a broken bootstrap waits this long. */
#define LONG_MS 60000
#define MIB (1u << 20)

#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "# rank %d: %s:%d: %s\n", rank,       \
				__FILE__, __LINE__, #c);                      \
			return 1;                                             \
		}                                                             \
	} while (0)

typedef int (*rank_fn)(int rank, int nranks, const struct zsm_boot_id *id,
		       void *arg);

static pid_t spawn(rank_fn fn, int rank, int nranks,
		   const struct zsm_boot_id *id, void *arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int ret = fn(rank, nranks, id, arg);

		fflush(NULL);
		_exit(ret);
	}
	assert_true(pid > 0);
	return pid;
}

/* The child's exit status, or 128 + the signal that ended it. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* nranks ranks of fn on a fresh id; every one must exit 0. */
static void run_all(rank_fn fn, int nranks, void *arg)
{
	struct zsm_boot_id id;
	pid_t pids[8];

	assert_int_equal(zsm_boot_id_new(&id), 0);
	for (int r = 0; r < nranks; r++)
		pids[r] = spawn(fn, r, nranks, &id, arg);
	/* rank 0's child holds the listener now; this copy must not keep
	 * it open after rank 0 is gone. */
	zsm_boot_id_drop(&id);
	for (int r = 0; r < nranks; r++) {
		int st = reap(pids[r]);

		if (st != 0)
			fail_msg("rank %d of %d exited with %d", r, nranks,
				 st);
	}
}

static unsigned char pattern(int rank, size_t size, size_t i)
{
	return (unsigned char)(rank * 37 + i * 13 + (i >> 8) * 7 + size);
}

/* The first byte of n blocks of size that is not the pattern, or -1. */
static long long first_wrong(const unsigned char *buf, int n, size_t size,
			     int skip_rank)
{
	for (int r = 0; r < n; r++) {
		if (r == skip_rank)
			continue;
		for (size_t i = 0; i < size; i++)
			if (buf[(size_t)r * size + i] != pattern(r, size, i))
				return (long long)((size_t)r * size + i);
	}
	return -1;
}

/* Incremented by each rank as it enters the barrier (shared mapping). */
static int *arrived;

static int rank_exact(int rank, int n, const struct zsm_boot_id *id,
		      void *arg)
{
	static const size_t sizes[] = {0, 1, 13, 4099, MIB};
	struct zsm_boot *b;
	unsigned char *buf = malloc((size_t)n * MIB);

	(void)arg;
	CHECK(buf);
	CHECK(zsm_boot_init(id, rank, n, LONG_MS, &b) == 0);
	CHECK(zsm_boot_rank(b) == rank && zsm_boot_nranks(b) == n);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t s = sizes[k];

		memset(buf, 0xee, (size_t)n * s);
		for (size_t i = 0; i < s; i++)
			buf[(size_t)rank * s + i] = pattern(rank, s, i);
		CHECK(zsm_boot_allgather(b, buf, s) == 0);
		CHECK(first_wrong(buf, n, s, -1) == -1);
	}
	for (int root = 0; root < n; root++) {
		size_t s = 65537 + (size_t)root;

		for (size_t i = 0; i < s; i++)
			buf[i] = rank == root ? pattern(root, s, i) : 0xee;
		CHECK(zsm_boot_bcast(b, buf, s, root) == 0);
		for (size_t i = 0; i < s; i++)
			CHECK(buf[i] == pattern(root, s, i));
	}
	/* The last rank comes late, so that a barrier that lets anyone
	 * through early is seen to. */
	if (rank == n - 1)
		poll(NULL, 0, 100);
	/* seq_cst: pairs with the other ranks' loads after their barrier;
	 * the barrier's messages order it across processes. */
	__atomic_fetch_add(arrived, 1, __ATOMIC_SEQ_CST);
	CHECK(zsm_boot_barrier(b) == 0);
	/* seq_cst: pairs with every rank's add before its barrier. */
	CHECK(__atomic_load_n(arrived, __ATOMIC_SEQ_CST) == n);
	zsm_boot_fini(b);
	free(buf);
	return 0;
}

static void test_boot_collectives_exact_1_2_3_4_8_ranks(void **state)
{
	static const int counts[] = {1, 2, 3, 4, 8};

	(void)state;
	arrived = mmap(NULL, sizeof(*arrived), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(arrived != MAP_FAILED);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		*arrived = 0;
		run_all(rank_exact, counts[i], NULL);
	}
	munmap(arrived, sizeof(*arrived));
}

/* A short allgather of ranks' numbers, checked. */
static int gather_ranks(struct zsm_boot *b, int rank, int n)
{
	int got[8];

	for (int r = 0; r < n; r++)
		got[r] = r == rank ? rank * 1000 + 7 : -1;
	CHECK(zsm_boot_allgather(b, got, sizeof(int)) == 0);
	for (int r = 0; r < n; r++)
		CHECK(got[r] == r * 1000 + 7);
	return 0;
}

/* Launcher variables a test's children set, cleared first. */
static const char *const launcher_vars[] = {
	"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"OMPI_MCA_orte_hnp_uri", "PMIX_NAMESPACE", "SLURM_PROCID",
	"SLURM_NTASKS", "SLURM_JOB_ID", "PMI_RANK", "PMI_SIZE",
	"TORCHELASTIC_RUN_ID", "ZSM_BOOT_ADDR", "ZSM_BOOT_NONCE",
};

enum launcher { TORCHRUN, OPEN_MPI, SLURM };

struct env_case {
	enum launcher who;
	int port;
};

static int rank_env(int rank, int n, const struct zsm_boot_id *unused,
		    void *arg)
{
	const struct env_case *c = arg;
	struct zsm_boot_id id;
	struct zsm_boot *b;
	char num[32];
	int got_rank = -1, got_n = -1;

	(void)unused;
	for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(char *); i++)
		unsetenv(launcher_vars[i]);
	switch (c->who) {
	case TORCHRUN:
		snprintf(num, sizeof(num), "%d", rank);
		setenv("RANK", num, 1);
		snprintf(num, sizeof(num), "%d", n);
		setenv("WORLD_SIZE", num, 1);
		setenv("MASTER_ADDR", "127.0.0.1", 1);
		/* zsm takes MASTER_PORT + 1. */
		snprintf(num, sizeof(num), "%d", c->port - 1);
		setenv("MASTER_PORT", num, 1);
		setenv("TORCHELASTIC_RUN_ID", "boot-test", 1);
		break;
	case OPEN_MPI:
		snprintf(num, sizeof(num), "%d", rank);
		setenv("OMPI_COMM_WORLD_RANK", num, 1);
		snprintf(num, sizeof(num), "%d", n);
		setenv("OMPI_COMM_WORLD_SIZE", num, 1);
		setenv("OMPI_MCA_orte_hnp_uri",
		       "4242.0;tcp://127.0.0.1:1234", 1);
		snprintf(num, sizeof(num), "127.0.0.1:%d", c->port);
		setenv("ZSM_BOOT_ADDR", num, 1);
		break;
	case SLURM:
		snprintf(num, sizeof(num), "%d", rank);
		setenv("SLURM_PROCID", num, 1);
		snprintf(num, sizeof(num), "%d", n);
		setenv("SLURM_NTASKS", num, 1);
		setenv("SLURM_JOB_ID", "99", 1);
		/* A name, through the resolver. */
		snprintf(num, sizeof(num), "localhost:%d", c->port);
		setenv("ZSM_BOOT_ADDR", num, 1);
		break;
	}
	CHECK(zsm_param_load(NULL) == 0);
	CHECK(zsm_boot_env(&got_rank, &got_n, &id) == 0);
	CHECK(got_rank == rank && got_n == n);
	CHECK(zsm_boot_init(&id, got_rank, got_n, LONG_MS, &b) == 0);
	CHECK(gather_ranks(b, rank, n) == 0);
	zsm_boot_fini(b);
	return 0;
}

/* A port nobody on loopback listens on now (the kernel's choice). */
static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(s);
	return port;
}

/*
 * A port for zsm whose port - 1 is held by a listener, as torchrun's store
 * holds MASTER_PORT: zsm must keep off it.  *store: that listener.
 */
static int port_above_store(int *store)
{
	for (int tries = 0; tries < 100; tries++) {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_addr.s_addr =
						 htonl(INADDR_LOOPBACK)};
		socklen_t len = sizeof(sa);
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), t;

		assert_true(s >= 0);
		assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)),
				 0);
		assert_int_equal(listen(s, 1), 0);
		assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &len),
				 0);
		/* Is the port above it free too? */
		sa.sin_port = htons(ntohs(sa.sin_port) + 1);
		t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(t >= 0);
		if (ntohs(sa.sin_port) != 0 &&
		    bind(t, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(t);
			*store = s;
			return ntohs(sa.sin_port);
		}
		close(t);
		close(s);
	}
	fail_msg("no two free neighbouring ports on loopback");
	return -1;
}

static void run_env(enum launcher who, int n)
{
	struct env_case c = {.who = who};
	int store = -1;
	pid_t pids[8];

	if (who == TORCHRUN)
		c.port = port_above_store(&store);
	else
		c.port = free_port();

	for (int r = 0; r < n; r++)
		pids[r] = spawn(rank_env, r, n, NULL, &c);
	for (int r = 0; r < n; r++) {
		int st = reap(pids[r]);

		if (st != 0)
			fail_msg("launcher %d: rank %d exited with %d", who,
				 r, st);
	}
	if (store >= 0)
		close(store);
}

static void test_boot_env_torchrun(void **state)
{
	(void)state;
	run_env(TORCHRUN, 3);
}

static void test_boot_env_open_mpi(void **state)
{
	(void)state;
	run_env(OPEN_MPI, 2);
}

static void test_boot_env_slurm(void **state)
{
	(void)state;
	run_env(SLURM, 4);
}

/* A launcher that gives a rank but no size, or garbage, is refused. */
static void test_boot_env_incomplete_refused(void **state)
{
	struct zsm_boot_id id;
	int rank, n;

	(void)state;
	for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(char *); i++)
		unsetenv(launcher_vars[i]);
	assert_int_equal(zsm_boot_env(&rank, &n, &id), -ENOENT);
	setenv("PMI_RANK", "1", 1);
	assert_int_equal(zsm_boot_env(&rank, &n, &id), -EINVAL);
	setenv("PMI_SIZE", "1", 1); /* rank 1 of 1 */
	assert_int_equal(zsm_boot_env(&rank, &n, &id), -EINVAL);
	setenv("PMI_SIZE", "2x", 1);
	assert_int_equal(zsm_boot_env(&rank, &n, &id), -EINVAL);
	setenv("PMI_SIZE", "2", 1);
	/* Rank and size, but no address. */
	assert_int_equal(zsm_boot_env(&rank, &n, &id), -ENOENT);
	unsetenv("PMI_RANK");
	unsetenv("PMI_SIZE");
}

/* Expects init to fail with the error in arg. */
static int rank_init_fails(int rank, int n, const struct zsm_boot_id *id,
			   void *arg)
{
	struct zsm_boot *b = NULL;
	int want = *(const int *)arg;
	int ret = zsm_boot_init(id, rank, n, LONG_MS, &b);

	if (ret != want)
		fprintf(stderr, "# rank %d: init returned %d, not %d\n", rank,
			ret, want);
	CHECK(ret == want && b == NULL);
	return 0;
}

/* Expects init and an allgather to succeed. */
static int rank_forms(int rank, int n, const struct zsm_boot_id *id,
		      void *arg)
{
	struct zsm_boot *b;

	(void)arg;
	CHECK(zsm_boot_init(id, rank, n, LONG_MS, &b) == 0);
	CHECK(gather_ranks(b, rank, n) == 0);
	zsm_boot_fini(b);
	return 0;
}

/* Connect to the id's rank 0, send garbage, and see it closed. */
static void garbage_is_closed(const struct zsm_boot_id *id)
{
	struct zsm_boot_id_fields f;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct pollfd p;
	char junk[200], c;
	int s;

	assert_int_equal(zsm_boot_id_decode(id, &f), 0);
	if (f.addr.family != 4)
		return; /* the IPv6 path is the same code past connect */
	memcpy(&sa.sin_addr, f.addr.ip, 4);
	sa.sin_port = htons(f.addr.port);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	memset(junk, 0xa5, sizeof(junk));
	assert_int_equal(send(s, junk, sizeof(junk), MSG_NOSIGNAL),
			 sizeof(junk));
	p = (struct pollfd){.fd = s, .events = POLLIN};
	/* Generous: rank 0 closes it as soon as it reads it. */
	assert_int_equal(poll(&p, 1, LONG_MS), 1);
	assert_true(recv(s, &c, 1, 0) <= 0);
	close(s);
}

static void test_boot_wrong_nonce_refused_real_ranks_form(void **state)
{
	struct zsm_boot_id id, stray;
	struct zsm_boot_id_fields f;
	int refused = -ECONNRESET;
	pid_t pids[3], spid;

	(void)state;
	assert_int_equal(zsm_boot_id_new(&id), 0);
	assert_int_equal(zsm_boot_id_decode(&id, &f), 0);
	f.nonce ^= 1;
	zsm_boot_id_encode(&f, &stray);
	pids[0] = spawn(rank_forms, 0, 3, &id, NULL);
	pids[1] = spawn(rank_forms, 1, 3, &id, NULL);
	/* Rank 2 of another job comes while the real rank 2 has not:
	 * counted, it would take the real one's place. */
	spid = spawn(rank_init_fails, 2, 3, &stray, &refused);
	zsm_boot_id_drop(&id);
	assert_int_equal(reap(spid), 0);
	garbage_is_closed(&id);
	pids[2] = spawn(rank_forms, 2, 3, &id, NULL);
	for (int r = 0; r < 3; r++)
		assert_int_equal(reap(pids[r]), 0);
}

/* Three processes claim ranks[i] of sizes[i]; every init must give -EINVAL. */
static void run_bad_init(const int ranks[3], const int sizes[3])
{
	struct zsm_boot_id id;
	int einval = -EINVAL;
	pid_t pids[3];

	assert_int_equal(zsm_boot_id_new(&id), 0);
	for (int i = 0; i < 3; i++)
		pids[i] = spawn(rank_init_fails, ranks[i], sizes[i], &id,
				&einval);
	zsm_boot_id_drop(&id);
	for (int i = 0; i < 3; i++)
		if (reap(pids[i]) != 0)
			fail_msg("process %d (rank %d of %d) failed", i,
				 ranks[i], sizes[i]);
}

static void test_boot_duplicate_rank_fails_everywhere(void **state)
{
	(void)state;
	run_bad_init((const int[3]){0, 1, 1}, (const int[3]){3, 3, 3});
}

static void test_boot_nranks_mismatch_fails_everywhere(void **state)
{
	(void)state;
	run_bad_init((const int[3]){0, 1, 2}, (const int[3]){3, 3, 4});
}

/* Rank 1 gathers 16 bytes where rank 0 gathers 8: out of step. */
static int rank_mismatched(int rank, int n, const struct zsm_boot_id *id,
			   void *arg)
{
	unsigned char buf[2 * 16] = {0};
	struct zsm_boot *b;
	int ret;

	(void)arg;
	CHECK(zsm_boot_init(id, rank, n, LONG_MS, &b) == 0);
	ret = zsm_boot_allgather(b, buf, rank == 0 ? 8 : 16);
	if (rank == 0)
		CHECK(ret == -EPROTO); /* it reads rank 1's head first */
	else
		CHECK(ret == -ECONNRESET);
	/* Rank 0 wrote nothing into rank 1's block or past it. */
	if (rank == 0)
		for (size_t i = 8; i < sizeof(buf); i++)
			CHECK(buf[i] == 0);
	zsm_boot_fini(b);
	return 0;
}

static void test_boot_mismatched_calls_fail(void **state)
{
	(void)state;
	run_all(rank_mismatched, 2, NULL);
}

/* The rank that dies or goes silent in the tests below. */
struct victim {
	int rank;
	int silent;   /* 0: killed; 1: stays alive and never calls */
	int hold_fd;  /* silent: read end of a pipe closed at the end */
	int close_fd; /* write end, which the ranks must not hold */
};

static int rank_victim(int rank, int n, const struct zsm_boot_id *id,
		       void *arg)
{
	const struct victim *v = arg;
	unsigned char buf[8 * 64];
	struct zsm_boot *b;
	int ret;
	char c;

	close(v->close_fd);
	memset(buf, 0, sizeof(buf));
	zsm_log_capture_start();
	CHECK(zsm_boot_init(id, rank, n, LONG_MS, &b) == 0);
	CHECK(gather_ranks(b, rank, n) == 0);
	if (v->silent)
		/* White box: a short deadline for the calls after a
		 * healthy init, which must not be held to it. */
		b->timeout_ms = 500;
	if (rank == v->rank && !v->silent)
		raise(SIGKILL);
	if (rank == v->rank) {
		/* Until the survivors are done: EOF on the pipe. */
		while (read(v->hold_fd, &c, 1) > 0)
			;
		zsm_boot_fini(b);
		return 0;
	}
	ret = zsm_boot_allgather(b, buf, 64);
	if (ret != -ECONNRESET && ret != -ETIMEDOUT)
		fprintf(stderr, "# rank %d: allgather returned %d\n", rank,
			ret);
	CHECK(ret == -ECONNRESET || ret == -ETIMEDOUT);
	/* A killed rank's socket is closed: rank 0 sees that at once, and
	 * only a bootstrap blind to it would wait for the deadline. */
	if (rank == 0 && !v->silent)
		CHECK(ret == -ECONNRESET);
	/* Failed for good: later calls say so at once. */
	CHECK(zsm_boot_barrier(b) == ret);
	/* Rank 0 sees the victim's link fail and names it. */
	if (rank == 0) {
		char want[32];

		snprintf(want, sizeof(want), "rank %d ", v->rank);
		CHECK(strstr(zsm_log_captured, want) != NULL);
	}
	zsm_log_capture_stop();
	zsm_boot_fini(b);
	return 0;
}

static void run_victim(int n, int victim, int silent)
{
	struct victim v = {.rank = victim, .silent = silent};
	struct zsm_boot_id id;
	int fds[2];
	pid_t pids[8];

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	v.hold_fd = fds[0];
	v.close_fd = fds[1];
	assert_int_equal(zsm_boot_id_new(&id), 0);
	for (int r = 0; r < n; r++)
		pids[r] = spawn(rank_victim, r, n, &id, &v);
	zsm_boot_id_drop(&id);
	for (int r = 0; r < n; r++) {
		if (r == victim)
			continue;
		if (reap(pids[r]) != 0)
			fail_msg("survivor %d (victim %d) failed", r, victim);
	}
	close(fds[1]);
	close(fds[0]);
	assert_int_equal(reap(pids[victim]), silent ? 0 : 128 + SIGKILL);
}

static void test_boot_killed_rank_fails_every_survivor(void **state)
{
	(void)state;
	run_victim(4, 2, 0);
	run_victim(4, 0, 0);
}

static void test_boot_silent_rank_fails_every_survivor(void **state)
{
	(void)state;
	run_victim(3, 2, 1);
	run_victim(3, 0, 1);
}

/* After set-up: arg NULL, rank 1 leaves on purpose and nobody may take
 * it for dead; arg non-NULL, rank 2 is killed and every survivor's watch
 * must say so (rank 0 naming rank 2, the others rank 0, which passed it
 * on). */
static int rank_watch(int rank, int n, const struct zsm_boot_id *id,
		      void *arg)
{
	struct timespec nap = {0, 5000000};
	struct zsm_boot *b;
	int gone = -2, ret = 0;

	CHECK(zsm_boot_init(id, rank, n, LONG_MS, &b) == 0);
	CHECK(zsm_boot_barrier(b) == 0);
	if (!arg && rank == 1) {
		zsm_boot_leave(b);
		zsm_boot_fini(b);
		return 0;
	}
	if (arg && rank == 2)
		raise(SIGKILL);
	for (int i = 0; i < (arg ? LONG_MS / 5 : 60); i++) {
		ret = zsm_boot_watch(b, &gone);
		if (ret)
			break;
		nanosleep(&nap, NULL);
	}
	if (!arg) {
		CHECK(ret == 0);
	} else {
		CHECK(ret == -ECONNRESET);
		CHECK(gone == (rank == 0 ? 2 : 0));
	}
	zsm_boot_leave(b);
	zsm_boot_fini(b);
	return 0;
}

static void test_boot_watch_tells_leave_from_death(void **state)
{
	struct zsm_boot_id id;
	pid_t pids[4];
	int killed = 1;

	(void)state;
	run_all(rank_watch, 3, NULL);
	assert_int_equal(zsm_boot_id_new(&id), 0);
	for (int r = 0; r < 4; r++)
		pids[r] = spawn(rank_watch, r, 4, &id, &killed);
	zsm_boot_id_drop(&id);
	for (int r = 0; r < 4; r++) {
		int st = reap(pids[r]);

		if (st != (r == 2 ? 128 + SIGKILL : 0))
			fail_msg("rank %d exited with %d", r, st);
	}
}

static int rank_no_root(int rank, int n, const struct zsm_boot_id *id,
			void *arg)
{
	struct zsm_boot *b = NULL;
	int ret;

	(void)arg;
	setenv("ZSM_BOOT_TIMEOUT_MS", "300", 1);
	CHECK(zsm_param_load(NULL) == 0);
	ret = zsm_boot_init(id, rank, n, 0, &b);
	if (ret != -ETIMEDOUT)
		fprintf(stderr, "# rank %d: init returned %d\n", rank, ret);
	CHECK(ret == -ETIMEDOUT && b == NULL);
	return 0;
}

static void test_boot_missing_rank0_times_out(void **state)
{
	struct zsm_boot_id id;
	pid_t pids[2];

	(void)state;
	assert_int_equal(zsm_boot_id_new(&id), 0);
	/* Nobody listens at the id's address from here on. */
	zsm_boot_id_drop(&id);
	pids[0] = spawn(rank_no_root, 1, 3, &id, NULL);
	pids[1] = spawn(rank_no_root, 2, 3, &id, NULL);
	assert_int_equal(reap(pids[0]), 0);
	assert_int_equal(reap(pids[1]), 0);
}

static void test_boot_id_garbage_refused(void **state)
{
	struct zsm_boot_id id;
	struct zsm_boot *b = (void *)&id;

	(void)state;
	memset(&id, 0x5a, sizeof(id));
	assert_int_equal(zsm_boot_init(&id, 0, 2, 100, &b), -EINVAL);
	assert_null(b);
	assert_int_equal(zsm_boot_id_new(&id), 0);
	assert_int_equal(zsm_boot_init(&id, 2, 2, 100, &b), -EINVAL);
	zsm_boot_id_drop(&id);
	/* A real id but for its magic (the first bytes). */
	id.bytes[0] ^= 0xff;
	assert_int_equal(zsm_boot_init(&id, 0, 2, 100, &b), -EINVAL);
	assert_null(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boot_collectives_exact_1_2_3_4_8_ranks),
		cmocka_unit_test(test_boot_env_torchrun),
		cmocka_unit_test(test_boot_env_open_mpi),
		cmocka_unit_test(test_boot_env_slurm),
		cmocka_unit_test(test_boot_env_incomplete_refused),
		cmocka_unit_test(test_boot_wrong_nonce_refused_real_ranks_form),
		cmocka_unit_test(test_boot_duplicate_rank_fails_everywhere),
		cmocka_unit_test(test_boot_nranks_mismatch_fails_everywhere),
		cmocka_unit_test(test_boot_mismatched_calls_fail),
		cmocka_unit_test(test_boot_killed_rank_fails_every_survivor),
		cmocka_unit_test(test_boot_silent_rank_fails_every_survivor),
		cmocka_unit_test(test_boot_watch_tells_leave_from_death),
		cmocka_unit_test(test_boot_missing_rank0_times_out),
		cmocka_unit_test(test_boot_id_garbage_refused),
	};

	/* Children of a killed rank's peers write to closed sockets. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
