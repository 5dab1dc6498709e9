/* sy_subs — see sy_subs.h. */
#include "io/app/sy_subs.h"

#include "base/sy_alloc.h"
#include "io/app/sy_resume.h"
#include "io/conn/sy_wire.h"
#include "io/wire/sy_sse_out.h"

/* One subscription of t more or less on the node; at a 0 <-> 1 edge the
 * owner hears of it when it asked (SY_EV_TOPIC). */
static void count_sub(sy_io_t *io, sy_topic_t *t, bool add) {
    if (sy_topic_count_sub(t, add) && atomic_load_explicit(&sy_io_ctx(io)->shared->topic_events, memory_order_relaxed))
        sy_io_emit(io, 0, SY_EV_TOPIC, add ? SY_EV_TOPIC_ON : 0, 0, t->name, t->name_len);
}

bool sy_conn_subscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t) {
    bool ok = c->state == SY_CONN_OPEN || c->state == SY_CONN_UPGRADING;
    for (uint32_t i = 0; ok && i < c->nsubs; i++)
        if (c->subs[i].topic == t)
            ok = false;
    if (ok && c->nsubs == c->subs_cap) {
        uint32_t cap = c->subs_cap ? c->subs_cap * 2 : 2;
        sy_sub_t *subs = sy_realloc(c->subs, (size_t)cap * sizeof(*subs));
        if (subs == NULL || (sy_conn_sse(c) && !sy_sse_out_reserve(c, cap))) {
            ok = false;
        }
        if (subs != NULL) {
            c->subs = subs;
            c->subs_cap = ok ? cap : c->subs_cap;
        }
    }
    uint32_t index;
    if (!ok || sy_topic_add_sub(t, sy_io_ctx(io)->index, c->slot, &index) != 0) {
        sy_topic_drop_interest(&sy_io_ctx(io)->shared->topics, t, sy_io_ctx(io)->index);
        return false;
    }
    c->subs[c->nsubs].topic = t;
    c->subs[c->nsubs].index = index;
    c->subs[c->nsubs].cq = 0;
    if (sy_conn_sse(c))
        c->sse_pos[c->nsubs] = (sy_sse_pos_t){.known = false};
    c->nsubs++;
    count_sub(io, t, true);
    return true;
}

/* Removes subscription i (notify: tell a symphony.v1 client). */
static void remove_sub(sy_io_t *io, sy_conn_t *c, uint32_t i, bool notify) {
    sy_topic_t *t = c->subs[i].topic;
    sy_resume_unsubscribed(io, c, t, notify);
    uint32_t moved_slot;
    if (sy_topic_remove_sub(t, sy_io_ctx(io)->index, c->subs[i].index, &moved_slot)) {
        /* The subscriber swapped into this index learns its new place. */
        sy_conn_t *moved = sy_io_conn_at(io, moved_slot);
        for (uint32_t j = 0; j < moved->nsubs; j++) {
            if (moved->subs[j].topic == t) {
                moved->subs[j].index = c->subs[i].index;
                break;
            }
        }
    }
    if (sy_conn_sse(c))
        sy_sse_out_removed(c, i);
    c->subs[i] = c->subs[--c->nsubs];
    count_sub(io, t, false);
    sy_topic_drop_interest(&sy_io_ctx(io)->shared->topics, t, sy_io_ctx(io)->index);
}

void sy_conn_unsubscribe_all(sy_io_t *io, sy_conn_t *c) {
    while (c->nsubs > 0)
        remove_sub(io, c, c->nsubs - 1, false);
}

bool sy_conn_unsubscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t) {
    for (uint32_t i = 0; i < c->nsubs; i++) {
        if (c->subs[i].topic == t) {
            remove_sub(io, c, i, true);
            return true;
        }
    }
    return false;
}
