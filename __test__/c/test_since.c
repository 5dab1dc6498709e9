/* sy_since: the resume positions of an upgrade URL (docs/protocol.md,
 * "Saying where you were"). Well-formed targets (several entries,
 * percent-encoding and '+' as a space, a topic with ':', either case of
 * hex, the offset's extremes, other parameters left alone, the fragment
 * ignored, no query at all), every error sentence of sy_since_check at its
 * edge, and sy_since_next / sy_since_find over the same targets. Targets
 * are copied to the heap at their exact length: ASan sees a read past
 * the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto/sy_since.h"

#define E_EPOCH "sy.since: the epoch must be 16 hexadecimal characters, then ':'"
#define E_OFFSET "sy.since: the offset must be 1 to 20 decimal digits, then ':'"
#define E_OVER "sy.since: the offset is over 18446744073709551615"
#define E_EMPTY "sy.since: the topic is empty"
#define E_LONG_TOPIC "sy.since: the topic is over 1024 bytes"
#define E_UTF8 "sy.since: the topic is not valid UTF-8"
#define E_ESCAPE "sy.since: a bad %-escape"
#define E_LONG_VALUE "sy.since: a value is too long"
#define E_TWICE "sy.since: a topic is given twice"
#define E_MANY "sy.since: more than 1024 positions"

#define EP "0123456789abcdef" /* an epoch */

/* target[0..len) on the heap, nothing after it. */
static char *dup_n(const char *s, size_t len) {
    char *p = malloc(len ? len : 1);
    if (p != NULL && len > 0)
        memcpy(p, s, len);
    return p;
}

static const char *check_n(const char *s, size_t len) {
    char *p = dup_n(s, len);
    const char *why = p != NULL ? sy_since_check(p, len) : "malloc";
    free(p);
    return why;
}

/* sy_since_check(s) is NULL (want == NULL) or the sentence want. */
#define EXPECT_CHECK(s, want) expect_check_((s), strlen(s), (want), __LINE__)
static void expect_check_(const char *s, size_t len, const char *want, int line) {
    const char *got = check_n(s, len);
    check_count++;
    if (want == NULL ? got != NULL : got == NULL || strcmp(got, want) != 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: sy_since_check(\"%.*s\") is \"%s\", not \"%s\"\n", __FILE__, line,
                (int)(len < 120 ? len : 120), s, got ? got : "(NULL)", want ? want : "(NULL)");
    }
}

/* Every entry of s by sy_since_next (at most max), into out; their count. */
typedef struct entry {
    uint64_t epoch, offset;
    size_t topic_len;
    char topic[SY_SINCE_TOPIC_MAX];
} entry_t;

static size_t walk(const char *s, size_t len, entry_t *out, size_t max) {
    char *p = dup_n(s, len);
    if (p == NULL)
        return 0;
    sy_since_iter_t it = {0};
    sy_since_t e;
    char buf[SY_SINCE_TOPIC_MAX];
    size_t n = 0;
    while (sy_since_next(p, len, &it, &e, buf)) {
        CHECK(e.topic == buf);
        if (n < max) {
            out[n].epoch = e.epoch;
            out[n].offset = e.offset;
            out[n].topic_len = e.topic_len;
            memcpy(out[n].topic, e.topic, e.topic_len);
        }
        n++;
    }
    /* At the end it stays at the end. */
    CHECK(!sy_since_next(p, len, &it, &e, buf));
    free(p);
    return n;
}

/* sy_since_find(s, topic): found with (epoch, offset), or not (found false). */
static bool find(const char *s, const char *topic, size_t topic_len, uint64_t *epoch, uint64_t *offset) {
    char *p = dup_n(s, strlen(s));
    char *t = dup_n(topic, topic_len);
    char buf[SY_SINCE_TOPIC_MAX];
    sy_since_t e = {0};
    bool found = p != NULL && t != NULL && sy_since_find(p, strlen(s), t, topic_len, &e, buf);
    if (found) {
        CHECK(e.topic == buf);
        CHECK_EQU(e.topic_len, topic_len);
        CHECK(memcmp(e.topic, topic, topic_len) == 0);
        *epoch = e.epoch;
        *offset = e.offset;
    }
    free(p);
    free(t);
    return found;
}

static void test_valid(void) {
    entry_t e[8];
    /* The example of docs/protocol.md, and a second entry. */
    const char *a = "/feed?sy.since=3f9a0c1d2e4b5a69%3A1042%3Aprices.eu&sy.since=" EP ":7:b";
    EXPECT_CHECK(a, NULL);
    size_t n = walk(a, strlen(a), e, 8);
    CHECK_EQU(n, 2);
    CHECK_EQU(e[0].epoch, 0x3f9a0c1d2e4b5a69ull);
    CHECK_EQU(e[0].offset, 1042);
    CHECK_MEMSTR(e[0].topic, e[0].topic_len, "prices.eu");
    CHECK_EQU(e[1].epoch, 0x0123456789abcdefull);
    CHECK_EQU(e[1].offset, 7);
    CHECK_MEMSTR(e[1].topic, e[1].topic_len, "b");

    /* Percent-encoding (either case of hex digit in an escape), '+' as a
     * space, a literal space-free '%2B' as '+', a topic with ':' in it. */
    const char *b = "/?sy.since=" EP "%3a1%3Aa+b%2Bc%2fd:e::f";
    EXPECT_CHECK(b, NULL);
    n = walk(b, strlen(b), e, 8);
    CHECK_EQU(n, 1);
    CHECK_MEMSTR(e[0].topic, e[0].topic_len, "a b+c/d:e::f");
    CHECK_EQU(e[0].offset, 1);

    /* Upper and lower case hex epochs, encoded or not. */
    const char *c = "/?sy.since=ABCDEF0123456789:0:x&sy.since=%41bcdef0123456789:0:y&sy.since=ffffffffffffffff:0:z";
    EXPECT_CHECK(c, NULL);
    n = walk(c, strlen(c), e, 8);
    CHECK_EQU(n, 3);
    CHECK_EQU(e[0].epoch, 0xabcdef0123456789ull);
    CHECK_EQU(e[1].epoch, 0xabcdef0123456789ull);
    CHECK_EQU(e[2].epoch, UINT64_MAX);

    /* The offset's extremes, and a u64 epoch of zero. */
    const char *d = "/x?sy.since=0000000000000000:0:lo&sy.since=" EP ":18446744073709551615:hi";
    EXPECT_CHECK(d, NULL);
    n = walk(d, strlen(d), e, 8);
    CHECK_EQU(n, 2);
    CHECK_EQU(e[0].epoch, 0);
    CHECK_EQU(e[0].offset, 0);
    CHECK_EQU(e[1].offset, UINT64_MAX);

    /* Other parameters are the application's: even malformed ones, ones
     * whose name only starts or ends like ours, empty segments. */
    const char *f =
        "/p?a=1&&sy.sincex=zz&xsy.since=zz&sy.since=" EP ":5:t&b=%zz&sy.since" EP "&=&sy.since=" EP ":6:u&c";
    EXPECT_CHECK(f, NULL);
    n = walk(f, strlen(f), e, 8);
    CHECK_EQU(n, 2);
    CHECK_MEMSTR(e[0].topic, e[0].topic_len, "t");
    CHECK_MEMSTR(e[1].topic, e[1].topic_len, "u");

    /* The parameter's name itself may be encoded. */
    const char *g = "/?sy%2Esince=" EP ":9:enc";
    EXPECT_CHECK(g, NULL);
    CHECK_EQU(walk(g, strlen(g), e, 8), 1);

    /* After '#', nothing counts (even a malformed position). */
    const char *h = "/?sy.since=" EP ":1:a#sy.since=bad&sy.since=" EP ":2:a";
    EXPECT_CHECK(h, NULL);
    CHECK_EQU(walk(h, strlen(h), e, 8), 1);
    const char *h2 = "/#?sy.since=bad";
    EXPECT_CHECK(h2, NULL);
    CHECK_EQU(walk(h2, strlen(h2), e, 8), 0);
    /* A '#' before the '?': the '?' is in the fragment, there is no query. */
    const char *h3 = "/a#b?sy.since=bad";
    EXPECT_CHECK(h3, NULL);
    CHECK_EQU(walk(h3, strlen(h3), e, 8), 0);

    /* No query, an empty one, no target at all. */
    EXPECT_CHECK("/feed", NULL);
    EXPECT_CHECK("/feed?", NULL);
    EXPECT_CHECK("", NULL);
    CHECK_EQU(walk("/feed", 5, e, 8), 0);
    CHECK_EQU(walk("/feed?", 6, e, 8), 0);
    CHECK_EQU(walk("", 0, e, 8), 0);
    /* Only the first '?' starts the query: a later one is data. */
    const char *q = "/?a=?&sy.since=" EP ":1:q?r";
    EXPECT_CHECK(q, NULL);
    n = walk(q, strlen(q), e, 8);
    CHECK_EQU(n, 1);
    CHECK_MEMSTR(e[0].topic, e[0].topic_len, "q?r");

    /* A UTF-8 topic, encoded, and the 1024-byte topic. */
    const char *u = "/?sy.since=" EP ":3:%C3%A9t%C3%A9";
    EXPECT_CHECK(u, NULL);
    n = walk(u, strlen(u), e, 8);
    CHECK_EQU(n, 1);
    CHECK_MEMSTR(e[0].topic, e[0].topic_len, "\xc3\xa9t\xc3\xa9");
    char big[64 + SY_SINCE_TOPIC_MAX];
    int o = snprintf(big, sizeof(big), "/?sy.since=" EP ":1:");
    memset(big + o, 'x', SY_SINCE_TOPIC_MAX);
    size_t blen = (size_t)o + SY_SINCE_TOPIC_MAX;
    expect_check_(big, blen, NULL, __LINE__);
    n = walk(big, blen, e, 8);
    CHECK_EQU(n, 1);
    CHECK_EQU(e[0].topic_len, SY_SINCE_TOPIC_MAX);
}

static void test_errors(void) {
    /* The epoch: length, digits, its ':'. */
    EXPECT_CHECK("/?sy.since=", E_EPOCH);
    EXPECT_CHECK("/?sy.since", E_EPOCH);
    EXPECT_CHECK("/?sy.since=0123456789abcde:1:t", E_EPOCH);   /* 15 */
    EXPECT_CHECK("/?sy.since=0123456789abcdef0:1:t", E_EPOCH); /* 17 */
    EXPECT_CHECK("/?sy.since=0123456789abcdeg:1:t", E_EPOCH);
    EXPECT_CHECK("/?sy.since=0123456789abcde :1:t", E_EPOCH);
    EXPECT_CHECK("/?sy.since=" EP, E_EPOCH);
    EXPECT_CHECK("/?sy.since=-123456789abcdef:1:t", E_EPOCH);
    EXPECT_CHECK("/?sy.since=0x23456789abcdef:1:t", E_EPOCH);
    /* The offset: empty, not digits, no ':' after it, over u64. */
    EXPECT_CHECK("/?sy.since=" EP "::t", E_OFFSET);
    EXPECT_CHECK("/?sy.since=" EP ":", E_OFFSET);
    EXPECT_CHECK("/?sy.since=" EP ":12", E_OFFSET);
    EXPECT_CHECK("/?sy.since=" EP ":1a:t", E_OFFSET);
    EXPECT_CHECK("/?sy.since=" EP ":-1:t", E_OFFSET);
    EXPECT_CHECK("/?sy.since=" EP ":+1:t", E_OFFSET); /* '+' is a space */
    EXPECT_CHECK("/?sy.since=" EP ": 1:t", E_OFFSET);
    EXPECT_CHECK("/?sy.since=" EP ":18446744073709551616:t", E_OVER);
    EXPECT_CHECK("/?sy.since=" EP ":18446744073709551620:t", E_OVER);
    EXPECT_CHECK("/?sy.since=" EP ":99999999999999999999:t", E_OVER);
    EXPECT_CHECK("/?sy.since=" EP ":184467440737095516150:t", E_OFFSET); /* 21 digits */
    EXPECT_CHECK("/?sy.since=" EP ":000000000000000000001:t", E_OFFSET); /* 21, even if only zeros lead */
    EXPECT_CHECK("/?sy.since=" EP ":00000000000000000001:t", NULL);      /* 20 */
    /* The topic: empty, over 1024 bytes, not UTF-8 (raw or encoded). */
    EXPECT_CHECK("/?sy.since=" EP ":1:", E_EMPTY);
    EXPECT_CHECK("/?sy.since=" EP ":1%3A", E_EMPTY);
    EXPECT_CHECK("/?sy.since=" EP ":1:%FF", E_UTF8);
    EXPECT_CHECK("/?sy.since=" EP ":1:a%C3", E_UTF8);
    EXPECT_CHECK("/?sy.since=" EP ":1:%ED%A0%80", E_UTF8); /* a surrogate */
    EXPECT_CHECK("/?sy.since=" EP ":1:%C0%80", E_UTF8);    /* overlong */
    EXPECT_CHECK("/?sy.since=" EP ":1:\xff", E_UTF8);
    char big[64 + 2 * SY_SINCE_TOPIC_MAX];
    int o = snprintf(big, sizeof(big), "/?sy.since=" EP ":1:");
    memset(big + o, 'x', SY_SINCE_TOPIC_MAX + 1);
    expect_check_(big, (size_t)o + SY_SINCE_TOPIC_MAX + 1, E_LONG_TOPIC, __LINE__);
    /* Past what any well-formed value can be: too long. */
    memset(big + o, 'x', 2 * SY_SINCE_TOPIC_MAX);
    expect_check_(big, (size_t)o + 2 * SY_SINCE_TOPIC_MAX, E_LONG_VALUE, __LINE__);
    /* Bad escapes: not hex, cut short, at the end. */
    EXPECT_CHECK("/?sy.since=" EP ":1:a%zz", E_ESCAPE);
    EXPECT_CHECK("/?sy.since=" EP ":1:a%4", E_ESCAPE);
    EXPECT_CHECK("/?sy.since=" EP ":1:a%", E_ESCAPE);
    EXPECT_CHECK("/?sy.since=" EP ":1:a%4&x=1", E_ESCAPE);
    EXPECT_CHECK("/?sy.since=%g" EP ":1:a", E_ESCAPE);
    /* The first bad entry is the one reported, after good ones. */
    EXPECT_CHECK("/?sy.since=" EP ":1:a&sy.since=" EP ":x:b&sy.since=" EP ":1:", E_OFFSET);
}

static void test_duplicates(void) {
    EXPECT_CHECK("/?sy.since=" EP ":1:a&sy.since=" EP ":2:a", E_TWICE);
    /* Other epochs and offsets do not make it another topic. */
    EXPECT_CHECK("/?sy.since=" EP ":1:a&sy.since=ffffffffffffffff:1:a", E_TWICE);
    /* The same topic, encoded three ways. */
    EXPECT_CHECK("/?sy.since=" EP ":1:a+b&sy.since=" EP ":2:a%20b", E_TWICE);
    EXPECT_CHECK("/?sy.since=" EP ":1:a%20b&sy.since=" EP ":2:a b", E_TWICE);
    EXPECT_CHECK("/?sy.since=" EP ":1:a b&sy.since=" EP ":2:a+b", E_TWICE);
    EXPECT_CHECK("/?sy.since=" EP ":1:a%3Ab&sy.since=" EP "%3A2%3Aa:b", E_TWICE);
    /* Far apart, other entries and parameters between. */
    EXPECT_CHECK("/?sy.since=" EP ":1:x&sy.since=" EP ":1:y&q=1&sy.since=" EP ":1:z&sy.since=" EP ":1:y", E_TWICE);
    /* Near misses are other topics. */
    const char *ok =
        "/?sy.since=" EP ":1:a&sy.since=" EP ":1:A&sy.since=" EP ":1:a+&sy.since=" EP ":1:ab&sy.since=" EP ":1:%2B";
    EXPECT_CHECK(ok, NULL);
    entry_t e[8];
    CHECK_EQU(walk(ok, strlen(ok), e, 8), 5);
}

/* n entries t0..t<n-1>, each "&sy.since=<EP>:<i>:t<i>", and tail. */
static char *many(size_t n, const char *tail, size_t *len) {
    size_t cap = 16 + n * 48 + strlen(tail);
    char *s = malloc(cap);
    if (s == NULL)
        return NULL;
    size_t o = (size_t)snprintf(s, cap, "/m?x=1");
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(s + o, cap - o, "&sy.since=" EP ":%zu:t%zu", i, i);
    o += (size_t)snprintf(s + o, cap - o, "%s", tail);
    *len = o;
    return s;
}

static void test_limits(void) {
    size_t len;
    char *s = many(SY_SINCE_MAX, "", &len);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    expect_check_(s, len, NULL, __LINE__);
    static entry_t e[SY_SINCE_MAX + 1];
    CHECK_EQU(walk(s, len, e, SY_SINCE_MAX + 1), SY_SINCE_MAX);
    CHECK_EQU(e[SY_SINCE_MAX - 1].offset, SY_SINCE_MAX - 1);
    CHECK_MEMSTR(e[SY_SINCE_MAX - 1].topic, e[SY_SINCE_MAX - 1].topic_len, "t1023");
    uint64_t ep, off;
    CHECK(find(s, "t1023", 5, &ep, &off));
    CHECK_EQU(off, 1023);
    CHECK(find(s, "t0", 2, &ep, &off));
    CHECK_EQU(off, 0);
    free(s);
    /* 1025: too many, even when every one is well formed. */
    s = many(SY_SINCE_MAX + 1, "", &len);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    expect_check_(s, len, E_MANY, __LINE__);
    free(s);
    /* 1024 and a duplicate of the first as the last. */
    s = many(SY_SINCE_MAX - 1, "&sy.since=" EP ":5:t0", &len);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    expect_check_(s, len, E_TWICE, __LINE__);
    free(s);
    /* Other parameters do not count. */
    s = many(SY_SINCE_MAX, "&a=1&b=2&sy.sincf=3", &len);
    CHECK(s != NULL);
    if (s == NULL)
        return;
    expect_check_(s, len, NULL, __LINE__);
    free(s);
}

static void test_next_find(void) {
    const char *s =
        "/?sy.since=" EP ":1:a&x=y&sy.since=ffffffffffffffff:18446744073709551615:b%20c&sy.since=" EP ":0:d:e";
    uint64_t ep = 0, off = 0;
    CHECK(find(s, "a", 1, &ep, &off));
    CHECK_EQU(ep, 0x0123456789abcdefull);
    CHECK_EQU(off, 1);
    CHECK(find(s, "b c", 3, &ep, &off));
    CHECK_EQU(ep, UINT64_MAX);
    CHECK_EQU(off, UINT64_MAX);
    CHECK(find(s, "d:e", 3, &ep, &off));
    CHECK_EQU(off, 0);
    /* Not there: prefixes, the raw encoding, other parameters. */
    CHECK(!find(s, "b+c", 3, &ep, &off));
    CHECK(!find(s, "b%20c", 5, &ep, &off));
    CHECK(!find(s, "d", 1, &ep, &off));
    CHECK(!find(s, "x", 1, &ep, &off));
    CHECK(!find(s, "", 0, &ep, &off));
    CHECK(!find("/feed", "a", 1, &ep, &off));

    /* next skips what check refuses and goes on (check says why first). */
    const char *bad = "/?sy.since=zz&sy.since=" EP ":1:a&sy.since=" EP ":1:%FF&sy.since=" EP ":2:b";
    entry_t e[4];
    CHECK_EQU(walk(bad, strlen(bad), e, 4), 2);
    CHECK_MEMSTR(e[0].topic, e[0].topic_len, "a");
    CHECK_MEMSTR(e[1].topic, e[1].topic_len, "b");
    CHECK(find(bad, "b", 1, &ep, &off));
    CHECK_EQU(off, 2);

    /* The iterator walks entry by entry; a fresh one starts over. */
    char *p = dup_n(s, strlen(s));
    if (p == NULL)
        return;
    sy_since_iter_t it = {0};
    sy_since_t x;
    char buf[SY_SINCE_TOPIC_MAX];
    CHECK(sy_since_next(p, strlen(s), &it, &x, buf));
    CHECK_MEMSTR(x.topic, x.topic_len, "a");
    CHECK(sy_since_next(p, strlen(s), &it, &x, buf));
    CHECK_MEMSTR(x.topic, x.topic_len, "b c");
    CHECK(sy_since_next(p, strlen(s), &it, &x, buf));
    CHECK_MEMSTR(x.topic, x.topic_len, "d:e");
    CHECK(!sy_since_next(p, strlen(s), &it, &x, buf));
    it.pos = 0;
    CHECK(sy_since_next(p, strlen(s), &it, &x, buf));
    CHECK_MEMSTR(x.topic, x.topic_len, "a");
    free(p);
}

int main(void) {
    test_valid();
    test_errors();
    test_duplicates();
    test_limits();
    test_next_find();
    return check_report("since");
}
