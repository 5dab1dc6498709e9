/* sy_v2: a symphony.v2 client's frames (docs/protocol.md, "Clients ask"),
 * parsed from inputs placed against a guard page (an over-read faults):
 * each kind well formed (a batch subscribe with since, token and data; an
 * unsubscribe; a publish and a request whose payload holds '\n' and
 * arbitrary bytes; an application message), and every malformed shape
 * answered with its reason and, where one could be read, the request id;
 * an unknown kind told apart from a malformed frame; the answers the IO
 * thread builds (error, refused, unsubscribed) as valid JSON with their
 * strings escaped. Leaks: LeakSanitizer (make test) and valgrind. */
#include "guard.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "proto/sy_v2.h"

static sy_v2_status_t parse_str(guard_t *g, const char *s, sy_v2_frame_t *f, const char **why) {
    const uint8_t *p = guard_place(g, s, strlen(s));
    return sy_v2_parse(p, strlen(s), f, why);
}

/* The frame's payload (after the WebSocket header) equals want. */
static bool payload_is(const sy_refbuf_t *m, const char *want) {
    return m != NULL && m->len - m->hlen == strlen(want) && memcmp(m->data + m->hlen, want, strlen(want)) == 0;
}

/* The frame's payload holds needle. */
static bool payload_has(const sy_refbuf_t *m, const char *needle) {
    size_t n = strlen(needle), len = m->len - m->hlen;
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(m->data + m->hlen + i, needle, n) == 0)
            return true;
    return false;
}

static void test_direct(void) {
    guard_t g;
    sy_v2_frame_t f;
    const char *why = NULL;
    CHECK(parse_str(&g, "d\nhello\nworld", &f, &why) == SY_V2_OK);
    CHECK(f.kind == SY_V2_DIRECT);
    CHECK(f.payload_len == 11 && memcmp(f.payload, "hello\nworld", 11) == 0);
    sy_v2_frame_free(&f);
    guard_release(&g);
    CHECK(parse_str(&g, "d\n", &f, &why) == SY_V2_OK);
    CHECK(f.payload_len == 0);
    sy_v2_frame_free(&f);
    guard_release(&g);
    CHECK(parse_str(&g, "dx\nhello", &f, &why) == SY_V2_BAD);
    guard_release(&g);
    CHECK(parse_str(&g, "d", &f, &why) == SY_V2_BAD);
    guard_release(&g);
}

static void test_subscribe(void) {
    guard_t g;
    sy_v2_frame_t f;
    const char *why = NULL;
    const char *in =
        "s{\"subs\":[{\"rid\":1,\"topic\":\"room.1\"},"
        "{\"rid\":4294967295,\"topic\":\"caf\\u00e9\",\"since\":{\"epoch\":\"3F9a0c1d2e4b5a69\",\"offset\":"
        "\"18446744073709551615\"},\"token\":\"a.b.c\",\"data\":{\"x\":[1,true,null,\"\\n\"]}}],"
        "\"resub\":true}";
    CHECK(parse_str(&g, in, &f, &why) == SY_V2_OK);
    CHECK(f.kind == SY_V2_SUBSCRIBE);
    CHECK(f.nsubs == 2);
    CHECK(f.resub);
    sy_v2_sub_t s;
    CHECK(sy_v2_sub_at(&f, 0, &s, &why) == SY_V2_OK);
    CHECK(s.rid == 1 && s.topic_len == 6 && memcmp(s.topic, "room.1", 6) == 0);
    CHECK(!s.has_since && s.token == NULL && s.data == NULL);
    CHECK(sy_v2_sub_at(&f, 1, &s, &why) == SY_V2_OK);
    CHECK(s.rid == 4294967295u);
    CHECK(s.topic_len == 5 && memcmp(s.topic, "caf\xc3\xa9", 5) == 0);
    CHECK(s.has_since && s.epoch == 0x3f9a0c1d2e4b5a69ull && s.offset == UINT64_MAX);
    CHECK(s.token_len == 5 && memcmp(s.token, "a.b.c", 5) == 0);
    CHECK(s.data != NULL && s.data_len == strlen("{\"x\":[1,true,null,\"\\n\"]}") &&
          memcmp(s.data, "{\"x\":[1,true,null,\"\\n\"]}", s.data_len) == 0);
    sy_v2_frame_free(&f);
    guard_release(&g);

    /* An offset as a JSON integer; resub absent is false. */
    CHECK(parse_str(&g,
                    "s{\"subs\":[{\"rid\":0,\"topic\":\"t\",\"since\":{\"epoch\":\"0000000000000001\",\"offset\":7}}]}",
                    &f, &why) == SY_V2_OK);
    CHECK(!f.resub);
    CHECK(sy_v2_sub_at(&f, 0, &s, &why) == SY_V2_OK && s.has_since && s.offset == 7);
    sy_v2_frame_free(&f);
    guard_release(&g);

    /* since: null is no position. */
    CHECK(parse_str(&g, "s{\"subs\":[{\"rid\":0,\"topic\":\"t\",\"since\":null}]}", &f, &why) == SY_V2_OK);
    CHECK(sy_v2_sub_at(&f, 0, &s, &why) == SY_V2_OK && !s.has_since);
    sy_v2_frame_free(&f);
    guard_release(&g);
}

/* in is malformed: SY_V2_BAD, with a reason and (has_rid, rid). */
#define BAD(in, want_rid, rid_value) bad_((in), (want_rid), (rid_value), __LINE__)
static void bad_(const char *in, bool want_rid, uint32_t rid, int line) {
    guard_t g;
    sy_v2_frame_t f;
    const char *why = NULL;
    sy_v2_status_t st = parse_str(&g, in, &f, &why);
    check_count++;
    if (st != SY_V2_BAD || why == NULL || why[0] == '\0' || f.has_rid != want_rid || (want_rid && f.rid != rid)) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s: status %d, why \"%s\", rid %d/%u\n", __FILE__, line, in, (int)st,
                why ? why : "(null)", (int)f.has_rid, (unsigned)f.rid);
    }
    CHECK(f.doc == NULL && f.texts == NULL); /* nothing held */
    guard_release(&g);
}

static void test_malformed(void) {
    BAD("", false, 0);
    BAD("s", false, 0);
    BAD("s{", false, 0);
    BAD("s[]", false, 0);
    BAD("s{\"subs\":[]}", false, 0);
    BAD("s{\"subs\":{}}", false, 0);
    BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\"}],\"resub\":1}", false, 0);
    BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\"}]}trailing", false, 0);
    BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",}]}", false, 0);     /* trailing comma */
    BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\"/*c*/}]}", false, 0); /* comment */
    BAD("s{\"subs\":[{\"rid\":NaN,\"topic\":\"t\"}]}", false, 0);
    BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\"}],\"x\":\"\\ud800\",}", false, 0); /* not UTF-8, and not JSON */
    BAD("u{\"rid\":2,\"topic\":\"\xff\"}", false, 0); /* invalid UTF-8: the whole frame, but for a subscribe */
    BAD("u{\"topic\":\"t\"}", false, 0);
    BAD("u{\"rid\":9}", true, 9);
    BAD("u{\"rid\":9,\"topic\":\"\"}", true, 9);
    BAD("u[1]", false, 0);
    BAD("p{\"rid\":3,\"topic\":\"t\"}", false, 0); /* no '\n' before the payload */
    BAD("p{\"rid\":3}\npayload", true, 3);
    BAD("p{\"topic\":\"t\"}\npayload", false, 0);
    BAD("p\npayload", false, 0);
    BAD("p{\"rid\":3,\"topic\":\"t\",\"token\":5}\nx", true, 3);
    BAD("p{\"rid\":3,\"topic\":\"t\",\"token\":\"\"}\nx", true, 3);
    BAD("r{}\nx", false, 0);
    BAD("r{\"rid\":\"1\"}\nx", false, 0);
    BAD("r{\"rid\":1}", false, 0);

    /* Topics at and over 1024 bytes. */
    char in[1200];
    char topic[1026];
    memset(topic, 'a', sizeof(topic));
    topic[1025] = '\0';
    snprintf(in, sizeof(in), "u{\"rid\":1,\"topic\":\"%s\"}", topic);
    BAD(in, true, 1);
    topic[1024] = '\0';
    guard_t g;
    sy_v2_frame_t f;
    const char *why;
    snprintf(in, sizeof(in), "u{\"rid\":1,\"topic\":\"%s\"}", topic);
    CHECK(parse_str(&g, in, &f, &why) == SY_V2_OK && f.topic_len == 1024);
    sy_v2_frame_free(&f);
    guard_release(&g);
}

/* in is a subscribe frame whose entry `at` is bad: the frame parses, the
 * entry is SY_V2_BAD with a reason, (has_rid, rid) and its topic when one
 * could be named (want_topic, or NULL); the entries before it are good. */
#define ENTRY_BAD(in, at, want_rid, rid_value, want_topic) \
    entry_bad_((in), (at), (want_rid), (rid_value), (want_topic), __LINE__)
static void entry_bad_(const char *in, size_t at, bool want_rid, uint32_t rid, const char *want_topic, int line) {
    guard_t g;
    sy_v2_frame_t f;
    const char *why = NULL;
    check_count++;
    if (parse_str(&g, in, &f, &why) != SY_V2_OK || f.nsubs <= at) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s: the frame did not parse (%s)\n", __FILE__, line, in, why ? why : "");
        sy_v2_frame_free(&f);
        guard_release(&g);
        return;
    }
    sy_v2_sub_t s;
    for (size_t i = 0; i < at; i++)
        CHECK(sy_v2_sub_at(&f, i, &s, &why) == SY_V2_OK);
    why = NULL;
    sy_v2_status_t st = sy_v2_sub_at(&f, at, &s, &why);
    bool topic_ok = want_topic == NULL ? s.topic == NULL
                                       : s.topic != NULL && s.topic_len == strlen(want_topic) &&
                                             memcmp(s.topic, want_topic, s.topic_len) == 0;
    check_count++;
    if (st != SY_V2_BAD || why == NULL || why[0] == '\0' || s.has_rid != want_rid || (want_rid && s.rid != rid) ||
        !topic_ok) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s: status %d, why \"%s\", rid %d/%u, topic %s\n", __FILE__, line, in, (int)st,
                why ? why : "(null)", (int)s.has_rid, (unsigned)s.rid, s.topic ? "set" : "none");
    }
    /* Its refusal is valid and names what could be read. */
    sy_refbuf_t *m = sy_v2_refused_entry_frame(&s, why ? why : "");
    CHECK(m != NULL && payload_has(m, "\"code\":\"bad-request\""));
    sy_refbuf_release(m);
    sy_v2_frame_free(&f);
    guard_release(&g);
}

/* One bad entry is bad alone (issue 42): the frame parses, the entry does not. */
static void test_bad_entries(void) {
    ENTRY_BAD("s{\"subs\":[1]}", 0, false, 0, NULL);
    ENTRY_BAD("s{\"subs\":[{\"topic\":\"t\"}]}", 0, false, 0, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":-1,\"topic\":\"t\"}]}", 0, false, 0, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":4294967296,\"topic\":\"t\"}]}", 0, false, 0, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":1.5,\"topic\":\"t\"}]}", 0, false, 0, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2}]}", 0, true, 2, NULL);
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"\"}]}", 0, true, 2, "");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":5}]}", 0, true, 2, NULL);
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"since\":{\"epoch\":\"123\",\"offset\":\"1\"}}]}", 0, true, 2,
              "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"since\":{\"epoch\":\"zzzzzzzzzzzzzzzz\",\"offset\":\"1\"}}]}", 0,
              true, 2, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"since\":{\"epoch\":\"0000000000000001\",\"offset\":\"-1\"}}]}",
              0, true, 2, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"since\":{\"epoch\":\"0000000000000001\",\"offset\":"
              "\"18446744073709551616\"}}]}",
              0, true, 2, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"since\":{\"epoch\":\"0000000000000001\",\"offset\":\"\"}}]}", 0,
              true, 2, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"since\":5}]}", 0, true, 2, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"token\":\"\"}]}", 0, true, 2, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\",\"token\":7}]}", 0, true, 2, "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"t\"},{\"rid\":3}]}", 1, true, 3, NULL);
    /* Strings that are not UTF-8 (raw bytes, an escaped lone surrogate):
     * that entry alone, its topic not named. */
    ENTRY_BAD("s{\"subs\":[{\"rid\":2,\"topic\":\"\xff\"}]}", 0, true, 2, NULL);
    ENTRY_BAD("s{\"subs\":[{\"rid\":1,\"topic\":\"ok\"},{\"rid\":2,\"topic\":\"a\\ud800b\"}]}", 1, true, 2, NULL);
    ENTRY_BAD("s{\"subs\":[{\"rid\":1,\"topic\":\"ok\"},{\"rid\":2,\"topic\":\"\\udc00\\ud800\"}]}", 1, true, 2, NULL);
    ENTRY_BAD("s{\"subs\":[{\"rid\":1,\"topic\":\"ok\"},{\"rid\":3,\"topic\":\"t\",\"token\":\"a\\udfff\"}]}", 1, true, 3,
              "t");
    ENTRY_BAD("s{\"subs\":[{\"rid\":1,\"topic\":\"ok\"},{\"rid\":4,\"topic\":\"t\",\"data\":{\"k\":[\"\\ud800\"]}}]}", 1, true,
              4, "t");
    {
        /* A pair is a character; an escaped backslash before "ud800" is text. */
        guard_t g;
        sy_v2_frame_t f;
        const char *why;
        sy_v2_sub_t s;
        CHECK(parse_str(&g, "s{\"subs\":[{\"rid\":1,\"topic\":\"\\ud83d\\ude00\"},{\"rid\":2,\"topic\":\"\\\\ud800\"},"
                            "{\"rid\":3,\"topic\":\"\\ud800\"}]}",
                        &f, &why) == SY_V2_OK);
        CHECK(f.nsubs == 3);
        CHECK(sy_v2_sub_at(&f, 0, &s, &why) == SY_V2_OK && s.topic_len == 4 && memcmp(s.topic, "\xf0\x9f\x98\x80", 4) == 0);
        CHECK(sy_v2_sub_at(&f, 1, &s, &why) == SY_V2_OK && s.topic_len == 6 && memcmp(s.topic, "\\ud800", 6) == 0);
        CHECK(sy_v2_sub_at(&f, 2, &s, &why) == SY_V2_BAD && s.has_rid && s.rid == 3 && s.topic == NULL);
        sy_v2_frame_free(&f);
        guard_release(&g);
    }
    /* A topic over 1,024 bytes: refused, not named. */
    char in[1200], topic[1026];
    memset(topic, 'a', sizeof(topic));
    topic[1025] = '\0';
    snprintf(in, sizeof(in), "s{\"subs\":[{\"rid\":1,\"topic\":\"ok\"},{\"rid\":7,\"topic\":\"%s\"}]}", topic);
    ENTRY_BAD(in, 1, true, 7, NULL);
}

static void test_hello(void) {
    sy_v2_limits_t l = {.max_payload = 1048576, .max_subscriptions = 1024, .max_pending = 16};
    sy_refbuf_t *m = sy_v2_hello_frame(&l);
    CHECK(payload_is(m, "c{\"type\":\"hello\",\"limits\":{\"maxPayload\":1048576,\"maxSubscriptions\":1024,"
                        "\"maxPending\":16,\"maxTopicLength\":1024,\"maxEntries\":1024}}"));
    sy_refbuf_release(m);
    /* The largest values fit. */
    l = (sy_v2_limits_t){.max_payload = UINT64_MAX, .max_subscriptions = UINT32_MAX, .max_pending = UINT32_MAX};
    char buf[SY_V2_LIMITS_JSON_MAX + 1];
    CHECK(sy_v2_limits_json(buf, sizeof(buf), &l) > 0);
    CHECK(sy_v2_limits_json(buf, 10, &l) == 0);
    m = sy_v2_hello_frame(&l);
    CHECK(m != NULL);
    sy_refbuf_release(m);
}

static void test_unknown(void) {
    guard_t g;
    sy_v2_frame_t f;
    const char *why = NULL;
    CHECK(parse_str(&g, "x{\"rid\":1}", &f, &why) == SY_V2_UNKNOWN);
    CHECK(f.doc == NULL);
    guard_release(&g);
    CHECK(parse_str(&g, "{\"type\":\"subscribe\"}", &f, &why) == SY_V2_UNKNOWN);
    guard_release(&g);
}

static void test_publish_request(void) {
    guard_t g;
    sy_v2_frame_t f;
    const char *why = NULL;
    static const char in[] = "p{\"rid\":12,\"topic\":\"chat.7\"}\n{\"text\":\"a\\nb\"}\nmore";
    CHECK(parse_str(&g, in, &f, &why) == SY_V2_OK);
    CHECK(f.kind == SY_V2_PUBLISH && f.has_rid && f.rid == 12);
    CHECK(f.topic_len == 6 && memcmp(f.topic, "chat.7", 6) == 0);
    const char *body = strchr(in, '\n') + 1;
    CHECK(f.payload_len == strlen(body) && memcmp(f.payload, body, f.payload_len) == 0);
    CHECK(f.token == NULL);
    sy_v2_frame_free(&f);
    guard_release(&g);

    /* A publish that carries a token. */
    CHECK(parse_str(&g, "p{\"rid\":13,\"topic\":\"t\",\"token\":\"a.b.c\"}\nx", &f, &why) == SY_V2_OK);
    CHECK(f.token_len == 5 && memcmp(f.token, "a.b.c", 5) == 0 && f.payload_len == 1);
    sy_v2_frame_free(&f);
    guard_release(&g);

    /* Binary payload bytes (0x00, 0xff) after the head. */
    uint8_t bin[] = {'r', '{', '"', 'r', 'i', 'd', '"', ':', '5', '}', '\n', 0x00, 0xff, 0x0a};
    const uint8_t *p = guard_place(&g, bin, sizeof(bin));
    CHECK(sy_v2_parse(p, sizeof(bin), &f, &why) == SY_V2_OK);
    CHECK(f.kind == SY_V2_REQUEST && f.rid == 5 && f.payload_len == 3 && f.payload[1] == 0xff);
    sy_v2_frame_free(&f);
    guard_release(&g);

    /* An empty payload. */
    CHECK(parse_str(&g, "r{\"rid\":6}\n", &f, &why) == SY_V2_OK);
    CHECK(f.payload_len == 0);
    sy_v2_frame_free(&f);
    guard_release(&g);
}

static void test_answers(void) {
    sy_refbuf_t *m = sy_v2_error_frame(true, 7, "bad-request", "the head is not valid JSON");
    CHECK(payload_is(
        m, "c{\"type\":\"error\",\"rid\":7,\"code\":\"bad-request\",\"reason\":\"the head is not valid JSON\"}"));
    CHECK(m != NULL && m->data[0] == 0x81); /* a final text frame */
    sy_refbuf_release(m);
    m = sy_v2_error_frame(false, 0, "unknown-kind", "say \"what\"\n");
    CHECK(payload_is(
        m, "c{\"type\":\"error\",\"rid\":null,\"code\":\"unknown-kind\",\"reason\":\"say \\\"what\\\"\\u000a\"}"));
    sy_refbuf_release(m);
    m = sy_v2_refused_frame(3, "a\\b", 3, "too-many-subscriptions", "max");
    CHECK(payload_is(m, "c{\"type\":\"refused\",\"rid\":3,\"topic\":\"a\\\\b\",\"code\":\"too-many-subscriptions\","
                        "\"reason\":\"max\"}"));
    sy_refbuf_release(m);
    m = sy_v2_unsubscribed_frame(4, "t", 1);
    CHECK(payload_is(m, "c{\"type\":\"unsubscribed\",\"rid\":4,\"topic\":\"t\"}"));
    sy_refbuf_release(m);
    char big[SY_V2_TOPIC_MAX + 2];
    memset(big, 'x', sizeof(big));
    CHECK(sy_v2_refused_frame(1, big, sizeof(big), "c", "r") == NULL);
}

int main(void) {
    test_direct();
    test_subscribe();
    test_malformed();
    test_bad_entries();
    test_hello();
    test_unknown();
    test_publish_request();
    test_answers();
    return check_report("test_v2");
}
