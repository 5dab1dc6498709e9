/* sy_outq: the send queue on its own (no sockets): order, partial writes,
 * pinning, clearing, the ring's growth and wrap-around, iovec and copy
 * views, ids and replacement (the conflate policy's), and that every reference is released (the sanitizers and valgrind
 * see a leak or a double release). */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "check.h"
#include "net/sy_outq.h"

static sy_refbuf_t *buf_of(char c, size_t n) {
    char tmp[256];
    memset(tmp, c, n);
    return sy_refbuf_raw(tmp, n);
}

/* Every unwritten byte, gathered through sy_outq_iov. */
static size_t gather(const sy_outq_t *q, char *out, size_t cap) {
    struct iovec iov[64];
    size_t total = 0, got = 0;
    int n = sy_outq_iov(q, iov, 64, &total);
    for (int i = 0; i < n && got < cap; i++) {
        memcpy(out + got, iov[i].iov_base, iov[i].iov_len);
        got += iov[i].iov_len;
    }
    CHECK_EQU(got, total);
    return got;
}

static void test_order_and_partial(void) {
    sy_outq_t q = {0};
    CHECK(sy_outq_empty(&q));
    CHECK_EQ(sy_outq_push(&q, buf_of('a', 3)), 0);
    CHECK_EQ(sy_outq_push(&q, buf_of('b', 4)), 0);
    CHECK_EQ(sy_outq_push(&q, buf_of('c', 5)), 0);
    CHECK_EQU(sy_outq_bytes(&q), 12);
    char out[64];
    size_t n = gather(&q, out, sizeof(out));
    CHECK(n == 12 && memcmp(out, "aaabbbbccccc", 12) == 0);
    /* A write that ends inside the second entry. */
    sy_outq_consume(&q, 5);
    CHECK_EQU(sy_outq_bytes(&q), 7);
    CHECK_EQU(q.len, 2);
    size_t hl;
    const uint8_t *h = sy_outq_head(&q, &hl);
    CHECK(hl == 2 && memcmp(h, "bb", 2) == 0);
    n = sy_outq_copy(&q, (uint8_t *)out, 4);
    CHECK(n == 4 && memcmp(out, "bbcc", 4) == 0);
    n = gather(&q, out, sizeof(out));
    CHECK(n == 7 && memcmp(out, "bbccccc", 7) == 0);
    sy_outq_consume(&q, 7);
    CHECK(sy_outq_empty(&q));
    CHECK_EQU(sy_outq_bytes(&q), 0);
    CHECK(sy_outq_head(&q, &hl) == NULL && hl == 0);
    /* The array stays until shrunk. */
    CHECK(q.ring != NULL);
    sy_outq_shrink(&q);
    CHECK(q.ring == NULL && q.lgcap == 0);
    sy_outq_free(&q);
}

static void test_growth_and_wrap(void) {
    sy_outq_t q = {0};
    /* Walk the head around the ring while it grows: order must hold. */
    char expect[4096];
    size_t elen = 0, written = 0;
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < round % 7 + 1; i++) {
            char c = (char)('A' + (round * 7 + i) % 26);
            CHECK_EQ(sy_outq_push(&q, buf_of(c, (size_t)(i + 1))), 0);
            memset(expect + elen, c, (size_t)(i + 1));
            elen += (size_t)(i + 1);
        }
        size_t take = (elen - written) / 2;
        char out[4096];
        size_t n = sy_outq_copy(&q, (uint8_t *)out, sizeof(out));
        CHECK_EQU(n, elen - written);
        CHECK(memcmp(out, expect + written, n) == 0);
        sy_outq_consume(&q, take);
        written += take;
        CHECK_EQU(sy_outq_bytes(&q), elen - written);
        CHECK(q.lgcap == 0 || (q.lgcap >= 3 && q.len <= (1u << q.lgcap)));
    }
    sy_outq_free(&q);
    CHECK(q.ring == NULL && q.len == 0 && q.bytes == 0);
}

static void test_clear_keeps_what_must_go_first(void) {
    sy_outq_t q = {0};
    /* The pinned response survives a clear; frames behind it do not. */
    CHECK_EQ(sy_outq_push(&q, buf_of('R', 10)), 0);
    sy_outq_pin(&q);
    CHECK_EQ(sy_outq_push(&q, buf_of('x', 4)), 0);
    CHECK_EQ(sy_outq_push(&q, buf_of('y', 4)), 0);
    sy_outq_clear(&q, true);
    CHECK_EQU(q.len, 1);
    CHECK_EQU(sy_outq_bytes(&q), 10);
    /* Written: no longer pinned, so a later clear drops what follows. */
    sy_outq_consume(&q, 10);
    CHECK_EQU(q.pinned, 0);
    /* A partly written head entry survives a clear (cutting it would
     * corrupt the stream); the rest goes. */
    CHECK_EQ(sy_outq_push(&q, buf_of('p', 8)), 0);
    CHECK_EQ(sy_outq_push(&q, buf_of('q', 8)), 0);
    sy_outq_consume(&q, 3);
    sy_outq_clear(&q, true);
    CHECK_EQU(q.len, 1);
    CHECK_EQU(sy_outq_bytes(&q), 5);
    /* Nothing written yet: a clear keeps nothing. */
    sy_outq_consume(&q, 5);
    CHECK_EQ(sy_outq_push(&q, buf_of('z', 8)), 0);
    sy_outq_clear(&q, true);
    CHECK(sy_outq_empty(&q));
    CHECK_EQU(sy_outq_bytes(&q), 0);
    /* Without keep_head, everything goes, pinned or partly written. */
    CHECK_EQ(sy_outq_push(&q, buf_of('R', 6)), 0);
    sy_outq_pin(&q);
    CHECK_EQ(sy_outq_push(&q, buf_of('s', 6)), 0);
    sy_outq_consume(&q, 2);
    sy_outq_clear(&q, false);
    CHECK(sy_outq_empty(&q) && q.pinned == 0 && q.off == 0 && q.bytes == 0);
    sy_outq_free(&q);
}

static void test_shared_references(void) {
    /* One buffer in two queues (a publish): each holds a reference, and
     * the buffer lives until the last queue lets go. */
    sy_outq_t a = {0}, b = {0};
    sy_refbuf_t *m = buf_of('m', 16);
    sy_refbuf_ref(m, 1);
    CHECK_EQ(sy_outq_push(&a, m), 0);
    CHECK_EQ(sy_outq_push(&b, m), 0);
    CHECK_EQU(atomic_load(&m->refs), 2);
    sy_outq_consume(&a, 16);
    CHECK_EQU(atomic_load(&m->refs), 1);
    char out[16];
    CHECK_EQU(sy_outq_copy(&b, (uint8_t *)out, sizeof(out)), 16);
    sy_outq_free(&b);
    sy_outq_free(&a);
}

static void test_iov_limit(void) {
    sy_outq_t q = {0};
    for (int i = 0; i < 100; i++)
        CHECK_EQ(sy_outq_push(&q, buf_of('i', 2)), 0);
    struct iovec iov[64];
    size_t total;
    CHECK_EQ(sy_outq_iov(&q, iov, 64, &total), 64);
    CHECK_EQU(total, 128);
    sy_outq_consume(&q, 1);
    CHECK_EQ(sy_outq_iov(&q, iov, 64, &total), 64);
    CHECK_EQU(total, 127);
    CHECK_EQU(iov[0].iov_len, 1);
    sy_outq_free(&q);
}

/* What an own entry of n bytes is charged. */
static size_t own_cost_of(size_t n) {
    sy_refbuf_t *b = buf_of('?', n);
    size_t cost = sy_alloc_usable(b) + sizeof(sy_refbuf_t *);
    sy_refbuf_release(b);
    return cost;
}

/* Own entries: charged their memory while queued; a replaceable one is
 * replaced only while none of it is written; clear and consume give the
 * charge back. */
static void test_own_entries(void) {
    sy_outq_t q = {0};
    bool replaced = true;
    CHECK_EQ(sy_outq_push(&q, buf_of('d', 10)), 0); /* shared data */
    CHECK_EQ(sy_outq_push_own(&q, buf_of('p', 2), true, &replaced), 0);
    CHECK(!replaced);
    CHECK(sy_outq_own_bytes(&q) > 0);
    size_t one = sy_outq_own_bytes(&q);
    CHECK(one >= sizeof(sy_refbuf_t) + 2 + sizeof(void *));
    /* A thousand more: each takes the last one's place. */
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ(sy_outq_push_own(&q, buf_of((char)('a' + i % 26), 2), true, &replaced), 0);
        CHECK(replaced);
    }
    CHECK_EQU(q.len, 2);
    CHECK(sy_outq_own_bytes(&q) > 0);
    CHECK_EQU(sy_outq_own_bytes(&q), one);
    CHECK_EQU(sy_outq_bytes(&q), 12);
    char out[64];
    size_t n = gather(&q, out, sizeof(out));
    CHECK(n == 12 && memcmp(out, "ddddddddddll", 12) == 0); /* 999 % 26: 'l' */
    /* Not replaced once its first byte is written: a new one is appended. */
    sy_outq_consume(&q, 11);
    CHECK_EQ(sy_outq_push_own(&q, buf_of('x', 2), true, &replaced), 0);
    CHECK(!replaced);
    CHECK(sy_outq_own_bytes(&q) > one);
    /* Not replaceable: appended. */
    CHECK_EQ(sy_outq_push_own(&q, buf_of('c', 4), false, &replaced), 0);
    CHECK(!replaced);
    CHECK_EQ(sy_outq_push_own(&q, buf_of('y', 2), true, &replaced), 0);
    CHECK(replaced); /* 'x' was still whole */
    n = gather(&q, out, sizeof(out));
    CHECK(n == 7 && memcmp(out, "lyycccc", 7) == 0);
    sy_outq_consume(&q, 3); /* 'l' and 'y' done: the replaceable entry is gone */
    CHECK_EQU(sy_outq_own_bytes(&q), own_cost_of(4));
    CHECK_EQ(sy_outq_push_own(&q, buf_of('z', 2), true, &replaced), 0);
    CHECK(!replaced);
    CHECK(sy_outq_own_bytes(&q) > one);
    /* Cleared: nothing owed, nothing replaceable. */
    sy_outq_clear(&q, false);
    CHECK_EQU(sy_outq_own_bytes(&q), 0);
    CHECK_EQU(sy_outq_own_bytes(&q), 0);
    CHECK_EQU(sy_outq_bytes(&q), 0);
    CHECK_EQ(sy_outq_push_own(&q, buf_of('w', 2), true, &replaced), 0);
    CHECK(!replaced);
    sy_outq_consume(&q, sy_outq_bytes(&q));
    /* Around the ring many times: positions keep naming the right entry. */
    for (int i = 0; i < 5000; i++) {
        CHECK_EQ(sy_outq_push(&q, buf_of('s', 1)), 0);
        CHECK_EQ(sy_outq_push_own(&q, buf_of('p', 2), true, &replaced), 0);
        CHECK(replaced == (i % 3 != 0));
        if (i % 3 == 2)
            sy_outq_consume(&q, sy_outq_bytes(&q));
    }
    CHECK_EQU(sy_outq_own_bytes(&q), sy_outq_empty(&q) ? 0 : one);
    sy_outq_free(&q);
    CHECK_EQU(sy_outq_own_bytes(&q), 0);
}

/* Ids name entries in push order across consumes, growth and wrap-around;
 * a replacement takes only an entry still queued, shared, not pinned and
 * not started, and releases the buffer it replaces. */
static void test_ids_and_replace(void) {
    sy_outq_t q = {0};
    CHECK_EQ(sy_outq_push(&q, buf_of('h', 4)), 0); /* the 101 */
    sy_outq_pin(&q);
    CHECK(sy_outq_replaceable(&q, sy_outq_last_id(&q)) == NULL); /* pinned */
    sy_outq_consume(&q, 4);
    bool replaced;
    CHECK_EQ(sy_outq_push_own(&q, buf_of('p', 2), true, &replaced), 0);
    CHECK(sy_outq_replaceable(&q, sy_outq_last_id(&q)) == NULL); /* own */
    CHECK_EQ(sy_outq_push(&q, buf_of('a', 3)), 0);
    uint32_t a = sy_outq_last_id(&q);
    CHECK_EQ(sy_outq_push(&q, buf_of('b', 3)), 0);
    uint32_t b = sy_outq_last_id(&q);
    CHECK(b == a + 1);
    sy_refbuf_t *a2 = buf_of('A', 5);
    CHECK(sy_outq_replace(&q, a, a2)); /* releases the 'a' buffer (the sanitizers see a leak otherwise) */
    CHECK_EQU(sy_outq_bytes(&q), 2 + 5 + 3);
    char out[64];
    size_t n = gather(&q, out, sizeof(out));
    CHECK(n == 10 && memcmp(out, "ppAAAAAbbb", 10) == 0);
    /* Started: the head entry partly written is not replaced. */
    sy_outq_consume(&q, 3); /* the pong and one byte of A */
    sy_refbuf_t *x = buf_of('x', 1);
    CHECK(!sy_outq_replace(&q, a, x));
    CHECK(sy_outq_replace(&q, b, x));
    n = gather(&q, out, sizeof(out));
    CHECK(n == 5 && memcmp(out, "AAAAx", 5) == 0);
    /* Written: its id names nothing any more. */
    sy_outq_consume(&q, 4);
    x = buf_of('y', 1);
    CHECK(!sy_outq_replace(&q, a, x));
    sy_refbuf_release(x);
    sy_outq_consume(&q, 1);
    /* Around the ring and through its growth: the id keeps naming its entry. */
    uint32_t keep = 0;
    for (int i = 0; i < 3000; i++) {
        CHECK_EQ(sy_outq_push(&q, buf_of('s', 1)), 0);
        if (i == 100)
            keep = sy_outq_last_id(&q);
        if (i % 7 == 6 && i < 90)
            sy_outq_consume(&q, 3);
    }
    CHECK(sy_outq_replace(&q, keep, buf_of('K', 2)));
    char big[256];
    n = sy_outq_copy(&q, (uint8_t *)big, sizeof(big));
    size_t before = (size_t)(keep - q.seq);
    CHECK(n == sizeof(big) && before < sizeof(big) - 2 && memcmp(big + before - 1, "sKKs", 4) == 0);
    sy_outq_free(&q);
}

int main(void) {
    test_order_and_partial();
    test_growth_and_wrap();
    test_clear_keeps_what_must_go_first();
    test_shared_references();
    test_iov_limit();
    test_own_entries();
    test_ids_and_replace();
    return check_report("outq");
}
