/* sy_post — see sy_post.h. */
#include "io/sy_post.h"

#include <string.h>

#include "base/sy_random.h"
#include "io/sy_upgrade.h"
#include "proto/sy_sha1.h"
#include "proto/sy_utf8.h"

void sy_post_key_init(uint8_t key[32]) {
    for (size_t i = 0; i < 32; i += 8) {
        uint64_t r = sy_random_u64();
        memcpy(key + i, &r, 8);
    }
}

/* HMAC-SHA-1 (RFC 2104) of the id's 8 bytes under key. */
static void mac_of(const uint8_t key[32], uint64_t id, uint8_t out[SY_SHA1_DIGEST_LEN]) {
    uint8_t pad[64], msg[8], inner[SY_SHA1_DIGEST_LEN];
    for (size_t i = 0; i < 8; i++)
        msg[i] = (uint8_t)(id >> (8 * i));
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

void sy_post_name(const uint8_t key[32], uint64_t id, char out[SY_POST_NAME_LEN]) {
    uint8_t mac[SY_SHA1_DIGEST_LEN];
    mac_of(key, id, mac);
    for (int i = 0; i < 16; i++)
        out[i] = HEX[(id >> (60 - 4 * i)) & 15];
    for (int i = 0; i < 16; i++) {
        out[16 + 2 * i] = HEX[mac[i] >> 4];
        out[17 + 2 * i] = HEX[mac[i] & 15];
    }
}

/* The sy.stream parameter's value in target's query, or NULL. */
static const char *stream_param(const char *target, size_t len, size_t *vlen) {
    static const char p[] = SY_POST_PARAM "=";
    const char *q = memchr(target, '?', len);
    if (q == NULL)
        return NULL;
    const char *end = target + len, *hash = memchr(q, '#', (size_t)(end - q));
    if (hash != NULL)
        end = hash;
    for (const char *s = q + 1; s < end;) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        const char *e = amp != NULL ? amp : end;
        if ((size_t)(e - s) >= sizeof(p) - 1 && memcmp(s, p, sizeof(p) - 1) == 0) {
            *vlen = (size_t)(e - s) - (sizeof(p) - 1);
            return s + sizeof(p) - 1;
        }
        s = e + 1;
    }
    return NULL;
}

/* The stream id a name stands for, when its MAC is right (constant time). */
static bool name_valid(const uint8_t key[32], const char *v, size_t n, uint64_t *id) {
    if (n != SY_POST_NAME_LEN)
        return false;
    uint64_t x = 0;
    for (int i = 0; i < 16; i++) {
        const char *d = memchr(HEX, v[i], 16);
        if (d == NULL || v[i] == '\0')
            return false;
        x = x << 4 | (uint64_t)(d - HEX);
    }
    char want[SY_POST_NAME_LEN];
    sy_post_name(key, x, want);
    unsigned diff = 0;
    for (size_t i = 16; i < SY_POST_NAME_LEN; i++)
        diff |= (unsigned)(want[i] ^ v[i]);
    *id = x;
    return diff == 0;
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

/* True when the body is bytes (Content-Type application/octet-stream). */
static bool binary_body(const sy_http_request_t *req) {
    const sy_http_header_t *h = sy_http_find_header(req, SY_HTTP_LIT("Content-Type"), NULL);
    if (h == NULL)
        return false;
    const char *semi = memchr(h->value, ';', h->value_len);
    size_t n = semi != NULL ? (size_t)(semi - h->value) : h->value_len;
    return sy_http_case_eq(h->value, n, SY_HTTP_LIT("application/octet-stream"));
}

bool sy_post_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head) {
    size_t vlen = 0;
    const char *v = stream_param(req->target, req->target_len, &vlen);
    if (v == NULL || !sy_http_case_eq(req->method, req->method_len, SY_HTTP_LIT("POST")))
        return false;
    sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    if (sy_http_find_header(req, SY_HTTP_LIT("Transfer-Encoding"), NULL) != NULL) {
        sy_upgrade_reject(io, c, 411, "a stream's POST needs a Content-Length, not a Transfer-Encoding");
        return true;
    }
    long long clen = content_length(req);
    if (clen < 0) {
        sy_upgrade_reject(io, c, clen == -1 ? 411 : 400,
                          clen == -1 ? "a stream's POST needs a Content-Length" : "malformed Content-Length");
        return true;
    }
    if ((unsigned long long)clen > sh->opts.max_payload) {
        sy_upgrade_reject(io, c, 413, "the message is over maxPayload");
        return true;
    }
    uint64_t id;
    if (!name_valid(sh->stream_key, v, vlen, &id) || sy_id_thread(id) >= sh->nthreads) {
        sy_upgrade_reject(io, c, 404, "no such event stream");
        return true;
    }
    if (c->rlen < (size_t)head + (size_t)clen)
        return true; /* the rest of the body */
    const uint8_t *body = c->rbuf + head;
    bool binary = binary_body(req);
    if (!binary && !sy_utf8_is_valid(body, (size_t)clen)) {
        sy_upgrade_reject(io, c, 400, "a text message must be UTF-8 (send bytes as application/octet-stream)");
        return true;
    }
    sy_refbuf_t *m = sy_refbuf_raw(body, (size_t)clen);
    sy_cmd_t cmd = {.type = SY_CMD_POSTED, .conn = id, .buf = m, .arg.binary = binary};
    if (m == NULL || sy_io_push(sh->ios[sy_id_thread(id)], &cmd) != 0) {
        sy_refbuf_release(m);
        sy_upgrade_reject(io, c, 503, "out of memory");
        return true;
    }
    static const char accepted[] = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nCache-Control: no-store\r\n"
                                   "Connection: close\r\n\r\n";
    sy_upgrade_respond(io, c, sy_refbuf_raw(accepted, sizeof(accepted) - 1), false);
    return true;
}

void sy_post_deliver(sy_io_t *io, sy_conn_t *c, bool binary, const uint8_t *body, size_t len) {
    if (!c->sse || c->state != SY_CONN_OPEN)
        return; /* closed meanwhile */
    sy_stat_inc(&sy_io_ctx(io)->stats.sse_posts);
    sy_conn_deliver(io, c, binary, body, len);
}
