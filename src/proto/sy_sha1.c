/* SHA-1 as specified by FIPS 180-4 section 6.1. See sy_sha1.h. */
#include "proto/sy_sha1.h"

#include <string.h>

static uint32_t rotl32(uint32_t x, unsigned n) { return (x << n) | (x >> (32u - n)); }

static uint32_t load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Processes one 64-byte block. The message schedule is kept as a rolling
 * 16-word window instead of the full 80 words. */
static void sha1_block(uint32_t h[5], const uint8_t *blk) {
    uint32_t w[16];
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

    for (unsigned t = 0; t < 16; t++)
        w[t] = load_be32(blk + 4 * t);

    for (unsigned t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t >= 16) {
            uint32_t x = w[(t + 13) & 15] ^ w[(t + 8) & 15] ^ w[(t + 2) & 15] ^ w[t & 15];
            w[t & 15] = rotl32(x, 1);
        }
        if (t < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999u;
        } else if (t < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1u;
        } else if (t < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDCu;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6u;
        }
        uint32_t tmp = rotl32(a, 5) + f + e + k + w[t & 15];
        e = d;
        d = c;
        c = rotl32(b, 30);
        b = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void sy_sha1_init(sy_sha1_ctx_t *ctx) {
    ctx->h[0] = 0x67452301u;
    ctx->h[1] = 0xEFCDAB89u;
    ctx->h[2] = 0x98BADCFEu;
    ctx->h[3] = 0x10325476u;
    ctx->h[4] = 0xC3D2E1F0u;
    ctx->total_bytes = 0;
    ctx->block_len = 0;
}

void sy_sha1_update(sy_sha1_ctx_t *ctx, const void *data, size_t len) {
    const uint8_t *p = data;

    if (len == 0)
        return;
    ctx->total_bytes += (uint64_t)len;
    if (ctx->block_len > 0) {
        size_t take = SY_SHA1_BLOCK_LEN - ctx->block_len;
        if (take > len)
            take = len;
        memcpy(ctx->block + ctx->block_len, p, take);
        ctx->block_len += take;
        p += take;
        len -= take;
        if (ctx->block_len < SY_SHA1_BLOCK_LEN)
            return;
        sha1_block(ctx->h, ctx->block);
        ctx->block_len = 0;
    }
    while (len >= SY_SHA1_BLOCK_LEN) {
        sha1_block(ctx->h, p);
        p += SY_SHA1_BLOCK_LEN;
        len -= SY_SHA1_BLOCK_LEN;
    }
    if (len > 0) {
        memcpy(ctx->block, p, len);
        ctx->block_len = len;
    }
}

void sy_sha1_final(sy_sha1_ctx_t *ctx, uint8_t out[SY_SHA1_DIGEST_LEN]) {
    uint64_t bits = ctx->total_bytes * 8u;
    size_t n = ctx->block_len;

    /* Padding: 0x80, zeros up to 56 mod 64, then the bit length. */
    ctx->block[n++] = 0x80;
    if (n > 56) {
        memset(ctx->block + n, 0, SY_SHA1_BLOCK_LEN - n);
        sha1_block(ctx->h, ctx->block);
        n = 0;
    }
    memset(ctx->block + n, 0, 56 - n);
    store_be32(ctx->block + 56, (uint32_t)(bits >> 32));
    store_be32(ctx->block + 60, (uint32_t)bits);
    sha1_block(ctx->h, ctx->block);

    for (unsigned i = 0; i < 5; i++)
        store_be32(out + 4 * i, ctx->h[i]);
    memset(ctx, 0, sizeof(*ctx));
}

void sy_sha1(const void *data, size_t len, uint8_t out[SY_SHA1_DIGEST_LEN]) {
    sy_sha1_ctx_t ctx;

    sy_sha1_init(&ctx);
    sy_sha1_update(&ctx, data, len);
    sy_sha1_final(&ctx, out);
}
