/* sy_outq — see sy_outq.h. */
#include "net/sy_outq.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base/sy_alloc.h"

#define SY_OUTQ_MIN_LG 3 /* 8 entries */

/* An own entry is marked in its ring cell by the pointer's low bit (a
 * refbuf is at least 8-byte aligned); at() gives the buffer either way. */
#define OWN_BIT ((uintptr_t)1)

static uint32_t cap_of(const sy_outq_t *q) { return q->lgcap ? (uint32_t)1 << q->lgcap : 0; }
static sy_refbuf_t **cell(const sy_outq_t *q, uint32_t i) { return &q->ring[(q->head + i) & (cap_of(q) - 1)]; }
static bool is_own(const sy_outq_t *q, uint32_t i) { return ((uintptr_t)*cell(q, i) & OWN_BIT) != 0; }
static sy_refbuf_t *at(const sy_outq_t *q, uint32_t i) { return (sy_refbuf_t *)((uintptr_t)*cell(q, i) & ~OWN_BIT); }

/* What an own entry holds: its allocation and its ring slot. */
static uint32_t own_cost(const sy_refbuf_t *b) { return (uint32_t)(sy_alloc_usable(b) + sizeof(sy_refbuf_t *)); }

/* Entry i leaves the queue: its own accounting, and the replaceable mark. */
static void forget(sy_outq_t *q, uint32_t i) {
    if (is_own(q, i))
        q->own -= own_cost(at(q, i));
    if (q->repl == i + 1)
        q->repl = 0;
}

static sy_err_t grow(sy_outq_t *q) {
    if (q->len == cap_of(q)) {
        uint8_t lg = q->lgcap ? q->lgcap + 1 : SY_OUTQ_MIN_LG;
        if (lg > 31)
            return ENOMEM;
        uint32_t cap = (uint32_t)1 << lg;
        sy_refbuf_t **ring = sy_malloc((size_t)cap * sizeof(*ring));
        if (ring == NULL)
            return ENOMEM;
        for (uint32_t i = 0; i < q->len; i++)
            ring[i] = *cell(q, i);
        sy_free(q->ring);
        q->ring = ring;
        q->lgcap = lg;
        q->head = 0;
    }
    return 0;
}

sy_err_t sy_outq_push(sy_outq_t *q, sy_refbuf_t *b) {
    if (grow(q) != 0)
        return ENOMEM;
    *cell(q, q->len) = b;
    q->len++;
    q->bytes += b->len;
    return 0;
}

sy_err_t sy_outq_push_own(sy_outq_t *q, sy_refbuf_t *b, bool replace, bool *replaced) {
    *replaced = false;
    uint32_t i = q->repl - 1;
    if (replace && q->repl > 0 && i < q->len && (i > 0 || q->off == 0)) {
        sy_refbuf_t *old = at(q, i);
        q->own = q->own - own_cost(old) + own_cost(b);
        q->bytes = q->bytes - old->len + b->len;
        *cell(q, i) = (sy_refbuf_t *)((uintptr_t)b | OWN_BIT);
        sy_refbuf_release(old);
        *replaced = true;
        return 0;
    }
    if (grow(q) != 0)
        return ENOMEM;
    *cell(q, q->len) = (sy_refbuf_t *)((uintptr_t)b | OWN_BIT);
    if (replace)
        q->repl = q->len + 1;
    q->len++;
    q->bytes += b->len;
    q->own += own_cost(b);
    return 0;
}

const sy_refbuf_t *sy_outq_replaceable(const sy_outq_t *q, uint32_t id) {
    uint32_t i = id - q->seq;
    if (i >= q->len || i < q->pinned || (i == 0 && q->off > 0) || is_own(q, i))
        return NULL;
    return at(q, i);
}

bool sy_outq_replace(sy_outq_t *q, uint32_t id, sy_refbuf_t *b) {
    if (sy_outq_replaceable(q, id) == NULL)
        return false;
    uint32_t i = id - q->seq;
    sy_refbuf_t *old = at(q, i);
    q->bytes = q->bytes - old->len + b->len;
    *cell(q, i) = b;
    sy_refbuf_release(old);
    return true;
}

void sy_outq_pin(sy_outq_t *q) { q->pinned = q->len < UINT16_MAX ? (uint16_t)q->len : UINT16_MAX; }

void sy_outq_clear(sy_outq_t *q, bool keep_head) {
    uint32_t keep = 0;
    if (keep_head) {
        keep = q->len > 0 && q->off > 0 ? 1 : 0;
        if (q->pinned > keep)
            keep = q->pinned < q->len ? q->pinned : q->len;
    }
    for (uint32_t i = keep; i < q->len; i++) {
        sy_refbuf_t *b = at(q, i);
        q->bytes -= b->len - (i == 0 ? q->off : 0);
        forget(q, i);
        sy_refbuf_release(b);
    }
    q->len = keep;
    if (keep == 0)
        q->off = 0;
    if (q->pinned > keep)
        q->pinned = keep;
}

int sy_outq_iov(const sy_outq_t *q, struct iovec *iov, int max, size_t *total) {
    int n = 0;
    *total = 0;
    for (uint32_t i = 0; i < q->len && n < max; i++) {
        sy_refbuf_t *b = at(q, i);
        size_t off = i == 0 ? q->off : 0;
        iov[n].iov_base = b->data + off;
        iov[n].iov_len = b->len - off;
        *total += iov[n].iov_len;
        n++;
    }
    return n;
}

size_t sy_outq_copy(const sy_outq_t *q, uint8_t *dst, size_t max) {
    size_t got = 0;
    for (uint32_t i = 0; i < q->len && got < max; i++) {
        sy_refbuf_t *b = at(q, i);
        size_t off = i == 0 ? q->off : 0, take = b->len - off;
        if (take > max - got)
            take = max - got;
        memcpy(dst + got, b->data + off, take);
        got += take;
    }
    return got;
}

const uint8_t *sy_outq_head(const sy_outq_t *q, size_t *len) {
    if (q->len == 0) {
        *len = 0;
        return NULL;
    }
    sy_refbuf_t *b = at(q, 0);
    *len = b->len - q->off;
    return b->data + q->off;
}

void sy_outq_consume(sy_outq_t *q, size_t n) {
    q->bytes -= n;
    while (n > 0) {
        sy_refbuf_t *b = at(q, 0);
        size_t rest = b->len - q->off;
        if (n < rest) {
            q->off += n;
            break;
        }
        n -= rest;
        q->off = 0;
        forget(q, 0);
        if (q->repl > 0)
            q->repl--; /* the entries move up one */
        q->head = (q->head + 1) & (cap_of(q) - 1);
        q->len--;
        q->seq++;
        if (q->pinned > 0)
            q->pinned--;
        sy_refbuf_release(b);
    }
}

void sy_outq_shrink(sy_outq_t *q) {
    if (q->len == 0 && q->ring != NULL) {
        sy_free(q->ring);
        q->ring = NULL;
        q->lgcap = 0;
        q->head = 0;
    }
}

void sy_outq_free(sy_outq_t *q) {
    sy_outq_clear(q, false);
    sy_free(q->ring);
    memset(q, 0, sizeof(*q));
}
