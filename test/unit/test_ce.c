/* SPDX-License-Identifier: MIT */
/*
 * The ce Ready/Complete protocol on host memory, with both ends of a
 * channel in this process (ce_pair.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ce_pair.h"
#include "proxy/proxy.h"
#include "zsm_test.h"

/* Sends of one tag take that tag's receives in posting order, across a
 * grouped receive; another tag finds its own sub-receive. */
static void test_ce_chan_matches_tags_in_posting_order(void **state)
{
	struct pair *p = need_pair(state);
	struct zsm_ce_req s[3], r[2];
	char a[16] = "first", b[16] = "second", c[16] = "third";
	char g0[16] = { 0 }, g1[16] = { 0 }, x[16] = { 0 };
	void *group[2] = { g0, g1 }, *single[1] = { x };

	post_recv(p, &r[0], 2, group, (size_t[]){ 16, 16 }, (int[]){ 2, 1 }, NULL);
	post_recv(p, &r[1], 1, single, (size_t[]){ 16 }, (int[]){ 1 }, NULL);
	post_send(p, &s[0], a, 6, 1, NULL);
	post_send(p, &s[1], b, 7, 1, NULL);
	post_send(p, &s[2], c, 6, 2, NULL);
	pump(8);
	for (int i = 0; i < 3; i++)
		zsm_assert_int_eq(state_of(&s[i]), ZSM_REQ_DONE);
	zsm_assert_int_eq(state_of(&r[0]), ZSM_REQ_DONE);
	zsm_assert_int_eq(state_of(&r[1]), ZSM_REQ_DONE);
	assert_string_equal(g1, "first");
	assert_string_equal(x, "second");
	assert_string_equal(g0, "third");
	zsm_assert_int_eq(r[0].base.sizes[0], 6);
	zsm_assert_int_eq(r[0].base.sizes[1], 6);
	zsm_assert_int_eq(r[1].base.sizes[0], 7);
}

/* A send waits for its receive, and completes only once copied. */
static void test_ce_chan_send_waits_for_its_receive(void **state)
{
	struct pair *p = need_pair(state);
	struct zsm_ce_req s, r;
	char msg[32] = "late receive", got[32] = { 0 };
	void *bufs[1] = { got };

	post_send(p, &s, msg, sizeof(msg), 7, NULL);
	pump(4);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_PENDING);
	post_recv(p, &r, 1, bufs, (size_t[]){ sizeof(got) }, (int[]){ 7 }, NULL);
	pump(4);
	zsm_assert_int_eq(state_of(&r), ZSM_REQ_DONE);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	assert_memory_equal(msg, got, sizeof(msg));
}

/*
 * A send larger than its receive is the receive's error, as on net where
 * the sender cannot know; the send was handed over.  Nothing lands.
 */
static void test_ce_chan_send_too_large_fails_the_receive(void **state)
{
	struct pair *p = need_pair(state);
	struct zsm_ce_req s, r;
	char big[64], small[32];
	void *bufs[1] = { small };

	memset(big, 'B', sizeof(big));
	memset(small, 0, sizeof(small));
	post_recv(p, &r, 1, bufs, (size_t[]){ sizeof(small) }, (int[]){ 3 }, NULL);
	post_send(p, &s, big, sizeof(big), 3, NULL);
	pump(4);
	zsm_assert_int_eq(state_of(&r), -EMSGSIZE);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	for (size_t i = 0; i < sizeof(small); i++)
		zsm_assert_int_eq(small[i], 0);
}

/*
 * A sender that grows the size in its slot after the receiver took the
 * message (it owns the window's memory as much as the receiver does):
 * the receiver copies what it checked, and never past its buffer, which
 * here ends at a page nobody may touch.
 */
static void test_ce_chan_size_changed_after_take_is_ignored(void **state)
{
	struct pair *p = need_pair(state);
	size_t size = 24u << 20, page = (size_t)sysconf(_SC_PAGESIZE);
	char *src = malloc(size), *dst;
	struct zsm_ce_req s, r;
	struct zsm_ce_slot *slot;
	void *bufs[1];

	dst = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(src && dst != MAP_FAILED);
	assert_int_equal(mprotect(dst + size, page, PROT_NONE), 0);
	for (size_t i = 0; i < size; i++)
		src[i] = (char)(i * 13);
	bufs[0] = dst;
	post_recv(p, &r, 1, bufs, (size_t[]){ size }, (int[]){ 4 }, NULL);
	post_send(p, &s, src, size, 4, NULL);
	/* One pass takes it; both sides copy up to a chunk each. */
	zsm_ce_progress_ops.progress(zsm_ce_progress_self());
	slot = &p->r->win->slots[0];
	slot->size = 64u << 20;
	pump(200);
	zsm_assert_int_eq(state_of(&r), ZSM_REQ_DONE);
	zsm_assert_int_eq(r.base.sizes[0], (int)size);
	assert_memory_equal(src, dst, size);
	munmap(dst, size + page);
	free(src);
}

/* Larger than one copy chunk: several passes, every byte right. */
static void test_ce_chan_large_message_in_pieces(void **state)
{
	struct pair *p = need_pair(state);
	size_t len = 3 * ZSM_CE_CHUNK + 12345;
	unsigned char *src = malloc(len), *dst = calloc(1, len);
	struct zsm_ce_req s, r;
	void *bufs[1] = { dst };
	int passes = 0;

	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(i * 7 + (i >> 13));
	post_recv(p, &r, 1, bufs, &len, (int[]){ 0 }, NULL);
	post_send(p, &s, src, len, 0, NULL);
	while (state_of(&r) == ZSM_REQ_PENDING && passes < 100) {
		zsm_ce_progress_ops.progress(zsm_ce_progress_self());
		passes++;
	}
	zsm_assert_int_eq(state_of(&r), ZSM_REQ_DONE);
	pump(1);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	/* One chunk per side and pass keeps other comms served. */
	assert_true(passes >= 2);
	zsm_assert_int_eq(r.base.sizes[0], (int)len);
	assert_memory_equal(src, dst, len);
	/* Both sides took pieces, and every byte was copied once. */
	{
		struct zsm_ce_slot *sl = &p->s->win->slots[s.seq %
							   ZSM_CE_SLOTS];

		assert_true(p->s->watch.shared_bytes > 0);
		assert_true(p->r->watch.shared_bytes > 0);
		zsm_assert_int_eq(p->s->watch.shared_bytes +
					  p->r->watch.shared_bytes,
				  len);
		zsm_assert_int_eq(atomic_load(&sl->helped), s.seq + 1);
		zsm_assert_int_eq(sl->help_err, 0);
	}
	free(src);
	free(dst);
}

/* A sender that cannot write into the receiver leaves it all to the
 * receiver, which stops asking; the data is right either way. */
static void test_ce_chan_split_falls_back_when_sender_cannot_write(
	void **state)
{
	struct pair *p = need_pair(state);
	/* More than the receiver copies in one pass: the sender claims a
	 * piece too. */
	size_t len = ZSM_CE_CHUNK + 2 * ZSM_CE_PIECE + 777;
	unsigned char *src = malloc(len), *dst = calloc(1, len);
	struct zsm_ce_req s, r;
	void *bufs[1] = { dst };

	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(i * 13 + 1);
	/* Writes to a process that does not exist fail, as EPERM would. */
	p->s->peer_pid = 0x3ffffff0;
	post_recv(p, &r, 1, bufs, &len, (int[]){ 6 }, NULL);
	post_send(p, &s, src, len, 6, NULL);
	pump(20);
	zsm_assert_int_eq(state_of(&r), ZSM_REQ_DONE);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	assert_memory_equal(src, dst, len);
	assert_true(p->r->rx.no_help);
	free(src);
	free(dst);
}

/* The window has ZSM_CE_SLOTS slots: the next send is refused, not lost. */
static void test_ce_chan_full_window_refuses(void **state)
{
	struct pair *p = need_pair(state);
	struct zsm_ce_req *s = calloc(ZSM_CE_SLOTS + 1, sizeof(*s));
	char byte = 'x';

	assert_non_null(s);
	for (int i = 0; i < ZSM_CE_SLOTS; i++)
		post_send(p, &s[i], &byte, 1, 9, NULL);
	req_init(&s[ZSM_CE_SLOTS], &p->sc, ZSM_REQ_SEND, 1);
	s[ZSM_CE_SLOTS].base.data[0] = &byte;
	s[ZSM_CE_SLOTS].base.len[0] = 1;
	s[ZSM_CE_SLOTS].base.tag[0] = 9;
	zsm_assert_int_eq(
		zsm_ce_comm_ops.post[ZSM_REQ_SEND](&s[ZSM_CE_SLOTS].base),
		-EAGAIN);
	zsm_assert_int_eq(state_of(&s[ZSM_CE_SLOTS]), ZSM_REQ_PENDING);
	/* Closing ends them all (teardown would otherwise do it). */
	zsm_ce_chan_close(p->s, -ECANCELED);
	p->s = NULL;
	for (int i = 0; i < ZSM_CE_SLOTS; i++)
		zsm_assert_int_eq(state_of(&s[i]), -ECANCELED);
	free(s);
}

/* Receives still waiting when the sender closes fail, not hang. */
static void test_ce_chan_sender_close_fails_waiting_receives(void **state)
{
	struct pair *p = need_pair(state);
	struct zsm_ce_req r;
	char got[8];
	void *bufs[1] = { got };

	post_recv(p, &r, 1, bufs, (size_t[]){ sizeof(got) }, (int[]){ 4 }, NULL);
	pump(2);
	zsm_assert_int_eq(state_of(&r), ZSM_REQ_PENDING);
	zsm_ce_chan_close(p->s, -ECANCELED);
	p->s = NULL;
	pump(2);
	zsm_assert_int_eq(state_of(&r), -ECONNRESET);
}

/* Sends to a receiver that closed fail at once. */
static void test_ce_chan_receiver_close_fails_sends(void **state)
{
	struct pair *p = need_pair(state);
	struct zsm_ce_req s1, s2;
	char byte = 'y';

	post_send(p, &s1, &byte, 1, 5, NULL);
	zsm_ce_chan_close(p->r, -ECANCELED);
	p->r = NULL;
	pump(2);
	zsm_assert_int_eq(state_of(&s1), -ECONNRESET);
	post_send(p, &s2, &byte, 1, 5, NULL);
	zsm_assert_int_eq(state_of(&s2), -ECONNRESET);
}

/* A window that is not one: attach says why and keeps nothing. */
static void test_ce_chan_attach_refuses_a_foreign_fd(void **state)
{
	struct zsm_ce_chan *ch = (void *)1;
	char why[256] = "";
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_true(zsm_ce_chan_attach(&ch, getpid(), fds[0], 0, PAIR_ID,
				       PAIR_KEY, why, sizeof(why)) < 0);
	assert_null(ch);
	assert_true(strlen(why) > 0);
	assert_int_equal(zsm_ce_chan_attach(&ch, getpid(), 9999, 0, PAIR_ID,
					    PAIR_KEY, why, sizeof(why)) < 0,
			 1);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_ce_chan_matches_tags_in_posting_order, pair_setup,
			pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_ce_chan_send_waits_for_its_receive, pair_setup,
			pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_ce_chan_send_too_large_fails_the_receive, pair_setup,
			pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_ce_chan_size_changed_after_take_is_ignored,
			pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_ce_chan_large_message_in_pieces, pair_setup,
			pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_ce_chan_split_falls_back_when_sender_cannot_write,
			pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_ce_chan_full_window_refuses,
						pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_ce_chan_sender_close_fails_waiting_receives,
			pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_ce_chan_receiver_close_fails_sends, pair_setup,
			pair_teardown),
		cmocka_unit_test(test_ce_chan_attach_refuses_a_foreign_fd),
	};
	if (!ce_possible())
		return 0;
	return cmocka_run_group_tests_name("ce", tests, NULL, NULL);
}
