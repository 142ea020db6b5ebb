/* SPDX-License-Identifier: MIT */
/*
 * api_ranks SCENARIO --hosts H0,H1,... [options]
 *
 * Starts one rank per entry of --hosts, each a fresh process (this program
 * run again with --rank R), whose ZSM_HOSTID is the host its entry names:
 * ranks of one host link through the same-host transport, others over the
 * network.  Rank 0 makes the unique id with zsm_get_unique_id and hands it
 * to the parent through a pipe; the parent passes it to the other ranks on
 * their command line.  Each rank makes a communicator with
 * zsm_comm_init_rank and runs SCENARIO (coll: allgather or alltoall;
 * putsignal; errors; kill; mismatch).  The parent waits for every rank at most
 * --deadline seconds (a hang guard, not a speed limit), then stops the
 * ones left, which say what they were doing, and fails.
 *
 * Ranks are exec'd rather than only forked so that each reads its
 * environment at its own first call, as separate jobs' processes do.
 */
#include "api_ranks.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


struct api_opts api_opt = {
	.iters = 2,
	.victim = -1,
	.kill_mode = "between",
	.calls = 4,
	.deadline_s = 240,
};
int api_rank = -1;

/* Two buffers: the SIGTERM handler reads the one not being written. */
static char phase_buf[2][160];
static volatile sig_atomic_t phase_cur;

void api_phase(const char *fmt, ...)
{
	int next = !phase_cur;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(phase_buf[next], sizeof(phase_buf[next]), fmt, ap);
	va_end(ap);
	phase_cur = next;
}

static void on_signal(int sig)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "rank %d: %s while: %s\n",
			 api_rank,
			 sig == SIGTERM ? "stopped at the deadline"
					: strsignal(sig),
			 phase_buf[phase_cur]);

	if (n > 0)
		(void)!write(STDOUT_FILENO, line, (size_t)n);
	if (sig == SIGTERM)
		_exit(3);
	/* A crash: as it would have ended, for the parent to see. */
	signal(sig, SIG_DFL);
	raise(sig);
}

uint32_t api_seed(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	uint32_t h = 2166136261u;
	uint32_t v[4] = {a, b, c, d};

	for (int i = 0; i < 4; i++) {
		h ^= v[i];
		h *= 16777619u;
		h ^= h >> 15;
	}
	return h;
}

void api_fill(unsigned char *p, size_t len, uint32_t seed, size_t base)
{
	for (size_t i = 0; i < len; i++)
		p[i] = zsm_pattern_byte(seed, base + i);
}

long api_check(const unsigned char *p, size_t len, uint32_t seed,
	       size_t base)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != zsm_pattern_byte(seed, base + i))
			return (long)i;
	return -1;
}

zsm_datatype_t api_dtype(int esize, int variant)
{
	static const zsm_datatype_t by_size[9][3] = {
		[1] = {zsm_uint8, zsm_int8, zsm_float8e5m2},
		[2] = {zsm_float16, zsm_bfloat16, zsm_float16},
		[4] = {zsm_float32, zsm_int32, zsm_uint32},
		[8] = {zsm_int64, zsm_float64, zsm_uint64},
	};

	return by_size[esize][variant % 3];
}

double api_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void *api_alloc(size_t size)
{
	void *p = calloc(1, size ? size : 1);

	if (p)
		memset(p, 0, size);
	return p;
}

int api_win_pair(zsm_comm_t comm, void *a, size_t asize, zsm_window_t *wa,
		 void *b, size_t bsize, zsm_window_t *wb)
{
	int ret = zsm_comm_window_register(comm, a, asize, wa, 0);

	if (!ret && b)
		ret = zsm_comm_window_register(comm, b, bsize, wb, 0);
	if (ret)
		API_FAIL("zsm_comm_window_register of %zu and %zu bytes: %s",
			 asize, b ? bsize : 0, zsm_strerror(ret));
	return 0;
}

int api_win_unpair(zsm_comm_t comm, zsm_window_t wa, zsm_window_t wb)
{
	int ret = wb ? zsm_comm_window_deregister(comm, wb) : 0;

	if (!ret)
		ret = zsm_comm_window_deregister(comm, wa);
	if (ret)
		API_FAIL("zsm_comm_window_deregister: %s", zsm_strerror(ret));
	return 0;
}

static int parse_sizes(const char *s, size_t *out, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		unsigned long long v = strtoull(s, &end, 10);

		if (end == s || n == max || *s == '-' ||
		    (*end && *end != ','))
			return -1;
		out[n++] = (size_t)v;
		s = *end ? end + 1 : end;
	}
	return n;
}

static int parse_ints(const char *s, int *out, int max)
{
	size_t v[API_MAXLIST];
	int n = parse_sizes(s, v, max < API_MAXLIST ? max : API_MAXLIST);

	for (int i = 0; i < n; i++) {
		if (v[i] > 1000000)
			return -1;
		out[i] = (int)v[i];
	}
	return n;
}

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s allgather|alltoall|putsignal|errors|kill|mismatch "
		"--hosts H0,H1,... (2..%d ranks)\n"
		"  [--counts N,...] [--esizes 1,2,4,8] "
		"[--modes oop,inplace,samewin]\n"
		"  [--iters N] [--big BYTES] [--victim R] "
		"[--kill-mode between|during|wait]\n"
		"  [--calls N] [--deadline SECONDS] [--threads NAME=N,...]\n"
		"  [--mismatch count|kind|zero]\n",
		argv0, API_MAXR);
	return 2;
}

static int from_hex(const char *s, zsm_unique_id_t *id)
{
	if (strlen(s) != 2 * sizeof(id->internal))
		return -1;
	for (size_t i = 0; i < sizeof(id->internal); i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		id->internal[i] = (char)v;
	}
	return 0;
}

static void to_hex(const zsm_unique_id_t *id, char *s)
{
	for (size_t i = 0; i < sizeof(id->internal); i++)
		sprintf(s + 2 * i, "%02x", (unsigned char)id->internal[i]);
}

/* Threads of this process named name (/proc/self/task/T/comm). */
static int count_threads(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* a thread that just ended */
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
		n += strcmp(comm, name) == 0;
	}
	closedir(d);
	return n;
}

/* --threads NAME=N,...: the library's threads this rank runs now. */
static int check_threads(const char *spec)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		char *eq = strrchr(t, '=');
		int want, have;

		if (!eq)
			API_FAIL("--threads: %s is not NAME=N", t);
		*eq = 0;
		want = atoi(eq + 1);
		have = count_threads(t);
		if (have != want)
			API_FAIL("%d threads named %s, want %d", have, t, want);
	}
	return 0;
}

/* One rank, in its own process: id from rank 0's pipe or the command
 * line, then the scenario. */
static int rank_main(int idfd, const char *idhex)
{
	const char *sc = api_opt.scenario;
	zsm_unique_id_t id;
	zsm_comm_t comm = NULL;
	int ret, status, n = -1, r = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGTERM, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGABRT, on_signal);
	api_phase("starting");
	if (api_rank == 0) {
		ret = zsm_get_unique_id(&id);
		if (ret)
			API_FAIL("zsm_get_unique_id: %s", zsm_strerror(ret));
		if (write(idfd, &id, sizeof(id)) != (ssize_t)sizeof(id))
			API_FAIL("handing the id to the parent: %s",
				 strerror(errno));
		close(idfd);
	} else if (from_hex(idhex, &id)) {
		API_FAIL("bad --id");
	}
	if (strcmp(sc, "errors") == 0 && api_errors_pre_init(&id))
		return 1;
	api_phase("zsm_comm_init_rank");
	ret = zsm_comm_init_rank(&comm, api_opt.nranks, id, api_rank);
	if (ret)
		API_FAIL("zsm_comm_init_rank: %s", zsm_strerror(ret));
	if (zsm_comm_count(comm, &n) || n != api_opt.nranks ||
	    zsm_comm_user_rank(comm, &r) || r != api_rank)
		API_FAIL("zsm_comm_count/user_rank say %d ranks, rank %d", n,
			 r);
	if (strcmp(sc, "allgather") == 0 || strcmp(sc, "alltoall") == 0)
		status = api_coll_run(comm);
	else if (strcmp(sc, "putsignal") == 0)
		status = api_signal_run(comm);
	else if (strcmp(sc, "errors") == 0)
		status = api_errors_run(comm);
	else if (strcmp(sc, "mismatch") == 0)
		status = api_mismatch_run(comm);
	else if (strcmp(sc, "alloc") == 0 && api_alloc_run)
		status = api_alloc_run(comm);
	else if (strcmp(sc, "alloc") == 0)
		API_FAIL("alloc runs in api_ranks_alloc, which counts "
			 "allocations");
	else if (strcmp(sc, "chain") == 0)
		status = api_chain_run(comm);
	else
		/* Destroys the comm itself in a survivor. */
		return api_kill_run(comm);
	if (!status && api_opt.threads)
		status = check_threads(api_opt.threads);
	api_phase("zsm_comm_destroy");
	ret = zsm_comm_destroy(comm);
	if (ret)
		API_FAIL("zsm_comm_destroy: %s", zsm_strerror(ret));
	if (!status && strcmp(sc, "errors") == 0)
		status = api_errors_after_destroy(comm);
	if (!status)
		printf("rank %d (host %d): %s: PASS\n", api_rank,
		       api_opt.hosts[api_rank], sc);
	return status;
}

/* Rank 0 under gdb with the script API_RANK0_GDB names (put-chain.sh):
 * returns only when gdb cannot be started. */
static void exec_under_gdb(char **args)
{
	static char exe[4096];
	char *argv[256] = {"gdb", "-q", "-batch", "-nx", "-x",
			   getenv("API_RANK0_GDB"), "--args", exe};
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int k = 8;

	if (len <= 0)
		return;
	exe[len] = 0;
	for (int i = 1; args[i] && k < 255; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	execvp("gdb", argv);
}

static pid_t spawn(char **argv, int argc, int r, int idfd, const char *idhex)
{
	char rank_s[16], fd_s[16], host[64];
	char **args = calloc((size_t)argc + 6, sizeof(*args));
	pid_t pid;
	int k = 0;

	if (!args)
		return -1;
	for (int i = 0; i < argc; i++)
		args[k++] = argv[i];
	snprintf(rank_s, sizeof(rank_s), "%d", r);
	args[k++] = "--rank";
	args[k++] = rank_s;
	if (idhex) {
		args[k++] = "--id";
		args[k++] = (char *)idhex;
	} else {
		snprintf(fd_s, sizeof(fd_s), "%d", idfd);
		args[k++] = "--idfd";
		args[k++] = fd_s;
	}
	/* The parent's pid keeps host names of concurrent runs apart. */
	snprintf(host, sizeof(host), "api-ranks-%d-host-%d", (int)getpid(),
		 api_opt.hosts[r]);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct rlimit no_core = {0, 0};

		/* A rank must not outlive a parent killed by the harness. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setrlimit(RLIMIT_CORE, &no_core);
		setenv("ZSM_HOSTID", host, 1);
		if (r == 0 && getenv("API_RANK0_GDB"))
			exec_under_gdb(args);
		execv("/proc/self/exe", args);
		perror("execv");
		_exit(127);
	}
	free(args);
	return pid;
}

static void stop_all(pid_t *pids, const int *done, int n)
{
	for (int r = 0; r < n; r++)
		if (pids[r] > 0 && !done[r])
			kill(pids[r], SIGTERM);
	/* Time to say what they were doing; then for sure. */
	sleep(2);
	for (int r = 0; r < n; r++)
		if (pids[r] > 0 && !done[r])
			kill(pids[r], SIGKILL);
}

static int rank_of(const pid_t *pids, int n, pid_t pid)
{
	for (int r = 0; r < n; r++)
		if (pids[r] == pid)
			return r;
	return -1;
}

/* Judge one exit: 0 when it is what this rank had to do. */
static int judge(int r, int st)
{
	int want = strcmp(api_opt.scenario, "kill") == 0 &&
				   r == api_opt.victim
			   ? API_VICTIM_EXIT
			   : 0;

	if (WIFEXITED(st) && WEXITSTATUS(st) == want)
		return 0;
	if (WIFSIGNALED(st))
		printf("FAIL: rank %d died by signal %d (%s)\n", r,
		       WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		printf("FAIL: rank %d exited with %d, want %d\n", r,
		       WEXITSTATUS(st), want);
	return 1;
}

static int parent_main(int argc, char **argv)
{
	pid_t pids[API_MAXR] = {0};
	int done[API_MAXR] = {0}, pipefd[2], status = 0, left;
	int kill_run = strcmp(api_opt.scenario, "kill") == 0;
	char idhex[2 * ZSM_UNIQUE_ID_BYTES + 1];
	double start = api_now_ms(), limit = api_opt.deadline_s * 1e3;
	zsm_unique_id_t id;
	size_t got = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (kill_run) {
		/* A dead peer must be seen before this; the environment may
		 * set others. */
		setenv("ZSM_WAIT_TIMEOUT_MS", "60000", 0);
		setenv("ZSM_PEER_CHECK_MS", "200", 0);
	}
	if (pipe(pipefd))
		return 1;
	pids[0] = spawn(argv, argc, 0, pipefd[1], NULL);
	close(pipefd[1]);
	if (pids[0] < 0)
		return 1;
	while (got < sizeof(id)) {
		struct pollfd pfd = {.fd = pipefd[0], .events = POLLIN};
		int wait_ms = (int)(limit - (api_now_ms() - start));
		ssize_t n;

		if (wait_ms <= 0 || poll(&pfd, 1, wait_ms) <= 0) {
			printf("FAIL: no id from rank 0 within %d s\n",
			       api_opt.deadline_s);
			stop_all(pids, done, 1);
			return 1;
		}
		n = read(pipefd[0], (char *)&id + got, sizeof(id) - got);
		if (n <= 0) {
			printf("FAIL: rank 0 gave no id (it ended)\n");
			stop_all(pids, done, 1);
			return 1;
		}
		got += (size_t)n;
	}
	close(pipefd[0]);
	to_hex(&id, idhex);
	for (int r = 1; r < api_opt.nranks; r++) {
		pids[r] = spawn(argv, argc, r, -1, idhex);
		if (pids[r] < 0) {
			printf("FAIL: fork: %s\n", strerror(errno));
			stop_all(pids, done, r);
			return 1;
		}
	}
	left = api_opt.nranks;
	while (left) {
		struct timespec nap = {0, 20 * 1000 * 1000};
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		int r = pid > 0 ? rank_of(pids, api_opt.nranks, pid) : -1;

		if (r >= 0) {
			done[r] = 1;
			left--;
			if (judge(r, st)) {
				status = 1;
				/* The others would wait for it until their
				 * own timeouts: a kill run lets each survivor
				 * finish its report, others stop now. */
				if (!kill_run) {
					stop_all(pids, done, api_opt.nranks);
					break;
				}
			}
			continue;
		}
		if (api_now_ms() - start > limit) {
			printf("FAIL: %d rank(s) still running after %d s:",
			       left, api_opt.deadline_s);
			for (int k = 0; k < api_opt.nranks; k++)
				if (!done[k])
					printf(" %d", k);
			printf("\n");
			stop_all(pids, done, api_opt.nranks);
			status = 1;
			break;
		}
		nanosleep(&nap, NULL);
	}
	while (wait(NULL) > 0)
		;
	printf("%s, %d ranks, hosts", api_opt.scenario, api_opt.nranks);
	for (int r = 0; r < api_opt.nranks; r++)
		printf("%c%d", r ? ',' : ' ', api_opt.hosts[r]);
	printf(": %.1f s: %s\n", (api_now_ms() - start) / 1e3,
	       status ? "FAIL" : "PASS");
	return status;
}

static int parse_modes(const char *s)
{
	int m = 0;
	char buf[64], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "oop") == 0)
			m |= API_MODE_OOP;
		else if (strcmp(t, "inplace") == 0)
			m |= API_MODE_INPLACE;
		else if (strcmp(t, "samewin") == 0)
			m |= API_MODE_SAMEWIN;
		else
			return -1;
	}
	return m;
}

/*
 * ZSM_TEST_TIME_SCALE=N (test/tsan.sh, a slowed machine): the parent's
 * deadline and the ranks' ZSM_PEER_CHECK_MS grow N times, so that a rank
 * slowed down, not dead, is not taken for dead (the kill tests check for
 * 200 ms).
 */
static void time_scale(void)
{
	const char *s = getenv("ZSM_TEST_TIME_SCALE");
	const char *pc = getenv("ZSM_PEER_CHECK_MS");
	int scale = s ? atoi(s) : 1;
	char v[32];

	if (scale <= 1)
		return;
	api_opt.deadline_s *= scale;
	if (pc && atol(pc) > 0) {
		snprintf(v, sizeof(v), "%ld", atol(pc) * scale);
		setenv("ZSM_PEER_CHECK_MS", v, 1);
	}
}

int main(int argc, char **argv)
{
	const char *idhex = NULL;
	int idfd = -1, parent_argc = argc;

	if (argc < 2)
		return usage(argv[0]);
	api_opt.scenario = argv[1];
	api_opt.modes = API_MODE_OOP | API_MODE_INPLACE | API_MODE_SAMEWIN;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage(argv[0]);
		i++;
		if (strcmp(a, "--hosts") == 0)
			api_opt.nranks = parse_ints(v, api_opt.hosts, API_MAXR);
		else if (strcmp(a, "--counts") == 0)
			api_opt.ncounts =
				parse_sizes(v, api_opt.counts, API_MAXLIST);
		else if (strcmp(a, "--esizes") == 0)
			api_opt.nesizes =
				parse_ints(v, api_opt.esizes, API_MAXLIST);
		else if (strcmp(a, "--modes") == 0)
			api_opt.modes = parse_modes(v);
		else if (strcmp(a, "--iters") == 0)
			api_opt.iters = atoi(v);
		else if (strcmp(a, "--big") == 0)
			api_opt.big = (size_t)strtoull(v, NULL, 10);
		else if (strcmp(a, "--victim") == 0)
			api_opt.victim = atoi(v);
		else if (strcmp(a, "--kill-mode") == 0)
			api_opt.kill_mode = v;
		else if (strcmp(a, "--calls") == 0)
			api_opt.calls = atoi(v);
		else if (strcmp(a, "--deadline") == 0)
			api_opt.deadline_s = atoi(v);
		else if (strcmp(a, "--threads") == 0)
			api_opt.threads = v;
		else if (strcmp(a, "--mismatch") == 0)
			api_opt.mismatch = v;
		else if (strcmp(a, "--rank") == 0) {
			api_rank = atoi(v);
			/* The parent's arguments end where it added ours. */
			if (parent_argc == argc)
				parent_argc = i - 1;
		} else if (strcmp(a, "--idfd") == 0)
			idfd = atoi(v);
		else if (strcmp(a, "--id") == 0)
			idhex = v;
		else
			return usage(argv[0]);
	}
	if (!api_opt.ncounts) {
		static const size_t def[] = {0, 1, 3, 4097, 65537};

		api_opt.ncounts = 5;
		memcpy(api_opt.counts, def, sizeof(def));
	}
	if (!api_opt.nesizes) {
		static const int def[] = {1, 2, 4, 8};

		api_opt.nesizes = 4;
		memcpy(api_opt.esizes, def, sizeof(def));
	}
	if (api_opt.victim < 0)
		api_opt.victim = api_opt.nranks - 1;
	for (int k = 0; k < api_opt.nesizes; k++)
		if (api_opt.esizes[k] != 1 && api_opt.esizes[k] != 2 &&
		    api_opt.esizes[k] != 4 && api_opt.esizes[k] != 8)
			return usage(argv[0]);
	if (api_opt.nranks < 2 || api_opt.ncounts < 0 || api_opt.nesizes < 0 ||
	    api_opt.modes <= 0 || api_opt.iters < 1 || api_opt.calls < 2 ||
	    api_opt.victim >= api_opt.nranks || api_opt.deadline_s < 1)
		return usage(argv[0]);
	if (api_rank >= 0)
		return rank_main(idfd, idhex);
	time_scale();
	return parent_main(parent_argc, argv);
}
