/* SPDX-License-Identifier: MIT */
/*
 * Libraries loaded once by a harness that forks its ranks, so that every
 * rank finds them loaded and skips their constructors.
 */
#ifndef ZSM_TEST_PRELOAD_H
#define ZSM_TEST_PRELOAD_H

/*
 * Loads each library of ZSM_CLIENT_PRELOAD (names or paths, ':' between
 * them; unset or empty: none) and keeps it loaded, putting back every
 * signal disposition a load changed.  Call before the first fork.
 * Returns 0, or -1 with the library and dlerror() on stderr.
 */
int preload_from_env(void);

#endif
