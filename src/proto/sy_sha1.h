/*
 * sy_sha1 — SHA-1 (FIPS 180-4), used only to compute the
 * Sec-WebSocket-Accept value of the RFC 6455 handshake. SHA-1 is not used
 * here for anything that needs collision resistance.
 *
 * Threads: every function is pure (it touches only the memory it is given),
 * so any thread may call it; a context must not be shared between threads
 * without the caller's own synchronisation. Nothing allocates.
 *
 * Ownership: nothing is kept; the context and the digest are the caller's
 * memory.
 *
 * Errors: none: nothing here can fail.
 */
#ifndef SY_SHA1_H
#define SY_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define SY_SHA1_DIGEST_LEN 20
#define SY_SHA1_BLOCK_LEN 64

typedef struct {
    uint32_t h[5];                    /* chaining state */
    uint64_t total_bytes;             /* bytes hashed so far */
    uint8_t block[SY_SHA1_BLOCK_LEN]; /* pending partial block */
    size_t block_len;                 /* bytes used in block, always < 64 */
} sy_sha1_ctx_t;

/* Starts a new hash in *ctx. */
void sy_sha1_init(sy_sha1_ctx_t *ctx);

/* Hashes len more bytes of data (data may be NULL when len is 0). */
void sy_sha1_update(sy_sha1_ctx_t *ctx, const void *data, size_t len);

/* Writes the 20-byte digest to out. *ctx is then spent: call
 * sy_sha1_init() before reusing it. */
void sy_sha1_final(sy_sha1_ctx_t *ctx, uint8_t out[SY_SHA1_DIGEST_LEN]);

/* One-shot: out = SHA-1(data[0..len)). */
void sy_sha1(const void *data, size_t len, uint8_t out[SY_SHA1_DIGEST_LEN]);

#endif
