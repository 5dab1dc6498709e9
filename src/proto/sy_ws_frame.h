/*
 * sy_ws_frame — the RFC 6455 frame layer, stateless: frame header parsing
 * and building, payload (un)masking, the fragmentation rule and close frame
 * payloads.
 *
 * What this layer does not check, because it depends on configuration or on
 * state the caller owns: the maximum message/frame size (1009), UTF-8 of text
 * messages (use sy_utf8.h incrementally, 1007), and what to do after a close.
 *
 * Length encodings: a receiver here accepts non-minimal payload length
 * encodings (e.g. 5 bytes announced with the 16-bit form). RFC 6455 5.2 says
 * the minimal number of bytes MUST be used by senders but gives receivers no
 * duty to reject, and common servers accept them. The builders below always
 * write the minimal form.
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept: the parser fills the caller's sy_ws_frame_t,
 * sy_ws_unmask works in place, builders write to the caller's array,
 * sy_ws_close_parse's reason points into the caller's payload; error texts
 * are static.
 *
 * Errors: sy_ws_frame_parse returns a long (base/sy_errors.h rule 5): the
 * header's length, SY_WS_PARTIAL, or a negative SY_WS_E_*; sy_ws_frag_step
 * returns the new in_message (0 or 1) or a negative SY_WS_E_*;
 * sy_ws_close_parse returns 0 or an SY_WS_E_* (as an int);
 * sy_ws_error_close_code maps one to a close code; the builders return the
 * bytes written, 0 for arguments they refuse.
 */
#ifndef SY_WS_FRAME_H
#define SY_WS_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SY_WS_OP_CONTINUATION 0x0u
#define SY_WS_OP_TEXT 0x1u
#define SY_WS_OP_BINARY 0x2u
#define SY_WS_OP_CLOSE 0x8u
#define SY_WS_OP_PING 0x9u
#define SY_WS_OP_PONG 0xAu

/* Opcodes 0x8..0xF are control frames. */
#define SY_WS_OP_IS_CONTROL(op) (((op)&0x8u) != 0)

#define SY_WS_MAX_CONTROL_PAYLOAD 125u
#define SY_WS_MAX_HEADER_LEN 14u /* 2 + 8 (64-bit length) + 4 (mask) */

/* Results of the functions below: 0 is "need more bytes" for the parser
 * (and "OK, not inside a message" for sy_ws_frag_step); negative values are
 * errors naming the rule broken. */
#define SY_WS_PARTIAL 0
/* The errors: name, value, the rule broken, and the text sy_ws_error_str
 * gives (one list for the values and the texts). */
#define SY_WS_ERRORS_LIST(X)                                                                        \
    X(SY_WS_E_RSV, -1, "RSV bit set but no extension negotiated") /* RSV2/3, or RSV1 not allowed */ \
    X(SY_WS_E_OPCODE, -2, "reserved opcode")                      /* 3-7 or 0xB-0xF */              \
    X(SY_WS_E_UNMASKED, -3, "client frame not masked")            /* server role */                 \
    X(SY_WS_E_MASKED, -4, "server frame masked")                  /* client role */                 \
    X(SY_WS_E_CONTROL_TOO_LONG, -5, "control frame payload over 125 bytes")                         \
    X(SY_WS_E_CONTROL_FRAGMENTED, -6, "fragmented control frame") /* without FIN */                 \
    X(SY_WS_E_LENGTH_MSB, -7, "64-bit payload length with the high bit set")                        \
    X(SY_WS_E_UNEXPECTED_CONTINUATION, -8, "continuation frame with no message to continue")        \
    X(SY_WS_E_EXPECTED_CONTINUATION, -9, "new data frame inside a fragmented message")              \
    X(SY_WS_E_CLOSE_PAYLOAD, -10, "close frame payload of 1 byte")                                  \
    X(SY_WS_E_CLOSE_CODE, -11, "invalid close code") /* not valid on the wire */                    \
    X(SY_WS_E_CLOSE_UTF8, -12, "close reason is not valid UTF-8")                                   \
    X(SY_WS_E_RSV1_CONTROL, -13, "compressed (RSV1) control frame")                                 \
    X(SY_WS_E_RSV1_CONTINUATION, -14, "RSV1 set on a continuation frame") /* RFC 7692 6.1 */

enum {
#define SY_WS_E_ENUM_(e, v, text) e = (v),
    SY_WS_ERRORS_LIST(SY_WS_E_ENUM_)
#undef SY_WS_E_ENUM_
};

/* Parser roles and flags (the role argument of sy_ws_frame_parse). */
#define SY_WS_ROLE_SERVER 0u /* frames come from a client: must be masked */
#define SY_WS_ROLE_CLIENT 1u /* frames come from a server: must not be masked */
#define SY_WS_ALLOW_RSV1 \
    2u /* permessage-deflate negotiated (RFC 7692): RSV1
                                may mark the first frame of a data message */

typedef struct {
    uint8_t fin;          /* 1 if this is the final fragment */
    uint8_t rsv;          /* RSV1..RSV3 as bits 2..0: 4 (RSV1) or 0 on success */
    uint8_t opcode;       /* SY_WS_OP_* */
    uint8_t masked;       /* 1 if a masking key follows the length */
    uint8_t mask[4];      /* the masking key (zeros when not masked) */
    uint64_t payload_len; /* < 2^63; <= 125 for control frames */
    size_t header_len;    /* 2..14, also the return value of the parser */
} sy_ws_frame_t;

/* Parses the header of one frame at buf[0..len). role: SY_WS_ROLE_SERVER
 * (a server reading a client's frames: an unmasked frame is
 * SY_WS_E_UNMASKED) or SY_WS_ROLE_CLIENT (a client reading server frames:
 * a masked frame is SY_WS_E_MASKED), or'ed with SY_WS_ALLOW_RSV1 when
 * permessage-deflate was negotiated: RSV1 is then accepted on a text or
 * binary frame and reported in out->rsv (RSV1 on a control or continuation
 * frame stays an error, RFC 7692 6.1).
 * Returns the header length (2..14, > 0) and fills *out; SY_WS_PARTIAL (0)
 * if more bytes are needed; or a negative SY_WS_E_* error. *out is written
 * only on success. Never reads past len. The payload (out->payload_len
 * bytes) follows the header and is not looked at.
 * Errors are reported as soon as the bytes that break a rule are present
 * (before the whole header has arrived), checked in this order:
 * SY_WS_E_RSV, SY_WS_E_OPCODE, SY_WS_E_RSV1_CONTROL,
 * SY_WS_E_RSV1_CONTINUATION, SY_WS_E_CONTROL_FRAGMENTED (byte 0);
 * SY_WS_E_UNMASKED, SY_WS_E_CONTROL_TOO_LONG (byte 1);
 * SY_WS_E_LENGTH_MSB (byte 2). */
long sy_ws_frame_parse(const uint8_t *buf, size_t len, unsigned role, sy_ws_frame_t *out);

/* XORs data[0..len) with the masking key, in place. offset is the number of
 * payload bytes of this frame already unmasked by earlier calls, so a payload
 * split across reads unmasks correctly piece by piece. Masking and unmasking
 * are the same operation. Works 8 bytes at a time; data needs no alignment. */
void sy_ws_unmask(uint8_t *data, size_t len, const uint8_t key[4], size_t offset);

/* Writes an unmasked (server) frame header for a payload of payload_len
 * bytes, using the minimal length encoding. Returns its length: 2, 4 or 10.
 * Returns 0 (writing nothing) if opcode is not one of the six defined
 * opcodes, payload_len >= 2^63, or a control frame is not fin or has more
 * than 125 bytes. fin is 0 or non-zero. */
size_t sy_ws_frame_header(uint8_t out[10], int fin, unsigned opcode, uint64_t payload_len);

/* Same for a masked (client) frame with masking key key: returns 6, 8 or 14,
 * or 0 on the same conditions. The payload must then be masked with
 * sy_ws_unmask(payload, len, key, 0). */
size_t sy_ws_frame_header_masked(uint8_t out[14], int fin, unsigned opcode, uint64_t payload_len, const uint8_t key[4]);

/* The fragmentation rule (RFC 6455 5.4) as a step function. in_message is
 * non-zero while a fragmented text/binary message is open (its first frame
 * had FIN clear and its final continuation has not come yet). Given the
 * next frame's opcode and fin, returns the new in_message value: 1 (a
 * message is open after this frame) or 0 (none is); or a negative error:
 * SY_WS_E_UNEXPECTED_CONTINUATION (continuation with none open),
 * SY_WS_E_EXPECTED_CONTINUATION (text/binary while one is open),
 * SY_WS_E_OPCODE (reserved opcode). Control frames may come between
 * fragments and leave in_message unchanged. Both errors close with 1002. */
long sy_ws_frag_step(int in_message, unsigned opcode, int fin);

/* Parses the (already unmasked) payload of a close frame.
 * Returns 0 on success: *code is the status code (1005, "no status
 * received", when len is 0) and *reason and *reason_len the UTF-8 reason (length
 * 0 when absent; *reason then points at payload, which may be NULL).
 * Returns a negative error, leaving the outputs untouched:
 * SY_WS_E_CLOSE_PAYLOAD (len 1), SY_WS_E_CONTROL_TOO_LONG (len > 125),
 * SY_WS_E_CLOSE_CODE (code not valid on the wire, see below),
 * SY_WS_E_CLOSE_UTF8 (reason not valid UTF-8: close with 1007). */
int sy_ws_close_parse(const uint8_t *payload, size_t len, uint16_t *code, const uint8_t **reason, size_t *reason_len);

/* 1 if code may appear in a close frame on the wire, else 0.
 * Accepted: 1000-1003, 1007-1014 and 3000-4999. That includes the
 * IANA-registered 1012 (service restart), 1013 (try again later) and 1014
 * (bad gateway), as the `ws` package and browsers do. Rejected: < 1000,
 * 1004 (reserved), 1005 and 1006 (must never be sent), 1015 (TLS failure,
 * must never be sent), 1016-2999 (unassigned or reserved for future
 * extensions of the protocol), >= 5000. */
bool sy_ws_close_code_valid(unsigned code);

/* Writes a close payload (2-byte code, then reason) to out and returns its
 * length: 0 (an empty close body) when code is 0 or not valid on the wire,
 * else 2 + the reason, cut at a UTF-8 boundary to fit 125 bytes. The reason
 * is otherwise copied as is: the caller passes valid UTF-8. */
size_t sy_ws_close_payload(uint8_t out[SY_WS_MAX_CONTROL_PAYLOAD], unsigned code, const char *reason,
                           size_t reason_len);

/* The close code to send for an SY_WS_E_* error: 1007 for
 * SY_WS_E_CLOSE_UTF8, 1002 for every other negative value; 0 for a
 * non-negative value (not an error). */
unsigned sy_ws_error_close_code(long err);

/* A short, static, ASCII reason for an SY_WS_E_* error (at most 123 bytes,
 * so it fits in a close frame); "unknown error" for any other value. */
const char *sy_ws_error_str(long err);

#endif
