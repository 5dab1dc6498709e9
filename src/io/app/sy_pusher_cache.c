/* sy_pusher_cache — see sy_pusher_cache.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (base/sy_clock.h) */
#include "io/app/sy_pusher_cache.h"

#include <stdatomic.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "io/model/sy_history.h"
#include "proto/sy_pusher.h"

/* The event of a publish that names none (as sy_pusher_conn's). */
#define DEFAULT_EVENT "message"

sy_err_t sy_pusher_cache_keep(sy_io_shared_t *sh, sy_topic_t *t, uint32_t ttl_s) {
    sy_err_t rc = sy_hist_keep_last(&sh->hist, t, ttl_s, sy_clock_ms());
    /* The sweep (IO thread 0) expires kept messages and frees idle topics. */
    if (rc == 0 && !atomic_load_explicit(&sh->history_used, memory_order_relaxed))
        atomic_store(&sh->history_used, true);
    return rc;
}

sy_refbuf_t *sy_pusher_cache_answer(sy_io_shared_t *sh, sy_topic_t *t, const char *channel, size_t len, bool *miss) {
    sy_hist_t *g = &sh->hist;
    sy_refbuf_t *frame = NULL, *meta = NULL;
    sy_hist_lock(g);
    bool hit = sy_hist_last(g, sy_hist_of(g, t, false), sy_clock_ms(), &frame, &meta);
    sy_hist_unlock(g);
    *miss = !hit;
    if (!hit)
        return sy_pusher_cache_miss_frame(channel, len);
    /* The kept frame is symphony.v1's: "p<id>,<offset>\n" then the payload. */
    const uint8_t *p = sy_refbuf_payload(frame);
    size_t n = sy_refbuf_payload_len(frame);
    const uint8_t *nl = memchr(p, '\n', n);
    size_t skip = nl != NULL ? (size_t)(nl + 1 - p) : 0;
    const char *ev = meta != NULL ? (const char *)meta->data : DEFAULT_EVENT, *uid = NULL;
    size_t ev_len = meta != NULL ? meta->len : sizeof(DEFAULT_EVENT) - 1, uid_len = 0;
    if (meta != NULL) /* a presence-cache channel's client event: "<event>\0<user id>" */
        sy_pusher_meta_split(ev, meta->len, &ev_len, &uid, &uid_len);
    sy_refbuf_t *out =
        sy_pusher_event_frame(ev, ev_len, channel, len, p + skip, n - skip, SY_PUSHER_DATA_BYTES, uid, uid_len, false);
    sy_refbuf_release(frame);
    sy_refbuf_release(meta);
    return out;
}

bool sy_pusher_cache_unkept(const void *meta, size_t len) {
    static const char internal[] = "pusher_internal:";
    return meta != NULL && len >= sizeof(internal) - 1 && memcmp(meta, internal, sizeof(internal) - 1) == 0;
}

sy_pusher_cache_wait_t *sy_pusher_cache_wait_of(sy_pusher_cache_waits_t *l, const char *name, size_t len) {
    for (uint32_t i = 0; i < l->n; i++)
        if (l->w[i].t->name_len == len && memcmp(l->w[i].t->name, name, len) == 0)
            return &l->w[i];
    return NULL;
}

bool sy_pusher_cache_wait_add(sy_pusher_cache_waits_t *l, sy_topic_t *t, bool presence) {
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 2;
        sy_pusher_cache_wait_t *a = sy_realloc(l->w, (size_t)cap * sizeof(*a));
        if (a == NULL)
            return false;
        l->w = a;
        l->cap = cap;
    }
    sy_topic_ref(t);
    l->w[l->n++] = (sy_pusher_cache_wait_t){.t = t, .cancelled = false, .presence = presence};
    return true;
}

bool sy_pusher_cache_wait_take(sy_pusher_cache_waits_t *l, struct sy_topics *topics, const sy_topic_t *t,
                               sy_pusher_cache_wait_t *out) {
    uint32_t i = 0;
    while (i < l->n && l->w[i].t != t)
        i++;
    if (i == l->n)
        return false;
    sy_pusher_cache_wait_t w = l->w[i];
    l->w[i] = l->w[--l->n];
    sy_topic_release(topics, w.t);
    if (out != NULL)
        *out = w;
    return true;
}

void sy_pusher_cache_waits_free(sy_pusher_cache_waits_t *l, struct sy_topics *topics) {
    for (uint32_t i = 0; i < l->n; i++)
        sy_topic_release(topics, l->w[i].t);
    sy_free(l->w);
    *l = (sy_pusher_cache_waits_t){0};
}
