/* SPDX-License-Identifier: MIT */
/* Owns parsing sizes on command lines (size_arg.h). */
#include "size_arg.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int zsm_size_arg(const char *s, size_t *out, const char **end)
{
	unsigned long long v, mult = 1;
	char *e;

	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno || e == s)
		return -1;
	switch (*e) {
	case 'k':
	case 'K':
		mult = 1ull << 10;
		e++;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		e++;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		e++;
		break;
	default: break;
	}
	if (*e == 'i' || *e == 'B' || *e == 'b')
		e++;
	if (*e == 'B')
		e++;
	if (v > SIZE_MAX / mult)
		return -1;
	*out = (size_t)(v * mult);
	*end = e;
	return 0;
}
