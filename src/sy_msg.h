/*
 * sy_msg — a reference-counted, ready-to-send WebSocket frame.
 *
 * publish() builds one: the server frame header (unmasked, so the same bytes
 * go to every subscriber) followed by the payload, copied once, in a single
 * allocation. Every subscriber's send queue holds a reference; the last
 * release frees it, on whichever thread that happens.
 *
 * Threads: any thread may create, ref and release.
 */
#ifndef SY_MSG_H
#define SY_MSG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sy_msg {
    atomic_uint_fast32_t refs;
    uint32_t payload_len32; /* payload bytes, saturated at UINT32_MAX (stats only) */
    size_t len;             /* bytes in data: header + payload */
    uint8_t data[];
} sy_msg_t;

/* A frame (fin=1) with `opcode` around a copy of payload[0..len). One
 * reference. NULL when out of memory. */
sy_msg_t *sy_msg_frame(unsigned opcode, const void *payload, size_t len);
/* A close frame with code and reason (reason truncated to fit 125 bytes,
 * at a UTF-8 boundary). code 0 makes an empty close frame. */
sy_msg_t *sy_msg_close(unsigned code, const char *reason, size_t reason_len);

/* Raw bytes (an HTTP response head), one reference. NULL when out of memory. */
sy_msg_t *sy_msg_raw(const void *bytes, size_t len);

/* Adds n references. */
void sy_msg_ref(sy_msg_t *m, uint32_t n);
/* Drops one reference; frees on the last. NULL is a no-op. */
void sy_msg_release(sy_msg_t *m);

#endif
