/* SPDX-License-Identifier: MIT */
/* Owns the parsed values of the ZSM_* table and their validation. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/param.h"

const struct zsm_param_desc zsm_param_descs[ZSM_P_COUNT] = {
#define ZSM_PARAM_DESC(n, t, d, lo, hi, ch, h)                                \
	[ZSM_P_##n] = {.name = #n, .type = t, .def = d, .min = lo,            \
		       .max = hi, .choices = ch, .help = h},
	ZSM_PARAM_TABLE(ZSM_PARAM_DESC)
#undef ZSM_PARAM_DESC
};

struct zsm_param_value {
	long long num;
	char str[256];
	int from_env;
};

static struct zsm_param_value zsm_param_values[ZSM_P_COUNT];
static int zsm_param_loaded;

/* Index of word in a '|' separated list, or -1. */
static int zsm_param_choice_index(const char *choices, const char *word)
{
	size_t len = strlen(word);
	int idx = 0;

	for (const char *p = choices; *p; idx++) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (n == len && strncasecmp(p, word, n) == 0)
			return idx;
		if (!bar)
			break;
		p = bar + 1;
	}
	return -1;
}

/* The idx-th word of a '|' separated list, in a static buffer. */
static const char *zsm_param_choice_name(const char *choices, int idx)
{
	static char word[64];
	const char *p = choices;

	for (int i = 0; i < idx && p; i++) {
		p = strchr(p, '|');
		if (p)
			p++;
	}
	if (!p)
		return "?";
	snprintf(word, sizeof(word), "%.*s", (int)strcspn(p, "|"), p);
	return word;
}

/*
 * Plain decimal: digits only, and no leading zero but in "0" itself.
 * strtoll would also take a sign and leading spaces, and with base 0
 * octal and hex ("0400" is 256); a leading zero is refused rather than
 * read as decimal, since whoever wrote it may have meant octal.  No row
 * of the table needs anything else.
 */
static int zsm_param_parse_decimal(const char *text, long long *out)
{
	long long v = 0;

	if (!text[0] || (text[0] == '0' && text[1]))
		return -EINVAL;
	for (const char *p = text; *p; p++) {
		int digit = *p - '0';

		if (digit < 0 || digit > 9)
			return -EINVAL;
		if (v > (LLONG_MAX - digit) / 10)
			return -ERANGE;
		v = v * 10 + digit;
	}
	*out = v;
	return 0;
}

/*
 * Why a list value is malformed, in buf; NULL when it is fine.  An empty
 * item ("lo,,eth0", a trailing comma) or one with a space would name no
 * NIC at all, so it is refused here rather than matched against nothing.
 */
static const char *zsm_param_list_bad(const char *text, char *buf, size_t len)
{
	int item = 1;

	if (!text[0])
		return NULL; /* the empty list: not set */
	for (const char *p = text;; item++) {
		size_t n = strcspn(p, ",");

		if (n == 0) {
			snprintf(buf, len, "item %d is empty", item);
			return buf;
		}
		if (strcspn(p, " \t\n\r\f\v") < n) {
			snprintf(buf, len, "item %d ('%.*s') holds a space",
				 item, (int)n, p);
			return buf;
		}
		if (!p[n])
			return NULL;
		p += n + 1;
	}
}

static int zsm_param_copy_str(const struct zsm_param_desc *d,
			      const char *text, struct zsm_param_value *out)
{
	if (strlen(text) >= sizeof(out->str)) {
		ZSM_WARN("ZSM_%s: value longer than %zu characters", d->name,
			 sizeof(out->str) - 1);
		return -EINVAL;
	}
	strcpy(out->str, text);
	return 0;
}

static int zsm_param_parse(const struct zsm_param_desc *d, const char *text,
			   struct zsm_param_value *out)
{
	char why[96];
	long long v;

	switch (d->type) {
	case ZSM_PARAM_LIST:
		if (zsm_param_list_bad(text, why, sizeof(why))) {
			ZSM_WARN("ZSM_%s='%s' is not allowed: %s; use names "
				 "separated by commas, e.g. 'eth0,eth1'",
				 d->name, text, why);
			return -EINVAL;
		}
		return zsm_param_copy_str(d, text, out);
	case ZSM_PARAM_STR:
		return zsm_param_copy_str(d, text, out);
	case ZSM_PARAM_ENUM:
		v = zsm_param_choice_index(d->choices, text);
		if (v < 0) {
			ZSM_WARN("ZSM_%s='%s' is not allowed: use one of %s",
				 d->name, text, d->choices);
			return -EINVAL;
		}
		out->num = v;
		return 0;
	case ZSM_PARAM_BOOL:
	case ZSM_PARAM_INT:
		if (zsm_param_parse_decimal(text, &v) || v < d->min ||
		    v > d->max) {
			if (d->type == ZSM_PARAM_BOOL)
				ZSM_WARN("ZSM_%s='%s' is not allowed: use 0 "
					 "or 1",
					 d->name, text);
			else
				ZSM_WARN("ZSM_%s='%s' is not allowed: use a "
					 "decimal integer in [%lld, %lld], "
					 "digits only (no sign, space, "
					 "leading zero or hex)",
					 d->name, text, d->min, d->max);
			return -EINVAL;
		}
		out->num = v;
		return 0;
	}
	return -EINVAL;
}

static const char *zsm_param_getenv(const char *name)
{
	return getenv(name);
}

int zsm_param_load(zsm_param_getenv_fn getenv_fn)
{
	struct zsm_param_value next[ZSM_P_COUNT];
	char var[64];
	int ret = 0;

	if (!getenv_fn)
		getenv_fn = zsm_param_getenv;
	memset(next, 0, sizeof(next));
	for (int i = 0; i < ZSM_P_COUNT; i++) {
		const struct zsm_param_desc *d = &zsm_param_descs[i];
		const char *env;

		snprintf(var, sizeof(var), "ZSM_%s", d->name);
		env = getenv_fn(var);
		/* The defaults are part of the table and must parse. */
		if (zsm_param_parse(d, d->def, &next[i]))
			abort();
		if (env) {
			if (zsm_param_parse(d, env, &next[i]))
				ret = -EINVAL;
			next[i].from_env = 1;
		}
	}
	if (ret)
		return ret;
	memcpy(zsm_param_values, next, sizeof(next));
	zsm_param_loaded = 1;
	zsm_log_set_level((int)zsm_param_values[ZSM_P_LOG].num + 1);
	return 0;
}

static const struct zsm_param_value *zsm_param_get(enum zsm_param_id id)
{
	/* Tools may ask before any init: fall back to defaults then. */
	if (!zsm_param_loaded && zsm_param_load(NULL) != 0) {
		static struct zsm_param_value defaults[ZSM_P_COUNT];

		for (int i = 0; i < ZSM_P_COUNT; i++)
			zsm_param_parse(&zsm_param_descs[i],
					zsm_param_descs[i].def, &defaults[i]);
		return &defaults[id];
	}
	return &zsm_param_values[id];
}

long long zsm_param_int(enum zsm_param_id id)
{
	return zsm_param_get(id)->num;
}

const char *zsm_param_str(enum zsm_param_id id)
{
	return zsm_param_get(id)->str;
}

int zsm_param_from_env(enum zsm_param_id id)
{
	return zsm_param_get(id)->from_env;
}

static const char *zsm_param_type_name(const struct zsm_param_desc *d)
{
	switch (d->type) {
	case ZSM_PARAM_INT:
		return "integer";
	case ZSM_PARAM_BOOL:
		return "boolean";
	case ZSM_PARAM_ENUM:
		return "choice";
	case ZSM_PARAM_STR:
		return "string";
	case ZSM_PARAM_LIST:
		return "list";
	}
	return "?";
}

void zsm_param_print_md(FILE *out)
{
	fprintf(out, "# Configuration\n\n"
		     "<!-- Generated by `zsm-info --params-md` from "
		     "plugin/common/param.h; a test checks it is current. "
		     "-->\n\n"
		     "zsm reads these environment variables once, when NCCL "
		     "first initialises the plugin. A value outside its range "
		     "or choices makes `init` fail (`ncclInvalidUsage`) with a "
		     "message naming the variable and what it allows; nothing "
		     "is silently clamped.\n\n"
		     "Integers and booleans are plain decimal: digits only, "
		     "with no sign, space, hex or leading zero (`0400` is "
		     "refused, not read as octal 256). A list is names "
		     "separated by commas, with no empty name and no spaces. "
		     "A provider or domain that `ZSM_PROVIDER` or "
		     "`ZSM_DOMAIN` names and that gives no device fails "
		     "`init` the same way, with the reason.\n\n"
		     "| Variable | Type | Default | Allowed | Meaning |\n"
		     "|---|---|---|---|---|\n");
	for (int i = 0; i < ZSM_P_COUNT; i++) {
		const struct zsm_param_desc *d = &zsm_param_descs[i];
		char allowed[128];

		if (d->type == ZSM_PARAM_INT)
			snprintf(allowed, sizeof(allowed), "%lld to %lld",
				 d->min, d->max);
		else if (d->type == ZSM_PARAM_BOOL)
			snprintf(allowed, sizeof(allowed), "0 or 1");
		else if (d->type == ZSM_PARAM_ENUM)
			snprintf(allowed, sizeof(allowed), "`%s`",
				 d->choices);
		else if (d->type == ZSM_PARAM_LIST)
			snprintf(allowed, sizeof(allowed), "names, "
				 "comma-separated");
		else
			snprintf(allowed, sizeof(allowed), "any");
		fprintf(out, "| `ZSM_%s` | %s | `%s` | %s | %s |\n", d->name,
			zsm_param_type_name(d), d->def[0] ? d->def : "(empty)",
			allowed, d->help);
	}
}

void zsm_param_print_values(FILE *out)
{
	for (int i = 0; i < ZSM_P_COUNT; i++) {
		const struct zsm_param_desc *d = &zsm_param_descs[i];
		const struct zsm_param_value *v = zsm_param_get(i);

		if (d->type == ZSM_PARAM_STR || d->type == ZSM_PARAM_LIST)
			fprintf(out, "  ZSM_%-20s '%s' (%s)\n", d->name,
				v->str, v->from_env ? "env" : "default");
		else if (d->type == ZSM_PARAM_ENUM)
			fprintf(out, "  ZSM_%-20s %s (%s)\n", d->name,
				zsm_param_choice_name(d->choices, (int)v->num),
				v->from_env ? "env" : "default");
		else
			fprintf(out, "  ZSM_%-20s %lld (%s)\n", d->name,
				v->num, v->from_env ? "env" : "default");
	}
}
