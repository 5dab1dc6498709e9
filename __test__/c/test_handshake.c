/* Unit tests of src/sy_handshake: the RFC 6455 accept key, each refusal of
 * sy_handshake_check with its status, subprotocol iteration, and the exact
 * bytes of the 101 and error responses, written into buffers that end at a
 * guard page so any overflow faults. Inputs sit against a guard page. */
#include "guard.h"
#include "check.h"

#include "proto/sy_handshake.h"

#define MAX_H 32

typedef struct {
    guard_t g;
    sy_http_header_t h[MAX_H];
    sy_http_request_t req;
    sy_handshake_t hs;
    long rc;
    int status;
} hs_t;

static void hs_run(hs_t *t, const char *s)
{
    size_t len = strlen(s);
    const char *b = guard_place(&t->g, s, len);

    t->req.headers = t->h;
    t->req.num_headers = MAX_H;
    t->rc = sy_http_parse_request(b, len, NULL, &t->req);
    CHECK_EQ(t->rc, (long)len);
    t->status = (t->rc > 0) ? sy_handshake_check(&t->req, &t->hs) : -1;
}

static void hs_done(hs_t *t)
{
    guard_release(&t->g);
}

#define REQ_LINE "GET /chat HTTP/1.1\r\n"
#define HOST "Host: server.example.com\r\n"
#define UPG "Upgrade: websocket\r\n"
#define CONN "Connection: Upgrade\r\n"
#define KEY "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
#define VER "Sec-WebSocket-Version: 13\r\n"
#define END "\r\n"

static void test_accept_key(void)
{
    guard_t g;
    char out[SY_WS_ACCEPT_LEN];
    const char *k = guard_str(&g, "dGhlIHNhbXBsZSBub25jZQ==");

    sy_ws_accept_key(k, 24, out);
    CHECK_MEMSTR(out, SY_WS_ACCEPT_LEN, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    guard_release(&g);
    /* A second, independently computed example (Python hashlib/base64). */
    k = guard_str(&g, "x3JJHMbDL1EzLkh9GBhXDw==");
    sy_ws_accept_key(k, 24, out);
    CHECK_MEMSTR(out, SY_WS_ACCEPT_LEN, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
    guard_release(&g);
}

static void test_accepts(void)
{
    hs_t t;
    sy_handshake_iter_t it;
    const char *p;
    size_t n;

    hs_run(&t, "GET /chat HTTP/1.1\r\n"
               "Host: server.example.com\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Origin: http://example.com\r\n"
               "Sec-WebSocket-Protocol: chat, superchat\r\n"
               "Sec-WebSocket-Version: 13\r\n"
               "\r\n");
    CHECK_EQ(t.status, 0);
    CHECK(t.hs.problem == NULL);
    CHECK_MEMSTR(t.hs.key, t.hs.key_len, "dGhlIHNhbXBsZSBub25jZQ==");
    CHECK_MEMSTR(t.hs.version, t.hs.version_len, "13");
    CHECK_MEMSTR(t.hs.host, t.hs.host_len, "server.example.com");
    CHECK_MEMSTR(t.hs.origin, t.hs.origin_len, "http://example.com");
    CHECK_MEMSTR(t.hs.protocols, t.hs.protocols_len, "chat, superchat");
    CHECK_EQU(t.hs.num_protocols, 2);
    CHECK(t.hs.extensions == NULL);
    CHECK_EQU(t.hs.extensions_len, 0);
    memset(&it, 0, sizeof(it));
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 1);
    CHECK_MEMSTR(p, n, "chat");
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 1);
    CHECK_MEMSTR(p, n, "superchat");
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 0);
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 0);
    hs_done(&t);

    /* Case-insensitive tokens, lists split over lines, several protocol
     * lines, extensions exposed, no Origin. */
    hs_run(&t, REQ_LINE HOST
               "upgrade: WebSocket\r\n"
               "Connection: keep-alive\r\n"
               "Sec-WebSocket-Protocol: a, , b\r\n"
               "CONNECTION: upgrade\r\n"
               "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
               "sec-websocket-protocol: c\r\n"
               KEY VER END);
    CHECK_EQ(t.status, 0);
    CHECK_EQU(t.hs.num_protocols, 3);
    CHECK(t.hs.origin == NULL);
    CHECK_MEMSTR(t.hs.extensions, t.hs.extensions_len,
                 "permessage-deflate; client_max_window_bits");
    memset(&it, 0, sizeof(it));
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 1);
    CHECK_MEMSTR(p, n, "a");
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 1);
    CHECK_MEMSTR(p, n, "b");
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 1);
    CHECK_MEMSTR(p, n, "c");
    CHECK(sy_handshake_next_protocol(&t.req, &it, &p, &n) == 0);
    hs_done(&t);

    /* Upgrade with several protocols, empty Host. */
    hs_run(&t, REQ_LINE "Host:\r\nUpgrade: foo/2, websocket\r\n" CONN KEY VER END);
    CHECK_EQ(t.status, 0);
    CHECK_EQU(t.hs.host_len, 0);
    CHECK_EQU(t.hs.num_protocols, 0);
    hs_done(&t);
}

static void test_refusals(void)
{
    static const struct {
        const char *req;
        int status;
    } v[] = {
        { "GET /chat HTTP/1.0\r\n" HOST UPG CONN KEY VER END, 505 },
        { "POST /chat HTTP/1.1\r\n" HOST UPG CONN KEY VER END, 405 },
        { "get /chat HTTP/1.1\r\n" HOST UPG CONN KEY VER END, 405 },
        { "GETX /chat HTTP/1.1\r\n" HOST UPG CONN KEY VER END, 405 },
        { REQ_LINE UPG CONN KEY VER END, 400 },
        { REQ_LINE HOST HOST UPG CONN KEY VER END, 400 },
        { REQ_LINE HOST CONN KEY VER END, 426 },
        { REQ_LINE HOST "Upgrade: h2c\r\n" CONN KEY VER END, 426 },
        { REQ_LINE HOST "Upgrade: websockets\r\n" CONN KEY VER END, 426 },
        { REQ_LINE HOST END, 426 },
        { REQ_LINE HOST UPG KEY VER END, 400 },
        { REQ_LINE HOST UPG "Connection: keep-alive\r\n" KEY VER END, 400 },
        { REQ_LINE HOST UPG "Connection: upgraded\r\n" KEY VER END, 400 },
        { REQ_LINE HOST UPG CONN KEY END, 400 },
        { REQ_LINE HOST UPG CONN KEY "Sec-WebSocket-Version:\r\n" END, 400 },
        { REQ_LINE HOST UPG CONN KEY VER VER END, 400 },
        { REQ_LINE HOST UPG CONN KEY "Sec-WebSocket-Version: 8\r\n" END, 426 },
        { REQ_LINE HOST UPG CONN KEY "Sec-WebSocket-Version: 13, 8\r\n" END, 426 },
        { REQ_LINE HOST UPG CONN KEY "Sec-WebSocket-Version: 130\r\n" END, 426 },
        { REQ_LINE HOST UPG CONN VER END, 400 },
        { REQ_LINE HOST UPG CONN KEY KEY VER END, 400 },
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Key:\r\n" VER END, 400 },
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=\r\n" VER END, 400 },
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZR==\r\n" VER END, 400 },
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQAA\r\n" VER END, 400 },
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25j\r\n" VER END, 400 },
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==dGhl\r\n" VER END, 400 },
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25j*Q==\r\n" VER END, 400 },
        { REQ_LINE HOST UPG CONN KEY VER "Origin: a\r\nOrigin: b\r\n" END, 400 },
        { REQ_LINE HOST UPG CONN KEY VER "Sec-WebSocket-Protocol: a b\r\n" END, 400 },
        { REQ_LINE HOST UPG CONN KEY VER "Sec-WebSocket-Protocol: chat, a/b\r\n" END, 400 },
        { REQ_LINE HOST UPG CONN KEY VER "Sec-WebSocket-Protocol: ok\r\n"
          "Sec-WebSocket-Protocol: \"q\"\r\n" END, 400 },
        /* The first failing rule wins: version before key. */
        { REQ_LINE HOST UPG CONN "Sec-WebSocket-Version: 7\r\n" END, 426 },
        /* Method before Host. */
        { "PUT / HTTP/1.1\r\n" END, 405 },
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        hs_t t;
        hs_run(&t, v[i].req);
        CHECK_EQ(t.status, v[i].status);
        if (t.status != v[i].status)
            fprintf(stderr, "  vector %zu\n", i);
        CHECK(t.hs.problem != NULL && strlen(t.hs.problem) > 0);
        hs_done(&t);
    }
    /* Fields are filled even when refused. */
    {
        hs_t t;
        hs_run(&t, REQ_LINE HOST UPG CONN KEY "Sec-WebSocket-Version: 8\r\n" END);
        CHECK_EQ(t.status, 426);
        CHECK_MEMSTR(t.hs.version, t.hs.version_len, "8");
        CHECK_MEMSTR(t.hs.key, t.hs.key_len, "dGhlIHNhbXBsZSBub25jZQ==");
        hs_done(&t);
    }
}

/* Writes with f into a buffer of exactly cap bytes ending at a guard page;
 * checks the output equals want, and that every smaller cap gives 0. */
typedef size_t (*writer_fn)(char *buf, size_t cap, const void *arg);

static void check_writer(writer_fn f, const void *arg, const char *want)
{
    size_t wlen = strlen(want);
    unsigned long bad = 0;
    guard_t g;
    char *buf;
    size_t n;

    for (size_t cap = 0; cap < wlen; cap++) {
        buf = guard_place(&g, want, cap); /* any content; it is overwritten */
        bad += (f(buf, cap, arg) != 0);
        guard_release(&g);
    }
    CHECK_EQU(bad, 0);
    buf = guard_place(&g, want, wlen);
    memset(buf, 0, wlen);
    n = f(buf, wlen, arg);
    CHECK_MEMSTR(buf, n, want);
    guard_release(&g);
}

typedef struct {
    const char *proto;
    const char *extra;
} resp_arg_t;

static size_t write_101(char *buf, size_t cap, const void *arg)
{
    const resp_arg_t *a = arg;
    return sy_handshake_response(buf, cap, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
                                 a->proto, a->proto ? strlen(a->proto) : 0,
                                 a->extra, a->extra ? strlen(a->extra) : 0);
}

static void test_response(void)
{
    resp_arg_t a = { NULL, NULL };

    check_writer(write_101, &a,
                 "HTTP/1.1 101 Switching Protocols\r\n"
                 "Upgrade: websocket\r\n"
                 "Connection: Upgrade\r\n"
                 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                 "\r\n");
    a.proto = "chat";
    a.extra = "X-Server: symphony\r\nSet-Cookie: a=b\r\n";
    check_writer(write_101, &a,
                 "HTTP/1.1 101 Switching Protocols\r\n"
                 "Upgrade: websocket\r\n"
                 "Connection: Upgrade\r\n"
                 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                 "Sec-WebSocket-Protocol: chat\r\n"
                 "X-Server: symphony\r\nSet-Cookie: a=b\r\n"
                 "\r\n");
}

typedef struct {
    int status;
    const char *msg;
    const char *extra;
} err_arg_t;

static size_t write_err(char *buf, size_t cap, const void *arg)
{
    const err_arg_t *a = arg;
    if (a->msg == NULL)
        return sy_http_error_response(buf, cap, a->status, a->extra,
                                      a->extra ? strlen(a->extra) : 0);
    return sy_http_error_response_msg(buf, cap, a->status, a->msg,
                                      strlen(a->msg), a->extra,
                                      a->extra ? strlen(a->extra) : 0);
}

static void test_error_response(void)
{
    err_arg_t a = { 400, NULL, NULL };
    char buf[512];

    check_writer(write_err, &a,
                 "HTTP/1.1 400 Bad Request\r\n"
                 "Connection: close\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: 12\r\n"
                 "\r\n"
                 "Bad Request\n");
    a.status = 426;
    check_writer(write_err, &a,
                 "HTTP/1.1 426 Upgrade Required\r\n"
                 "Connection: close, Upgrade\r\n"
                 "Upgrade: websocket\r\n"
                 "Sec-WebSocket-Version: 13\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: 17\r\n"
                 "\r\n"
                 "Upgrade Required\n");
    a.status = 405;
    check_writer(write_err, &a,
                 "HTTP/1.1 405 Method Not Allowed\r\n"
                 "Connection: close\r\n"
                 "Allow: GET\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: 19\r\n"
                 "\r\n"
                 "Method Not Allowed\n");
    a.status = 403;
    a.msg = "origin not allowed";
    a.extra = "X-Reason: policy\r\n";
    check_writer(write_err, &a,
                 "HTTP/1.1 403 Forbidden\r\n"
                 "Connection: close\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: 19\r\n"
                 "X-Reason: policy\r\n"
                 "\r\n"
                 "origin not allowed\n");
    a.status = 499;
    a.msg = NULL;
    a.extra = NULL;
    check_writer(write_err, &a,
                 "HTTP/1.1 499 Client Error\r\n"
                 "Connection: close\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: 13\r\n"
                 "\r\n"
                 "Client Error\n");
    a.status = 204;
    check_writer(write_err, &a,
                 "HTTP/1.1 204 No Content\r\n"
                 "Connection: close\r\n"
                 "\r\n");
    a.status = 431;
    check_writer(write_err, &a,
                 "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                 "Connection: close\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: 32\r\n"
                 "\r\n"
                 "Request Header Fields Too Large\n");
    CHECK_EQU(sy_http_error_response(buf, sizeof(buf), 101, NULL, 0), 0);
    CHECK_EQU(sy_http_error_response(buf, sizeof(buf), 199, NULL, 0), 0);
    CHECK_EQU(sy_http_error_response(buf, sizeof(buf), 600, NULL, 0), 0);
    CHECK_EQU(sy_http_error_response(buf, sizeof(buf), -400, NULL, 0), 0);
    CHECK(sy_http_error_response(buf, sizeof(buf), 505, NULL, 0) > 0);
    CHECK(sy_http_error_response(buf, sizeof(buf), 200, NULL, 0) > 0);
}

/* The problem string of a refusal can be the body. */
static void test_problem_as_body(void)
{
    hs_t t;
    char buf[512];
    size_t n;

    hs_run(&t, REQ_LINE HOST UPG CONN VER END);
    CHECK_EQ(t.status, 400);
    n = sy_http_error_response_msg(buf, sizeof(buf), t.status, t.hs.problem,
                                   strlen(t.hs.problem), NULL, 0);
    {
        static const char tail[] = "\r\n\r\nmissing Sec-WebSocket-Key header\n";
        size_t tl = sizeof(tail) - 1;
        CHECK(n > tl);
        CHECK(n > tl && memcmp(buf + n - tl, tail, tl) == 0);
    }
    hs_done(&t);
}

/* Keep-alive: which requests let their connection stay open, and the kept
 * form of a response written to close (exact bytes; in place and into a
 * buffer; what cannot be kept). */
static void test_keep_alive(void) {
    static const struct {
        const char *req;
        bool keeps;
    } reqs[] = {
        {"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n", true},
        {"POST /a HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n", false},
        {"POST /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n", false},
        {"POST /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false},
        {"POST /a HTTP/1.0\r\nHost: x\r\n\r\n", false},
        {"POST /a HTTP/1.0\r\nHost: x\r\nConnection: Keep-Alive\r\n\r\n", true},
        {"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", false},
        {"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", false},
    };
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        hs_t t = {0};
        hs_run(&t, reqs[i].req);
        CHECK(sy_http_request_keeps_alive(&t.req) == reqs[i].keeps);
        hs_done(&t);
    }

    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                             "Connection: close\r\n\r\n{}";
    static const char kept[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    static const char kept10[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                                 "Connection: keep-alive\r\n\r\n{}";
    char buf[256];
    memcpy(buf, ok, sizeof(ok) - 1);
    size_t n = sy_http_keep_alive_response(buf, sizeof(ok) - 1, false, buf, sizeof(ok) - 1);
    CHECK_EQ(n, sizeof(kept) - 1);
    CHECK(memcmp(buf, kept, sizeof(kept) - 1) == 0);
    memcpy(buf, ok, sizeof(ok) - 1); /* in place, growing */
    n = sy_http_keep_alive_response(buf, sizeof(ok) - 1, true, buf, sizeof(buf));
    CHECK_EQ(n, sizeof(kept10) - 1);
    CHECK(memcmp(buf, kept10, sizeof(kept10) - 1) == 0);
    {
        guard_t g;
        char *out = guard_place(&g, kept10, sizeof(kept10) - 1); /* exactly: ends at the guard page */
        CHECK_EQ(sy_http_keep_alive_response(ok, sizeof(ok) - 1, true, out, sizeof(kept10) - 1), sizeof(kept10) - 1);
        CHECK(memcmp(out, kept10, sizeof(kept10) - 1) == 0);
        CHECK_EQ(sy_http_keep_alive_response(ok, sizeof(ok) - 1, true, out, sizeof(kept10) - 2), 0);
        guard_release(&g);
    }
    /* 204 needs no Content-Length; the error responses keep their length. */
    static const char nc[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    CHECK_EQ(sy_http_keep_alive_response(nc, sizeof(nc) - 1, false, buf, sizeof(buf)), sizeof(nc) - 1 - 19);
    n = sy_http_error_response(buf, sizeof(buf), 404, NULL, 0);
    CHECK(n > 0 && sy_http_keep_alive_response(buf, n, false, buf, n) == n - 19);
    static const char *cannot[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",                                           /* no close line */
        "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}",                                           /* no length */
        "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n",               /* chunked */
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n",                            /* no head's end */
        "HTTP/1.1 426 Upgrade Required\r\nConnection: close, Upgrade\r\nContent-Length: 0\r\n\r\n", /* not the line */
        "",
    };
    for (size_t i = 0; i < sizeof(cannot) / sizeof(cannot[0]); i++)
        CHECK_EQ(sy_http_keep_alive_response(cannot[i], strlen(cannot[i]), false, buf, sizeof(buf)), 0);
}

int main(void)
{
    test_accept_key();
    test_accepts();
    test_refusals();
    test_response();
    test_error_response();
    test_problem_as_body();
    test_keep_alive();
    return check_report("test_handshake");
}
