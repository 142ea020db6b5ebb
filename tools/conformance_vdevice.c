/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance's check of makeVDevice (ncclNet v9+): NCCL fuses
 * devices 0 and 1 into one; the new device must be counted by devices(),
 * say which devices it fused (vProps) with a name of its own and at
 * least their speed, and carry messages byte-exact between the ranks.
 */
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "pattern.h"

static const size_t vd_sizes[] = { 1, 4097, 1 << 20, (16 << 20) + 3 };

/* The fused device's properties against its members'. */
static int vd_props(struct lb_ctx *x, int d, int ndev)
{
	struct zsm_client_props p, m;
	int now = -1;

	LB_CALL(x, zsm_client_devices(x->c, &now));
	LB_EXPECT(now == ndev + 1 && d == ndev,
		  "makeVDevice gave device %d, devices() %d: the new one "
		  "comes after the %d there were (2.5 makeVDevice)",
		  d, now, ndev);
	LB_CALL(x, zsm_client_get_properties(x->c, d, &p));
	LB_EXPECT(p.vprops_ndevs == 2 && p.vprops_devs[0] == 0 &&
			  p.vprops_devs[1] == 1,
		  "device %d: vProps {%d, {%d, %d}}, not the fused {2, {0, 1}}",
		  d, p.vprops_ndevs, p.vprops_devs[0], p.vprops_devs[1]);
	LB_EXPECT(p.max_recvs >= 1 && p.max_recvs <= LB_RECVS_MAX,
		  "device %d: maxRecvs %d outside [1, %d]", d, p.max_recvs,
		  LB_RECVS_MAX);
	x->max_recvs = p.max_recvs;
	for (int k = 0; k < 2; k++) {
		LB_CALL(x, zsm_client_get_properties(x->c, k, &m));
		LB_EXPECT(p.name && m.name && strcmp(p.name, m.name) != 0,
			  "device %d has the name of device %d (%s)", d, k,
			  m.name ? m.name : "NULL");
		LB_EXPECT(p.speed >= m.speed,
			  "device %d: speed %d below device %d's %d", d,
			  p.speed, k, m.speed);
	}
	if (x->rank == 0)
		printf("# abi %d: device %d '%s' fuses 0 and 1, %d Mb/s\n",
		       lb_opts.abi, d, p.name, p.speed);
	return OOB_PASS;
}

static int vd_move(struct lb_ctx *x)
{
	int sizes[LB_RECVS_MAX];
	struct lb_buf b;
	void *req;
	long bad;

	for (size_t k = 0; k < sizeof(vd_sizes) / sizeof(vd_sizes[0]); k++) {
		size_t size = vd_sizes[k];

		LB_TRY(lb_buf_alloc(&b, size));
		LB_TRY(lb_buf_reg(x, &b, x->rank ? x->recv : x->send));
		LB_OOB(oob_barrier());
		if (x->rank == 0) {
			zsm_pattern_fill(b.p, size, 90 + (uint32_t)k);
			LB_TRY(lb_post_send(x, x->send, b.p, size, 5, b.mh,
					    &req));
		} else {
			LB_TRY(lb_post_recv(x, x->recv, 1, &b.vp, &b.size,
					    (int[]){ 5 }, &b.mh, &req));
		}
		LB_TRY(lb_wait(x, req, sizes, "a message on the fused device"));
		LB_EXPECT(sizes[0] >= 0 && (size_t)sizes[0] == size,
			  "size %zu: test reported %d bytes", size, sizes[0]);
		if (x->rank == 1) {
			bad = zsm_pattern_check(b.p, size, 90 + (uint32_t)k);
			LB_EXPECT(bad < 0, "size %zu: byte %ld differs", size,
				  bad);
			LB_TRY(lb_buf_guards(&b, "vdevice"));
		}
		LB_TRY(lb_buf_free(x, &b));
	}
	return OOB_PASS;
}

int check_vdevice(int rank, void *arg)
{
	struct lb_ctx x;
	int ndev = -1, d = -1, has = 0, r;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	LB_CALL(&x, zsm_client_devices(x.c, &ndev));
	r = ndev < 2 ? ncclInvalidUsage
		     : zsm_client_make_vdevice(x.c, 2, (int[]){ 0, 1 }, &d,
					       &has);
	if (!has) {
		LB_TRY(lb_teardown(&x));
		return oob_skip("%s", ndev < 2 ? "fewer than 2 devices to fuse"
					       : "the table has no makeVDevice "
						 "(physical devices only)");
	}
	LB_EXPECT(r == ncclSuccess, "makeVDevice({0, 1}) returned %s",
		  zsm_client_result_str(r));
	LB_TRY(vd_props(&x, d, ndev));
	x.dev = d;
	LB_TRY(lb_connect_pair(&x, &x.send, &x.recv));
	LB_OOB(oob_barrier());
	LB_TRY(vd_move(&x));
	return lb_teardown(&x);
}
