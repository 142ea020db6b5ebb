/* SPDX-License-Identifier: MIT */
/*
 * common/cuda_drv on whatever machine runs it.  Without libcuda.so.1 or
 * a device, open must fail with -ENOENT or -ENODEV and a reason, and the
 * test skips printing it.  With a GPU, device memory must round-trip
 * through every helper, the driver must see it as device memory of the
 * device in use, and failures must come back as -errno with a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cuda_drv.h"

/* Odd, so nothing depends on a round size. */
#define T_SIZE ((1u << 20) + 3)
#define T_HOLE_AT 4093
#define T_HOLE_LEN 100
#define T_HOLE_BYTE 0x5a

static int t_failed;

#define T_EXPECT(cond, ...)                                                   \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
			t_failed = 1;                                         \
		}                                                             \
	} while (0)

static unsigned char t_byte(size_t i)
{
	return (unsigned char)(i * 131u + (i >> 9) + 7u);
}

/*
 * GPUDirect registers GPU memory as a dma-buf where the device can export
 * one: the driver must give an fd whose size covers the pages asked for
 * (a dma-buf's size is what lseek to its end says).
 */
static void t_dmabuf(struct zsm_cuda_drv *d, zsm_cu_deviceptr p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (T_SIZE + page - 1) / page * page;
	int ok = 0, fd = -1, r;
	off_t end;

	r = d->device_get_attribute(&ok,
				    ZSM_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
				    d->dev);
	T_EXPECT(r == ZSM_CU_SUCCESS, "dma-buf attribute: result %d", r);
	if (!d->mem_get_handle_range || !ok) {
		printf("dma-buf: not offered here (%s)\n",
		       d->mem_get_handle_range ? "device attribute 0"
					       : "no cuMemGetHandleForAddressRange");
		return;
	}
	T_EXPECT(p % page == 0, "cuMemAlloc gave an address off a page");
	r = d->mem_get_handle_range(&fd, p, len,
				    ZSM_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	T_EXPECT(r == ZSM_CU_SUCCESS && fd >= 0, "dma-buf export: result %d",
		 r);
	if (r != ZSM_CU_SUCCESS || fd < 0)
		return;
	end = lseek(fd, 0, SEEK_END);
	T_EXPECT(end >= (off_t)len, "dma-buf of %zu bytes says %lld", len,
		 (long long)end);
	printf("dma-buf: exported %zu bytes (fd size %lld)\n", len,
	       (long long)end);
	close(fd);
}

/* Writes, a memset over part of it, and a read back, on one device. */
static void t_round_trip(struct zsm_cuda_drv *d)
{
	unsigned char *in = malloc(T_SIZE), *out = malloc(T_SIZE);
	zsm_cu_deviceptr p = 0;
	unsigned long long ord = 99;
	unsigned int type = 0;
	char why[256] = "";
	size_t i, bad = T_SIZE;
	int r;

	if (!in || !out) {
		T_EXPECT(0, "out of host memory");
		goto out;
	}
	for (i = 0; i < T_SIZE; i++)
		in[i] = t_byte(i);
	memset(out, 0, T_SIZE);
	r = zsm_cuda_drv_alloc(d, T_SIZE, &p, why, sizeof(why));
	T_EXPECT(r == 0 && p, "alloc: %d %s", r, why);
	if (r)
		goto out;
	r = zsm_cuda_drv_copy_htod(d, p, in, T_SIZE, why, sizeof(why));
	T_EXPECT(r == 0, "htod: %d %s", r, why);
	r = zsm_cuda_drv_memset(d, p + T_HOLE_AT, T_HOLE_BYTE, T_HOLE_LEN, why,
				sizeof(why));
	T_EXPECT(r == 0, "memset: %d %s", r, why);
	r = zsm_cuda_drv_copy_dtoh(d, out, p, T_SIZE, why, sizeof(why));
	T_EXPECT(r == 0, "dtoh: %d %s", r, why);
	for (i = 0; i < T_SIZE && bad == T_SIZE; i++) {
		unsigned char want = i >= T_HOLE_AT &&
					     i < T_HOLE_AT + T_HOLE_LEN
				     ? T_HOLE_BYTE
				     : in[i];

		if (out[i] != want)
			bad = i;
	}
	T_EXPECT(bad == T_SIZE, "byte %zu came back 0x%02x", bad,
		 bad < T_SIZE ? out[bad] : 0);

	r = d->pointer_get_attribute(&type,
				     ZSM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
	T_EXPECT(r == ZSM_CU_SUCCESS && type == ZSM_CU_MEMORYTYPE_DEVICE,
		 "memory type: result %d, type %u", r, type);
	/* The attribute is an int; the upper bytes must stay ours. */
	r = d->pointer_get_attribute(
		&ord, ZSM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
	T_EXPECT(r == ZSM_CU_SUCCESS && (int)ord == d->ordinal,
		 "device ordinal: result %d, ordinal %d, in use %d", r,
		 (int)ord, d->ordinal);

	t_dmabuf(d, p);

	/* Failures: an address that was never allocated. */
	why[0] = '\0';
	r = zsm_cuda_drv_free(d, p + 1, why, sizeof(why));
	T_EXPECT(r < 0 && strstr(why, "cuMemFree") && strstr(why, "CUDA_"),
		 "freeing a bad address: %d '%s'", r, why);
	r = zsm_cuda_drv_free(d, p, why, sizeof(why));
	T_EXPECT(r == 0, "free: %d %s", r, why);
out:
	free(in);
	free(out);
}

int main(void)
{
	struct zsm_cuda_drv d;
	char why[256] = "";
	int r, ndev;

	r = zsm_cuda_drv_open(&d, why, sizeof(why));
	if (r == -ENOENT || r == -ENODEV) {
		if (!why[0]) {
			printf("FAIL: open returned %d without a reason\n", r);
			return 1;
		}
		printf("SKIP: %s\n", why);
		zsm_cuda_drv_close(&d);
		return 77;
	}
	if (r) {
		printf("FAIL: open: %d %s\n", r, why);
		return 1;
	}
	printf("driver %d.%d, %d device%s\n", d.driver_version / 1000,
	       d.driver_version % 1000 / 10, d.ndev, d.ndev == 1 ? "" : "s");

	why[0] = '\0';
	r = zsm_cuda_drv_use_device(&d, d.ndev, why, sizeof(why));
	T_EXPECT(r == -ENODEV && strstr(why, "does not exist"),
		 "device %d: %d '%s'", d.ndev, r, why);
	T_EXPECT(d.ordinal == -1, "a failed use_device left ordinal %d",
		 d.ordinal);
	/* Twice: the second must not keep a second primary context. */
	r = zsm_cuda_drv_use_device(&d, 0, why, sizeof(why));
	T_EXPECT(r == 0, "device 0: %d %s", r, why);
	r = zsm_cuda_drv_use_device(&d, 0, why, sizeof(why));
	T_EXPECT(r == 0, "device 0 again: %d %s", r, why);
	if (!r) {
		printf("device 0 at PCI %s\n",
		       d.pci_bus_id[0] ? d.pci_bus_id : "?");
		t_round_trip(&d);
	}
	if (!r && d.ndev > 1) {
		r = zsm_cuda_drv_use_device(&d, d.ndev - 1, why, sizeof(why));
		T_EXPECT(r == 0, "device %d: %d %s", d.ndev - 1, r, why);
		if (!r)
			t_round_trip(&d);
	}
	ndev = d.ndev > 1 ? 2 : 1;
	zsm_cuda_drv_close(&d);
	T_EXPECT(d.lib == NULL && d.ordinal == -1, "close left state");
	if (t_failed)
		return 1;
	printf("PASS: cuda_drv round trips on %d device%s\n", ndev,
	       ndev > 1 ? "s" : "");
	return 0;
}
