/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --coll (the program zsm-bench-coll, which zsm-bench runs for
 * --coll): AllGather and AlltoAll through zsm's public API
 * (include/zsm/zsm.h), called from the shared library as any program
 * would call it, and linked to nothing else of zsm.  N ranks: forked on
 * this host (rank 0 is this process), each with its own ZSM_HOSTID when
 * --hosts asks, or one rank per process started by a launcher
 * (zsm_comm_init_env).  With --gpu each rank's buffers are CUDA memory of
 * its device and every call goes on a CUDA stream, timed from the call to
 * the stream's completion seen by the host; otherwise the comm is in
 * host-memory mode and a call is complete when it returns.  The ranks
 * keep in step, and gather their times, through the API itself: small
 * in-place AllGathers on a host-memory window.  This file launches the
 * ranks; bench_coll_rank.c runs one, on the plumbing of
 * bench_coll_base.c.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_coll.h"
#include "oob.h"

/* ------------------------------------------------------------ launching */

/* --gpu's list: one ordinal for every rank, or one per rank. */
static int coll_gpu_of(const struct bench_opts *o, int rank, int nranks)
{
	const char *p = o->gpu_list;
	long v = 0;
	int k = 0, count = 1;
	char *end;

	if (!o->gpu)
		return -1;
	if (!p || !*p)
		return 0;
	for (const char *q = p; *q; q++)
		count += *q == ',';
	if (count != 1 && count != nranks) {
		fprintf(stderr,
			"zsm-bench: --gpu %s: give one device for every rank "
			"or one per rank (%d)\n",
			p, nranks);
		exit(1);
	}
	for (;;) {
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v < 0 || v > 1023 ||
		    (*end && *end != ',')) {
			fprintf(stderr,
				"zsm-bench: --gpu: '%s' is not a list of "
				"device numbers 0..1023\n",
				o->gpu_list);
			exit(1);
		}
		if (count == 1 || k == rank)
			return (int)v;
		k++;
		p = end + 1;
	}
}

/* --hosts' word for rank r, into buf; NULL when --hosts is not given. */
static const char *coll_host_of(const struct bench_opts *o, int rank,
				int nranks, char *buf, size_t len)
{
	const char *p = o->coll_hosts, *e;
	int k = 0, count = 1;

	if (!p)
		return NULL;
	for (const char *q = p; *q; q++)
		count += *q == ',';
	if (count != nranks) {
		fprintf(stderr,
			"zsm-bench: --hosts %s: give one host id per rank "
			"(%d)\n",
			p, nranks);
		exit(1);
	}
	for (; k < rank; k++)
		p = strchr(p, ',') + 1;
	e = strchr(p, ',');
	if (!e)
		e = p + strlen(p);
	if (e == p) {
		fprintf(stderr, "zsm-bench: --hosts %s: an empty host id\n",
			o->coll_hosts);
		exit(1);
	}
	snprintf(buf, len, "zsm-bench-host-%.*s", (int)(e - p), p);
	return buf;
}

/*
 * --gpu, before anything forks: a throwaway child opens CUDA and each
 * device asked for (this process must not touch CUDA before it forks the
 * ranks), and says why not.  OOB_PASS, OOB_SKIP (no CUDA: the one line
 * saying why is printed) or exit on another failure.
 */
static int coll_gpu_probe(const struct bench_opts *o, int nranks)
{
	char why[2 * BENCH_WHY_MAX] = "", mem[COLL_MAX_FORK * 10];
	int fds[2], st = 0;
	ssize_t got = 0;
	pid_t pid;

	if (!o->gpu)
		return 0;
	mem[0] = '\0';
	for (int r = 0; r < nranks; r++) {
		size_t used = strlen(mem);

		snprintf(mem + used, sizeof(mem) - used, "%sgpu%d",
			 r ? "," : "", coll_gpu_of(o, r, nranks));
	}
	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct zsm_cuda_drv cu;
		char w[BENCH_WHY_MAX];
		int r, code = 0;

		close(fds[0]);
		alarm(COLL_PROBE_TIMEOUT_S);
		memset(&cu, 0, sizeof(cu));
		r = zsm_cuda_drv_open(&cu, w, sizeof(w));
		for (int k = 0; !r && k < nranks; k++)
			r = zsm_cuda_drv_use_device(
				&cu, coll_gpu_of(o, k, nranks), w, sizeof(w));
		if (r == -ENOENT || r == -ENOSYS || r == -ENODEV)
			code = OOB_SKIP;
		else if (r)
			code = 1;
		if (r && write(fds[1], w, strlen(w)) < 0)
			code = 1;
		_exit(code);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], why + got, sizeof(why) - 1 - (size_t)got);

		if (n > 0 && (size_t)(got += n) < sizeof(why) - 1)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	why[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == OOB_SKIP) {
		fprintf(stderr,
			"zsm-bench: --coll --gpu %s skipped: CUDA is not "
			"available: %s\n",
			mem, why);
		return OOB_SKIP;
	}
	fprintf(stderr, "zsm-bench: --coll --gpu %s: %s\n", mem,
		why[0] ? why
		       : WIFSIGNALED(st) ? "the CUDA probe was killed"
					 : "the CUDA probe failed");
	exit(1);
}

static void coll_fill_mem(struct coll *c)
{
	size_t used;

	if (c->gpu < 0) {
		snprintf(c->mem, sizeof(c->mem), "host");
		return;
	}
	/* '+' between ranks: the CSV's columns are commas. */
	c->mem[0] = '\0';
	for (int r = 0; r < c->nranks; r++) {
		used = strlen(c->mem);
		snprintf(c->mem + used, sizeof(c->mem) - used, "%sgpu%d",
			 r ? "+" : "", coll_gpu_of(c->o, r, c->nranks));
	}
}

/* The id from rank 0, over this rank's pipe, within --timeout. */
static void coll_read_id(struct coll *c, int fd, zsm_unique_id_t *id)
{
	size_t got = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ms = (int)(c->o->step_timeout_s > 2000000 ? 2000000000
						      : c->o->step_timeout_s *
								1000);

	while (got < sizeof(*id)) {
		ssize_t n;
		int r = poll(&p, 1, ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			coll_die("no unique id from rank 0 within %u s",
				 c->o->step_timeout_s);
		n = read(fd, (char *)id + got, sizeof(*id) - got);
		if (n <= 0)
			coll_die("rank 0 closed its pipe before sending the "
				 "unique id");
		got += (size_t)n;
	}
	close(fd);
}

static int coll_forked(struct coll *c)
{
	int nranks = c->nranks, fds[COLL_MAX_FORK][2], rank = 0;
	pid_t parent = getpid();
	sigset_t all, old;
	zsm_unique_id_t id;
	pthread_t watcher;
	char host[160];
	const char *h;

	fflush(NULL);
	for (int r = 1; r < nranks; r++) {
		pid_t pid;

		if (pipe(fds[r]))
			coll_die("pipe: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			coll_die("fork: %s", strerror(errno));
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			memset(coll_pids, 0, sizeof(coll_pids));
			for (int k = 1; k < r; k++)
				close(fds[k][1]);
			close(fds[r][1]);
			rank = r;
			c->rank = r;
			coll_read_id(c, fds[r][0], &id);
			break;
		}
		close(fds[r][0]);
		coll_pids[r] = pid;
		coll_kids_left++;
	}
	c->rank = rank;
	c->gpu = coll_gpu_of(c->o, rank, nranks);
	h = coll_host_of(c->o, rank, nranks, host, sizeof(host));
	if (h && setenv("ZSM_HOSTID", h, 1))
		coll_die("setenv ZSM_HOSTID: %s", strerror(errno));
	if (rank != 0)
		exit(coll_rank_main(c, &id));
	/* The watcher takes no signal: the alarm is the main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&watcher, NULL, coll_watch, NULL))
		coll_die("cannot start the thread that watches the ranks");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_detach(watcher);
	COLL_CALL(zsm_get_unique_id(&id));
	for (int r = 1; r < nranks; r++) {
		if (write(fds[r][1], &id, sizeof(id)) != (ssize_t)sizeof(id))
			coll_die("cannot send the unique id to rank %d: %s", r,
				 strerror(errno));
		close(fds[r][1]);
	}
	coll_rank_main(c, &id);
	/* The others end on their own once their last call is done. */
	coll_step(c, "waiting for the other ranks to exit");
	/* acquire: pairs with the watcher's release decrement. */
	while (__atomic_load_n(&coll_kids_left, __ATOMIC_ACQUIRE) > 0)
		usleep(10000);
	alarm(0);
	return 0;
}

/* The launcher's variables, or --rendezvous/--rank/--nranks as zsm's. */
static int coll_launched(struct coll *c)
{
	const struct bench_opts *o = c->o;
	char num[32];

	if (o->rendezvous && setenv("ZSM_BOOT_ADDR", o->rendezvous, 1))
		coll_die("setenv: %s", strerror(errno));
	if (o->launch_rank >= 0) {
		snprintf(num, sizeof(num), "%d", o->launch_rank);
		if (setenv("RANK", num, 1))
			coll_die("setenv: %s", strerror(errno));
	}
	if (o->launch_nranks >= 0) {
		snprintf(num, sizeof(num), "%d", o->launch_nranks);
		if (setenv("WORLD_SIZE", num, 1))
			coll_die("setenv: %s", strerror(errno));
	}
	/* The rank is zsm's to find out: one device for this process. */
	c->gpu = coll_gpu_of(o, 0, 1);
	return coll_rank_main(c, NULL);
}

static int coll_main(const struct bench_opts *o)
{
	static struct coll c;
	struct sigaction sa;
	int r;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.gpu = -1;
	coll_g = &c;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = coll_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	c.forked = !o->rendezvous;
	c.nranks = o->coll_ranks ? o->coll_ranks : 2;
	if (c.forked) {
		r = coll_gpu_probe(o, c.nranks);
		if (r)
			return r < 0 ? 1 : r;
		c.gpu = coll_gpu_of(o, 0, c.nranks);
		coll_fill_mem(&c);
		return coll_forked(&c);
	}
	if (o->coll_hosts) {
		fprintf(stderr,
			"zsm-bench: --hosts names the host of each forked "
			"rank; a launched rank takes ZSM_HOSTID from its own "
			"environment\n");
		return 1;
	}
	if (o->gpu && o->gpu_list && strchr(o->gpu_list, ',')) {
		fprintf(stderr, "zsm-bench: --gpu with --rendezvous takes one "
				"device: this process's\n");
		return 1;
	}
	if (coll_gpu_probe(o, 1) == OOB_SKIP)
		return OOB_SKIP;
	c.gpu = coll_gpu_of(o, 0, 1);
	if (c.gpu >= 0)
		snprintf(c.mem, sizeof(c.mem), "gpu%d", c.gpu);
	else
		snprintf(c.mem, sizeof(c.mem), "host");
	return coll_launched(&c);
}

int main(int argc, char **argv)
{
	static struct bench_opts o;

	bench_parse(&o, argc, argv);
	if (!o.coll) {
		fprintf(stderr, "zsm-bench-coll is zsm-bench --coll: give "
				"--coll all_gather|all_to_all|both\n");
		return 1;
	}
	return coll_main(&o);
}
