/* libFuzzer target: sy_proxy_parse over the first bytes of a connection
 * (the whole input), and sy_cidr_parse over the input as a range's text.
 *
 * Aborts when the parser's contract does not hold:
 *  - the answer is PARTIAL, a length within the input (at most 107 for
 *    v1, within max_len for v2), or a known SY_PROXY_E_* with a text;
 *  - the parser is incremental: every prefix of the input answers PARTIAL,
 *    or the same error as the whole input when it is an error, or the same
 *    length once the prefix holds the whole header; and bytes after a
 *    complete header do not change the answer;
 *  - a complete header's fields are consistent: keep means family NONE,
 *    otherwise family 4 or 6; the TLVs lie inside the header (v2) and walk
 *    to its end exactly; v1 carries none. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sy_cidr.h"
#include "proto/sy_proxy.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

#define MAX_LEN 4096 /* the listener's bound (io/sy_peer.h) */

/* data[0..n) copied to the heap at its exact size (ASan sees an over-read). */
static long parse_copy(const uint8_t *data, size_t n, size_t max, sy_proxy_t *p) {
    uint8_t *b = malloc(n ? n : 1);
    REQUIRE(b != NULL);
    if (n > 0)
        memcpy(b, data, n);
    long r = sy_proxy_parse(b, n, max, p);
    free(b);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sy_proxy_t p;
    long r = parse_copy(data, size, MAX_LEN, &p);
    REQUIRE(r >= SY_PROXY_E_TOO_LARGE);
    REQUIRE(r <= (long)size);
    if (r < 0)
        REQUIRE(strcmp(sy_proxy_error_str(r), "unknown error") != 0);
    if (r > 0) {
        REQUIRE(p.version == 1 || p.version == 2);
        if (p.version == 1) {
            REQUIRE(r <= SY_PROXY_V1_MAX);
            REQUIRE(p.tlv_off == 0 && p.tlv_len == 0);
            REQUIRE(data[r - 2] == '\r' && data[r - 1] == '\n');
        } else {
            REQUIRE(r <= MAX_LEN && r >= SY_PROXY_V2_FIXED);
            REQUIRE(p.tlv_len == 0 || p.tlv_off + p.tlv_len == (size_t)r);
            for (size_t at = p.tlv_off; at < p.tlv_off + p.tlv_len;) {
                REQUIRE(at + 3 <= (size_t)r);
                at += 3 + ((size_t)data[at + 1] << 8 | data[at + 2]);
                REQUIRE(at <= (size_t)r);
            }
        }
        if (p.keep)
            REQUIRE(p.family == SY_PROXY_FAM_NONE);
        else
            REQUIRE(p.family == SY_PROXY_FAM_INET4 || p.family == SY_PROXY_FAM_INET6);
    }
    /* Incremental: the prefixes (a sample of them for long inputs). */
    size_t step = size > 512 ? size / 64 : 1;
    for (size_t k = 0; k < size; k += step) {
        sy_proxy_t q;
        long rk = parse_copy(data, k, MAX_LEN, &q);
        if (r > 0 && k >= (size_t)r)
            REQUIRE(rk == r);
        else
            REQUIRE(rk == SY_PROXY_PARTIAL || (r < 0 && rk == r));
    }
    /* The whole format's bound: an answer within MAX_LEN does not change. */
    sy_proxy_t w;
    long rw = parse_copy(data, size, 0, &w);
    if (r != SY_PROXY_E_TOO_LARGE)
        REQUIRE(rw == r);

    /* The same bytes as a range's text. */
    if (size <= SY_CIDR_TEXT_MAX) {
        sy_cidr_t c;
        const char *t = (const char *)data;
        if (sy_cidr_parse(t, size, &c) == 0) {
            REQUIRE(c.family == 4 || c.family == 6);
            REQUIRE(c.bits <= (c.family == 4 ? 32 : 128));
            REQUIRE(sy_cidr_contains(&c, c.family, c.addr)); /* a range holds its own base */
        }
    }
    return 0;
}
