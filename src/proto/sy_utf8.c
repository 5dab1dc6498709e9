/* Incremental UTF-8 validation. See sy_utf8.h.
 *
 * Internal states (besides ACCEPT = 0 and REJECT = 1) say what the next byte
 * must be. Only the byte after a lead byte has a range narrower than
 * 80..BF, and only for the leads E0, ED, F0 and F4 (table 3-7); each of
 * those gets its own state. */
#include "proto/sy_utf8.h"

#include <string.h>

enum {
    ST_ACCEPT = SY_UTF8_ACCEPT,
    ST_REJECT = SY_UTF8_REJECT,
    ST_CONT1,    /* one more byte 80..BF, then a character boundary */
    ST_CONT2,    /* two more bytes 80..BF */
    ST_CONT3,    /* three more bytes 80..BF */
    ST_AFTER_E0, /* A0..BF, then ST_CONT1 (excludes overlong 3-byte forms) */
    ST_AFTER_ED, /* 80..9F, then ST_CONT1 (excludes surrogates) */
    ST_AFTER_F0, /* 90..BF, then ST_CONT2 (excludes overlong 4-byte forms) */
    ST_AFTER_F4, /* 80..8F, then ST_CONT2 (excludes > U+10FFFF) */
    ST_LAST = ST_AFTER_F4
};

#define ASCII_MASK_8 UINT64_C(0x8080808080808080)

/* The state after a lead byte c >= 0x80 in the ACCEPT state. */
static uint32_t after_lead(uint8_t c) {
    if (c < 0xC2)
        return ST_REJECT; /* 80..BF stray continuation; C0, C1 overlong */
    if (c <= 0xDF)
        return ST_CONT1;
    if (c == 0xE0)
        return ST_AFTER_E0;
    if (c == 0xED)
        return ST_AFTER_ED;
    if (c <= 0xEF)
        return ST_CONT2;
    if (c == 0xF0)
        return ST_AFTER_F0;
    if (c <= 0xF3)
        return ST_CONT3;
    if (c == 0xF4)
        return ST_AFTER_F4;
    return ST_REJECT; /* F5..FF */
}

/* The state after byte c in a state expecting a continuation byte. */
static uint32_t after_cont(uint32_t state, uint8_t c) {
    uint8_t lo = 0x80, hi = 0xBF;
    uint32_t next;

    switch (state) {
    case ST_CONT1:
        next = ST_ACCEPT;
        break;
    case ST_CONT2:
        next = ST_CONT1;
        break;
    case ST_CONT3:
        next = ST_CONT2;
        break;
    case ST_AFTER_E0:
        lo = 0xA0;
        next = ST_CONT1;
        break;
    case ST_AFTER_ED:
        hi = 0x9F;
        next = ST_CONT1;
        break;
    case ST_AFTER_F0:
        lo = 0x90;
        next = ST_CONT2;
        break;
    case ST_AFTER_F4:
        hi = 0x8F;
        next = ST_CONT2;
        break;
    default:
        return ST_REJECT;
    }
    return (c >= lo && c <= hi) ? next : ST_REJECT;
}

uint32_t sy_utf8_validate(uint32_t state, const uint8_t *s, size_t len) {
    size_t i = 0;

    if (state > ST_LAST)
        return ST_REJECT;
    while (i < len && state != ST_REJECT) {
        if (state == ST_ACCEPT) {
            uint64_t w;
            while (len - i >= 8) {
                memcpy(&w, s + i, 8);
                if ((w & ASCII_MASK_8) != 0)
                    break;
                i += 8;
            }
            while (i < len && s[i] < 0x80)
                i++;
            if (i == len)
                break;
            state = after_lead(s[i++]);
        } else {
            state = after_cont(state, s[i++]);
        }
    }
    return state;
}

bool sy_utf8_is_valid(const uint8_t *s, size_t len) {
    return sy_utf8_validate(SY_UTF8_ACCEPT, s, len) == SY_UTF8_ACCEPT;
}
