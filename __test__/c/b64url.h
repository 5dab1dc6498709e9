/* b64url.h — base64url without padding (RFC 7515 §2), for the tests and
 * fuzz targets that build JWS tokens: the project's sy_base64_encode, then
 * the URL alphabet and no '='. Link src/proto/sy_base64.c.
 *
 * Threads: any. Ownership: out is the caller's, with room for the padded
 * encoding and a NUL (SY_BASE64_ENCODED_LEN(n) + 1). Errors: none. */
#ifndef SY_TEST_B64URL_H
#define SY_TEST_B64URL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/sy_base64.h"

/* p[0..n) in base64url at out, NUL-terminated; returns its length. */
static inline size_t b64url(const uint8_t *p, size_t n, char *out) {
    size_t len = sy_base64_encode(p, n, out, SY_BASE64_ENCODED_LEN(n));
    while (len > 0 && out[len - 1] == '=')
        len--;
    for (size_t i = 0; i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    out[len] = 0;
    return len;
}

#endif
