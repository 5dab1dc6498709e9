/* sy_history: topics' histories over a real topic registry (sy_topic.h),
 * with now_ms given by the test: offsets 1..N, trimming by size and by ttl,
 * the server-wide max_bytes (the oldest go first, whichever topic; a
 * message larger than it empties everything), a hole (an append without a
 * frame), every replay reason and the replayed frames' references,
 * sy_hist_configure growing and shrinking a wrapped ring, the sweep giving
 * back an empty history's topic reference (the topic is freed; made again,
 * it has another epoch), the server's teardown with messages kept, and
 * history across nodes (Redis' positions adopted, holes, epochs, this
 * node's own numbering, a sync's answer, repeated offsets told apart).
 * Frames are raw buffers whose first bytes name their offset; the
 * sanitizers and valgrind see a reference kept or dropped too often. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_refbuf.h"
#include "check.h"
#include "io/model/sy_history.h"
#include "io/model/sy_topic.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_frame.h"

#define OVER SY_HIST_ENTRY_OVERHEAD

/* A frame of len bytes (at least 24) that starts with "o=<offset>;". */
static sy_refbuf_t *frame_of(uint64_t off, size_t len) {
    char *b = malloc(len);
    if (b == NULL)
        return NULL;
    memset(b, 'x', len);
    char tag[32];
    int n = snprintf(tag, sizeof(tag), "o=%" PRIu64 ";", off);
    memcpy(b, tag, (size_t)n);
    sy_refbuf_t *m = sy_refbuf_raw(b, len);
    free(b);
    return m;
}

static uint64_t offset_of(const sy_refbuf_t *m) {
    if (m->len < 3 || m->data[0] != 'o' || m->data[1] != '=')
        return 0;
    return strtoull((const char *)m->data + 2, NULL, 10);
}

/* Publishes one message of len bytes on h at now: its offset. */
static uint64_t publish(sy_hist_t *g, sy_history_t *h, size_t len, int64_t now) {
    sy_hist_lock(g);
    uint64_t off = sy_history_next(h);
    sy_refbuf_t *f = frame_of(off, len);
    bool kept = sy_hist_append(g, h, f, now);
    sy_hist_unlock(g);
    CHECK(kept);
    if (f != NULL) {
        CHECK_EQU(atomic_load(&f->refs), 2); /* ours and the history's */
        sy_refbuf_release(f);
    }
    return off;
}

static sy_v1_reason_t replay(sy_hist_t *g, sy_history_t *h, uint64_t epoch, uint64_t since, uint64_t head,
                             size_t budget, int64_t now, sy_refbuf_t ***frames, size_t *n) {
    sy_hist_lock(g);
    sy_v1_reason_t r = sy_hist_replay(g, h, epoch, since, head, budget, now, frames, n);
    sy_hist_unlock(g);
    return r;
}

/* Replays (since, head] and checks it recovers exactly those offsets, one
 * reference each besides the history's; gives them back. */
#define CHECK_REPLAY(g, h, since, head) check_replay_((g), (h), (since), (head), __LINE__)
static void check_replay_(sy_hist_t *g, sy_history_t *h, uint64_t since, uint64_t head, int line) {
    sy_refbuf_t **f = (sy_refbuf_t **)&f; /* not NULL: replay must set it */
    size_t n = 99;
    sy_v1_reason_t r = replay(g, h, h->epoch, since, head, SIZE_MAX, 0, &f, &n);
    check_count++;
    if (r != SY_V1_RECOVERED || n != head - since || (n == 0) != (f == NULL)) {
        check_failures++;
        fprintf(stderr, "%s:%d: replay (%" PRIu64 ", %" PRIu64 "]: reason %d, %zu frames\n", __FILE__, line, since,
                head, (int)r, r == SY_V1_RECOVERED ? n : 0);
    }
    if (r != SY_V1_RECOVERED)
        return;
    for (size_t i = 0; i < n; i++) {
        check_count++;
        if (offset_of(f[i]) != since + 1 + i || atomic_load(&f[i]->refs) != 2) {
            check_failures++;
            fprintf(stderr, "%s:%d: replayed frame %zu: offset %" PRIu64 " (want %" PRIu64 "), %u references\n",
                    __FILE__, line, i, offset_of(f[i]), since + 1 + i, atomic_load(&f[i]->refs));
        }
        sy_refbuf_release(f[i]);
    }
    sy_free(f);
}

static void totals(sy_hist_t *g, size_t want_count, size_t want_bytes, int line) {
    size_t c = 0, b = 0;
    sy_hist_totals(g, &c, &b);
    check_count++;
    if (c != want_count || b != want_bytes) {
        check_failures++;
        fprintf(stderr, "%s:%d: kept %zu messages, %zu bytes; want %zu, %zu\n", __FILE__, line, c, b, want_count,
                want_bytes);
    }
}
#define CHECK_TOTALS(g, c, b) totals((g), (c), (b), __LINE__)

static sy_history_t *hist_of(sy_hist_t *g, sy_topic_t *t, bool create) {
    sy_hist_lock(g);
    sy_history_t *h = sy_hist_of(g, t, create);
    sy_hist_unlock(g);
    return h;
}

static void sweep(sy_hist_t *g, sy_topics_t *r, int64_t now) { sy_hist_sweep(g, r, now); }

static void test_offsets_and_size(void) {
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 4}), 0);
    CHECK(sy_hist_default_on(&g));
    sy_topic_t *t = sy_topic_acquire(&r, "a", 1, true);
    CHECK(t != NULL);
    if (t == NULL)
        return;
    CHECK(hist_of(&g, t, false) == NULL);
    sy_history_t *h = hist_of(&g, t, true);
    CHECK(h != NULL);
    if (h == NULL)
        return;
    CHECK(hist_of(&g, t, true) == h);
    CHECK(atomic_load(&t->hist) == h);
    CHECK(h->topic == t);
    CHECK_EQU(h->size, 4);
    CHECK_EQU(h->last, 0);
    CHECK_EQU(h->first, 1);
    CHECK_EQU(h->count, 0);
    /* An empty history holds no reference on its topic. */
    CHECK(!h->holds_ref);
    CHECK_EQU(atomic_load(&t->refs), 1);

    for (uint64_t i = 1; i <= 3; i++)
        CHECK_EQU(publish(&g, h, 32, 0), i);
    CHECK_EQU(h->first, 1);
    CHECK_EQU(h->count, 3);
    CHECK(h->holds_ref);
    CHECK_EQU(atomic_load(&t->refs), 2);
    CHECK_TOTALS(&g, 3, 3 * (32 + OVER));
    CHECK_REPLAY(&g, h, 0, 3);
    CHECK_REPLAY(&g, h, 1, 3);
    CHECK_REPLAY(&g, h, 0, 2); /* a head before the last */

    for (uint64_t i = 4; i <= 10; i++)
        CHECK_EQU(publish(&g, h, 32, 0), i);
    CHECK_EQU(h->last, 10);
    CHECK_EQU(h->first, 7);
    CHECK_EQU(h->count, 4);
    CHECK_EQU(atomic_load(&t->refs), 2); /* one, however many kept */
    CHECK_TOTALS(&g, 4, 4 * (32 + OVER));
    CHECK_REPLAY(&g, h, 6, 10);
    CHECK_REPLAY(&g, h, 9, 10);
    sy_refbuf_t **f;
    size_t n;
    CHECK_EQ(replay(&g, h, h->epoch, 5, 10, SIZE_MAX, 0, &f, &n), SY_V1_TRIMMED);
    CHECK(f == NULL && n == 0);

    /* Our reference goes: the history's keeps the topic. */
    sy_topic_release(&r, t);
    CHECK_EQU(sy_topics_count(&r), 1);
    /* Nothing expires (no ttl): the sweep keeps it. */
    sweep(&g, &r, INT64_MAX / 2);
    CHECK_EQU(sy_topics_count(&r), 1);
    CHECK_EQU(h->count, 4);
    /* Turned off: emptied now; the sweep then gives the topic back. */
    t = sy_topic_acquire(&r, "a", 1, false);
    CHECK(t != NULL && atomic_load(&t->hist) == h);
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 0, 0, 0), 0);
    sy_hist_unlock(&g);
    CHECK_EQU(h->count, 0);
    CHECK_EQU(h->first, 11);
    CHECK_TOTALS(&g, 0, 0);
    CHECK_EQ(replay(&g, h, h->epoch, 10, 10, SIZE_MAX, 0, &f, &n), SY_V1_NO_HISTORY);
    sy_topic_release(&r, t);
    CHECK_EQU(sy_topics_count(&r), 1);
    sweep(&g, &r, 0);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

static void test_ttl_and_sweep(void) {
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 2), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 100, .ttl_s = 2}), 0);
    sy_topic_t *t = sy_topic_acquire(&r, "ttl", 3, true);
    CHECK(t != NULL);
    if (t == NULL)
        return;
    sy_history_t *h = hist_of(&g, t, true);
    CHECK(h != NULL);
    if (h == NULL)
        return;
    uint64_t epoch = h->epoch;
    publish(&g, h, 40, 1000);
    publish(&g, h, 40, 1500);
    publish(&g, h, 40, 2500);
    CHECK_EQU(h->count, 3);
    /* At 3000, the one of 1000 is 2 s old: gone as the next comes. */
    publish(&g, h, 40, 3000);
    CHECK_EQU(h->count, 3);
    CHECK_EQU(h->first, 2);
    CHECK_TOTALS(&g, 3, 3 * (40 + OVER));
    /* A replay trims first: at 3600 the one of 1500 is gone too. */
    sy_refbuf_t **f;
    size_t n;
    CHECK_EQ(replay(&g, h, epoch, 1, 4, SIZE_MAX, 3600, &f, &n), SY_V1_TRIMMED);
    CHECK_EQU(h->first, 3);
    CHECK_EQ(replay(&g, h, epoch, 2, 4, SIZE_MAX, 3600, &f, &n), SY_V1_RECOVERED);
    CHECK_EQU(n, 2);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQU(offset_of(f[i]), 3 + i);
        sy_refbuf_release(f[i]);
    }
    sy_free(f);
    /* The sweep expires the rest (1 ms before 5000: the last stays). */
    sweep(&g, &r, 4999);
    CHECK_EQU(h->count, 1);
    CHECK_EQU(sy_topics_count(&r), 1);
    sweep(&g, &r, 5000);
    CHECK_EQU(h->count, 0);
    CHECK_EQU(h->first, 5);
    CHECK(!h->holds_ref);
    CHECK_TOTALS(&g, 0, 0);
    /* We still hold the topic: it stays, with its epoch and offsets. */
    CHECK_EQU(sy_topics_count(&r), 1);
    CHECK_EQU(atomic_load(&t->refs), 1);
    CHECK_EQ(replay(&g, h, epoch, 3, 4, SIZE_MAX, 5000, &f, &n), SY_V1_TRIMMED);
    CHECK_EQ(replay(&g, h, epoch, 4, 4, SIZE_MAX, 5000, &f, &n), SY_V1_RECOVERED);
    CHECK(f == NULL && n == 0);
    /* Once more a message, then only the history holds the topic. */
    CHECK_EQU(publish(&g, h, 40, 6000), 5);
    CHECK(h->holds_ref);
    CHECK_EQU(h->first, 5);
    sy_topic_release(&r, t);
    CHECK_EQU(sy_topics_count(&r), 1);
    sweep(&g, &r, 7999);
    CHECK_EQU(sy_topics_count(&r), 1);
    sweep(&g, &r, 8000);
    CHECK_EQU(sy_topics_count(&r), 0);
    /* Made again: a new history, a new epoch, offsets from 1. */
    t = sy_topic_acquire(&r, "ttl", 3, true);
    CHECK(t != NULL);
    if (t == NULL)
        return;
    h = hist_of(&g, t, true);
    CHECK(h != NULL);
    if (h != NULL) {
        CHECK(h->epoch != epoch);
        CHECK_EQU(h->last, 0);
        CHECK_EQ(replay(&g, h, epoch, 4, 0, SIZE_MAX, 8000, &f, &n), SY_V1_EPOCH);
    }
    sy_topic_release(&r, t);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

static void test_max_bytes(void) {
    sy_topics_t r;
    sy_hist_t g;
    const size_t e = 100 + OVER; /* one message's cost */
    CHECK_EQ(sy_topics_init(&r, 2), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 100, .max_bytes = 3 * e}), 0);
    sy_topic_t *ta = sy_topic_acquire(&r, "a", 1, true), *tb = sy_topic_acquire(&r, "b", 1, true);
    sy_topic_t *tc = sy_topic_acquire(&r, "c", 1, true);
    CHECK(ta != NULL && tb != NULL && tc != NULL);
    if (ta == NULL || tb == NULL || tc == NULL)
        return;
    sy_history_t *a = hist_of(&g, ta, true), *b = hist_of(&g, tb, true), *c = hist_of(&g, tc, true);
    CHECK(a != NULL && b != NULL && c != NULL);
    if (a == NULL || b == NULL || c == NULL)
        return;
    CHECK(a->epoch != b->epoch && b->epoch != c->epoch);
    publish(&g, a, 100, 0); /* a1 */
    publish(&g, b, 100, 0); /* b1 */
    publish(&g, a, 100, 0); /* a2 */
    CHECK_TOTALS(&g, 3, 3 * e);
    publish(&g, b, 100, 0); /* b2: a1 goes */
    CHECK_EQU(a->first, 2);
    CHECK_EQU(a->count, 1);
    CHECK_EQU(b->first, 1);
    CHECK_EQU(b->count, 2);
    CHECK_TOTALS(&g, 3, 3 * e);
    publish(&g, b, 100, 0); /* b3: b1 goes */
    CHECK_EQU(b->first, 2);
    CHECK_EQU(b->count, 2);
    CHECK_EQU(a->count, 1);
    publish(&g, b, 100, 0); /* b4: a2 goes, a is empty */
    CHECK_EQU(a->count, 0);
    CHECK_EQU(a->first, 3);
    CHECK_EQU(a->last, 2);
    CHECK_EQU(b->count, 3);
    CHECK_REPLAY(&g, b, 1, 4);
    sy_refbuf_t **f;
    size_t n;
    CHECK_EQ(replay(&g, a, a->epoch, 1, 2, SIZE_MAX, 0, &f, &n), SY_V1_TRIMMED);
    CHECK_TOTALS(&g, 3, 3 * e);
    /* A smaller one on c fits after one of b goes. */
    publish(&g, c, 50, 0);
    CHECK_EQU(b->count, 2);
    CHECK_EQU(c->count, 1);
    CHECK_TOTALS(&g, 3, 2 * e + 50 + OVER);
    /* Larger than max_bytes by itself: everything goes, that one too; c's
     * history starts after it. */
    sy_hist_lock(&g);
    uint64_t off = sy_history_next(c);
    sy_refbuf_t *big = frame_of(off, 3 * e);
    CHECK(sy_hist_append(&g, c, big, 0));
    sy_hist_unlock(&g);
    CHECK_EQU(atomic_load(&big->refs), 1); /* the history let go of it */
    sy_refbuf_release(big);
    CHECK_EQU(c->count, 0);
    CHECK_EQU(c->last, 2);
    CHECK_EQU(c->first, 3);
    CHECK_EQU(b->count, 0);
    CHECK_EQU(b->first, 5);
    CHECK_TOTALS(&g, 0, 0);
    CHECK_EQ(replay(&g, c, c->epoch, 1, 2, SIZE_MAX, 0, &f, &n), SY_V1_TRIMMED);
    CHECK_EQ(replay(&g, c, c->epoch, 2, 2, SIZE_MAX, 0, &f, &n), SY_V1_RECOVERED);
    /* Then it goes on. */
    CHECK_EQU(publish(&g, c, 100, 0), 3);
    CHECK_REPLAY(&g, c, 2, 3);
    CHECK_TOTALS(&g, 1, e);
    /* The topics go once released and swept (empty histories). */
    sy_topic_release(&r, ta);
    sy_topic_release(&r, tb);
    sy_topic_release(&r, tc);
    CHECK_EQU(sy_topics_count(&r), 3);
    sweep(&g, &r, 0);
    CHECK_EQU(sy_topics_count(&r), 1); /* c keeps one message */
    sy_topics_destroy(&r);             /* the server going, with a message kept */
    sy_hist_destroy(&g);
}

static void test_hole(void) {
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 8}), 0);
    sy_topic_t *t = sy_topic_acquire(&r, "h", 1, true);
    sy_history_t *h = t != NULL ? hist_of(&g, t, true) : NULL;
    CHECK(h != NULL);
    if (h == NULL)
        return;
    for (int i = 0; i < 3; i++)
        publish(&g, h, 30, 0);
    /* Offset 4 could not be made: the history is emptied. */
    sy_hist_lock(&g);
    CHECK_EQU(sy_history_next(h), 4);
    CHECK(!sy_hist_append(&g, h, NULL, 0));
    sy_hist_unlock(&g);
    CHECK_EQU(h->count, 0);
    CHECK_EQU(h->first, 5);
    CHECK_TOTALS(&g, 0, 0);
    CHECK_EQU(publish(&g, h, 30, 0), 5);
    CHECK_EQU(publish(&g, h, 30, 0), 6);
    CHECK_EQU(h->first, 5);
    sy_refbuf_t **f;
    size_t n;
    /* Across the hole: trimmed, never a silent gap. */
    CHECK_EQ(replay(&g, h, h->epoch, 2, 6, SIZE_MAX, 0, &f, &n), SY_V1_TRIMMED);
    CHECK_EQ(replay(&g, h, h->epoch, 3, 6, SIZE_MAX, 0, &f, &n), SY_V1_TRIMMED);
    CHECK_REPLAY(&g, h, 4, 6);
    /* A hole in an empty history too. */
    sy_hist_lock(&g);
    sy_history_next(h);
    CHECK(!sy_hist_append(&g, h, NULL, 0));
    sy_hist_unlock(&g);
    CHECK_EQU(h->first, 8);
    CHECK_EQU(h->last, 7);
    sy_topic_release(&r, t);
    sweep(&g, &r, 0);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

static void test_reasons(void) {
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 10}), 0);
    sy_topic_t *t = sy_topic_acquire(&r, "r", 1, true);
    sy_history_t *h = t != NULL ? hist_of(&g, t, true) : NULL;
    CHECK(h != NULL);
    if (h == NULL)
        return;
    sy_refbuf_t **f = NULL;
    size_t n = 5;
    /* No history at all. */
    CHECK_EQ(replay(&g, NULL, 0, 0, 0, SIZE_MAX, 0, &f, &n), SY_V1_NO_HISTORY);
    CHECK(f == NULL && n == 0);
    /* Nothing published yet: (0, 0] is recovered, empty. */
    CHECK_EQ(replay(&g, h, h->epoch, 0, 0, SIZE_MAX, 0, &f, &n), SY_V1_RECOVERED);
    CHECK(f == NULL && n == 0);
    for (int i = 0; i < 3; i++)
        publish(&g, h, 100, 0);
    CHECK_EQ(replay(&g, h, h->epoch ^ 1, 1, 3, SIZE_MAX, 0, &f, &n), SY_V1_EPOCH);
    CHECK_EQ(replay(&g, h, h->epoch ^ 1, 3, 3, SIZE_MAX, 0, &f, &n), SY_V1_EPOCH);
    CHECK_EQ(replay(&g, h, h->epoch, 4, 3, SIZE_MAX, 0, &f, &n), SY_V1_FUTURE);
    CHECK_EQ(replay(&g, h, h->epoch, UINT64_MAX, 3, SIZE_MAX, 0, &f, &n), SY_V1_FUTURE);
    /* since == head: recovered, nothing to send (even with no budget). */
    CHECK_EQ(replay(&g, h, h->epoch, 3, 3, 0, 0, &f, &n), SY_V1_RECOVERED);
    CHECK(f == NULL && n == 0);
    /* The budget counts the frames' bytes: 300 fit, 299 do not. */
    CHECK_EQ(replay(&g, h, h->epoch, 0, 3, 299, 0, &f, &n), SY_V1_TOO_LARGE);
    CHECK(f == NULL && n == 0);
    CHECK_EQ(replay(&g, h, h->epoch, 1, 3, 199, 0, &f, &n), SY_V1_TOO_LARGE);
    CHECK_EQ(replay(&g, h, h->epoch, 0, 3, 300, 0, &f, &n), SY_V1_RECOVERED);
    CHECK_EQU(n, 3);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQU(offset_of(f[i]), i + 1);
        CHECK_EQU(atomic_load(&f[i]->refs), 2);
        sy_refbuf_release(f[i]);
    }
    sy_free(f);
    /* A head past what is kept: trimmed (not the caller's to ask). */
    CHECK_EQ(replay(&g, h, h->epoch, 1, 4, SIZE_MAX, 0, &f, &n), SY_V1_TRIMMED);
    /* Size 0 for this topic: no-history, whatever the position. */
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 0, 0, 0), 0);
    sy_hist_unlock(&g);
    CHECK(hist_of(&g, t, true) == h); /* still there, size 0 */
    CHECK_EQU(h->size, 0);
    CHECK_EQ(replay(&g, h, h->epoch, 3, 3, SIZE_MAX, 0, &f, &n), SY_V1_NO_HISTORY);
    CHECK_EQ(replay(&g, h, 0, 0, 3, SIZE_MAX, 0, &f, &n), SY_V1_NO_HISTORY);
    sy_topic_release(&r, t);
    sweep(&g, &r, 0);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

static void test_configure(void) {
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 2), 0);
    r.free_hist = sy_history_free;
    /* History off by default: topics get none unless configured. */
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){0}), 0);
    CHECK(!sy_hist_default_on(&g));
    sy_topic_t *t = sy_topic_acquire(&r, "cfg", 3, true);
    CHECK(t != NULL);
    if (t == NULL)
        return;
    CHECK(hist_of(&g, t, true) == NULL);
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 0, 0, 0), 0);
    sy_hist_unlock(&g);
    CHECK(hist_of(&g, t, true) == NULL);
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 5, 0, 0), 0);
    sy_hist_unlock(&g);
    sy_history_t *h = hist_of(&g, t, false);
    CHECK(h != NULL);
    if (h == NULL)
        return;
    CHECK_EQU(h->size, 5);
    /* 12 in a ring of 5: it wraps. */
    for (int i = 0; i < 12; i++)
        publish(&g, h, 24, 0);
    CHECK_EQU(h->count, 5);
    CHECK_EQU(h->first, 8);
    CHECK(h->head != 0);
    CHECK_REPLAY(&g, h, 7, 12);
    /* Grown: the wrapped entries keep their order in the larger ring. */
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 40, 0, 0), 0);
    sy_hist_unlock(&g);
    CHECK_EQU(h->count, 5);
    CHECK_REPLAY(&g, h, 7, 12);
    for (int i = 0; i < 30; i++)
        publish(&g, h, 24, 0);
    CHECK_EQU(h->count, 35);
    CHECK_EQU(h->first, 8);
    CHECK_REPLAY(&g, h, 7, 42);
    for (int i = 0; i < 10; i++)
        publish(&g, h, 24, 0);
    CHECK_EQU(h->count, 40);
    CHECK_EQU(h->first, 13);
    CHECK(h->cap <= 40);
    CHECK_REPLAY(&g, h, 12, 52);
    CHECK_TOTALS(&g, 40, 40 * (24 + OVER));
    /* Shrunk: trimmed now, the newest kept. */
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 3, 0, 0), 0);
    sy_hist_unlock(&g);
    CHECK_EQU(h->count, 3);
    CHECK_EQU(h->first, 50);
    CHECK_TOTALS(&g, 3, 3 * (24 + OVER));
    CHECK_REPLAY(&g, h, 49, 52);
    for (int i = 0; i < 7; i++)
        publish(&g, h, 24, 0);
    CHECK_EQU(h->count, 3);
    CHECK_REPLAY(&g, h, 56, 59);
    /* A ttl set later trims at once with the time given. */
    for (int i = 0; i < 2; i++)
        publish(&g, h, 24, 10000);
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 3, 1, 10999), 0);
    sy_hist_unlock(&g);
    CHECK_EQU(h->count, 2); /* the one of time 0 went */
    CHECK_EQU(h->ttl_s, 1);
    sy_hist_lock(&g);
    CHECK_EQ(sy_hist_configure(&g, t, 3, 1, 11000), 0);
    sy_hist_unlock(&g);
    CHECK_EQU(h->count, 0);
    CHECK_EQU(h->first, 62);
    CHECK_TOTALS(&g, 0, 0);
    sy_topic_release(&r, t);
    sweep(&g, &r, 11000);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

static void test_teardown(void) {
    /* The server going with messages kept in several topics, some of them
     * still referenced: everything is freed (valgrind and ASan count). */
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 2), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 16, .ttl_s = 60, .max_bytes = 1 << 20}), 0);
    sy_topic_t *held = NULL;
    for (int i = 0; i < 5; i++) {
        char name[16];
        int len = snprintf(name, sizeof(name), "t%d", i);
        sy_topic_t *t = sy_topic_acquire(&r, name, (size_t)len, true);
        sy_history_t *h = t != NULL ? hist_of(&g, t, true) : NULL;
        CHECK(h != NULL);
        if (h == NULL)
            continue;
        for (int k = 0; k < 20 + i; k++)
            publish(&g, h, 64 + (size_t)k, 0);
        if (i == 2)
            held = t; /* still ours when the server goes */
        else
            sy_topic_release(&r, t);
    }
    /* A replay's frames outlive the history. */
    sy_refbuf_t **f = NULL;
    size_t n = 0;
    sy_history_t *h = held != NULL ? atomic_load(&held->hist) : NULL;
    CHECK(h != NULL);
    if (h != NULL)
        CHECK_EQ(replay(&g, h, h->epoch, h->last - 3, h->last, SIZE_MAX, 0, &f, &n), SY_V1_RECOVERED);
    CHECK_EQU(sy_topics_count(&r), 5);
    size_t want = 0; /* topic i keeps its last 16: lengths 64 + 4 + i .. 64 + 19 + i */
    for (int i = 0; i < 5; i++)
        for (int k = 4 + i; k < 20 + i; k++)
            want += 64 + (size_t)k + OVER;
    CHECK_TOTALS(&g, 80, want);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQU(atomic_load(&f[i]->refs), 1);
        sy_refbuf_release(f[i]);
    }
    sy_free(f);
    /* sy_history_free(NULL) is a no-op. */
    sy_history_free(NULL);
}

/* max_bytes over many topics, against a model: after every publish the
 * messages kept are the newest that fit, whichever topics they belong to
 * (the heap of histories keeps the oldest of all on top), and every
 * topic's kept messages are its newest, contiguous. */
static void test_max_bytes_many(void) {
    enum { TOPICS = 37, PUBLISHES = 3000, CAP = 40 };
    sy_topics_t r;
    sy_hist_t g;
    const size_t e = 64 + OVER;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 1000, .max_bytes = CAP * e}), 0);
    sy_topic_t *t[TOPICS];
    sy_history_t *h[TOPICS];
    for (int i = 0; i < TOPICS; i++) {
        char name[16];
        int n = snprintf(name, sizeof(name), "t%d", i);
        t[i] = sy_topic_acquire(&r, name, (size_t)n, true);
        h[i] = t[i] != NULL ? hist_of(&g, t[i], true) : NULL;
        CHECK(h[i] != NULL);
        if (h[i] == NULL)
            return;
    }
    /* The model: which topic each publish went to, in order. */
    static int owner[PUBLISHES];
    uint32_t rng = 12345;
    for (int k = 0; k < PUBLISHES; k++) {
        rng = rng * 1103515245u + 12345u;
        int i = (int)((rng >> 16) % (k < PUBLISHES / 2 ? TOPICS : 3)); /* then a few busy topics */
        owner[k] = i;
        publish(&g, h[i], 64, k);
        /* The newest CAP publishes are kept, no others. */
        int first = k + 1 > CAP ? k + 1 - CAP : 0;
        uint32_t want[TOPICS] = {0};
        for (int j = first; j <= k; j++)
            want[owner[j]]++;
        for (int i2 = 0; i2 < TOPICS; i2++)
            if (h[i2]->count != want[i2]) {
                CHECK_EQU(h[i2]->count, want[i2]);
                k = PUBLISHES;
                break;
            }
    }
    CHECK_TOTALS(&g, CAP, CAP * e);
    for (int i = 0; i < TOPICS; i++)
        if (h[i]->count > 0)
            CHECK_REPLAY(&g, h[i], h[i]->first - 1, h[i]->last);
    for (int i = 0; i < TOPICS; i++)
        sy_topic_release(&r, t[i]);
    sy_hist_sweep(&g, &r, 0); /* the ones that still keep messages stay (no ttl) */
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

/* A kept frame as the server keeps it: the symphony.v1 frame of payload at off. */
static void keep_v1(sy_hist_t *g, sy_history_t *h, const char *payload) {
    uint64_t off = sy_history_next(h);
    sy_refbuf_t *f = sy_v1_publish_frame(SY_WS_OP_TEXT, 7, true, off, payload, strlen(payload), false);
    CHECK(f != NULL && sy_hist_append(g, h, f, 0));
    sy_refbuf_release(f);
}

/* History across nodes (a bus): Redis' positions adopted (a new epoch, the
 * next offset, a duplicate, a hole), this node's own numbering while the
 * bus is down, a sync's answer (a new epoch, a stream behind Redis' last,
 * none), repeated offsets told apart by their bytes, and when a
 * subscription waits for a sync. */
static void test_sequence(void) {
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){.size = 8}), 0);
    g.sequenced = true;
    atomic_store(&g.bus_up, true);
    sy_topic_t *t = sy_topic_acquire(&r, "s", 1, true);
    sy_hist_lock(&g);
    sy_history_t *h = t != NULL ? sy_hist_of(&g, t, true) : NULL;
    CHECK(h != NULL);
    if (h == NULL) {
        sy_hist_unlock(&g);
        return;
    }
    sy_hist_change_t ch;
    const uint64_t E = 0xe1, E2 = 0xe2, E3 = 0xe3;
    CHECK(sy_hist_needs_sync(&g, h)); /* new: not synced yet */
    /* Redis' first message: a new epoch that starts where this one stood (0). */
    CHECK(sy_hist_adopt(&g, h, E, 1, &ch));
    CHECK(ch.changed && ch.reason == SY_V1_RECOVERED && ch.before == 0);
    CHECK(h->remote && h->epoch == E);
    keep_v1(&g, h, "a");
    CHECK(sy_hist_adopt(&g, h, E, 2, &ch));
    CHECK(!ch.changed);
    keep_v1(&g, h, "b");
    CHECK_EQU(h->last, 2);
    CHECK(!sy_hist_adopt(&g, h, E, 2, &ch)); /* delivered already */
    CHECK(!sy_hist_adopt(&g, h, E, 1, &ch));
    /* The same offset with other bytes: Redis gave it twice. */
    CHECK(!sy_hist_differs(h, 2, "b", 1));
    CHECK(sy_hist_differs(h, 2, "c", 1));
    CHECK(sy_hist_differs(h, 2, "bb", 2));
    CHECK(!sy_hist_differs(h, 9, "x", 1)); /* not kept: cannot tell */
    /* A hole: the history starts again after it. */
    CHECK(sy_hist_adopt(&g, h, E, 5, &ch));
    CHECK(ch.changed && ch.reason == SY_V1_TRIMMED && ch.before == 2);
    CHECK_EQU(h->count, 0);
    CHECK_EQU(h->first, 5);
    keep_v1(&g, h, "e");
    CHECK_EQU(h->last, 5);
    /* Another epoch of Redis'. */
    CHECK(sy_hist_adopt(&g, h, E2, 7, &ch));
    CHECK(ch.changed && ch.reason == SY_V1_EPOCH && ch.before == 5);
    CHECK(h->epoch == E2 && h->last == 6 && h->first == 7 && h->count == 0);
    keep_v1(&g, h, "g");
    /* The bus is down: this node numbers its own, in an epoch of its own. */
    sy_hist_localize(&g, h, &ch);
    CHECK(ch.changed && ch.reason == SY_V1_EPOCH && ch.before == 7);
    CHECK(!h->remote && h->epoch != E2 && h->last == 7 && h->count == 0);
    sy_hist_localize(&g, h, &ch);
    CHECK(!ch.changed); /* its own already */
    keep_v1(&g, h, "h");
    /* A sync: Redis says (E3, 20). */
    sy_hist_synced(&g, h, E3, 20, &ch);
    CHECK(ch.changed && ch.reason == SY_V1_EPOCH && ch.before == 8);
    CHECK(h->remote && h->epoch == E3 && h->last == 20 && h->count == 0 && h->synced);
    CHECK(!sy_hist_needs_sync(&g, h));
    /* Redis went further than its stream could give: a hole at the end. */
    sy_hist_synced(&g, h, E3, 25, &ch);
    CHECK(ch.changed && ch.reason == SY_V1_TRIMMED && h->last == 25);
    /* Redis has no sequence: nothing changes. */
    sy_hist_synced(&g, h, 0, 0, &ch);
    CHECK(!ch.changed && h->epoch == E3 && h->last == 25);
    /* A sync's entries kept for history only (older than the live
     * subscribers, who stand at 25 of E3): their change is deferred, and
     * the sync's end tells the position after them, never "recovered"
     * (the subscribers never got them), from where they stood. */
    const uint64_t E4 = 0xe4;
    CHECK(sy_hist_adopt(&g, h, E4, 1, &ch));
    CHECK(ch.changed && ch.before == 25);
    sy_hist_defer(h, &ch);
    keep_v1(&g, h, "1");
    CHECK(sy_hist_adopt(&g, h, E4, 2, &ch));
    sy_hist_defer(h, &ch); /* no change: nothing deferred */
    keep_v1(&g, h, "2");
    sy_hist_synced(&g, h, E4, 2, &ch);
    CHECK(ch.changed && ch.reason == SY_V1_EPOCH && ch.before == 25 && h->last == 2 && h->count == 2);
    sy_hist_synced(&g, h, E4, 2, &ch);
    CHECK(!ch.changed);                   /* told once */
    sy_hist_synced(&g, h, 0xe5, 30, &ch); /* another epoch: nothing kept */
    CHECK(ch.changed && ch.reason == SY_V1_EPOCH && h->count == 0);
    /* Its subscription went: subscriptions wait, but only while the bus is up. */
    h->synced = false;
    CHECK(sy_hist_needs_sync(&g, h));
    atomic_store(&g.bus_up, false);
    CHECK(!sy_hist_needs_sync(&g, h));
    sy_hist_unlock(&g);
    sy_topic_release(&r, t);
    sweep(&g, &r, 0);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

/* A history of 1 with a ttl (a Pusher cache channel's): each message kept
 * with its meta, sy_hist_last the newest only (its meta, or none when it
 * had none), none once the ttl passed; the meta given back with it. */
static void test_last_with_meta(void) {
    sy_topics_t r;
    sy_hist_t g;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    r.free_hist = sy_history_free;
    CHECK_EQ(sy_hist_init(&g, &(sy_hist_conf_t){0}), 0); /* history off by default */
    sy_topic_t *t = sy_topic_acquire(&r, "cache-x", 7, true);
    CHECK(t != NULL);
    if (t == NULL)
        return;
    sy_hist_lock(&g);
    CHECK(sy_hist_of(&g, t, true) == NULL); /* off: none made */
    CHECK_EQ(sy_hist_configure(&g, t, 1, 2, 0), 0);
    sy_history_t *h = sy_hist_of(&g, t, false);
    sy_refbuf_t *f = NULL, *m = NULL;
    CHECK(h != NULL && !sy_hist_last(&g, h, 0, &f, &m) && f == NULL && m == NULL);
    for (uint64_t i = 1; i <= 3; i++) {
        sy_refbuf_t *fr = frame_of(sy_history_next(h), 20), *meta = sy_refbuf_raw("price", 5);
        CHECK(sy_hist_append_meta(&g, h, fr, i == 2 ? NULL : meta, 1000 * (int64_t)i));
        sy_refbuf_release(fr);
        sy_refbuf_release(meta);
    }
    sy_hist_unlock(&g);
    CHECK_TOTALS(&g, 1, 20 + OVER); /* the meta is not an entry's: entries cost what they did */
    sy_hist_lock(&g);
    CHECK(sy_hist_last(&g, h, 4999, &f, &m));
    CHECK(f != NULL && offset_of(f) == 3 && m != NULL && m->len == 5 && memcmp(m->data, "price", 5) == 0);
    CHECK(f != NULL && atomic_load(&f->refs) == 2);
    sy_refbuf_release(f);
    sy_refbuf_release(m);
    /* A newest without meta: none (not its predecessor's). */
    sy_refbuf_t *fr = frame_of(sy_history_next(h), 20);
    CHECK(sy_hist_append_meta(&g, h, fr, NULL, 4000));
    sy_refbuf_release(fr);
    CHECK(sy_hist_last(&g, h, 4999, &f, &m) && f != NULL && offset_of(f) == 4 && m == NULL);
    sy_refbuf_release(f);
    /* 2 s after it was kept: expired, even before a sweep. */
    CHECK(!sy_hist_last(&g, h, 6000, &f, &m) && f == NULL && m == NULL);
    sy_hist_unlock(&g);
    CHECK_TOTALS(&g, 0, 0);
    sweep(&g, &r, 6000);
    sy_topic_release(&r, t);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
    sy_hist_destroy(&g);
}

int main(void) {
    test_last_with_meta();
    test_sequence();
    test_offsets_and_size();
    test_ttl_and_sweep();
    test_max_bytes();
    test_max_bytes_many();
    test_hole();
    test_reasons();
    test_configure();
    test_teardown();
    return check_report("history");
}
