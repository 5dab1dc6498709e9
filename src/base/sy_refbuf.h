/*
 * sy_refbuf — a reference-counted, immutable byte buffer: what a send queue
 * holds.
 *
 * Most are WebSocket frames (proto/sy_ws_msg.h builds them): publish()
 * makes one with the server frame header (unmasked, so the same bytes go to
 * every subscriber) followed by the payload, copied once, in a single
 * allocation. Others are raw bytes (an HTTP response head). Every send
 * queue holding one has a reference; the last release frees it, on
 * whichever thread that happens. This module knows nothing of WebSocket:
 * a header is hlen opaque bytes before the body.
 *
 * A frame may carry its compressed twin (permessage-deflate, RFC 7692): a
 * second frame of the same message with RSV1 set, made at most once, by
 * the first IO thread that has a subscriber who negotiated it
 * (sy_deflate_twin), and owned by the plain frame (one reference, given
 * back when the plain frame is freed). Each subscriber's queue references
 * the one it negotiated.
 *
 * Threads: any thread may create, ref and release (the count is atomic).
 * The twin is set under the deflate state (sy_deflate_twin), not by this
 * module.
 *
 * Ownership: make and raw copy their bytes (alloc leaves them to the caller) into the new buffer and return
 * it with one reference, the caller's; each sy_refbuf_ref adds references
 * that their holders give back with sy_refbuf_release (never sy_free).
 * The frame owns its twin's one reference.
 *
 * Errors: make and raw return NULL when out of memory (make also for
 * hlen > 255); ref and release cannot fail.
 */
#ifndef SY_REFBUF_H
#define SY_REFBUF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a frame has a compressed twin (sy_refbuf_t.deflate). */
enum {
    SY_REFBUF_Z_NONE = 0, /* not to be compressed (raw bytes, control, small, or asked not to) */
    SY_REFBUF_Z_TODO,     /* may be compressed; no thread has asked yet */
    SY_REFBUF_Z_BUSY,     /* a thread is compressing it */
    SY_REFBUF_Z_DONE,     /* twin is final (NULL: it did not shrink, or no memory) */
};

typedef struct sy_refbuf {
    atomic_uint refs;
    uint8_t hlen;           /* frame header bytes (0: raw bytes) */
    atomic_uchar deflate;   /* SY_REFBUF_Z_* */
    struct sy_refbuf *twin; /* the compressed frame once deflate is DONE */
    size_t len;             /* bytes in data (a frame: header + payload) */
    uint8_t data[];
} sy_refbuf_t;

/* header[0..hlen) then a copy of body[0..len) in one allocation, one
 * reference, deflate as given (SY_REFBUF_Z_NONE or SY_REFBUF_Z_TODO).
 * NULL when out of memory or hlen > 255. */
sy_refbuf_t *sy_refbuf_make(const uint8_t *header, size_t hlen, const void *body, size_t len, unsigned deflate);

/* hlen + len bytes, not yet written, one reference, deflate as for make:
 * the caller fills data[0..hlen + len) before anyone else sees it. NULL
 * when out of memory or hlen > 255. */
sy_refbuf_t *sy_refbuf_alloc(size_t hlen, size_t len, unsigned deflate);

/* The bytes after the header (a frame's payload) and their length. */
static inline const uint8_t *sy_refbuf_payload(const sy_refbuf_t *m) { return m->data + m->hlen; }
static inline size_t sy_refbuf_payload_len(const sy_refbuf_t *m) { return m->len - m->hlen; }

/* Raw bytes (an HTTP response head), one reference. NULL when out of memory. */
sy_refbuf_t *sy_refbuf_raw(const void *bytes, size_t len);

/* Adds n references. */
void sy_refbuf_ref(sy_refbuf_t *m, uint32_t n);
/* Drops one reference; frees on the last (and then its twin's reference).
 * NULL is a no-op. */
void sy_refbuf_release(sy_refbuf_t *m);

#endif
