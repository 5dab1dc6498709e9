/* libFuzzer target: sy_http_parse_request, then sy_handshake_check and the
 * response writers on whatever parses.
 *
 * Input: byte 0 picks the header capacity and the limits; the rest is the
 * request bytes. Besides the sanitizers, it aborts when an invariant of the
 * parser's contract does not hold:
 *  - success: the head ends with CRLFCRLF within max_head_bytes, every
 *    pointer is inside it, names are tokens, values are trimmed and free of
 *    CR/LF/NUL, and every shorter prefix is PARTIAL;
 *  - PARTIAL only while len < max_head_bytes;
 *  - errors map to 400/414/431/505 and no prefix of an erroring input
 *    succeeds;
 *  - the handshake answers only 0/400/405/426/505, and an accepted one has a
 *    24-character key and writes a response that fits. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sy_handshake.h"
#include "proto/sy_http.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

static int inside(const char *p, size_t n, const char *base, size_t len)
{
    return p >= base && (size_t)(p - base) <= len && n <= len - (size_t)(p - base);
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static long parse(const char *b, size_t len, const sy_http_limits_t *lim,
                  sy_http_header_t *h, size_t cap, sy_http_request_t *req)
{
    req->headers = h;
    req->num_headers = cap;
    return sy_http_parse_request(b, len, lim, req);
}

static void check_handshake(const sy_http_request_t *req, const char *b,
                            size_t rc, uint8_t sel)
{
    sy_handshake_t hs;
    sy_handshake_iter_t it;
    const char *proto = NULL, *p;
    size_t proto_len = 0, n, count = 0;
    char out[1024];
    int status = sy_handshake_check(req, &hs);

    REQUIRE(status == 0 || status == 400 || status == 405 || status == 426 ||
            status == 505);
    REQUIRE((status == 0) == (hs.problem == NULL));
    if (hs.key != NULL)
        REQUIRE(inside(hs.key, hs.key_len, b, rc));
    if (hs.origin != NULL)
        REQUIRE(inside(hs.origin, hs.origin_len, b, rc));

    memset(&it, 0, sizeof(it));
    while (sy_handshake_next_protocol(req, &it, &p, &n)) {
        REQUIRE(n > 0 && inside(p, n, b, rc));
        if (count++ == 0) {
            proto = p;
            proto_len = n;
        }
    }
    if (status != 0) {
        size_t cap = (size_t)(sel % 7) * 40;
        char *heap = malloc(cap ? cap : 1);
        REQUIRE(heap != NULL);
        n = sy_http_error_response_msg(heap, cap, status, hs.problem,
                                       strlen(hs.problem), NULL, 0);
        REQUIRE(n <= cap);
        free(heap);
        n = sy_http_error_response(out, sizeof(out), status, b, rc > 64 ? 64 : rc);
        REQUIRE(n > 0);
        {
            /* Its kept form: exactly the close line dropped (or made
             * keep-alive), or none (the extra lines named a
             * Transfer-Encoding); in place when it shrinks. */
            char kept[1100];
            bool http10 = (sel & 1) != 0;
            size_t k = sy_http_keep_alive_response(out, n, http10, kept, sizeof(kept));
            REQUIRE(k == 0 || k == n - 19 + (http10 ? 24 : 0));
            k = sy_http_keep_alive_response(out, n, false, out, n);
            REQUIRE(k == 0 || k == n - 19);
        }
        return;
    }
    REQUIRE(count == hs.num_protocols);
    REQUIRE(hs.key_len == SY_WS_KEY_LEN && hs.version_len == 2);
    {
        char accept[SY_WS_ACCEPT_LEN];
        sy_ws_accept_key(hs.key, hs.key_len, accept);
        /* The status line and three headers are 127 bytes; a protocol adds
         * its header line. The response is written whole, or not at all
         * when it does not fit (a long offer must not overrun). */
        size_t need = 127 + (proto_len > 0 ? 26 + proto_len : 0) + 2;
        n = sy_handshake_response(out, sizeof(out), accept, proto, proto_len,
                                  NULL, 0);
        if (need > sizeof(out)) {
            REQUIRE(n == 0);
        } else {
            REQUIRE(n == need);
            REQUIRE(memcmp(out + n - 4, "\r\n\r\n", 4) == 0);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t caps[8] = { 0, 1, 2, 4, 8, 16, 64, 100 };
    sy_http_header_t h[100], h2[100];
    sy_http_request_t req, req2;
    sy_http_limits_t lim, *limp = &lim;
    size_t cap, max_head;
    const char *b;
    long rc;
    uint8_t sel;

    if (size < 1)
        return 0;
    sel = data[0];
    b = (const char *)data + 1;
    size--;

    cap = caps[sel & 7];
    memset(&lim, 0, sizeof(lim));
    switch ((sel >> 3) & 3) {
    case 0: limp = NULL; break;
    case 1: lim.max_head_bytes = 64 + (sel >> 5) * 16; break;
    case 2: lim.max_line_bytes = 16 + (sel >> 5) * 8; lim.max_headers = 3; break;
    default: break;
    }
    max_head = (limp && lim.max_head_bytes) ? lim.max_head_bytes
                                            : SY_HTTP_DEFAULT_MAX_HEAD_BYTES;

    rc = parse(b, size, limp, h, cap, &req);

    /* The query's parameters: every value inside the input, after a '?' and
     * before any '#', and the walk ends. */
    {
        const char *v;
        size_t vl, pos = 0, steps = 0, nlen = size > 0 ? (size_t)(sel >> 6) + 1 : 1;
        const char *hash = memchr(b, '#', size);
        while (nlen <= size && sy_http_query_next(b, size, b, nlen, &pos, &v, &vl)) {
            REQUIRE(inside(v, vl, b, size));
            REQUIRE(hash == NULL || v + vl <= hash);
            REQUIRE(++steps <= size);
        }
    }

    if (rc > 0) {
        size_t r = (size_t)rc;
        REQUIRE(r <= size && r <= max_head && r >= 16);
        REQUIRE(memcmp(b + r - 4, "\r\n\r\n", 4) == 0);
        REQUIRE(req.minor_version == 0 || req.minor_version == 1);
        REQUIRE(req.headers == h && req.num_headers <= cap);
        REQUIRE(req.method_len > 0 && inside(req.method, req.method_len, b, r));
        REQUIRE(sy_http_is_token(req.method, req.method_len));
        REQUIRE(req.target_len > 0 && inside(req.target, req.target_len, b, r));
        for (size_t i = 0; i < req.num_headers; i++) {
            const sy_http_header_t *x = &h[i];
            REQUIRE(inside(x->name, x->name_len, b, r));
            REQUIRE(sy_http_is_token(x->name, x->name_len));
            REQUIRE(inside(x->value, x->value_len, b, r));
            if (x->value_len > 0) {
                REQUIRE(!is_ows(x->value[0]));
                REQUIRE(!is_ows(x->value[x->value_len - 1]));
            }
            for (size_t k = 0; k < x->value_len; k++)
                REQUIRE(x->value[k] != '\r' && x->value[k] != '\n' &&
                        x->value[k] != '\0');
        }
        /* Shorter prefixes are PARTIAL; the same buffer parses the same. */
        REQUIRE(parse(b, r - 1, limp, h2, cap, &req2) == SY_HTTP_PARTIAL);
        REQUIRE(req2.num_headers == cap);
        REQUIRE(parse(b, r / 2, limp, h2, cap, &req2) == SY_HTTP_PARTIAL);
        REQUIRE(parse(b, size, limp, h2, cap, &req2) == rc);
        REQUIRE(req2.num_headers == req.num_headers);
        check_handshake(&req, b, r, sel);
        /* Kept alive only with a framing both sides read the same. */
        if (sy_http_request_keeps_alive(&req))
            REQUIRE(sy_http_find_header(&req, SY_HTTP_LIT("Transfer-Encoding"), NULL) == NULL &&
                    sy_http_count_headers(&req, SY_HTTP_LIT("Content-Length")) <= 1);
        {
            /* The input as a response: its kept form stays in bounds. */
            size_t kc = (size_t)(sel >> 3) * 8;
            char *heap = malloc(kc ? kc : 1);
            REQUIRE(heap != NULL);
            REQUIRE(sy_http_keep_alive_response(b, r, (sel & 2) != 0, heap, kc) <= kc);
            free(heap);
        }
    } else if (rc == SY_HTTP_PARTIAL) {
        REQUIRE(size < max_head);
        REQUIRE(req.num_headers == cap);
    } else {
        int st = sy_http_error_status(rc);
        REQUIRE(st == 400 || st == 414 || st == 431 || st == 505);
        REQUIRE(strcmp(sy_http_error_str(rc), "unknown error") != 0);
        REQUIRE(req.num_headers == cap);
        /* No prefix of an erroring input succeeds. */
        REQUIRE(parse(b, size / 2, limp, h2, cap, &req2) <= 0);
        if (size > 0)
            REQUIRE(parse(b, size - 1, limp, h2, cap, &req2) <= 0);
    }
    return 0;
}
