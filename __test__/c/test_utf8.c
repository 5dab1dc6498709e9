/* Unit tests of src/sy_utf8: table 3-7 boundaries, overlongs, surrogates,
 * fail-fast position, splits at every byte, the 8-byte ASCII path, and
 * exhaustive 1-3 byte sequences against an arithmetic reference decoder.
 * Inputs sit against a guard page. */
#include "guard.h"
#include "check.h"

#include "proto/sy_utf8.h"

/* Reference: decode code points arithmetically; 1 iff s is complete and
 * valid UTF-8. Independent of the state machine under test. */
static int ref_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        uint8_t c = s[i];
        size_t n;
        uint32_t cp, min;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC0 && c < 0xE0) {
            n = 2; cp = c & 0x1Fu; min = 0x80;
        } else if (c >= 0xE0 && c < 0xF0) {
            n = 3; cp = c & 0x0Fu; min = 0x800;
        } else if (c >= 0xF0 && c < 0xF8) {
            n = 4; cp = c & 0x07u; min = 0x10000;
        } else {
            return 0;
        }
        if (len - i < n)
            return 0;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0u) != 0x80u)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu))
            return 0;
        i += n;
    }
    return 1;
}

static uint32_t run(const void *data, size_t len)
{
    guard_t g;
    const uint8_t *p = guard_place(&g, data, len);
    uint32_t st = sy_utf8_validate(SY_UTF8_ACCEPT, p, len);
    guard_release(&g);
    return st;
}

#define VALID(lit) CHECK_EQU(run(lit, sizeof(lit) - 1), SY_UTF8_ACCEPT)
#define INVALID(lit) CHECK_EQU(run(lit, sizeof(lit) - 1), SY_UTF8_REJECT)
/* A proper prefix of a valid sequence: neither accepted nor rejected. */
#define INCOMPLETE(lit)                                                     \
    do {                                                                    \
        uint32_t st_ = run(lit, sizeof(lit) - 1);                           \
        CHECK(st_ != SY_UTF8_ACCEPT && st_ != SY_UTF8_REJECT);              \
    } while (0)

static void test_boundaries(void)
{
    VALID("");
    VALID("hello, world");
    VALID("\x00");
    VALID("\x7f");
    VALID("\xc2\x80");             /* U+0080 */
    VALID("\xdf\xbf");             /* U+07FF */
    VALID("\xe0\xa0\x80");         /* U+0800 */
    VALID("\xed\x9f\xbf");         /* U+D7FF */
    VALID("\xee\x80\x80");         /* U+E000 */
    VALID("\xef\xbf\xbd");         /* U+FFFD */
    VALID("\xef\xbf\xbf");         /* U+FFFF (noncharacter, still valid) */
    VALID("\xf0\x90\x80\x80");     /* U+10000 */
    VALID("\xf3\xbf\xbf\xbf");     /* U+FFFFF */
    VALID("\xf4\x8f\xbf\xbf");     /* U+10FFFF */
    VALID("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"); /* "kosme" */

    INVALID("\x80");               /* lone continuation */
    INVALID("\xbf");
    INVALID("a\x80");
    INVALID("\xc0\x80");           /* overlong NUL */
    INVALID("\xc1\xbf");           /* overlong U+007F */
    INVALID("\xe0\x80\x80");       /* overlong 3-byte */
    INVALID("\xe0\x9f\xbf");       /* overlong U+07FF */
    INVALID("\xed\xa0\x80");       /* U+D800 */
    INVALID("\xed\xbf\xbf");       /* U+DFFF */
    INVALID("\xed\xa0\x80\xed\xb0\x80"); /* surrogate pair in CESU-8 */
    INVALID("\xf0\x80\x80\x80");   /* overlong 4-byte */
    INVALID("\xf0\x8f\xbf\xbf");   /* overlong U+FFFF */
    INVALID("\xf4\x90\x80\x80");   /* U+110000 */
    INVALID("\xf5\x80\x80\x80");
    INVALID("\xf8\x88\x80\x80\x80");
    INVALID("\xfc\x84\x80\x80\x80\x80");
    INVALID("\xfe");
    INVALID("\xff");
    INVALID("\xc2\x41");           /* lead without continuation */
    INVALID("\xe2\x82\x41");
    INVALID("\xf0\x90\x80\x41");
    INVALID("\xc2\xc2\x80");

    INCOMPLETE("\xc2");
    INCOMPLETE("\xe0");
    INCOMPLETE("\xe0\xa0");
    INCOMPLETE("\xed\x9f");
    INCOMPLETE("\xf0\x90\x80");
    INCOMPLETE("\xf4\x8f\xbf");
    INCOMPLETE("abc\xe2\x82");
}

/* The state turns to REJECT at exactly the first byte that no continuation
 * could make valid, and stays there. */
static void check_fail_at(const char *s, size_t len, size_t bad)
{
    guard_t g;
    const uint8_t *p = guard_place(&g, s, len);

    for (size_t k = 0; k <= len; k++) {
        uint32_t st = sy_utf8_validate(SY_UTF8_ACCEPT, p, k);
        if (k <= bad)
            CHECK(st != SY_UTF8_REJECT);
        else
            CHECK_EQU(st, SY_UTF8_REJECT);
    }
    guard_release(&g);
}

static void test_fail_fast(void)
{
    check_fail_at("ab\xe0\x80zz", 6, 3);         /* E0 80: rejected at 80 */
    check_fail_at("\xed\xa0\x80", 3, 1);
    check_fail_at("xx\xf4\x90\x80\x80", 6, 3);
    check_fail_at("\xf0\x8f", 2, 1);
    check_fail_at("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80"
                  "edited", 20, 12);                /* Autobahn 6.4.x shape */
    check_fail_at("\xc0", 1, 0);
    check_fail_at("abcdefghijklmnop\xff", 17, 16);
}

static void test_sticky_and_bad_state(void)
{
    CHECK_EQU(sy_utf8_validate(SY_UTF8_REJECT, (const uint8_t *)"a", 1),
              SY_UTF8_REJECT);
    CHECK_EQU(sy_utf8_validate(SY_UTF8_REJECT, NULL, 0), SY_UTF8_REJECT);
    CHECK_EQU(sy_utf8_validate(SY_UTF8_ACCEPT, NULL, 0), SY_UTF8_ACCEPT);
    CHECK_EQU(sy_utf8_validate(12345u, (const uint8_t *)"a", 1), SY_UTF8_REJECT);
    CHECK_EQU(sy_utf8_validate(0xFFFFFFFFu, NULL, 0), SY_UTF8_REJECT);
    CHECK(sy_utf8_is_valid((const uint8_t *)"ok", 2) == 1);
    CHECK(sy_utf8_is_valid((const uint8_t *)"\xc2", 1) == 0);
}

/* Fed in two or three pieces split anywhere, the result is the same as in
 * one piece. */
static void test_splits(void)
{
    static const char text[] =
        "ASCII run long enough for the word path "
        "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5 "
        "\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xe0\xa0\x80\xed\x9f\xbf"
        "more ascii after the multibyte part......";
    size_t len = sizeof(text) - 1;
    guard_t g;
    const uint8_t *p = guard_place(&g, text, len);
    unsigned long bad = 0;

    CHECK_EQU(sy_utf8_validate(SY_UTF8_ACCEPT, p, len), SY_UTF8_ACCEPT);
    for (size_t a = 0; a <= len; a++) {
        for (size_t b = a; b <= len; b++) {
            uint32_t st = sy_utf8_validate(SY_UTF8_ACCEPT, p, a);
            st = sy_utf8_validate(st, p + a, b - a);
            st = sy_utf8_validate(st, p + b, len - b);
            if (st != SY_UTF8_ACCEPT)
                bad++;
        }
    }
    CHECK_EQU(bad, 0);
    guard_release(&g);
}

/* One non-ASCII byte at every position of ASCII buffers of every length up
 * to 40, so it lands in each lane of the 8-byte path and in the tail. */
static void test_ascii_word_path(void)
{
    unsigned long bad = 0;

    for (size_t len = 1; len <= 40; len++) {
        for (size_t pos = 0; pos < len; pos++) {
            uint8_t buf[40];
            guard_t g;
            const uint8_t *p;
            uint32_t st;

            memset(buf, 'a', len);
            buf[pos] = 0x80; /* stray continuation: invalid */
            p = guard_place(&g, buf, len);
            st = sy_utf8_validate(SY_UTF8_ACCEPT, p, len);
            if (st != SY_UTF8_REJECT)
                bad++;
            /* Only the prefix before it is still fine. */
            if (sy_utf8_validate(SY_UTF8_ACCEPT, p, pos) != SY_UTF8_ACCEPT)
                bad++;
            guard_release(&g);

            buf[pos] = 0x7F;
            p = guard_place(&g, buf, len);
            if (sy_utf8_validate(SY_UTF8_ACCEPT, p, len) != SY_UTF8_ACCEPT)
                bad++;
            guard_release(&g);
        }
    }
    CHECK_EQU(bad, 0);
}

/* Every 1-, 2- and 3-byte string, and 4-byte strings over the interesting
 * byte values, against the reference. */
static void test_exhaustive(void)
{
    static const uint8_t tail[] = { 0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F,
                                    0xA0, 0xBF, 0xC0, 0xF4, 0xFF };
    unsigned long bad = 0, n = 0;
    uint8_t s[4];

    for (unsigned a = 0; a < 256; a++) {
        s[0] = (uint8_t)a;
        bad += (sy_utf8_is_valid(s, 1) != ref_valid(s, 1));
        for (unsigned b = 0; b < 256; b++) {
            s[1] = (uint8_t)b;
            bad += (sy_utf8_is_valid(s, 2) != ref_valid(s, 2));
            for (unsigned c = 0; c < 256; c++) {
                int want;
                s[2] = (uint8_t)c;
                want = ref_valid(s, 3);
                n += (unsigned long)want;
                bad += (sy_utf8_is_valid(s, 3) != want);
                /* Split after each byte too. */
                {
                    uint32_t st = sy_utf8_validate(SY_UTF8_ACCEPT, s, 1);
                    st = sy_utf8_validate(st, s + 1, 1);
                    st = sy_utf8_validate(st, s + 2, 1);
                    bad += ((st == SY_UTF8_ACCEPT) != want);
                }
                if (a >= 0xF0 && a <= 0xF4) {
                    for (size_t t = 0; t < sizeof(tail); t++) {
                        s[3] = tail[t];
                        bad += (sy_utf8_is_valid(s, 4) != ref_valid(s, 4));
                    }
                }
            }
        }
    }
    CHECK_EQU(bad, 0);
    /* Sanity of the reference itself: the number of valid 3-byte strings is
     * 128^3 (ASCII only) + 2 * 128 * 1920 (ASCII + 2-byte char, either
     * order) + 61440 (3-byte chars: 63488 BMP chars from U+0800 minus 2048
     * surrogates). */
    CHECK_EQU(n, 128UL * 128 * 128 + 2UL * 128 * 1920 + 61440UL);
}

int main(void)
{
    test_boundaries();
    test_fail_fast();
    test_sticky_and_bad_state();
    test_splits();
    test_ascii_word_path();
    test_exhaustive();
    return check_report("test_utf8");
}
