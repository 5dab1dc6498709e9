/*
 * sy_ws_msg — a server's WebSocket messages, built once as reference-counted
 * buffers (base/sy_refbuf.h) that every subscriber's send queue shares.
 *
 * Server frames are not masked (RFC 6455 5.1), so the bytes of one frame
 * are the same for every connection: a message is the frame header followed
 * by a copy of the payload, in one allocation.
 *
 * Threads: any (pure functions of their arguments plus one allocation).
 *
 * Ownership: the payload and reason are copied; every constructor returns
 * a new buffer with one reference, the caller's, given back with
 * sy_refbuf_release (or handed to a send queue, sy_outq_push).
 *
 * Errors: every constructor returns one reference, or NULL when out of
 * memory.
 */
#ifndef SY_WS_MSG_H
#define SY_WS_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/sy_refbuf.h"

/* A frame (fin=1) with opcode around a copy of payload[0..len).
 * compressible: it may get a compressed twin (SY_REFBUF_Z_TODO; see
 * io/sy_deflate.h), else SY_REFBUF_Z_NONE. */
sy_refbuf_t *sy_ws_msg_z(unsigned opcode, const void *payload, size_t len, bool compressible);
/* The same, never compressed. */
sy_refbuf_t *sy_ws_msg(unsigned opcode, const void *payload, size_t len);
/* A compressed data frame (RSV1 set, RFC 7692 6): header for payload_len
 * bytes, then payload[0..payload_len). */
sy_refbuf_t *sy_ws_msg_rsv1(unsigned opcode, const void *payload, size_t payload_len);
/* A close frame (sy_ws_close_payload: code 0 makes an empty one, the reason
 * is cut at a UTF-8 boundary to fit). */
sy_refbuf_t *sy_ws_msg_close(unsigned code, const char *reason, size_t reason_len);

#endif
