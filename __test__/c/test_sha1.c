/* Unit tests of src/sy_sha1: RFC 3174 / FIPS 180 vectors, block-boundary
 * lengths (digests computed independently with Python's hashlib), and
 * incremental updates in every split. Inputs sit against a guard page. */
#include "guard.h"
#include "check.h"

#include "proto/sy_sha1.h"

static void to_hex(const uint8_t d[SY_SHA1_DIGEST_LEN], char out[41])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < SY_SHA1_DIGEST_LEN; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[40] = '\0';
}

static void check_oneshot(const void *data, size_t len, const char *hex)
{
    guard_t g;
    uint8_t d[SY_SHA1_DIGEST_LEN];
    char h[41];
    const void *p = guard_place(&g, data, len);

    sy_sha1(p, len, d);
    to_hex(d, h);
    CHECK_MEMSTR(h, 40, hex);
    guard_release(&g);
}

static void test_vectors(void)
{
    static const char abc448[] =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    static const char abc896[] =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
        "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

    check_oneshot("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    check_oneshot("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    check_oneshot(abc448, sizeof(abc448) - 1,
                  "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    check_oneshot(abc896, sizeof(abc896) - 1,
                  "a49b2446a02c645bf419f995b67091253a04a259");
    check_oneshot("The quick brown fox jumps over the lazy dog", 43,
                  "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

static void test_long_vectors(void)
{
    static const char pat[] =
        "0123456701234567012345670123456701234567012345670123456701234567";
    static uint8_t million[1000000];
    sy_sha1_ctx_t c;
    uint8_t d[SY_SHA1_DIGEST_LEN];
    char h[41];
    guard_t g;
    const uint8_t *p;

    /* RFC 3174 test 3: one million 'a', hashed in one call. */
    memset(million, 'a', sizeof(million));
    check_oneshot(million, sizeof(million),
                  "34aa973cd4c4daa4f61eeb2bdbad27316534016f");

    /* RFC 3174 test 4: the 64-byte pattern 10 times, in 10 updates. */
    p = guard_place(&g, pat, 64);
    sy_sha1_init(&c);
    for (int i = 0; i < 10; i++)
        sy_sha1_update(&c, p, 64);
    sy_sha1_final(&c, d);
    to_hex(d, h);
    CHECK_MEMSTR(h, 40, "dea356a2cddd90c7a7ecedc5ebb563934f460452");
    guard_release(&g);
}

static void test_block_boundaries(void)
{
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        { 55, "ddf57317ef34bfee3b6df83d359098930eb278bc" },
        { 56, "a0d492bb0fc889d0eca3bc137066ab6f4f74f369" },
        { 57, "11a02dcf95859677a62e75024067c22b165d890f" },
        { 63, "c55856749bef509bdfe6bfebfc7bf4e793e82132" },
        { 64, "bede92be29c3874e1b54ddc77988d606fc857a8e" },
        { 65, "b05a80522b053d6dc7e0a517d0e70212c7dad11f" },
        { 119, "504e27376a6e0f0dba8295b85cb25dc4dfa17d23" },
        { 120, "82134b02fb3f702491be9bed581eeab59334acb2" },
        { 128, "a09133e6730ffe899efb70204cb5646cd5dc24ee" },
    };
    uint8_t buf[128];

    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        check_oneshot(buf, v[i].n, v[i].hex);
}

/* Every split of a 200-byte input into two or three updates gives the
 * one-shot digest. */
static void test_incremental(void)
{
    uint8_t src[200], whole[SY_SHA1_DIGEST_LEN], part[SY_SHA1_DIGEST_LEN];
    guard_t g;
    const uint8_t *p;
    unsigned long mismatches = 0;

    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 31 + 11);
    p = guard_place(&g, src, sizeof(src));
    sy_sha1(p, sizeof(src), whole);
    for (size_t a = 0; a <= sizeof(src); a++) {
        for (size_t b = a; b <= sizeof(src); b += 13) {
            sy_sha1_ctx_t c;
            sy_sha1_init(&c);
            sy_sha1_update(&c, p, a);
            sy_sha1_update(&c, p + a, b - a);
            sy_sha1_update(&c, p + b, sizeof(src) - b);
            sy_sha1_final(&c, part);
            if (memcmp(part, whole, sizeof(whole)) != 0)
                mismatches++;
        }
    }
    CHECK_EQU(mismatches, 0);
    /* Zero-length update with a NULL pointer is allowed. */
    {
        sy_sha1_ctx_t c;
        sy_sha1_init(&c);
        sy_sha1_update(&c, NULL, 0);
        sy_sha1_update(&c, p, sizeof(src));
        sy_sha1_final(&c, part);
        CHECK(memcmp(part, whole, sizeof(whole)) == 0);
    }
    guard_release(&g);
}

int main(void)
{
    test_vectors();
    test_long_vectors();
    test_block_boundaries();
    test_incremental();
    return check_report("test_sha1");
}
