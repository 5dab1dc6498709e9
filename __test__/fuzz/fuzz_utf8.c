/* libFuzzer target: sy_utf8_validate fed in random splits, compared with an
 * independent reference validator written here; aborts on any mismatch.
 *
 * Input: byte 0 seeds the split sizes; the rest is the text.
 * The reference decodes code points arithmetically and, for each prefix,
 * asks whether some completion could still be valid: after the lead byte
 * and each continuation byte, the code points reachable by completing the
 * sequence form an interval, which must meet the valid range of that
 * sequence length minus the surrogates. That gives the exact byte where the
 * input becomes invalid and the character boundaries before it, which the
 * state machine must reproduce: REJECT exactly after that byte, ACCEPT
 * exactly on the boundaries before it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sy_utf8.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

/* Could a sequence of length n whose first bytes give the partial code
 * point cp, with rem continuation bytes still to come, be valid? */
static int viable(uint32_t cp, unsigned rem, unsigned n)
{
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    uint32_t lo = cp << (6 * rem);
    uint32_t hi = lo | ((UINT32_C(1) << (6 * rem)) - 1);
    uint32_t a = lo > min_cp[n] ? lo : min_cp[n];
    uint32_t b = hi < 0x10FFFF ? hi : 0x10FFFF;

    if (a > b)
        return 0;
    return !(a >= 0xD800 && b <= 0xDFFF);
}

/* Returns the index of the first byte after which no continuation can make
 * s valid (len if there is none), and marks in boundary[k] (k = 0..len)
 * whether the prefix s[0..k) is valid and complete. */
static size_t reference(const uint8_t *s, size_t len, uint8_t *boundary)
{
    size_t i = 0;

    memset(boundary, 0, len + 1);
    boundary[0] = 1;
    while (i < len) {
        uint8_t c = s[i];
        unsigned n;
        uint32_t cp;

        if (c < 0x80) {
            boundary[++i] = 1;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            n = 2; cp = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3; cp = c & 0x0Fu;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4; cp = c & 0x07u;
        } else {
            return i;
        }
        if (!viable(cp, n - 1, n))
            return i;
        for (unsigned k = 1; k < n; k++) {
            uint8_t d;
            if (i + k >= len)
                return len; /* valid so far, incomplete */
            d = s[i + k];
            if ((d & 0xC0) != 0x80)
                return i + k;
            cp = (cp << 6) | (d & 0x3Fu);
            if (!viable(cp, n - 1 - k, n))
                return i + k;
        }
        i += n;
        boundary[i] = 1;
    }
    return len;
}

static void expect(uint32_t st, size_t k, size_t bad, const uint8_t *boundary)
{
    if (k > bad) {
        REQUIRE(st == SY_UTF8_REJECT);
    } else {
        REQUIRE(st != SY_UTF8_REJECT);
        REQUIRE((st == SY_UTF8_ACCEPT) == (boundary[k] != 0));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *boundary, *copy;
    size_t bad, pos = 0;
    uint32_t st, seed;

    if (size < 1)
        return 0;
    seed = data[0] * 2654435761u + 1;
    data++;
    size--;

    boundary = malloc(size + 1);
    copy = malloc(size ? size : 1); /* exact size: ASan catches over-reads */
    REQUIRE(boundary != NULL && copy != NULL);
    if (size > 0)
        memcpy(copy, data, size);
    bad = reference(copy, size, boundary);

    /* One call over everything. */
    st = sy_utf8_validate(SY_UTF8_ACCEPT, copy, size);
    expect(st, size, bad, boundary);
    REQUIRE(sy_utf8_is_valid(copy, size) == (bad == size && boundary[size]));

    /* Random splits, checked at every split point. */
    st = SY_UTF8_ACCEPT;
    while (pos < size) {
        size_t n;
        seed = seed * 1103515245u + 12345u;
        n = (seed >> 16) % 20;
        if ((seed >> 8) & 1)
            n = (seed >> 16) % 70;
        if (n > size - pos)
            n = size - pos;
        st = sy_utf8_validate(st, copy + pos, n);
        pos += n;
        expect(st, pos, bad, boundary);
    }

    /* Byte by byte, checked after every byte. */
    st = SY_UTF8_ACCEPT;
    for (size_t k = 0; k < size; k++) {
        st = sy_utf8_validate(st, copy + k, 1);
        expect(st, k + 1, bad, boundary);
    }

    free(boundary);
    free(copy);
    return 0;
}
