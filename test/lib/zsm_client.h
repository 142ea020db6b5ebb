/* SPDX-License-Identifier: MIT */
/*
 * A version-neutral client over any NCCL net plugin's ncclNetPlugin_vN
 * table (v8..v12): one set of functions whatever version the .so exports,
 * so tests and zsm-bench can drive our plugin and others the same way.
 * Every call returns the plugin's ncclResult_t as an int (0 = success).
 */
#ifndef ZSM_TEST_CLIENT_H
#define ZSM_TEST_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "abi/nccl_net.h"

#define ZSM_CLIENT_ABI_MIN 8
#define ZSM_CLIENT_ABI_MAX 12
/* Largest properties struct of any version (v12). */
#define ZSM_CLIENT_PROPS_RAW_MAX 128
/* Byte the raw properties struct is filled with before getProperties. */
#define ZSM_CLIENT_POISON 0xA5
/* Result for a wait that ran out of time; outside ncclResult_t's range. */
#define ZSM_CLIENT_TIMEOUT 1000

struct zsm_client;

/*
 * Every field of every properties version.  Fields the version lacks are
 * set to what NCCL's compat layer would assume (see has_* and raw_size).
 */
struct zsm_client_props {
	char *name;
	char *pci_path;
	uint64_t guid;
	int ptr_support;
	int reg_is_global;
	int force_flush;
	int speed;
	int port;
	float latency;
	int max_comms;
	int max_recvs;
	int net_device_type;
	int net_device_version;
	int vprops_ndevs;
	int vprops_devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
	size_t max_p2p_bytes;
	size_t max_coll_bytes;
	int max_multi_request_size;
	int16_t rail_id;
	int16_t plane_id;

	/* The struct exactly as the plugin wrote it, poisoned beforehand. */
	size_t raw_size;
	unsigned char raw[ZSM_CLIENT_PROPS_RAW_MAX];
	/*
	 * Comma-separated names of the fields whose bytes all still hold the
	 * poison (never written), "" when every field was written.  For
	 * vProps.devs only the first ndevs entries count.
	 */
	char unwritten[256];
};

/*
 * dlopen(path, RTLD_NOW | RTLD_LOCAL) and pick ncclNetPlugin_vN: the
 * highest of v12..v8 when abi is 0, else exactly that version.  Returns
 * ncclSystemError when the library does not load, ncclInvalidArgument when
 * the table is missing; the cause goes to stderr.
 */
int zsm_client_open(const char *path, int abi, struct zsm_client **out);
/*
 * dlclose (skipped when ZSM_CLIENT_KEEP_LOADED is set, so valgrind can name
 * the frames of leaks) and free; close comms and finalize first.
 */
void zsm_client_close(struct zsm_client *c);

int zsm_client_abi(const struct zsm_client *c);
const char *zsm_client_name(const struct zsm_client *c);
/* The v11+ context that init returned (NULL before, and for v8..v10). */
void *zsm_client_ctx(const struct zsm_client *c);

/*
 * v8/v9: init(logger); v10: init(logger, NULL); v11/v12: init(&ctx,
 * comm_id, &{trafficClass = -1}, logger, NULL).
 */
int zsm_client_init(struct zsm_client *c, uint64_t comm_id);
/* v11+: finalize(ctx); a no-op success on older versions. */
int zsm_client_finalize(struct zsm_client *c);

int zsm_client_devices(struct zsm_client *c, int *ndev);
int zsm_client_get_properties(struct zsm_client *c, int dev,
			      struct zsm_client_props *props);

/*
 * makeVDevice (v9+) over devs[0..n) into *d: the plugin's result, or
 * ncclInvalidUsage (not calling it) when n is over what the version's
 * vProps hold; *has says whether the table has one (NULL: none, v8).
 */
int zsm_client_make_vdevice(struct zsm_client *c, int n, const int *devs,
			    int *d, int *has);

int zsm_client_listen(struct zsm_client *c, int dev, void *handle,
		      void **listen_comm);
/* One call; *send_comm == NULL with success means "call again". */
int zsm_client_connect(struct zsm_client *c, int dev, void *handle,
		       void **send_comm);
/* One call; *recv_comm == NULL with success means "call again". */
int zsm_client_accept(struct zsm_client *c, void *listen_comm,
		      void **recv_comm);
/*
 * Drive connect (when handle is not NULL) and accept (when listen_comm is
 * not NULL) until both finished, failing after timeout_ms with
 * ZSM_CLIENT_TIMEOUT.  Writes which call failed into *what.
 */
int zsm_client_connect_accept(struct zsm_client *c, int dev, void *handle,
			      void *listen_comm, void **send_comm,
			      void **recv_comm, int timeout_ms,
			      const char **what);

int zsm_client_reg_mr(struct zsm_client *c, void *comm, void *data, size_t size,
		      int type, void **mhandle);
int zsm_client_dereg_mr(struct zsm_client *c, void *comm, void *mhandle);

/* v8 takes an int size: sizes above INT_MAX give ncclInvalidArgument. */
int zsm_client_isend(struct zsm_client *c, void *send_comm, void *data,
		     size_t size, int tag, void *mhandle, void **request);
/*
 * *request is handed to the plugin untouched (tests preset it).  n is at
 * most 64; v8 gets the sizes as int, v10+ get an array of NULL phandles.
 */
int zsm_client_irecv(struct zsm_client *c, void *recv_comm, int n, void **data,
		     const size_t *sizes, const int *tags, void **mhandles,
		     void **request);
int zsm_client_iflush(struct zsm_client *c, void *recv_comm, int n, void **data,
		      int *sizes, void **mhandles, void **request);
int zsm_client_test(struct zsm_client *c, void *request, int *done, int *sizes);
/*
 * Call test until done, at most timeout_ms; ZSM_CLIENT_TIMEOUT when it
 * did not finish.  sizes may be NULL.  With tracking on, every other
 * outstanding request is tested between the calls.
 */
int zsm_client_wait(struct zsm_client *c, void *request, int *sizes,
		    int timeout_ms);

/*
 * Tracking (off by default): the client keeps every request isend, irecv
 * and iflush hand out until a test sees it finish, so that
 * zsm_client_progress can go on testing them, as NCCL's proxy thread
 * keeps testing its outstanding requests whatever else it waits for; a plugin
 * whose provider moves data only inside its calls (manual progress) needs
 * that.  zsm_client_test of a request that progress saw finish gives the
 * caller what the plugin reported then (result, done, and exactly the
 * sizes[] entries it wrote), once.  zsm_client_wait and
 * zsm_client_connect_accept call progress between their own calls.
 * Closing a comm forgets its requests, as NCCL tests none after a close.
 */
void zsm_client_track(struct zsm_client *c, int on);
/*
 * With on, the client's own retry loops (connect/accept, wait) yield the
 * CPU between calls that say "not yet": under valgrind, which runs one
 * thread at a time, a loop that never yields keeps the plugin's own thread
 * (which would finish the work) off the CPU for millions of calls.
 */
void zsm_client_yield(struct zsm_client *c, int on);
/*
 * One pass of progress: test, on each comm, the oldest tracked request
 * not seen finished.  Returns how many tracked requests still pend.
 */
int zsm_client_progress(struct zsm_client *c);
/* Tracked requests not seen finished yet. */
int zsm_client_outstanding(const struct zsm_client *c);

int zsm_client_close_send(struct zsm_client *c, void *send_comm);
int zsm_client_close_recv(struct zsm_client *c, void *recv_comm);
int zsm_client_close_listen(struct zsm_client *c, void *listen_comm);

/*
 * The raw ncclNetPlugin_vN table (vN = zsm_client_abi), for tests that
 * call a slot with arguments the client would not pass (NULLs).
 */
const void *zsm_client_table(const struct zsm_client *c);

/* "ncclSystemError" etc., "timeout" for ZSM_CLIENT_TIMEOUT. */
const char *zsm_client_result_str(int result);
/* How many WARN lines the plugin has logged in this process. */
unsigned zsm_client_warns(void);

/*
 * ncclDebugLogger_t writing to stderr: WARN always, INFO and TRACE when
 * ZSM_CLIENT_LOG=info|trace.
 */
void zsm_client_logger(int level, unsigned long flags, const char *file,
		       int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Monotonic time. */
uint64_t zsm_client_now_ns(void);

#endif
