/* SPDX-License-Identifier: MIT */
/* Owns the handle slots: their chunks, free list and generations. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "common/handle.h"

#define ZSM_HANDLE_CHUNK 4096u
#define ZSM_HANDLE_CHUNKS 4096u /* 16M slots */
#define ZSM_HANDLE_GEN_SHIFT 40
#define ZSM_HANDLE_GEN_MASK ((1ULL << 24) - 1)
#define ZSM_HANDLE_TYPE_SHIFT 32
#define ZSM_HANDLE_LIVE 1ULL
#define ZSM_HANDLE_NONE UINT32_MAX

struct zsm_handle_slot {
	/* gen << 40 | type << 32 | live: what a live handle must match. */
	_Atomic uint64_t word;
	void *obj;
	uint32_t next_free; /* under zsm_handle_lock */
};

static _Atomic(struct zsm_handle_slot *) zsm_handle_chunks[ZSM_HANDLE_CHUNKS];
static pthread_mutex_t zsm_handle_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t zsm_handle_free = ZSM_HANDLE_NONE; /* under the lock */
static uint32_t zsm_handle_top;			   /* slots ever made */
static unsigned zsm_handle_used;

static const char *const zsm_handle_names[ZSM_H_NTYPES] = {
	[ZSM_H_CTX] = "context",
	[ZSM_H_LISTEN] = "listen comm",
	[ZSM_H_SEND] = "send comm",
	[ZSM_H_RECV] = "receive comm",
	[ZSM_H_MR] = "memory registration",
	[ZSM_H_REQ] = "request",
	[ZSM_H_RMA_LISTEN] = "RMA listen comm",
	[ZSM_H_RMA_COLL] = "RMA collective comm",
	[ZSM_H_RMA_SYM] = "symmetric registration",
	[ZSM_H_RMA_CTX] = "RMA context",
	[ZSM_H_API_COMM] = "communicator",
	[ZSM_H_API_WIN] = "window",
};

const char *zsm_handle_type_name(enum zsm_handle_type type)
{
	return type > 0 && type < ZSM_H_NTYPES ? zsm_handle_names[type] : "?";
}

static struct zsm_handle_slot *zsm_handle_slot(uint32_t index)
{
	struct zsm_handle_slot *chunk;

	if (index / ZSM_HANDLE_CHUNK >= ZSM_HANDLE_CHUNKS)
		return NULL;
	/* acquire: pairs with the release in zsm_handle_take; the chunk's
	 * slots were initialised before its pointer was published. */
	chunk = atomic_load_explicit(&zsm_handle_chunks[index /
							ZSM_HANDLE_CHUNK],
				     memory_order_acquire);
	return chunk ? &chunk[index % ZSM_HANDLE_CHUNK] : NULL;
}

static uint64_t zsm_handle_word(uint64_t gen, enum zsm_handle_type type,
				uint64_t live)
{
	return (gen & ZSM_HANDLE_GEN_MASK) << ZSM_HANDLE_GEN_SHIFT |
	       (uint64_t)type << ZSM_HANDLE_TYPE_SHIFT | live;
}

static uint64_t zsm_handle_gen(uint64_t word)
{
	return word >> ZSM_HANDLE_GEN_SHIFT;
}

/* The slot's next word: a new generation, the same type. */
static uint64_t zsm_handle_next(uint64_t word, uint64_t live)
{
	return ((zsm_handle_gen(word) + 1) & ZSM_HANDLE_GEN_MASK)
		       << ZSM_HANDLE_GEN_SHIFT |
	       (word & (0xffULL << ZSM_HANDLE_TYPE_SHIFT)) | live;
}

/* A free slot, made when none is left; under the lock. */
static int zsm_handle_take(uint32_t *index)
{
	struct zsm_handle_slot *chunk;
	uint32_t c;

	if (zsm_handle_free != ZSM_HANDLE_NONE) {
		*index = zsm_handle_free;
		zsm_handle_free = zsm_handle_slot(*index)->next_free;
		return 0;
	}
	c = zsm_handle_top / ZSM_HANDLE_CHUNK;
	if (c >= ZSM_HANDLE_CHUNKS)
		return -ENOMEM;
	if (zsm_handle_top % ZSM_HANDLE_CHUNK == 0) {
		uint64_t base;

		chunk = calloc(ZSM_HANDLE_CHUNK, sizeof(*chunk));
		if (!chunk)
			return -ENOMEM;
		/* Generations start anywhere, so that a handle kept across
		 * an unload and a new load of the plugin names nothing. */
		if (getrandom(&base, sizeof(base), GRND_NONBLOCK) !=
		    sizeof(base))
			base = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL;
		for (uint32_t i = 0; i < ZSM_HANDLE_CHUNK; i++)
			atomic_init(&chunk[i].word,
				    zsm_handle_word(base + i * 7919u,
						    (enum zsm_handle_type)0,
						    0));
		/* release: pairs with the acquire in zsm_handle_slot. */
		atomic_store_explicit(&zsm_handle_chunks[c], chunk,
				      memory_order_release);
	}
	*index = zsm_handle_top++;
	return 0;
}

static void zsm_handle_put_free(uint32_t index)
{
	zsm_handle_slot(index)->next_free = zsm_handle_free;
	zsm_handle_free = index;
	zsm_handle_used--;
}

static int zsm_handle_make(enum zsm_handle_type type, void *obj,
			   uint64_t live, uint32_t *index, uint64_t *word)
{
	struct zsm_handle_slot *s;
	uint64_t w;
	int ret;

	pthread_mutex_lock(&zsm_handle_lock);
	ret = zsm_handle_take(index);
	if (ret) {
		pthread_mutex_unlock(&zsm_handle_lock);
		return ret;
	}
	zsm_handle_used++;
	s = zsm_handle_slot(*index);
	s->obj = obj;
	/* relaxed: the previous owner's last store; the lock orders it. */
	w = atomic_load_explicit(&s->word, memory_order_relaxed);
	w = zsm_handle_word(zsm_handle_gen(w) + 1, type, live);
	/* release: pairs with the acquire in zsm_handle_get; obj is
	 * written first. */
	atomic_store_explicit(&s->word, w, memory_order_release);
	pthread_mutex_unlock(&zsm_handle_lock);
	*word = w;
	return 0;
}

static uint64_t zsm_handle_of(uint64_t word, uint32_t index)
{
	return (word & ~0xffffffffULL & ~ZSM_HANDLE_LIVE) | (index + 1ULL);
}

int zsm_handle_open(enum zsm_handle_type type, void *obj, uint64_t *out)
{
	uint32_t index;
	uint64_t w;
	int ret = zsm_handle_make(type, obj, ZSM_HANDLE_LIVE, &index, &w);

	if (!ret)
		*out = zsm_handle_of(w, index);
	return ret;
}

/* The slot h names if it is a handle of type at all, else NULL. */
static struct zsm_handle_slot *zsm_handle_find(uint64_t h,
					       enum zsm_handle_type type)
{
	uint32_t low = (uint32_t)h;

	if (low == 0 ||
	    ((h >> ZSM_HANDLE_TYPE_SHIFT) & 0xff) != (uint64_t)type)
		return NULL;
	return zsm_handle_slot(low - 1);
}

/* The word a live handle h has in its slot. */
static uint64_t zsm_handle_live_word(uint64_t h)
{
	return (h & ~0xffffffffULL) | ZSM_HANDLE_LIVE;
}

int zsm_handle_get(uint64_t h, enum zsm_handle_type type, void **obj)
{
	struct zsm_handle_slot *s = zsm_handle_find(h, type);

	if (!s)
		return -EINVAL;
	/* acquire: pairs with the releases in zsm_handle_make and
	 * zsm_handle_arm; obj is the one published with this word. */
	if (atomic_load_explicit(&s->word, memory_order_acquire) !=
	    zsm_handle_live_word(h))
		return -EBADF;
	*obj = s->obj;
	return 0;
}

int zsm_handle_close(uint64_t h, enum zsm_handle_type type, void **obj)
{
	struct zsm_handle_slot *s = zsm_handle_find(h, type);
	uint64_t live = zsm_handle_live_word(h), dead;

	if (!s)
		return -EINVAL;
	dead = zsm_handle_next(live, 0);
	/* acq_rel: one closer wins (acquire: obj as published with the
	 * live word); a get after it sees the slot dead (release). */
	if (!atomic_compare_exchange_strong_explicit(&s->word, &live, dead,
						     memory_order_acq_rel,
						     memory_order_relaxed))
		return -EBADF;
	*obj = s->obj;
	pthread_mutex_lock(&zsm_handle_lock);
	zsm_handle_put_free((uint32_t)h - 1);
	pthread_mutex_unlock(&zsm_handle_lock);
	return 0;
}

int zsm_handle_reserve(enum zsm_handle_type type, void *obj, uint32_t *index)
{
	uint64_t w;

	return zsm_handle_make(type, obj, 0, index, &w);
}

uint64_t zsm_handle_arm(uint32_t index)
{
	struct zsm_handle_slot *s = zsm_handle_slot(index);
	/* relaxed: the owner is the only writer of a reserved slot. */
	uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);

	w = zsm_handle_next(w, ZSM_HANDLE_LIVE);
	/* release: pairs with the acquire in zsm_handle_get. */
	atomic_store_explicit(&s->word, w, memory_order_release);
	return zsm_handle_of(w, index);
}

void zsm_handle_disarm(uint32_t index)
{
	struct zsm_handle_slot *s = zsm_handle_slot(index);
	/* relaxed: as in zsm_handle_arm. */
	uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);

	/* release: a get that sees the new word refuses the old handle. */
	atomic_store_explicit(&s->word, zsm_handle_next(w, 0),
			      memory_order_release);
}

void zsm_handle_release(uint32_t index)
{
	zsm_handle_disarm(index);
	pthread_mutex_lock(&zsm_handle_lock);
	zsm_handle_put_free(index);
	pthread_mutex_unlock(&zsm_handle_lock);
}

unsigned zsm_handle_count(void)
{
	unsigned n;

	pthread_mutex_lock(&zsm_handle_lock);
	n = zsm_handle_used;
	pthread_mutex_unlock(&zsm_handle_lock);
	return n;
}

void zsm_handle_fini(void)
{
	pthread_mutex_lock(&zsm_handle_lock);
	for (uint32_t c = 0; c < ZSM_HANDLE_CHUNKS; c++) {
		/* relaxed: under the lock, and nobody looks up any more. */
		free(atomic_load_explicit(&zsm_handle_chunks[c],
					  memory_order_relaxed));
		atomic_store_explicit(&zsm_handle_chunks[c], NULL,
				      memory_order_relaxed);
	}
	zsm_handle_free = ZSM_HANDLE_NONE;
	zsm_handle_top = 0;
	zsm_handle_used = 0;
	pthread_mutex_unlock(&zsm_handle_lock);
}
