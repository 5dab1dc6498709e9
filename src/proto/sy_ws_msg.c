/* sy_ws_msg — see sy_ws_msg.h. */
#include "proto/sy_ws_msg.h"

#include <stdint.h>

#include "proto/sy_ws_frame.h"

sy_refbuf_t *sy_ws_msg_z(unsigned opcode, const void *payload, size_t len, bool compressible) {
    uint8_t header[10];
    size_t hlen = sy_ws_frame_header(header, 1, opcode, (uint64_t)len);
    return sy_refbuf_make(header, hlen, payload, len, compressible ? SY_REFBUF_Z_TODO : SY_REFBUF_Z_NONE);
}

sy_refbuf_t *sy_ws_msg(unsigned opcode, const void *payload, size_t len) {
    return sy_ws_msg_z(opcode, payload, len, false);
}

sy_refbuf_t *sy_ws_msg_rsv1(unsigned opcode, const void *payload, size_t payload_len) {
    uint8_t header[10];
    size_t hlen = sy_ws_frame_header(header, 1, opcode, (uint64_t)payload_len);
    header[0] |= 0x40; /* RSV1: a compressed message (RFC 7692 6) */
    return sy_refbuf_make(header, hlen, payload, payload_len, SY_REFBUF_Z_NONE);
}

sy_refbuf_t *sy_ws_msg_close(unsigned code, const char *reason, size_t reason_len) {
    uint8_t payload[SY_WS_MAX_CONTROL_PAYLOAD];
    size_t n = sy_ws_close_payload(payload, code, reason, reason_len);
    return sy_ws_msg(SY_WS_OP_CLOSE, payload, n);
}
