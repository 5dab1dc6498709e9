/* sy_history — see sy_history.h. */
#include "io/model/sy_history.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_random.h"
#include "io/model/sy_grow.h"
#include "io/model/sy_topic.h"

struct sy_hist_entry {
    sy_refbuf_t *frame; /* one reference */
    int64_t at_ms;
    uint64_t seq; /* the server's count of kept messages when it was kept: the cap's order */
};

sy_err_t sy_hist_init(sy_hist_t *g, const sy_hist_conf_t *conf) {
    memset(g, 0, sizeof(*g));
    g->conf = *conf;
    return sy_mutex_init(&g->lock);
}

void sy_hist_destroy(sy_hist_t *g) {
    sy_free(g->heap);
    g->heap = NULL;
    sy_mutex_destroy(&g->lock);
}

void sy_hist_lock(sy_hist_t *g) { sy_mutex_lock(&g->lock); }
void sy_hist_unlock(sy_hist_t *g) { sy_mutex_unlock(&g->lock); }

static size_t entry_bytes(const sy_hist_entry_t *e) { return e->frame->len + SY_HIST_ENTRY_OVERHEAD; }

/* ---- the heap of histories that keep messages, oldest message first ---- */

/* Each slot holds its history's key (the seq of its oldest message) beside
 * it: a sift compares keys in the array, without a load from every history
 * it passes (at the max_bytes cap every publish drops the oldest message
 * of all and sifts its history down the whole heap). */
struct sy_hist_slot {
    uint64_t key;
    sy_history_t *h;
};

static uint64_t key(const sy_history_t *h) { return h->ring[h->head].seq; }

static void heap_set(sy_hist_t *g, uint32_t i, sy_hist_slot_t s) {
    g->heap[i] = s;
    s.h->heap_at = i;
}

static void sift_up(sy_hist_t *g, uint32_t i) {
    sy_hist_slot_t s = g->heap[i];
    while (i > 0 && g->heap[(i - 1) / 2].key > s.key) {
        heap_set(g, i, g->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(g, i, s);
}

static void sift_down(sy_hist_t *g, uint32_t i) {
    sy_hist_slot_t s = g->heap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= g->nheap)
            break;
        if (c + 1 < g->nheap && g->heap[c + 1].key < g->heap[c].key)
            c++;
        if (g->heap[c].key >= s.key)
            break;
        heap_set(g, i, g->heap[c]);
        i = c;
    }
    heap_set(g, i, s);
}

/* Room in the heap for one more history. False when out of memory. */
static bool heap_add_room(sy_hist_t *g) {
    sy_hist_slot_t *a = sy_grow(g->heap, &g->heap_cap, sizeof(*a), 16);
    if (a == NULL)
        return false;
    g->heap = a;
    return true;
}

/* h has just kept its first message: into the heap (room made before). */
static bool heap_add(sy_hist_t *g, sy_history_t *h) {
    if (g->nheap == g->heap_cap && !heap_add_room(g))
        return false;
    g->heap[g->nheap] = (sy_hist_slot_t){.key = key(h), .h = h};
    h->heap_at = g->nheap++;
    sift_up(g, h->heap_at);
    return true;
}

/* h keeps nothing any more: out of the heap. */
static void heap_remove(sy_hist_t *g, sy_history_t *h) {
    uint32_t i = h->heap_at;
    sy_hist_slot_t last = g->heap[--g->nheap];
    if (i < g->nheap) {
        heap_set(g, i, last);
        sift_down(g, i);
        sift_up(g, last.h->heap_at);
    }
}

/* Drops h's oldest entry. */
static void drop_oldest(sy_hist_t *g, sy_history_t *h) {
    sy_hist_entry_t *e = &h->ring[h->head];
    g->bytes -= entry_bytes(e);
    g->count--;
    sy_refbuf_release(e->frame);
    h->head = (h->head + 1) % h->cap;
    h->count--;
    h->first++;
    if (h->count == 0) { /* the newest went: its meta with it */
        sy_refbuf_release(h->last_meta);
        h->last_meta = NULL;
    }
    if (h->count == 0)
        heap_remove(g, h);
    else {
        g->heap[h->heap_at].key = key(h); /* its oldest is newer now */
        sift_down(g, h->heap_at);
    }
}

/* Drops every entry of h that size or ttl no longer allow. */
static void trim(sy_hist_t *g, sy_history_t *h, int64_t now_ms) {
    while (h->count > h->size)
        drop_oldest(g, h);
    if (h->ttl_s > 0)
        while (h->count > 0 && h->ring[h->head].at_ms <= now_ms - (int64_t)h->ttl_s * 1000)
            drop_oldest(g, h);
}

static sy_history_t *attach(sy_hist_t *g, sy_topic_t *t, uint32_t size, uint32_t ttl_s) {
    (void)g;
    sy_history_t *h = sy_calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->epoch = sy_random_u64();
    h->first = 1;
    h->size = size;
    h->ttl_s = ttl_s;
    h->topic = t;
    atomic_store_explicit(&t->hist, h, memory_order_release);
    return h;
}

sy_history_t *sy_hist_of(sy_hist_t *g, sy_topic_t *t, bool create) {
    sy_history_t *h = atomic_load_explicit(&t->hist, memory_order_relaxed);
    if (h == NULL && create && sy_hist_default_on(g))
        h = attach(g, t, g->conf.size, g->conf.ttl_s);
    return h;
}

sy_err_t sy_hist_configure(sy_hist_t *g, sy_topic_t *t, uint32_t size, uint32_t ttl_s, int64_t now_ms) {
    sy_history_t *h = atomic_load_explicit(&t->hist, memory_order_relaxed);
    if (h == NULL) {
        /* None, and none wanted. With history by default, a history of size
         * 0 is kept all the same: it is what tells the next publish not to
         * make one with the defaults (sy_hist_of). */
        if (size == 0 && !sy_hist_default_on(g))
            return 0;
        if ((h = attach(g, t, size, ttl_s)) == NULL)
            return ENOMEM;
    }
    h->size = size;
    h->ttl_s = ttl_s;
    trim(g, h, now_ms);
    return 0;
}

/* Room for one more entry in h's ring (which never needs more than size). */
static bool ring_room(sy_history_t *h) {
    if (h->count < h->cap)
        return true;
    uint32_t cap = h->cap ? h->cap * 2 : 8;
    if (cap > h->size)
        cap = h->size;
    if (cap <= h->count)
        return false;
    sy_hist_entry_t *ring = sy_malloc((size_t)cap * sizeof(*ring));
    if (ring == NULL)
        return false;
    for (uint32_t i = 0; i < h->count; i++)
        ring[i] = h->ring[(h->head + i) % h->cap];
    sy_free(h->ring);
    h->ring = ring;
    h->cap = cap;
    h->head = 0;
    return true;
}

/* Empties h (its entries are dropped): what follows starts after a hole
 * that a resume must not cross. */
static void empty(sy_hist_t *g, sy_history_t *h) {
    while (h->count > 0)
        drop_oldest(g, h);
    h->first = h->last + 1;
}

bool sy_hist_append(sy_hist_t *g, sy_history_t *h, sy_refbuf_t *frame, int64_t now_ms) {
    return sy_hist_append_meta(g, h, frame, NULL, now_ms);
}

bool sy_hist_append_meta(sy_hist_t *g, sy_history_t *h, sy_refbuf_t *frame, sy_refbuf_t *meta, int64_t now_ms) {
    if (frame == NULL) {
        empty(g, h);
        return false;
    }
    if (h->count == h->size && h->size > 0)
        drop_oldest(g, h); /* makes room (size already reached) */
    if (!ring_room(h) || (h->count == 0 && g->nheap == g->heap_cap && !heap_add_room(g))) {
        empty(g, h);
        return false;
    }
    sy_refbuf_ref(frame, 1);
    if (meta != NULL)
        sy_refbuf_ref(meta, 1);
    sy_refbuf_release(h->last_meta); /* the newest's only: entries stay their size */
    h->last_meta = meta;
    if (h->count == 0)
        h->first = h->last;
    h->ring[(h->head + h->count) % h->cap] = (sy_hist_entry_t){.frame = frame, .at_ms = now_ms, .seq = ++g->seq};
    h->count++;
    g->bytes += entry_bytes(&h->ring[(h->head + h->count - 1) % h->cap]);
    g->count++;
    if (h->count == 1)
        (void)heap_add(g, h); /* room made above */
    if (!h->holds_ref) {
        sy_topic_ref(h->topic);
        h->holds_ref = true;
        if (g->topics != NULL)
            sy_topic_set_held(g->topics, h->topic, true); /* the bus keeps feeding it */
    }
    trim(g, h, now_ms);
    /* The server-wide cap: the oldest go first, whichever topic. */
    while (g->conf.max_bytes > 0 && g->bytes > g->conf.max_bytes && g->nheap > 0)
        drop_oldest(g, g->heap[0].h);
    return true;
}

bool sy_hist_last(sy_hist_t *g, sy_history_t *h, int64_t now_ms, sy_refbuf_t **frame, sy_refbuf_t **meta) {
    *frame = *meta = NULL;
    if (h == NULL || h->size == 0)
        return false;
    trim(g, h, now_ms); /* what ttl expired since the last sweep is not the last any more */
    if (h->count == 0)
        return false;
    const sy_hist_entry_t *e = &h->ring[(h->head + h->count - 1) % h->cap];
    sy_refbuf_ref(e->frame, 1);
    *frame = e->frame;
    if (h->last_meta != NULL) {
        sy_refbuf_ref(h->last_meta, 1);
        *meta = h->last_meta;
    }
    return true;
}

sy_v1_reason_t sy_hist_replay(sy_hist_t *g, sy_history_t *h, uint64_t epoch, uint64_t since, uint64_t head,
                              size_t budget, int64_t now_ms, sy_refbuf_t ***frames, size_t *n) {
    *frames = NULL;
    *n = 0;
    if (h == NULL || h->size == 0)
        return SY_V1_NO_HISTORY;
    if (epoch != h->epoch)
        return SY_V1_EPOCH;
    if (since > head)
        return SY_V1_FUTURE;
    if (since == head)
        return SY_V1_RECOVERED;
    trim(g, h, now_ms);
    /* Kept: first .. first + count - 1; wanted: since + 1 .. head. */
    if (h->count == 0 || since + 1 < h->first || head > h->first + h->count - 1)
        return SY_V1_TRIMMED;
    uint64_t want = head - since;
    if (want > SIZE_MAX / sizeof(sy_refbuf_t *))
        return SY_V1_TOO_LARGE;
    size_t bytes = 0;
    uint32_t at = (uint32_t)(since + 1 - h->first);
    for (uint64_t i = 0; i < want; i++) {
        bytes += h->ring[(h->head + at + i) % h->cap].frame->len;
        if (bytes > budget)
            return SY_V1_TOO_LARGE;
    }
    sy_refbuf_t **out = sy_malloc((size_t)want * sizeof(*out));
    if (out == NULL)
        return SY_V1_MEMORY;
    for (uint64_t i = 0; i < want; i++) {
        out[i] = h->ring[(h->head + at + i) % h->cap].frame;
        sy_refbuf_ref(out[i], 1);
    }
    *frames = out;
    *n = (size_t)want;
    return SY_V1_RECOVERED;
}

/* The sweep's state: topics whose reference to give back. */
typedef struct sweep {
    sy_hist_t *g;
    int64_t now_ms;
    sy_topic_t **release;
    size_t n, cap;
} sweep_t;

static void sweep_topic(void *ctx, sy_topic_t *t) {
    sweep_t *s = ctx;
    sy_history_t *h = atomic_load_explicit(&t->hist, memory_order_relaxed);
    if (h == NULL)
        return;
    trim(s->g, h, s->now_ms);
    if (h->count > 0 || !h->holds_ref)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        sy_topic_t **r = sy_realloc(s->release, cap * sizeof(*r));
        if (r == NULL)
            return; /* kept until a later sweep */
        s->release = r;
        s->cap = cap;
    }
    h->holds_ref = false;
    if (s->g->topics != NULL)
        sy_topic_set_held(s->g->topics, t, false);
    s->release[s->n++] = t;
}

static void sweep_locked(void *ctx, sy_topic_t *t) {
    sweep_t *s = ctx;
    sy_hist_lock(s->g);
    sweep_topic(ctx, t);
    sy_hist_unlock(s->g);
}

void sy_hist_sweep(sy_hist_t *g, sy_topics_t *topics, int64_t now_ms) {
    sweep_t s = {.g = g, .now_ms = now_ms};
    sy_topics_each(topics, sweep_locked, &s);
    for (size_t i = 0; i < s.n; i++)
        sy_topic_release(topics, s.release[i]);
    sy_free(s.release);
}

/* h's sequence goes on in epoch after last (nothing kept from before). */
static void restart(sy_hist_t *g, sy_history_t *h, uint64_t epoch, bool remote, uint64_t last, sy_hist_change_t *change,
                    sy_v1_reason_t why) {
    change->changed = true;
    /* Nothing numbered before, and the new sequence starts at its
     * beginning: a subscriber at 0 missed nothing. */
    change->reason = h->last == 0 && last == 0 ? SY_V1_RECOVERED : why;
    change->before = h->last;
    empty(g, h);
    h->epoch = epoch;
    h->remote = remote;
    h->last = last;
    h->first = last + 1;
}

bool sy_hist_adopt(sy_hist_t *g, sy_history_t *h, uint64_t epoch, uint64_t offset, sy_hist_change_t *change) {
    *change = (sy_hist_change_t){.reason = SY_V1_RECOVERED};
    if (!h->remote || h->epoch != epoch) {
        restart(g, h, epoch, true, offset - 1, change, SY_V1_EPOCH);
        return true;
    }
    if (offset <= h->last)
        return false;
    if (offset > h->last + 1)
        restart(g, h, epoch, true, offset - 1, change, SY_V1_TRIMMED);
    return true;
}

void sy_hist_localize(sy_hist_t *g, sy_history_t *h, sy_hist_change_t *change) {
    *change = (sy_hist_change_t){.reason = SY_V1_RECOVERED};
    if (h->remote)
        restart(g, h, sy_random_u64(), false, h->last, change, SY_V1_EPOCH);
}

void sy_hist_defer(sy_history_t *h, const sy_hist_change_t *change) {
    if (change->changed && !h->untold.changed)
        h->untold = *change; /* the first: its before is the subscribers' */
}

void sy_hist_synced(sy_hist_t *g, sy_history_t *h, uint64_t epoch, uint64_t last, sy_hist_change_t *change) {
    *change = (sy_hist_change_t){.reason = SY_V1_RECOVERED};
    if (epoch != 0) {
        if (!h->remote || h->epoch != epoch)
            restart(g, h, epoch, true, last, change, SY_V1_EPOCH);
        else if (h->last < last)
            restart(g, h, epoch, true, last, change, SY_V1_TRIMMED);
    }
    if (h->untold.changed) {
        bool hole = h->untold.reason == SY_V1_TRIMMED && (!change->changed || change->reason == SY_V1_TRIMMED);
        *change = (sy_hist_change_t){
            .changed = true, .reason = hole ? SY_V1_TRIMMED : SY_V1_EPOCH, .before = h->untold.before};
        h->untold = (sy_hist_change_t){.changed = false};
    }
    h->synced = true;
}

bool sy_hist_differs(const sy_history_t *h, uint64_t offset, const void *data, size_t len) {
    if (h->count == 0 || offset < h->first || offset > h->first + h->count - 1)
        return false;
    const sy_refbuf_t *f = h->ring[(h->head + (uint32_t)(offset - h->first)) % h->cap].frame;
    /* The kept frame (never the compressed twin) carries the symphony.v1
     * header ("p<id>,<offset>\n"), then the message. */
    const uint8_t *p = sy_refbuf_payload(f);
    size_t n = sy_refbuf_payload_len(f);
    const uint8_t *nl = memchr(p, '\n', n < SY_V1_HEADER_MAX ? n : SY_V1_HEADER_MAX);
    if (nl == NULL)
        return false;
    size_t kept = n - (size_t)(nl + 1 - p);
    return kept != len || (len > 0 && memcmp(nl + 1, data, len) != 0);
}

bool sy_hist_needs_sync(const sy_hist_t *g, const sy_history_t *h) {
    return g->sequenced && h != NULL && h->size > 0 && !h->synced &&
           atomic_load_explicit(&g->bus_up, memory_order_relaxed);
}

void sy_hist_totals(sy_hist_t *g, size_t *count, size_t *bytes) {
    sy_hist_lock(g);
    *count = g->count;
    *bytes = g->bytes;
    sy_hist_unlock(g);
}

void sy_history_free(sy_history_t *h) {
    if (h == NULL)
        return;
    /* Entries are left only when the whole server goes (sy_topics_destroy
     * frees every topic): the heap goes with it. */
    for (uint32_t i = 0; i < h->count; i++)
        sy_refbuf_release(h->ring[(h->head + i) % h->cap].frame);
    sy_refbuf_release(h->last_meta);
    sy_free(h->ring);
    sy_free(h);
}

sy_err_t sy_hist_keep_last(sy_hist_t *g, sy_topic_t *t, uint32_t ttl_s, int64_t now_ms) {
    sy_err_t rc = 0;
    sy_hist_lock(g);
    sy_history_t *h = sy_hist_of(g, t, false);
    if (h == NULL || h->size != 1 || h->ttl_s != ttl_s)
        rc = sy_hist_configure(g, t, 1, ttl_s, now_ms);
    sy_hist_unlock(g);
    return rc;
}
