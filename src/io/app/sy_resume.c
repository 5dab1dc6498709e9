/* sy_resume — see sy_resume.h. */
#include "io/app/sy_resume.h"

#include "base/sy_alloc.h"
#include "io/model/sy_history.h"
#include "io/wire/sy_sse_out.h"
#include "net/sy_outq.h"

size_t sy_resume_budget(const sy_io_t *io, const sy_conn_t *c) {
    size_t max = sy_io_ctx(io)->shared->opts.max_backpressure;
    size_t queued = sy_outq_bytes(&c->outq) + sy_stream_held(&c->stream);
    return queued < max ? max - queued : 0;
}

/* Counts the result in the thread's stats. */
static void count(sy_io_t *io, sy_v1_reason_t r, size_t replayed) {
    sy_stats_live_t *st = &sy_io_ctx(io)->stats;
    switch (r) {
    case SY_V1_RECOVERED:
        sy_stat_inc(&st->recovered);
        if (replayed > 0) {
            sy_stat_inc(&st->replays);
            sy_stat_add(&st->replayed, replayed);
        }
        break;
    case SY_V1_EPOCH:
        sy_stat_inc(&st->recovery_epoch);
        break;
    case SY_V1_TRIMMED:
        sy_stat_inc(&st->recovery_trimmed);
        break;
    case SY_V1_FUTURE:
        sy_stat_inc(&st->recovery_future);
        break;
    case SY_V1_TOO_LARGE:
        sy_stat_inc(&st->recovery_too_large);
        break;
    case SY_V1_NO_HISTORY:
    case SY_V1_NOT_V1:
        sy_stat_inc(&st->recovery_no_history);
        break;
    default:
        sy_stat_inc(&st->recovery_memory);
        break;
    }
}

void sy_resume_prepare(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, const sy_sub_pos_t *pos, size_t *budget,
                       sy_resume_item_t *it) {
    *it = (sy_resume_item_t){.topic = t, .resumed = pos != NULL && pos->resume};
    if (pos != NULL && pos->asked) {
        it->extra = pos->extra;
        it->extra_len = pos->extra_len;
    }
    if (it->resumed)
        it->since = pos->since;
    sy_hist_t *g = &sy_io_ctx(io)->shared->hist;
    uint8_t at_open = c->state == SY_CONN_UPGRADING ? SY_EV_RECOVERY_AT_OPEN : 0;
    if (!sy_conn_v1(c)) {
        if (it->resumed) {
            it->reason = SY_V1_NOT_V1;
            count(io, it->reason, 0);
            sy_io_emit(io, sy_conn_id(io, c), SY_EV_RECOVERY, at_open, (uint16_t)it->reason, t->name, t->name_len);
        }
        return;
    }
    atomic_fetch_add_explicit(&t->v1, 1, memory_order_relaxed);
    sy_hist_lock(g);
    sy_history_t *h = atomic_load_explicit(&t->hist, memory_order_relaxed);
    if (h != NULL && h->size > 0 && pos != NULL) {
        it->history = true;
        it->epoch = h->epoch;
        it->head = pos->head;
    }
    if (it->resumed)
        it->reason = sy_hist_replay(g, it->history ? h : NULL, pos->epoch, pos->since, pos->head, *budget,
                                    sy_io_ctx(io)->now_ms, &it->frames, &it->nframes);
    sy_hist_unlock(g);
    if (!it->resumed)
        return;
    size_t cost = 0;
    for (size_t i = 0; i < it->nframes; i++)
        cost += it->frames[i]->len; /* within budget: sy_hist_replay checked */
    if (sy_conn_sse(c) && it->nframes > 0) {
        /* A stream's events are larger than the frames (ids, lines): the
         * budget holds for them. */
        cost = sy_sse_out_replay_cost(c, t, it->frames, it->nframes);
        if (cost > *budget) {
            for (size_t i = 0; i < it->nframes; i++)
                sy_refbuf_release(it->frames[i]);
            sy_free(it->frames);
            it->frames = NULL;
            it->nframes = 0;
            it->reason = SY_V1_TOO_LARGE;
            cost = 0;
        }
    }
    *budget -= cost;
    count(io, it->reason, it->nframes);
    sy_io_emit(io, sy_conn_id(io, c), SY_EV_RECOVERY,
               (uint8_t)(at_open | (it->reason == SY_V1_RECOVERED ? SY_EV_RECOVERED : 0)), (uint16_t)it->reason,
               t->name, t->name_len);
}

void sy_resume_deliver(sy_io_t *io, sy_conn_t *c, sy_resume_item_t *it) {
    size_t i = 0;
    if (sy_conn_v1(c) && sy_conn_open_to_owner((sy_conn_state_t)c->state)) {
        sy_v1_subscribed_t n = {.topic = it->topic->name,
                                .topic_len = it->topic->name_len,
                                .id = it->topic->id,
                                .history = it->history,
                                .epoch = it->epoch,
                                .offset = it->head,
                                .resumed = it->resumed,
                                .since = it->since,
                                .reason = it->reason,
                                .extra = it->extra,
                                .extra_len = it->extra_len};
        sy_refbuf_t *m = sy_v1_subscribed_frame(&n);
        if (sy_conn_sse(c) && m != NULL) {
            /* A stream: the notice and replay made its events, their ids
             * from where it now is in the topic. */
            sy_sse_out_position(c, it->topic, it->history, it->epoch,
                                it->resumed && it->reason == SY_V1_RECOVERED ? it->since : it->head);
            bool ok = sy_sse_out_push(io, c, m, !it->quiet);
            sy_refbuf_release(m);
            for (; ok && i < it->nframes; i++)
                ok = sy_sse_out_push(io, c, it->frames[i], true);
            i = 0; /* every frame's reference goes below */
            goto release;
        }
        if (m == NULL || !sy_conn_notice(io, c, m)) { /* never dropped: queued, or c closed */
            sy_refbuf_release(m);
            if (m == NULL)
                sy_conn_fail_oom(io, c);
            i = it->nframes; /* without the notice, no replay */
        }
        for (; i < it->nframes; i++) {
            sy_refbuf_t *f = it->frames[i];
            sy_refbuf_t *q = sy_conn_frame_for(io, c, f);
            if (q != f)
                sy_refbuf_ref(q, 1); /* the twin's reference; f's goes below */
            if (!sy_conn_push(io, c, q, false)) {
                if (q != f)
                    sy_refbuf_release(q);
                break;
            }
            if (q != f)
                sy_refbuf_release(f);
        }
    }
release:
    for (; i < it->nframes; i++)
        sy_refbuf_release(it->frames[i]);
    sy_free(it->frames);
    it->frames = NULL;
    it->nframes = 0;
}

void sy_resume_unsubscribed(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, bool notify) {
    if (!sy_conn_v1(c))
        return;
    atomic_fetch_sub_explicit(&t->v1, 1, memory_order_relaxed);
    if (!notify || !sy_conn_open_to_owner((sy_conn_state_t)c->state))
        return;
    sy_refbuf_t *m = sy_v1_unsubscribed_frame(t->name, t->name_len, t->id);
    if (sy_conn_sse(c) && m != NULL) {
        (void)sy_sse_out_push(io, c, m, true);
        sy_refbuf_release(m);
        return;
    }
    if (m == NULL || !sy_conn_notice(io, c, m)) {
        sy_refbuf_release(m);
        if (m == NULL)
            sy_conn_fail_oom(io, c);
    }
}
