/* sy_bus_seq: what history across nodes puts on the wire (docs/bus.md,
 * "History across nodes"): the keys beside a channel (hash tags kept, a
 * channel without one wrapped, one with a stray '}' left as it is), the
 * positioned channel message (every malformed form refused, the body
 * exact), the sync script's answer read from RESP bytes, the waiting
 * messages' bound, and the scripts' SHA-1 as Redis computes it. Inputs are
 * copied to the heap at their exact length: ASan sees a read past the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "base/sy_alloc.h"
#include "bus/sy_bus_seq.h"
#include "bus/sy_redis_alloc.h"
#include "bus_test.h"
#include "check.h"

static uint8_t *heap(const void *p, size_t n) {
    uint8_t *h = malloc(n ? n : 1);
    if (h == NULL)
        abort();
    memcpy(h, p, n);
    return h;
}

static void keys_are(const char *channel, const char *stream, const char *meta) {
    char *s, *m;
    size_t sl, ml;
    char *p = sy_bus_seq_keys(channel, strlen(channel), &s, &sl, &m, &ml);
    CHECK(p != NULL);
    if (p == NULL)
        return;
    CHECK(sl == strlen(stream) && memcmp(s, stream, sl) == 0);
    CHECK(ml == strlen(meta) && memcmp(m, meta, ml) == 0);
    sy_free(p);
}

static void test_keys(void) {
    keys_are("symphony:feed", "{symphony:feed}:stream", "{symphony:feed}:meta");
    keys_are("symphony:room:{42}", "symphony:room:{42}:stream", "symphony:room:{42}:meta");
    keys_are("symphony:{a}b{c}", "symphony:{a}b{c}:stream", "symphony:{a}b{c}:meta");
    /* '{' without a closing '}': no tag; wrapping makes the whole channel the tag. */
    keys_are("symphony:a{b", "{symphony:a{b}:stream", "{symphony:a{b}:meta");
    /* "{}" is no tag, and a '}' cannot be inside one: left as it is. */
    keys_are("symphony:a{}b", "symphony:a{}b:stream", "symphony:a{}b:meta");
    keys_are("symphony:a}b", "symphony:a}b:stream", "symphony:a}b:meta");
}

static int read_is(const char *msg, size_t n, uint64_t epoch, uint64_t offset, const char *body, size_t body_len) {
    uint8_t *p = heap(msg, n);
    uint64_t e = 0, o = 0;
    const uint8_t *b = NULL;
    size_t bl = 0;
    int ok = sy_bus_seq_read(p, n, &e, &o, &b, &bl);
    if (ok && body != NULL) {
        CHECK_EQ(e, epoch);
        CHECK(o == offset);
        CHECK_EQ(bl, body_len);
        CHECK(b == p + (n - body_len) && memcmp(b, body, body_len) == 0);
    }
    free(p);
    return ok;
}

#define MSG(s) s, sizeof(s) - 1

static void test_read(void) {
    CHECK(read_is(MSG("\xf6"
                      "0123456789abcdef"
                      "42:hello"),
                  0x0123456789abcdefull, 42, "hello", 5));
    CHECK(read_is(MSG("\xf6"
                      "0123456789ABCDEF"
                      "1:"),
                  0x0123456789abcdefull, 1, "", 0));
    CHECK(read_is(MSG("\xf6"
                      "ffffffffffffffff"
                      "18446744073709551615:\xf5x"),
                  UINT64_MAX, UINT64_MAX, "\xf5x", 2));
    CHECK(!read_is(MSG("\xf5"
                       "0123456789abcdef"
                       "42:hello"),
                   0, 0, NULL, 0)); /* not positioned */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdeg"
                       "42:hello"),
                   0, 0, NULL, 0)); /* not hex */
    CHECK(!read_is(MSG("\xf6"
                       "0000000000000000"
                       "42:hello"),
                   0, 0, NULL, 0)); /* epoch 0 */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdef"
                       "0:hello"),
                   0, 0, NULL, 0)); /* offset 0 */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdef"
                       ":hello"),
                   0, 0, NULL, 0)); /* no offset */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdef"
                       "42hello"),
                   0, 0, NULL, 0)); /* no ':' */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdef"
                       "42"),
                   0, 0, NULL, 0)); /* cut short */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdef"
                       "18446744073709551616:"),
                   0, 0, NULL, 0)); /* over u64 */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdef"
                       "000000000000000000001:"),
                   0, 0, NULL, 0)); /* 21 digits */
    CHECK(!read_is(MSG("\xf6"
                       "0123456789abcdef"),
                   0, 0, NULL, 0));
    CHECK(!read_is(MSG("\xf6"), 0, 0, NULL, 0));
    CHECK(!read_is("", 0, 0, 0, NULL, 0));
}

static void test_sync_reply(void) {
    uint64_t epoch, last, offset;
    const redisReply *entries;
    const uint8_t *body;
    size_t len;
    redisReply *r = resp_reply_str("*3\r\n$16\r\n00000000000000aa\r\n$2\r\n12\r\n*2\r\n"
                                   "*2\r\n$4\r\n11-0\r\n*2\r\n$1\r\nm\r\n$3\r\none\r\n"
                                   "*2\r\n$4\r\n12-0\r\n*2\r\n$1\r\nm\r\n$0\r\n\r\n");
    CHECK(r != NULL);
    CHECK(sy_bus_seq_sync_reply(r, &epoch, &last, &entries));
    CHECK_EQ(epoch, 0xaa);
    CHECK_EQ(last, 12);
    CHECK_EQ(entries->elements, 2);
    CHECK(sy_bus_seq_entry(entries, 0, &offset, &body, &len) && offset == 11 && len == 3 &&
          memcmp(body, "one", 3) == 0);
    CHECK(sy_bus_seq_entry(entries, 1, &offset, &body, &len) && offset == 12 && len == 0);
    CHECK(!sy_bus_seq_entry(entries, 2, &offset, &body, &len));
    freeReplyObject(r);
    /* Redis has no sequence for the topic. */
    r = resp_reply_str("*3\r\n$0\r\n\r\n$1\r\n0\r\n*0\r\n");
    CHECK(sy_bus_seq_sync_reply(r, &epoch, &last, &entries) && epoch == 0 && last == 0);
    freeReplyObject(r);
    /* Malformed answers are refused. */
    const char *bad[] = {
        "*2\r\n$16\r\n00000000000000aa\r\n$2\r\n12\r\n",           /* two elements */
        "*3\r\n$15\r\n00000000000000a\r\n$2\r\n12\r\n*0\r\n",      /* short epoch */
        "*3\r\n$16\r\n00000000000000aa\r\n$2\r\n1x\r\n*0\r\n",     /* bad offset */
        "*3\r\n$16\r\n00000000000000aa\r\n:12\r\n*0\r\n",          /* an integer, not a string */
        "*3\r\n$16\r\n00000000000000aa\r\n$2\r\n12\r\n$0\r\n\r\n", /* entries not an array */
        "-ERR nope\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = resp_reply_str(bad[i]);
        CHECK(r == NULL || !sy_bus_seq_sync_reply(r, &epoch, &last, &entries));
        freeReplyObject(r);
    }
    /* Entries that break the form are skipped one by one. */
    r = resp_reply_str("*3\r\n$16\r\n00000000000000aa\r\n$1\r\n3\r\n*4\r\n"
                       "*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nm\r\n$1\r\nx\r\n" /* not <offset>-0 */
                       "*2\r\n$3\r\n0-0\r\n*2\r\n$1\r\nm\r\n$1\r\nx\r\n" /* offset 0 */
                       "*2\r\n$3\r\n2-0\r\n*1\r\n$1\r\nm\r\n"            /* no value */
                       "*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nm\r\n$1\r\nz\r\n");
    CHECK(sy_bus_seq_sync_reply(r, &epoch, &last, &entries));
    for (size_t i = 0; i < 3; i++)
        CHECK(!sy_bus_seq_entry(entries, i, &offset, &body, &len));
    CHECK(sy_bus_seq_entry(entries, 3, &offset, &body, &len) && offset == 3 && len == 1 && body[0] == 'z');
    freeReplyObject(r);
}

static void test_wait(void) {
    sy_bus_seq_chan_t c = {0};
    CHECK(sy_bus_seq_wait(&c, 1, 5, (const uint8_t *)"five", 4, 1024));
    CHECK(sy_bus_seq_wait(&c, 1, 6, (const uint8_t *)"", 0, 1024));
    CHECK(!sy_bus_seq_wait(&c, 1, 7, (const uint8_t *)"x", 1, c.bytes + sizeof(sy_bus_seq_msg_t))); /* over the bound */
    sy_bus_seq_msg_t *m = sy_bus_seq_take(&c);
    CHECK(c.head == NULL && c.bytes == 0);
    CHECK(m != NULL && m->offset == 5 && m->len == 4 && memcmp(m->body, "five", 4) == 0);
    CHECK(m != NULL && m->next != NULL && m->next->offset == 6 && m->next->next == NULL);
    while (m != NULL) {
        sy_bus_seq_msg_t *next = m->next;
        sy_free(m);
        m = next;
    }
    CHECK(sy_bus_seq_wait(&c, 2, 1, (const uint8_t *)"y", 1, 1024));
    sy_bus_seq_chan_clear(&c); /* frees (ASan and valgrind see a leak otherwise) */
    CHECK(c.head == NULL && c.tail == NULL && c.bytes == 0);
}

static void test_scripts(void) {
    sy_bus_script_t s;
    sy_bus_script_init(&s, "return 1");
    /* SCRIPT LOAD "return 1" answers this SHA-1. */
    CHECK(strcmp(s.sha, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db") == 0);
    CHECK(strlen(s.sha) == 40 && s.body != NULL);
    sy_bus_script_init(&s, sy_bus_seq_publish_lua);
    CHECK(strlen(s.sha) == 40);
}

int main(void) {
    if (sy_redis_alloc_init() != 0)
        return 1;
    test_keys();
    test_read();
    test_sync_reply();
    test_wait();
    test_scripts();
    return check_report("test_bus_seq");
}
