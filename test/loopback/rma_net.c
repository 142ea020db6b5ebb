/* SPDX-License-Identifier: MIT */
/*
 * One-sided operations over net (entry/entry.h), two processes on tcp;ofi_rxm
 * over 127.0.0.1 with ce off: rank 0 puts into and gets from windows rank
 * 1 registered, rank 1 only watches its memory.
 *   - puts of 1 byte to 16 MiB at odd offsets land byte-exact, each seen
 *     through its signal; a get posted right behind each put, without
 *     waiting for it, reads its bytes back byte-exact (a get sees every
 *     earlier put of the link), into odd offsets with the bytes around
 *     them untouched; then rank 1 rewrites those bytes itself and a
 *     second get must read the new ones;
 *   - a signal alone, and the add it carries;
 *   - strong signals under stress: each of 20000 puts is followed by a
 *     signal, and whenever rank 1 sees the count at n, puts 0..n-1 are
 *     all there (the provider orders the signal after the writes);
 *   - bad requests are refused at the call with -EINVAL (outside the
 *     window, an unaligned signal, 0 bytes without a signal), and a
 *     signal for a window the peer does not have fails the peer's comm
 *     and the signal's own request (-EPROTO).
 * --stress N sets the signals of the stress (100000); --ce runs the
 * same over ce (the pair shares the host), where the window's owner
 * copies each put and applies its signal after it; --misaligned makes the last signal a real window's whose
 * base is 4 bytes off 8-byte alignment, which must fail the comm alike.
 * --fake-gpu gives both processes a fake CUDA driver whose "device
 * memory" is host memory, and makes every window (and the source of the
 * byte-exact puts, and the destination of the gets) GPU memory: over net
 * the staged path runs (writes land in a host mirror, the owner copies
 * them up on the notice, signal words are read, added and written back;
 * a get makes the owner copy its bytes down first, rank 1's rewrite going
 * to its GPU memory only, and lands in the initiator's mirror, copied up
 * before the get completes).
 * --bad-get ends with a get past the end of a real window (its
 * descriptor's size forged) instead of the forged signal: the owner must
 * refuse it, failing its comm and the get with -EPROTO.  --mixed (with
 * --fake-gpu) keeps the signal window in host memory and adds a host
 * stress window and a GPU signal window: the stress's puts go to both
 * stress windows and its signals alternate between a host word and a GPU
 * word, and whenever rank 1 reads one word it checks the other against
 * it (a signal shows every earlier one) as well as the puts.  Under the
 * atomic mechanism that mixes the NIC's adds with the owner's copies up
 * and GPU words.  --nic-signals says the NIC adds signals into host words
 * (the atomic mechanism): it checks no window id, so the forged signal
 * names a key the peer never gave instead, which the peer's provider
 * refuses: the request fails, and the peer's words and comm are left as
 * they were.  With --misaligned too, the owner's refusal of the SIGNAL (a
 * window off alignment has no word the NIC may add to) must fail rank
 * 0's comm.  --idle-first makes rank 1 wait 1.5 s before it registers
 * its windows, so that its engine's thread sleeps with nothing to do:
 * the registration must wake it, since rank 1 makes no call after it
 * and over ce its own process serves the puts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cuda.h"
#include "entry/entry.h"
#include "core_pair.h"
#include "oob.h"
#include "pattern.h"

#define WIN_BYTES (16u << 20)
#define SIG_WORDS 8
static unsigned STRESS = 100000; /* --stress */
/* --ce: the pair shares the host and talks over ce. */
static int over_ce;
/* --misaligned: the last signal's window is a real one, misaligned. */
static int misaligned;
/* --fake-gpu: windows in (fake) GPU memory. */
static int fake_gpu;
/* --bad-get: the last phase is a get past a window's end. */
static int bad_get;
/* --mixed: host and GPU windows and words in the stress. */
static int mixed;
/* --nic-signals: host words' signals are the NIC's adds. */
static int nic_signals;
static int idle_first;
static int copies; /* the fake driver's */

static zsm_cu_result fake_ok(void)
{
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_ptr(void *p)
{
	(void)p;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_attr(void *data, int attr, zsm_cu_deviceptr p)
{
	(void)p;
	if (attr == ZSM_CU_POINTER_ATTRIBUTE_CONTEXT)
		*(zsm_cu_context *)data = (zsm_cu_context)&copies;
	else
		*(int *)data = 0;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_stream(zsm_cu_stream *st, unsigned flags)
{
	(void)flags;
	*st = (zsm_cu_stream)&copies;
	return ZSM_CU_SUCCESS;
}

/* Lands at once: the code waits on the stream anyway. */
static zsm_cu_result fake_copy(zsm_cu_deviceptr dst, zsm_cu_deviceptr src,
			       size_t n, zsm_cu_stream st)
{
	(void)st;
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	copies++;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_register(void *p, size_t n, unsigned flags)
{
	(void)p;
	(void)n;
	(void)flags;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_error_string(zsm_cu_result e, const char **s)
{
	(void)e;
	*s = "fake";
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_device(zsm_cu_device *d, int ordinal)
{
	*d = ordinal;
	return ZSM_CU_SUCCESS;
}

/* Compute capability 9.0, and no to everything else. */
static zsm_cu_result fake_dev_attr(int *value, int attr, zsm_cu_device d)
{
	(void)d;
	*value = attr == ZSM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
	*value *= 9;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_bus_id(char *bus_id, int len, zsm_cu_device d)
{
	(void)d;
	snprintf(bus_id, (size_t)len, "0000:00:00.0");
	return ZSM_CU_SUCCESS;
}

static void fake_driver(void)
{
	struct zsm_cuda_drv t;

	memset(&t, 0, sizeof(t));
	t.lib = &copies;
	t.ndev = 1;
	t.ordinal = -1;
	t.get_error_string = fake_error_string;
	t.get_error_name = fake_error_string;
	t.device_get = fake_device;
	t.device_get_attribute = fake_dev_attr;
	t.device_get_pci_bus_id = fake_bus_id;
	t.pointer_get_attribute = fake_attr;
	t.ctx_set_current = fake_ptr;
	t.stream_create = fake_stream;
	t.stream_destroy = fake_ptr;
	t.stream_query = fake_ptr;
	t.memcpy_async = fake_copy;
	t.mem_host_register = fake_register;
	t.mem_host_unregister = fake_ptr;
	t.ctx_synchronize = fake_ok;
	zsm_cuda_use_table(&t);
}

static int win_type(void)
{
	return fake_gpu ? ZSM_MEM_CUDA : ZSM_MEM_HOST;
}

/* The signal window's: host memory under --mixed. */
static int sig_type(void)
{
	return mixed ? ZSM_MEM_HOST : win_type();
}
#define STRESS_SLOT 64
#define STRESS_DEPTH 128

struct windows {
	struct zsm_rma_window data, sig, stress, odd;
	/* --mixed: a host stress window, and GPU signal words. */
	struct zsm_rma_window stress_host, sig_gpu;
};

/* --mixed: put i of the stress goes to the host stress window when
 * i % 3 is 1, to the GPU one otherwise; its signal to the GPU word when
 * i is even, to the host word when odd (every pairing of the two). */
static int stress_to_host(unsigned i)
{
	return mixed && i % 3 == 1;
}

static int signal_to_gpu(unsigned i)
{
	return mixed && i % 2 == 0;
}

/* --nic-signals on a host signal word: the forged signal's key is. */
static int forged_key(void)
{
	return nic_signals && sig_type() == ZSM_MEM_HOST && !misaligned &&
	       !bad_get;
}

static void nap(void)
{
	struct timespec ts = {0, 20000};

	nanosleep(&ts, NULL);
}

/* test() until req is done: its result. */
static int wait_req(void *req)
{
	int done = 0, ret;

	while (!(ret = zsm_test(req, &done, NULL)) && !done)
		nap();
	return ret;
}

/* Each phase of rank 0, with the seconds since the last. */
static void phase(const char *what)
{
	static struct timespec last;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (last.tv_sec)
		printf("rank 0: %.2f s, then %s\n",
		       (double)(now.tv_sec - last.tv_sec) +
			       (double)(now.tv_nsec - last.tv_nsec) / 1e9,
		       what);
	fflush(stdout);
	last = now;
	oob_doing(what);
}

static uint64_t load_acquire(const uint64_t *p)
{
	/* acquire: pairs with the engine's release add of the signal. */
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* The sizes and offsets of the byte-exact puts and gets. */
static const size_t sizes[] = {1, 7, 4093, 65537, (1u << 20) + 3,
			       WIN_BYTES - 5};
static const size_t offs[] = {0, 3, 1001, 77777, 5, 5};
/* Where each get lands in the initiator's window (odd too). */
static const size_t get_offs[] = {1, 2, 1000, 3, 7, 4};
#define NCASES (sizeof(sizes) / sizeof(sizes[0]))
/* The initiator's get window: the largest get at its offset, and room. */
#define BACK_BYTES (WIN_BYTES + 64)
#define POISON 0xee
/* What rank 1 writes over put k's bytes itself, for the second get. */
#define REWRITE_SEED(k) ((uint32_t)(k) + 101)

/* Put i of the stress is all there, in its window. */
static int stress_put_there(unsigned char *stress, unsigned char *stress_host,
			    uint64_t i)
{
	unsigned char *win = stress_to_host((unsigned)i) ? stress_host : stress;

	return zsm_pattern_check(win + i * STRESS_SLOT, STRESS_SLOT,
				 (uint32_t)(1000 + i)) < 0;
}

/*
 * --mixed: signals alternate between the GPU word (even puts) and the
 * host word (odd ones).  One word read, the other, read after it, must
 * show every signal that came before: host word at h means signals up to
 * 2h-1 are visible, so the GPU word is at least h; GPU word at g means up
 * to 2g-2, so the host word is at least g-1.  Each pass reads them in
 * the other order, and checks the puts of every signal known visible.
 */
static int stress_mixed(const uint64_t *host_word, const uint64_t *gpu_word,
			unsigned char *stress, unsigned char *stress_host)
{
	uint64_t seen = 0, h, g, known;
	unsigned pass = 0;

	while (seen < STRESS) {
		if (pass++ % 2) {
			h = load_acquire(host_word);
			g = load_acquire(gpu_word);
			if (g < h)
				return oob_fail("host word at %llu, then the GPU "
						"word at %llu: GPU signals "
						"before it not there",
						(unsigned long long)h,
						(unsigned long long)g);
		} else {
			g = load_acquire(gpu_word);
			h = load_acquire(host_word);
			if (g && h < g - 1)
				return oob_fail("GPU word at %llu, then the host "
						"word at %llu: host signals "
						"before it not there",
						(unsigned long long)g,
						(unsigned long long)h);
		}
		if (2 * h > STRESS || (g && 2 * g - 1 > STRESS))
			return oob_fail("signal counts %llu (host) and %llu "
					"(GPU) above %u signals",
					(unsigned long long)h,
					(unsigned long long)g, STRESS);
		known = g ? 2 * g - 1 : 0;
		if (2 * h > known)
			known = 2 * h;
		for (; seen < known; seen++)
			if (!stress_put_there(stress, stress_host, seen))
				return oob_fail("signals up to %llu seen, but "
						"put %llu not all there",
						(unsigned long long)known - 1,
						(unsigned long long)seen);
		if (seen < STRESS)
			nap();
	}
	return OOB_PASS;
}

static int target(void)
{
	unsigned char *data = calloc(1, WIN_BYTES);
	uint64_t *sig = calloc(SIG_WORDS, sizeof(uint64_t));
	uint64_t *sig_gpu = calloc(SIG_WORDS, sizeof(uint64_t));
	unsigned char *stress = calloc(STRESS, STRESS_SLOT);
	unsigned char *stress_host = calloc(STRESS, STRESS_SLOT);
	struct windows w = {0};
	char handle[ZSM_HANDLE_BYTES];
	void *ctx, *lc, *rc = NULL, *mh[6] = {0};
	uint64_t seen = 0, words[SIG_WORDS];
	int ret;

	if (!data || !sig || !sig_gpu || !stress || !stress_host)
		return oob_fail("out of memory");
	if (fake_gpu)
		fake_driver();
	if (zsm_init(&ctx, 0, -1, NULL) ||
	    zsm_listen(ctx, 0, handle, &lc))
		return oob_fail("init or listen failed");
	if (oob_send(handle, sizeof(handle)))
		return OOB_FAIL;
	oob_doing("accept");
	if (core_pair_accept(lc, &rc))
		return OOB_FAIL;
	if (idle_first) {
		/* Past the 1 s for which net keeps looking in after
		 * something came: the engine's thread is then in its
		 * untimed sleep. */
		struct timespec ts = {.tv_sec = 1, .tv_nsec = 500000000L};

		nanosleep(&ts, NULL);
	}
	if (zsm_reg_window(rc, data, WIN_BYTES, win_type(), &mh[0],
			   &w.data) ||
	    zsm_reg_window(rc, sig, SIG_WORDS * 8, sig_type(), &mh[1],
			   &w.sig) ||
	    zsm_reg_window(rc, stress, STRESS * STRESS_SLOT, win_type(),
			   &mh[2], &w.stress) ||
	    /* 4 bytes off alignment: no signal word of it is aligned. */
	    zsm_reg_window(rc, (char *)sig + 4, 16, ZSM_MEM_HOST, &mh[3],
			   &w.odd) ||
	    (mixed && (zsm_reg_window(rc, stress_host, STRESS * STRESS_SLOT,
				      ZSM_MEM_HOST, &mh[4], &w.stress_host) ||
		       zsm_reg_window(rc, sig_gpu, SIG_WORDS * 8, ZSM_MEM_CUDA,
				      &mh[5], &w.sig_gpu))))
		return oob_fail("regWindow failed");
	if (!w.data.id || w.data.size != WIN_BYTES)
		return oob_fail("window descriptor not filled");
	if (oob_send(&w, sizeof(w)))
		return OOB_FAIL;

	oob_doing("byte-exact puts");
	for (unsigned k = 0; k < NCASES; k++) {
		long bad;

		while (load_acquire(&sig[0]) < k + 1)
			nap();
		bad = zsm_pattern_check(data + offs[k], sizes[k], k + 1);
		if (bad >= 0)
			return oob_fail("put %u (%zu bytes at %zu): byte %ld "
					"differs once its signal was seen",
					k, sizes[k], offs[k], bad);
		/* Once rank 0 got them back: new bytes of our own (with
		 * --fake-gpu GPU writes, which never reach the mirror), which
		 * its second get must read. */
		if (oob_barrier())
			return OOB_FAIL;
		zsm_pattern_fill(data + offs[k], sizes[k], REWRITE_SEED(k));
		if (oob_barrier() || oob_barrier())
			return OOB_FAIL;
	}
	oob_doing("signal alone");
	while (load_acquire(&sig[2]) < 5)
		nap();
	if (load_acquire(&sig[2]) != 5 || load_acquire(&sig[1]) != 0)
		return oob_fail("signal alone: word 2 is %llu (want 5), word "
				"1 is %llu (want 0)",
				(unsigned long long)sig[2],
				(unsigned long long)sig[1]);
	if (oob_barrier())
		return OOB_FAIL;

	oob_doing("strong signals");
	if (mixed && stress_mixed(&sig[3], &sig_gpu[3], stress, stress_host))
		return OOB_FAIL;
	while (!mixed && seen < STRESS) {
		uint64_t n = load_acquire(&sig[3]);

		if (n > STRESS)
			return oob_fail("signal count %llu above %d",
					(unsigned long long)n, STRESS);
		for (; seen < n; seen++) {
			long bad = zsm_pattern_check(
				stress + seen * STRESS_SLOT, STRESS_SLOT,
				(uint32_t)(1000 + seen));

			if (bad >= 0)
				return oob_fail("signal count %llu seen, but "
						"put %llu not all there (byte "
						"%ld)",
						(unsigned long long)n,
						(unsigned long long)seen, bad);
		}
		if (seen < STRESS)
			nap();
	}
	if (oob_barrier())
		return OOB_FAIL;

	/* Rank 0 sends a forged signal, or a get past a window's end. */
	oob_doing(bad_get ? "a get past a window's end" : "a forged signal");
	memcpy(words, sig, sizeof(words));
	if (oob_barrier())
		return OOB_FAIL;
	if (forged_key()) {
		/* Its request failed at the initiator; nothing here saw
		 * it. */
		if (zsm_comm_failed(rc) || memcmp(words, sig, sizeof(words)))
			return oob_fail("a signal under a forged key %s",
					zsm_comm_failed(rc)
						? "failed the comm"
						: "changed a signal word");
	} else {
		/* A receive posted on the comm reports its failure. */
		char buf[8];
		void *bufs[1] = {buf}, *req = NULL;
		size_t len = sizeof(buf);
		int tag = 1;

		/* Refused at once when the signal came first. */
		ret = zsm_irecv(rc, 1, bufs, &len, &tag, NULL, &req);
		if (!ret && req)
			ret = wait_req(req);
		if (ret != -EPROTO)
			return oob_fail("%s: the comm's receive gave "
					"%d, want -EPROTO",
					bad_get ? "a get past a window's end"
					: misaligned
						? "a signal to a misaligned word"
						: "a signal for a window that "
						  "is not ours",
					ret);
	}
	for (int i = 0; i < 6; i++)
		if (mh[i])
			zsm_dereg_mr(rc, mh[i]);
	zsm_close_recv(rc);
	zsm_close_listen(lc);
	zsm_finalize(ctx);
	free(data);
	free(sig);
	free(sig_gpu);
	free(stress);
	free(stress_host);
	return OOB_PASS;
}

/* Get case k's bytes of window w into back (poisoned first, with a
 * byte on each side). */
static int get_back(void *sc, unsigned char *back, void *mh,
		    const struct zsm_rma_window *w, unsigned k, void **req)
{
	memset(back + get_offs[k] - 1, POISON, sizes[k] + 2);
	return zsm_iget(sc, back + get_offs[k], sizes[k], mh, w, offs[k], req);
}

/* Get k done: its bytes are pattern seed (what), the bytes around them
 * still the poison. */
static int check_back(const unsigned char *back, unsigned k, void *req,
		      uint32_t seed, const char *what)
{
	const unsigned char *at = back + get_offs[k];
	long bad;
	int ret = wait_req(req);

	if (ret)
		return oob_fail("get %u completed with %d", k, ret);
	bad = zsm_pattern_check(at, sizes[k], seed);
	if (bad >= 0)
		return oob_fail("get %u (%zu bytes at %zu, into %zu): byte %ld "
				"is not %s",
				k, sizes[k], offs[k], get_offs[k], bad, what);
	if (at[-1] != POISON || at[sizes[k]] != POISON)
		return oob_fail("get %u wrote outside its %zu bytes", k,
				sizes[k]);
	return 0;
}

static int initiator(void)
{
	unsigned char *src = malloc(WIN_BYTES), *back = malloc(BACK_BYTES);
	unsigned char *slots = malloc(STRESS_DEPTH * STRESS_SLOT);
	char handle[ZSM_HANDLE_BYTES];
	struct windows w;
	struct zsm_rma_window forged, src_win, back_win;
	void *ctx, *sc = NULL, *req, *reqs[STRESS_DEPTH] = {0}, *src_mh = NULL;
	void *back_mh = NULL;
	int ret;

	if (!src || !back || !slots)
		return oob_fail("out of memory");
	if (fake_gpu)
		fake_driver();
	if (zsm_init(&ctx, 0, -1, NULL))
		return oob_fail("init failed");
	if (oob_recv(handle, sizeof(handle)))
		return OOB_FAIL;
	phase("connect");
	if (core_pair_connect(ctx, handle, &sc))
		return OOB_FAIL;
	if (oob_recv(&w, sizeof(w)))
		return OOB_FAIL;

	phase("refusals");
	if (zsm_iput(sc, src, 9, NULL, &w.sig, SIG_WORDS * 8 - 8, NULL, 0, 0,
		     &req) != -EINVAL || req)
		return oob_fail("a put past the window's end was taken");
	if (zsm_iput(sc, NULL, 0, NULL, NULL, 0, &w.sig, 4, 1, &req) !=
		    -EINVAL)
		return oob_fail("an unaligned signal was taken");
	if (zsm_iput(sc, NULL, 0, NULL, NULL, 0, NULL, 0, 0, &req) != -EINVAL)
		return oob_fail("a put of 0 bytes without a signal was taken");
	if (zsm_iget(sc, back, 17, NULL, &w.data, WIN_BYTES - 16, &req) !=
	    -EINVAL)
		return oob_fail("a get past the window's end was taken");

	phase("byte-exact puts and gets");
	/* From and into GPU windows of ours too: a put's bytes are copied
	 * down first, a get's up after. */
	if (fake_gpu && (zsm_reg_window(sc, src, WIN_BYTES, ZSM_MEM_CUDA,
					&src_mh, &src_win) ||
			 zsm_reg_window(sc, back, BACK_BYTES, ZSM_MEM_CUDA,
					&back_mh, &back_win)))
		return oob_fail("regWindow of the source or the get window "
				"failed");
	for (unsigned k = 0; k < NCASES; k++) {
		void *get_req;

		zsm_pattern_fill(src, sizes[k], k + 1);
		ret = zsm_iput(sc, src, sizes[k], src_mh, &w.data, offs[k],
			       &w.sig, 0, 1, &req);
		if (ret || !req)
			return oob_fail("iput %u: %d", k, ret);
		/* Right behind it, not waiting: it must read the put's
		 * bytes. */
		ret = get_back(sc, back, back_mh, &w.data, k, &get_req);
		if (ret || !get_req)
			return oob_fail("iget %u: %d", k, ret);
		ret = wait_req(req);
		if (ret)
			return oob_fail("put %u completed with %d", k, ret);
		ret = check_back(back, k, get_req, k + 1, "the put's");
		if (ret)
			return ret;
		/* Rank 1 checked the put, then writes bytes of its own
		 * over it. */
		if (oob_barrier() || oob_barrier())
			return OOB_FAIL;
		ret = get_back(sc, back, back_mh, &w.data, k, &get_req);
		if (ret || !get_req)
			return oob_fail("second iget %u: %d", k, ret);
		ret = check_back(back, k, get_req, REWRITE_SEED(k),
				 "rank 1's own");
		if (ret)
			return ret;
		if (oob_barrier())
			return OOB_FAIL;
	}
	phase("signal alone");
	ret = zsm_iput(sc, NULL, 0, NULL, NULL, 0, &w.sig, 16, 2, &req);
	if (ret || !req || wait_req(req))
		return oob_fail("a signal alone failed");
	ret = zsm_iput(sc, NULL, 0, NULL, NULL, 0, &w.sig, 16, 3, &req);
	if (ret || !req || wait_req(req))
		return oob_fail("a signal alone failed");
	if (oob_barrier())
		return OOB_FAIL;

	phase("strong signals");
	for (unsigned i = 0; i < STRESS + STRESS_DEPTH; i++) {
		unsigned k = i % STRESS_DEPTH;
		unsigned char *slot = slots + (size_t)k * STRESS_SLOT;

		/* The slot's last put is done: its buffer is free. */
		if (reqs[k]) {
			ret = wait_req(reqs[k]);
			if (ret)
				return oob_fail("stress put %u: %d",
						i - STRESS_DEPTH, ret);
			reqs[k] = NULL;
		}
		if (i >= STRESS)
			continue;
		zsm_pattern_fill(slot, STRESS_SLOT, 1000 + i);
		do {
			ret = zsm_iput(sc, slot, STRESS_SLOT, NULL,
				       stress_to_host(i) ? &w.stress_host
							 : &w.stress,
				       (uint64_t)i * STRESS_SLOT,
				       signal_to_gpu(i) ? &w.sig_gpu : &w.sig,
				       24, 1, &reqs[k]);
		} while (!ret && !reqs[k] && (nap(), 1));
		if (ret)
			return oob_fail("stress iput %u: %d", i, ret);
	}
	if (oob_barrier())
		return OOB_FAIL;

	if (bad_get) {
		/* The owner checks what a get names against its window, not
		 * against the descriptor we hold: forge its size. */
		phase("a get past a window's end");
		forged = w.data;
		forged.size += 4096;
		ret = zsm_iget(sc, back, 100, back_mh, &forged,
			       WIN_BYTES - 50, &req);
		if (ret || !req)
			return oob_fail("the get past the end was not taken: "
					"%d", ret);
		ret = wait_req(req);
		if (ret != -EPROTO)
			return oob_fail("the get past the end completed with "
					"%d, want -EPROTO",
					ret);
	} else {
		phase("a forged signal");
		forged = w.sig;
		forged.id ^= 0x5a5a0000;
		if (forged_key())
			forged.key ^= 0x5a5a0000;
		if (misaligned)
			forged = w.odd;
		ret = zsm_iput(sc, NULL, 0, NULL, NULL, 0, &forged, 0, 1,
			       &req);
		if (ret || !req)
			return oob_fail("sending the forged signal failed: %d",
					ret);
		/* The owner's refusal is the request's result (over net
		 * a signal is done only once its owner said it applied
		 * it); the NIC's add under a key the peer never gave is
		 * refused by its provider. */
		ret = wait_req(req);
		if (forged_key() ? ret >= 0 : ret != -EPROTO)
			return oob_fail("the forged signal completed with %d, "
					"want %s",
					ret,
					forged_key() ? "an error" : "-EPROTO");
		if (forged_key())
			printf("rank 0: the forged signal's add failed: %d "
			       "(%s)\n",
			       ret, strerror(-ret));
	}
	/* Under atomic the owner acknowledges every SIGNAL, and says when
	 * one failed its comm: ours fails too, rather than hold its next
	 * add for ever.  The owner answers within its next passes; the
	 * limit is only there so that nothing hangs. */
	if (nic_signals && misaligned && !bad_get) {
		struct timespec t0, now;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (!zsm_comm_failed(sc)) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec > 60)
				return oob_fail("the owner refused our signal, "
						"but 60 s later our comm had "
						"not heard it");
			nap();
		}
		printf("rank 0: the owner's refusal failed our comm too\n");
	}
	if (oob_barrier())
		return OOB_FAIL;
	phase("the end");
	if (src_mh)
		zsm_dereg_mr(sc, src_mh);
	if (back_mh)
		zsm_dereg_mr(sc, back_mh);
	zsm_close_send(sc);
	zsm_finalize(ctx);
	free(src);
	free(back);
	free(slots);
	return OOB_PASS;
}

int main(int argc, char **argv)
{
	int rank;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ce") == 0) {
			over_ce = 1;
		} else if (strcmp(argv[i], "--misaligned") == 0) {
			misaligned = 1;
		} else if (strcmp(argv[i], "--fake-gpu") == 0) {
			fake_gpu = 1;
		} else if (strcmp(argv[i], "--bad-get") == 0) {
			bad_get = 1;
		} else if (strcmp(argv[i], "--mixed") == 0) {
			mixed = 1;
		} else if (strcmp(argv[i], "--nic-signals") == 0) {
			nic_signals = 1;
		} else if (strcmp(argv[i], "--idle-first") == 0) {
			idle_first = 1;
		} else if (strcmp(argv[i], "--stress") == 0 && i + 1 < argc &&
			   atoi(argv[i + 1]) > 0) {
			STRESS = (unsigned)atoi(argv[++i]);
		} else {
			fprintf(stderr,
				"usage: %s [--stress N] [--ce] "
				"[--misaligned] [--fake-gpu [--mixed]] "
				"[--bad-get] [--nic-signals] [--idle-first]\n",
				argv[0]);
			return 2;
		}
	}
	if (mixed && !fake_gpu) {
		fprintf(stderr, "%s: --mixed needs --fake-gpu\n", argv[0]);
		return 2;
	}
	rank = oob_start(240);
	if (rank < 0)
		return OOB_FAIL;
	return oob_finish(rank ? target() : initiator());
}
