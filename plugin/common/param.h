/* SPDX-License-Identifier: MIT */
/*
 * Every ZSM_* environment variable, in one table.  Each is read once, when
 * the plugin first initialises, and checked against its range or choices;
 * docs/configuration.md is rendered from this table by zsm-info.
 */
#ifndef ZSM_COMMON_PARAM_H
#define ZSM_COMMON_PARAM_H

#include <stdio.h>

enum zsm_param_type {
	ZSM_PARAM_INT,
	ZSM_PARAM_BOOL,
	ZSM_PARAM_ENUM, /* stored as the index into choices */
	ZSM_PARAM_STR,
	ZSM_PARAM_LIST, /* a string: names separated by commas, none empty */
};

/* X(name, type, default, min, max, choices, help) */
#define ZSM_PARAM_TABLE(X)                                                    \
	X(LOG, ZSM_PARAM_ENUM, "warn", 0, 0, "warn|info|trace",              \
	  "Log level on stderr when NCCL gives no logger (NCCL_DEBUG "        \
	  "filters NCCL's own).")                                             \
	X(PROVIDER, ZSM_PARAM_STR, "auto", 0, 0, NULL,                        \
	  "libfabric provider. 'auto' takes the best offered per NIC: efa, "  \
	  "cxi, verbs;ofi_rxm, tcp;ofi_rxm. A name forces that provider, and " \
	  "init fails when it gives no device: 'tcp;ofi_rxm' that one, 'tcp' " \
	  "libfabric's own tcp RDM endpoint where it offers one (from 1.18), " \
	  "else tcp;ofi_rxm. FI_PROVIDER also filters what libfabric offers.") \
	X(DOMAIN, ZSM_PARAM_LIST, "", 0, 0, NULL,                             \
	  "Comma-separated libfabric domains (NICs) to use, e.g. 'lo' or "    \
	  "'eth0,eth1'; each must become a device, or init fails saying "     \
	  "why it cannot. Empty: every NIC but loopback, or loopback when "   \
	  "it is the only one.")                                              \
	X(PROXY, ZSM_PARAM_ENUM, "thread", 0, 0, "thread|inline",             \
	  "Who drives progress: the plugin's proxy thread, or the caller's "  \
	  "test() (inline, for debugging and comparison).")                   \
	X(PROXY_ASSIST, ZSM_PARAM_ENUM, "auto", 0, 0, "auto|0|1",             \
	  "With ZSM_PROXY=thread, let test() run one progress pass itself "   \
	  "when the proxy is not busy (1), which saves a thread hand-off "    \
	  "where cores are scarce but takes the caller's time (NCCL's "       \
	  "proxy thread) from its own work. auto: 1 when the process may "    \
	  "run on 4 CPUs or fewer; with more, only a caller that finds the "  \
	  "same request pending twice in a row (it is waiting) runs one.")    \
	X(PROXY_SPIN_US, ZSM_PARAM_INT, "50", 0, 1000000, NULL,               \
	  "How long the proxy thread polls without finding work before it "   \
	  "sleeps (microseconds).")                                           \
	X(QUEUE_DEPTH, ZSM_PARAM_INT, "4096", 64, 65536, NULL,                \
	  "Descriptor queue slots (rounded up to a power of two). A full "    \
	  "queue makes isend/irecv return a NULL request (retry).")           \
	X(CONNECT_TIMEOUT_MS, ZSM_PARAM_INT, "30000", 100, 3600000, NULL,     \
	  "How long connect() waits for the listener's answer before it "     \
	  "fails; also how long a rank of the RMA tables waits for its "      \
	  "peers in connect and in each regMrSym before the registration "    \
	  "fails on every rank.")                                             \
	X(MR_CACHE, ZSM_PARAM_BOOL, "1", 0, 1, NULL,                          \
	  "Share one provider registration among overlapping live "          \
	  "registrations of the same domain.")                                \
	X(MR_LOCAL, ZSM_PARAM_BOOL, "0", 0, 1, NULL,                          \
	  "1: register every buffer zsm sends from or receives into, and "    \
	  "pass its descriptor, on every provider, as those that ask for "    \
	  "FI_MR_LOCAL (verbs, efa-direct) need: tests that path where no "   \
	  "such NIC is. Costs a registration per buffer.")                    \
	X(CE, ZSM_PARAM_BOOL, "1", 0, 1, NULL,                                \
	  "Move the data of comms whose peer runs on this host through the "  \
	  "same-host transport (one copy by cross-memory attach) instead "    \
	  "of the network provider. 0: always the network.")                  \
	X(CE_HUGEPAGE, ZSM_PARAM_BOOL, "1", 0, 1, NULL,                       \
	  "regMr of host memory on a same-host comm moves the buffer's "      \
	  "whole huge-page extents onto transparent huge pages (MADV_"        \
	  "COLLAPSE, Linux 6.1; contents kept), since cross-memory attach "   \
	  "pins a peer's 4 KiB pages at about half the speed. Registration "  \
	  "takes longer (1 to 6 ms per 2 MiB measured). Machines whose THP "  \
	  "mode is 'never' are left alone. 0: leave the pages.")              \
	X(CE_GPU, ZSM_PARAM_BOOL, "0", 0, 1, NULL,                            \
	  "Advertise GPU buffers (NCCL_PTR_CUDA) when a CUDA driver is "      \
	  "there, on devices that cannot take them over the network. "        \
	  "Same-host comms move them on copy engines; comms to other hosts "  \
	  "refuse them, so keep it off for multi-host jobs where NCCL would " \
	  "use GPUDirect.")                                                   \
	X(CE_GPU_UNMAP, ZSM_PARAM_BOOL, "0", 0, 1, NULL,                      \
	  "Keep ce's mapping of a peer's GPU buffer until the comm closes "   \
	  "(0), or close it as soon as the peer deregisters the buffer, so "  \
	  "that its memory is freed at once (1). A close waits for the "      \
	  "device while holding the CUDA driver's lock, and NCCL can hang "   \
	  "when one lands while its kernel waits for ce's copies.")           \
	X(GDR, ZSM_PARAM_BOOL, "1", 0, 1, NULL,                               \
	  "GPU buffers over the network (GPUDirect RDMA) where an RDMA "      \
	  "provider (efa, cxi, verbs) offers FI_HMEM and a CUDA driver is "   \
	  "there; GPUs before Hopper also need the provider's RMA reads, "    \
	  "which flush. 0: network devices take host memory only.")           \
	X(GDR_FLUSH, ZSM_PARAM_ENUM, "auto", 0, 0, "auto|never|always",       \
	  "What iflush does. auto: a loopback RMA read of the last received " \
	  "GPU buffer, which makes the NIC's earlier writes visible to the "  \
	  "GPU (NCCL asks only where the GPU needs it). never: nothing, for " \
	  "platforms known to order those writes. always: the read for host " \
	  "buffers too, to test the path and measure its cost on any "        \
	  "provider with RMA reads.")                                         \
	X(DMABUF, ZSM_PARAM_BOOL, "1", 0, 1, NULL,                            \
	  "Register GPU buffers with the provider as dma-bufs (NCCL_PTR_"     \
	  "DMABUF) where libfabric is 1.20 or later and every GPU supports "  \
	  "them; otherwise, or with 0, as CUDA memory (FI_HMEM_CUDA).")       \
	X(PEER_CHECK_MS, ZSM_PARAM_INT, "1000", 0, 600000, NULL,              \
	  "Liveness of peers on other hosts: while a comm has work "          \
	  "outstanding and nothing was heard from its peer for this long, "   \
	  "it probes the peer (a PING); a probe or a connect unanswered for " \
	  "a check interval (a quarter of this, at most 250 ms) also knocks " \
	  "at the peer's port (tcp): a host that refuses the knock has no "   \
	  "such process any more, and every comm to it fails at once "        \
	  "(ncclRemoteError), within 2 s of the death with the default, and " \
	  "a connect to it within 0.5 s. Peers on this host are "             \
	  "watched by their process (a stopped one is alive). 0: no probes, " \
	  "a silent peer is waited for.")                                     \
	X(PEER_TIMEOUT_MS, ZSM_PARAM_INT, "20000", 100, 3600000, NULL,        \
	  "How long a peer on another host that answers nothing, not even "   \
	  "a refusal, may stay silent (at least twice ZSM_PEER_CHECK_MS; "    \
	  "plus the time the largest receive posted from it, or the bytes "   \
	  "of puts and gets in flight with it, take at 10 MB/s) before "      \
	  "every comm to it fails (ncclRemoteError). 20 s: a process "        \
	  "stopped in a debugger or a swap storm, or a link down for 10 s, "  \
	  "is survived, as NCCL's own transports ride such outages out, "     \
	  "and a host that went silent is found within 21 s. A process "      \
	  "that died is found sooner, by the knock (ZSM_PEER_CHECK_MS).")     \
	X(NET_INFLIGHT, ZSM_PARAM_INT, "2048", 64, 65536, NULL,               \
	  "Data sends an endpoint keeps posted to the network provider at "   \
	  "once; more wait in their comm's queue, in order. The provider may " \
	  "hold a buffer of its eager size for each, and the receiver one "   \
	  "for each transfer in progress (16.5 KiB on tcp;ofi_rxm, from pools " \
	  "never given back), so this bounds that memory. The provider's "    \
	  "own queue, less a reserve for control messages, may lower it.")   \
	X(NET_DUPLEX, ZSM_PARAM_ENUM, "auto", 0, 0, "auto|0|1",               \
	  "1: each network device gets a second endpoint, for the comms "    \
	  "peers connect to, and each endpoint a thread of its own that "     \
	  "moves its bytes, so that traffic both ways at once (an "           \
	  "AllGather's) takes two cores instead of sharing one: for "         \
	  "providers whose bytes the host's CPUs move. auto: 1 on "           \
	  "tcp;ofi_rxm when the process may run on more than 4 CPUs.")        \
	X(NET_PATHS, ZSM_PARAM_ENUM, "1", 0, 0, "auto|1|2|3|4|5|6|7|8",       \
	  "Endpoints of a network device that one comm spreads its "         \
	  "messages over, each in a domain of its own, with a thread of its " \
	  "own where the process may run on more than 4 CPUs, so that a "     \
	  "provider whose bytes the host's CPUs move (tcp) moves one comm's " \
	  "bytes on as many cores. Consecutive messages of a tag go "        \
	  "on the paths in turn; a peer with fewer makes both use its "       \
	  "count. auto: one per 4 CPUs, at most 4, on tcp; 1 elsewhere.")     \
	X(NET_GROUP, ZSM_PARAM_ENUM, "gpu", 0, 0, "gpu|nic|all",             \
	  "Which NICs become one NCCL device. gpu: the NICs that serve one "  \
	  "GPU (under its PCIe switch, else its host bridge, on its NUMA "    \
	  "node, as sysfs places them) are one device with their summed "     \
	  "speed, each comm spreading its messages over all of them, as a "   \
	  "job that sets only NCCL_NET_PLUGIN expects; a NIC sysfs does not " \
	  "place is a device of its own. nic: every NIC a device of its "     \
	  "own. all: every NIC in one device (8 at most each), for hosts "    \
	  "whose NICs sysfs cannot place (virtual NICs). A NIC joins a "      \
	  "group only where a comm's messages may go on it as they are: not " \
	  "where the provider wants registered buffers (FI_MR_LOCAL: efa) "   \
	  "or takes GPU memory, whose registrations are one NIC's; zsm-info " \
	  "shows the devices and why.")                                      \
	X(NET_TX_PUMPS, ZSM_PARAM_ENUM, "auto", 0, 0, "auto|1|2|3|4",         \
	  "Duplex devices: threads that drive the sending endpoint's "       \
	  "provider. The first also watches for bytes coming in; the others " \
	  "run only while zsm has sends in the endpoint, and sleep "         \
	  "otherwise. On tcp a second one lets the bytes going out move "    \
	  "while the first is in another call, as a put's own test() loop "  \
	  "does for it: an AllGather's traffic both ways needs it to keep "  \
	  "up with a put one way (docs/benchmarking.md). auto: 2 when the "  \
	  "process may run on more than 8 CPUs, else 1.")                    \
	X(EARLY_MSGS, ZSM_PARAM_INT, "4", 1, 4096, NULL,                      \
	  "Small (eager) data messages a sender may send on a network comm "  \
	  "beyond the receives the receiver has posted; larger ones always "  \
	  "wait for their receive. The receiver's provider holds each early " \
	  "message in a buffer (about 17 KB on tcp;ofi_rxm, whatever its "    \
	  "size), so this bounds that memory per receive comm. The "          \
	  "receiver's value is the one that applies. On libfabric's own tcp " \
	  "RDM endpoint the comms of one peer get half of FI_TCP_MAX_SAVED "  \
	  "(32) in all, first come: that endpoint stops reading a peer with " \
	  "more unmatched messages than it keeps.")                           \
	X(CHECKSUM, ZSM_PARAM_BOOL, "0", 0, 1, NULL,                          \
	  "End-to-end CRC32C of every message sent from host memory over "    \
	  "the network, carried in remote CQ data and checked by the "        \
	  "receiver: a message altered in flight (past TCP's own checksum) "  \
	  "fails its receive (ncclRemoteError) instead of being delivered. "  \
	  "Needs 8 bytes of remote CQ data (tcp, cxi; not efa). Costs a "     \
	  "CPU pass over each message on both sides.")                        \
	X(RMA_SIGNAL, ZSM_PARAM_ENUM, "auto", 0, 0,                           \
	  "auto|atomic|saw|writedata|fence",                                  \
	  "How one-sided puts with signals are ordered over the network. "    \
	  "auto: the best the provider grants, asked of libfabric per "       \
	  "device (zsm-info says which). atomic: writes, then an atomic add " \
	  "ordered after them (hardware AMOs, cxi). saw: writes, then a "     \
	  "signal message ordered after them (tcp and verbs under rxm). "     \
	  "writedata: writes numbered in remote CQ data, signals applied in " \
	  "order at the target (efa). fence: each signal waits until the "   \
	  "earlier writes were delivered. A mechanism the provider cannot "   \
	  "build turns one-sided operations off on that device, with a "      \
	  "WARN.")                                                             \
	X(RMA, ZSM_PARAM_BOOL, "1", 0, 1, NULL,                               \
	  "Serve NCCL 2.30's RMA tables (ncclRmaPlugin_v14/v13: host "        \
	  "ncclPutSignal, zero-SM collectives across nodes), over the "       \
	  "network and between same-host peers, with windows in host or "     \
	  "GPU memory (staged through host memory where the NIC cannot "      \
	  "write GPU memory). With 0 their init fails and NCCL goes on "      \
	  "without them.")                                                     \
	X(HOSTID, ZSM_PARAM_STR, "", 0, 0, NULL,                              \
	  "Overrides the host identity, which tells each comm whether its "   \
	  "peer is on the same host (otherwise NCCL_HOSTID, else the "        \
	  "hostname and boot id). Tests set it so that two processes of one " \
	  "machine look like two hosts, e.g. across network namespaces. "     \
	  "Empty: not set.")                                                  \
	X(BOOT_TIMEOUT_MS, ZSM_PARAM_INT, "60000", 100, 3600000, NULL,       \
	  "zsm's own bootstrap (docs/api.md): how long init waits for every " \
	  "rank, and each later bootstrap call for the others, before it "    \
	  "fails (-ETIMEDOUT) naming who it waited for. Used where the "      \
	  "caller passes no timeout.")                                        \
	X(BOOT_IFNAME, ZSM_PARAM_STR, "", 0, 0, NULL,                         \
	  "Interface whose address rank 0 of zsm's bootstrap listens on "     \
	  "when it makes a unique id. Empty: the first interface that is up " \
	  "and not loopback, else loopback.")                                 \
	X(BOOT_ADDR, ZSM_PARAM_STR, "", 0, 0, NULL,                           \
	  "HOST:PORT (or [IPV6]:PORT) where rank 0 of zsm's bootstrap "       \
	  "listens when ranks start from a launcher's environment. Empty: "   \
	  "MASTER_ADDR and MASTER_PORT + 1 (torchrun's store holds "          \
	  "MASTER_PORT).")                                                    \
	X(BOOT_NONCE, ZSM_PARAM_STR, "", 0, 0, NULL,                          \
	  "Any text that every rank of one job shares and no other job "      \
	  "uses, for bootstraps from a launcher's environment; rank 0 "       \
	  "refuses connections that bring another. Empty: derived from the "  \
	  "address and the launcher's job id (docs/api.md).")                  \
	X(WAIT_TIMEOUT_MS, ZSM_PARAM_INT, "300000", 0, 86400000, NULL,        \
	  "zsm's API (docs/api.md): a wait for peers' signals, or for a "     \
	  "put's completion, that the stream (or a host-memory call) has "    \
	  "reached and that is not over after this long fails the "           \
	  "communicator (-ETIMEDOUT): every stream waiting on it is "         \
	  "released and later calls return the error. Peers that die are "    \
	  "usually seen sooner, by their links. 0: wait for ever.")

enum zsm_param_id {
#define ZSM_PARAM_ENUM_ID(name, ...) ZSM_P_##name,
	ZSM_PARAM_TABLE(ZSM_PARAM_ENUM_ID)
#undef ZSM_PARAM_ENUM_ID
	ZSM_P_COUNT
};

struct zsm_param_desc {
	const char *name; /* without the ZSM_ prefix */
	enum zsm_param_type type;
	const char *def;
	long long min;
	long long max;
	const char *choices;
	const char *help;
};

extern const struct zsm_param_desc zsm_param_descs[ZSM_P_COUNT];

typedef const char *(*zsm_param_getenv_fn)(const char *name);

/*
 * Parse every variable through getenv_fn (NULL: getenv).  Returns 0, or
 * -EINVAL after logging which variable was wrong and what it allows; the
 * previous values are kept on error.
 */
int zsm_param_load(zsm_param_getenv_fn getenv_fn);
long long zsm_param_int(enum zsm_param_id id);
const char *zsm_param_str(enum zsm_param_id id);
/* 1 when the value came from the environment, 0 for the default. */
int zsm_param_from_env(enum zsm_param_id id);
void zsm_param_print_md(FILE *out);
void zsm_param_print_values(FILE *out);

#endif
