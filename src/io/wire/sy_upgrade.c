/* sy_upgrade — see sy_upgrade.h. */
#define _GNU_SOURCE
#include "io/wire/sy_upgrade.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_buf.h"
#include "io/wire/sy_peer.h"
#include "io/wire/sy_post.h"
#include "io/wire/sy_sse_out.h"
#include "net/sy_sock.h"
#include "proto/sy_handshake.h"
#include "proto/sy_http.h"
#include "proto/sy_pmd.h"
#include "proto/sy_since.h"
#include "proto/sy_sse.h"
#include "proto/sy_v1.h"
#include "proto/sy_v2.h"
#include "proto/sy_ws_frame.h"

/* An event stream's "retry": how long a browser waits before it reconnects. */
#define SY_UPGRADE_SSE_RETRY_MS 1000

static bool path_allowed(sy_io_t *io, const char *target, size_t len) {
    const char *path = sy_io_ctx(io)->shared->opts.path;
    if (path == NULL)
        return true;
    const char *q = memchr(target, '?', len);
    size_t plen = q ? (size_t)(q - target) : len;
    return plen == sy_io_ctx(io)->shared->path_len && memcmp(target, path, plen) == 0;
}

/* SY_EV_UPGRADE: url, the client's address and port (final: sy_peer.h),
 * the socket's peer address and port (the proxy's when a PROXY header
 * named the client; the same otherwise), then every header's name and
 * value, each a u32 length and its bytes (sy_events.h). */
#define SY_UPGRADE_FIXED_PARTS 5
static void emit_upgrade(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req) {
    uint8_t flags = sy_conn_sse(c) ? SY_EV_UPGRADE_SSE : 0;
    char addr[INET6_ADDRSTRLEN], port[8], sock_addr[INET6_ADDRSTRLEN], sock_port[8];
    sy_peer_addr_t peer;
    sy_peer_get(c, &peer);
    sy_peer_format(&peer, addr, sizeof(addr), port, sizeof(port));
    if (c->proxied) {
        sy_peer_addr_t s;
        sy_peer_of_fd(c->stream.fd, &s);
        sy_peer_format(&s, sock_addr, sizeof(sock_addr), sock_port, sizeof(sock_port));
    } else {
        memcpy(sock_addr, addr, sizeof(addr));
        memcpy(sock_port, port, sizeof(port));
    }
    enum { MAXP = SY_UPGRADE_FIXED_PARTS + 2 * SY_MAX_HEADERS_CAP };
    size_t n = SY_UPGRADE_FIXED_PARTS + 2 * req->num_headers;
    const char *strs[MAXP];
    size_t slens[MAXP];
    strs[0] = req->target;
    slens[0] = req->target_len;
    strs[1] = addr;
    strs[2] = port;
    strs[3] = sock_addr;
    strs[4] = sock_port;
    for (size_t i = 1; i < SY_UPGRADE_FIXED_PARTS; i++)
        slens[i] = strlen(strs[i]);
    for (size_t i = 0; i < req->num_headers; i++) {
        strs[SY_UPGRADE_FIXED_PARTS + 2 * i] = req->headers[i].name;
        slens[SY_UPGRADE_FIXED_PARTS + 2 * i] = req->headers[i].name_len;
        strs[SY_UPGRADE_FIXED_PARTS + 1 + 2 * i] = req->headers[i].value;
        slens[SY_UPGRADE_FIXED_PARTS + 1 + 2 * i] = req->headers[i].value_len;
    }
    sy_io_emit_strings(io, sy_conn_id(io, c), SY_EV_UPGRADE, flags, 0, strs, slens, n);
}

/* The 101's Sec-WebSocket-Extensions line when c negotiated deflate, then
 * the owner's extra lines, in joined (or small when they fit). NULL when
 * out of memory; *len its length. The caller frees joined. A line that
 * cannot be written declines deflate (never a compressed frame to a
 * client that was not told). */
static const char *response_extra(sy_conn_t *c, const char *extra, size_t extra_len, char *small, size_t small_cap,
                                  char **joined, size_t *len) {
    *joined = NULL;
    *len = extra_len;
    if (!c->deflate)
        return extra;
    char ext[SY_PMD_RESPONSE_MAX];
    sy_pmd_t p = {.server_window_set = c->zwin != 0, .server_window = c->zwin};
    size_t el = sy_pmd_response(&p, ext, sizeof(ext));
    if (el == 0) {
        c->deflate = false;
        return extra;
    }
    char *out = el + extra_len <= small_cap ? small : (*joined = sy_malloc(el + extra_len));
    if (out == NULL)
        return NULL;
    memcpy(out, ext, el);
    if (extra_len > 0)
        memcpy(out + el, extra, extra_len);
    *len = el + extra_len;
    return out;
}

/* What a symphony.v2 client is told of this server's limits. */
static sy_v2_limits_t limits_of(const sy_io_t *io) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    return (sy_v2_limits_t){
        .max_payload = o->max_payload, .max_subscriptions = o->max_subscriptions, .max_pending = o->max_pending};
}

/* Queues the 101 (and, for symphony.v2, the greeting) and opens the
 * connection; c->rbuf holds the bytes that followed the request head. */
static void open_ws(sy_io_t *io, sy_conn_t *c, const char *accept, const char *proto, size_t proto_len,
                    const char *owner_extra, size_t owner_extra_len, const char *tag) {
    char small[512], *joined;
    size_t extra_len;
    const char *extra = response_extra(c, owner_extra, owner_extra_len, small, sizeof(small), &joined, &extra_len);
    if (c->deflate && extra == NULL) {
        sy_stat_inc(&sy_io_ctx(io)->stats.oom_closes);
        sy_conn_destroy(io, c, 1006);
        return;
    }
    char buf[2048];
    size_t n = sy_handshake_response(buf, sizeof(buf), accept, proto, proto_len, extra, extra_len);
    sy_refbuf_t *m = NULL;
    if (n == 0) {
        /* Large extra headers: build the response on the heap. */
        size_t cap = extra_len + proto_len + 512;
        char *big = sy_malloc(cap);
        if (big != NULL) {
            n = sy_handshake_response(big, cap, accept, proto, proto_len, extra, extra_len);
            if (n > 0)
                m = sy_refbuf_raw(big, n);
            sy_free(big);
        }
    } else {
        m = sy_refbuf_raw(buf, n);
    }
    sy_free(joined);
    if (m == NULL || sy_outq_push(&c->outq, m) != 0) {
        sy_refbuf_release(m);
        sy_stat_inc(&sy_io_ctx(io)->stats.oom_closes);
        sy_conn_destroy(io, c, 1006);
        return;
    }
    if (sy_conn_v2(c)) {
        /* The greeting: the first frame after the 101, before any notice. */
        sy_v2_limits_t lim = limits_of(io);
        sy_refbuf_t *h = sy_v2_hello_frame(&lim);
        if (h == NULL || sy_outq_push(&c->outq, h) != 0) {
            sy_refbuf_release(h);
            sy_stat_inc(&sy_io_ctx(io)->stats.oom_closes);
            sy_conn_destroy(io, c, 1006);
            return;
        }
    }
    c->wire = SY_WIRE_WS;
    if (tag != NULL)
        sy_conn_opened(io, c, tag, strlen(tag));
    else
        sy_conn_opened(io, c, proto, proto_len);
}

void sy_upgrade_open_ws(sy_io_t *io, sy_conn_t *c, const char *accept, const char *proto, size_t proto_len,
                        const char *owner_extra, size_t owner_extra_len) {
    open_ws(io, c, accept, proto, proto_len, owner_extra, owner_extra_len, NULL);
}

/* A request that is not an upgrade, taken by a registered message
 * protocol (sy_msgproto_t's request: Pusher's HTTP API). */
static bool requested(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    if (sy_http_find_header(req, SY_HTTP_LIT("Upgrade"), NULL) != NULL)
        return false;
    for (unsigned i = SY_PROTO_FIRST_FREE; i < SY_PROTOS; i++) {
        const sy_msgproto_t *mp = sh->protos[i];
        if (mp != NULL && mp->request != NULL && mp->request(io, c, req, (size_t)head))
            return true;
    }
    return false;
}

/* A WebSocket upgrade whose path a registered message protocol claims
 * (sy_msgproto_t's claim: Pusher's /app/<key>): answered 101 without a
 * subprotocol and opened on that protocol, before the path option and the
 * owner's onUpgrade. False: none claims it. */
static bool claimed(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    for (unsigned i = SY_PROTO_FIRST_FREE; i < SY_PROTOS; i++) {
        const sy_msgproto_t *mp = sh->protos[i];
        if (mp == NULL || mp->claim == NULL || !mp->claim(io, c, req->target, req->target_len))
            continue;
        c->proto = (uint8_t)i; /* its state goes with the connection now (closing) */
        sy_handshake_t hs;
        int status = sy_handshake_check(req, &hs);
        if (status != 0) {
            sy_reply_error(io, c, status, hs.problem);
            return true;
        }
        if (sh->opts.max_connections > 0 &&
            atomic_load_explicit(&sh->connections, memory_order_relaxed) > sh->opts.max_connections) {
            sy_reply_error(io, c, 503, "too many connections");
            return true;
        }
        sy_pmd_t pmd;
        if (sh->opts.compression && sy_pmd_negotiate(req, &pmd)) {
            c->deflate = true;
            c->zwin = pmd.server_window_set ? pmd.server_window : 0;
        }
        char accept[SY_WS_ACCEPT_LEN];
        sy_ws_accept_key(hs.key, hs.key_len, accept);
        sy_upgrade_consume_head(c, (size_t)head);
        open_ws(io, c, accept, NULL, 0, NULL, 0, mp->tag);
        if (c->state == SY_CONN_OPEN && mp->opened != NULL)
            mp->opened(io, c);
        return true;
    }
    return false;
}

/* Parses the request head at the start of c->rbuf with the server's
 * limits into req (headers: SY_MAX_HEADERS_CAP entries): sy_http's result. */
long sy_upgrade_parse_head(const sy_io_t *io, const sy_conn_t *c, sy_http_request_t *req, sy_http_header_t *headers) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    size_t max_headers = o->max_headers < SY_MAX_HEADERS_CAP ? o->max_headers : SY_MAX_HEADERS_CAP;
    *req = (sy_http_request_t){.headers = headers, .num_headers = max_headers};
    sy_http_limits_t lim = {
        .max_head_bytes = o->max_head_bytes, .max_line_bytes = o->max_head_bytes, .max_headers = max_headers};
    return sy_http_parse_request((const char *)c->rbuf, c->rlen, &lim, req);
}

/* Consumes the request head (head bytes) from c->rbuf: what follows it
 * (the client's first frames, if it did not wait) moves to the start. */
void sy_upgrade_consume_head(sy_conn_t *c, size_t head) {
    memmove(c->rbuf, c->rbuf + head, c->rlen - head);
    c->rlen -= head;
}

/* What the chosen subprotocol makes of c: symphony.v1's frames, and with
 * symphony.v2 a client that may ask (io/sy_ask.h). */
void sy_upgrade_set_protocol(sy_io_t *io, sy_conn_t *c, const char *p, size_t n) {
    c->proto = SY_PROTO_RAW;
    for (unsigned i = 0; i < SY_PROTOS; i++) {
        const sy_msgproto_t *mp = sy_io_ctx(io)->shared->protos[i];
        if (mp != NULL && mp->name != NULL && strlen(mp->name) == n && memcmp(mp->name, p, n) == 0)
            c->proto = (uint8_t)i;
    }
}

/* ---- event streams (proto/sy_sse.h) ------------------------------------------- */

/* What a stream reads its positions from: the Last-Event-ID its client
 * sent back (made a query in *heap, freed by the caller), else its URL's
 * sy.since parameters. NULL and why not when the header is malformed. */
const char *sy_upgrade_stream_positions(const sy_http_request_t *req, const char **target, size_t *len, char **heap) {
    *heap = NULL;
    *target = req->target;
    *len = req->target_len;
    const sy_http_header_t *h = sy_http_find_header(req, SY_HTTP_LIT("Last-Event-ID"), NULL);
    if (h == NULL || h->value_len == 0)
        return NULL;
    if (h->value_len > SY_SSE_LAST_ID_MAX)
        return "Last-Event-ID: 1 to 65536 bytes of sy.since positions";
    if ((*heap = sy_malloc(h->value_len + 2)) == NULL)
        return "out of memory";
    const char *bad = sy_sse_last_event_id(h->value, h->value_len, *heap);
    if (bad != NULL) {
        sy_free(*heap);
        *heap = NULL;
        return bad;
    }
    *target = *heap;
    *len = h->value_len + 1;
    return NULL;
}

/* Queues the stream's 200 (with the owner's extra lines) and opens it,
 * speaking protocol (symphony.v2: it may ask, by POST; else symphony.v1). */
void sy_upgrade_open_stream(sy_io_t *io, sy_conn_t *c, const char *extra, size_t extra_len, bool v2) {
    const char *proto = v2 ? SY_V2_PROTOCOL : SY_V1_PROTOCOL;
    size_t proto_len = v2 ? SY_V2_PROTOCOL_LEN : SY_V1_PROTOCOL_LEN;
    c->proto = v2 ? SY_PROTO_V2 : SY_PROTO_V1;
    char small[1024];
    size_t cap = extra_len + 512 + SY_V2_LIMITS_JSON_MAX + 64;
    char *buf = cap <= sizeof(small) ? small : sy_malloc(cap);
    size_t n = buf != NULL ? sy_sse_response_head(buf, cap, extra, extra_len, SY_UPGRADE_SSE_RETRY_MS) : 0;
    /* Then "sy.open": the name its client POSTs its messages with, what
     * they speak, the server's limits and how often its heartbeat comes. */
    char name[SY_POST_NAME_LEN];
    sy_post_name(sy_io_ctx(io)->shared, sy_conn_id(io, c), c->sse_serial, name);
    char limits[SY_V2_LIMITS_JSON_MAX + 1];
    sy_v2_limits_t lim = limits_of(io);
    size_t limits_len = sy_v2_limits_json(limits, sizeof(limits), &lim);
    int w = n > 0 && limits_len > 0
                ? snprintf(buf + n, cap - n,
                           "event: sy.open\ndata: {\"stream\":\"%.*s\",\"protocol\":\"%s\",%.*s,\"heartbeat\":%lu}\n\n",
                           (int)SY_POST_NAME_LEN, name, proto, (int)limits_len, limits,
                           (unsigned long)sy_sse_heartbeat_ms(&sy_io_ctx(io)->shared->opts))
                : -1;
    n = w > 0 && (size_t)w < cap - n ? n + (size_t)w : 0;
    sy_refbuf_t *m = n > 0 ? sy_refbuf_raw(buf, n) : NULL;
    if (buf != small)
        sy_free(buf);
    if (m == NULL || sy_outq_push(&c->outq, m) != 0) {
        sy_refbuf_release(m);
        sy_stat_inc(&sy_io_ctx(io)->stats.oom_closes);
        sy_conn_destroy(io, c, 1006);
        return;
    }
    sy_stat_inc(&sy_io_ctx(io)->stats.sse_opened);
    sy_conn_opened(io, c, proto, proto_len);
}

/* True when the request offers symphony.v2: in Sec-WebSocket-Protocol, as
 * over a WebSocket, or (a browser's fetch may not send a Sec- header) as a
 * query parameter sy.protocol=symphony.v2 (docs/sse.md). */
static bool offers_v2(const sy_http_request_t *req) {
    sy_handshake_iter_t it = {0};
    const char *p;
    size_t n;
    while (sy_handshake_next_protocol(req, &it, &p, &n))
        if (n == SY_V2_PROTOCOL_LEN && memcmp(p, SY_V2_PROTOCOL, n) == 0)
            return true;
    size_t pos = 0;
    while (sy_http_query_next(req->target, req->target_len, SY_HTTP_LIT("sy.protocol"), &pos, &p, &n))
        if (n == SY_V2_PROTOCOL_LEN && memcmp(p, SY_V2_PROTOCOL, n) == 0)
            return true;
    return false;
}

/* A GET that asks for an event stream: checked as an upgrade is, then
 * asked of the owner, or opened. */
static void stream_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    if (req->minor_version != 1) {
        sy_reply_error(io, c, 505, "event streams need HTTP/1.1");
        return;
    }
    const char *bad = sy_since_check(req->target, req->target_len);
    const char *target;
    size_t target_len;
    char *heap = NULL;
    if (bad == NULL)
        bad = sy_upgrade_stream_positions(req, &target, &target_len, &heap);
    sy_free(heap);
    if (bad != NULL) {
        sy_reply_error(io, c, 400, bad);
        return;
    }
    if (o->max_connections > 0 &&
        atomic_load_explicit(&sy_io_ctx(io)->shared->connections, memory_order_relaxed) > o->max_connections) {
        sy_reply_error(io, c, 503, "too many connections");
        return;
    }
    /* A stream is a symphony.v1 connection whose frames are made events
     * (io/sy_sse_out.h): positions, notices and resumes as a v1 client's. */
    c->wire = SY_WIRE_SSE;
    c->proto = SY_PROTO_V1;
    c->mbuf = NULL;
    sy_post_stream_opened(io, c); /* its serial, which its name will say */
    if (o->upgrade_handler) {
        emit_upgrade(io, c, req);
        sy_conn_enter(io, c, SY_CONN_UPGRADING);
        return;
    }
    sy_upgrade_consume_head(c, (size_t)head);
    sy_upgrade_open_stream(io, c, NULL, 0, offers_v2(req));
}

/* ---- registered wires (io/conn/sy_wire.h) --------------------------------------- */

/* True when token (NUL-terminated) is p[0..n), ASCII case aside. */
static bool same_token(const char *token, const char *p, size_t n) {
    if (strlen(token) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char a = (unsigned char)token[i], b = (unsigned char)p[i];
        if (a >= 'A' && a <= 'Z')
            a = (unsigned char)(a + 32);
        if (b >= 'A' && b <= 'Z')
            b = (unsigned char)(b + 32);
        if (a != b)
            return false;
    }
    return true;
}

/* A request whose Upgrade header names a registered wire (its `upgrade`
 * token, compared without case): answered 101 here and moved to that
 * wire, with its message protocol, as HTTP/1's upgrade hands the bare
 * socket over in h2o. False: not one of them. */
static bool registered_upgrade(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head) {
    const sy_http_header_t *h = sy_http_find_header(req, SY_HTTP_LIT("Upgrade"), NULL);
    if (h == NULL)
        return false;
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    for (unsigned i = SY_WIRE_FIRST_FREE; i < SY_WIRES; i++) {
        const sy_wire_t *w = sh->wires[i];
        if (w == NULL || w->upgrade == NULL || !same_token(w->upgrade, h->value, h->value_len))
            continue;
        if (sh->opts.max_connections > 0 &&
            atomic_load_explicit(&sh->connections, memory_order_relaxed) > sh->opts.max_connections) {
            sy_reply_error(io, c, 503, "too many connections");
            return true;
        }
        char buf[256];
        int n = snprintf(buf, sizeof(buf),
                         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", w->upgrade);
        sy_refbuf_t *m = n > 0 && (size_t)n < sizeof(buf) ? sy_refbuf_raw(buf, (size_t)n) : NULL;
        if (m == NULL || sy_outq_push(&c->outq, m) != 0) {
            sy_refbuf_release(m);
            sy_stat_inc(&sy_io_ctx(io)->stats.oom_closes);
            sy_conn_destroy(io, c, 1006);
            return true;
        }
        sy_upgrade_consume_head(c, (size_t)head);
        c->wire = (uint8_t)i;
        c->proto = sh->wire_proto[i];
        sy_conn_opened(io, c, w->upgrade, strlen(w->upgrade));
        return true;
    }
    return false;
}

/* ---- the request head's wire --------------------------------------------------- */

/* Bytes of the request head (or of a POST's body): kept in rbuf, then
 * answered once complete. */
static void head_data(sy_io_t *io, sy_conn_t *c, uint8_t *p, size_t n) {
    if (sy_buf_append(&c->rbuf, &c->rlen, &c->rcap, p, n, 256) != 0) {
        sy_conn_destroy(io, c, 1006);
        return;
    }
    sy_upgrade_request(io, c);
}

const sy_wire_t sy_head_wire = {.name = "HTTP", .data = head_data, .resume = sy_upgrade_request};

/* The request at the start of c->rbuf, once its head is whole. */
static void head_request(sy_io_t *io, sy_conn_t *c) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    if (c->post != NULL) { /* a stream's POST, its head read: more of its body */
        sy_post_body(io, c);
        return;
    }
    sy_http_header_t headers[SY_MAX_HEADERS_CAP];
    sy_http_request_t req;
    long n = sy_upgrade_parse_head(io, c, &req, headers);
    if (n == SY_HTTP_PARTIAL)
        return;
    sy_reply_next(io, c); /* a kept connection's next request has come */
    if (n < 0) {
        sy_reply_error(io, c, sy_http_error_status(n), sy_http_error_str(n));
        return;
    }
    if (claimed(io, c, &req, n) || requested(io, c, &req, n))
        return;
    if (!path_allowed(io, req.target, req.target_len)) {
        sy_reply_error(io, c, 404, "no WebSocket endpoint at this path");
        return;
    }
    if (sy_post_request(io, c, &req, n))
        return;
    if (sy_sse_requested(&req)) {
        stream_request(io, c, &req, n);
        return;
    }
    if (registered_upgrade(io, c, &req, n))
        return;
    sy_handshake_t hs;
    int status = sy_handshake_check(&req, &hs);
    if (status != 0) {
        sy_reply_error(io, c, status, hs.problem);
        return;
    }
    const char *bad_since = sy_since_check(req.target, req.target_len);
    if (bad_since != NULL) {
        sy_reply_error(io, c, 400, bad_since);
        return;
    }
    if (o->max_connections > 0 &&
        atomic_load_explicit(&sy_io_ctx(io)->shared->connections, memory_order_relaxed) > o->max_connections) {
        sy_reply_error(io, c, 503, "too many connections");
        return;
    }
    sy_pmd_t pmd;
    if (o->compression && sy_pmd_negotiate(&req, &pmd)) {
        c->deflate = true;
        c->zwin = pmd.server_window_set ? pmd.server_window : 0;
    }
    if (o->upgrade_handler) {
        /* The head stays in rbuf, unconsumed, until the owner answers
         * (sy_upgrade_accept reads its key again). */
        emit_upgrade(io, c, &req);
        sy_conn_enter(io, c, SY_CONN_UPGRADING);
        return;
    }
    char accept[SY_WS_ACCEPT_LEN];
    sy_ws_accept_key(hs.key, hs.key_len, accept);
    /* No handler: accept, choosing symphony.v2 when it is offered (a
     * client offers it after symphony.v1, which a server before v2 takes),
     * else the first subprotocol offered. */
    sy_handshake_iter_t it = {0};
    const char *proto = NULL;
    size_t proto_len = 0, first_len = 0;
    char proto_copy[256];
    while (sy_handshake_next_protocol(&req, &it, &proto, &proto_len)) {
        if (first_len == 0 && proto_len < sizeof(proto_copy)) {
            memcpy(proto_copy, proto, proto_len);
            first_len = proto_len;
        }
        if (proto_len == SY_V2_PROTOCOL_LEN && memcmp(proto, SY_V2_PROTOCOL, SY_V2_PROTOCOL_LEN) == 0) {
            memcpy(proto_copy, proto, proto_len);
            first_len = proto_len;
            break;
        }
    }
    proto_len = first_len;
    sy_upgrade_consume_head(c, (size_t)n);
    sy_upgrade_set_protocol(io, c, proto_copy, proto_len);
    sy_upgrade_open_ws(io, c, accept, proto_copy, proto_len, NULL, 0);
}

void sy_upgrade_request(sy_io_t *io, sy_conn_t *c) {
    /* Requests read together (pipelined) are answered in order: after one
     * answered with the connection kept (io/wire/sy_reply.h), the next one
     * read, if it is whole; a loop, not a call in the answer, so that many
     * small requests in one read do not grow the stack. */
    for (;;) {
        size_t before = c->rlen;
        head_request(io, c);
        if (c->state != SY_CONN_HTTP || !c->http_kept || c->post != NULL || c->rlen == 0 || c->rlen >= before)
            return;
    }
}
