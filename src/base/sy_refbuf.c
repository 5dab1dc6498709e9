/* sy_refbuf — see sy_refbuf.h. */
#include "base/sy_refbuf.h"

#include <string.h>

#include "base/sy_alloc.h"

sy_refbuf_t *sy_refbuf_alloc(size_t hlen, size_t len, unsigned deflate) {
    if (hlen > UINT8_MAX || len > SIZE_MAX - sizeof(sy_refbuf_t) - hlen)
        return NULL;
    sy_refbuf_t *m = sy_malloc(sizeof(*m) + hlen + len);
    if (m == NULL)
        return NULL;
    atomic_init(&m->refs, 1);
    m->hlen = (uint8_t)hlen;
    atomic_init(&m->deflate, (unsigned char)deflate);
    m->twin = NULL;
    m->len = hlen + len;
    return m;
}

sy_refbuf_t *sy_refbuf_make(const uint8_t *header, size_t hlen, const void *body, size_t len, unsigned deflate) {
    sy_refbuf_t *m = sy_refbuf_alloc(hlen, len, deflate);
    if (m == NULL)
        return NULL;
    if (hlen > 0)
        memcpy(m->data, header, hlen);
    if (len > 0)
        memcpy(m->data + hlen, body, len);
    return m;
}

sy_refbuf_t *sy_refbuf_raw(const void *bytes, size_t len) {
    return sy_refbuf_make(NULL, 0, bytes, len, SY_REFBUF_Z_NONE);
}

void sy_refbuf_ref(sy_refbuf_t *m, uint32_t n) { atomic_fetch_add_explicit(&m->refs, n, memory_order_relaxed); }

void sy_refbuf_release(sy_refbuf_t *m) {
    if (m != NULL && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) {
        if (atomic_load_explicit(&m->deflate, memory_order_acquire) == SY_REFBUF_Z_DONE)
            sy_refbuf_release(m->twin);
        sy_free(m);
    }
}
