/* SPDX-License-Identifier: MIT */
/*
 * A size on a command line: digits, then K, M or G (either case, powers
 * of 1024), optionally followed by i, B or iB.
 */
#ifndef ZSM_TEST_SIZE_ARG_H
#define ZSM_TEST_SIZE_ARG_H

#include <stddef.h>

/* 0 with the size in *out and *end just past it (the caller says what may
 * follow), or -1 when s starts with no number or the size overflows. */
int zsm_size_arg(const char *s, size_t *out, const char **end);

#endif
