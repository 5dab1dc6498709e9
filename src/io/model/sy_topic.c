/* sy_topic — see sy_topic.h. */
#include "io/model/sy_topic.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"

#define SY_TOPICS_MIN_BUCKETS 64

static const char *topic_key(const sy_strmap_node_t *n, size_t *len) {
    const sy_topic_t *t = SY_STRMAP_ENTRY(n, sy_topic_t, node);
    *len = t->name_len;
    return t->name;
}

sy_err_t sy_topics_init(sy_topics_t *r, unsigned nthreads) {
    memset(r, 0, sizeof(*r));
    sy_err_t rc = sy_strmap_init(&r->map, SY_TOPICS_MIN_BUCKETS, topic_key);
    if (rc != 0)
        return rc;
    rc = sy_mutex_init(&r->lock);
    if (rc != 0) {
        sy_strmap_destroy(&r->map);
        return rc;
    }
    r->nthreads = nthreads;
    return 0;
}

static void topic_free(sy_topics_t *r, sy_topic_t *t) {
    struct sy_history *h = atomic_load_explicit(&t->hist, memory_order_relaxed);
    if (h != NULL && r->free_hist != NULL)
        r->free_hist(h);
    for (unsigned i = 0; i < t->nthreads; i++)
        sy_free(t->slots[i].subs);
    sy_free(t->slots);
    sy_free(t);
}

void sy_topics_destroy(sy_topics_t *r) {
    sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
    sy_strmap_node_t *n;
    while ((n = sy_strmap_next(&r->map, &it)) != NULL)
        topic_free(r, SY_STRMAP_ENTRY(n, sy_topic_t, node));
    sy_strmap_destroy(&r->map);
    sy_mutex_destroy(&r->lock);
    memset(r, 0, sizeof(*r));
}

void sy_topics_each(sy_topics_t *r, void (*fn)(void *ctx, sy_topic_t *t), void *ctx) {
    sy_mutex_lock(&r->lock);
    sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
    sy_strmap_node_t *n;
    while ((n = sy_strmap_next(&r->map, &it)) != NULL)
        fn(ctx, SY_STRMAP_ENTRY(n, sy_topic_t, node));
    sy_mutex_unlock(&r->lock);
}

size_t sy_topics_count(sy_topics_t *r) {
    sy_mutex_lock(&r->lock);
    size_t n = r->map.count;
    sy_mutex_unlock(&r->lock);
    return n;
}

sy_topic_t *sy_topic_acquire(sy_topics_t *r, const char *name, size_t len, bool create) {
    uint64_t h = sy_strmap_hash(name, len);
    sy_mutex_lock(&r->lock);
    sy_strmap_node_t *n = sy_strmap_find(&r->map, name, len, h);
    sy_topic_t *t = n != NULL ? SY_STRMAP_ENTRY(n, sy_topic_t, node) : NULL;
    if (t != NULL) {
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    } else if (create) {
        t = sy_malloc(sizeof(*t) + len + 1);
        sy_topic_slot_t *slots = sy_calloc(r->nthreads, sizeof(*slots));
        if (t == NULL || slots == NULL) {
            sy_free(t);
            sy_free(slots);
            t = NULL;
        } else {
            atomic_init(&t->refs, 1);
            atomic_init(&t->interest, 0);
            atomic_init(&t->v1, 0);
            atomic_init(&t->hist, NULL);
            atomic_init(&t->held, false);
            atomic_init(&t->subs, 0);
            t->id = ++r->next_id;
            t->nthreads = r->nthreads;
            t->slots = slots;
            for (unsigned i = 0; i < r->nthreads; i++)
                atomic_init(&slots[i].count, 0);
            t->name_len = len;
            memcpy(t->name, name, len);
            t->name[len] = '\0';
            sy_strmap_insert(&r->map, &t->node, h); /* grows past 1 topic per bucket */
        }
    }
    sy_mutex_unlock(&r->lock);
    return t;
}

void sy_topic_ref(sy_topic_t *t) { atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed); }

void sy_topic_release(sy_topics_t *r, sy_topic_t *t) {
    if (t == NULL)
        return;
    /* Fast path: not the last reference. A concurrent acquire can only raise
     * the count under the lock, so the final decrement is done under it. */
    unsigned refs = atomic_load_explicit(&t->refs, memory_order_relaxed);
    while (refs > 1) {
        if (atomic_compare_exchange_weak_explicit(&t->refs, &refs, refs - 1, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return;
    }
    sy_mutex_lock(&r->lock);
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) {
        sy_mutex_unlock(&r->lock);
        return;
    }
    /* A live topic is always in the map: false cannot happen here. */
    (void)sy_strmap_remove(&r->map, &t->node);
    sy_mutex_unlock(&r->lock);
    topic_free(r, t);
}

void sy_topic_add_interest(sy_topics_t *r, sy_topic_t *t, unsigned thread) {
    atomic_fetch_add_explicit(&t->slots[thread].count, 1, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&t->interest, 1, memory_order_acq_rel) == 0 && r->on_edge != NULL)
        r->on_edge(r->edge_ctx, t);
}

void sy_topic_drop_interest(sy_topics_t *r, sy_topic_t *t, unsigned thread) {
    atomic_fetch_sub_explicit(&t->slots[thread].count, 1, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&t->interest, 1, memory_order_acq_rel) == 1 && r->on_edge != NULL)
        r->on_edge(r->edge_ctx, t);
    sy_topic_release(r, t);
}

unsigned sy_topic_total_interest(const sy_topic_t *t) {
    return atomic_load_explicit(&t->interest, memory_order_acquire);
}

bool sy_topic_wanted(const sy_topic_t *t) {
    return sy_topic_total_interest(t) > 0 || atomic_load_explicit(&t->held, memory_order_acquire);
}

void sy_topic_set_held(sy_topics_t *r, sy_topic_t *t, bool held) {
    if (atomic_exchange_explicit(&t->held, held, memory_order_acq_rel) != held && r->on_edge != NULL)
        r->on_edge(r->edge_ctx, t);
}

bool sy_topic_count_sub(sy_topic_t *t, bool add) {
    if (add)
        return atomic_fetch_add_explicit(&t->subs, 1, memory_order_acq_rel) == 0;
    return atomic_fetch_sub_explicit(&t->subs, 1, memory_order_acq_rel) == 1;
}

unsigned sy_topic_subscribers(const sy_topic_t *t) { return atomic_load_explicit(&t->subs, memory_order_acquire); }

unsigned sy_topic_interest(const sy_topic_t *t, unsigned thread) {
    return atomic_load_explicit(&t->slots[thread].count, memory_order_relaxed);
}

sy_err_t sy_topic_add_sub(sy_topic_t *t, unsigned thread, uint32_t slot, uint32_t *index) {
    sy_topic_slot_t *s = &t->slots[thread];
    if (s->nsubs == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 4;
        if (cap < s->cap)
            return ENOMEM;
        uint32_t *subs = sy_realloc(s->subs, (size_t)cap * sizeof(*subs));
        if (subs == NULL)
            return ENOMEM;
        s->subs = subs;
        s->cap = cap;
    }
    s->subs[s->nsubs] = slot;
    *index = s->nsubs++;
    return 0;
}

bool sy_topic_remove_sub(sy_topic_t *t, unsigned thread, uint32_t index, uint32_t *moved_slot) {
    sy_topic_slot_t *s = &t->slots[thread];
    bool moved = false;
    s->nsubs--;
    if (index != s->nsubs) {
        *moved_slot = s->subs[s->nsubs];
        s->subs[index] = *moved_slot;
        moved = true;
    }
    if (s->nsubs == 0) {
        /* Memory follows the load: an empty list gives its array back. */
        sy_free(s->subs);
        s->subs = NULL;
        s->cap = 0;
    } else if (s->nsubs * 4 < s->cap && s->cap > 16) {
        uint32_t *subs = sy_realloc(s->subs, (size_t)(s->cap / 2) * sizeof(*subs));
        if (subs != NULL) {
            s->subs = subs;
            s->cap /= 2;
        }
    }
    return moved;
}
