/* sy_refbuf — see sy_refbuf.h. */
#include "base/sy_refbuf.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "proto/sy_ws_frame.h"

/* One reference to header[0..hlen) then body[0..len); NULL when out of memory. */
static sy_refbuf_t *make(const uint8_t *header, size_t hlen, const void *body, size_t len, uint8_t deflate) {
    if (len > SIZE_MAX - sizeof(sy_refbuf_t) - hlen)
        return NULL;
    sy_refbuf_t *m = sy_malloc(sizeof(*m) + hlen + len);
    if (m == NULL)
        return NULL;
    atomic_init(&m->refs, 1);
    m->hlen = (uint8_t)hlen;
    atomic_init(&m->deflate, deflate);
    m->twin = NULL;
    m->len = hlen + len;
    if (hlen > 0)
        memcpy(m->data, header, hlen);
    if (len > 0)
        memcpy(m->data + hlen, body, len);
    return m;
}

sy_refbuf_t *sy_refbuf_frame_z(unsigned opcode, const void *payload, size_t len, bool compressible) {
    uint8_t header[10];
    size_t hlen = sy_ws_frame_header(header, 1, opcode, (uint64_t)len);
    return make(header, hlen, payload, len, compressible ? SY_REFBUF_Z_TODO : SY_REFBUF_Z_NONE);
}

sy_refbuf_t *sy_refbuf_frame(unsigned opcode, const void *payload, size_t len) {
    return sy_refbuf_frame_z(opcode, payload, len, false);
}

sy_refbuf_t *sy_refbuf_frame_rsv1(unsigned opcode, const void *payload, size_t payload_len) {
    uint8_t header[10];
    size_t hlen = sy_ws_frame_header(header, 1, opcode, (uint64_t)payload_len);
    header[0] |= 0x40; /* RSV1: a compressed message (RFC 7692 6) */
    return make(header, hlen, payload, payload_len, SY_REFBUF_Z_NONE);
}

sy_refbuf_t *sy_refbuf_raw(const void *bytes, size_t len) {
    return make(NULL, 0, bytes, len, SY_REFBUF_Z_NONE);
}

/* Length of the longest prefix of s[0..len) that ends on a UTF-8 boundary. */
static size_t utf8_cut(const char *s, size_t len) {
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
        len--;
    return len;
}

sy_refbuf_t *sy_refbuf_close(unsigned code, const char *reason, size_t reason_len) {
    uint8_t payload[SY_WS_MAX_CONTROL_PAYLOAD];
    size_t n = 0;
    if (code != 0) {
        if (reason_len > sizeof(payload) - 2)
            reason_len = utf8_cut(reason, sizeof(payload) - 2);
        payload[0] = (uint8_t)(code >> 8);
        payload[1] = (uint8_t)(code & 0xff);
        if (reason_len > 0)
            memcpy(payload + 2, reason, reason_len);
        n = 2 + reason_len;
    }
    return sy_refbuf_frame(SY_WS_OP_CLOSE, payload, n);
}

void sy_refbuf_ref(sy_refbuf_t *m, uint32_t n) {
    atomic_fetch_add_explicit(&m->refs, n, memory_order_relaxed);
}

void sy_refbuf_release(sy_refbuf_t *m) {
    if (m != NULL && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) {
        if (atomic_load_explicit(&m->deflate, memory_order_acquire) == SY_REFBUF_Z_DONE)
            sy_refbuf_release(m->twin);
        sy_free(m);
    }
}
