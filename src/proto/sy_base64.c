/* Base64, RFC 4648 section 4. See sy_base64.h. */
#include "proto/sy_base64.h"

#include <limits.h>

static const char enc_alphabet[64] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of an alphabet character, or -1. */
static int dec_char(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

size_t sy_base64_encode(const uint8_t *in, size_t len, char *out, size_t cap) {
    size_t need, i, o = 0;

    if (len > (SIZE_MAX / 4) * 3 - 2)
        return 0;
    need = SY_BASE64_ENCODED_LEN(len);
    if (need > cap)
        return 0;
    for (i = 0; i + 3 <= len; i += 3) {
        uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | (uint32_t)in[i + 2];
        out[o++] = enc_alphabet[(v >> 18) & 63];
        out[o++] = enc_alphabet[(v >> 12) & 63];
        out[o++] = enc_alphabet[(v >> 6) & 63];
        out[o++] = enc_alphabet[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = enc_alphabet[(v >> 18) & 63];
        out[o++] = enc_alphabet[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (len - i == 2) {
        uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8);
        out[o++] = enc_alphabet[(v >> 18) & 63];
        out[o++] = enc_alphabet[(v >> 12) & 63];
        out[o++] = enc_alphabet[(v >> 6) & 63];
        out[o++] = '=';
    }
    return o;
}

/* Validates and optionally decodes (out may be NULL: count only).
 * Returns the decoded length, or -1. */
static long b64_run(const char *in, size_t len, uint8_t *out, size_t cap) {
    size_t pad = 0, groups, total, o = 0;

    if (len % 4 != 0)
        return -1;
    if (len == 0)
        return 0;
    if (in[len - 1] == '=')
        pad = (in[len - 2] == '=') ? 2 : 1;
    groups = len / 4;
    total = groups * 3 - pad;
    if (total > (size_t)LONG_MAX)
        return -1;
    if (out != NULL && total > cap)
        return -1;

    for (size_t g = 0; g < groups; g++) {
        const unsigned char *q = (const unsigned char *)in + 4 * g;
        int last = (g + 1 == groups);
        size_t nchars = (last) ? 4 - pad : 4;
        uint32_t v = 0;

        for (size_t k = 0; k < 4; k++) {
            int d;
            if (k >= nchars) {
                /* Padding position: already known to be '='. */
                v <<= 6;
                continue;
            }
            d = dec_char(q[k]);
            if (d < 0)
                return -1;
            v = (v << 6) | (uint32_t)d;
        }
        if (nchars == 4) {
            if (out != NULL) {
                out[o] = (uint8_t)(v >> 16);
                out[o + 1] = (uint8_t)(v >> 8);
                out[o + 2] = (uint8_t)v;
            }
            o += 3;
        } else if (nchars == 3) {
            if ((v & 0xFFu) != 0)
                return -1; /* non-canonical: unused bits set */
            if (out != NULL) {
                out[o] = (uint8_t)(v >> 16);
                out[o + 1] = (uint8_t)(v >> 8);
            }
            o += 2;
        } else {
            if ((v & 0xFFFFu) != 0)
                return -1;
            if (out != NULL)
                out[o] = (uint8_t)(v >> 16);
            o += 1;
        }
    }
    return (long)o;
}

sy_err_t sy_base64_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *out_len) {
    long n;

    /* Validate first so out is only written for valid input of known size. */
    n = b64_run(in, len, NULL, 0);
    if (n < 0)
        return EINVAL;
    if ((size_t)n > cap)
        return ENOSPC;
    if (n > 0)
        (void)b64_run(in, len, out, cap);
    *out_len = (size_t)n;
    return 0;
}
