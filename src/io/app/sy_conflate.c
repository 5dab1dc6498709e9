/* sy_conflate — see sy_conflate.h. */
#include "io/app/sy_conflate.h"

#include "io/loop/sy_io_thread.h"
#include "net/sy_outq.h"

/* c's subscription to t (NULL: none, which a publish walking t's
 * subscribers does not meet). */
static sy_sub_t *sub_of(sy_conn_t *c, const sy_topic_t *t) {
    for (uint32_t i = 0; i < c->nsubs; i++)
        if (c->subs[i].topic == t)
            return &c->subs[i];
    return NULL;
}

/* Bytes still to be written: queued, or held by the transport. */
static size_t pending(const sy_conn_t *c) { return sy_outq_bytes(&c->outq) + sy_stream_held(&c->stream); }

/* Past the bound: closed as 'close' closes a slow consumer. */
static bool close_slow(sy_io_t *io, sy_conn_t *c) {
    sy_stat_inc(&sy_io_ctx(io)->stats.slow_closes);
    sy_conn_fail(io, c, 1008, "slow consumer");
    return false;
}

bool sy_conflate_push(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, sy_topic_t *t) {
    if (!sy_conn_open_to_owner((sy_conn_state_t)c->state))
        return false;
    size_t max = sy_io_ctx(io)->shared->opts.max_backpressure, queued = pending(c);
    bool over = queued > 0 && queued + m->len > max;
    if (!over && !c->conflating)
        return sy_conn_push(io, c, m, false); /* the common case: nothing to track */
    sy_sub_t *s = sub_of(c, t);
    if (over) {
        c->hit_limit = true; /* 'drain' once the queue is empty, as with the other policies */
        c->conflating = true;
        const sy_refbuf_t *old = s != NULL && s->cq != 0 ? sy_outq_replaceable(&c->outq, s->cq - 1) : NULL;
        /* Checked before the queue takes m: a close releases what is queued,
         * and the caller adds m's reference only after. */
        if (queued - (old != NULL ? old->len : 0) + m->len > 2 * max)
            return close_slow(io, c);
        if (old != NULL && sy_outq_replace(&c->outq, s->cq - 1, m)) {
            sy_stat_inc(&sy_io_ctx(io)->stats.conflated);
            sy_stat_inc(&sy_io_ctx(io)->stats.messages_out);
            return true;
        }
    }
    if (sy_outq_push(&c->outq, m) != 0) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    if (s != NULL)
        s->cq = sy_outq_last_id(&c->outq) + 1; /* 0 after a wrap: none, which only costs a replacement */
    sy_stat_inc(&sy_io_ctx(io)->stats.messages_out);
    sy_io_mark_dirty(io, c);
    return true;
}

void sy_conflate_reset(sy_conn_t *c) {
    if (!c->conflating)
        return;
    c->conflating = false;
    for (uint32_t i = 0; i < c->nsubs; i++)
        c->subs[i].cq = 0;
}
