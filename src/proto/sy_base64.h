/*
 * sy_base64 — base64 with the standard alphabet and '=' padding
 * (RFC 4648 section 4). The decoder is strict: it is also the validator of
 * the Sec-WebSocket-Key header.
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept; the output goes to the caller's buffer.
 *
 * Errors: sy_base64_decode returns 0, EINVAL (not valid base64) or ENOSPC
 * (cap too small); sy_base64_encode returns the characters written, 0 when
 * cap is too small.
 */
#ifndef SY_BASE64_H
#define SY_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

/* Characters needed to encode n bytes (padding included, no NUL).
 * Valid for n <= (SIZE_MAX / 4) * 3 - 2. */
#define SY_BASE64_ENCODED_LEN(n) ((((n) + 2) / 3) * 4)

/* Encodes in[0..len) into out. Writes exactly SY_BASE64_ENCODED_LEN(len)
 * characters and no terminating NUL.
 * Returns the number of characters written, or 0 if cap is too small (or
 * the result would not fit in a size_t); out is then left untouched.
 * Encoding 0 bytes returns 0 too, having written nothing. */
size_t sy_base64_encode(const uint8_t *in, size_t len, char *out, size_t cap);

/* Decodes in[0..len). Strict: len must be a multiple of 4; only the 64
 * alphabet characters are allowed, no whitespace, no line breaks; '=' only
 * as one or two final padding characters; and the bits that padding makes
 * unused must be zero (the encoding is canonical, so each byte string has
 * exactly one accepted encoding).
 * On success writes the bytes to out, stores their count in *out_len and
 * returns 0. Returns EINVAL if the input is not valid base64, ENOSPC if the
 * decoded bytes do not fit in cap; out and *out_len are then left untouched.
 * The empty string decodes to 0 bytes. */
sy_err_t sy_base64_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *out_len);

#endif
