/* Unit tests of src/sy_base64: RFC 4648 section 10 vectors, strictness of
 * the decoder, capacity handling, round trips. Inputs sit against a guard
 * page. */
#include "guard.h"
#include <errno.h>

#include "check.h"

#include "proto/sy_base64.h"

static void check_encode(const char *in, const char *want)
{
    guard_t g;
    char out[64];
    size_t n, len = strlen(in);
    const uint8_t *p = guard_place(&g, in, len);

    n = sy_base64_encode(p, len, out, sizeof(out));
    CHECK_MEMSTR(out, n, want);
    CHECK_EQU(SY_BASE64_ENCODED_LEN(len), strlen(want));
    /* Exactly enough room works, one less writes nothing and returns 0. */
    if (len > 0) {
        char tight[64];
        memset(tight, '#', sizeof(tight));
        CHECK_EQU(sy_base64_encode(p, len, tight, strlen(want)), strlen(want));
        memset(tight, '#', sizeof(tight));
        CHECK_EQU(sy_base64_encode(p, len, tight, strlen(want) - 1), 0);
        CHECK(tight[0] == '#');
    }
    guard_release(&g);
}

/* want == NULL: the input must be rejected. */
static void check_decode(const char *in, const char *want)
{
    guard_t g;
    uint8_t out[64];
    size_t n = 999, len = strlen(in);
    const char *p = guard_place(&g, in, len);
    int rc = sy_base64_decode(p, len, out, sizeof(out), &n);

    if (want == NULL) {
        CHECK_EQ(rc, EINVAL);
        CHECK_EQU(n, 999); /* untouched */
        if (rc != EINVAL)
            fprintf(stderr, "  accepted invalid base64 \"%s\"\n", in);
    } else {
        CHECK_EQ(rc, 0);
        CHECK_MEMSTR(out, n, want);
        if (rc != 0)
            fprintf(stderr, "  rejected valid base64 \"%s\"\n", in);
    }
    guard_release(&g);
}

static void test_rfc4648(void)
{
    static const char *v[][2] = {
        { "", "" },           { "f", "Zg==" },       { "fo", "Zm8=" },
        { "foo", "Zm9v" },    { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
        { "foobar", "Zm9vYmFy" },
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        check_encode(v[i][0], v[i][1]);
        check_decode(v[i][1], v[i][0]);
    }
}

static void test_alphabet(void)
{
    static const uint8_t all[] = { 0xFB, 0xEF, 0xBE, 0xFF, 0xFF, 0xFF,
                                   0x00, 0x10, 0x83 };
    char out[16];
    uint8_t back[16];
    size_t n = sy_base64_encode(all, sizeof(all), out, sizeof(out)), m = 0;

    CHECK_MEMSTR(out, n, "++++////ABCD");
    CHECK_EQ(sy_base64_decode(out, n, back, sizeof(back), &m), 0);
    CHECK_EQU(m, sizeof(all));
    CHECK(memcmp(back, all, sizeof(all)) == 0);
}

static void test_strict(void)
{
    check_decode("Zg=", NULL);      /* length not a multiple of 4 */
    check_decode("Zg", NULL);       /* padding required */
    check_decode("Zm9v\n", NULL);   /* no whitespace */
    check_decode("Zm 9", NULL);
    check_decode("Zm9vYmFy====", NULL);
    check_decode("Zg=a", NULL);     /* '=' not final */
    check_decode("Z===", NULL);     /* three pads */
    check_decode("====", NULL);
    check_decode("=Zm9", NULL);
    check_decode("Zm=v", NULL);
    check_decode("Zg==Zg==", NULL); /* padding in the middle */
    check_decode("Zh==", NULL);     /* non-canonical: unused bits set */
    check_decode("Zm9=", NULL);
    check_decode("Zm8=", "fo");
    check_decode("Zm-v", NULL);     /* base64url alphabet is not accepted */
    check_decode("Zm_v", NULL);
    check_decode("Zm9\x80", NULL);
    check_decode("Zm9\xff", NULL);
    {
        /* A NUL inside the counted input is rejected, not a terminator. */
        guard_t g;
        uint8_t out[8];
        size_t n = 0;
        const char *p = guard_place(&g, "Zm\0v", 4);
        CHECK_EQ(sy_base64_decode(p, 4, out, sizeof(out), &n), EINVAL);
        guard_release(&g);
    }
}

static void test_capacity(void)
{
    guard_t g;
    uint8_t out[8];
    size_t n = 77;
    const char *p = guard_place(&g, "Zm9vYmFy", 8);

    memset(out, 0xAA, sizeof(out));
    CHECK_EQ(sy_base64_decode(p, 8, out, 5, &n), ENOSPC);
    CHECK_EQU(n, 77);
    CHECK(out[0] == 0xAA); /* nothing written on failure */
    CHECK_EQ(sy_base64_decode(p, 8, out, 6, &n), 0);
    CHECK_EQU(n, 6);
    CHECK(memcmp(out, "foobar", 6) == 0);
    guard_release(&g);
}

/* The Sec-WebSocket-Key shape: 16 bytes <-> 24 characters ending "==". */
static void test_ws_key(void)
{
    guard_t g;
    uint8_t out[20];
    size_t n = 0;
    const char *p = guard_str(&g, "dGhlIHNhbXBsZSBub25jZQ==");

    CHECK_EQ(sy_base64_decode(p, 24, out, sizeof(out), &n), 0);
    CHECK_EQU(n, 16);
    CHECK(memcmp(out, "the sample nonce", 16) == 0);
    guard_release(&g);
}

static void test_round_trip(void)
{
    uint8_t src[300], back[300];
    char enc[400];
    unsigned long bad = 0;

    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 151 + 7);
    for (size_t len = 0; len <= sizeof(src); len++) {
        guard_t g;
        size_t e = sy_base64_encode(src, len, enc, sizeof(enc)), d = 0;
        const char *p = guard_place(&g, enc, e);
        if (e != SY_BASE64_ENCODED_LEN(len) ||
            sy_base64_decode(p, e, back, sizeof(back), &d) != 0 || d != len ||
            (len > 0 && memcmp(back, src, len) != 0))
            bad++;
        guard_release(&g);
    }
    CHECK_EQU(bad, 0);
}

int main(void)
{
    test_rfc4648();
    test_alphabet();
    test_strict();
    test_capacity();
    test_ws_key();
    test_round_trip();
    return check_report("test_base64");
}
