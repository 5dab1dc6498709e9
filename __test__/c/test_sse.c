/* sy_sse: Server-Sent Events (docs/sse.md), byte for byte: which requests
 * ask for a stream (Accept with parameters, in any case, among a list; not
 * with Upgrade, not a POST, not without Accept, not a type that only starts
 * like ours), the response head with and without extra lines and its cap,
 * events (id, name, LF/CRLF/CR, empty, trailing newline, binary as base64,
 * a name with CR/LF/NUL left out), the comment and the id line; the id's
 * entries (percent-encoding) read back through sy_sse_last_event_id and
 * sy_since_next; each way a Last-Event-ID is refused; and sy_v1_frame_read
 * on every frame sy_v1 builds and on truncated and foreign ones.
 *
 * The events are also read back as a browser reads them: a decoder here
 * follows the WHATWG EventSource algorithm (lines end at CR, LF or CRLF;
 * "data" values joined with LF; one leading space after the colon dropped),
 * and for 5,000 random text payloads from a small alphabet ('\r', '\n',
 * ':', ' ', NUL, letters) the data it dispatches is the payload with each
 * CRLF and lone CR made an LF: the documented contract. */
#include "guard.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto/sy_base64.h"
#include "proto/sy_http.h"
#include "proto/sy_since.h"
#include "proto/sy_sse.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_frame.h"
#include "sse_reader.h"

#define EP "0123456789abcdef" /* an epoch */

/* ---- a WHATWG EventSource reader: sse_reader.h */

/* p[0..n) with each CRLF and lone CR made an LF, into out (n bytes). */
static size_t normalize(const char *p, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\r') {
            out[o++] = '\n';
            if (i + 1 < n && p[i + 1] == '\n')
                i++;
        } else {
            out[o++] = p[i];
        }
    }
    return o;
}

/* ---- helpers */

/* m is raw bytes (no frame header), one reference, exactly want[0..wlen). */
#define CHECK_RAW(m, want, wlen) check_raw_((m), (want), (wlen), __LINE__)
static void check_raw_(const sy_refbuf_t *m, const void *want, size_t wlen, int line) {
    check_count++;
    if (m == NULL) {
        check_failures++;
        fprintf(stderr, "%s:%d: no buffer\n", __FILE__, line);
        return;
    }
    if (m->hlen != 0 || m->len != wlen || memcmp(m->data, want, wlen) != 0 || atomic_load(&m->refs) != 1) {
        check_failures++;
        fprintf(stderr, "%s:%d: got %zu bytes (hlen %u) \"%.*s\", want %zu \"%.*s\"\n", __FILE__, line, m->len,
                (unsigned)m->hlen, (int)(m->len < 200 ? m->len : 200), (const char *)m->data, wlen,
                (int)(wlen < 200 ? wlen : 200), (const char *)want);
    }
}
#define CHECK_RAWSTR(m, s) CHECK_RAW((m), (s), sizeof(s) - 1)

/* sy_sse_requested over the request head s, parsed from a guarded copy:
 * 1 or 0, -1 when s does not parse. */
static int requested(const char *s) {
    guard_t g;
    const char *p = guard_str(&g, s);
    sy_http_header_t hs[16];
    sy_http_request_t req = {.headers = hs, .num_headers = 16};
    long rc = sy_http_parse_request(p, strlen(s), NULL, &req);
    int r = rc > 0 ? (int)sy_sse_requested(&req) : -1;
    guard_release(&g);
    return r;
}

/* sy_sse_last_event_id over a heap copy of v[0..len) (ASan sees a read past
 * it) with a query buffer of exactly len + 2 bytes, copied to *query when
 * accepted (the caller frees it). */
static const char *last_id(const char *v, size_t len, char **query) {
    char *p = malloc(len ? len : 1);
    char *q = malloc(len + 2);
    if (len > 0)
        memcpy(p, v, len);
    const char *why = sy_sse_last_event_id(p, len, q);
    free(p);
    if (query != NULL && why == NULL)
        *query = q;
    else
        free(q);
    return why;
}

typedef struct entry {
    uint64_t epoch, offset;
    size_t topic_len;
    char topic[SY_SINCE_TOPIC_MAX];
} entry_t;

/* The entries of query[0..len) by sy_since_next, at most max: their count. */
static size_t walk(const char *query, size_t len, entry_t *out, size_t max) {
    sy_since_iter_t it = {0};
    sy_since_t e;
    char buf[SY_SINCE_TOPIC_MAX];
    size_t n = 0;
    while (sy_since_next(query, len, &it, &e, buf)) {
        if (n < max) {
            out[n].epoch = e.epoch;
            out[n].offset = e.offset;
            out[n].topic_len = e.topic_len;
            memcpy(out[n].topic, e.topic, e.topic_len);
        }
        n++;
    }
    return n;
}

/* ---- sy_sse_requested */

static void test_requested(void) {
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"), 1);
    /* Parameters, case, among a list, spaces before ';', a second Accept. */
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/event-stream;q=1\r\n\r\n"), 1);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/event-stream ; charset=utf-8\r\n\r\n"), 1);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\naccept: TEXT/Event-Stream\r\n\r\n"), 1);
    CHECK_EQ(
        requested("GET /s HTTP/1.1\r\nAccept: text/html, application/json;q=0.9, text/event-stream;q=0.5, */*\r\n\r\n"),
        1);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/html\r\nAccept: text/event-stream\r\n\r\n"), 1);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: ,,text/event-stream,\r\n\r\n"), 1);
    /* A WebSocket upgrade, even with Accept; other methods; no Accept. */
    CHECK_EQ(
        requested("GET /s HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nAccept: text/event-stream\r\n\r\n"),
        0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/event-stream\r\nUpgrade: h2c\r\n\r\n"), 0);
    CHECK_EQ(requested("POST /s HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n"), 0);
    CHECK_EQ(requested("HEAD /s HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n"), 0);
    CHECK_EQ(requested("GETX /s HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n"), 0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    /* Types that only look like ours. */
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/event-streamx\r\n\r\n"), 0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/event-stream-x;q=1\r\n\r\n"), 0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/event-strea\r\n\r\n"), 0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: xtext/event-stream\r\n\r\n"), 0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept: text/*, */*\r\n\r\n"), 0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nAccept:\r\n\r\n"), 0);
    CHECK_EQ(requested("GET /s HTTP/1.1\r\nX-Accept: text/event-stream\r\n\r\n"), 0);
}

/* ---- sy_sse_response_head */

#define HEAD                                             \
    "HTTP/1.1 200 OK\r\n"                                \
    "Content-Type: text/event-stream; charset=utf-8\r\n" \
    "Cache-Control: no-cache, no-transform\r\n"          \
    "X-Accel-Buffering: no\r\n"                          \
    "Connection: close\r\n"

/* sy_sse_response_head into a guarded buffer of exactly cap bytes (a write
 * past it faults): its result, and the bytes written into out. */
static size_t head_into(char *out, size_t cap, const char *extra, size_t extra_len, uint32_t retry) {
    guard_t g;
    char *fill = malloc(cap ? cap : 1);
    memset(fill, '#', cap);
    char *p = guard_place(&g, fill, cap);
    free(fill);
    size_t n = sy_sse_response_head(p, cap, extra, extra_len, retry);
    if (n > 0 && n <= cap)
        memcpy(out, p, n);
    guard_release(&g);
    return n;
}

static void test_response_head(void) {
    char out[1024];
    static const char want[] = HEAD "\r\nretry: 3000\n\n";
    size_t n = head_into(out, sizeof(want) - 1, NULL, 0, 3000);
    CHECK_MEMSTR(out, n, want);
    CHECK_EQU(head_into(out, sizeof(want) - 2, NULL, 0, 3000), 0);
    CHECK_EQU(head_into(out, 0, NULL, 0, 3000), 0);
    n = head_into(out, sizeof(out), NULL, 0, 3000);
    CHECK_MEMSTR(out, n, want);

    static const char extra[] = "Set-Cookie: a=b\r\nAccess-Control-Allow-Origin: *\r\n";
    static const char want2[] = HEAD "Set-Cookie: a=b\r\nAccess-Control-Allow-Origin: *\r\n"
                                     "\r\nretry: 0\n\n";
    n = head_into(out, sizeof(want2) - 1, extra, sizeof(extra) - 1, 0);
    CHECK_MEMSTR(out, n, want2);
    CHECK_EQU(head_into(out, sizeof(want2) - 2, extra, sizeof(extra) - 1, 0), 0);

    /* Extra given with a length of 0 is none. */
    n = head_into(out, sizeof(out), extra, 0, 3000);
    CHECK_MEMSTR(out, n, want);

    /* The largest retry. */
    static const char want3[] = HEAD "\r\nretry: 4294967295\n\n";
    n = head_into(out, sizeof(want3) - 1, NULL, 0, UINT32_MAX);
    CHECK_MEMSTR(out, n, want3);
}

/* ---- sy_sse_event, sy_sse_id_line, sy_sse_comment */

#define EVENT_IS(want, id, name, nlen, payload, plen, binary)                                          \
    do {                                                                                               \
        sy_refbuf_t *m_ = sy_sse_event((id), strlen(id), (name), (nlen), (payload), (plen), (binary)); \
        CHECK_RAWSTR(m_, want);                                                                        \
        sy_refbuf_release(m_);                                                                         \
    } while (0)
#define TEXT_IS(want, payload) EVENT_IS(want, "", "", 0, payload, sizeof(payload) - 1, false)

static void test_event(void) {
    EVENT_IS("id: 7\nevent: prices\ndata: hello\n\n", "7", "prices", 6, "hello", 5, false);
    EVENT_IS("event: prices\ndata: hello\n\n", "", "prices", 6, "hello", 5, false);
    EVENT_IS("id: x\ndata: hello\n\n", "x", "", 0, "hello", 5, false);
    TEXT_IS("data: hello\n\n", "hello");
    /* Lines: LF, CRLF, lone CR, a CR then CRLF, empty lines. */
    TEXT_IS("data: a\ndata: b\n\n", "a\nb");
    TEXT_IS("data: a\ndata: b\n\n", "a\r\nb");
    TEXT_IS("data: a\ndata: b\n\n", "a\rb");
    TEXT_IS("data: a\ndata: \ndata: b\n\n", "a\r\r\nb");
    TEXT_IS("data: a\ndata: \ndata: b\n\n", "a\n\rb");
    TEXT_IS("data: a\ndata: \ndata: b\n\n", "a\n\nb");
    TEXT_IS("data: \ndata: \n\n", "\n");
    TEXT_IS("data: \ndata: \n\n", "\r");
    TEXT_IS("data: \ndata: \n\n", "\r\n");
    /* Empty; a trailing newline of each kind. */
    TEXT_IS("data: \n\n", "");
    TEXT_IS("data: a\ndata: \n\n", "a\n");
    TEXT_IS("data: a\ndata: \n\n", "a\r\n");
    TEXT_IS("data: a\ndata: \n\n", "a\r");
    /* Leading spaces and colons are the payload's: one space after "data:"
     * is ours. */
    TEXT_IS("data:  a\ndata: :b\n\n", " a\n:b");
    /* A NUL in text is kept (EventSource keeps it). */
    EVENT_IS("data: a\0b\n\n", "", "", 0, "a\0b", 3, false);

    /* Binary: base64 on one data line, then "enc: base64". */
    static const uint8_t bin[] = {0, 1, 2, 0xff, '\n', '\r'};
    EVENT_IS("id: 1\nevent: t\ndata: AAEC/woN\nenc: base64\n\n", "1", "t", 1, bin, 6, true);
    EVENT_IS("data: AAEC/w==\nenc: base64\n\n", "", "", 0, bin, 4, true);
    EVENT_IS("data: AA==\nenc: base64\n\n", "", "", 0, bin, 1, true);
    EVENT_IS("data: \nenc: base64\n\n", "", "", 0, "", 0, true);
    EVENT_IS("data: \nenc: base64\n\n", "", "", 0, NULL, 0, true);

    /* A name with LF, CR or NUL is left out (the event is a "message"). */
    EVENT_IS("id: 1\ndata: x\n\n", "1", "a\nb", 3, "x", 1, false);
    EVENT_IS("data: x\n\n", "", "a\rb", 3, "x", 1, false);
    EVENT_IS("data: x\n\n", "", "ab\n", 3, "x", 1, false);
    EVENT_IS("data: x\n\n", "", "\0ab", 3, "x", 1, false);
    EVENT_IS("data: AA==\nenc: base64\n\n", "", "\n", 1, bin, 1, true);
    /* A name with ':' or spaces is kept whole. */
    EVENT_IS("event: a:b c\ndata: x\n\n", "", "a:b c", 5, "x", 1, false);

    /* A long payload: every byte copied. */
    size_t big = 100000;
    char *p = malloc(big);
    for (size_t i = 0; i < big; i++)
        p[i] = (char)('a' + i % 26);
    sy_refbuf_t *m = sy_sse_event("", 0, "", 0, p, big, false);
    CHECK(m != NULL && m->len == 6 + big + 2 && memcmp(m->data + 6, p, big) == 0);
    sy_refbuf_release(m);
    m = sy_sse_event("", 0, "", 0, p, big, true);
    CHECK(m != NULL && m->len == 6 + SY_BASE64_ENCODED_LEN(big) + 1 + 12 + 1);
    if (m != NULL) {
        uint8_t *back = malloc(big);
        size_t got = 0;
        int rc = sy_base64_decode((const char *)m->data + 6, SY_BASE64_ENCODED_LEN(big), back, big, &got);
        CHECK_EQ(rc, 0);
        CHECK(got == big && memcmp(back, p, big) == 0);
        free(back);
    }
    sy_refbuf_release(m);
    free(p);
}

static void test_lines(void) {
    sy_refbuf_t *m = sy_sse_comment("ping", 4);
    CHECK_RAWSTR(m, ": ping\n\n");
    sy_refbuf_release(m);
    m = sy_sse_comment("", 0);
    CHECK_RAWSTR(m, ": \n\n");
    sy_refbuf_release(m);
    m = sy_sse_id_line("sy.since=" EP ":1:a", 29);
    CHECK_RAWSTR(m, "id: sy.since=" EP ":1:a\n");
    sy_refbuf_release(m);
    m = sy_sse_id_line("", 0);
    CHECK_RAWSTR(m, "id: \n");
    sy_refbuf_release(m);

    /* A comment is nothing to EventSource; an id line then an event's
     * rest (how a connection with more topics gets its own id) gives the
     * event that id. */
    decoded_t d;
    decode_stream(": ping\n\n", 8, &d);
    CHECK_EQU(d.events, 0);
    CHECK(!d.trailing);
    decoded_free(&d);
    sy_refbuf_t *id = sy_sse_id_line("mine", 4);
    sy_refbuf_t *ev = sy_sse_event("", 0, "t", 1, "x", 1, false);
    if (id != NULL && ev != NULL) {
        char both[64];
        memcpy(both, id->data, id->len);
        memcpy(both + id->len, ev->data, ev->len);
        decode_stream(both, id->len + ev->len, &d);
        CHECK_EQU(d.events, 1);
        CHECK_MEMSTR(d.last_id, d.last_id_len, "mine");
        CHECK_MEMSTR(d.type, d.type_len, "t");
        CHECK_MEMSTR(d.data, d.data_len, "x");
        decoded_free(&d);
    }
    sy_refbuf_release(id);
    sy_refbuf_release(ev);
}

/* ---- the EventSource contract over random payloads */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) { /* xorshift64*, fixed seed */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static void test_decoder_contract(void) {
    static const char alphabet[] = {'\r', '\n', ':', ' ', 'a', 'b', '\0', 'd', 'a', 't', '\r', '\n'};
    char id[SY_SSE_ENTRY_MAX];
    size_t idn = sy_sse_id_entry(id, 0x0123456789abcdefull, 42, "room 1", 6);
    unsigned bad = 0;
    for (int round = 0; round < 5000; round++) {
        size_t len = (size_t)(next_rand() % 40);
        char p[40], want[40];
        for (size_t i = 0; i < len; i++)
            p[i] = alphabet[next_rand() % sizeof(alphabet)];
        size_t wlen = normalize(p, len, want);
        bool named = next_rand() % 2 == 0;
        sy_refbuf_t *m = sy_sse_event(id, idn, "room 1", named ? 6 : 0, p, len, false);
        if (m == NULL) {
            bad++;
            continue;
        }
        decoded_t d;
        decode_stream((const char *)m->data, m->len, &d);
        bool ok = d.events == 1 && !d.trailing && d.others == 0 && d.data_len == wlen &&
                  (wlen == 0 || memcmp(d.data, want, wlen) == 0) && !d.enc_base64 && d.last_id_len == idn &&
                  memcmp(d.last_id, id, idn) == 0 &&
                  (named ? d.type_len == 6 && memcmp(d.type, "room 1", 6) == 0
                         : d.type_len == 7 && memcmp(d.type, "message", 7) == 0) &&
                  m->len >= 2 && memcmp(m->data + m->len - 2, "\n\n", 2) == 0;
        if (!ok && bad++ < 5) {
            fprintf(stderr, "payload of %zu bytes read back wrong:", len);
            for (size_t i = 0; i < len; i++)
                fprintf(stderr, " %02x", (unsigned char)p[i]);
            fprintf(stderr, "\n");
        }
        decoded_free(&d);

        /* The same payload as binary: one data line of base64. */
        sy_refbuf_release(m);
        m = sy_sse_event(id, idn, "room 1", 6, p, len, true);
        if (m == NULL) {
            bad++;
            continue;
        }
        decode_stream((const char *)m->data, m->len, &d);
        uint8_t back[40];
        size_t got = 0;
        ok = d.events == 1 && !d.trailing && d.enc_base64 &&
             sy_base64_decode(d.data, d.data_len, back, sizeof(back), &got) == 0 && got == len &&
             (len == 0 || memcmp(back, p, len) == 0);
        if (!ok && bad++ < 5)
            fprintf(stderr, "binary payload of %zu bytes read back wrong\n", len);
        decoded_free(&d);
        sy_refbuf_release(m);
    }
    CHECK_EQU(bad, 0);

    /* The decoder itself: CRLF, CR and LF end lines; one space dropped;
     * a field without a colon; an event with no data is not dispatched; an
     * unfinished event is not either. */
    decoded_t d;
    static const char s[] = "data:x\r\ndata:  y\rdata\nevent: e\n\nevent: f\n\ndata: z";
    decode_stream(s, sizeof(s) - 1, &d);
    CHECK_EQU(d.events, 1);
    CHECK_MEMSTR(d.data, d.data_len, "x\n y\n");
    CHECK_MEMSTR(d.type, d.type_len, "e");
    CHECK(d.trailing);
    decoded_free(&d);
}

/* ---- sy_sse_id_entry and sy_sse_last_event_id */

static void test_id_entry(void) {
    char *out = malloc(SY_SSE_ENTRY_MAX); /* exactly: ASan sees a write past it */
    size_t n = sy_sse_id_entry(out, 0x3f9a0c1d2e4b5a69ull, 1042, "prices.eu", 9);
    CHECK_MEMSTR(out, n, "sy.since=3f9a0c1d2e4b5a69:1042:prices.eu");
    n = sy_sse_id_entry(out, 0, 0, "A-z_0.9~", 8);
    CHECK_MEMSTR(out, n, "sy.since=0000000000000000:0:A-z_0.9~");
    n = sy_sse_id_entry(out, UINT64_MAX, UINT64_MAX, "a", 1);
    CHECK_MEMSTR(out, n, "sy.since=ffffffffffffffff:18446744073709551615:a");
    /* Spaces, '&', '%', '=', '+', '#', '?', ':', '/', UTF-8. */
    static const char topic[] = "a b&c%d=e+f#g?h:i/j\xc3\xa9\xe2\x82\xac";
    n = sy_sse_id_entry(out, 1, 2, topic, sizeof(topic) - 1);
    CHECK_MEMSTR(out, n, "sy.since=0000000000000001:2:a%20b%26c%25d%3De%2Bf%23g%3Fh%3Ai%2Fj%C3%A9%E2%82%AC");
    /* Control characters and CR/LF: never raw in an id line. */
    n = sy_sse_id_entry(out, 1, 2, "\r\n\t\x7f", 4);
    CHECK_MEMSTR(out, n, "sy.since=0000000000000001:2:%0D%0A%09%7F");
    /* sy_sse_id_entry_len says each length before it is written. */
    CHECK_EQU(sy_sse_id_entry_len(2, "\r\n\t\x7f", 4), n);
    char *other = malloc(SY_SSE_ENTRY_MAX);
    CHECK_EQU(sy_sse_id_entry_len(2, topic, sizeof(topic) - 1), sy_sse_id_entry(other, 1, 2, topic, sizeof(topic) - 1));
    static const uint64_t offsets[] = {0, 9, 10, 99, 100, 1042, UINT64_MAX / 10, UINT64_MAX};
    for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++)
        CHECK_EQU(sy_sse_id_entry_len(offsets[i], "a", 1), sy_sse_id_entry(other, 7, offsets[i], "a", 1));
    free(other);

    /* Read back as a Last-Event-ID: the same positions. */
    char *q = NULL;
    const char *why = last_id(out, n, &q);
    CHECK(why == NULL);
    free(q);
    n = sy_sse_id_entry(out, 0x0123456789abcdefull, 77, topic, sizeof(topic) - 1);
    q = NULL;
    why = last_id(out, n, &q);
    CHECK(why == NULL);
    if (why == NULL) {
        CHECK(q[0] == '?' && memcmp(q + 1, out, n) == 0 && q[n + 1] == '\0');
        entry_t e[2];
        size_t k = walk(q, n + 1, e, 2);
        CHECK_EQU(k, 1);
        CHECK_EQU(e[0].epoch, 0x0123456789abcdefull);
        CHECK_EQU(e[0].offset, 77);
        CHECK_MEMSTR(e[0].topic, e[0].topic_len, topic);
    }
    free(q);

    /* The longest topic (1024 bytes, each one escaped: 3072 characters) fits
     * SY_SSE_ENTRY_MAX with room for the '&', and reads back; 1025 is refused. */
    char *big = malloc(SY_SINCE_TOPIC_MAX + 1);
    for (size_t i = 0; i < SY_SINCE_TOPIC_MAX; i += 2) {
        big[i] = '\xc3';
        big[i + 1] = '\xa9';
    }
    n = sy_sse_id_entry(out, UINT64_MAX, UINT64_MAX, big, SY_SINCE_TOPIC_MAX);
    CHECK_EQU(n, SY_SSE_ENTRY_MAX - 1);
    q = NULL;
    why = last_id(out, n, &q);
    CHECK(why == NULL);
    if (why == NULL) {
        entry_t e[1];
        CHECK_EQU(walk(q, n + 1, e, 1), 1);
        CHECK_EQU(e[0].epoch, UINT64_MAX);
        CHECK_EQU(e[0].offset, UINT64_MAX);
        CHECK(e[0].topic_len == SY_SINCE_TOPIC_MAX && memcmp(e[0].topic, big, SY_SINCE_TOPIC_MAX) == 0);
    }
    free(q);
    big[SY_SINCE_TOPIC_MAX] = 'x';
    CHECK_EQU(sy_sse_id_entry(out, 1, 1, big, SY_SINCE_TOPIC_MAX + 1), 0);
    free(big);
    free(out);

    /* Several entries joined by '&' (as a connection with more topics has
     * them): each one back, in order. */
    static const char *const topics[] = {"a b", "x&y=z", "100%", "\xe6\x97\xa5\xe6\x9c\xac", "t"};
    char id[5 * SY_SSE_ENTRY_MAX];
    size_t len = 0;
    for (int i = 0; i < 5; i++) {
        if (i > 0)
            id[len++] = '&';
        len += sy_sse_id_entry(id + len, 0xfeedfacecafebeefull + (uint64_t)i, (uint64_t)i * 1000, topics[i],
                               strlen(topics[i]));
    }
    q = NULL;
    why = last_id(id, len, &q);
    CHECK(why == NULL);
    if (why == NULL) {
        entry_t e[6];
        CHECK_EQU(walk(q, len + 1, e, 6), 5);
        for (int i = 0; i < 5; i++) {
            CHECK_EQU(e[i].epoch, 0xfeedfacecafebeefull + (uint64_t)i);
            CHECK_EQU(e[i].offset, (uint64_t)i * 1000);
            CHECK_MEMSTR(e[i].topic, e[i].topic_len, topics[i]);
        }
    }
    free(q);
}

#define E_LENGTH "Last-Event-ID: 1 to 65536 bytes of sy.since positions"
#define E_NOT_OURS "Last-Event-ID: not positions this server wrote (sy.since=...)"

#define EXPECT_LAST(s, want) expect_last_((s), sizeof(s) - 1, (want), __LINE__)
static void expect_last_(const char *s, size_t len, const char *want, int line) {
    const char *got = last_id(s, len, NULL);
    check_count++;
    if (want == NULL ? got != NULL : got == NULL || strcmp(got, want) != 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: sy_sse_last_event_id(\"%.*s\") is \"%s\", not \"%s\"\n", __FILE__, line,
                (int)(len < 120 ? len : 120), s, got ? got : "(NULL)", want ? want : "(NULL)");
    }
}

static void test_last_event_id(void) {
    EXPECT_LAST("sy.since=" EP ":5:a", NULL);
    EXPECT_LAST("sy.since=" EP ":5:a&sy.since=" EP ":6:b", NULL);
    EXPECT_LAST("sy.since=" EP "%3A5%3Aa%20b", NULL);

    /* The query it makes: '?', the value, a NUL. */
    char *q = NULL;
    static const char v[] = "sy.since=" EP ":5:a";
    CHECK(last_id(v, sizeof(v) - 1, &q) == NULL);
    if (q != NULL)
        CHECK_MEMSTR(q, strlen(q), "?sy.since=" EP ":5:a");
    free(q);

    /* Refused: each with a reason. */
    EXPECT_LAST("", E_LENGTH);
    EXPECT_LAST("sy.since=" EP ":5:a#", E_NOT_OURS);
    EXPECT_LAST("#sy.since=" EP ":5:a", E_NOT_OURS);
    EXPECT_LAST("sy.since=" EP ":5:a?", E_NOT_OURS);
    EXPECT_LAST("x?sy.since=" EP ":5:a", E_NOT_OURS);
    EXPECT_LAST("hello world", E_NOT_OURS);
    EXPECT_LAST("1", E_NOT_OURS);
    EXPECT_LAST("&&&", E_NOT_OURS);
    EXPECT_LAST("since=" EP ":5:a", E_NOT_OURS);
    EXPECT_LAST("sy.since=0123:5:a", "sy.since: the epoch must be 16 hexadecimal characters, then ':'");
    EXPECT_LAST("sy.since=" EP "0:5:a", "sy.since: the epoch must be 16 hexadecimal characters, then ':'");
    EXPECT_LAST("sy.since=0123456789abcdeg:5:a", "sy.since: the epoch must be 16 hexadecimal characters, then ':'");
    EXPECT_LAST("sy.since=" EP ":x:a", "sy.since: the offset must be 1 to 20 decimal digits, then ':'");
    EXPECT_LAST("sy.since=" EP ":5:", "sy.since: the topic is empty");
    EXPECT_LAST("sy.since=" EP ":5:%ff", "sy.since: the topic is not valid UTF-8");
    EXPECT_LAST("sy.since=" EP ":5:%zz", "sy.since: a bad %-escape");
    EXPECT_LAST("sy.since=" EP ":5:a&sy.since=" EP ":6:a", "sy.since: a topic is given twice");
    EXPECT_LAST("sy.since=", "sy.since: the epoch must be 16 hexadecimal characters, then ':'");
    /* A reason is always non-NULL: NUL bytes inside, too. */
    static const char nul[] = "sy.since=" EP ":5:a\0b";
    const char *why = last_id(nul, sizeof(nul) - 1, NULL);
    (void)why; /* either answer is fine, but no read past the end (ASan) */

    /* Exactly 65536 bytes of entries is accepted, 65537 refused. */
    size_t cap = SY_SSE_LAST_ID_MAX + 2;
    char *big = malloc(cap);
    size_t len = 0;
    int i = 0;
    /* Entries of ~88 bytes (fewer than SY_SINCE_MAX of them), the last
     * one's topic making the total exact. */
    while (len + 200 < SY_SSE_LAST_ID_MAX) {
        char t[64];
        int tn = snprintf(t, sizeof(t), "t%05d-%050d", i++, 0);
        if (len > 0)
            big[len++] = '&';
        len += (size_t)snprintf(big + len, cap - len, "sy.since=" EP ":%d:%.*s", i, tn, t);
    }
    big[len++] = '&';
    len += (size_t)snprintf(big + len, cap - len, "sy.since=" EP ":0:");
    size_t last_topic = SY_SSE_LAST_ID_MAX - len;
    while (len < SY_SSE_LAST_ID_MAX)
        big[len++] = 'z';
    CHECK_EQU(len, SY_SSE_LAST_ID_MAX);
    q = NULL;
    why = last_id(big, len, &q);
    CHECK(why == NULL);
    if (why == NULL) {
        entry_t *e = malloc(sizeof(entry_t) * 1100);
        size_t k = walk(q, len + 1, e, 1100);
        CHECK_EQU(k, (size_t)i + 1);
        CHECK(k > 700 && k < SY_SINCE_MAX);
        CHECK_EQU(e[k - 1].offset, 0);
        CHECK_EQU(e[k - 1].topic_len, last_topic);
        free(e);
    }
    free(q);
    big[len++] = 'z';
    why = last_id(big, len, NULL);
    CHECK(why != NULL && strcmp(why, E_LENGTH) == 0);
    free(big);
}

/* ---- sy_v1_frame_read */

/* A frame with a real header for opcode over payload s[0..n). */
static sy_refbuf_t *frame_of(unsigned opcode, const void *s, size_t n) {
    uint8_t h[10];
    size_t hl = sy_ws_frame_header(h, 1, opcode, n);
    return sy_refbuf_make(h, hl, s, n, SY_REFBUF_Z_NONE);
}

#define READ_FAILS(s) read_fails_(SY_WS_OP_TEXT, (s), sizeof(s) - 1, __LINE__)
static void read_fails_(unsigned opcode, const char *s, size_t n, int line) {
    sy_refbuf_t *m = frame_of(opcode, s, n);
    sy_v1_frame_info_t info;
    check_count++;
    if (m == NULL || sy_v1_frame_read(m, &info)) {
        check_failures++;
        fprintf(stderr, "%s:%d: sy_v1_frame_read(\"%.*s\") accepted it\n", __FILE__, line, (int)n, s);
    }
    sy_refbuf_release(m);
}

static void test_frame_read(void) {
    sy_v1_frame_info_t info;
    sy_refbuf_t *m = sy_v1_publish_frame(SY_WS_OP_TEXT, 7, true, 1043, "hi\n", 3, false);
    CHECK(m != NULL && sy_v1_frame_read(m, &info));
    if (m != NULL) {
        CHECK(info.kind == 'p');
        CHECK_EQU(info.id, 7);
        CHECK(info.has_offset);
        CHECK_EQU(info.offset, 1043);
        CHECK_EQU(info.body, 8);
        CHECK(!info.binary);
        CHECK_MEMSTR(sy_refbuf_payload(m) + info.body, sy_refbuf_payload_len(m) - info.body, "hi\n");
    }
    sy_refbuf_release(m);

    /* Without offset, binary, the largest id; an empty body. */
    static const uint8_t bin[] = {0, '\n', 'p', 0xff};
    m = sy_v1_publish_frame(SY_WS_OP_BINARY, UINT32_MAX, false, 0, bin, 4, true);
    CHECK(m != NULL && sy_v1_frame_read(m, &info));
    if (m != NULL) {
        CHECK(info.kind == 'p');
        CHECK_EQU(info.id, UINT32_MAX);
        CHECK(!info.has_offset);
        CHECK_EQU(info.offset, 0);
        CHECK(info.binary);
        CHECK_EQU(info.body, 12);
        CHECK(sy_refbuf_payload_len(m) - info.body == 4 && memcmp(sy_refbuf_payload(m) + info.body, bin, 4) == 0);
    }
    sy_refbuf_release(m);
    m = sy_v1_publish_frame(SY_WS_OP_TEXT, 0, true, UINT64_MAX, "", 0, false);
    CHECK(m != NULL && sy_v1_frame_read(m, &info));
    if (m != NULL) {
        CHECK_EQU(info.id, 0);
        CHECK(info.has_offset);
        CHECK_EQU(info.offset, UINT64_MAX);
        CHECK_EQU(info.body, sy_refbuf_payload_len(m));
        CHECK_EQU(info.body, 24); /* "p0," 20 digits "\n" */
    }
    sy_refbuf_release(m);

    /* The longer length forms (126.., 65536..): the header is skipped. */
    size_t big = 70000;
    char *p = malloc(big);
    memset(p, 'q', big);
    for (size_t len = 100; len <= big; len = len < 65536 ? len * 4 : big + 1) {
        m = sy_v1_publish_frame(SY_WS_OP_BINARY, 3, true, 9, p, len, false);
        CHECK(m != NULL && sy_v1_frame_read(m, &info));
        if (m != NULL) {
            CHECK(info.kind == 'p' && info.id == 3 && info.offset == 9 && info.binary);
            CHECK_EQU(info.body, 5);
            CHECK_EQU(sy_refbuf_payload_len(m) - info.body, len);
        }
        sy_refbuf_release(m);
    }
    free(p);

    /* A direct message. */
    m = sy_v1_direct_frame(SY_WS_OP_TEXT, "p1,2\nx", 6, false);
    CHECK(m != NULL && sy_v1_frame_read(m, &info));
    if (m != NULL) {
        CHECK(info.kind == 'd');
        CHECK_EQU(info.body, 2);
        CHECK(!info.binary);
        CHECK_MEMSTR(sy_refbuf_payload(m) + info.body, sy_refbuf_payload_len(m) - info.body, "p1,2\nx");
    }
    sy_refbuf_release(m);
    m = sy_v1_direct_frame(SY_WS_OP_BINARY, "", 0, false);
    CHECK(m != NULL && sy_v1_frame_read(m, &info));
    if (m != NULL)
        CHECK(info.kind == 'd' && info.body == 2 && info.binary);
    sy_refbuf_release(m);

    /* The notices. */
    sy_v1_subscribed_t s = {.topic = "room", .topic_len = 4, .id = 3, .history = true, .epoch = 1, .offset = 2};
    m = sy_v1_subscribed_frame(&s);
    CHECK(m != NULL && sy_v1_frame_read(m, &info));
    if (m != NULL) {
        CHECK(info.kind == 'c');
        CHECK_EQU(info.body, 1);
        CHECK(!info.binary);
        CHECK(sy_refbuf_payload(m)[info.body] == '{');
    }
    sy_refbuf_release(m);
    m = sy_v1_unsubscribed_frame("room", 4, 3);
    CHECK(m != NULL && sy_v1_frame_read(m, &info));
    if (m != NULL)
        CHECK(info.kind == 'c' && info.body == 1 && sy_refbuf_payload(m)[1] == '{');
    sy_refbuf_release(m);

    /* Truncated and foreign payloads. */
    READ_FAILS("");
    READ_FAILS("p");
    READ_FAILS("p\n");
    READ_FAILS("p7");
    READ_FAILS("p7,");
    READ_FAILS("p7,\n");
    READ_FAILS("p7,12");
    READ_FAILS("p7x\n");
    READ_FAILS("p7,12x\n");
    READ_FAILS("p,1\n");
    READ_FAILS("p-1\n");
    READ_FAILS("p 1\n");
    READ_FAILS("p4294967296\n");
    READ_FAILS("p1,18446744073709551616\n");
    READ_FAILS("p1,99999999999999999999\n");
    READ_FAILS("p1,000000000000000000001\n"); /* 21 digits */
    READ_FAILS("p000000000000000000001\n");
    READ_FAILS("d");
    READ_FAILS("dx");
    READ_FAILS("d\r\n");
    READ_FAILS("x\n");
    READ_FAILS("{\"type\":\"subscribed\"}");
    READ_FAILS("P1\n");
    READ_FAILS("D\n");
    read_fails_(SY_WS_OP_BINARY, "\0\n", 2, __LINE__);
    /* The largest values that are still numbers are read. */
    m = frame_of(SY_WS_OP_TEXT, "p4294967295,18446744073709551615\n", 33);
    CHECK(m != NULL && sy_v1_frame_read(m, &info) && info.id == UINT32_MAX && info.offset == UINT64_MAX &&
          info.body == 33);
    sy_refbuf_release(m);
    /* Raw bytes (no frame header) are not a frame. */
    m = sy_refbuf_raw("p1\n", 3);
    CHECK(m != NULL && !sy_v1_frame_read(m, &info));
    sy_refbuf_release(m);
    m = sy_refbuf_make(NULL, 0, "d\n", 2, SY_REFBUF_Z_NONE);
    CHECK(m != NULL && !sy_v1_frame_read(m, &info));
    sy_refbuf_release(m);

    /* Every prefix of a valid publish payload but the whole is refused. */
    static const char full[] = "p123,456\n";
    for (size_t k = 0; k + 1 < sizeof(full) - 1; k++)
        read_fails_(SY_WS_OP_TEXT, full, k, __LINE__);
    m = frame_of(SY_WS_OP_TEXT, full, sizeof(full) - 1);
    CHECK(m != NULL && sy_v1_frame_read(m, &info) && info.id == 123 && info.offset == 456 && info.body == 9);
    sy_refbuf_release(m);
}

int main(void) {
    test_requested();
    test_response_head();
    test_event();
    test_lines();
    test_decoder_contract();
    test_id_entry();
    test_last_event_id();
    test_frame_read();
    return check_report("sse");
}
