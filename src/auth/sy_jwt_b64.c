/* sy_jwt_b64 — base64url without padding (RFC 7515 section 2, RFC 4648
 * section 5), strict: the 64 URL-safe characters only (no '=', no
 * whitespace), no length of the form 4n + 1, and the bits that the last
 * character leaves unused must be zero, so that each byte string has one
 * accepted encoding. See sy_jwt_int.h. */
#include "auth/sy_jwt_int.h"

/* A character's 6 bits, or 64 when it is not in the alphabet. */
static uint8_t b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return (uint8_t)(c - 'A');
    if (c >= 'a' && c <= 'z')
        return (uint8_t)(c - 'a' + 26);
    if (c >= '0' && c <= '9')
        return (uint8_t)(c - '0' + 52);
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return 64;
}

bool sy_jwt_b64url_alphabet(const char *in, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (b64_value((unsigned char)in[i]) == 64)
            return false;
    return true;
}

bool sy_jwt_b64url_decode(const char *in, size_t len, uint8_t *out, size_t *out_len) {
    if (len % 4 == 1)
        return false;
    size_t o = 0, i = 0;
    for (; i + 4 <= len; i += 4) {
        uint8_t a = b64_value((unsigned char)in[i]), b = b64_value((unsigned char)in[i + 1]);
        uint8_t c = b64_value((unsigned char)in[i + 2]), d = b64_value((unsigned char)in[i + 3]);
        if ((a | b | c | d) & 64)
            return false;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | d;
        out[o++] = (uint8_t)(v >> 16);
        out[o++] = (uint8_t)(v >> 8);
        out[o++] = (uint8_t)v;
    }
    size_t rest = len - i;
    if (rest > 0) {
        uint8_t a = b64_value((unsigned char)in[i]), b = b64_value((unsigned char)in[i + 1]);
        uint8_t c = rest == 3 ? b64_value((unsigned char)in[i + 2]) : 0;
        if ((a | b | c) & 64)
            return false;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6;
        /* 2 characters carry 1 byte (4 bits unused), 3 carry 2 (2 unused). */
        if (rest == 2 ? (v & 0xffff) != 0 : (v & 0xff) != 0)
            return false;
        out[o++] = (uint8_t)(v >> 16);
        if (rest == 3)
            out[o++] = (uint8_t)(v >> 8);
    }
    *out_len = o;
    return true;
}
