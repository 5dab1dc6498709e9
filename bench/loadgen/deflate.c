/*
 * permessage-deflate (RFC 7692), the client side loadgen needs with
 * --deflate: the offer, the check of the server's answer, and inflating a
 * whole compressed message with libdeflate.
 *
 * The offer is "permessage-deflate; client_no_context_takeover;
 * server_no_context_takeover", and an answer without
 * server_no_context_takeover is refused: then every message the server
 * sends stands alone and one decompressor per process (loadgen has one
 * thread) inflates any of them, with no state kept per connection. loadgen
 * never sends data messages, so client_no_context_takeover costs nothing.
 *
 * Inflating: a message is buffered whole (its frames' payloads), then the
 * RFC's tail 00 00 ff ff (7.2.2) and an empty final fixed-Huffman block
 * (03 00) are appended, so that a zlib-style producer's sync-flushed,
 * stripped stream ends in a final block, which libdeflate needs; a producer
 * whose stream already ends in a final block (symphony: libdeflate's output
 * plus one 00 byte) stops before the tail. The caller keeps LG_INFLATE_TAIL
 * bytes of room after the message for it.
 */
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "lg.h"
#include "proto/sy_http.h"

static const uint8_t TAIL[LG_INFLATE_TAIL] = {0x00, 0x00, 0xff, 0xff, 0x03, 0x00};

#define OUT_FIRST (64u * 1024u)

bool lg_inflate_init(lg_run_t *r)
{
    if (!r->opts->deflate)
        return true;
    r->inflater = libdeflate_alloc_decompressor();
    r->zout_cap = OUT_FIRST;
    r->zout = malloc(r->zout_cap);
    return r->inflater != NULL && r->zout != NULL;
}

void lg_inflate_free(lg_run_t *r)
{
    if (r->inflater != NULL)
        libdeflate_free_decompressor(r->inflater);
    r->inflater = NULL;
    free(r->zout);
    r->zout = NULL;
    r->zout_cap = 0;
}

/* A bigger output buffer, up to LG_MAX_INFLATED; false when at the cap. */
static bool grow_out(lg_run_t *r)
{
    if (r->zout_cap >= LG_MAX_INFLATED)
        return false;
    size_t cap = r->zout_cap * 2 > LG_MAX_INFLATED ? LG_MAX_INFLATED : r->zout_cap * 2;
    uint8_t *p = realloc(r->zout, cap);
    if (p == NULL)
        return false;
    r->zout = p;
    r->zout_cap = cap;
    return true;
}

const uint8_t *lg_inflate(lg_run_t *r, uint8_t *in, size_t len, size_t *out_len)
{
    memcpy(in + len, TAIL, sizeof(TAIL));
    for (;;) {
        size_t n = 0;
        enum libdeflate_result res = libdeflate_deflate_decompress(
            r->inflater, in, len + sizeof(TAIL), r->zout, r->zout_cap, &n);
        if (res == LIBDEFLATE_SUCCESS) {
            *out_len = n;
            return r->zout;
        }
        if (res != LIBDEFLATE_INSUFFICIENT_SPACE || !grow_out(r))
            return NULL;
    }
}

/* ---- the handshake ------------------------------------------------------ */

const char *lg_deflate_offer(void)
{
    return "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; "
           "server_no_context_takeover\r\n";
}

/* s[0..len) without surrounding spaces and tabs. */
static void trim(const char **s, size_t *len)
{
    while (*len > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

/* A window size value, 8..15, bare or quoted. */
static bool window_bits(const char *v, size_t len)
{
    if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
        v++;
        len -= 2;
    }
    if (len == 1 && v[0] == '8')
        return true;
    if (len == 1 && v[0] == '9')
        return true;
    return len == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5';
}

/* One parameter of the answer; sets *no_takeover for
 * server_no_context_takeover. False for anything RFC 7692 does not allow in
 * an answer to our offer. */
static bool answer_param(const char *p, size_t len, bool *no_takeover)
{
    const char *eq = memchr(p, '=', len);
    size_t nl = eq ? (size_t)(eq - p) : len;
    const char *v = eq ? eq + 1 : NULL;
    size_t vl = eq ? len - nl - 1 : 0;
    trim(&p, &nl);
    if (v != NULL)
        trim(&v, &vl);
    if (sy_http_case_eq(p, nl, "server_no_context_takeover", 26) && v == NULL) {
        *no_takeover = true;
        return true;
    }
    if (sy_http_case_eq(p, nl, "client_no_context_takeover", 26))
        return v == NULL;
    if (sy_http_case_eq(p, nl, "server_max_window_bits", 22) ||
        sy_http_case_eq(p, nl, "client_max_window_bits", 22))
        return v != NULL && window_bits(v, vl); /* any window inflates whole messages */
    return false;
}

lg_pmd_answer_t lg_deflate_answer(const char *v, size_t len)
{
    if (memchr(v, ',', len) != NULL)
        return LG_PMD_BAD; /* one extension offered, at most one accepted */
    const char *semi = memchr(v, ';', len);
    size_t nl = semi ? (size_t)(semi - v) : len;
    const char *name = v;
    trim(&name, &nl);
    if (!sy_http_case_eq(name, nl, "permessage-deflate", 18))
        return LG_PMD_BAD;
    bool no_takeover = false;
    while (semi != NULL) {
        const char *p = semi + 1;
        size_t left = len - (size_t)(p - v);
        semi = memchr(p, ';', left);
        size_t pl = semi ? (size_t)(semi - p) : left;
        if (!answer_param(p, pl, &no_takeover))
            return LG_PMD_BAD;
    }
    return no_takeover ? LG_PMD_OK : LG_PMD_CONTEXT;
}
