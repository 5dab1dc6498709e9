/* sy_bus_subs — see sy_bus_subs.h. */
#include "bus/sy_bus_subs.h"

#include <stdlib.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "bus/sy_bus_link.h"

#define BUS_CHANNELS_PER_COMMAND 512
/* Subscription changes after a (S)SUBSCRIBE command wait this long, so
 * that a burst of connections becomes a few commands, not one per turn;
 * the first change after a quiet spell goes at once. */
#define BUS_SUBSCRIBE_WINDOW_MS 10

/* One channel's command: (un)subscribe c on shard. */
typedef struct action {
    sy_bus_shard_t *shard;
    unsigned slot;
    bool subscribe;
    sy_bus_chan_t *chan;
} action_t;

static inline void count(atomic_uint_fast64_t *c, uint64_t n) { atomic_fetch_add_explicit(c, n, memory_order_relaxed); }

void sy_bus_subs_init(sy_bus_subs_t *s, sy_bus_chans_t *chans, sy_bus_shards_t *shards, atomic_uint_fast64_t *channels,
                      atomic_uint_fast64_t *commands) {
    memset(s, 0, sizeof(*s));
    s->chans = chans;
    s->shards = shards;
    s->channels = channels;
    s->commands = commands;
}

void sy_bus_subs_destroy(sy_bus_subs_t *s) {
    sy_free(s->dirty);
    s->dirty = NULL;
    s->ndirty = s->dirty_cap = 0;
}

static void mark_dirty(sy_bus_subs_t *s, sy_bus_chan_t *c) {
    if (c->dirty)
        return;
    if (s->ndirty == s->dirty_cap) {
        size_t cap = s->dirty_cap ? s->dirty_cap * 2 : 64;
        sy_bus_chan_t **d = sy_realloc(s->dirty, cap * sizeof(*d));
        if (d == NULL) {
            s->all_dirty = true; /* reconciled by the full pass instead */
            return;
        }
        s->dirty = d;
        s->dirty_cap = cap;
    }
    c->dirty = true;
    s->dirty[s->ndirty++] = c;
}

/* The channels gauge counts topics' channels (not the control channel's). */
static void count_chan(sy_bus_subs_t *s, const sy_bus_chan_t *c, uint64_t n) {
    if (!sy_bus_chan_is_ctl(c->name, c->len))
        count(s->channels, n);
}

/* The subscription on c's shard is gone (its link dropped, or Redis said
 * so): nothing to undo there. */
static void chan_lost(sy_bus_subs_t *s, sy_bus_chan_t *c) {
    if (c->confirmed)
        count_chan(s, c, (uint64_t)-1);
    c->sent = false;
    c->confirmed = false;
    c->shard = NULL;
    c->unsubs = 0;
}

void sy_bus_subs_want(sy_bus_subs_t *s, const char *name, size_t len, bool want) {
    sy_bus_chan_t *c = want ? sy_bus_chan_get(s->chans, name, len) : sy_bus_chan_find(s->chans, name, len);
    if (c != NULL) {
        c->want = want;
        mark_dirty(s, c);
    }
}

void sy_bus_subs_link_up(sy_bus_subs_t *s) { s->all_dirty = true; }

void sy_bus_subs_shard_lost(sy_bus_subs_t *s, const sy_bus_shard_t *shard) {
    sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
    sy_bus_chan_t *c;
    while ((c = sy_bus_chan_next(s->chans, &it)) != NULL)
        if (c->shard == shard) {
            chan_lost(s, c);
            mark_dirty(s, c);
        }
}

sy_bus_subs_event_t sy_bus_subs_push(sy_bus_subs_t *s, const sy_bus_shard_t *shard, bool subscribe, const char *name,
                                     size_t len, sy_bus_chan_t **chan) {
    size_t plen = s->chans->prefix_len;
    *chan = NULL;
    if (len < plen || memcmp(name, s->chans->prefix, plen) != 0)
        return SY_BUS_SUBS_NONE;
    sy_bus_chan_t *c = sy_bus_chan_find(s->chans, name + plen, len - plen);
    if (c == NULL)
        return SY_BUS_SUBS_NONE;
    *chan = c;
    if (subscribe) {
        if (c->sent && c->shard == shard && !c->confirmed) {
            c->confirmed = true;
            count_chan(s, c, 1);
            return SY_BUS_SUBS_CONFIRMED;
        }
        return SY_BUS_SUBS_NONE;
    }
    if (c->unsubs > 0) {
        c->unsubs--; /* ours */
        if (c->unsubs == 0 && !c->want && !c->sent)
            mark_dirty(s, c); /* done with: reconcile forgets it */
        return SY_BUS_SUBS_NONE;
    }
    if (c->sent && c->shard == shard) {
        /* Redis unsubscribed us: the slot moved. Subscribe again where the
         * new map says. */
        chan_lost(s, c);
        mark_dirty(s, c);
        return SY_BUS_SUBS_MOVED;
    }
    return SY_BUS_SUBS_NONE;
}

void sy_bus_subs_rehome(sy_bus_subs_t *s, const sy_bus_shard_set_t *next) {
    sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
    sy_bus_chan_t *c;
    while ((c = sy_bus_chan_next(s->chans, &it)) != NULL) {
        if (!c->sent && !c->want)
            continue;
        if (c->sent && c->shard != next->slot[c->slot]) {
            /* Undo the old subscription when that node stays. */
            if (sy_bus_shard_set_has(next, c->shard) && c->shard->sub.state == SY_LINK_UP) {
                const char *argv[2] = {"SUNSUBSCRIBE", NULL};
                size_t lens[2] = {12, s->chans->prefix_len + c->len};
                char *key = sy_bus_chan_key(s->chans, c->name, c->len);
                if (key != NULL) {
                    argv[1] = key;
                    if (sy_bus_link_append(&c->shard->sub, 2, argv, lens) == 0)
                        count(s->commands, 1);
                    sy_free(key);
                }
            }
            chan_lost(s, c);
        }
        mark_dirty(s, c);
    }
}

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
static void send_actions(sy_bus_subs_t *s, action_t *a, size_t n) {
    qsort(a, n, sizeof(*a), cmp_action);
    bool cluster = s->shards->conf.cluster;
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
               (!cluster || a[j].slot == a[i].slot) && argc <= BUS_CHANNELS_PER_COMMAND) {
            sy_bus_chan_t *c = a[j].chan;
            char *name = sy_bus_chan_key(s->chans, c->name, c->len);
            if (name == NULL) {
                ok = false;
                break;
            }
            names[argc - 1] = name;
            argv[argc] = name;
            lens[argc] = s->chans->prefix_len + c->len;
            argc++;
            j++;
        }
        int rc = ok ? sy_bus_link_append(&a[i].shard->sub, (int)argc, argv, lens) : ENOMEM;
        if (rc == 0)
            count(s->commands, 1);
        for (size_t k = i; k < j; k++) {
            sy_bus_chan_t *c = a[k].chan;
            if (rc == 0 && a[k].subscribe) {
                c->sent = true;
                c->shard = a[k].shard;
            } else if (rc == 0) {
                if (c->confirmed)
                    count_chan(s, c, (uint64_t)-1);
                c->unsubs++;
                c->sent = false;
                c->confirmed = false;
                c->shard = NULL;
            } else {
                mark_dirty(s, c); /* again next turn */
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
static bool reconcile(sy_bus_subs_t *s) {
    if (s->all_dirty) {
        s->all_dirty = false;
        sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
        sy_bus_chan_t *c;
        while ((c = sy_bus_chan_next(s->chans, &it)) != NULL)
            mark_dirty(s, c);
    }
    if (s->ndirty == 0)
        return false;
    sy_bus_chan_t **list = s->dirty;
    size_t n = s->ndirty;
    s->dirty = NULL;
    s->ndirty = s->dirty_cap = 0;
    action_t *acts = sy_malloc(n * sizeof(*acts));
    size_t nact = 0;
    for (size_t i = 0; i < n; i++) {
        sy_bus_chan_t *c = list[i];
        c->dirty = false;
        if (acts == NULL) {
            mark_dirty(s, c);
            continue;
        }
        sy_bus_shard_t *t = sy_bus_shards_sub_target(s->shards, c->slot);
        if (c->want && !c->sent) {
            if (t != NULL && t->sub.state == SY_LINK_UP)
                acts[nact++] = (action_t){.shard = t, .slot = c->slot, .subscribe = true, .chan = c};
            /* else: subscribed when the link comes up (link_up) or the
             * map is read (rehome) */
        } else if (!c->want && c->sent) {
            if (c->shard->sub.state == SY_LINK_UP)
                acts[nact++] = (action_t){.shard = c->shard, .slot = c->slot, .subscribe = false, .chan = c};
        } else if (!c->want && !c->sent && c->unsubs == 0) {
            sy_bus_chan_remove(s->chans, c);
            continue;
        }
    }
    if (nact > 0)
        send_actions(s, acts, nact);
    sy_free(acts);
    sy_free(list);
    return nact > 0;
}

int64_t sy_bus_subs_run(sy_bus_subs_t *s, int64_t now) {
    if (s->ndirty == 0 && !s->all_dirty)
        return INT64_MAX;
    if (now < s->due_ms)
        return s->due_ms;
    if (reconcile(s))
        s->due_ms = now + BUS_SUBSCRIBE_WINDOW_MS;
    return INT64_MAX;
}
