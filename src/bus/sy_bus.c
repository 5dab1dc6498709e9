#define _GNU_SOURCE
#include "bus/sy_bus.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>

#include "base/sy_alloc.h"
#include "bus/sy_bus_env.h"
#include "bus/sy_bus_link.h"
#include "bus/sy_bus_map.h"
#include "base/sy_clock.h"
#include "net/sy_poll.h"
#include "bus/sy_slot.h"

#define BUS_EVENTS 64
#define BUS_CHANNELS_PER_COMMAND 512
#define BUS_REFRESH_UP_MS 5000
#define BUS_REFRESH_DOWN_MS 500
#define BUS_MIN_BUCKETS 64
/* Subscription changes after a (S)SUBSCRIBE command wait this long, so
 * that a burst of connections becomes a few commands, not one per turn;
 * the first change after a quiet spell goes at once. */
#define BUS_SUBSCRIBE_WINDOW_MS 10
#define SY_BUS_ORDER_PUBLISHERS 8 /* publishers whose order a channel keeps track of */

enum { ROLE_PUB = 0, ROLE_SUB = 1, ROLE_CFG = 2 };

/* A publish on its way to Redis: the channel, the envelope, the payload,
 * contiguous. Its size (the whole allocation) counts in buffered_bytes
 * until Redis answers. */
typedef struct bus_msg {
    struct bus_msg *next;
    size_t size;
    size_t channel_len; /* prefix + topic */
    size_t body_len;    /* envelope + payload */
    char data[];
} bus_msg_t;

typedef struct shard {
    sy_bus_link_t pub; /* SPUBLISH, with a reply callback each */
    sy_bus_link_t sub; /* SSUBSCRIBE / SUNSUBSCRIBE only; everything comes as pushes */
    bool seen;         /* in the slot map being applied */
} shard_t;

/* A channel the bus knows: one per topic with local interest, or with a
 * subscription still to undo. Bus thread only. */
typedef struct chan {
    struct chan *next;
    uint64_t hash;
    unsigned slot;
    shard_t *shard;  /* where SSUBSCRIBE was sent (sent) */
    bool want;       /* local interest */
    bool sent;       /* SSUBSCRIBE sent and not undone */
    bool confirmed;  /* Redis said ssubscribe */
    bool dirty;      /* on the dirty list */
    unsigned unsubs; /* our SUNSUBSCRIBEs whose pushes have not come back */
    /* The last sequence number delivered per publisher (the oldest entry
     * makes room for a new publisher). */
    struct {
        uint64_t node, seq, used;
    } last[SY_BUS_ORDER_PUBLISHERS];
    uint64_t uses;
    size_t len;      /* the topic's (without the prefix) */
    char name[];
} chan_t;

typedef struct action {
    shard_t *shard;
    unsigned slot;
    bool subscribe;
    chan_t *chan;
} action_t;

#define BUS_COUNTER(field, js, metric, type, help) atomic_uint_fast64_t field;
typedef struct bus_counters {
    SY_BUS_STATS_LIST(BUS_COUNTER)
} bus_counters_t;
#undef BUS_COUNTER

struct sy_bus {
    /* Fixed at creation. */
    char **hosts;
    uint16_t *ports;
    unsigned nseeds;
    bool cluster;
    char *user, *pass;
    char *prefix;
    size_t prefix_len;
    size_t max_buffer, max_payload;
    sy_bus_link_conf_t lconf;
    void *tls;
    void (*tls_free)(void *tls);
    char name[64];
    uint64_t node;
    sy_topics_t *topics;
    sy_bus_deliver_fn deliver;
    void *deliver_ctx;
    sy_bus_state_fn on_state;
    void *state_ctx;
    sy_bus_link_ops_t ops;

    /* Shared with the owner's thread and the topics' hook. */
    pthread_mutex_t lock;
    bool lock_ok;
    bus_msg_t *qhead, *qtail;
    sy_topic_t **edges;
    size_t nedges, edges_cap;
    bool stop;
    bool woken;          /* the wake fd was written and not yet drained */
    unsigned flush_ms;
    atomic_int state;    /* sy_bus_state_t */
    uint64_t seq;        /* this node's publishes, numbered from 1 (under lock) */
    bus_counters_t c;

    /* The thread. */
    pthread_t thread;
    bool started, joined;
    sy_poll_t *poll;
    int wake_fd;

    /* Bus thread only. */
    shard_t **shards;
    unsigned nshards;
    shard_t **slot_shard; /* [SY_SLOTS], cluster only */
    bool map_ok;          /* every slot has a shard */
    sy_bus_link_t cfg;    /* cluster: the slot map's connection */
    unsigned cfg_next;    /* the next node to ask, round robin over seeds then shards */
    bool map_pending;     /* CLUSTER SLOTS sent, not answered */
    bool map_wanted;      /* read the map as soon as the control link is up */
    int64_t map_due_ms;
    chan_t **buckets;
    size_t nbuckets, nchans;
    chan_t **dirty;
    size_t ndirty, dirty_cap;
    bool all_dirty;       /* a subscriber link came up: reconcile every channel */
    int64_t subscribe_due_ms; /* no (S)SUBSCRIBE command before (BUS_SUBSCRIBE_WINDOW_MS) */
    bool ever_up;
    char err[SY_BUS_HOST_MAX + SY_BUS_ERRLEN + 16]; /* why the bus is down: "host:port: reason" */
    uint32_t rng;
};

static inline void count(atomic_uint_fast64_t *c, uint64_t n) { atomic_fetch_add_explicit(c, n, memory_order_relaxed); }

static char *dup_str(const char *s, size_t len) {
    char *d = sy_malloc(len + 1);
    if (d != NULL) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

static uint64_t hash_name(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ---- channels ------------------------------------------------------- */

/* prefix + name (not NUL-terminated, prefix_len + len bytes; sy_free it),
 * or NULL without memory. */
static char *channel_name(const sy_bus_t *b, const char *name, size_t len) {
    char *s = sy_malloc(b->prefix_len + len);
    if (s != NULL) {
        memcpy(s, b->prefix, b->prefix_len);
        memcpy(s + b->prefix_len, name, len);
    }
    return s;
}

static chan_t *chan_find(sy_bus_t *b, const char *name, size_t len, uint64_t h) {
    for (chan_t *c = b->buckets[h & (b->nbuckets - 1)]; c != NULL; c = c->next)
        if (c->hash == h && c->len == len && memcmp(c->name, name, len) == 0)
            return c;
    return NULL;
}

static void chan_grow(sy_bus_t *b) {
    size_t n = b->nbuckets * 2;
    chan_t **nb = sy_calloc(n, sizeof(*nb));
    if (nb == NULL)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < b->nbuckets; i++) {
        chan_t *c = b->buckets[i];
        while (c != NULL) {
            chan_t *next = c->next;
            c->next = nb[c->hash & (n - 1)];
            nb[c->hash & (n - 1)] = c;
            c = next;
        }
    }
    sy_free(b->buckets);
    b->buckets = nb;
    b->nbuckets = n;
}

static chan_t *chan_get(sy_bus_t *b, const char *name, size_t len) {
    uint64_t h = hash_name(name, len);
    chan_t *c = chan_find(b, name, len, h);
    if (c != NULL)
        return c;
    c = sy_calloc(1, sizeof(*c) + len + 1);
    if (c == NULL)
        return NULL;
    c->hash = h;
    c->len = len;
    memcpy(c->name, name, len);
    /* The slot of the channel name, prefix included. */
    char *key = channel_name(b, name, len);
    if (key == NULL) {
        sy_free(c);
        return NULL;
    }
    c->slot = sy_slot_of(key, b->prefix_len + len);
    sy_free(key);
    size_t i = h & (b->nbuckets - 1);
    c->next = b->buckets[i];
    b->buckets[i] = c;
    if (++b->nchans > b->nbuckets)
        chan_grow(b);
    return c;
}

static void chan_remove(sy_bus_t *b, chan_t *c) {
    chan_t **p = &b->buckets[c->hash & (b->nbuckets - 1)];
    while (*p != c)
        p = &(*p)->next;
    *p = c->next;
    b->nchans--;
    sy_free(c);
}

static void mark_dirty(sy_bus_t *b, chan_t *c) {
    if (c->dirty)
        return;
    if (b->ndirty == b->dirty_cap) {
        size_t cap = b->dirty_cap ? b->dirty_cap * 2 : 64;
        chan_t **d = sy_realloc(b->dirty, cap * sizeof(*d));
        if (d == NULL) {
            b->all_dirty = true; /* reconciled by the full pass instead */
            return;
        }
        b->dirty = d;
        b->dirty_cap = cap;
    }
    c->dirty = true;
    b->dirty[b->ndirty++] = c;
}

/* The subscription on c's shard is gone (its link dropped, or Redis said
 * so): nothing to undo there. */
static void chan_lost(sy_bus_t *b, chan_t *c) {
    if (c->confirmed)
        count(&b->c.channels, (uint64_t)-1);
    c->sent = false;
    c->confirmed = false;
    c->shard = NULL;
    c->unsubs = 0;
}

/* ---- shards and state ----------------------------------------------- */

static shard_t *target_shard(sy_bus_t *b, const chan_t *c) {
    if (!b->cluster)
        return b->nshards ? b->shards[0] : NULL;
    /* Not while a fresher map is on its way: a channel Redis unsubscribed
     * (its slot moved) would be sent back to the old node. */
    return b->map_ok && !b->map_pending && !b->map_wanted ? b->slot_shard[c->slot] : NULL;
}

static bool links_up(const shard_t *s) { return s->pub.state == SY_LINK_UP && s->sub.state == SY_LINK_UP; }

static void set_state(sy_bus_t *b, sy_bus_state_t st) {
    sy_bus_state_t old = (sy_bus_state_t)atomic_load(&b->state);
    if (old == st)
        return;
    atomic_store(&b->state, (int)st);
    if (st == SY_BUS_UP) {
        if (b->ever_up)
            count(&b->c.reconnects, 1);
        b->ever_up = true;
        b->err[0] = '\0';
    }
    b->on_state(b->state_ctx, st, st == SY_BUS_DOWN ? b->err : "");
}

static void update_state(sy_bus_t *b) {
    bool up = b->nshards > 0 && (!b->cluster || b->map_ok);
    for (unsigned i = 0; up && i < b->nshards; i++)
        up = links_up(b->shards[i]);
    if (up)
        set_state(b, SY_BUS_UP);
    else if (b->err[0] != '\0')
        set_state(b, SY_BUS_DOWN);
}

static void want_map(sy_bus_t *b) {
    if (b->cluster)
        b->map_wanted = true;
}

static void shard_free(shard_t *s) {
    sy_bus_link_close(&s->pub);
    sy_bus_link_close(&s->sub);
    sy_free(s);
}

static shard_t *shard_new(sy_bus_t *b, const char *host, uint16_t port) {
    shard_t *s = sy_calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    sy_bus_link_init(&s->pub, &b->ops, b, &b->lconf, b->poll, host, port, b->rng++);
    sy_bus_link_init(&s->sub, &b->ops, b, &b->lconf, b->poll, host, port, b->rng++);
    s->pub.owner = s->sub.owner = s;
    s->pub.role = ROLE_PUB;
    s->sub.role = ROLE_SUB;
    sy_bus_link_connect(&s->pub);
    sy_bus_link_connect(&s->sub);
    return s;
}

/* ---- links' callbacks ----------------------------------------------- */

static void link_up(void *ctx, sy_bus_link_t *l) {
    sy_bus_t *b = ctx;
    if (l->role == ROLE_CFG)
        return; /* the loop sends CLUSTER SLOTS when the map is wanted */
    if (l->role == ROLE_SUB)
        b->all_dirty = true;
}

static void link_down(void *ctx, sy_bus_link_t *l, const char *err) {
    sy_bus_t *b = ctx;
    snprintf(b->err, sizeof(b->err), "%s:%u: %s", l->host, (unsigned)l->port, err);
    if (l->role == ROLE_CFG) {
        /* Ask another node next time. */
        b->map_pending = false;
        b->map_wanted = true;
        unsigned n = b->nseeds + b->nshards;
        unsigned i = b->cfg_next++ % n;
        const char *host = i < b->nseeds ? b->hosts[i] : b->shards[i - b->nseeds]->pub.host;
        uint16_t port = i < b->nseeds ? b->ports[i] : b->shards[i - b->nseeds]->pub.port;
        snprintf(l->host, sizeof(l->host), "%s", host);
        l->port = port;
        return;
    }
    if (l->role == ROLE_SUB) {
        shard_t *s = l->owner;
        for (size_t i = 0; i < b->nbuckets; i++)
            for (chan_t *c = b->buckets[i]; c != NULL; c = c->next)
                if (c->shard == s) {
                    chan_lost(b, c);
                    mark_dirty(b, c);
                }
    }
    want_map(b); /* a failover, maybe */
}

/* True when seq is newer than the last message of publisher `from` on
 * the channel (which then remembers it). */
static bool in_order(sy_bus_t *b, const char *topic, size_t len, uint64_t from, uint64_t seq) {
    chan_t *c = chan_find(b, topic, len, hash_name(topic, len));
    if (c == NULL)
        return true; /* not ours any more: the fan-out finds no subscriber */
    unsigned oldest = 0;
    c->uses++;
    for (unsigned i = 0; i < SY_BUS_ORDER_PUBLISHERS; i++) {
        if (c->last[i].used != 0 && c->last[i].node == from) {
            if (seq <= c->last[i].seq)
                return false;
            c->last[i].seq = seq;
            c->last[i].used = c->uses;
            return true;
        }
        if (c->last[i].used < c->last[oldest].used)
            oldest = i;
    }
    c->last[oldest].node = from;
    c->last[oldest].seq = seq;
    c->last[oldest].used = c->uses;
    return true;
}

static void on_smessage(sy_bus_t *b, redisReply *r) {
    redisReply *ch = r->element[1], *msg = r->element[2];
    if (ch->type != REDIS_REPLY_STRING || msg->type != REDIS_REPLY_STRING || ch->len < b->prefix_len ||
        memcmp(ch->str, b->prefix, b->prefix_len) != 0 || msg->len > b->max_payload + SY_BUS_ENV_LEN) {
        count(&b->c.ignored, 1);
        return;
    }
    sy_bus_env_msg_t m;
    switch (sy_bus_env_read((const uint8_t *)msg->str, msg->len, b->node, &m)) {
    case SY_BUS_ENV_OWN:
        return;
    case SY_BUS_ENV_BAD:
        count(&b->c.ignored, 1);
        return;
    case SY_BUS_ENV_DELIVER:
        break;
    }
    if (m.len > b->max_payload) {
        count(&b->c.ignored, 1);
        return;
    }
    const char *topic = ch->str + b->prefix_len;
    size_t topic_len = ch->len - b->prefix_len;
    if (m.seq != 0 && !in_order(b, topic, topic_len, m.from, m.seq)) {
        count(&b->c.late, 1);
        return;
    }
    count(&b->c.received, 1);
    b->deliver(b->deliver_ctx, topic, topic_len, m.payload, m.len, m.flags);
}

static void link_push(void *ctx, sy_bus_link_t *l, redisReply *r) {
    sy_bus_t *b = ctx;
    if (l->role != ROLE_SUB || r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING)
        return;
    const char *kind = r->element[0]->str;
    if (strcasecmp(kind, "smessage") == 0) {
        on_smessage(b, r);
        return;
    }
    bool sub = strcasecmp(kind, "ssubscribe") == 0;
    if (!sub && strcasecmp(kind, "sunsubscribe") != 0)
        return;
    redisReply *ch = r->element[1];
    if (ch->type != REDIS_REPLY_STRING || ch->len < b->prefix_len || memcmp(ch->str, b->prefix, b->prefix_len) != 0)
        return;
    chan_t *c = chan_find(b, ch->str + b->prefix_len, ch->len - b->prefix_len,
                          hash_name(ch->str + b->prefix_len, ch->len - b->prefix_len));
    if (c == NULL)
        return;
    if (sub) {
        if (c->sent && c->shard == l->owner && !c->confirmed) {
            c->confirmed = true;
            count(&b->c.channels, 1);
        }
        return;
    }
    if (c->unsubs > 0) {
        c->unsubs--; /* ours */
        if (c->unsubs == 0 && !c->want && !c->sent)
            mark_dirty(b, c); /* done with: reconcile forgets it */
        return;
    }
    if (c->sent && c->shard == l->owner) {
        /* Redis unsubscribed us: the slot moved. Subscribe again where the
         * new map says. */
        chan_lost(b, c);
        mark_dirty(b, c);
        want_map(b);
    }
}

/* A MOVED reply names the slot's owner now ("MOVED <slot> <host>:<port>"):
 * when that is a shard we have, the slot's publishes go there at once, as
 * cluster clients do, rather than to the old owner until the map is read
 * again (a map read answered by a node that has not heard of the move yet
 * could otherwise keep them going to the old owner, each one dropped). */
static void apply_moved(sy_bus_t *b, const char *err) {
    unsigned slot = 0;
    int at = 0;
    if (b->slot_shard == NULL || sscanf(err, "MOVED %u %n", &slot, &at) != 1 || at == 0 || slot >= SY_SLOTS)
        return;
    const char *addr = err + at;
    const char *colon = strrchr(addr, ':'); /* the last one: an IPv6 host has its own */
    char *end = NULL;
    unsigned long port = colon != NULL ? strtoul(colon + 1, &end, 10) : 0;
    if (colon == NULL || end == colon + 1 || *end != '\0' || port == 0 || port > 65535)
        return;
    size_t hlen = (size_t)(colon - addr);
    for (unsigned i = 0; i < b->nshards; i++) {
        shard_t *s = b->shards[i];
        if (s != NULL && s->pub.port == port && strlen(s->pub.host) == hlen && memcmp(s->pub.host, addr, hlen) == 0) {
            b->slot_shard[slot] = s;
            return;
        }
    }
}

static void on_published(redisAsyncContext *ac, void *r, void *priv) {
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    atomic_fetch_sub(&b->c.buffered_bytes, (uint64_t)(uintptr_t)priv);
    if (reply == NULL) {
        count(&b->c.dropped, 1); /* the connection went before Redis answered */
    } else if (reply->type == REDIS_REPLY_ERROR) {
        count(&b->c.errors, 1);
        count(&b->c.dropped, 1);
        if (strncmp(reply->str, "MOVED", 5) == 0 || strncmp(reply->str, "ASK", 3) == 0)
            want_map(b);
        if (strncmp(reply->str, "MOVED ", 6) == 0)
            apply_moved(b, reply->str);
    } else {
        count(&b->c.published, 1);
    }
}

/* ---- the slot map (cluster) ----------------------------------------- */

/* The shard at host:port: one of fresh already, or an existing one taken
 * over (its connections kept), or a new one. */
static shard_t *shard_for(sy_bus_t *b, shard_t **fresh, unsigned *nfresh, const char *host, uint16_t port) {
    for (unsigned i = 0; i < *nfresh; i++)
        if (fresh[i]->pub.port == port && strcmp(fresh[i]->pub.host, host) == 0)
            return fresh[i];
    shard_t *s = NULL;
    for (unsigned i = 0; i < b->nshards; i++)
        if (b->shards[i] != NULL && b->shards[i]->pub.port == port && strcmp(b->shards[i]->pub.host, host) == 0) {
            s = b->shards[i];
            b->shards[i] = NULL; /* taken over */
            break;
        }
    if (s == NULL && (s = shard_new(b, host, port)) == NULL)
        return NULL;
    fresh[(*nfresh)++] = s;
    return s;
}

/* Applies a CLUSTER SLOTS reply (sy_bus_map.h). */
static void apply_map(sy_bus_t *b, const redisReply *r, const char *asked_host) {
    sy_bus_map_t *map = sy_malloc(sizeof(*map));
    if (map == NULL)
        return;
    if (sy_bus_map_read(map, r, asked_host) != 0) {
        sy_bus_map_free(map);
        sy_free(map);
        return;
    }
    shard_t **fresh = sy_calloc(map->nnodes + 1, sizeof(*fresh));
    shard_t **slots = sy_calloc(SY_SLOTS, sizeof(*slots));
    shard_t **by_node = sy_calloc(map->nnodes + 1, sizeof(*by_node));
    if (fresh == NULL || slots == NULL || by_node == NULL) {
        sy_free(fresh);
        sy_free(slots);
        sy_free(by_node);
        sy_bus_map_free(map);
        sy_free(map);
        return;
    }
    unsigned nfresh = 0;
    for (unsigned i = 0; i < map->nnodes; i++)
        by_node[i] = shard_for(b, fresh, &nfresh, map->nodes[i].host, map->nodes[i].port);
    bool complete = map->complete;
    for (unsigned k = 0; k < SY_SLOTS; k++) {
        slots[k] = map->slot[k] == SY_BUS_MAP_NONE ? NULL : by_node[map->slot[k]];
        complete = complete && slots[k] != NULL;
    }
    sy_free(by_node);
    sy_bus_map_free(map);
    sy_free(map);
    /* Channels whose shard changed: undo the old subscription (if that
     * node is still there) and subscribe on the new one. */
    for (size_t i = 0; i < b->nbuckets; i++)
        for (chan_t *c = b->buckets[i]; c != NULL; c = c->next) {
            if (!c->sent && !c->want)
                continue;
            if (c->sent && c->shard != slots[c->slot]) {
                bool kept = false;
                for (unsigned k = 0; k < nfresh; k++)
                    kept = kept || fresh[k] == c->shard;
                if (kept && c->shard->sub.state == SY_LINK_UP) {
                    const char *argv[2] = {"SUNSUBSCRIBE", NULL};
                    size_t lens[2] = {12, b->prefix_len + c->len};
                    char *name = channel_name(b, c->name, c->len);
                    if (name != NULL) {
                        argv[1] = name;
                        if (sy_bus_link_append(&c->shard->sub, 2, argv, lens) == 0)
                            count(&b->c.subscribe_commands, 1);
                        sy_free(name);
                    }
                }
                chan_lost(b, c);
            }
            mark_dirty(b, c);
        }
    /* Shards no longer in the map go (their pending publishes count as dropped). */
    for (unsigned i = 0; i < b->nshards; i++)
        if (b->shards[i] != NULL)
            shard_free(b->shards[i]);
    sy_free(b->shards);
    sy_free(b->slot_shard);
    b->shards = fresh;
    b->nshards = nfresh;
    b->slot_shard = slots;
    b->map_ok = complete;
    if (!complete)
        snprintf(b->err, sizeof(b->err), "the cluster's slot map does not cover every slot");
}

static void on_slots(redisAsyncContext *ac, void *r, void *priv) {
    (void)priv;
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    b->map_pending = false;
    if (reply == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        count(&b->c.errors, 1);
        snprintf(b->err, sizeof(b->err), "%s:%u: %s", l->host, (unsigned)l->port, reply->str);
        b->map_due_ms = sy_clock_ms() + BUS_REFRESH_DOWN_MS;
        return;
    }
    count(&b->c.map_refreshes, 1);
    apply_map(b, reply, l->host);
}

static void maybe_read_map(sy_bus_t *b, int64_t now) {
    if (!b->cluster || b->map_pending)
        return;
    if (now >= b->map_due_ms)
        b->map_wanted = true;
    if (!b->map_wanted)
        return;
    redisAsyncContext *ac = sy_bus_link_ac(&b->cfg);
    if (ac == NULL)
        return; /* connecting (or backing off); asked again when up */
    if (redisAsyncCommand(ac, on_slots, NULL, "CLUSTER SLOTS") != REDIS_OK)
        return;
    b->map_wanted = false;
    b->map_pending = true;
    b->map_due_ms = now + (atomic_load(&b->state) == SY_BUS_UP ? BUS_REFRESH_UP_MS : BUS_REFRESH_DOWN_MS);
}

/* ---- subscriptions -------------------------------------------------- */

static int cmp_action(const void *pa, const void *pb) {
    const action_t *a = pa, *b = pb;
    if (a->shard != b->shard)
        return (uintptr_t)a->shard < (uintptr_t)b->shard ? -1 : 1;
    if (a->subscribe != b->subscribe)
        return a->subscribe ? 1 : -1; /* unsubscribes first */
    if (a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    return 0;
}

/* Sends one command per (shard, kind, slot) run of actions, in pieces of
 * at most BUS_CHANNELS_PER_COMMAND channels. */
static void send_actions(sy_bus_t *b, action_t *a, size_t n) {
    qsort(a, n, sizeof(*a), cmp_action);
    size_t i = 0;
    const char **argv = sy_malloc((BUS_CHANNELS_PER_COMMAND + 1) * sizeof(*argv));
    size_t *lens = sy_malloc((BUS_CHANNELS_PER_COMMAND + 1) * sizeof(*lens));
    char **names = sy_malloc(BUS_CHANNELS_PER_COMMAND * sizeof(*names));
    if (argv == NULL || lens == NULL || names == NULL)
        goto done;
    while (i < n) {
        size_t j = i, argc = 1;
        argv[0] = a[i].subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE";
        lens[0] = strlen(argv[0]);
        bool ok = true;
        while (j < n && a[j].shard == a[i].shard && a[j].subscribe == a[i].subscribe &&
               (!b->cluster || a[j].slot == a[i].slot) && argc <= BUS_CHANNELS_PER_COMMAND) {
            chan_t *c = a[j].chan;
            char *name = channel_name(b, c->name, c->len);
            if (name == NULL) {
                ok = false;
                break;
            }
            names[argc - 1] = name;
            argv[argc] = name;
            lens[argc] = b->prefix_len + c->len;
            argc++;
            j++;
        }
        int rc = ok ? sy_bus_link_append(&a[i].shard->sub, (int)argc, argv, lens) : ENOMEM;
        if (rc == 0)
            count(&b->c.subscribe_commands, 1);
        for (size_t k = i; k < j; k++) {
            chan_t *c = a[k].chan;
            if (rc == 0 && a[k].subscribe) {
                c->sent = true;
                c->shard = a[k].shard;
            } else if (rc == 0) {
                if (c->confirmed)
                    count(&b->c.channels, (uint64_t)-1);
                c->unsubs++;
                c->sent = false;
                c->confirmed = false;
                c->shard = NULL;
            } else {
                mark_dirty(b, c); /* again next turn */
            }
        }
        for (size_t k = 0; k + 1 < argc; k++)
            sy_free(names[k]);
        if (j == i) /* no memory even for one name */
            break;
        i = j;
    }
done:
    sy_free(argv);
    sy_free(lens);
    sy_free(names);
}

/* Reconciles the dirty channels (or all) with their wanted state. True
 * when commands were sent. */
static bool reconcile(sy_bus_t *b) {
    if (b->all_dirty) {
        b->all_dirty = false;
        for (size_t i = 0; i < b->nbuckets; i++)
            for (chan_t *c = b->buckets[i]; c != NULL; c = c->next)
                mark_dirty(b, c);
    }
    if (b->ndirty == 0)
        return false;
    chan_t **list = b->dirty;
    size_t n = b->ndirty;
    b->dirty = NULL;
    b->ndirty = b->dirty_cap = 0;
    action_t *acts = sy_malloc(n * sizeof(*acts));
    size_t nact = 0;
    for (size_t i = 0; i < n; i++) {
        chan_t *c = list[i];
        c->dirty = false;
        if (acts == NULL) {
            mark_dirty(b, c);
            continue;
        }
        shard_t *t = target_shard(b, c);
        if (c->want && !c->sent) {
            if (t != NULL && t->sub.state == SY_LINK_UP)
                acts[nact++] = (action_t){.shard = t, .slot = c->slot, .subscribe = true, .chan = c};
            /* else: subscribed when the link comes up (all_dirty) or the
             * map is read (apply_map) */
        } else if (!c->want && c->sent) {
            if (c->shard->sub.state == SY_LINK_UP)
                acts[nact++] = (action_t){.shard = c->shard, .slot = c->slot, .subscribe = false, .chan = c};
        } else if (!c->want && !c->sent && c->unsubs == 0) {
            chan_remove(b, c);
            continue;
        }
    }
    if (nact > 0)
        send_actions(b, acts, nact);
    sy_free(acts);
    sy_free(list);
    return nact > 0;
}

/* ---- publishing ----------------------------------------------------- */

static void drop_msg(sy_bus_t *b, bus_msg_t *m) {
    atomic_fetch_sub(&b->c.buffered_bytes, m->size);
    count(&b->c.dropped, 1);
    sy_free(m);
}

static void send_msg(sy_bus_t *b, bus_msg_t *m) {
    shard_t *s = NULL;
    if (!b->cluster)
        s = b->nshards ? b->shards[0] : NULL;
    else if (b->map_ok)
        s = b->slot_shard[sy_slot_of(m->data, m->channel_len)];
    redisAsyncContext *ac = s != NULL ? sy_bus_link_ac(&s->pub) : NULL;
    if (ac == NULL || redisAsyncCommand(ac, on_published, (void *)(uintptr_t)m->size, "SPUBLISH %b %b", m->data,
                                        m->channel_len, m->data + m->channel_len, m->body_len) != REDIS_OK) {
        drop_msg(b, m);
        return;
    }
    sy_free(m); /* hiredis copied it; its size counts until the reply */
}

/* ---- the thread ----------------------------------------------------- */

static void drain_wake(sy_bus_t *b) {
    uint64_t v;
    while (read(b->wake_fd, &v, sizeof(v)) > 0) {
    }
}

static void take_work(sy_bus_t *b, bus_msg_t **msgs, sy_topic_t ***edges, size_t *nedges, bool *stop) {
    pthread_mutex_lock(&b->lock);
    *msgs = b->qhead;
    b->qhead = b->qtail = NULL;
    *edges = b->edges;
    *nedges = b->nedges;
    b->edges = NULL;
    b->nedges = b->edges_cap = 0;
    *stop = b->stop;
    b->woken = false;
    pthread_mutex_unlock(&b->lock);
}

static void apply_edges(sy_bus_t *b, sy_topic_t **edges, size_t n) {
    for (size_t i = 0; i < n; i++) {
        sy_topic_t *t = edges[i];
        bool want = sy_topic_total_interest(t) > 0;
        chan_t *c = want ? chan_get(b, t->name, t->name_len)
                         : chan_find(b, t->name, t->name_len, hash_name(t->name, t->name_len));
        if (c != NULL) {
            c->want = want;
            mark_dirty(b, c);
        }
        sy_topic_release(b->topics, t);
    }
    sy_free(edges);
}

static int64_t tick_links(sy_bus_t *b, int64_t now) {
    int64_t next = INT64_MAX, t;
    for (unsigned i = 0; i < b->nshards; i++) {
        if ((t = sy_bus_link_tick(&b->shards[i]->pub, now)) < next)
            next = t;
        if ((t = sy_bus_link_tick(&b->shards[i]->sub, now)) < next)
            next = t;
    }
    if (b->cluster) {
        if ((t = sy_bus_link_tick(&b->cfg, now)) < next)
            next = t;
        if (b->map_due_ms < next)
            next = b->map_due_ms;
    }
    return next;
}

static bool pub_idle(sy_bus_t *b) {
    for (unsigned i = 0; i < b->nshards; i++) {
        redisAsyncContext *ac = sy_bus_link_ac(&b->shards[i]->pub);
        if (ac != NULL && (ac->replies.head != NULL || sdslen(ac->c.obuf) > 0))
            return false;
    }
    return true;
}

static void *bus_main(void *arg) {
    sy_bus_t *b = arg;
    sy_poll_event_t ev[BUS_EVENTS];
    int64_t stop_deadline = 0;
    bool stopping = false;
    if (!b->cluster) {
        shard_t **one = sy_calloc(1, sizeof(*one));
        if (one != NULL && (one[0] = shard_new(b, b->hosts[0], b->ports[0])) != NULL) {
            b->shards = one;
            b->nshards = 1;
        } else {
            sy_free(one);
            snprintf(b->err, sizeof(b->err), "out of memory");
            set_state(b, SY_BUS_DOWN);
        }
    } else {
        sy_bus_link_init(&b->cfg, &b->ops, b, &b->lconf, b->poll, b->hosts[0], b->ports[0], b->rng++);
        b->cfg.role = ROLE_CFG;
        b->cfg_next = 1;
        b->map_wanted = true;
        sy_bus_link_connect(&b->cfg);
    }
    for (;;) {
        int64_t now = sy_clock_ms();
        int64_t next = tick_links(b, now);
        maybe_read_map(b, now);
        if (b->ndirty > 0 || b->all_dirty) {
            if (now >= b->subscribe_due_ms) {
                if (reconcile(b))
                    b->subscribe_due_ms = now + BUS_SUBSCRIBE_WINDOW_MS;
            } else if (b->subscribe_due_ms < next) {
                next = b->subscribe_due_ms;
            }
        }
        update_state(b);
        if (stopping && (pub_idle(b) || now >= stop_deadline))
            break;
        int timeout = -1;
        if (next != INT64_MAX)
            timeout = next <= now ? 0 : (int)(next - now > 60000 ? 60000 : next - now);
        if (stopping && timeout != 0) {
            int64_t left = stop_deadline - now;
            timeout = timeout < 0 || timeout > left ? (int)(left > 0 ? left : 0) : timeout;
        }
        int n = 0;
        (void)sy_poll_wait(b->poll, ev, BUS_EVENTS, timeout, &n);
        for (int i = 0; i < n; i++) {
            if (ev[i].tag == 0)
                drain_wake(b);
            else
                sy_bus_link_ready((sy_bus_link_t *)(uintptr_t)ev[i].tag, ev[i].events);
        }
        bus_msg_t *msgs;
        sy_topic_t **edges;
        size_t nedges;
        bool stop;
        take_work(b, &msgs, &edges, &nedges, &stop);
        apply_edges(b, edges, nedges);
        while (msgs != NULL) {
            bus_msg_t *m = msgs;
            msgs = m->next;
            send_msg(b, m);
        }
        if (stop && !stopping) {
            stopping = true;
            stop_deadline = sy_clock_ms() + b->flush_ms;
        }
    }
    /* Closing: pending publishes' callbacks run (as dropped), then the links go. */
    for (unsigned i = 0; i < b->nshards; i++)
        shard_free(b->shards[i]);
    sy_free(b->shards);
    b->shards = NULL;
    b->nshards = 0;
    if (b->cluster)
        sy_bus_link_close(&b->cfg);
    return NULL;
}

/* ---- the owner's side ----------------------------------------------- */

static void wake(sy_bus_t *b) {
    uint64_t one = 1;
    ssize_t w;
    do
        w = write(b->wake_fd, &one, sizeof(one));
    while (w < 0 && errno == EINTR);
    /* EAGAIN: the counter is full, so the thread is awake anyway. */
}

sy_bus_t *sy_bus_create(const sy_bus_opts_t *o, sy_topics_t *topics, sy_bus_deliver_fn deliver, void *deliver_ctx,
                        sy_bus_state_fn on_state, void *state_ctx, char *err, size_t errlen) {
    bool bad = false;
    if (o->nseeds == 0 || o->nseeds > SY_BUS_MAX_SEEDS || (!o->cluster && o->nseeds != 1)) {
        snprintf(err, errlen, "the bus needs one Redis (or 1..%u cluster seeds)", SY_BUS_MAX_SEEDS);
        bad = true;
    } else if (o->backoff_min_ms == 0 || o->backoff_max_ms < o->backoff_min_ms || o->connect_timeout_ms == 0) {
        snprintf(err, errlen, "bad bus timing options");
        bad = true;
    }
    sy_bus_t *b = bad ? NULL : sy_calloc(1, sizeof(*b));
    if (b == NULL) {
        if (!bad)
            snprintf(err, errlen, "out of memory");
        if (o->tls != NULL && o->tls_free != NULL)
            o->tls_free(o->tls);
        return NULL;
    }
    b->tls = o->tls;
    b->tls_free = o->tls_free;
    b->wake_fd = -1;
    b->nseeds = o->nseeds;
    b->hosts = sy_calloc(o->nseeds, sizeof(*b->hosts));
    b->ports = sy_calloc(o->nseeds, sizeof(*b->ports));
    b->buckets = sy_calloc(BUS_MIN_BUCKETS, sizeof(*b->buckets));
    b->nbuckets = BUS_MIN_BUCKETS;
    b->prefix = dup_str(o->prefix, o->prefix_len);
    bool ok = b->hosts != NULL && b->ports != NULL && b->buckets != NULL && b->prefix != NULL;
    for (unsigned i = 0; ok && i < o->nseeds; i++) {
        ok = (b->hosts[i] = dup_str(o->hosts[i], strlen(o->hosts[i]))) != NULL;
        b->ports[i] = o->ports[i];
    }
    if (ok && o->user != NULL)
        ok = (b->user = dup_str(o->user, strlen(o->user))) != NULL;
    if (ok && o->pass != NULL)
        ok = (b->pass = dup_str(o->pass, strlen(o->pass))) != NULL;
    if (ok) {
        b->poll = sy_poll_create();
        b->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        ok = b->poll != NULL && b->wake_fd >= 0 && sy_poll_add(b->poll, b->wake_fd, SY_POLL_IN, 0) == 0;
    }
    if (ok)
        ok = b->lock_ok = pthread_mutex_init(&b->lock, NULL) == 0;
    if (!ok) {
        snprintf(err, errlen, "cannot set up the bus: %s", strerror(errno ? errno : ENOMEM));
        b->joined = true;
        sy_bus_destroy(b);
        return NULL;
    }
    /* The syscall, not glibc's getrandom() (2.25: above the prebuilt
     * binaries' glibc floor, scripts/glibc-floor.js). */
    if (syscall(SYS_getrandom, &b->node, sizeof(b->node), 0x0001 /* GRND_NONBLOCK */) != (long)sizeof(b->node))
        b->node = (uint64_t)sy_clock_us() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)b;
    b->rng = (uint32_t)(b->node ^ (b->node >> 32));
    b->cluster = o->cluster;
    b->prefix_len = o->prefix_len;
    b->max_buffer = o->max_buffer;
    b->max_payload = o->max_payload;
    snprintf(b->name, sizeof(b->name), "symphony-bus-%016llx", (unsigned long long)b->node);
    b->lconf = (sy_bus_link_conf_t){.user = b->user,
                                    .pass = b->pass,
                                    .name = b->name,
                                    .connect_timeout_ms = o->connect_timeout_ms,
                                    .backoff_min_ms = o->backoff_min_ms,
                                    .backoff_max_ms = o->backoff_max_ms,
                                    .tls_attach = o->tls != NULL ? o->tls_attach : NULL,
                                    .tls = o->tls,
                                    .tls_error = o->tls != NULL ? o->tls_error : NULL};
    b->ops = (sy_bus_link_ops_t){.up = link_up, .down = link_down, .push = link_push};
    b->topics = topics;
    b->deliver = deliver;
    b->deliver_ctx = deliver_ctx;
    b->on_state = on_state;
    b->state_ctx = state_ctx;
    atomic_init(&b->state, SY_BUS_CONNECTING);
    b->joined = true; /* nothing to join until started */
    return b;
}

int sy_bus_start(sy_bus_t *b) {
    if (b->started)
        return 0;
    int rc = pthread_create(&b->thread, NULL, bus_main, b);
    if (rc != 0)
        return rc;
    b->started = true;
    b->joined = false;
    return 0;
}

void sy_bus_stop(sy_bus_t *b, unsigned flush_ms) {
    if (!b->started || b->joined)
        return;
    pthread_mutex_lock(&b->lock);
    b->stop = true;
    b->flush_ms = flush_ms;
    pthread_mutex_unlock(&b->lock);
    wake(b);
    (void)pthread_join(b->thread, NULL);
    b->joined = true;
}

void sy_bus_destroy(sy_bus_t *b) {
    if (b == NULL)
        return;
    /* What the thread did not take: queued publishes and edges. */
    while (b->qhead != NULL) {
        bus_msg_t *m = b->qhead;
        b->qhead = m->next;
        drop_msg(b, m);
    }
    for (size_t i = 0; i < b->nedges; i++)
        sy_topic_release(b->topics, b->edges[i]);
    sy_free(b->edges);
    if (b->buckets != NULL)
        for (size_t i = 0; i < b->nbuckets; i++) {
            chan_t *c = b->buckets[i];
            while (c != NULL) {
                chan_t *next = c->next;
                sy_free(c);
                c = next;
            }
        }
    sy_free(b->buckets);
    sy_free(b->dirty);
    sy_free(b->slot_shard);
    if (b->poll != NULL)
        sy_poll_destroy(b->poll);
    if (b->wake_fd >= 0)
        close(b->wake_fd);
    if (b->hosts != NULL)
        for (unsigned i = 0; i < b->nseeds; i++)
            sy_free(b->hosts[i]);
    sy_free(b->hosts);
    sy_free(b->ports);
    sy_free(b->user);
    sy_free(b->pass);
    sy_free(b->prefix);
    if (b->tls != NULL && b->tls_free != NULL)
        b->tls_free(b->tls);
    if (b->lock_ok)
        pthread_mutex_destroy(&b->lock);
    sy_free(b);
}

int sy_bus_publish(sy_bus_t *b, const char *topic, size_t topic_len, const void *data, size_t len, unsigned flags) {
    if (atomic_load_explicit(&b->state, memory_order_relaxed) != SY_BUS_UP) {
        count(&b->c.dropped, 1);
        return EAGAIN;
    }
    size_t channel_len = b->prefix_len + topic_len;
    size_t size = sizeof(bus_msg_t) + channel_len + SY_BUS_ENV_LEN + len;
    uint64_t before = atomic_fetch_add(&b->c.buffered_bytes, size);
    if (before + size > b->max_buffer) {
        atomic_fetch_sub(&b->c.buffered_bytes, size);
        count(&b->c.dropped, 1);
        return EAGAIN;
    }
    bus_msg_t *m = sy_malloc(size);
    if (m == NULL) {
        atomic_fetch_sub(&b->c.buffered_bytes, size);
        count(&b->c.dropped, 1);
        return ENOMEM;
    }
    m->next = NULL;
    m->size = size;
    m->channel_len = channel_len;
    m->body_len = SY_BUS_ENV_LEN + len;
    memcpy(m->data, b->prefix, b->prefix_len);
    memcpy(m->data + b->prefix_len, topic, topic_len);
    if (len > 0)
        memcpy(m->data + channel_len + SY_BUS_ENV_LEN, data, len);
    pthread_mutex_lock(&b->lock);
    /* Numbered in queue order (under the lock): the order on the wire. */
    b->seq++;
    sy_bus_env_write((uint8_t *)m->data + channel_len, b->node, b->seq, flags);
    if (b->qtail != NULL)
        b->qtail->next = m;
    else
        b->qhead = m;
    b->qtail = m;
    bool need_wake = !b->woken;
    b->woken = true;
    pthread_mutex_unlock(&b->lock);
    if (need_wake)
        wake(b);
    return 0;
}

void sy_bus_edge(void *ctx, sy_topic_t *t) {
    sy_bus_t *b = ctx;
    sy_topic_ref(t);
    pthread_mutex_lock(&b->lock);
    if (b->nedges == b->edges_cap) {
        size_t cap = b->edges_cap ? b->edges_cap * 2 : 64;
        sy_topic_t **e = sy_realloc(b->edges, cap * sizeof(*e));
        if (e == NULL) {
            pthread_mutex_unlock(&b->lock);
            /* Lost: the channel follows at the topic's next edge. */
            sy_topic_release(b->topics, t);
            return;
        }
        b->edges = e;
        b->edges_cap = cap;
    }
    b->edges[b->nedges++] = t;
    bool need_wake = !b->woken;
    b->woken = true;
    pthread_mutex_unlock(&b->lock);
    if (need_wake)
        wake(b);
}

void sy_bus_stats(sy_bus_t *b, sy_bus_stats_t *out) {
#define BUS_READ(field, js, metric, type, help) out->field = atomic_load_explicit(&b->c.field, memory_order_relaxed);
    SY_BUS_STATS_LIST(BUS_READ)
#undef BUS_READ
    out->state = (sy_bus_state_t)atomic_load(&b->state);
}

uint64_t sy_bus_node(const sy_bus_t *b) { return b->node; }
