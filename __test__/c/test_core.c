/* Unit tests of the core's small modules: sy_topic, sy_refbuf, sy_events,
 * sy_alloc (system mode under the sanitizers). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_refbuf.h"
#include "check.h"
#include "io/model/sy_events.h"
#include "io/model/sy_topic.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"

static void test_topics(void) {
    sy_topics_t r;
    CHECK_EQ(sy_topics_init(&r, 3), 0);
    CHECK(sy_topic_acquire(&r, "a", 1, false) == NULL);
    sy_topic_t *a = sy_topic_acquire(&r, "a", 1, true);
    CHECK(a != NULL);
    CHECK_EQU(sy_topics_count(&r), 1);
    sy_topic_t *a2 = sy_topic_acquire(&r, "a", 1, false);
    CHECK(a2 == a);
    CHECK_EQU(atomic_load(&a->refs), 2);
    sy_topic_release(&r, a2);
    CHECK_EQU(sy_topics_count(&r), 1);
    /* Many topics: the table grows and every one is still found. */
    char name[32];
    sy_topic_t *many[500];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(name, sizeof(name), "topic-%d", i);
        many[i] = sy_topic_acquire(&r, name, (size_t)n, true);
        CHECK(many[i] != NULL);
    }
    CHECK_EQU(sy_topics_count(&r), 501);
    CHECK(r.map.nbuckets >= 512);
    for (int i = 0; i < 500; i++) {
        int n = snprintf(name, sizeof(name), "topic-%d", i);
        sy_topic_t *t = sy_topic_acquire(&r, name, (size_t)n, false);
        CHECK(t == many[i]);
        sy_topic_release(&r, t);
        sy_topic_release(&r, many[i]);
    }
    CHECK_EQU(sy_topics_count(&r), 1);
    /* Subscriber lists: swap-remove reports who moved. */
    uint32_t idx = 99, moved = 99;
    CHECK_EQ(sy_topic_add_sub(a, 1, 10, &idx), 0);
    CHECK_EQU(idx, 0);
    CHECK_EQ(sy_topic_add_sub(a, 1, 20, &idx), 0);
    CHECK_EQU(idx, 1);
    CHECK_EQ(sy_topic_add_sub(a, 1, 30, &idx), 0);
    CHECK_EQU(idx, 2);
    CHECK(sy_topic_remove_sub(a, 1, 0, &moved));
    CHECK_EQU(moved, 30);
    CHECK_EQU(a->slots[1].subs[0], 30);
    CHECK(!sy_topic_remove_sub(a, 1, 1, &moved));
    CHECK(!sy_topic_remove_sub(a, 1, 0, &moved));
    /* Interest: counted per thread, each unit with a reference. */
    sy_topic_ref(a);
    sy_topic_add_interest(&r, a, 2);
    CHECK_EQU(sy_topic_interest(a, 2), 1);
    CHECK_EQU(sy_topic_interest(a, 1), 0);
    CHECK_EQU(atomic_load(&a->refs), 2);
    sy_topic_drop_interest(&r, a, 2);
    CHECK_EQU(sy_topic_interest(a, 2), 0);
    CHECK_EQU(atomic_load(&a->refs), 1);
    CHECK(a->slots[1].subs == NULL); /* an empty list gives its array back */
    CHECK_EQU(a->slots[0].nsubs, 0);
    /* Applied subscriptions: true exactly at the 0 -> 1 and 1 -> 0 edges. */
    CHECK_EQU(sy_topic_subscribers(a), 0);
    CHECK(sy_topic_count_sub(a, true));
    CHECK(!sy_topic_count_sub(a, true));
    CHECK_EQU(sy_topic_subscribers(a), 2);
    CHECK(!sy_topic_count_sub(a, false));
    CHECK(sy_topic_count_sub(a, false));
    CHECK(sy_topic_count_sub(a, true));
    CHECK(sy_topic_count_sub(a, false));
    CHECK_EQU(sy_topic_subscribers(a), 0);
    sy_topic_release(&r, a);
    CHECK_EQU(sy_topics_count(&r), 0);
    sy_topics_destroy(&r);
}

static void test_msgs(void) {
    sy_refbuf_t *m = sy_ws_msg(SY_WS_OP_TEXT, "hello", 5);
    CHECK(m != NULL);
    CHECK_EQU(m->len, 7);
    CHECK_EQU(m->data[0], 0x81);
    CHECK_EQU(m->data[1], 5);
    CHECK(memcmp(m->data + 2, "hello", 5) == 0);
    sy_refbuf_ref(m, 2);
    sy_refbuf_release(m);
    sy_refbuf_release(m);
    CHECK_EQU(atomic_load(&m->refs), 1);
    sy_refbuf_release(m);

    uint8_t big[70000];
    memset(big, 7, sizeof(big));
    m = sy_ws_msg(SY_WS_OP_BINARY, big, sizeof(big));
    CHECK(m != NULL && m->len == sizeof(big) + 10 && m->data[1] == 127);
    sy_refbuf_release(m);

    /* A close reason over 123 bytes is cut at a UTF-8 boundary. */
    char reason[200];
    for (int i = 0; i < 100; i += 2) {
        reason[i] = (char)0xc3;
        reason[i + 1] = (char)0xa9; /* é */
    }
    memset(reason + 100, 'x', 100);
    m = sy_ws_msg_close(1000, reason, 200);
    CHECK(m != NULL);
    CHECK_EQU(m->data[0], 0x88);
    CHECK(m->data[1] <= 125);
    uint16_t code = 0;
    const uint8_t *r = NULL;
    size_t rl = 0;
    CHECK_EQ(sy_ws_close_parse(m->data + 2, m->data[1], &code, &r, &rl), 0);
    CHECK_EQU(code, 1000);
    sy_refbuf_release(m);
    /* Cut in the middle of a 2-byte character: the whole character goes. */
    memset(reason, 'y', 122);
    reason[122] = (char)0xc3;
    reason[123] = (char)0xa9;
    m = sy_ws_msg_close(1001, reason, 124);
    CHECK(m != NULL && m->data[1] == 2 + 122);
    sy_refbuf_release(m);
    m = sy_ws_msg_close(0, NULL, 0);
    CHECK(m != NULL && m->len == 2 && m->data[1] == 0);
    sy_refbuf_release(m);
    m = sy_refbuf_raw("HTTP/1.1 101\r\n\r\n", 16);
    CHECK(m != NULL && m->len == 16);
    sy_refbuf_release(m);
}

static void test_batches(void) {
    sy_batch_t *b = NULL;
    uint8_t payload[10000];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)i;
    for (uint32_t i = 0; i < 300; i++)
        CHECK(sy_batch_add(&b, 1, 1000 + i, SY_EV_MESSAGE, (uint8_t)(i & 1), (uint16_t)i, payload, i * 31 % 9000) == 0);
    const char *parts[] = {"ab", "", "cde"};
    size_t lens[] = {2, 0, 3};
    CHECK(sy_batch_addv(&b, 1, 7, SY_EV_UPGRADE, 0, 0, (const void *const *)parts, lens, 3) == 0);
    CHECK(b != NULL && b->count == 301 && b->thread == 1);
    size_t pos = 0;
    sy_event_t ev;
    const uint8_t *p;
    uint32_t n = 0;
    while (sy_batch_next(b, &pos, &ev, &p)) {
        if (n < 300) {
            CHECK_EQU(ev.conn, 1000 + n);
            CHECK_EQU(ev.len, n * 31 % 9000);
            CHECK_EQU(ev.flags, n & 1);
            CHECK_EQU(ev.code, n);
            CHECK(memcmp(p, payload, ev.len) == 0);
        } else {
            CHECK_EQU(ev.type, SY_EV_UPGRADE);
            CHECK_MEMSTR(p, ev.len, "abcde");
        }
        n++;
    }
    CHECK_EQU(n, 301);
    CHECK(sy_batch_bytes(b) >= b->len);
    sy_batch_free(b);
    sy_batch_free(NULL);
}

static void test_alloc(void) {
    sy_alloc_stats_t s0, s1;
    CHECK_EQ(sy_alloc_stats(&s0), 0);
    void *p = sy_malloc(1 << 20);
    CHECK(p != NULL);
    CHECK_EQ(sy_alloc_stats(&s1), 0);
    CHECK(s1.allocated - s0.allocated >= (1 << 20));
    void *q = sy_realloc(p, 2 << 20);
    CHECK(q != NULL);
    sy_free(q);
    CHECK_EQ(sy_alloc_stats(&s1), 0);
    CHECK_EQ(s1.allocated, s0.allocated);
    char *d = sy_memdup("abc", 3);
    CHECK(d != NULL && memcmp(d, "abc", 3) == 0);
    sy_free(d);
    sy_alloc_check_t c;
    CHECK_EQ(sy_alloc_self_check(&c), 0);
    CHECK(!c.libc_is_jemalloc);
#ifdef SY_USE_JEMALLOC
    CHECK(c.jemalloc_linked && c.ours_is_jemalloc);
#else
    CHECK(!c.jemalloc_linked && !c.ours_is_jemalloc);
    CHECK_EQ(sy_alloc_purge(), ENOTSUP);
#endif
}

int main(void) {
    test_topics();
    test_msgs();
    test_batches();
    test_alloc();
    return check_report("core");
}
