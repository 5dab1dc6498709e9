/* sy_events — see sy_events.h. */
#include "io/model/sy_events.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_buf.h"

#define SY_BATCH_MIN 4096
#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

static int reserve(sy_batch_t **pb, unsigned thread, size_t need) {
    sy_batch_t *b = *pb;
    if (b == NULL) {
        b = sy_calloc(1, sizeof(*b));
        if (b == NULL)
            return ENOMEM;
        b->thread = thread;
        *pb = b;
    }
    return sy_buf_reserve(&b->data, b->len, &b->cap, need, SY_BATCH_MIN);
}

/* Reserves an event of total payload bytes and writes its header; *off:
 * where its payload goes. The caller writes the payload, then commit(). */
static int begin(sy_batch_t **pb, unsigned thread, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code,
                 size_t total, size_t *off) {
    int rc = reserve(pb, thread, sizeof(sy_event_t) + ALIGN8(total));
    if (rc != 0)
        return rc;
    sy_batch_t *b = *pb;
    sy_event_t ev = {.conn = conn, .len = (uint32_t)total, .code = code, .type = type, .flags = flags};
    memcpy(b->data + b->len, &ev, sizeof(ev));
    *off = b->len + sizeof(ev);
    return 0;
}

static void commit(sy_batch_t *b, size_t total) {
    b->len += sizeof(sy_event_t) + ALIGN8(total);
    b->count++;
}

sy_err_t sy_batch_addv(sy_batch_t **pb, unsigned thread, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code,
                       const void *const *parts, const size_t *lens, size_t n) {
    size_t total = 0, off;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] > UINT32_MAX - total)
            return EMSGSIZE;
        total += lens[i];
    }
    int rc = begin(pb, thread, conn, type, flags, code, total, &off);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] > 0)
            memcpy((*pb)->data + off, parts[i], lens[i]);
        off += lens[i];
    }
    commit(*pb, total);
    return 0;
}

sy_err_t sy_batch_add_strings(sy_batch_t **pb, unsigned thread, uint64_t conn, uint8_t type, uint8_t flags,
                              uint16_t code, const char *const *strs, const size_t *lens, size_t n) {
    size_t total = 0, off;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] > UINT32_MAX - sizeof(uint32_t) - total)
            return EMSGSIZE;
        total += sizeof(uint32_t) + lens[i];
    }
    int rc = begin(pb, thread, conn, type, flags, code, total, &off);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        uint32_t len = (uint32_t)lens[i];
        memcpy((*pb)->data + off, &len, sizeof(len));
        off += sizeof(len);
        if (len > 0)
            memcpy((*pb)->data + off, strs[i], len);
        off += len;
    }
    commit(*pb, total);
    return 0;
}

sy_err_t sy_batch_add(sy_batch_t **pb, unsigned thread, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code,
                      const void *payload, size_t len) {
    const void *parts[1] = {payload};
    size_t lens[1] = {len};
    return sy_batch_addv(pb, thread, conn, type, flags, code, parts, lens, len > 0 ? 1 : 0);
}

bool sy_batch_next(const sy_batch_t *b, size_t *pos, sy_event_t *ev, const uint8_t **payload) {
    if (b == NULL || *pos + sizeof(sy_event_t) > b->len)
        return false;
    memcpy(ev, b->data + *pos, sizeof(*ev));
    *payload = b->data + *pos + sizeof(*ev);
    *pos += sizeof(*ev) + ALIGN8(ev->len);
    return true;
}

size_t sy_batch_bytes(const sy_batch_t *b) { return b == NULL ? 0 : b->cap + sizeof(*b); }

void sy_batch_free(sy_batch_t *b) {
    if (b == NULL)
        return;
    sy_free(b->data);
    sy_free(b);
}
