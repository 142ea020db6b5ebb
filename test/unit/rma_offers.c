/* SPDX-License-Identifier: MIT */
/* Owns the recorded-offers format of rma_offers.h. */
#include "rma_offers.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const offers_ask_name[OFFERS_ASKS] = {
	[OFFERS_ATOMIC] = "atomic",
	[OFFERS_SAW] = "saw",
	[OFFERS_PLAIN] = "plain",
};

struct offers_name {
	const char *name;
	uint64_t bit;
};

#define OFFERS_NAME(f) {#f, f}

/* The names of the 1.17 headers that fi_info -v prints for these fields. */
static const struct offers_name offers_caps[] = {
	OFFERS_NAME(FI_MSG),	      OFFERS_NAME(FI_RMA),
	OFFERS_NAME(FI_TAGGED),	      OFFERS_NAME(FI_ATOMIC),
	OFFERS_NAME(FI_MULTICAST),    OFFERS_NAME(FI_COLLECTIVE),
	OFFERS_NAME(FI_READ),	      OFFERS_NAME(FI_WRITE),
	OFFERS_NAME(FI_RECV),	      OFFERS_NAME(FI_SEND),
	OFFERS_NAME(FI_REMOTE_READ),  OFFERS_NAME(FI_REMOTE_WRITE),
	OFFERS_NAME(FI_MULTI_RECV),   OFFERS_NAME(FI_TRIGGER),
	OFFERS_NAME(FI_FENCE),	      OFFERS_NAME(FI_AV_USER_ID),
	OFFERS_NAME(FI_PEER),	      OFFERS_NAME(FI_HMEM),
	OFFERS_NAME(FI_VARIABLE_MSG), OFFERS_NAME(FI_RMA_PMEM),
	OFFERS_NAME(FI_SOURCE_ERR),   OFFERS_NAME(FI_LOCAL_COMM),
	OFFERS_NAME(FI_REMOTE_COMM),  OFFERS_NAME(FI_SHARED_AV),
	OFFERS_NAME(FI_RMA_EVENT),    OFFERS_NAME(FI_SOURCE),
	OFFERS_NAME(FI_NAMED_RX_CTX), OFFERS_NAME(FI_DIRECTED_RECV),
	{NULL, 0},
};

static const struct offers_name offers_order[] = {
	OFFERS_NAME(FI_ORDER_RAR),	  OFFERS_NAME(FI_ORDER_RAW),
	OFFERS_NAME(FI_ORDER_RAS),	  OFFERS_NAME(FI_ORDER_WAR),
	OFFERS_NAME(FI_ORDER_WAW),	  OFFERS_NAME(FI_ORDER_WAS),
	OFFERS_NAME(FI_ORDER_SAR),	  OFFERS_NAME(FI_ORDER_SAW),
	OFFERS_NAME(FI_ORDER_SAS),	  OFFERS_NAME(FI_ORDER_RMA_RAR),
	OFFERS_NAME(FI_ORDER_RMA_RAW),	  OFFERS_NAME(FI_ORDER_RMA_WAR),
	OFFERS_NAME(FI_ORDER_RMA_WAW),	  OFFERS_NAME(FI_ORDER_ATOMIC_RAR),
	OFFERS_NAME(FI_ORDER_ATOMIC_RAW), OFFERS_NAME(FI_ORDER_ATOMIC_WAR),
	OFFERS_NAME(FI_ORDER_ATOMIC_WAW), {NULL, 0},
};

static const struct offers_name offers_mr[] = {
	OFFERS_NAME(FI_MR_LOCAL),	OFFERS_NAME(FI_MR_RAW),
	OFFERS_NAME(FI_MR_VIRT_ADDR),	OFFERS_NAME(FI_MR_ALLOCATED),
	OFFERS_NAME(FI_MR_PROV_KEY),	OFFERS_NAME(FI_MR_MMU_NOTIFY),
	OFFERS_NAME(FI_MR_RMA_EVENT),	OFFERS_NAME(FI_MR_ENDPOINT),
	OFFERS_NAME(FI_MR_HMEM),	OFFERS_NAME(FI_MR_COLLECTIVE),
	{NULL, 0},
};

static const struct offers_name *const offers_names[] = {
	[OFFERS_CAPS] = offers_caps,
	[OFFERS_ORDER] = offers_order,
	[OFFERS_MR] = offers_mr,
};

void offers_print_flags(FILE *f, enum offers_kind kind, uint64_t v)
{
	const char *sep = "";

	if (!v) {
		fputs("0", f);
		return;
	}
	for (const struct offers_name *n = offers_names[kind]; n->name; n++) {
		if ((v & n->bit) != n->bit)
			continue;
		fprintf(f, "%s%s", sep, n->name);
		sep = "|";
		v &= ~n->bit;
	}
	/* Bits newer than our names stay in the record, as a number. */
	if (v)
		fprintf(f, "%s0x%llx", sep, (unsigned long long)v);
}

/* The parser's state: where it is, and the first error. */
struct offers_parse {
	const char *path;
	int line;
	char *err;
	size_t errlen;
};

static int offers_fail(struct offers_parse *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(p->err, p->errlen, "%s:%d: ", p->path, p->line);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < p->errlen)
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int offers_number(struct offers_parse *p, const char *s,
			 uint64_t *out)
{
	char *end;

	if (strcmp(s, "SIZE_MAX") == 0) {
		*out = SIZE_MAX;
		return 0;
	}
	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		return offers_fail(p, "'%s' is not a number", s);
	return 0;
}

static int offers_flags(struct offers_parse *p, enum offers_kind kind,
			char *s, uint64_t *out)
{
	*out = 0;
	for (char *tok = strtok(s, "| \t"); tok;
	     tok = strtok(NULL, "| \t")) {
		const struct offers_name *n = offers_names[kind];
		uint64_t v;

		if (isdigit((unsigned char)*tok)) {
			if (offers_number(p, tok, &v))
				return -EINVAL;
			*out |= v;
			continue;
		}
		while (n->name && strcmp(n->name, tok) != 0)
			n++;
		if (!n->name)
			return offers_fail(p, "unknown flag '%s'", tok);
		*out |= n->bit;
	}
	return 0;
}

/* The fields of an offer, each of which must be given once. */
enum offers_field {
	OF_CAPS,
	OF_TX_ORDER,
	OF_RX_ORDER,
	OF_WAW_SIZE,
	OF_MSG_SIZE,
	OF_CQ_DATA,
	OF_MR_MODE,
	OF_SUM,
	OF_FIELDS,
};

static const char *const offers_field_name[OF_FIELDS] = {
	[OF_CAPS] = "caps",
	[OF_TX_ORDER] = "tx_msg_order",
	[OF_RX_ORDER] = "rx_msg_order",
	[OF_WAW_SIZE] = "max_order_waw_size",
	[OF_MSG_SIZE] = "max_msg_size",
	[OF_CQ_DATA] = "cq_data_size",
	[OF_MR_MODE] = "mr_mode",
	[OF_SUM] = "atomic_sum_u64",
};

static int offers_set(struct offers_parse *p, struct fi_info *o, int *sum,
		      enum offers_field f, char *val)
{
	uint64_t v = 0;
	int ret = 0;

	switch (f) {
	case OF_CAPS:
		ret = offers_flags(p, OFFERS_CAPS, val, &o->caps);
		break;
	case OF_TX_ORDER:
		ret = offers_flags(p, OFFERS_ORDER, val, &o->tx_attr->msg_order);
		break;
	case OF_RX_ORDER:
		ret = offers_flags(p, OFFERS_ORDER, val, &o->rx_attr->msg_order);
		break;
	case OF_MR_MODE:
		ret = offers_flags(p, OFFERS_MR, val, &v);
		o->domain_attr->mr_mode = (int)v;
		break;
	case OF_WAW_SIZE:
		ret = offers_number(p, val, &v);
		o->ep_attr->max_order_waw_size = (size_t)v;
		break;
	case OF_MSG_SIZE:
		ret = offers_number(p, val, &v);
		o->ep_attr->max_msg_size = (size_t)v;
		break;
	case OF_CQ_DATA:
		ret = offers_number(p, val, &v);
		o->domain_attr->cq_data_size = (size_t)v;
		break;
	case OF_SUM:
		if (strcmp(val, "-") == 0)
			*sum = -1;
		else if (strcmp(val, "0") == 0 || strcmp(val, "1") == 0)
			*sum = *val - '0';
		else
			ret = offers_fail(p, "atomic_sum_u64 is 1, 0 or -");
		break;
	default:
		break;
	}
	return ret;
}

/* The line without its comment and surrounding blanks, split into key
 * and value (NULL when there is none). */
static char *offers_split(char *line, char **val)
{
	char *hash = strchr(line, '#'), *end;

	if (hash)
		*hash = '\0';
	while (isspace((unsigned char)*line))
		line++;
	end = line + strlen(line);
	while (end > line && isspace((unsigned char)end[-1]))
		*--end = '\0';
	*val = NULL;
	for (char *c = line; *c; c++) {
		if (!isspace((unsigned char)*c))
			continue;
		*c++ = '\0';
		while (isspace((unsigned char)*c))
			c++;
		*val = c;
		break;
	}
	return line;
}

/* Everything after the header: queries and their offers. */
struct offers_cursor {
	int ask;	   /* the query being read, or -1 */
	struct fi_info *o; /* the offer being read, or NULL */
	struct fi_info **tail;
	unsigned given; /* fields of o given, one bit each */
	int sum;
	int seen[OFFERS_ASKS];
};

static int offers_line(struct offers_parse *p, struct offers_rec *rec,
		       struct offers_cursor *c, char *key, char *val)
{
	struct offers_answer *a = c->ask >= 0 ? &rec->ask[c->ask] : NULL;

	if (c->o) {
		if (strcmp(key, "end") == 0) {
			for (int f = 0; f < OF_FIELDS; f++)
				if (!(c->given & (1u << f)))
					return offers_fail(p, "offer lacks %s",
							   offers_field_name[f]);
			a->sum_u64[a->n++] = c->sum;
			*c->tail = c->o;
			c->tail = &c->o->next;
			c->o = NULL;
			return 0;
		}
		for (int f = 0; f < OF_FIELDS; f++) {
			if (strcmp(key, offers_field_name[f]) != 0)
				continue;
			if (!val)
				return offers_fail(p, "%s needs a value", key);
			if (c->given & (1u << f))
				return offers_fail(p, "%s given twice", key);
			c->given |= 1u << f;
			return offers_set(p, c->o, &c->sum,
					  (enum offers_field)f, val);
		}
		return offers_fail(p, "'%s' in an offer", key);
	}
	if (strcmp(key, "provider") == 0 && val) {
		if (strlen(val) >= sizeof(rec->prov))
			return offers_fail(p, "provider name too long");
		strcpy(rec->prov, val);
		return 0;
	}
	if (strcmp(key, "writedata") == 0 && val) {
		if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
			return offers_fail(p, "writedata is 1 or 0");
		rec->writedata = *val - '0';
		return 0;
	}
	if (strcmp(key, "query") == 0 && val) {
		for (int i = 0; i < OFFERS_ASKS; i++) {
			if (strcmp(val, offers_ask_name[i]) != 0)
				continue;
			if (c->seen[i])
				return offers_fail(p, "query %s twice", val);
			c->seen[i] = 1;
			c->ask = i;
			c->tail = &rec->ask[i].list;
			return 0;
		}
		return offers_fail(p, "no query '%s'", val);
	}
	if (strcmp(key, "offer") == 0 && !val) {
		if (!a)
			return offers_fail(p, "offer before any query");
		if (!rec->prov[0])
			return offers_fail(p, "offer before provider");
		if (a->n == OFFERS_MAX)
			return offers_fail(p, "more than %d offers",
					   OFFERS_MAX);
		/* fi_allocinfo: an inline of fabric.h over fi_dupinfo. */
		c->o = fi_allocinfo();
		if (!c->o)
			return -ENOMEM;
		c->o->fabric_attr->prov_name = strdup(rec->prov);
		if (!c->o->fabric_attr->prov_name)
			return -ENOMEM;
		c->given = 0;
		return 0;
	}
	return offers_fail(p, "cannot read '%s'", key);
}

int offers_load(const char *path, struct offers_rec *rec, char *err,
		size_t errlen)
{
	struct offers_parse p = {.path = path, .err = err, .errlen = errlen};
	struct offers_cursor c = {.ask = -1};
	char buf[512];
	FILE *f;
	int ret = 0;

	memset(rec, 0, sizeof(*rec));
	rec->writedata = -1;
	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	while (!ret && fgets(buf, sizeof(buf), f)) {
		char *key, *val;

		p.line++;
		if (!strchr(buf, '\n') && !feof(f)) {
			ret = offers_fail(&p, "line too long");
			break;
		}
		key = offers_split(buf, &val);
		if (*key)
			ret = offers_line(&p, rec, &c, key, val);
	}
	fclose(f);
	if (!ret && c.o)
		ret = offers_fail(&p, "offer without end");
	if (!ret && (!rec->prov[0] || rec->writedata < 0))
		ret = offers_fail(&p, "no provider or writedata line");
	for (int i = 0; !ret && i < OFFERS_ASKS; i++)
		if (!c.seen[i])
			ret = offers_fail(&p, "no query %s", offers_ask_name[i]);
	if (c.o)
		fi_freeinfo(c.o);
	if (ret)
		offers_free(rec);
	return ret;
}

void offers_free(struct offers_rec *rec)
{
	for (int i = 0; i < OFFERS_ASKS; i++) {
		if (rec->ask[i].list)
			fi_freeinfo(rec->ask[i].list);
		rec->ask[i].list = NULL;
		rec->ask[i].n = 0;
	}
}
