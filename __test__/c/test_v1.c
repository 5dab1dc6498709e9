/* sy_v1: the frames of the symphony.v1 subprotocol (docs/protocol.md), byte
 * for byte: a publish's header with and without offset (at its longest
 * too), text and binary, a payload holding '\n', the WebSocket length forms
 * at their edges (125/126 and 65535/65536 payload bytes), a direct
 * message, the subscribed/unsubscribed notices (valid JSON: a small
 * validator here; '"', '\\', control characters escaped, invalid UTF-8 as
 * \ufffd) and every reason's name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto/sy_utf8.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_frame.h"

/* m is one unmasked final frame of opcode whose payload is exactly
 * want[0..wlen), with the shortest length form. */
#define CHECK_FRAME(m, opcode, want, wlen) check_frame_((m), (opcode), (want), (wlen), __LINE__)
static void check_frame_(const sy_refbuf_t *m, unsigned opcode, const void *want, size_t wlen, int line) {
    check_count++;
    if (m == NULL) {
        check_failures++;
        fprintf(stderr, "%s:%d: no frame\n", __FILE__, line);
        return;
    }
    size_t hlen = wlen < 126 ? 2 : wlen <= 0xffff ? 4 : 10;
    uint8_t h[10] = {(uint8_t)(0x80 | opcode)};
    if (hlen == 2) {
        h[1] = (uint8_t)wlen;
    } else if (hlen == 4) {
        h[1] = 126;
        h[2] = (uint8_t)(wlen >> 8);
        h[3] = (uint8_t)wlen;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)((uint64_t)wlen >> (56 - 8 * i));
    }
    const char *why = NULL;
    if (m->hlen != hlen)
        why = "header length";
    else if (m->len != hlen + wlen)
        why = "length";
    else if (memcmp(m->data, h, hlen) != 0)
        why = "header bytes";
    else if (wlen > 0 && memcmp(m->data + hlen, want, wlen) != 0)
        why = "payload bytes";
    if (why != NULL) {
        check_failures++;
        fprintf(stderr, "%s:%d: frame's %s differ: got %zu+%zu bytes \"%.*s\", want %zu+%zu \"%.*s\"\n", __FILE__, line,
                why, (size_t)m->hlen, m->len - m->hlen, (int)(m->len - m->hlen < 100 ? m->len - m->hlen : 100),
                (const char *)m->data + m->hlen, hlen, wlen, (int)(wlen < 100 ? wlen : 100), (const char *)want);
    }
}

static void test_reasons(void) {
    CHECK(strcmp(sy_v1_reason_name(SY_V1_RECOVERED), "") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_EPOCH), "epoch") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_TRIMMED), "trimmed") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_FUTURE), "future") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_TOO_LARGE), "too-large") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_NO_HISTORY), "no-history") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_MEMORY), "memory") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_NOT_V1), "not-symphony.v1") == 0);
    CHECK(strcmp(sy_v1_reason_name(SY_V1_REASONS), "unknown") == 0);
    CHECK(strcmp(sy_v1_reason_name((sy_v1_reason_t)-1), "unknown") == 0);
    /* Every reason but RECOVERED has a name of its own. */
    for (int i = 1; i < SY_V1_REASONS; i++) {
        CHECK(sy_v1_reason_name((sy_v1_reason_t)i)[0] != '\0');
        for (int j = 1; j < i; j++)
            CHECK(strcmp(sy_v1_reason_name((sy_v1_reason_t)i), sy_v1_reason_name((sy_v1_reason_t)j)) != 0);
    }
}

static void test_header(void) {
    char h[SY_V1_HEADER_MAX + 8];
    memset(h, '#', sizeof(h));
    size_t n = sy_v1_publish_header(h, 7, true, 1043);
    CHECK_MEMSTR(h, n, "p7,1043\n");
    n = sy_v1_publish_header(h, 7, false, 1043);
    CHECK_MEMSTR(h, n, "p7\n");
    n = sy_v1_publish_header(h, 0, true, 0);
    CHECK_MEMSTR(h, n, "p0,0\n");
    n = sy_v1_publish_header(h, 10, true, 10000000000000000000u);
    CHECK_MEMSTR(h, n, "p10,10000000000000000000\n");
    /* The longest: exactly SY_V1_HEADER_MAX bytes, and none written past. */
    memset(h, '#', sizeof(h));
    n = sy_v1_publish_header(h, UINT32_MAX, true, UINT64_MAX);
    CHECK_EQU(n, SY_V1_HEADER_MAX);
    CHECK_MEMSTR(h, n, "p4294967295,18446744073709551615\n");
    for (size_t i = SY_V1_HEADER_MAX; i < sizeof(h); i++)
        CHECK_EQ(h[i], '#');
    n = sy_v1_publish_header(h, UINT32_MAX, false, 0);
    CHECK_MEMSTR(h, n, "p4294967295\n");
}

static void test_publish(void) {
    sy_refbuf_t *m = sy_v1_publish_frame(SY_WS_OP_TEXT, 7, true, 1043, "{\"bid\":101.5}", 13, true);
    CHECK_FRAME(m, SY_WS_OP_TEXT, "p7,1043\n{\"bid\":101.5}", 21);
    CHECK(m != NULL && atomic_load(&m->refs) == 1);
    CHECK(m != NULL && atomic_load(&m->deflate) == SY_REFBUF_Z_TODO);
    sy_refbuf_release(m);
    /* Binary, without offset, not compressible, a payload with '\n' and NUL. */
    m = sy_v1_publish_frame(SY_WS_OP_BINARY, 12, false, 99, "a\nb\0c\n", 6, false);
    CHECK_FRAME(m, SY_WS_OP_BINARY, "p12\na\nb\0c\n", 10);
    CHECK(m != NULL && atomic_load(&m->deflate) == SY_REFBUF_Z_NONE);
    sy_refbuf_release(m);
    /* An empty payload (and a NULL pointer for it). */
    m = sy_v1_publish_frame(SY_WS_OP_TEXT, 1, true, 1, NULL, 0, false);
    CHECK_FRAME(m, SY_WS_OP_TEXT, "p1,1\n", 5);
    sy_refbuf_release(m);
    m = sy_v1_publish_frame(SY_WS_OP_BINARY, 1, false, 0, "", 0, false);
    CHECK_FRAME(m, SY_WS_OP_BINARY, "p1\n", 3);
    sy_refbuf_release(m);
    /* The longest header. */
    m = sy_v1_publish_frame(SY_WS_OP_TEXT, UINT32_MAX, true, UINT64_MAX, "x", 1, false);
    CHECK_FRAME(m, SY_WS_OP_TEXT, "p4294967295,18446744073709551615\nx", 34);
    sy_refbuf_release(m);

    /* The length forms at their edges: "p3,9\n" is 5 bytes. */
    static const size_t totals[] = {125, 126, 127, 65535, 65536, 65537, 200000};
    size_t max = 200000 + 8;
    char *want = malloc(max);
    CHECK(want != NULL);
    if (want == NULL)
        return;
    for (size_t i = 0; i < max; i++)
        want[i] = (char)('a' + i % 26);
    memcpy(want, "p3,9\n", 5);
    for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++) {
        m = sy_v1_publish_frame(SY_WS_OP_BINARY, 3, true, 9, want + 5, totals[k] - 5, false);
        CHECK_FRAME(m, SY_WS_OP_BINARY, want, totals[k]);
        sy_refbuf_release(m);
    }
    /* And the direct frame at the same edges ("d\n": 2 bytes). */
    memcpy(want + 3, "d\n", 2);
    for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++) {
        m = sy_v1_direct_frame(SY_WS_OP_TEXT, want + 5, totals[k] - 2, true);
        CHECK_FRAME(m, SY_WS_OP_TEXT, want + 3, totals[k]);
        sy_refbuf_release(m);
    }
    free(want);
}

static void test_direct(void) {
    sy_refbuf_t *m = sy_v1_direct_frame(SY_WS_OP_TEXT, "hello\nworld", 11, true);
    CHECK_FRAME(m, SY_WS_OP_TEXT, "d\nhello\nworld", 13);
    CHECK(m != NULL && atomic_load(&m->deflate) == SY_REFBUF_Z_TODO);
    sy_refbuf_release(m);
    m = sy_v1_direct_frame(SY_WS_OP_BINARY, NULL, 0, false);
    CHECK_FRAME(m, SY_WS_OP_BINARY, "d\n", 2);
    CHECK(m != NULL && atomic_load(&m->deflate) == SY_REFBUF_Z_NONE);
    sy_refbuf_release(m);
}

/* A small JSON validator (RFC 8259): value at *p, true when well formed. */
typedef struct json {
    const char *s;
    size_t n, i;
} json_t;

static void ws(json_t *j) {
    while (j->i < j->n && strchr(" \t\r\n", j->s[j->i]) != NULL && j->s[j->i] != '\0')
        j->i++;
}

static bool lit(json_t *j, const char *w) {
    size_t l = strlen(w);
    if (j->n - j->i < l || memcmp(j->s + j->i, w, l) != 0)
        return false;
    j->i += l;
    return true;
}

static bool jstring(json_t *j) {
    if (j->i >= j->n || j->s[j->i] != '"')
        return false;
    j->i++;
    while (j->i < j->n) {
        unsigned char c = (unsigned char)j->s[j->i++];
        if (c == '"')
            return true;
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (j->i >= j->n)
                return false;
            c = (unsigned char)j->s[j->i++];
            if (c == 'u') {
                for (int k = 0; k < 4; k++, j->i++)
                    if (j->i >= j->n || strchr("0123456789abcdefABCDEF", j->s[j->i]) == NULL || j->s[j->i] == '\0')
                        return false;
            } else if (strchr("\"\\/bfnrt", c) == NULL || c == '\0') {
                return false;
            }
        }
    }
    return false;
}

static bool jvalue(json_t *j);

static bool jnumber(json_t *j) {
    size_t start = j->i;
    if (j->i < j->n && j->s[j->i] == '-')
        j->i++;
    if (j->i >= j->n || j->s[j->i] < '0' || j->s[j->i] > '9')
        return false;
    if (j->s[j->i] == '0')
        j->i++;
    else
        while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9')
            j->i++;
    return j->i > start;
}

static bool jobject(json_t *j) {
    j->i++; /* '{' */
    ws(j);
    if (j->i < j->n && j->s[j->i] == '}') {
        j->i++;
        return true;
    }
    for (;;) {
        ws(j);
        if (!jstring(j))
            return false;
        ws(j);
        if (j->i >= j->n || j->s[j->i++] != ':')
            return false;
        if (!jvalue(j))
            return false;
        ws(j);
        if (j->i >= j->n)
            return false;
        char c = j->s[j->i++];
        if (c == '}')
            return true;
        if (c != ',')
            return false;
    }
}

static bool jvalue(json_t *j) {
    ws(j);
    if (j->i >= j->n)
        return false;
    char c = j->s[j->i];
    if (c == '{')
        return jobject(j);
    if (c == '"')
        return jstring(j);
    if (c == 't')
        return lit(j, "true");
    if (c == 'f')
        return lit(j, "false");
    if (c == 'n')
        return lit(j, "null");
    return jnumber(j);
}

static bool json_valid(const char *s, size_t n) {
    json_t j = {s, n, 0};
    if (!sy_utf8_is_valid((const uint8_t *)s, n))
        return false;
    if (!jvalue(&j))
        return false;
    ws(&j);
    return j.i == n;
}

/* m is a text frame "c" + want, and want is valid JSON. */
#define CHECK_NOTICE(m, want) check_notice_((m), (want), __LINE__)
static void check_notice_(sy_refbuf_t *m, const char *want, int line) {
    size_t n = strlen(want);
    char *w = malloc(n + 1);
    if (w == NULL)
        return;
    w[0] = 'c';
    memcpy(w + 1, want, n);
    check_frame_(m, SY_WS_OP_TEXT, w, n + 1, line);
    free(w);
    check_count++;
    if (!json_valid(want, n)) {
        check_failures++;
        fprintf(stderr, "%s:%d: not valid JSON: %s\n", __FILE__, line, want);
    }
    if (m != NULL) {
        CHECK(atomic_load(&m->deflate) == SY_REFBUF_Z_NONE);
        CHECK(atomic_load(&m->refs) == 1);
    }
    sy_refbuf_release(m);
}

static void test_json_validator(void) {
    /* The validator itself refuses what it must. */
    CHECK(json_valid("{\"a\":\"b\",\"c\":1,\"d\":true}", strlen("{\"a\":\"b\",\"c\":1,\"d\":true}")));
    CHECK(!json_valid("{\"a\":\"b\x01\"}", strlen("{\"a\":\"b\x01\"}")));
    CHECK(!json_valid("{\"a\":\"b\\x\"}", strlen("{\"a\":\"b\\x\"}")));
    CHECK(!json_valid("{\"a\":\"b\"", strlen("{\"a\":\"b\"")));
    CHECK(!json_valid("{\"a\":\"\xff\"}", strlen("{\"a\":\"\xff\"}")));
    CHECK(!json_valid("{\"a\":\"\"\"}", strlen("{\"a\":\"\"\"}")));
}

static void test_subscribed(void) {
    sy_v1_subscribed_t n = {.topic = "prices.eu", .topic_len = 9, .id = 7};
    CHECK_NOTICE(sy_v1_subscribed_frame(&n), "{\"type\":\"subscribed\",\"topic\":\"prices.eu\",\"id\":7}");
    n.history = true;
    n.epoch = 0x3f9a0c1d2e4b5a69ull;
    n.offset = 1042;
    CHECK_NOTICE(sy_v1_subscribed_frame(&n), "{\"type\":\"subscribed\",\"topic\":\"prices.eu\",\"id\":7,\"epoch\":"
                                             "\"3f9a0c1d2e4b5a69\",\"offset\":\"1042\"}");
    /* The example of docs/protocol.md. */
    n.resumed = true;
    n.since = 1000;
    n.reason = SY_V1_RECOVERED;
    CHECK_NOTICE(sy_v1_subscribed_frame(&n),
                 "{\"type\":\"subscribed\",\"topic\":\"prices.eu\",\"id\":7,\"epoch\":\"3f9a0c1d2e4b5a69\",\"offset\":"
                 "\"1042\",\"since\":\"1000\",\"recovered\":true}");
    /* Every reason. */
    for (int r = 1; r < SY_V1_REASONS; r++) {
        n.reason = (sy_v1_reason_t)r;
        char want[512];
        snprintf(want, sizeof(want),
                 "{\"type\":\"subscribed\",\"topic\":\"prices.eu\",\"id\":7,\"epoch\":\"3f9a0c1d2e4b5a69\",\"offset\":"
                 "\"1042\",\"since\":\"1000\",\"recovered\":false,\"reason\":\"%s\"}",
                 sy_v1_reason_name(n.reason));
        CHECK_NOTICE(sy_v1_subscribed_frame(&n), want);
    }
    /* Resumed on a topic without history (no-history), the widest numbers:
     * the epoch with its leading zeros. */
    n = (sy_v1_subscribed_t){.topic = "t",
                             .topic_len = 1,
                             .id = UINT32_MAX,
                             .history = true,
                             .epoch = 0xabc,
                             .offset = UINT64_MAX,
                             .resumed = true,
                             .since = UINT64_MAX,
                             .reason = SY_V1_FUTURE};
    CHECK_NOTICE(sy_v1_subscribed_frame(&n),
                 "{\"type\":\"subscribed\",\"topic\":\"t\",\"id\":4294967295,\"epoch\":\"0000000000000abc\",\"offset\":"
                 "\"18446744073709551615\",\"since\":\"18446744073709551615\",\"recovered\":false,\"reason\":"
                 "\"future\"}");
    n = (sy_v1_subscribed_t){
        .topic = "t", .topic_len = 1, .id = 1, .resumed = true, .since = 5, .reason = SY_V1_NO_HISTORY};
    CHECK_NOTICE(sy_v1_subscribed_frame(&n), "{\"type\":\"subscribed\",\"topic\":\"t\",\"id\":1,\"since\":\"5\","
                                             "\"recovered\":false,\"reason\":\"no-history\"}");
}

static void test_escapes(void) {
    /* '"', '\\', control characters (NUL, \n, \x1f), DEL and '/' as they are. */
    const char t[] = "a\"b\\c\nd\x01\x1f\x7f/\0e";
    sy_v1_subscribed_t n = {.topic = t, .topic_len = sizeof(t) - 1, .id = 2};
    CHECK_NOTICE(sy_v1_subscribed_frame(&n),
                 "{\"type\":\"subscribed\",\"topic\":\"a\\\"b\\\\c\\u000ad\\u0001\\u001f\x7f/\\u0000e\",\"id\":2}");
    CHECK_NOTICE(sy_v1_unsubscribed_frame(t, sizeof(t) - 1, 2),
                 "{\"type\":\"unsubscribed\",\"topic\":\"a\\\"b\\\\c\\u000ad\\u0001\\u001f\x7f/\\u0000e\",\"id\":2}");
    /* Valid UTF-8 goes as it is. */
    CHECK_NOTICE(sy_v1_unsubscribed_frame("\xc3\xa9t\xf0\x9f\x8e\xb5", 7, 3),
                 "{\"type\":\"unsubscribed\",\"topic\":\"\xc3\xa9t\xf0\x9f\x8e\xb5\",\"id\":3}");
    /* Invalid UTF-8: its bytes become \ufffd. */
    CHECK_NOTICE(sy_v1_unsubscribed_frame("a\xff"
                                          "b\x80",
                                          4, 4),
                 "{\"type\":\"unsubscribed\",\"topic\":\"a\\ufffdb\\ufffd\",\"id\":4}");
    n = (sy_v1_subscribed_t){.topic = "\xc3", .topic_len = 1, .id = 5};
    CHECK_NOTICE(sy_v1_subscribed_frame(&n), "{\"type\":\"subscribed\",\"topic\":\"\\ufffd\",\"id\":5}");
    /* A mixed string is still valid JSON and valid UTF-8, whatever becomes
     * of its valid part. */
    sy_refbuf_t *m = sy_v1_unsubscribed_frame("\xc3\xa9\xff\"", 4, 6);
    CHECK(m != NULL);
    if (m != NULL) {
        CHECK(json_valid((const char *)sy_refbuf_payload(m) + 1, sy_refbuf_payload_len(m) - 1));
        sy_refbuf_release(m);
    }
    /* The empty topic (the builders do not judge names). */
    CHECK_NOTICE(sy_v1_unsubscribed_frame("", 0, 0), "{\"type\":\"unsubscribed\",\"topic\":\"\",\"id\":0}");
}

static void test_long_topics(void) {
    /* 1024 bytes, every one escaped at its widest (\u0001): the notices
     * still fit; the frame is in the 126 form. */
    char t[1025];
    memset(t, 1, sizeof(t));
    sy_v1_subscribed_t n = {.topic = t,
                            .topic_len = 1024,
                            .id = UINT32_MAX,
                            .history = true,
                            .epoch = UINT64_MAX,
                            .offset = UINT64_MAX,
                            .resumed = true,
                            .since = UINT64_MAX,
                            .reason = SY_V1_NOT_V1};
    sy_refbuf_t *m = sy_v1_subscribed_frame(&n);
    CHECK(m != NULL);
    if (m != NULL) {
        const char *p = (const char *)sy_refbuf_payload(m);
        size_t len = sy_refbuf_payload_len(m);
        CHECK(len > 6 * 1024);
        CHECK_EQ(m->hlen, 4);
        CHECK(p[0] == 'c');
        CHECK(json_valid(p + 1, len - 1));
        const char *tail = "\",\"id\":4294967295,\"epoch\":\"ffffffffffffffff\",\"offset\":\"18446744073709551615\","
                           "\"since\":\"18446744073709551615\",\"recovered\":false,\"reason\":\"not-symphony.v1\"}";
        CHECK(len > strlen(tail) && memcmp(p + len - strlen(tail), tail, strlen(tail)) == 0);
        sy_refbuf_release(m);
    }
    m = sy_v1_unsubscribed_frame(t, 1024, UINT32_MAX);
    CHECK(m != NULL);
    if (m != NULL) {
        CHECK(json_valid((const char *)sy_refbuf_payload(m) + 1, sy_refbuf_payload_len(m) - 1));
        sy_refbuf_release(m);
    }
    /* Over a topic's longest: none. */
    n.topic_len = 1025;
    CHECK(sy_v1_subscribed_frame(&n) == NULL);
    CHECK(sy_v1_unsubscribed_frame(t, 1025, 1) == NULL);
}

int main(void) {
    test_reasons();
    test_header();
    test_publish();
    test_direct();
    test_json_validator();
    test_subscribed();
    test_escapes();
    test_long_topics();
    return check_report("v1");
}
