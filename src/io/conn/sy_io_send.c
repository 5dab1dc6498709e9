/* sy_io_send — an IO thread's dirty list written at the end of a turn: in
 * batches over io_uring (one io_uring_enter per batch of plain TCP writes),
 * or one connection at a time with send()/sendmsg(). See sy_io_struct.h. */
#include <string.h>

#include "base/sy_alloc.h"
#include "io/conn/sy_conn.h"
#include "io/conn/sy_io_send.h"
#include "io/loop/sy_io_struct.h"

void sy_io_sends_close(sy_io_t *io) {
    sy_io_sends_t *b = &io->sends;
    sy_uring_close(b->ring);
    sy_free(b->conns);
    sy_free(b->totals);
    sy_free(b->sends);
    sy_free(b->iov);
    memset(b, 0, sizeof(*b));
    atomic_store_explicit(&io->ctx.stats.io_uring, 0, memory_order_relaxed);
}

void sy_io_sends_open(sy_io_t *io) {
    sy_io_sends_t *b = &io->sends;
    if (!io->ctx.shared->try_uring || sy_uring_open(SY_IO_URING_ENTRIES, &b->ring) != 0)
        return;
    unsigned cap = sy_uring_capacity(b->ring);
    b->conns = sy_malloc(cap * sizeof(*b->conns));
    b->totals = sy_malloc(cap * sizeof(*b->totals));
    b->sends = sy_malloc(cap * sizeof(*b->sends));
    b->iov = sy_malloc(SY_IO_BATCH_IOV * sizeof(*b->iov));
    if (b->conns == NULL || b->totals == NULL || b->sends == NULL || b->iov == NULL) {
        sy_io_sends_close(io);
        return;
    }
    b->capacity = cap;
    atomic_store_explicit(&io->ctx.stats.io_uring, 1, memory_order_relaxed);
}

static sy_conn_t *pop_dirty(sy_io_t *io) {
    sy_conn_t *c = io->dirty;
    io->dirty = c->next_dirty;
    c->next_dirty = NULL;
    c->dirty = false;
    return c;
}

/* One connection the usual way (also what is not plain TCP writes). */
static void flush_one(sy_io_t *io, sy_conn_t *c) {
    if (c->broken)
        sy_conn_destroy(io, c, 1006);
    else if (c->state != SY_CONN_DEAD)
        sy_conn_flush(io, c);
}

/* Takes dirty connections off the list into a batch, one write each with
 * its queue's buffers, until the batch or its iovec array is full; those
 * that are not plain writes go to *others (still marked dirty, so nothing
 * adds them twice), flushed after the batch. Nothing runs meanwhile: no
 * connection can be marked dirty again and land twice in one batch.
 * Returns the batch's size. */
static unsigned gather_batch(sy_io_t *io, sy_conn_t **others) {
    sy_io_sends_t *b = &io->sends;
    unsigned n = 0;
    size_t used = 0;
    while (n < b->capacity && io->dirty != NULL) {
        sy_conn_t *c = io->dirty;
        if (!sy_conn_batchable(c)) {
            io->dirty = c->next_dirty;
            c->next_dirty = *others;
            *others = c;
            continue;
        }
        int want = c->outq.len < SY_STREAM_MAX_IOV ? (int)c->outq.len : SY_STREAM_MAX_IOV;
        if (used + (size_t)want > SY_IO_BATCH_IOV)
            break; /* the next batch */
        (void)pop_dirty(io);
        int got = sy_outq_iov(&c->outq, b->iov + used, want, &b->totals[n]);
        b->sends[n] = (sy_uring_send_t){.fd = c->stream.fd, .iovcnt = got, .iov = b->iov + used};
        b->conns[n++] = c;
        used += (size_t)got;
    }
    return n;
}

/* Sends a batch of n > 1 with one io_uring_enter and applies each result
 * as sy_conn_flush would. When the ring fails (the first batch under a
 * seccomp filter, say), the thread drops it for good: what was not sent
 * goes out with send()/sendmsg() now. */
static void send_batch(sy_io_t *io, unsigned n) {
    sy_io_sends_t *b = &io->sends;
    int rc = sy_uring_send(b->ring, b->sends, n);
    if (rc == 0) {
        sy_stat_inc(&io->ctx.stats.uring_batches);
        sy_stat_add(&io->ctx.stats.uring_sends, n);
    }
    for (unsigned i = 0; i < n; i++) {
        int32_t res = b->sends[i].res;
        if (res == SY_URING_NOT_SENT)
            sy_conn_flush(io, b->conns[i]);
        else
            sy_conn_wrote(io, b->conns[i], res, b->totals[i]);
    }
    if (rc != 0)
        sy_io_sends_close(io);
}

/* One batch: plain TCP writes through the ring (a lone one with send()),
 * then the connections that needed more than a write. */
static void flush_batch(sy_io_t *io) {
    sy_conn_t *others = NULL;
    unsigned n = gather_batch(io, &others);
    if (n == 1)
        sy_conn_flush(io, io->sends.conns[0]);
    else if (n > 1)
        send_batch(io, n);
    while (others != NULL) {
        sy_conn_t *c = others;
        others = c->next_dirty;
        c->next_dirty = NULL;
        c->dirty = false;
        flush_one(io, c);
    }
}

void sy_io_flush_dirty(sy_io_t *io) {
    while (io->dirty != NULL) {
        if (io->sends.ring != NULL)
            flush_batch(io);
        else
            flush_one(io, pop_dirty(io));
    }
}
