/*
 * sy_refbuf — a reference-counted, immutable byte buffer: what a send queue
 * holds.
 *
 * Most are WebSocket frames: publish() builds one with the server frame
 * header (unmasked, so the same bytes go to every subscriber) followed by
 * the payload, copied once, in a single allocation. Others are raw bytes (an
 * HTTP response head). Every send queue holding one has a reference; the
 * last release frees it, on whichever thread that happens.
 *
 * Threads: any thread may create, ref and release.
 */
#ifndef SY_REFBUF_H
#define SY_REFBUF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sy_refbuf {
    atomic_uint refs;
    size_t len; /* bytes in data (a frame: header + payload) */
    uint8_t data[];
} sy_refbuf_t;

/* A frame (fin=1) with `opcode` around a copy of payload[0..len). One
 * reference. NULL when out of memory. */
sy_refbuf_t *sy_refbuf_frame(unsigned opcode, const void *payload, size_t len);
/* A close frame with code and reason (reason truncated to fit 125 bytes,
 * at a UTF-8 boundary). code 0 makes an empty close frame. */
sy_refbuf_t *sy_refbuf_close(unsigned code, const char *reason, size_t reason_len);

/* Raw bytes (an HTTP response head), one reference. NULL when out of memory. */
sy_refbuf_t *sy_refbuf_raw(const void *bytes, size_t len);

/* Adds n references. */
void sy_refbuf_ref(sy_refbuf_t *m, uint32_t n);
/* Drops one reference; frees on the last. NULL is a no-op. */
void sy_refbuf_release(sy_refbuf_t *m);

#endif
