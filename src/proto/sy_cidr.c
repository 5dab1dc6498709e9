/* sy_cidr — see sy_cidr.h. */
#define _GNU_SOURCE
#include "proto/sy_cidr.h"

#include "base/sy_inet.h"

#include <string.h>

static const uint8_t V4_MAPPED[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* True when the first `bits` bits of a and b agree. */
static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits) {
    size_t whole = bits / 8;
    if (memcmp(a, b, whole) != 0)
        return false;
    unsigned rest = bits % 8;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

sy_err_t sy_cidr_parse(const char *s, size_t len, sy_cidr_t *out) {
    const char *slash = memchr(s, '/', len);
    size_t alen = slash ? (size_t)(slash - s) : len;
    char text[INET6_ADDRSTRLEN];
    if (alen == 0 || alen >= sizeof(text))
        return EINVAL;
    memcpy(text, s, alen);
    text[alen] = '\0';
    sy_cidr_t r = {0};
    if (inet_pton(AF_INET, text, r.addr) == 1)
        r.family = 4;
    else if (inet_pton(AF_INET6, text, r.addr) == 1)
        r.family = 6;
    else
        return EINVAL;
    unsigned max = r.family == 4 ? 32 : 128, bits = max;
    if (slash != NULL) {
        const char *b = slash + 1;
        size_t blen = len - alen - 1;
        if (blen == 0 || blen > 3 || (blen > 1 && b[0] == '0'))
            return EINVAL;
        bits = 0;
        for (size_t i = 0; i < blen; i++) {
            if (b[i] < '0' || b[i] > '9')
                return EINVAL;
            bits = bits * 10 + (unsigned)(b[i] - '0');
        }
        if (bits > max)
            return EINVAL;
    }
    /* Bits past the prefix do not count ("10.1.2.3/8" is 10.0.0.0/8). */
    for (unsigned i = bits; i < max; i++)
        r.addr[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
    if (r.family == 6 && bits >= 96 && memcmp(r.addr, V4_MAPPED, 12) == 0) {
        memmove(r.addr, r.addr + 12, 4);
        memset(r.addr + 4, 0, 12);
        r.family = 4;
        bits -= 96;
    }
    r.bits = (uint8_t)bits;
    *out = r;
    return 0;
}

bool sy_cidr_contains(const sy_cidr_t *r, unsigned family, const uint8_t *addr) {
    if (family == 6 && memcmp(addr, V4_MAPPED, 12) == 0) {
        family = 4;
        addr += 12;
    }
    return family == r->family && prefix_eq(addr, r->addr, r->bits);
}

bool sy_cidr_any(const sy_cidr_t *ranges, size_t n, unsigned family, const uint8_t *addr) {
    for (size_t i = 0; i < n; i++)
        if (sy_cidr_contains(&ranges[i], family, addr))
            return true;
    return false;
}
