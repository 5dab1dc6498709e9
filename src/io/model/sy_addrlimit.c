/* sy_addrlimit — see sy_addrlimit.h. */
#include "io/model/sy_addrlimit.h"

#include <stdatomic.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_random.h"
#include "base/sy_thread.h"
#include "net/sy_sock.h"

#define SY_ADDR_BUCKETS_MIN 16

typedef struct entry {
    struct entry *next;          /* the bucket's chain */
    struct entry *lprev, *lnext; /* the lingering list: no connection, rate not yet idle */
    uint64_t bits;
    uint64_t hash;
    int64_t tat_ns; /* the new connections' GCRA: when the bucket is full again */
    uint32_t conns;
    bool v6;
    bool lingering;
} entry_t;

struct sy_addrlimit {
    sy_mutex_t lock;
    sy_addrlimit_conf_t conf;
    int64_t period_ns; /* a second / rate; 0: no rate */
    int64_t burst_ns;  /* rate * period: a second's worth */
    uint64_t seed;
    entry_t **buckets;
    size_t nbuckets; /* a power of two, or 0 with buckets NULL: empty */
    atomic_size_t count;
    entry_t *lingering;
};

sy_addrlimit_t *sy_addrlimit_create(const sy_addrlimit_conf_t *conf) {
    sy_addrlimit_t *t = sy_calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    if (sy_mutex_init(&t->lock) != 0) {
        sy_free(t);
        return NULL;
    }
    t->conf = *conf;
    if (conf->rate > 0) {
        t->period_ns = 1000000000 / (int64_t)conf->rate;
        t->burst_ns = t->period_ns * (int64_t)conf->rate;
    }
    t->seed = sy_random_u64();
    return t;
}

void sy_addrlimit_destroy(sy_addrlimit_t *t) {
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        for (entry_t *e = t->buckets[i], *next; e != NULL; e = next) {
            next = e->next;
            sy_free(e);
        }
    }
    sy_free(t->buckets);
    sy_mutex_destroy(&t->lock);
    sy_free(t);
}

static uint64_t prefix_mask(unsigned width, unsigned prefix) {
    if (prefix == 0)
        return 0;
    if (prefix >= width)
        return width == 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
    return (width == 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1) & ~((UINT64_C(1) << (width - prefix)) - 1);
}

static uint64_t be_bits(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

bool sy_addr_key_make(const struct sockaddr *sa, socklen_t len, unsigned v4_prefix, unsigned v6_prefix,
                      sy_addr_key_t *out) {
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
        out->bits = be_bits((const uint8_t *)&a->sin_addr, 4) & prefix_mask(32, v4_prefix);
        out->v6 = false;
        return true;
    }
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)sa;
        const uint8_t *b = a->sin6_addr.s6_addr;
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(b, v4mapped, sizeof(v4mapped)) == 0) {
            out->bits = be_bits(b + 12, 4) & prefix_mask(32, v4_prefix);
            out->v6 = false;
        } else {
            out->bits = be_bits(b, 8) & prefix_mask(64, v6_prefix);
            out->v6 = true;
        }
        return true;
    }
    return false;
}

bool sy_addrlimit_key(const sy_addrlimit_t *t, const struct sockaddr *sa, socklen_t len, sy_addr_key_t *out) {
    return sy_addr_key_make(sa, len, t->conf.v4_prefix, t->conf.v6_prefix, out);
}

/* A keyed mix (the seed unknown to peers), then murmur3's finalizer. */
static uint64_t hash_of(const sy_addrlimit_t *t, const sy_addr_key_t *k) {
    uint64_t h = k->bits ^ t->seed ^ (k->v6 ? UINT64_C(0x9e3779b97f4a7c15) : 0);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

static entry_t **find(sy_addrlimit_t *t, const sy_addr_key_t *k, uint64_t h) {
    if (t->nbuckets == 0)
        return NULL;
    entry_t **p = &t->buckets[h & (t->nbuckets - 1)];
    for (; *p != NULL; p = &(*p)->next)
        if ((*p)->hash == h && (*p)->bits == k->bits && (*p)->v6 == k->v6)
            return p;
    return p;
}

/* Rehashes into n buckets (a power of two, or 0: none). On out of memory the
 * table stays as it was (only slower when it wanted to grow). */
static void resize(sy_addrlimit_t *t, size_t n) {
    entry_t **b = NULL;
    if (n > 0 && (b = sy_calloc(n, sizeof(*b))) == NULL)
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        for (entry_t *e = t->buckets[i], *next; e != NULL; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    sy_free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

static void linger_add(sy_addrlimit_t *t, entry_t *e) {
    e->lingering = true;
    e->lprev = NULL;
    e->lnext = t->lingering;
    if (t->lingering != NULL)
        t->lingering->lprev = e;
    t->lingering = e;
}

static void linger_remove(sy_addrlimit_t *t, entry_t *e) {
    if (!e->lingering)
        return;
    if (e->lprev != NULL)
        e->lprev->lnext = e->lnext;
    else
        t->lingering = e->lnext;
    if (e->lnext != NULL)
        e->lnext->lprev = e->lprev;
    e->lingering = false;
    e->lprev = e->lnext = NULL;
}

/* Unlinks and frees the entry *p points at; shrinks the buckets. */
static void remove_at(sy_addrlimit_t *t, entry_t **p) {
    entry_t *e = *p;
    *p = e->next;
    linger_remove(t, e);
    sy_free(e);
    size_t n = atomic_load_explicit(&t->count, memory_order_relaxed) - 1;
    atomic_store_explicit(&t->count, n, memory_order_relaxed);
    if (n == 0)
        resize(t, 0);
    else if (t->nbuckets > SY_ADDR_BUCKETS_MIN && n < t->nbuckets / 4)
        resize(t, t->nbuckets / 2);
}

/* An entry with no connection goes when its rate is idle, else lingers. */
static void settle(sy_addrlimit_t *t, entry_t **p, int64_t now_ns) {
    entry_t *e = *p;
    if (e->conns > 0)
        linger_remove(t, e);
    else if (e->tat_ns <= now_ns)
        remove_at(t, p);
    else if (!e->lingering)
        linger_add(t, e);
}

sy_addr_verdict_t sy_addrlimit_admit(sy_addrlimit_t *t, const sy_addr_key_t *key, int64_t now_ns, uint32_t *retry_s) {
    uint64_t h = hash_of(t, key);
    sy_mutex_lock(&t->lock);
    entry_t **p = find(t, key, h);
    entry_t *e = p != NULL ? *p : NULL;
    if (e == NULL) {
        size_t n = atomic_load_explicit(&t->count, memory_order_relaxed);
        if (n + 1 > t->nbuckets)
            resize(t, t->nbuckets ? t->nbuckets * 2 : SY_ADDR_BUCKETS_MIN);
        e = t->nbuckets > 0 ? sy_calloc(1, sizeof(*e)) : NULL;
        if (e == NULL) {
            if (n == 0)
                resize(t, 0);
            sy_mutex_unlock(&t->lock);
            return SY_ADDR_NOMEM;
        }
        e->bits = key->bits;
        e->v6 = key->v6;
        e->hash = h;
        e->tat_ns = now_ns;
        e->next = t->buckets[h & (t->nbuckets - 1)];
        t->buckets[h & (t->nbuckets - 1)] = e;
        atomic_store_explicit(&t->count, n + 1, memory_order_relaxed);
        p = &t->buckets[h & (t->nbuckets - 1)];
    }
    sy_addr_verdict_t v = SY_ADDR_OK;
    int64_t tat = e->tat_ns > now_ns ? e->tat_ns : now_ns;
    if (t->period_ns > 0 && tat - now_ns >= t->burst_ns) {
        /* Room again once tat - now < burst: after this many nanoseconds. */
        int64_t wait = tat - now_ns - t->burst_ns + 1;
        *retry_s = (uint32_t)((wait + 999999999) / 1000000000);
        v = SY_ADDR_TOO_FAST;
    } else if (t->conf.max_conns > 0 && e->conns >= t->conf.max_conns) {
        v = SY_ADDR_TOO_MANY;
    } else {
        e->conns++;
    }
    if (t->period_ns > 0 && v != SY_ADDR_TOO_FAST)
        e->tat_ns = tat + t->period_ns; /* a refusal for the count is an attempt all the same */
    settle(t, p, now_ns);
    sy_mutex_unlock(&t->lock);
    return v;
}

void sy_addrlimit_release(sy_addrlimit_t *t, const sy_addr_key_t *key, int64_t now_ns) {
    uint64_t h = hash_of(t, key);
    sy_mutex_lock(&t->lock);
    entry_t **p = find(t, key, h);
    if (p != NULL && *p != NULL && (*p)->conns > 0) {
        (*p)->conns--;
        settle(t, p, now_ns);
    }
    sy_mutex_unlock(&t->lock);
}

void sy_addrlimit_sweep(sy_addrlimit_t *t, int64_t now_ns) {
    if (atomic_load_explicit(&t->count, memory_order_relaxed) == 0)
        return;
    sy_mutex_lock(&t->lock);
    for (entry_t *e = t->lingering, *next; e != NULL; e = next) {
        next = e->lnext;
        if (e->tat_ns <= now_ns) {
            sy_addr_key_t k = {.bits = e->bits, .v6 = e->v6};
            remove_at(t, find(t, &k, e->hash));
        }
    }
    sy_mutex_unlock(&t->lock);
}

size_t sy_addrlimit_count(const sy_addrlimit_t *t) {
    return t != NULL ? atomic_load_explicit(&t->count, memory_order_relaxed) : 0;
}
