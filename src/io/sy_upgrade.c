/* sy_upgrade — see sy_upgrade.h. */
#define _GNU_SOURCE
#include "io/sy_upgrade.h"

#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "io/sy_peer.h"
#include "io/sy_post.h"
#include "io/sy_resume.h"
#include "net/sy_sock.h"
#include "proto/sy_handshake.h"
#include "proto/sy_http.h"
#include "proto/sy_pmd.h"
#include "proto/sy_since.h"
#include "proto/sy_sse.h"
#include "proto/sy_v1.h"
#include "proto/sy_v2.h"
#include "proto/sy_ws_frame.h"

#define SY_MAX_HEADERS_CAP 256
/* What the 101 takes of a connection's maxBackpressure, less the owner's
 * extra headers: a replay at the accept keeps this much room for it. */
#define SY_UPGRADE_RESPONSE_ROOM 512
/* An event stream's "retry": how long a browser waits before it reconnects. */
#define SY_UPGRADE_SSE_RETRY_MS 1000

void sy_upgrade_respond(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response, bool refusal) {
    if (refusal)
        sy_stat_inc(&sy_io_ctx(io)->stats.handshake_rejects);
    if (response == NULL || sy_outq_push(&c->outq, response) != 0) {
        sy_refbuf_release(response);
        sy_conn_destroy(io, c, 1006);
        return;
    }
    sy_conn_finish(io, c);
}

void sy_upgrade_reject(sy_io_t *io, sy_conn_t *c, int status, const char *why) {
    char buf[512];
    size_t n = sy_http_error_response_msg(buf, sizeof(buf), status, why, why ? strlen(why) : 0, NULL, 0);
    if (n == 0)
        n = sy_http_error_response(buf, sizeof(buf), status, NULL, 0);
    sy_upgrade_respond(io, c, n > 0 ? sy_refbuf_raw(buf, n) : NULL, true);
}

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
    uint8_t flags = c->sse ? SY_EV_UPGRADE_SSE : 0;
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
static void open_conn(sy_io_t *io, sy_conn_t *c, const char *accept, const char *proto, size_t proto_len,
                      const char *owner_extra, size_t owner_extra_len) {
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
    if (c->v2) {
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
    sy_conn_opened(io, c, proto, proto_len);
}

/* Parses the request head at the start of c->rbuf with the server's
 * limits into req (headers: SY_MAX_HEADERS_CAP entries): sy_http's result. */
static long parse_head(const sy_io_t *io, const sy_conn_t *c, sy_http_request_t *req, sy_http_header_t *headers) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    size_t max_headers = o->max_headers < SY_MAX_HEADERS_CAP ? o->max_headers : SY_MAX_HEADERS_CAP;
    *req = (sy_http_request_t){.headers = headers, .num_headers = max_headers};
    sy_http_limits_t lim = {
        .max_head_bytes = o->max_head_bytes, .max_line_bytes = o->max_head_bytes, .max_headers = max_headers};
    return sy_http_parse_request((const char *)c->rbuf, c->rlen, &lim, req);
}

/* Consumes the request head (head bytes) from c->rbuf: what follows it
 * (the client's first frames, if it did not wait) moves to the start. */
static void consume_head(sy_conn_t *c, size_t head) {
    memmove(c->rbuf, c->rbuf + head, c->rlen - head);
    c->rlen -= head;
}

/* What the chosen subprotocol makes of c: symphony.v1's frames, and with
 * symphony.v2 a client that may ask (io/sy_ask.h). */
static void set_protocol(sy_conn_t *c, const char *p, size_t n) {
    c->v2 = n == SY_V2_PROTOCOL_LEN && memcmp(p, SY_V2_PROTOCOL, SY_V2_PROTOCOL_LEN) == 0;
    c->v1 = c->v2 || (n == SY_V1_PROTOCOL_LEN && memcmp(p, SY_V1_PROTOCOL, SY_V1_PROTOCOL_LEN) == 0);
}

/* ---- event streams (proto/sy_sse.h) ------------------------------------------- */

/* What a stream reads its positions from: the Last-Event-ID its client
 * sent back (made a query in *heap, freed by the caller), else its URL's
 * sy.since parameters. NULL and why not when the header is malformed. */
static const char *stream_positions(const sy_http_request_t *req, const char **target, size_t *len, char **heap) {
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
static void open_stream(sy_io_t *io, sy_conn_t *c, const char *extra, size_t extra_len, bool v2) {
    const char *proto = v2 ? SY_V2_PROTOCOL : SY_V1_PROTOCOL;
    size_t proto_len = v2 ? SY_V2_PROTOCOL_LEN : SY_V1_PROTOCOL_LEN;
    c->v2 = v2;
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
                           (unsigned long)sy_conn_sse_heartbeat_ms(&sy_io_ctx(io)->shared->opts))
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
        sy_upgrade_reject(io, c, 505, "event streams need HTTP/1.1");
        return;
    }
    const char *bad = sy_since_check(req->target, req->target_len);
    const char *target;
    size_t target_len;
    char *heap = NULL;
    if (bad == NULL)
        bad = stream_positions(req, &target, &target_len, &heap);
    sy_free(heap);
    if (bad != NULL) {
        sy_upgrade_reject(io, c, 400, bad);
        return;
    }
    if (o->max_connections > 0 &&
        atomic_load_explicit(&sy_io_ctx(io)->shared->connections, memory_order_relaxed) > o->max_connections) {
        sy_upgrade_reject(io, c, 503, "too many connections");
        return;
    }
    /* A stream is a symphony.v1 connection whose frames are made events
     * (io/sy_sse_out.h): positions, notices and resumes as a v1 client's. */
    c->sse = true;
    c->v1 = true;
    c->mbuf = NULL;
    sy_post_stream_opened(io, c); /* its serial, which its name will say */
    if (o->upgrade_handler) {
        emit_upgrade(io, c, req);
        sy_conn_enter(io, c, SY_CONN_UPGRADING);
        return;
    }
    consume_head(c, (size_t)head);
    open_stream(io, c, NULL, 0, offers_v2(req));
}

void sy_upgrade_request(sy_io_t *io, sy_conn_t *c) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    if (c->post != NULL) { /* a stream's POST, its head read: more of its body */
        sy_post_body(io, c);
        return;
    }
    sy_http_header_t headers[SY_MAX_HEADERS_CAP];
    sy_http_request_t req;
    long n = parse_head(io, c, &req, headers);
    if (n == SY_HTTP_PARTIAL)
        return;
    if (n < 0) {
        sy_upgrade_reject(io, c, sy_http_error_status(n), sy_http_error_str(n));
        return;
    }
    if (!path_allowed(io, req.target, req.target_len)) {
        sy_upgrade_reject(io, c, 404, "no WebSocket endpoint at this path");
        return;
    }
    if (sy_post_request(io, c, &req, n))
        return;
    if (sy_sse_requested(&req)) {
        stream_request(io, c, &req, n);
        return;
    }
    sy_handshake_t hs;
    int status = sy_handshake_check(&req, &hs);
    if (status != 0) {
        sy_upgrade_reject(io, c, status, hs.problem);
        return;
    }
    const char *bad_since = sy_since_check(req.target, req.target_len);
    if (bad_since != NULL) {
        sy_upgrade_reject(io, c, 400, bad_since);
        return;
    }
    if (o->max_connections > 0 &&
        atomic_load_explicit(&sy_io_ctx(io)->shared->connections, memory_order_relaxed) > o->max_connections) {
        sy_upgrade_reject(io, c, 503, "too many connections");
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
    consume_head(c, (size_t)n);
    set_protocol(c, proto_copy, proto_len);
    open_conn(io, c, accept, proto_copy, proto_len, NULL, 0);
}

void sy_upgrade_accept(sy_io_t *io, sy_conn_t *c, sy_accept_t *a, sy_refbuf_t *extra) {
    if (c->state != SY_CONN_UPGRADING) {
        sy_refbuf_release(extra);
        sy_accept_free(&sy_io_ctx(io)->shared->topics, sy_io_ctx(io)->index, a);
        return;
    }
    /* The head is where sy_upgrade_request left it and parsed then: parse
     * it again for its key (a microsecond, once per upgrade, instead of
     * parking the key in the connection or in rbuf). */
    sy_http_header_t headers[SY_MAX_HEADERS_CAP];
    sy_http_request_t req;
    sy_handshake_t hs;
    long n = parse_head(io, c, &req, headers);
    const char *target = req.target;
    size_t target_len = req.target_len;
    char *heap = NULL;
    if (n > 0 && c->sse && stream_positions(&req, &target, &target_len, &heap) != NULL)
        n = 0; /* cannot happen: checked before (but out of memory) */
    if (n <= 0 || (!c->sse && sy_handshake_check(&req, &hs) != 0)) {
        sy_refbuf_release(extra);
        sy_accept_free(&sy_io_ctx(io)->shared->topics, sy_io_ctx(io)->index, a);
        sy_conn_destroy(io, c, 1006); /* cannot happen: the same bytes passed before */
        return;
    }
    char accept[SY_WS_ACCEPT_LEN];
    if (!c->sse)
        sy_ws_accept_key(hs.key, hs.key_len, accept);
    if (a->no_compress)
        c->deflate = false;
    if (!c->sse)
        set_protocol(c, a->protocol, a->protocol_len);
    else /* before its subscriptions: a symphony.v2 stream's replays cost one position an event */
        c->v2 = a->protocol_len == SY_V2_PROTOCOL_LEN && memcmp(a->protocol, SY_V2_PROTOCOL, SY_V2_PROTOCOL_LEN) == 0;
    /* Subscribed before the 101 goes (nothing is missed in between); what
     * each subscription tells the client is decided now, while the target
     * (with the client's positions) is still in rbuf, so that the owner
     * hears of the resumes before the open, and is queued after the 101. */
    sy_resume_item_t *items = a->ntopics ? sy_calloc(a->ntopics, sizeof(*items)) : NULL;
    size_t nitems = 0;
    size_t budget = sy_resume_budget(io, c);
    budget = budget > SY_UPGRADE_RESPONSE_ROOM + (extra ? extra->len : 0)
                 ? budget - SY_UPGRADE_RESPONSE_ROOM - (extra ? extra->len : 0)
                 : 0;
    for (size_t i = 0; i < a->ntopics; i++) {
        sy_topic_t *t = a->topics[i];
        if (!sy_conn_subscribe(io, c, t)) /* takes the reference and the count either way */
            continue;
        sy_sub_pos_t pos = {.head = a->heads != NULL ? a->heads[i] : 0};
        char topic_buf[SY_SINCE_TOPIC_MAX];
        sy_since_t since;
        if (sy_since_find(target, target_len, t->name, t->name_len, &since, topic_buf)) {
            pos.resume = true;
            pos.epoch = since.epoch;
            pos.since = since.offset;
        }
        sy_resume_item_t dummy;
        sy_resume_item_t *it = items != NULL ? &items[nitems++] : &dummy;
        sy_resume_prepare(io, c, t, a->heads != NULL || pos.resume ? &pos : NULL, &budget, it);
        if (items == NULL)
            sy_resume_deliver(io, c, it); /* out of memory for the list: the notice and replay cannot wait */
    }
    a->ntopics = 0;
    sy_free(heap);
    consume_head(c, (size_t)n);
    if (c->sse)
        open_stream(io, c, extra ? (const char *)extra->data : NULL, extra ? extra->len : 0,
                    a->protocol_len == SY_V2_PROTOCOL_LEN &&
                        memcmp(a->protocol, SY_V2_PROTOCOL, SY_V2_PROTOCOL_LEN) == 0);
    else
        open_conn(io, c, accept, a->protocol, a->protocol_len, extra ? (const char *)extra->data : NULL,
                  extra ? extra->len : 0);
    for (size_t i = 0; i < nitems; i++) {
        items[i].quiet = i + 1 < nitems; /* a stream's positions once, on its last notice */
        sy_resume_deliver(io, c, &items[i]);
    }
    sy_free(items);
    sy_refbuf_release(extra);
    sy_accept_free(&sy_io_ctx(io)->shared->topics, sy_io_ctx(io)->index, a);
}

void sy_upgrade_refuse(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response) {
    if (c->state != SY_CONN_UPGRADING) {
        sy_refbuf_release(response);
        return;
    }
    sy_conn_unsubscribe_all(io, c);
    sy_upgrade_respond(io, c, response, true);
}
