/* RFC 6455 server handshake. See sy_handshake.h. */
#include "proto/sy_handshake.h"

#include <stdint.h>
#include <string.h>

#include "proto/sy_base64.h"
#include "proto/sy_sha1.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* Points *ptr and *len at the first header named name, if any; returns how
 * many headers have that name. */
static size_t first_header(const sy_http_request_t *req, const char *name, size_t name_len, const char **ptr,
                           size_t *len) {
    const sy_http_header_t *h = sy_http_find_header(req, name, name_len, NULL);

    if (h != NULL) {
        *ptr = h->value;
        *len = h->value_len;
    }
    return sy_http_count_headers(req, name, name_len);
}

static int fail(sy_handshake_t *out, int status, const char *problem) {
    out->problem = problem;
    return status;
}

int sy_handshake_check(const sy_http_request_t *req, sy_handshake_t *out) {
    size_t n_host, n_key, n_version, n_origin;
    uint8_t key_bytes[18];
    size_t key_bytes_len = 0;
    sy_handshake_iter_t it;
    const char *proto;
    size_t proto_len;

    memset(out, 0, sizeof(*out));
    n_host = first_header(req, SY_HTTP_LIT("Host"), &out->host, &out->host_len);
    n_key = first_header(req, SY_HTTP_LIT("Sec-WebSocket-Key"), &out->key, &out->key_len);
    n_version = first_header(req, SY_HTTP_LIT("Sec-WebSocket-Version"), &out->version, &out->version_len);
    n_origin = first_header(req, SY_HTTP_LIT("Origin"), &out->origin, &out->origin_len);
    (void)first_header(req, SY_HTTP_LIT("Sec-WebSocket-Protocol"), &out->protocols, &out->protocols_len);
    (void)first_header(req, SY_HTTP_LIT("Sec-WebSocket-Extensions"), &out->extensions, &out->extensions_len);

    if (req->minor_version != 1)
        return fail(out, 505, "WebSocket requires HTTP/1.1");
    if (req->method_len != 3 || memcmp(req->method, "GET", 3) != 0)
        return fail(out, 405, "WebSocket handshake requires GET");
    if (n_host != 1)
        return fail(out, 400, n_host == 0 ? "missing Host header" : "more than one Host header");
    if (!sy_http_header_has_token(req, SY_HTTP_LIT("Upgrade"), SY_HTTP_LIT("websocket")))
        return fail(out, 426, "this endpoint requires Upgrade: websocket");
    if (!sy_http_header_has_token(req, SY_HTTP_LIT("Connection"), SY_HTTP_LIT("upgrade")))
        return fail(out, 400, "Connection header must contain upgrade");
    if (n_version == 0)
        return fail(out, 400, "missing Sec-WebSocket-Version header");
    if (n_version > 1 || out->version_len == 0)
        return fail(out, 400, "invalid Sec-WebSocket-Version header");
    if (out->version_len != 2 || memcmp(out->version, "13", 2) != 0)
        return fail(out, 426, "unsupported Sec-WebSocket-Version (use 13)");
    if (n_key == 0)
        return fail(out, 400, "missing Sec-WebSocket-Key header");
    if (n_key > 1 || out->key_len != SY_WS_KEY_LEN ||
        sy_base64_decode(out->key, out->key_len, key_bytes, sizeof(key_bytes), &key_bytes_len) != 0 ||
        key_bytes_len != 16)
        return fail(out, 400, "invalid Sec-WebSocket-Key header");
    if (n_origin > 1)
        return fail(out, 400, "more than one Origin header");

    memset(&it, 0, sizeof(it));
    while (sy_handshake_next_protocol(req, &it, &proto, &proto_len)) {
        if (!sy_http_is_token(proto, proto_len))
            return fail(out, 400, "invalid Sec-WebSocket-Protocol header");
        out->num_protocols++;
    }
    return 0;
}

bool sy_handshake_next_protocol(const sy_http_request_t *req, sy_handshake_iter_t *it, const char **proto,
                                size_t *proto_len) {
    while (it->header_index < req->num_headers) {
        const sy_http_header_t *h = &req->headers[it->header_index];
        if (sy_http_case_eq(h->name, h->name_len, SY_HTTP_LIT("Sec-WebSocket-Protocol")) &&
            sy_http_list_next(h->value, h->value_len, &it->pos, proto, proto_len))
            return true;
        it->header_index++;
        it->pos = 0;
    }
    return false;
}

void sy_ws_accept_key(const char *key, size_t key_len, char out[SY_WS_ACCEPT_LEN]) {
    sy_sha1_ctx_t ctx;
    uint8_t digest[SY_SHA1_DIGEST_LEN];

    sy_sha1_init(&ctx);
    sy_sha1_update(&ctx, key, key_len);
    sy_sha1_update(&ctx, ws_guid, sizeof(ws_guid) - 1);
    sy_sha1_final(&ctx, digest);
    (void)sy_base64_encode(digest, sizeof(digest), out, SY_WS_ACCEPT_LEN);
}

/* Bounded output cursor: once something does not fit, ok stays 0. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
    int ok;
} out_t;

static void put(out_t *o, const char *s, size_t n) {
    if (!o->ok || n == 0)
        return;
    if (n > o->cap - o->len) {
        o->ok = 0;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void put_str(out_t *o, const char *s) { put(o, s, strlen(s)); }

static void put_uint(out_t *o, size_t v) {
    char tmp[24];
    size_t i = sizeof(tmp);

    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    put(o, tmp + i, sizeof(tmp) - i);
}

static size_t finish(const out_t *o) { return o->ok ? o->len : 0; }

size_t sy_handshake_response(char *buf, size_t cap, const char *accept28, const char *protocol, size_t protocol_len,
                             const char *extra_headers, size_t extra_len) {
    out_t o = {buf, cap, 0, 1};

    put_str(&o, "HTTP/1.1 101 Switching Protocols\r\n"
                "Upgrade: websocket\r\n"
                "Connection: Upgrade\r\n"
                "Sec-WebSocket-Accept: ");
    put(&o, accept28, SY_WS_ACCEPT_LEN);
    put_str(&o, "\r\n");
    if (protocol_len > 0) {
        put_str(&o, "Sec-WebSocket-Protocol: ");
        put(&o, protocol, protocol_len);
        put_str(&o, "\r\n");
    }
    put(&o, extra_headers, extra_len);
    put_str(&o, "\r\n");
    return finish(&o);
}

static const char *generic_reason(int status) {
    const char *r = sy_http_reason_phrase(status);

    if (r != NULL)
        return r;
    if (status < 300)
        return "Success";
    if (status < 400)
        return "Redirection";
    if (status < 500)
        return "Client Error";
    return "Server Error";
}

size_t sy_http_error_response_msg(char *buf, size_t cap, int status, const char *msg, size_t msg_len,
                                  const char *extra_headers, size_t extra_len) {
    out_t o = {buf, cap, 0, 1};
    const char *reason;
    int has_body;

    if (status < 200 || status > 599)
        return 0;
    reason = generic_reason(status);
    if (msg_len == 0) {
        msg = reason;
        msg_len = strlen(reason);
    }
    has_body = (status != 204 && status != 304);

    put_str(&o, "HTTP/1.1 ");
    put_uint(&o, (size_t)status);
    put_str(&o, " ");
    put_str(&o, reason);
    put_str(&o, "\r\n");
    if (status == 426) {
        put_str(&o, "Connection: close, Upgrade\r\n"
                    "Upgrade: websocket\r\n"
                    "Sec-WebSocket-Version: 13\r\n");
    } else {
        put_str(&o, "Connection: close\r\n");
    }
    if (status == 405)
        put_str(&o, "Allow: GET\r\n");
    if (has_body) {
        put_str(&o, "Content-Type: text/plain; charset=utf-8\r\n"
                    "Content-Length: ");
        put_uint(&o, msg_len + 1);
        put_str(&o, "\r\n");
    }
    put(&o, extra_headers, extra_len);
    put_str(&o, "\r\n");
    if (has_body) {
        put(&o, msg, msg_len);
        put_str(&o, "\n");
    }
    return finish(&o);
}

size_t sy_http_error_response(char *buf, size_t cap, int status, const char *extra_headers, size_t extra_len) {
    return sy_http_error_response_msg(buf, cap, status, NULL, 0, extra_headers, extra_len);
}

bool sy_http_request_keeps_alive(const sy_http_request_t *req) {
    if (sy_http_find_header(req, SY_HTTP_LIT("Transfer-Encoding"), NULL) != NULL ||
        sy_http_count_headers(req, SY_HTTP_LIT("Content-Length")) > 1 ||
        sy_http_header_has_token(req, SY_HTTP_LIT("Connection"), SY_HTTP_LIT("close")))
        return false;
    return req->minor_version == 1 ||
           sy_http_header_has_token(req, SY_HTTP_LIT("Connection"), SY_HTTP_LIT("keep-alive"));
}

/* The first needle[0..m) in hay[0..n), or NULL. */
static const char *find(const char *hay, size_t n, const char *needle, size_t m) {
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0)
            return hay + i;
    return NULL;
}

#define LIT(s) s, sizeof(s) - 1

size_t sy_http_keep_alive_response(const char *in, size_t len, bool http10, char *out, size_t cap) {
    const char *end = find(in, len, LIT("\r\n\r\n"));
    if (end == NULL || len < 12 || memcmp(in, "HTTP/1.", 7) != 0)
        return 0;
    size_t head = (size_t)(end - in) + 2; /* through the last line's CRLF */
    const char *line = find(in, head, LIT("\r\nConnection: close\r\n"));
    if (line == NULL || find(in, head, LIT("\r\nTransfer-Encoding:")) != NULL)
        return 0;
    bool no_body = in[9] == '1' || memcmp(in + 9, "204", 3) == 0 || memcmp(in + 9, "304", 3) == 0;
    if (!no_body && find(in, head, LIT("\r\nContent-Length:")) == NULL)
        return 0;
    static const char close_line[] = "Connection: close\r\n", keep_line[] = "Connection: keep-alive\r\n";
    size_t at = (size_t)(line - in) + 2, cut = sizeof(close_line) - 1;
    size_t put = http10 ? sizeof(keep_line) - 1 : 0, n = len - cut + put;
    if (n > cap)
        return 0;
    /* The tail first: when out is in, it moves down (dropped) or up
     * (HTTP/1.0) without touching the part before the line. */
    memmove(out + at + put, in + at + cut, len - at - cut);
    if (out != in)
        memcpy(out, in, at);
    memcpy(out + at, keep_line, put);
    return n;
}
