/* sy_post — see sy_post.h. */
#include "io/wire/sy_post.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_random.h"
#include "io/conn/sy_wire.h"
#include "io/loop/sy_queue.h"
#include "io/model/sy_ratelimit.h"
#include "io/wire/sy_reply.h"
#include "proto/sy_handshake.h"
#include "proto/sy_http.h"
#include "proto/sy_sha1.h"
#include "proto/sy_utf8.h"
#include "proto/sy_ws_frame.h"

void sy_post_key_init(uint8_t key[32], uint64_t *tag) {
    for (size_t i = 0; i < 32; i += 8) {
        uint64_t r = sy_random_u64();
        memcpy(key + i, &r, 8);
    }
    *tag = sy_random_u64();
}

/* HMAC-SHA-1 (RFC 2104) of the tag's, the id's and the serial's 8 bytes under key. */
static void mac_of(const uint8_t key[32], uint64_t tag, uint64_t id, uint64_t serial, uint8_t out[SY_SHA1_DIGEST_LEN]) {
    uint8_t pad[64], msg[24], inner[SY_SHA1_DIGEST_LEN];
    for (size_t i = 0; i < 8; i++) {
        msg[i] = (uint8_t)(tag >> (8 * i));
        msg[8 + i] = (uint8_t)(id >> (8 * i));
        msg[16 + i] = (uint8_t)(serial >> (8 * i));
    }
    sy_sha1_ctx_t h;
    memset(pad, 0x36, sizeof(pad));
    for (size_t i = 0; i < 32; i++)
        pad[i] ^= key[i];
    sy_sha1_init(&h);
    sy_sha1_update(&h, pad, sizeof(pad));
    sy_sha1_update(&h, msg, sizeof(msg));
    sy_sha1_final(&h, inner);
    memset(pad, 0x5c, sizeof(pad));
    for (size_t i = 0; i < 32; i++)
        pad[i] ^= key[i];
    sy_sha1_init(&h);
    sy_sha1_update(&h, pad, sizeof(pad));
    sy_sha1_update(&h, inner, sizeof(inner));
    sy_sha1_final(&h, out);
}

static const char HEX[] = "0123456789abcdef";

void sy_post_name(const sy_io_shared_t *sh, uint64_t id, uint64_t serial, char out[SY_POST_NAME_LEN]) {
    uint8_t mac[SY_SHA1_DIGEST_LEN];
    mac_of(sh->stream_key, sh->node_tag, id, serial, mac);
    for (int i = 0; i < 16; i++) {
        out[i] = HEX[(sh->node_tag >> (60 - 4 * i)) & 15];
        out[16 + i] = HEX[(id >> (60 - 4 * i)) & 15];
        out[32 + i] = HEX[(serial >> (60 - 4 * i)) & 15];
    }
    for (int i = 0; i < 16; i++) {
        out[48 + 2 * i] = HEX[mac[i] >> 4];
        out[49 + 2 * i] = HEX[mac[i] & 15];
    }
}

void sy_post_stream_opened(sy_io_t *io, sy_conn_t *c) { c->sse_serial = ++sy_io_ctx(io)->stream_serials; }

/* 16 lower-case hex digits at v as a u64. */
static bool hex64(const char *v, uint64_t *out) {
    uint64_t x = 0;
    for (int i = 0; i < 16; i++) {
        const char *d = v[i] != '\0' ? memchr(HEX, v[i], 16) : NULL;
        if (d == NULL)
            return false;
        x = x << 4 | (uint64_t)(d - HEX);
    }
    *out = x;
    return true;
}

bool sy_post_name_node(const char *name, size_t len, uint64_t *tag) {
    return len == SY_POST_NAME_LEN && hex64(name, tag);
}

/* The first value of query parameter name in target, or NULL. */
static const char *query_param(const char *target, size_t len, const char *name, size_t name_len, size_t *vlen) {
    size_t pos = 0;
    const char *v;
    return sy_http_query_next(target, len, name, name_len, &pos, &v, vlen) ? v : NULL;
}

bool sy_post_name_stream(const sy_io_shared_t *sh, const char *v, size_t n, uint64_t *id, uint64_t *serial) {
    uint64_t tag, x, k;
    if (!sy_post_name_node(v, n, &tag) || tag != sh->node_tag || !hex64(v + 16, &x) || !hex64(v + 32, &k))
        return false;
    char want[SY_POST_NAME_LEN];
    sy_post_name(sh, x, k, want);
    unsigned diff = 0; /* the MAC compared in constant time */
    for (size_t i = 48; i < SY_POST_NAME_LEN; i++)
        diff |= (unsigned)(want[i] ^ v[i]);
    *id = x;
    *serial = k;
    return diff == 0 && sy_id_thread(x) < sh->nthreads;
}

/* The request's Content-Length: -1 when missing, -2 when malformed. */
static long long content_length(const sy_http_request_t *req) {
    if (sy_http_count_headers(req, SY_HTTP_LIT("Content-Length")) != 1)
        return sy_http_count_headers(req, SY_HTTP_LIT("Content-Length")) == 0 ? -1 : -2;
    const sy_http_header_t *h = sy_http_find_header(req, SY_HTTP_LIT("Content-Length"), NULL);
    if (h->value_len == 0 || h->value_len > 18)
        return -2;
    long long n = 0;
    for (size_t i = 0; i < h->value_len; i++) {
        if (h->value[i] < '0' || h->value[i] > '9')
            return -2;
        n = n * 10 + (h->value[i] - '0');
    }
    return n;
}

/* True when the body is bytes: Content-Type application/octet-stream, or
 * sy.binary=1 in the query (a browser's POST without a Content-Type is a
 * "simple" cross-origin request: no preflight). */
static bool binary_body(const sy_http_request_t *req) {
    size_t n = 0;
    const char *b = query_param(req->target, req->target_len, SY_HTTP_LIT("sy.binary"), &n);
    if (b != NULL && n == 1 && b[0] == '1')
        return true;
    const sy_http_header_t *h = sy_http_find_header(req, SY_HTTP_LIT("Content-Type"), NULL);
    if (h == NULL)
        return false;
    const char *semi = memchr(h->value, ';', h->value_len);
    n = semi != NULL ? (size_t)(semi - h->value) : h->value_len;
    return sy_http_case_eq(h->value, n, SY_HTTP_LIT("application/octet-stream"));
}

/* Every answer to a stream's POST may be read by a page of any origin: the
 * stream's name, not the origin, is what authorizes it. */
#define CORS "Access-Control-Allow-Origin: *\r\n"

/* A refusal of a POST: status, why, the CORS line; then the socket closes. */
static void refuse(sy_io_t *io, sy_conn_t *c, int status, const char *why) {
    char buf[512];
    size_t n = sy_http_error_response_msg(buf, sizeof(buf), status, why, strlen(why), SY_HTTP_LIT(CORS));
    sy_reply(io, c, n > 0 ? sy_refbuf_raw(buf, n) : NULL, true);
}

/* What a POST's head said, kept while its body arrives (c->post) and
 * while it waits for the stream's thread: the head is parsed once. */
typedef struct sy_post_wait {
    uint64_t stream, serial; /* the stream the name names (this node's) */
    size_t len;              /* the body's (Content-Length) */
    bool binary;             /* the body is bytes, not text */
    bool elsewhere;          /* the name is another node's: to the owner */
    bool keep;               /* an HTTP/1.1 client that keeps the connection after the answer */
    char name[SY_POST_NAME_LEN];
} sy_post_wait_t;

#ifdef SY_TESTING
static atomic_uint heads_read;
unsigned sy_post_heads_read(void) { return atomic_load(&heads_read); }
#endif

/* c's POST, its first used bytes of c->rbuf, waits for its answer
 * (sy_post_answered), not read meanwhile; they are dropped now. */
static void wait_answer(sy_io_t *io, sy_conn_t *c, const sy_post_wait_t *w, size_t used) {
    memmove(c->rbuf, c->rbuf + used, c->rlen - used);
    c->rlen -= used;
    c->post_keep = w->keep; /* and nothing after it: sy_reply_later looks */
    sy_conn_enter(io, c, SY_CONN_UPGRADING);
}

/* The body is whole at body (w->len bytes, in c->rbuf): the POST is
 * checked, then forwarded, or queued to the stream's thread, which answers
 * (the connection waits in UPGRADING meanwhile, as a forwarded one does). */
static void post_body_done(sy_io_t *io, sy_conn_t *c, const sy_post_wait_t *w, const uint8_t *body) {
    sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    if (!w->binary && !sy_utf8_is_valid(body, w->len)) {
        refuse(io, c, 400, "a text message must be UTF-8 (send bytes as application/octet-stream)");
        return;
    }
    /* The body is copied on (to the owner, or to the stream's thread):
     * the request's bytes are dropped now, so that a kept connection reads
     * its next request once answered (sy_reply_later); anything read after
     * the body means no keeping. */
    size_t used = (size_t)(body - c->rbuf) + w->len;
    if (w->elsewhere || atomic_load_explicit(&sh->posts_forwarded, memory_order_relaxed)) {
        /* To the owner (SY_EV_POST: the name, the body). Another node's
         * stream: the owner forwards it and answers (sy_server_post_answer).
         * This node's, with a bus (flag 2): POSTs other nodes forwarded
         * before it may still be on their way from Redis, read by the bus
         * thread; the owner fences the control channel (sy_bus_ctl_fence),
         * so they are delivered first, then gives it back
         * (sy_server_post), and the stream's thread answers. */
        const char *strs[2] = {w->name, (const char *)body};
        size_t lens[2] = {SY_POST_NAME_LEN, w->len};
        unsigned flags = (w->binary ? 1u : 0u) | (w->elsewhere ? 0u : 2u);
        sy_io_emit_strings(io, sy_conn_id(io, c), SY_EV_POST, flags, 0, strs, lens, 2);
        wait_answer(io, c, w, used);
    } else {
        sy_refbuf_t *m = sy_refbuf_raw(body, w->len);
        sy_cmd_t cmd = {.type = SY_CMD_POSTED,
                        .conn = w->stream,
                        .buf = m,
                        .arg.binary = w->binary,
                        .epoch = w->serial,
                        .offset = sy_conn_id(io, c)};
        sy_err_t rc = m != NULL ? sy_io_push(sh->ios[sy_id_thread(w->stream)], &cmd) : ENOMEM;
        if (rc != 0) {
            sy_refbuf_release(m);
            refuse(io, c, 503, rc == EPIPE ? "the server is stopping" : "out of memory");
        } else {
            wait_answer(io, c, w, used); /* until the stream's thread answers */
        }
    }
}

bool sy_post_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head) {
    size_t vlen = 0;
    const char *v = query_param(req->target, req->target_len, SY_HTTP_LIT(SY_POST_PARAM), &vlen);
    if (v != NULL && sy_http_case_eq(req->method, req->method_len, SY_HTTP_LIT("OPTIONS"))) {
        /* A preflight (a page's POST with a Content-Type CORS does not let
         * through as it is): allowed. */
        static const char ok[] = "HTTP/1.1 204 No Content\r\n" CORS "Access-Control-Allow-Methods: POST\r\n"
                                 "Access-Control-Allow-Headers: Content-Type\r\nAccess-Control-Max-Age: 86400\r\n"
                                 "Connection: close\r\n\r\n";
        sy_reply_request(io, c, req, (size_t)head, sy_refbuf_raw(ok, sizeof(ok) - 1));
        return true;
    }
    if (v == NULL || !sy_http_case_eq(req->method, req->method_len, SY_HTTP_LIT("POST")))
        return false;
#ifdef SY_TESTING
    atomic_fetch_add(&heads_read, 1);
#endif
    sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    if (sy_http_find_header(req, SY_HTTP_LIT("Transfer-Encoding"), NULL) != NULL) {
        refuse(io, c, 411, "a stream's POST needs a Content-Length, not a Transfer-Encoding");
        return true;
    }
    long long clen = content_length(req);
    if (clen < 0) {
        refuse(io, c, clen == -1 ? 411 : 400,
               clen == -1 ? "a stream's POST needs a Content-Length" : "malformed Content-Length");
        return true;
    }
    if ((unsigned long long)clen > sh->opts.max_payload) {
        refuse(io, c, 413, "the message is over maxPayload");
        return true;
    }
    uint64_t id = 0, serial = 0, tag;
    bool elsewhere = sy_post_name_node(v, vlen, &tag) && tag != sh->node_tag &&
                     atomic_load_explicit(&sh->posts_forwarded, memory_order_relaxed);
    if (!elsewhere && !sy_post_name_stream(sh, v, vlen, &id, &serial)) {
        refuse(io, c, 404, "no such event stream");
        return true;
    }
    sy_post_wait_t w = {.stream = id,
                        .serial = serial,
                        .len = (size_t)clen,
                        .binary = binary_body(req),
                        .elsewhere = elsewhere,
                        .keep = req->minor_version == 1 && sy_http_request_keeps_alive(req)};
    memcpy(w.name, v, SY_POST_NAME_LEN); /* a name of either kind is that long */
    if (c->rlen - (size_t)head >= w.len) {
        /* The body came with its head (anything after it is left unread). */
        post_body_done(io, c, &w, c->rbuf + head);
        return true;
    }
    /* The rest of the body is to come: what the head said is kept, and the
     * head is done with (what follows it is the body). */
    if ((c->post = sy_malloc(sizeof(w))) == NULL) {
        refuse(io, c, 503, "out of memory");
        return true;
    }
    *c->post = w;
    memmove(c->rbuf, c->rbuf + head, c->rlen - (size_t)head);
    c->rlen -= (size_t)head;
    return true;
}

void sy_post_body(sy_io_t *io, sy_conn_t *c) {
    if (c->rlen < c->post->len)
        return;
    sy_post_wait_t *w = c->post;
    c->post = NULL;
    post_body_done(io, c, w, c->rbuf);
    sy_free(w);
}

sy_refbuf_t *sy_post_answer(int status) {
    static const char accepted[] =
        "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nCache-Control: no-store\r\n" CORS "Connection: close\r\n\r\n";
    if (status == 202)
        return sy_refbuf_raw(accepted, sizeof(accepted) - 1);
    char buf[512];
    const char *why = status == 404   ? "no such event stream"
                      : status == 410 ? "the event stream has closed"
                      : status == 429 ? "too many messages: the event stream is closed (1008)"
                                      : "the message could not be forwarded";
    size_t n = sy_http_error_response_msg(buf, sizeof(buf), status, why, strlen(why), SY_HTTP_LIT(CORS));
    return n > 0 ? sy_refbuf_raw(buf, n) : NULL;
}

/* p[0..n) is a message from c's client, POSTed: to the owner as a
 * socket's messages go, within c's inbound rate. A POST was answered
 * already and cannot be held back as a socket's bytes are: over the rate,
 * the stream is closed 1008 (its client sees it) and false. */
static bool deliver(sy_io_t *io, sy_conn_t *c, bool binary, const uint8_t *p, size_t n) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    if (sh->rate_on) {
        uint32_t now = sy_rate_now(sy_io_ctx(io)->now_ms);
        if (!sy_rate_fits(&sh->in_msgs, c->in_msg_tat, now, 1, 0) ||
            !sy_rate_fits(&sh->in_bytes, c->in_byte_tat, now, n, 0)) {
            sy_conn_policy_close(io, c, &sy_io_ctx(io)->stats.sse_rate_closes, "too many messages");
            return false;
        }
        c->in_msg_tat = sy_rate_charge(&sh->in_msgs, c->in_msg_tat, now, 1);
        c->in_byte_tat = sy_rate_charge(&sh->in_bytes, c->in_byte_tat, now, n);
    }
    sy_conn_message(io, c, binary ? SY_WS_OP_BINARY : SY_WS_OP_TEXT, p, n);
    return true;
}

void sy_post_deliver(sy_io_t *io, sy_conn_t *c, const sy_cmd_t *cmd) {
    /* The stream its name named, still open: a closed stream's id may name
     * another connection by now, never with its serial. */
    uint16_t status = 410;
    if (c != NULL && sy_conn_sse(c) && c->state == SY_CONN_OPEN && c->sse_serial == cmd->epoch) {
        sy_stat_inc(&sy_io_ctx(io)->stats.sse_posts);
        /* Over its rate: not delivered, and the stream is closed 1008. */
        status = deliver(io, c, cmd->arg.binary, cmd->buf->data, cmd->buf->len) ? 202 : 429;
    }
    if (cmd->offset == 0)
        return; /* from another node (sy_server_post): answered there */
    sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    sy_cmd_t answer = {.type = SY_CMD_POST_ANSWER, .conn = cmd->offset, .arg.status = status};
    /* A POST's thread that has ended has closed the POST: nobody to answer. */
    (void)sy_io_push(sh->ios[sy_id_thread(cmd->offset)], &answer);
}

void sy_post_answered(sy_io_t *io, sy_conn_t *c, int status) {
    if (c->state != SY_CONN_UPGRADING)
        return;
    bool keep = c->post_keep;
    c->post_keep = false;
    sy_reply_later(io, c, keep, sy_post_answer(status), status != 202);
}
