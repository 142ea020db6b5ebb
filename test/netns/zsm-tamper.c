/* SPDX-License-Identifier: MIT */
/*
 * zsm-tamper: network faults on one interface, for the tests across two
 * namespaces, where the kernel lacks netem and tc's pedit and csum actions
 * (a minimal kernel has cls_bpf and tcx but neither).  It builds a small
 * classifier program instruction by instruction (no compiler, no libbpf),
 * attaches it to the interface through a tcx link, and holds the
 * link until SIGTERM or SIGINT, then prints its counters and detaches.
 *
 *   zsm-tamper drop IFNAME      drop every packet leaving IFNAME: a
 *                               partition with the link up (netem's
 *                               "loss 100%")
 *   zsm-tamper corrupt IFNAME   on IFNAME's ingress, in IPv4 TCP segments
 *                               that carry at least ZT_WINDOW_AT + 16
 *                               payload bytes, look at the payload from
 *                               ZT_WINDOW_AT on for a word of zsm-netfault's
 *                               corrupt pattern ("zsm!" and 4 hash bytes);
 *                               where its first hash byte is 0 and its
 *                               second below 0x40 (1 word in 1024), flip
 *                               the second and fix the TCP checksum, so
 *                               that the receiver's TCP takes the segment
 *                               as good.  Ingress, because Linux's TCP
 *                               hands a device GSO packets whatever its
 *                               offloads and, with them off, cuts them
 *                               into segments only after the sender's
 *                               egress hook: real segments, each with a
 *                               checksum computed in software, are seen
 *                               where they arrive.
 *   zsm-tamper offload-off IFNAME
 *                               TSO, GSO, GRO, scatter-gather and TX
 *                               checksum offload off: the sender's kernel
 *                               cuts and checksums segments in software,
 *                               and the receiver's verifies them.
 *
 * Prints "attached" when the program is in place (the tests wait for that
 * line).  Exit 77 with the reason when the kernel cannot do it.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* enum bpf_attach_type since Linux 6.6; Debian 12's headers are 6.1. */
#define ZT_TCX_INGRESS 46
#define ZT_TCX_EGRESS 47
/* tcx's verdicts. */
#define ZT_TCX_PASS 0
#define ZT_TCX_DROP 2

/* Where in the payload the corrupt program looks: deep in a segment. */
#define ZT_WINDOW_AT 1024
/* Offsets in a frame: Ethernet, then IPv4 without options, then TCP. */
#define ZT_ETH_LEN 14
#define ZT_TCP_AT (ZT_ETH_LEN + 20)
#define ZT_TCP_CSUM_AT (ZT_TCP_AT + 16)
#define ZT_FLIP 0x5a

/* Counters in the array map. */
enum { ZT_C_SEEN, ZT_C_LONG, ZT_C_ALTERED, ZT_C_GSO, ZT_NCOUNTERS };
static const char *const zt_counter_names[ZT_NCOUNTERS] = {
	"seen", "long", "altered", "gso",
};

#define ZT_MAX_INSNS 1024
#define ZT_MAX_LABELS 64

struct zt_prog {
	struct bpf_insn insn[ZT_MAX_INSNS];
	int n;
	int label_at[ZT_MAX_LABELS];
	/* Jumps to patch: instruction index and label. */
	int fix_insn[ZT_MAX_INSNS], fix_label[ZT_MAX_INSNS], nfix;
	int nlabels;
	int map_fd;
};

static void zt_emit(struct zt_prog *p, uint8_t code, uint8_t dst, uint8_t src,
		    int16_t off, int32_t imm)
{
	struct bpf_insn *i;

	if (p->n >= ZT_MAX_INSNS) {
		fprintf(stderr, "zsm-tamper: program too long\n");
		exit(1);
	}
	i = &p->insn[p->n++];
	memset(i, 0, sizeof(*i));
	i->code = code;
	i->dst_reg = dst & 0xf;
	i->src_reg = src & 0xf;
	i->off = off;
	i->imm = imm;
}

static int zt_label(struct zt_prog *p)
{
	p->label_at[p->nlabels] = -1;
	return p->nlabels++;
}

static void zt_here(struct zt_prog *p, int label)
{
	p->label_at[label] = p->n;
}

/* A conditional jump (op: BPF_JNE...) of dst against imm, to a label. */
static void zt_jmp_imm(struct zt_prog *p, uint8_t op, uint8_t dst,
		       int32_t imm, int label)
{
	p->fix_insn[p->nfix] = p->n;
	p->fix_label[p->nfix++] = label;
	zt_emit(p, BPF_JMP | op | BPF_K, dst, 0, 0, imm);
}

static void zt_goto(struct zt_prog *p, int label)
{
	zt_jmp_imm(p, BPF_JA, 0, 0, label);
}

static void zt_resolve(struct zt_prog *p)
{
	for (int k = 0; k < p->nfix; k++)
		p->insn[p->fix_insn[k]].off =
			(int16_t)(p->label_at[p->fix_label[k]] -
				  p->fix_insn[k] - 1);
}

static void zt_mov_imm(struct zt_prog *p, uint8_t dst, int32_t imm)
{
	zt_emit(p, BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm);
}

static void zt_mov_reg(struct zt_prog *p, uint8_t dst, uint8_t src)
{
	zt_emit(p, BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0);
}

static void zt_alu_imm(struct zt_prog *p, uint8_t op, uint8_t dst,
		       int32_t imm)
{
	zt_emit(p, BPF_ALU64 | op | BPF_K, dst, 0, 0, imm);
}

/* dst = *(size *)(src + off) */
static void zt_load(struct zt_prog *p, uint8_t size, uint8_t dst, uint8_t src,
		    int16_t off)
{
	zt_emit(p, BPF_LDX | BPF_MEM | size, dst, src, off, 0);
}

static void zt_store(struct zt_prog *p, uint8_t size, uint8_t dst,
		     int16_t off, uint8_t src)
{
	zt_emit(p, BPF_STX | BPF_MEM | size, dst, src, off, 0);
}

static void zt_call(struct zt_prog *p, int func)
{
	zt_emit(p, BPF_JMP | BPF_CALL, 0, 0, 0, func);
}

/* counters[idx] += 1; clobbers r0-r5. */
static void zt_count(struct zt_prog *p, int idx)
{
	int skip = zt_label(p);

	zt_emit(p, BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, idx);
	/* r1 = the map (a 64-bit immediate in two instructions). */
	zt_emit(p, BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0,
		p->map_fd);
	zt_emit(p, 0, 0, 0, 0, 0);
	zt_mov_reg(p, BPF_REG_2, BPF_REG_10);
	zt_alu_imm(p, BPF_ADD, BPF_REG_2, -4);
	zt_call(p, BPF_FUNC_map_lookup_elem);
	zt_jmp_imm(p, BPF_JEQ, BPF_REG_0, 0, skip);
	zt_mov_imm(p, BPF_REG_1, 1);
	zt_emit(p, BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0,
		BPF_ADD);
	zt_here(p, skip);
}

static void zt_build_drop(struct zt_prog *p)
{
	zt_count(p, ZT_C_SEEN);
	zt_mov_imm(p, BPF_REG_0, ZT_TCX_DROP);
	zt_emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

/*
 * The corrupt program.  r6: the skb; r8: the payload offset of the
 * window; the stack holds the headers at fp-64 and the window at fp-96.
 * Stack loads must be aligned, so the marker is matched byte by byte at
 * each of the 8 places a word can start in the window.
 */
#define ZT_HDR_FP (-64)
#define ZT_WIN_FP (-96)
#define ZT_WIN_LEN 16

static void zt_build_corrupt(struct zt_prog *p)
{
	static const unsigned char marker[4] = { 'z', 's', 'm', '!' };
	int pass = zt_label(p), hit[8], next;

	zt_mov_reg(p, BPF_REG_6, BPF_REG_1);
	/* The Ethernet, IPv4 and TCP headers: 48 bytes. */
	zt_mov_reg(p, BPF_REG_1, BPF_REG_6);
	zt_mov_imm(p, BPF_REG_2, 0);
	zt_mov_reg(p, BPF_REG_3, BPF_REG_10);
	zt_alu_imm(p, BPF_ADD, BPF_REG_3, ZT_HDR_FP);
	zt_mov_imm(p, BPF_REG_4, 48);
	zt_call(p, BPF_FUNC_skb_load_bytes);
	zt_jmp_imm(p, BPF_JNE, BPF_REG_0, 0, pass);
	/* EtherType 0x0800 as the little-endian load of its bytes. */
	zt_load(p, BPF_H, BPF_REG_1, BPF_REG_10, ZT_HDR_FP + 12);
	zt_jmp_imm(p, BPF_JNE, BPF_REG_1, 0x0008, pass);
	/* IPv4 without options, protocol TCP. */
	zt_load(p, BPF_B, BPF_REG_1, BPF_REG_10, ZT_HDR_FP + ZT_ETH_LEN);
	zt_jmp_imm(p, BPF_JNE, BPF_REG_1, 0x45, pass);
	zt_load(p, BPF_B, BPF_REG_1, BPF_REG_10, ZT_HDR_FP + ZT_ETH_LEN + 9);
	zt_jmp_imm(p, BPF_JNE, BPF_REG_1, 6, pass);
	zt_count(p, ZT_C_SEEN);
	/* A GSO packet (offloads on) is longer than an Ethernet frame. */
	next = zt_label(p);
	zt_load(p, BPF_W, BPF_REG_1, BPF_REG_6, offsetof(struct __sk_buff, len));
	zt_jmp_imm(p, BPF_JLE, BPF_REG_1, 1514, next);
	zt_count(p, ZT_C_GSO);
	zt_here(p, next);
	/* r8 = where the window starts: after the TCP header (doff). */
	zt_load(p, BPF_B, BPF_REG_8, BPF_REG_10, ZT_HDR_FP + ZT_TCP_AT + 12);
	zt_alu_imm(p, BPF_RSH, BPF_REG_8, 4);
	zt_alu_imm(p, BPF_LSH, BPF_REG_8, 2);
	zt_alu_imm(p, BPF_ADD, BPF_REG_8, ZT_TCP_AT + ZT_WINDOW_AT);
	/* Too short a segment: the load fails. */
	zt_mov_reg(p, BPF_REG_1, BPF_REG_6);
	zt_mov_reg(p, BPF_REG_2, BPF_REG_8);
	zt_mov_reg(p, BPF_REG_3, BPF_REG_10);
	zt_alu_imm(p, BPF_ADD, BPF_REG_3, ZT_WIN_FP);
	zt_mov_imm(p, BPF_REG_4, ZT_WIN_LEN);
	zt_call(p, BPF_FUNC_skb_load_bytes);
	zt_jmp_imm(p, BPF_JNE, BPF_REG_0, 0, pass);
	zt_count(p, ZT_C_LONG);
	for (int a = 0; a < 8; a++) {
		hit[a] = zt_label(p);
		next = zt_label(p);
		for (int b = 0; b < 4; b++) {
			zt_load(p, BPF_B, BPF_REG_1, BPF_REG_10,
				(int16_t)(ZT_WIN_FP + a + b));
			zt_jmp_imm(p, BPF_JNE, BPF_REG_1, marker[b], next);
		}
		/* 1 word in 1024: hash byte 0 is 0, byte 1 below 0x40. */
		zt_load(p, BPF_B, BPF_REG_1, BPF_REG_10,
			(int16_t)(ZT_WIN_FP + a + 4));
		zt_jmp_imm(p, BPF_JNE, BPF_REG_1, 0, next);
		zt_load(p, BPF_B, BPF_REG_1, BPF_REG_10,
			(int16_t)(ZT_WIN_FP + a + 5));
		zt_jmp_imm(p, BPF_JLT, BPF_REG_1, 0x40, hit[a]);
		zt_here(p, next);
	}
	zt_goto(p, pass);
	for (int a = 0; a < 8; a++) {
		/*
		 * Flip byte a + 5 of the window.  The TCP checksum sums
		 * 16-bit words from the TCP header, which starts at an even
		 * offset, as does the window: the word holding the byte
		 * starts at (a + 5) & ~1 in the window.
		 */
		int at = a + 5, word = at & ~1;

		zt_here(p, hit[a]);
		zt_load(p, BPF_H, BPF_REG_7, BPF_REG_10,
			(int16_t)(ZT_WIN_FP + word));
		zt_load(p, BPF_B, BPF_REG_1, BPF_REG_10,
			(int16_t)(ZT_WIN_FP + at));
		zt_alu_imm(p, BPF_XOR, BPF_REG_1, ZT_FLIP);
		zt_store(p, BPF_B, BPF_REG_10, (int16_t)(ZT_WIN_FP + at),
			 BPF_REG_1);
		zt_load(p, BPF_H, BPF_REG_9, BPF_REG_10,
			(int16_t)(ZT_WIN_FP + word));
		/* bpf_skb_store_bytes(skb, r8 + at, fp + at, 1, 0) */
		zt_mov_reg(p, BPF_REG_1, BPF_REG_6);
		zt_mov_reg(p, BPF_REG_2, BPF_REG_8);
		zt_alu_imm(p, BPF_ADD, BPF_REG_2, at);
		zt_mov_reg(p, BPF_REG_3, BPF_REG_10);
		zt_alu_imm(p, BPF_ADD, BPF_REG_3, ZT_WIN_FP + at);
		zt_mov_imm(p, BPF_REG_4, 1);
		zt_mov_imm(p, BPF_REG_5, 0);
		zt_call(p, BPF_FUNC_skb_store_bytes);
		zt_jmp_imm(p, BPF_JNE, BPF_REG_0, 0, pass);
		/* bpf_l4_csum_replace(skb, csum, old word, new word, 2) */
		zt_mov_reg(p, BPF_REG_1, BPF_REG_6);
		zt_mov_imm(p, BPF_REG_2, ZT_TCP_CSUM_AT);
		zt_mov_reg(p, BPF_REG_3, BPF_REG_7);
		zt_mov_reg(p, BPF_REG_4, BPF_REG_9);
		zt_mov_imm(p, BPF_REG_5, 2);
		zt_call(p, BPF_FUNC_l4_csum_replace);
		zt_count(p, ZT_C_ALTERED);
		zt_goto(p, pass);
	}
	zt_here(p, pass);
	zt_mov_imm(p, BPF_REG_0, ZT_TCX_PASS);
	zt_emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

static long zt_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static volatile sig_atomic_t zt_stop;

static void zt_on_signal(int sig)
{
	(void)sig;
	zt_stop = 1;
}

static int zt_skip(const char *what, int err)
{
	printf("zsm-tamper: SKIP: %s: %s\n", what, strerror(err));
	fflush(stdout);
	return 77;
}

static int zt_attach(const char *mode, const char *ifname)
{
	static char log[1 << 16];
	static struct zt_prog p;
	union bpf_attr a;
	unsigned ifindex = if_nametoindex(ifname);
	int drop = !strcmp(mode, "drop"), prog_fd, link_fd;
	unsigned where = drop ? ZT_TCX_EGRESS : ZT_TCX_INGRESS;
	struct sigaction sa;
	sigset_t mask, old;

	if (!ifindex) {
		fprintf(stderr, "zsm-tamper: no interface %s\n", ifname);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = ZT_NCOUNTERS;
	p.map_fd = (int)zt_bpf(BPF_MAP_CREATE, &a);
	if (p.map_fd < 0)
		return zt_skip("the kernel refuses a BPF map", errno);
	if (drop)
		zt_build_drop(&p);
	else
		zt_build_corrupt(&p);
	zt_resolve(&p);

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SCHED_CLS;
	a.insns = (uintptr_t)p.insn;
	a.insn_cnt = (unsigned)p.n;
	a.license = (uintptr_t) "Dual MIT/GPL";
	a.log_buf = (uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	a.expected_attach_type = where;
	prog_fd = (int)zt_bpf(BPF_PROG_LOAD, &a);
	if (prog_fd < 0) {
		int err = errno;

		/* The verifier's reasons, for whoever debugs the program. */
		if (err == EACCES || err == EINVAL)
			fprintf(stderr, "zsm-tamper: verifier:\n%s\n", log);
		return zt_skip("the kernel refuses a tc BPF program", err);
	}
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = (unsigned)prog_fd;
	a.link_create.target_ifindex = ifindex;
	a.link_create.attach_type = where;
	link_fd = (int)zt_bpf(BPF_LINK_CREATE, &a);
	if (link_fd < 0)
		return zt_skip("no tcx link (Linux 6.6 or later)", errno);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = zt_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, &old);
	printf("zsm-tamper: attached %s (%d instructions) to %s %s\n", mode,
	       p.n, ifname, drop ? "egress" : "ingress");
	fflush(stdout);
	while (!zt_stop)
		sigsuspend(&old);
	close(link_fd);
	printf("zsm-tamper: %s on %s:", mode, ifname);
	for (uint32_t k = 0; k < ZT_NCOUNTERS; k++) {
		uint64_t v = 0;

		memset(&a, 0, sizeof(a));
		a.map_fd = (unsigned)p.map_fd;
		a.key = (uintptr_t)&k;
		a.value = (uintptr_t)&v;
		if (zt_bpf(BPF_MAP_LOOKUP_ELEM, &a))
			v = 0;
		printf(" %s=%llu", zt_counter_names[k], (unsigned long long)v);
	}
	printf("\n");
	return 0;
}

static int zt_offload_off(const char *ifname)
{
	static const struct {
		uint32_t cmd;
		const char *name;
	} feats[] = {
		{ ETHTOOL_STSO, "tso" },	{ ETHTOOL_SGSO, "gso" },
		{ ETHTOOL_SGRO, "gro" },	{ ETHTOOL_SSG, "sg" },
		{ ETHTOOL_STXCSUM, "tx-checksum" },
	};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), bad = 0;

	if (fd < 0) {
		perror("zsm-tamper: socket");
		return 1;
	}
	for (size_t k = 0; k < sizeof(feats) / sizeof(feats[0]); k++) {
		struct ethtool_value v = { .cmd = feats[k].cmd, .data = 0 };
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		ifr.ifr_data = (void *)&v;
		if (ioctl(fd, SIOCETHTOOL, &ifr)) {
			fprintf(stderr, "zsm-tamper: %s: %s off: %s\n", ifname,
				feats[k].name, strerror(errno));
			bad++;
		}
	}
	close(fd);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "offload-off"))
		return zt_offload_off(argv[2]);
	if (argc == 3 &&
	    (!strcmp(argv[1], "drop") || !strcmp(argv[1], "corrupt")))
		return zt_attach(argv[1], argv[2]);
	fprintf(stderr, "usage: zsm-tamper drop|corrupt|offload-off IFNAME\n");
	return 2;
}
