/* SPDX-License-Identifier: MIT */
/*
 * Loads the plugin as NCCL does (RTLD_NOW|RTLD_LOCAL), checks each table's
 * name and properties from a poisoned struct, and that load/unload cycles
 * leave no thread or descriptor behind.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_net.h"

static int failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);           \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
			failures++;                                           \
		}                                                             \
	} while (0)

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void check_props_v12(const ncclNetProperties_v12_t *p, int dev)
{
	CHECK(p->name && p->name != (void *)0xa5a5a5a5a5a5a5a5ULL,
	      "name not written");
	CHECK(p->ptrSupport & NCCL_PTR_HOST, "ptrSupport 0x%x", p->ptrSupport);
	CHECK(p->netDeviceType == NCCL_NET_DEVICE_HOST, "netDeviceType %d",
	      p->netDeviceType);
	CHECK(p->netDeviceVersion == 0, "netDeviceVersion %d",
	      p->netDeviceVersion);
	CHECK(p->maxP2pBytes > 0 && p->maxP2pBytes <= NCCL_MAX_NET_SIZE_BYTES,
	      "maxP2pBytes %zu", p->maxP2pBytes);
	CHECK(p->maxCollBytes > 0 &&
		      p->maxCollBytes <= NCCL_MAX_NET_SIZE_BYTES,
	      "maxCollBytes %zu", p->maxCollBytes);
	CHECK(p->maxRecvs == 8, "maxRecvs %d", p->maxRecvs);
	CHECK(p->speed > 0, "speed %d", p->speed);
	CHECK(p->maxComms > 0, "maxComms %d", p->maxComms);
	CHECK(p->vProps.ndevs == 1 && p->vProps.devs[0] == dev,
	      "vProps {%d, %d}", p->vProps.ndevs, p->vProps.devs[0]);
	for (int i = 1; i < 8; i++)
		CHECK(p->vProps.devs[i] == 0, "vProps.devs[%d] poisoned", i);
	CHECK(p->maxMultiRequestSize >= 1, "maxMultiRequestSize %d",
	      p->maxMultiRequestSize);
	CHECK(p->railId == -1 && p->planeId == -1, "rail %d plane %d",
	      p->railId, p->planeId);
	CHECK(p->forceFlush == 0 || p->forceFlush == 1, "forceFlush %d",
	      p->forceFlush);
	CHECK(p->regIsGlobal == 0 || p->regIsGlobal == 1, "regIsGlobal %d",
	      p->regIsGlobal);
	CHECK(p->latency >= 0 && p->latency < 1e6, "latency %f",
	      (double)p->latency);
}

static void cycle(const char *lib, int round)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	const ncclNet_v12_t *v12;
	const ncclNet_v11_t *v11;
	const ncclNet_v8_t *v8;
	const char *names[] = {"ncclNetPlugin_v8", "ncclNetPlugin_v9",
			       "ncclNetPlugin_v10", "ncclNetPlugin_v11",
			       "ncclNetPlugin_v12"};
	void *ctx = NULL;
	int ndev = 0;

	CHECK(h, "dlopen: %s", dlerror());
	if (!h)
		return;
	for (int i = 0; i < 5; i++) {
		const char *const *name = dlsym(h, names[i]);

		CHECK(name && *name && strcmp(*name, "zsm") == 0,
		      "%s missing or not named zsm", names[i]);
	}
	v12 = dlsym(h, "ncclNetPlugin_v12");
	v11 = dlsym(h, "ncclNetPlugin_v11");
	v8 = dlsym(h, "ncclNetPlugin_v8");
	/* NCCL 2.28.9 calls finalize after a failed init, with no context. */
	CHECK(v11->finalize(NULL) == ncclSuccess, "finalize(NULL)");
	CHECK(v12->init(&ctx, 7, NULL, NULL, NULL) == ncclSuccess,
	      "v12 init");
	CHECK(v12->devices(&ndev) == ncclSuccess && ndev > 0, "devices %d",
	      ndev);
	for (int d = 0; d < ndev; d++) {
		ncclNetProperties_v12_t p12;
		ncclNetProperties_v8_t p8;

		memset(&p12, 0xa5, sizeof(p12));
		CHECK(v12->getProperties(d, &p12) == ncclSuccess, "props");
		check_props_v12(&p12, d);
		for (int e = 0; e < d; e++) {
			ncclNetProperties_v12_t q;

			v12->getProperties(e, &q);
			CHECK(strcmp(q.name, p12.name) != 0,
			      "devices %d and %d share the name %s", d, e,
			      q.name);
		}
		memset(&p8, 0xa5, sizeof(p8));
		CHECK(v8->getProperties(d, &p8) == ncclSuccess, "v8 props");
		CHECK(p8.netDeviceType == 0 && p8.maxRecvs == 8 &&
			      strcmp(p8.name, p12.name) == 0,
		      "v8 properties disagree with v12");
	}
	CHECK(v12->getProperties(ndev, &(ncclNetProperties_v12_t){0}) !=
		      ncclSuccess,
	      "a device past the end is refused");
	CHECK(v12->finalize(ctx) == ncclSuccess, "finalize");
	(void)round;
	dlclose(h);
}

int main(int argc, char **argv)
{
	int fds0, fds1, tasks0, tasks1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
		return 2;
	}
	/*
	 * Keep libfabric itself loaded: its providers allocate in their
	 * constructors on every load and never free, which would bury a leak
	 * of ours under theirs.  The plugin is still unloaded each cycle.
	 */
	if (!dlopen("libfabric.so.1", RTLD_NOW | RTLD_GLOBAL))
		printf("note: could not pin libfabric: %s\n", dlerror());
	cycle(argv[1], 0);
	fds0 = count_dir("/proc/self/fd");
	tasks0 = count_dir("/proc/self/task");
	for (int i = 1; i <= 20; i++)
		cycle(argv[1], i);
	fds1 = count_dir("/proc/self/fd");
	tasks1 = count_dir("/proc/self/task");
	CHECK(fds1 <= fds0, "file descriptors grew from %d to %d", fds0, fds1);
	CHECK(tasks1 <= tasks0, "threads grew from %d to %d", tasks0, tasks1);
	printf("%s: %d failure(s); fds %d -> %d, threads %d -> %d\n", argv[0],
	       failures, fds0, fds1, tasks0, tasks1);
	return failures ? 1 : 0;
}
