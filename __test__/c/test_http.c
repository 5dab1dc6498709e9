/* Unit tests of src/sy_http: request heads that parse, every prefix being
 * PARTIAL, each error (also on partial input), the size limits at their
 * exact edges, the header helpers. Inputs sit against a guard page. */
#include "guard.h"
#include "check.h"

#include "proto/sy_http.h"

#define MAX_H 16

typedef struct {
    guard_t g;
    const char *buf;
    sy_http_header_t h[MAX_H];
    sy_http_request_t req;
    long rc;
} parsed_t;

/* Parses s[0..len) with the given header capacity and limits; the buffer
 * stays mapped until done() so the result's pointers can be checked. */
static void parse_n(parsed_t *p, const char *s, size_t len, size_t cap,
                    const sy_http_limits_t *lim)
{
    memset(p->h, 0, sizeof(p->h));
    p->req.headers = p->h;
    p->req.num_headers = cap;
    p->buf = guard_place(&p->g, s, len);
    p->rc = sy_http_parse_request(p->buf, len, lim, &p->req);
}

static void parse(parsed_t *p, const char *s)
{
    parse_n(p, s, strlen(s), MAX_H, NULL);
}

static void done(parsed_t *p)
{
    guard_release(&p->g);
}

static long rc_of(const char *s, size_t cap, const sy_http_limits_t *lim)
{
    parsed_t p;
    long rc;

    parse_n(&p, s, strlen(s), cap, lim);
    rc = p.rc;
    if (rc <= 0)
        CHECK_EQU(p.req.num_headers, cap); /* untouched on non-success */
    done(&p);
    return rc;
}

static const char upgrade_req[] =
    "GET /chat?room=1 HTTP/1.1\r\n"
    "Host: server.example.com\r\n"
    "Upgrade: websocket\r\n"
    "Connection: keep-alive, Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Origin: http://example.com\r\n"
    "Sec-WebSocket-Protocol: chat, superchat\r\n"
    "Sec-WebSocket-Version: 13\r\n"
    "\r\n";

static void test_valid(void)
{
    parsed_t p;

    parse(&p, "GET / HTTP/1.1\r\n\r\n");
    CHECK_EQ(p.rc, 18);
    CHECK_MEMSTR(p.req.method, p.req.method_len, "GET");
    CHECK_MEMSTR(p.req.target, p.req.target_len, "/");
    CHECK_EQ(p.req.minor_version, 1);
    CHECK_EQU(p.req.num_headers, 0);
    CHECK(p.req.headers == p.h);
    done(&p);

    parse(&p, upgrade_req);
    CHECK_EQ(p.rc, (long)strlen(upgrade_req));
    CHECK_MEMSTR(p.req.target, p.req.target_len, "/chat?room=1");
    CHECK_EQU(p.req.num_headers, 7);
    CHECK_MEMSTR(p.h[0].name, p.h[0].name_len, "Host");
    CHECK_MEMSTR(p.h[0].value, p.h[0].value_len, "server.example.com");
    CHECK_MEMSTR(p.h[2].value, p.h[2].value_len, "keep-alive, Upgrade");
    CHECK_MEMSTR(p.h[6].name, p.h[6].name_len, "Sec-WebSocket-Version");
    CHECK_MEMSTR(p.h[6].value, p.h[6].value_len, "13");
    /* Pointers are into the caller's buffer. */
    CHECK(p.req.method == p.buf);
    CHECK(p.h[0].name == p.buf + 27);
    done(&p);

    parse(&p, "POST /x HTTP/1.0\r\nA: 1\r\n\r\n");
    CHECK_EQ(p.rc, 26);
    CHECK_EQ(p.req.minor_version, 0);
    CHECK_MEMSTR(p.req.method, p.req.method_len, "POST");
    done(&p);

    /* Bytes after the head (an early first frame) are not consumed. */
    parse(&p, "GET / HTTP/1.1\r\nHost: a\r\n\r\n\x81\x85xxxx");
    CHECK_EQ(p.rc, 27);
    done(&p);

    /* Leading empty lines are skipped but counted. */
    parse(&p, "\r\n\r\nGET / HTTP/1.1\r\n\r\n");
    CHECK_EQ(p.rc, 22);
    CHECK(p.req.method == p.buf + 4);
    done(&p);

    /* Methods are any token; targets may be absolute or '*'. */
    parse(&p, "M-SEARCH * HTTP/1.1\r\n\r\n");
    CHECK_EQ(p.rc, 23);
    CHECK_MEMSTR(p.req.method, p.req.method_len, "M-SEARCH");
    CHECK_MEMSTR(p.req.target, p.req.target_len, "*");
    done(&p);
}

static void test_values(void)
{
    parsed_t p;

    parse(&p, "GET / HTTP/1.1\r\n"
              "A:  x y \t\r\n"
              "B:\r\n"
              "C: \t \r\n"
              "D:\tv\r\n"
              "E: caf\xc3\xa9 \x80\xff\r\n"
              "F: a\tb\r\n"
              "G: \"quoted, stuff\"\r\n"
              "\r\n");
    CHECK(p.rc > 0);
    CHECK_EQU(p.req.num_headers, 7);
    CHECK_MEMSTR(p.h[0].value, p.h[0].value_len, "x y");
    CHECK_EQU(p.h[1].value_len, 0);
    CHECK_EQU(p.h[2].value_len, 0);
    CHECK_MEMSTR(p.h[3].value, p.h[3].value_len, "v");
    CHECK_MEMSTR(p.h[4].value, p.h[4].value_len, "caf\xc3\xa9 \x80\xff");
    CHECK_MEMSTR(p.h[5].value, p.h[5].value_len, "a\tb");
    CHECK_MEMSTR(p.h[6].value, p.h[6].value_len, "\"quoted, stuff\"");
    done(&p);

    /* obs-text in the target is allowed. */
    parse(&p, "GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n");
    CHECK(p.rc > 0);
    CHECK_EQU(p.req.target_len, 6);
    done(&p);
}

/* Every proper prefix of a valid head is PARTIAL, whatever its length. */
static void test_prefixes(void)
{
    size_t n = strlen(upgrade_req);
    unsigned long bad = 0;

    for (size_t k = 0; k < n; k++) {
        parsed_t p;
        parse_n(&p, upgrade_req, k, MAX_H, NULL);
        if (p.rc != SY_HTTP_PARTIAL) {
            bad++;
            fprintf(stderr, "  prefix %zu -> %ld\n", k, p.rc);
        }
        done(&p);
    }
    CHECK_EQU(bad, 0);
    {
        parsed_t p;
        parse_n(&p, upgrade_req, n, MAX_H, NULL);
        CHECK_EQ(p.rc, (long)n);
        done(&p);
    }
}

static void test_errors(void)
{
    static const struct {
        const char *s;
        long want;
    } v[] = {
        { " GET / HTTP/1.1\r\n\r\n", SY_HTTP_E_METHOD },
        { "G(T / HTTP/1.1\r\n\r\n", SY_HTTP_E_METHOD },
        { "GET\t/ HTTP/1.1\r\n\r\n", SY_HTTP_E_METHOD },
        { "GET\r\n\r\n", SY_HTTP_E_METHOD },
        { "GET\n", SY_HTTP_E_LINE_ENDING },
        { "\n", SY_HTTP_E_LINE_ENDING },
        { "GET  / HTTP/1.1\r\n\r\n", SY_HTTP_E_TARGET },
        { "GET /a\x01 HTTP/1.1\r\n\r\n", SY_HTTP_E_TARGET },
        { "GET /a\x7f HTTP/1.1\r\n\r\n", SY_HTTP_E_TARGET },
        { "GET /\r\n", SY_HTTP_E_TARGET },
        { "GET / \r\n", SY_HTTP_E_VERSION_SYNTAX },
        { "GET / http/1.1\r\n\r\n", SY_HTTP_E_VERSION_SYNTAX },
        { "GET / HTTP/1.1 \r\n\r\n", SY_HTTP_E_VERSION_SYNTAX },
        { "GET / HTTP/11\r\n\r\n", SY_HTTP_E_VERSION_SYNTAX },
        { "GET / HTTP/1.x\r\n\r\n", SY_HTTP_E_VERSION_SYNTAX },
        { "GET / HTTP/1.10\r\n\r\n", SY_HTTP_E_VERSION_SYNTAX },
        { "GET / HTTP/1.1\n\r\n", SY_HTTP_E_LINE_ENDING },
        { "GET / HTTP/1.1\r\r\n", SY_HTTP_E_LINE_ENDING },
        { "GET / HTTP/2.0\r\n\r\n", SY_HTTP_E_VERSION },
        { "GET / HTTP/1.2\r\n\r\n", SY_HTTP_E_VERSION },
        { "GET / HTTP/0.9\r\n\r\n", SY_HTTP_E_VERSION },
        { "GET / HTTP/1.1\r\nHost : a\r\n\r\n", SY_HTTP_E_HEADER_NAME },
        { "GET / HTTP/1.1\r\nHost a\r\n\r\n", SY_HTTP_E_HEADER_NAME },
        { "GET / HTTP/1.1\r\n: a\r\n\r\n", SY_HTTP_E_HEADER_NAME },
        { "GET / HTTP/1.1\r\nHo(st: a\r\n\r\n", SY_HTTP_E_HEADER_NAME },
        { "GET / HTTP/1.1\r\nHost\r\n\r\n", SY_HTTP_E_HEADER_NAME },
        { "GET / HTTP/1.1\r\nHost\n\r\n", SY_HTTP_E_LINE_ENDING },
        { "GET / HTTP/1.1\r\nX: a\x01" "b\r\n\r\n", SY_HTTP_E_HEADER_VALUE },
        { "GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", SY_HTTP_E_HEADER_VALUE },
        { "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", SY_HTTP_E_LINE_ENDING },
        { "GET / HTTP/1.1\r\nX: a\nb\r\n\r\n", SY_HTTP_E_LINE_ENDING },
        { "GET / HTTP/1.1\r\nX: a\r\n\n", SY_HTTP_E_LINE_ENDING },
        { "GET / HTTP/1.1\r\nX: a\r\n\rx", SY_HTTP_E_LINE_ENDING },
        { "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", SY_HTTP_E_OBS_FOLD },
        { "GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", SY_HTTP_E_OBS_FOLD },
        { "GET / HTTP/1.1\r\n Host: a\r\n\r\n", SY_HTTP_E_OBS_FOLD },
        { "\rX", SY_HTTP_E_LINE_ENDING },
        /* Fail fast: errors on partial input. */
        { "GET /a\x01", SY_HTTP_E_TARGET },
        { "GET / HTTP/3x", SY_HTTP_E_VERSION_SYNTAX },
        { "GET / HTTP/3", SY_HTTP_PARTIAL },
        { "GET / HTTP/1.3", SY_HTTP_E_VERSION },
        { "GET / HTTP/1.1\r\nX: a\r\n b", SY_HTTP_E_OBS_FOLD },
        { "GET / HTTP/1.1\r\nX y", SY_HTTP_E_HEADER_NAME },
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        long rc = rc_of(v[i].s, MAX_H, NULL);
        CHECK_EQ(rc, v[i].want);
        if (rc != v[i].want)
            fprintf(stderr, "  vector %zu\n", i);
    }
    /* NUL anywhere is an error, not a terminator. */
    {
        static const char withnul[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
        static const char nulname[] = "GET / HTTP/1.1\r\nX\0: a\r\n\r\n";
        static const char nultarget[] = "GET /\0 HTTP/1.1\r\n\r\n";
        parsed_t p;
        parse_n(&p, withnul, sizeof(withnul) - 1, MAX_H, NULL);
        CHECK_EQ(p.rc, SY_HTTP_E_HEADER_VALUE);
        done(&p);
        parse_n(&p, nulname, sizeof(nulname) - 1, MAX_H, NULL);
        CHECK_EQ(p.rc, SY_HTTP_E_HEADER_NAME);
        done(&p);
        parse_n(&p, nultarget, sizeof(nultarget) - 1, MAX_H, NULL);
        CHECK_EQ(p.rc, SY_HTTP_E_TARGET);
        done(&p);
    }
}

static void test_limits(void)
{
    static const char req[] = "GET /abc HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    size_t n = strlen(req); /* 40; request line 19 with CRLF */
    sy_http_limits_t lim;
    char big[10000];

    /* Head exactly at the limit passes; one byte less fails even though the
     * whole head is present. */
    memset(&lim, 0, sizeof(lim));
    lim.max_head_bytes = n;
    CHECK_EQ(rc_of(req, MAX_H, &lim), (long)n);
    lim.max_head_bytes = n - 1;
    CHECK_EQ(rc_of(req, MAX_H, &lim), SY_HTTP_E_HEAD_TOO_LARGE);
    /* Partial input: PARTIAL below the limit, too large once len reaches it. */
    lim.max_head_bytes = 30;
    {
        parsed_t p;
        parse_n(&p, req, 29, MAX_H, &lim);
        CHECK_EQ(p.rc, SY_HTTP_PARTIAL);
        done(&p);
        parse_n(&p, req, 30, MAX_H, &lim);
        CHECK_EQ(p.rc, SY_HTTP_E_HEAD_TOO_LARGE);
        done(&p);
        parse_n(&p, req, 31, MAX_H, &lim);
        CHECK_EQ(p.rc, SY_HTTP_E_HEAD_TOO_LARGE);
        done(&p);
    }
    /* Leading CRLFs count toward the head limit. */
    lim.max_head_bytes = 4;
    CHECK_EQ(rc_of("\r\n\r\n\r\n", MAX_H, &lim), SY_HTTP_E_HEAD_TOO_LARGE);
    CHECK_EQ(rc_of("\r\n\r", MAX_H, &lim), SY_HTTP_PARTIAL);
    CHECK_EQ(rc_of("\r\n\r\n", MAX_H, &lim), SY_HTTP_E_HEAD_TOO_LARGE);

    /* Request line limit, CRLF included. */
    memset(&lim, 0, sizeof(lim));
    lim.max_line_bytes = 19;
    CHECK_EQ(rc_of(req, MAX_H, &lim), (long)n);
    lim.max_line_bytes = 18;
    CHECK_EQ(rc_of(req, MAX_H, &lim), SY_HTTP_E_LINE_TOO_LONG);
    lim.max_line_bytes = 10;
    CHECK_EQ(rc_of("GET /abcde", MAX_H, &lim), SY_HTTP_E_LINE_TOO_LONG);
    CHECK_EQ(rc_of("GET /abcd", MAX_H, &lim), SY_HTTP_PARTIAL);
    /* The line limit does not apply to header lines (the head limit does). */
    lim.max_line_bytes = 19;
    CHECK_EQ(rc_of("GET /abc HTTP/1.1\r\nX: 0123456789012345678901234\r\n\r\n",
                   MAX_H, &lim), 51);

    /* Defaults: 8192 for the line and the head. */
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /", 5);
    big[sizeof(big) - 1] = '\0';
    CHECK_EQ(rc_of(big, MAX_H, NULL), SY_HTTP_E_LINE_TOO_LONG);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    CHECK_EQ(rc_of(big, MAX_H, NULL), SY_HTTP_E_HEAD_TOO_LARGE);
    big[8191] = '\0';
    CHECK_EQ(rc_of(big, MAX_H, NULL), SY_HTTP_PARTIAL);
    memcpy(big + 8188, "\r\n\r\n", 5);
    CHECK_EQ(rc_of(big, MAX_H, NULL), 8192);
    big[8188] = 'a';
    memcpy(big + 8189, "\r\n\r\n", 5);
    CHECK_EQ(rc_of(big, MAX_H, NULL), SY_HTTP_E_HEAD_TOO_LARGE);

    /* Header count: by the caller's array and by limits. */
    CHECK_EQ(rc_of(req, 3, NULL), (long)n);
    CHECK_EQ(rc_of(req, 2, NULL), SY_HTTP_E_TOO_MANY_HEADERS);
    CHECK_EQ(rc_of(req, 0, NULL), SY_HTTP_E_TOO_MANY_HEADERS);
    CHECK_EQ(rc_of("GET / HTTP/1.1\r\n\r\n", 0, NULL), 18);
    memset(&lim, 0, sizeof(lim));
    lim.max_headers = 2;
    CHECK_EQ(rc_of(req, MAX_H, &lim), SY_HTTP_E_TOO_MANY_HEADERS);
    lim.max_headers = 3;
    CHECK_EQ(rc_of(req, MAX_H, &lim), (long)n);
    /* Too many headers is reported as soon as the extra one starts. */
    lim.max_headers = 2;
    CHECK_EQ(rc_of("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC", MAX_H, &lim),
             SY_HTTP_E_TOO_MANY_HEADERS);
    /* The default maximum of 64. */
    {
        static char many[2000];
        sy_http_header_t hs[80];
        sy_http_request_t r;
        size_t o = 0;
        guard_t g;
        const char *b;
        long rc;

        o += (size_t)sprintf(many + o, "GET / HTTP/1.1\r\n");
        for (int i = 0; i < 65; i++)
            o += (size_t)sprintf(many + o, "H%d: v\r\n", i);
        o += (size_t)sprintf(many + o, "\r\n");
        b = guard_place(&g, many, o);
        r.headers = hs;
        r.num_headers = 80;
        rc = sy_http_parse_request(b, o, NULL, &r);
        CHECK_EQ(rc, SY_HTTP_E_TOO_MANY_HEADERS);
        lim.max_headers = 65;
        rc = sy_http_parse_request(b, o, &lim, &r);
        CHECK_EQ(rc, (long)o);
        CHECK_EQU(r.num_headers, 65);
        guard_release(&g);
    }
}

/* No result is PARTIAL once len >= max_head_bytes, for any prefix length. */
static void test_partial_bounded(void)
{
    sy_http_limits_t lim = { 50, 0, 0 };
    size_t n = strlen(upgrade_req);
    unsigned long bad = 0;

    for (size_t k = 50; k <= n; k++) {
        parsed_t p;
        parse_n(&p, upgrade_req, k, MAX_H, &lim);
        bad += (p.rc != SY_HTTP_E_HEAD_TOO_LARGE);
        done(&p);
    }
    CHECK_EQU(bad, 0);
}

static void test_status_mapping(void)
{
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_METHOD), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_TARGET), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_VERSION_SYNTAX), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_LINE_ENDING), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_HEADER_NAME), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_HEADER_VALUE), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_OBS_FOLD), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_LINE_TOO_LONG), 414);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_HEAD_TOO_LARGE), 431);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_TOO_MANY_HEADERS), 431);
    CHECK_EQ(sy_http_error_status(SY_HTTP_E_VERSION), 505);
    CHECK_EQ(sy_http_error_status(-99), 400);
    CHECK_EQ(sy_http_error_status(SY_HTTP_PARTIAL), 0);
    CHECK_EQ(sy_http_error_status(100), 0);
    for (long e = -11; e <= -1; e++)
        CHECK(strcmp(sy_http_error_str(e), "unknown error") != 0);
    CHECK(strcmp(sy_http_error_str(-12), "unknown error") == 0);
    CHECK(strcmp(sy_http_reason_phrase(400), "Bad Request") == 0);
    CHECK(strcmp(sy_http_reason_phrase(426), "Upgrade Required") == 0);
    CHECK(strcmp(sy_http_reason_phrase(431), "Request Header Fields Too Large") == 0);
    CHECK(sy_http_reason_phrase(299) == NULL);
}

static void test_helpers(void)
{
    parsed_t p;
    const sy_http_header_t *h;
    size_t pos = 0, ilen = 0;
    const char *it = NULL;
    static const char list[] = " a , ,b,,\tc d\t, ";

    parse(&p, "GET / HTTP/1.1\r\n"
              "connection: keep-alive\r\n"
              "Host: x\r\n"
              "CONNECTION: Upgrade\r\n"
              "X-Empty:\r\n"
              "\r\n");
    CHECK(p.rc > 0);
    h = sy_http_find_header(&p.req, SY_HTTP_LIT("Connection"), NULL);
    CHECK(h == &p.h[0]);
    h = sy_http_find_header(&p.req, SY_HTTP_LIT("Connection"), h);
    CHECK(h == &p.h[2]);
    h = sy_http_find_header(&p.req, SY_HTTP_LIT("Connection"), h);
    CHECK(h == NULL);
    CHECK(sy_http_find_header(&p.req, SY_HTTP_LIT("Connectio"), NULL) == NULL);
    CHECK_EQU(sy_http_count_headers(&p.req, SY_HTTP_LIT("connection")), 2);
    CHECK_EQU(sy_http_count_headers(&p.req, SY_HTTP_LIT("host")), 1);
    CHECK_EQU(sy_http_count_headers(&p.req, SY_HTTP_LIT("origin")), 0);
    CHECK(sy_http_header_has_token(&p.req, SY_HTTP_LIT("Connection"),
                                   SY_HTTP_LIT("upgrade")) == 1);
    CHECK(sy_http_header_has_token(&p.req, SY_HTTP_LIT("Connection"),
                                   SY_HTTP_LIT("close")) == 0);
    CHECK(sy_http_header_has_token(&p.req, SY_HTTP_LIT("X-Empty"),
                                   SY_HTTP_LIT("a")) == 0);
    done(&p);

    CHECK(sy_http_list_next(list, strlen(list), &pos, &it, &ilen) == 1);
    CHECK_MEMSTR(it, ilen, "a");
    CHECK(sy_http_list_next(list, strlen(list), &pos, &it, &ilen) == 1);
    CHECK_MEMSTR(it, ilen, "b");
    CHECK(sy_http_list_next(list, strlen(list), &pos, &it, &ilen) == 1);
    CHECK_MEMSTR(it, ilen, "c d");
    CHECK(sy_http_list_next(list, strlen(list), &pos, &it, &ilen) == 0);
    CHECK(sy_http_list_next(list, strlen(list), &pos, &it, &ilen) == 0);
    pos = 0;
    CHECK(sy_http_list_next("", 0, &pos, &it, &ilen) == 0);
    pos = 0;
    CHECK(sy_http_list_next(" , ,", 4, &pos, &it, &ilen) == 0);

    CHECK(sy_http_list_contains(SY_HTTP_LIT("keep-alive, Upgrade"),
                                SY_HTTP_LIT("upgrade")) == 1);
    CHECK(sy_http_list_contains(SY_HTTP_LIT("keep-alive,Upgrade "),
                                SY_HTTP_LIT("UPGRADE")) == 1);
    CHECK(sy_http_list_contains(SY_HTTP_LIT("upgrades"),
                                SY_HTTP_LIT("upgrade")) == 0);
    CHECK(sy_http_list_contains(SY_HTTP_LIT("xupgrade"),
                                SY_HTTP_LIT("upgrade")) == 0);
    CHECK(sy_http_list_contains(SY_HTTP_LIT("up grade"),
                                SY_HTTP_LIT("upgrade")) == 0);

    CHECK(sy_http_is_token(SY_HTTP_LIT("chat.v2+json")) == 1);
    CHECK(sy_http_is_token(SY_HTTP_LIT("a b")) == 0);
    CHECK(sy_http_is_token(SY_HTTP_LIT("a/b")) == 0);
    CHECK(sy_http_is_token(SY_HTTP_LIT("")) == 0);
    CHECK(sy_http_case_eq(SY_HTTP_LIT("WebSocket"), SY_HTTP_LIT("websocket")) == 1);
    CHECK(sy_http_case_eq(SY_HTTP_LIT("WebSocket"), SY_HTTP_LIT("websockets")) == 0);
    /* Only ASCII letters fold: '@' (0x40) is not '`' (0x60). */
    CHECK(sy_http_case_eq(SY_HTTP_LIT("@"), SY_HTTP_LIT("`")) == 0);
    CHECK(sy_http_case_eq(SY_HTTP_LIT("["), SY_HTTP_LIT("{")) == 0);
}

/* sy_http_query_next: every value of a parameter, in order, raw; none
 * before '?' or after '#'; a prefix of another name is not it. */
static void test_query(void)
{
    static const char t[] = "/p?a=1&ab=2&a&b=3&a=x%20y#a=no";
    const char *v;
    size_t n, pos = 0;
    CHECK(sy_http_query_next(t, sizeof(t) - 1, "a", 1, &pos, &v, &n));
    CHECK(n == 1 && memcmp(v, "1", 1) == 0);
    CHECK(sy_http_query_next(t, sizeof(t) - 1, "a", 1, &pos, &v, &n));
    CHECK_EQU(n, 0); /* "a" alone */
    CHECK(sy_http_query_next(t, sizeof(t) - 1, "a", 1, &pos, &v, &n));
    CHECK(n == 5 && memcmp(v, "x%20y", 5) == 0);
    CHECK(!sy_http_query_next(t, sizeof(t) - 1, "a", 1, &pos, &v, &n)); /* not the fragment's */
    pos = 0;
    CHECK(sy_http_query_next(t, sizeof(t) - 1, "ab", 2, &pos, &v, &n) && n == 1 && v[0] == '2');
    pos = 0;
    CHECK(!sy_http_query_next(t, sizeof(t) - 1, "c", 1, &pos, &v, &n));
    pos = 0;
    CHECK(!sy_http_query_next("/a=1#?a=1", 9, "a", 1, &pos, &v, &n)); /* no query */
    pos = 0;
    CHECK(!sy_http_query_next("/p?", 3, "a", 1, &pos, &v, &n));
}

int main(void)
{
    test_valid();
    test_values();
    test_prefixes();
    test_errors();
    test_limits();
    test_partial_bounded();
    test_status_mapping();
    test_helpers();
    test_query();
    return check_report("test_http");
}
