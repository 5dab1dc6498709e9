/* sy_refbuf — see sy_refbuf.h. */
#include "sy_refbuf.h"

#include <string.h>

#include "sy_alloc.h"
#include "sy_ws_frame.h"

sy_refbuf_t *sy_refbuf_frame(unsigned opcode, const void *payload, size_t len) {
    uint8_t header[10];
    size_t hlen = sy_ws_frame_header(header, 1, opcode, (uint64_t)len);
    if (len > SIZE_MAX - sizeof(sy_refbuf_t) - hlen)
        return NULL;
    sy_refbuf_t *m = sy_malloc(sizeof(*m) + hlen + len);
    if (m == NULL)
        return NULL;
    atomic_init(&m->refs, 1);
    m->len = hlen + len;
    memcpy(m->data, header, hlen);
    if (len > 0)
        memcpy(m->data + hlen, payload, len);
    return m;
}

sy_refbuf_t *sy_refbuf_raw(const void *bytes, size_t len) {
    if (len > SIZE_MAX - sizeof(sy_refbuf_t))
        return NULL;
    sy_refbuf_t *m = sy_malloc(sizeof(*m) + len);
    if (m == NULL)
        return NULL;
    atomic_init(&m->refs, 1);
    m->len = len;
    if (len > 0)
        memcpy(m->data, bytes, len);
    return m;
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
    if (m != NULL && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
        sy_free(m);
}
