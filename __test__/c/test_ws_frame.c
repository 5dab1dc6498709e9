/* Unit tests of src/sy_ws_frame: header parsing (each length encoding,
 * each error, fail-fast on partial input, every prefix), unmasking in every
 * split against a byte-wise reference, header building round trips, the
 * fragmentation rule, close payloads and codes. Inputs sit against a guard
 * page. */
#include "guard.h"
#include "check.h"

#include "proto/sy_ws_frame.h"

static long parse(const void *data, size_t len, sy_ws_frame_t *f)
{
    guard_t g;
    const uint8_t *p = guard_place(&g, data, len);
    long rc = sy_ws_frame_parse(p, len, SY_WS_ROLE_SERVER, f);
    guard_release(&g);
    return rc;
}

/* Every proper prefix of a complete header is PARTIAL. */
static void check_prefixes_partial(const uint8_t *h, size_t hlen)
{
    for (size_t k = 0; k < hlen; k++) {
        sy_ws_frame_t f;
        CHECK_EQ(parse(h, k, &f), SY_WS_PARTIAL);
    }
}

static void test_lengths(void)
{
    sy_ws_frame_t f;
    const uint8_t mask[4] = { 0x37, 0xfa, 0x21, 0x3d };
    /* RFC 6455 5.7: masked "Hello" from a client. */
    const uint8_t hello[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                              0x7f, 0x9f, 0x4d, 0x51, 0x58 };
    const uint8_t h125[] = { 0x82, 0xFD, 1, 2, 3, 4 };
    const uint8_t h16[] = { 0x82, 0xFE, 0x01, 0x00, 1, 2, 3, 4 };
    const uint8_t h16max[] = { 0x02, 0xFE, 0xFF, 0xFF, 1, 2, 3, 4 };
    const uint8_t h64[] = { 0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0, 9, 8, 7, 6 };
    const uint8_t h64max[] = { 0x80, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF,
                               0xFF, 0xFF, 0xFF, 0xFF, 9, 8, 7, 6 };
    uint8_t payload[5];

    memset(&f, 0xEE, sizeof(f));
    CHECK_EQ(parse(hello, sizeof(hello), &f), 6);
    CHECK_EQU(f.fin, 1);
    CHECK_EQU(f.rsv, 0);
    CHECK_EQU(f.opcode, SY_WS_OP_TEXT);
    CHECK_EQU(f.masked, 1);
    CHECK(memcmp(f.mask, mask, 4) == 0);
    CHECK_EQU(f.payload_len, 5);
    CHECK_EQU(f.header_len, 6);
    memcpy(payload, hello + 6, 5);
    sy_ws_unmask(payload, 5, f.mask, 0);
    CHECK(memcmp(payload, "Hello", 5) == 0);
    check_prefixes_partial(hello, 6);

    CHECK_EQ(parse(h125, sizeof(h125), &f), 6);
    CHECK_EQU(f.payload_len, 125);
    check_prefixes_partial(h125, sizeof(h125));

    CHECK_EQ(parse(h16, sizeof(h16), &f), 8);
    CHECK_EQU(f.payload_len, 256);
    CHECK_EQU(f.opcode, SY_WS_OP_BINARY);
    CHECK(f.mask[0] == 1 && f.mask[3] == 4);
    check_prefixes_partial(h16, sizeof(h16));

    CHECK_EQ(parse(h16max, sizeof(h16max), &f), 8);
    CHECK_EQU(f.payload_len, 65535);
    CHECK_EQU(f.fin, 0);

    CHECK_EQ(parse(h64, sizeof(h64), &f), 14);
    CHECK_EQU(f.payload_len, 65536);
    CHECK(f.mask[0] == 9 && f.mask[3] == 6);
    check_prefixes_partial(h64, sizeof(h64));

    CHECK_EQ(parse(h64max, sizeof(h64max), &f), 14);
    CHECK_EQU(f.payload_len, UINT64_C(0x7FFFFFFFFFFFFFFF));
    CHECK_EQU(f.opcode, SY_WS_OP_CONTINUATION);
}

/* Non-minimal encodings are accepted (documented choice). */
static void test_non_minimal(void)
{
    sy_ws_frame_t f;
    const uint8_t n16[] = { 0x81, 0xFE, 0x00, 0x05, 1, 2, 3, 4 };
    const uint8_t n64[] = { 0x81, 0xFF, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4 };

    CHECK_EQ(parse(n16, sizeof(n16), &f), 8);
    CHECK_EQU(f.payload_len, 5);
    CHECK_EQ(parse(n64, sizeof(n64), &f), 14);
    CHECK_EQU(f.payload_len, 5);
}

static void test_errors(void)
{
    sy_ws_frame_t f;
    /* bytes, length to present, expected */
    static const struct {
        uint8_t b[14];
        size_t n;
        long want;
    } v[] = {
        { { 0xC1, 0x80 }, 2, SY_WS_E_RSV },        /* RSV1 */
        { { 0xA1, 0x80 }, 2, SY_WS_E_RSV },        /* RSV2 */
        { { 0x91, 0x80 }, 2, SY_WS_E_RSV },        /* RSV3 */
        { { 0xC1 }, 1, SY_WS_E_RSV },              /* fail fast: 1 byte */
        { { 0x83, 0x80 }, 2, SY_WS_E_OPCODE },
        { { 0x87 }, 1, SY_WS_E_OPCODE },
        { { 0x8B, 0x80 }, 2, SY_WS_E_OPCODE },
        { { 0x8F }, 1, SY_WS_E_OPCODE },
        { { 0x81, 0x05 }, 2, SY_WS_E_UNMASKED },
        { { 0x88, 0xFE, 0, 126, 1, 2, 3, 4 }, 8, SY_WS_E_CONTROL_TOO_LONG },
        { { 0x89, 0xFE }, 2, SY_WS_E_CONTROL_TOO_LONG }, /* fail fast */
        { { 0x8A, 0xFF }, 2, SY_WS_E_CONTROL_TOO_LONG },
        { { 0x08, 0x80 }, 2, SY_WS_E_CONTROL_FRAGMENTED },
        { { 0x09 }, 1, SY_WS_E_CONTROL_FRAGMENTED },
        { { 0x0A, 0x80 }, 2, SY_WS_E_CONTROL_FRAGMENTED },
        { { 0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4 }, 14,
          SY_WS_E_LENGTH_MSB },
        { { 0x82, 0xFF, 0x80 }, 3, SY_WS_E_LENGTH_MSB }, /* fail fast */
        { { 0x82, 0x7F, 0x80 }, 3, SY_WS_E_UNMASKED },   /* mask checked first */
        { { 0xF0 }, 1, SY_WS_E_RSV },                    /* RSV before opcode */
        { { 0x7F }, 1, SY_WS_E_RSV },
        { { 0x0B }, 1, SY_WS_E_OPCODE },                 /* opcode before FIN */
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        long rc;
        memset(&f, 0x5A, sizeof(f));
        rc = parse(v[i].b, v[i].n, &f);
        CHECK_EQ(rc, v[i].want);
        if (rc != v[i].want)
            fprintf(stderr, "  vector %zu\n", i);
        CHECK_EQU(f.payload_len, UINT64_C(0x5A5A5A5A5A5A5A5A)); /* untouched */
    }
    /* Close frame of 125 bytes is fine, and an empty buffer is partial. */
    {
        const uint8_t c125[] = { 0x88, 0xFD, 0, 0, 0, 0 };
        CHECK_EQ(parse(c125, sizeof(c125), &f), 6);
        CHECK_EQ(parse(NULL, 0, &f), SY_WS_PARTIAL);
    }
}

static void test_client_role(void)
{
    guard_t g;
    sy_ws_frame_t f;
    const uint8_t srv[] = { 0x81, 0x05, 'H', 'e', 'l', 'l', 'o' };
    const uint8_t masked[] = { 0x81, 0x85, 1, 2, 3, 4 };
    const uint8_t *p = guard_place(&g, srv, 2);

    CHECK_EQ(sy_ws_frame_parse(p, 2, SY_WS_ROLE_CLIENT, &f), 2);
    CHECK_EQU(f.masked, 0);
    CHECK_EQU(f.payload_len, 5);
    CHECK_EQ(sy_ws_frame_parse(p, 2, SY_WS_ROLE_SERVER, &f), SY_WS_E_UNMASKED);
    guard_release(&g);
    p = guard_place(&g, masked, sizeof(masked));
    CHECK_EQ(sy_ws_frame_parse(p, sizeof(masked), SY_WS_ROLE_CLIENT, &f),
             SY_WS_E_MASKED);
    guard_release(&g);
}

/* RSV1 with permessage-deflate negotiated (RFC 7692 6.1): allowed on the
 * first frame of a text or binary message only; RSV2/RSV3 never. */
static void test_rsv1(void)
{
    sy_ws_frame_t f;
    const unsigned z = SY_WS_ROLE_SERVER | SY_WS_ALLOW_RSV1;
    static const struct { uint8_t b0; long without, with; } v[] = {
        { 0xC1, SY_WS_E_RSV, 6 },                       /* text, fin */
        { 0x42, SY_WS_E_RSV, 6 },                       /* binary, first fragment */
        { 0xC0, SY_WS_E_RSV, SY_WS_E_RSV1_CONTINUATION },
        { 0x40, SY_WS_E_RSV, SY_WS_E_RSV1_CONTINUATION },
        { 0xC9, SY_WS_E_RSV, SY_WS_E_RSV1_CONTROL },    /* ping */
        { 0xC8, SY_WS_E_RSV, SY_WS_E_RSV1_CONTROL },    /* close */
        { 0xCA, SY_WS_E_RSV, SY_WS_E_RSV1_CONTROL },    /* pong */
        { 0xA1, SY_WS_E_RSV, SY_WS_E_RSV },             /* RSV2 */
        { 0x91, SY_WS_E_RSV, SY_WS_E_RSV },             /* RSV3 */
        { 0xE1, SY_WS_E_RSV, SY_WS_E_RSV },             /* RSV1+RSV2 */
        { 0xC3, SY_WS_E_RSV, SY_WS_E_OPCODE },          /* reserved opcode */
        { 0x81, 6, 6 },                                 /* plain text either way */
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        const uint8_t b[6] = { v[i].b0, 0x80, 1, 2, 3, 4 };
        CHECK_EQ(sy_ws_frame_parse(b, sizeof(b), SY_WS_ROLE_SERVER, &f), v[i].without);
        memset(&f, 0, sizeof(f));
        CHECK_EQ(sy_ws_frame_parse(b, sizeof(b), z, &f), v[i].with);
        if (v[i].with > 0)
            CHECK_EQU(f.rsv, (v[i].b0 & 0x40) ? 4u : 0u);
        /* Decided on the first byte alone (fail fast). */
        if (v[i].with < 0)
            CHECK_EQ(sy_ws_frame_parse(b, 1, z, &f), v[i].with);
    }
    CHECK_EQU(sy_ws_error_close_code(SY_WS_E_RSV1_CONTROL), 1002);
    CHECK_EQU(sy_ws_error_close_code(SY_WS_E_RSV1_CONTINUATION), 1002);
}

/* Unmasking in any two pieces equals byte-by-byte XOR. */
static void test_unmask(void)
{
    const uint8_t key[4] = { 0xA1, 0x02, 0xF3, 0x74 };
    uint8_t src[100];
    unsigned long bad = 0;

    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 13 + 1);
    for (size_t len = 0; len <= sizeof(src); len++) {
        for (size_t cut = 0; cut <= len; cut++) {
            guard_t g;
            uint8_t *p = guard_place(&g, src, len);
            sy_ws_unmask(p, cut, key, 0);
            sy_ws_unmask(p + cut, len - cut, key, cut);
            for (size_t i = 0; i < len; i++) {
                if (p[i] != (uint8_t)(src[i] ^ key[i % 4]))
                    bad++;
            }
            guard_release(&g);
        }
    }
    CHECK_EQU(bad, 0);
    /* An odd start address (unaligned) and a large offset. */
    {
        uint8_t buf[64 + 1];
        memcpy(buf + 1, src, 64);
        sy_ws_unmask(buf + 1, 64, key, (size_t)1 << 40 | 3);
        for (size_t i = 0; i < 64; i++)
            bad += (buf[1 + i] != (uint8_t)(src[i] ^ key[(i + 3) % 4]));
        CHECK_EQU(bad, 0);
    }
}

static void test_build(void)
{
    uint8_t h[14];
    const uint8_t key[4] = { 1, 2, 3, 4 };
    static const uint64_t lens[] = { 0, 1, 125, 126, 127, 65535, 65536,
                                     UINT64_C(1) << 32,
                                     UINT64_C(0x7FFFFFFFFFFFFFFF) };
    size_t n;

    n = sy_ws_frame_header(h, 1, SY_WS_OP_TEXT, 5);
    CHECK_EQU(n, 2);
    CHECK(h[0] == 0x81 && h[1] == 0x05);
    n = sy_ws_frame_header(h, 0, SY_WS_OP_BINARY, 126);
    CHECK_EQU(n, 4);
    CHECK(h[0] == 0x02 && h[1] == 126 && h[2] == 0 && h[3] == 126);
    n = sy_ws_frame_header(h, 1, SY_WS_OP_BINARY, 65536);
    CHECK_EQU(n, 10);
    CHECK(h[1] == 127 && h[2] == 0 && h[7] == 1 && h[8] == 0 && h[9] == 0);

    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (int fin = 0; fin <= 1; fin++) {
            guard_t g;
            sy_ws_frame_t f;
            const uint8_t *p;
            size_t hn = sy_ws_frame_header(h, fin, SY_WS_OP_BINARY, lens[i]);
            size_t want = lens[i] <= 125 ? 2 : lens[i] <= 65535 ? 4 : 10;

            CHECK_EQU(hn, want);
            p = guard_place(&g, h, hn);
            CHECK_EQ(sy_ws_frame_parse(p, hn, SY_WS_ROLE_CLIENT, &f), (long)hn);
            CHECK_EQU(f.payload_len, lens[i]);
            CHECK_EQU(f.fin, (unsigned)fin);
            guard_release(&g);

            hn = sy_ws_frame_header_masked(h, fin, SY_WS_OP_TEXT, lens[i], key);
            CHECK_EQU(hn, want + 4);
            p = guard_place(&g, h, hn);
            CHECK_EQ(sy_ws_frame_parse(p, hn, SY_WS_ROLE_SERVER, &f), (long)hn);
            CHECK_EQU(f.payload_len, lens[i]);
            CHECK(memcmp(f.mask, key, 4) == 0);
            CHECK_EQU(f.opcode, SY_WS_OP_TEXT);
            guard_release(&g);
        }
    }
    /* Refusals. */
    CHECK_EQU(sy_ws_frame_header(h, 1, 3, 0), 0);
    CHECK_EQU(sy_ws_frame_header(h, 1, 0x10, 0), 0);
    CHECK_EQU(sy_ws_frame_header(h, 1, SY_WS_OP_BINARY, UINT64_C(1) << 63), 0);
    CHECK_EQU(sy_ws_frame_header(h, 1, SY_WS_OP_PING, 126), 0);
    CHECK_EQU(sy_ws_frame_header(h, 0, SY_WS_OP_CLOSE, 2), 0);
    CHECK_EQU(sy_ws_frame_header(h, 1, SY_WS_OP_PONG, 125), 2);
    CHECK_EQU(sy_ws_frame_header_masked(h, 1, 0xB, 0, key), 0);
}

static void test_fragmentation(void)
{
    /* Single unfragmented messages. */
    CHECK_EQ(sy_ws_frag_step(0, SY_WS_OP_TEXT, 1), 0);
    CHECK_EQ(sy_ws_frag_step(0, SY_WS_OP_BINARY, 1), 0);
    /* Start, continue, end. */
    CHECK_EQ(sy_ws_frag_step(0, SY_WS_OP_TEXT, 0), 1);
    CHECK_EQ(sy_ws_frag_step(1, SY_WS_OP_CONTINUATION, 0), 1);
    CHECK_EQ(sy_ws_frag_step(1, SY_WS_OP_CONTINUATION, 1), 0);
    /* Control frames interleave and keep the state. */
    CHECK_EQ(sy_ws_frag_step(1, SY_WS_OP_PING, 1), 1);
    CHECK_EQ(sy_ws_frag_step(1, SY_WS_OP_PONG, 1), 1);
    CHECK_EQ(sy_ws_frag_step(1, SY_WS_OP_CLOSE, 1), 1);
    CHECK_EQ(sy_ws_frag_step(0, SY_WS_OP_PING, 1), 0);
    /* Violations. */
    CHECK_EQ(sy_ws_frag_step(0, SY_WS_OP_CONTINUATION, 1),
             SY_WS_E_UNEXPECTED_CONTINUATION);
    CHECK_EQ(sy_ws_frag_step(0, SY_WS_OP_CONTINUATION, 0),
             SY_WS_E_UNEXPECTED_CONTINUATION);
    CHECK_EQ(sy_ws_frag_step(1, SY_WS_OP_TEXT, 1), SY_WS_E_EXPECTED_CONTINUATION);
    CHECK_EQ(sy_ws_frag_step(1, SY_WS_OP_BINARY, 0), SY_WS_E_EXPECTED_CONTINUATION);
    CHECK_EQ(sy_ws_frag_step(0, 3, 1), SY_WS_E_OPCODE);
    CHECK_EQ(sy_ws_frag_step(1, 0xF, 1), SY_WS_E_OPCODE);
    CHECK_EQ(sy_ws_frag_step(0, 99, 1), SY_WS_E_OPCODE);
    CHECK_EQU(sy_ws_error_close_code(SY_WS_E_UNEXPECTED_CONTINUATION), 1002);
    CHECK_EQU(sy_ws_error_close_code(SY_WS_E_EXPECTED_CONTINUATION), 1002);
}

static int close_parse(const void *data, size_t len, uint16_t *code,
                       const uint8_t **reason, size_t *rlen, size_t *roff)
{
    guard_t g;
    const uint8_t *p = guard_place(&g, data, len);
    int rc = sy_ws_close_parse(p, len, code, reason, rlen);
    *roff = (rc == 0 && *reason != NULL) ? (size_t)(*reason - p) : 0;
    guard_release(&g);
    return rc;
}

static void test_close(void)
{
    uint16_t code = 7;
    const uint8_t *reason = NULL;
    size_t rlen = 99, roff = 0;
    int rc;

    rc = close_parse("", 0, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, 0);
    CHECK_EQU(code, 1005);
    CHECK_EQU(rlen, 0);

    code = 7;
    rc = close_parse("\x03", 1, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, SY_WS_E_CLOSE_PAYLOAD);
    CHECK_EQU(code, 7);
    CHECK_EQU(sy_ws_error_close_code(rc), 1002);

    rc = close_parse("\x03\xe8", 2, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, 0);
    CHECK_EQU(code, 1000);
    CHECK_EQU(rlen, 0);

    rc = close_parse("\x03\xe9going away", 12, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, 0);
    CHECK_EQU(code, 1001);
    CHECK_EQU(rlen, 10);
    CHECK_EQU(roff, 2);

    rc = close_parse("\x0f\xa0\xce\xba\xe1\xbd\xb9", 7, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, 0);
    CHECK_EQU(code, 4000);

    code = 7;
    rc = close_parse("\x03\xe8\xed\xa0\x80", 5, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, SY_WS_E_CLOSE_UTF8);
    CHECK_EQU(sy_ws_error_close_code(rc), 1007);
    rc = close_parse("\x03\xe8\xc2", 3, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, SY_WS_E_CLOSE_UTF8); /* truncated character */
    CHECK_EQU(code, 7);

    rc = close_parse("\x03\xed", 2, &code, &reason, &rlen, &roff); /* 1005 */
    CHECK_EQ(rc, SY_WS_E_CLOSE_CODE);
    CHECK_EQU(sy_ws_error_close_code(rc), 1002);
    rc = close_parse("\x00\x00", 2, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, SY_WS_E_CLOSE_CODE);
    /* Invalid code is reported before a bad reason. */
    rc = close_parse("\x03\xee\xff", 3, &code, &reason, &rlen, &roff);
    CHECK_EQ(rc, SY_WS_E_CLOSE_CODE);
    {
        uint8_t big[126];
        memset(big, 'a', sizeof(big));
        big[0] = 0x03;
        big[1] = 0xe8;
        rc = close_parse(big, 126, &code, &reason, &rlen, &roff);
        CHECK_EQ(rc, SY_WS_E_CONTROL_TOO_LONG);
        rc = close_parse(big, 125, &code, &reason, &rlen, &roff);
        CHECK_EQ(rc, 0);
        CHECK_EQU(rlen, 123);
    }
}

static void test_close_codes(void)
{
    /* Autobahn 7.7.x (valid) and 7.9.x (invalid) codes, plus the edges. */
    static const unsigned valid[] = { 1000, 1001, 1002, 1003, 1007, 1008,
                                      1009, 1010, 1011, 1012, 1013, 1014,
                                      3000, 3999, 4000, 4999 };
    static const unsigned invalid[] = { 0, 1, 999, 1004, 1005, 1006, 1015,
                                        1016, 1100, 2000, 2999, 5000, 65535 };
    unsigned long n_valid = 0;

    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
        CHECK(sy_ws_close_code_valid(valid[i]) == 1);
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
        CHECK(sy_ws_close_code_valid(invalid[i]) == 0);
    for (unsigned c = 0; c < 70000; c++)
        n_valid += (unsigned long)sy_ws_close_code_valid(c);
    CHECK_EQU(n_valid, 4 + 8 + 2000);
}

static void test_close_payload(void)
{
    uint8_t out[SY_WS_MAX_CONTROL_PAYLOAD];
    char reason[130];
    uint16_t code = 0;
    const uint8_t *r = NULL;
    size_t rlen = 0, n;

    n = sy_ws_close_payload(out, 1001, "bye", 3);
    CHECK_EQU(n, 5);
    CHECK(out[0] == 0x03 && out[1] == 0xE9 && memcmp(out + 2, "bye", 3) == 0);
    CHECK_EQ(sy_ws_close_parse(out, n, &code, &r, &rlen), 0);
    CHECK_EQU(code, 1001);
    CHECK_EQU(sy_ws_close_payload(out, 1000, NULL, 0), 2);
    /* code 0, or a code never sent on the wire: an empty close body */
    CHECK_EQU(sy_ws_close_payload(out, 0, "bye", 3), 0);
    CHECK_EQU(sy_ws_close_payload(out, 1005, NULL, 0), 0);
    CHECK_EQU(sy_ws_close_payload(out, 1006, "x", 1), 0);
    memset(reason, 'x', sizeof(reason));
    CHECK_EQU(sy_ws_close_payload(out, 1000, reason, 123), 125);
    /* too long: cut to 123 bytes */
    CHECK_EQU(sy_ws_close_payload(out, 1000, reason, 124), 125);
    /* ... at a UTF-8 boundary: a 2-byte character across byte 123 goes whole */
    reason[122] = (char)0xC3;
    reason[123] = (char)0xA9;
    n = sy_ws_close_payload(out, 1000, reason, 126);
    CHECK_EQU(n, 2 + 122);
    CHECK_EQ(sy_ws_close_parse(out, n, &code, &r, &rlen), 0);
}

static void test_error_strings(void)
{
    for (long e = SY_WS_E_RSV1_CONTINUATION; e <= -1; e++) {
        const char *s = sy_ws_error_str(e);
        CHECK(strcmp(s, "unknown error") != 0);
        CHECK(strlen(s) <= 123);
        CHECK(sy_ws_error_close_code(e) == (e == SY_WS_E_CLOSE_UTF8 ? 1007u : 1002u));
    }
    CHECK(strcmp(sy_ws_error_str(SY_WS_E_RSV1_CONTINUATION - 1), "unknown error") == 0);
    CHECK(strcmp(sy_ws_error_str(0), "unknown error") == 0);
    CHECK_EQU(sy_ws_error_close_code(0), 0);
    CHECK_EQU(sy_ws_error_close_code(6), 0);
    CHECK_EQU(sy_ws_error_close_code(-100), 1002);
}

int main(void)
{
    test_lengths();
    test_non_minimal();
    test_errors();
    test_client_role();
    test_rsv1();
    test_unmask();
    test_build();
    test_fragmentation();
    test_close();
    test_close_codes();
    test_close_payload();
    test_error_strings();
    return check_report("test_ws_frame");
}
