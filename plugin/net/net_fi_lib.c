/* SPDX-License-Identifier: MIT */
/*
 * Owns the libfabric handle: opening it, resolving the six functions zsm
 * imports, and keeping the signal dispositions it found (net_fi_lib.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "net/net_fi_lib.h"
#include "zsm_config.h"

struct zsm_fi_lib zsm_fi;

static pthread_mutex_t zsm_fi_lib_lock = PTHREAD_MUTEX_INITIALIZER;
static void *zsm_fi_lib_handle;

/*
 * The versions a program built with our libfabric headers binds: the
 * build reads them from the library those headers came with (meson.build),
 * since each names the struct layouts the headers declare.
 */
static const struct {
	const char *name;
	const char *version;
	size_t slot;
} zsm_fi_lib_syms[] = {
	{"fi_getinfo", ZSM_FI_SYMVER_FI_GETINFO,
	 offsetof(struct zsm_fi_lib, getinfo)},
	{"fi_freeinfo", ZSM_FI_SYMVER_FI_FREEINFO,
	 offsetof(struct zsm_fi_lib, freeinfo)},
	{"fi_dupinfo", ZSM_FI_SYMVER_FI_DUPINFO,
	 offsetof(struct zsm_fi_lib, dupinfo)},
	{"fi_fabric", ZSM_FI_SYMVER_FI_FABRIC,
	 offsetof(struct zsm_fi_lib, fabric)},
	{"fi_strerror", ZSM_FI_SYMVER_FI_STRERROR,
	 offsetof(struct zsm_fi_lib, strerror)},
	{"fi_version", ZSM_FI_SYMVER_FI_VERSION,
	 offsetof(struct zsm_fi_lib, version)},
};

/* sigaction fills only the kernel's part of sa_mask: compare by member. */
static int zsm_fi_lib_same_action(const struct sigaction *a,
				  const struct sigaction *b)
{
	if (a->sa_handler != b->sa_handler || a->sa_flags != b->sa_flags)
		return 0;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&a->sa_mask, sig) !=
		    sigismember(&b->sa_mask, sig))
			return 0;
	return 1;
}

/* Append ", word" (or word first) to buf unless it is an item already. */
static void zsm_fi_lib_note(char *buf, size_t len, const char *word)
{
	size_t used = strlen(buf), n = strlen(word);

	for (const char *p = buf; (p = strstr(p, word)) != NULL; p += n)
		if ((p == buf || p[-1] == ' ') && (p[n] == ',' || !p[n]))
			return;
	snprintf(buf + used, len - used, "%s%s", used ? ", " : "", word);
}

/*
 * dlopen name, then put back each signal disposition that the load
 * changed: constructors of the library, or of one it pulls in, may take
 * handlers the application installed.  A disposition another thread
 * changes during the load is put back too: a window of one dlopen, once
 * per process.  RTLD_NOW: an unresolvable symbol in libfabric or a
 * provider it needs fails here, as an init error, not later as an abort
 * in the proxy thread.  RTLD_LOCAL: libfabric and what it brings (verbs,
 * psm, libnl) stay out of the global scope, where they could bind symbols
 * of libraries loaded later; NCCL loads the plugin the same way.
 */
static void *zsm_fi_lib_dlopen(const char *name)
{
	/* Under zsm_fi_lib_lock; static to keep 10 KiB off the stack. */
	static struct sigaction before[NSIG];
	static unsigned char saved[NSIG];
	char sigs[256] = "", libs[256] = "";
	void *h;

	for (int sig = 1; sig < NSIG; sig++)
		saved[sig] = sigaction(sig, NULL, &before[sig]) == 0;
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		ZSM_WARN("net: cannot load libfabric (%s): %s", name,
			 dlerror());
		return NULL;
	}
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction now;
		const char *abbrev = sigabbrev_np(sig);
		char sname[16];
		Dl_info where;
		void *addr;

		if (!saved[sig] || sigaction(sig, NULL, &now) != 0 ||
		    zsm_fi_lib_same_action(&before[sig], &now))
			continue;
		sigaction(sig, &before[sig], NULL);
		if (abbrev)
			snprintf(sname, sizeof(sname), "SIG%s", abbrev);
		else
			snprintf(sname, sizeof(sname), "%d", sig);
		zsm_fi_lib_note(sigs, sizeof(sigs), sname);
		/* POSIX: function and object pointers share a form. */
		memcpy(&addr, &now.sa_handler, sizeof(addr));
		if (dladdr(addr, &where) && where.dli_fname) {
			const char *base = strrchr(where.dli_fname, '/');

			zsm_fi_lib_note(libs, sizeof(libs),
					base ? base + 1 : where.dli_fname);
		}
	}
	if (sigs[0])
		ZSM_INFO("net: loading %s replaced the handlers of %s (by %s); "
			 "the previous ones are restored",
			 name, sigs, libs[0] ? libs : "an unknown library");
	return h;
}

int zsm_fi_lib_open(const char *name)
{
	struct zsm_fi_lib next;
	void *h;
	int ret = 0;

	pthread_mutex_lock(&zsm_fi_lib_lock);
	if (zsm_fi_lib_handle)
		goto out;
	/* Loaded already by someone else: its constructors ran then, and
	 * whatever they changed is not ours to undo. */
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h)
		h = zsm_fi_lib_dlopen(name);
	if (!h) {
		ret = -ENOENT;
		goto out;
	}
	memset(&next, 0, sizeof(next));
	for (size_t i = 0;
	     i < sizeof(zsm_fi_lib_syms) / sizeof(zsm_fi_lib_syms[0]); i++) {
		void *fn = dlvsym(h, zsm_fi_lib_syms[i].name,
				  zsm_fi_lib_syms[i].version);

		if (!fn) {
			ZSM_WARN("net: %s has no %s@%s, which zsm was built "
				 "for (libfabric %d.%d headers)",
				 name, zsm_fi_lib_syms[i].name,
				 zsm_fi_lib_syms[i].version, FI_MAJOR_VERSION,
				 FI_MINOR_VERSION);
			dlclose(h);
			ret = -ENOSYS;
			goto out;
		}
		memcpy((char *)&next + zsm_fi_lib_syms[i].slot, &fn,
		       sizeof(fn));
	}
	zsm_fi = next;
	zsm_fi_lib_handle = h;
out:
	pthread_mutex_unlock(&zsm_fi_lib_lock);
	return ret;
}

int zsm_fi_lib_load(void)
{
	return zsm_fi_lib_open(ZSM_FI_LIB_NAME);
}
