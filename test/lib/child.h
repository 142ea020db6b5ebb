/* SPDX-License-Identifier: MIT */
/*
 * One check in a fresh child process, for tests whose subject is process
 * state the plugin sets once (settings read at the first init, libfabric
 * loaded once, signal handlers).
 */
#ifndef ZSM_TEST_CHILD_H
#define ZSM_TEST_CHILD_H

/*
 * Fork, run fn(arg) in the child and exit with what it returns (0..255,
 * stdout flushed).  Returns that exit status, or -1 when there was no
 * child or it died by a signal (said on stdout).
 */
int zsm_child_run(int (*fn)(void *arg), void *arg);

#endif
