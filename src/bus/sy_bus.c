/* sy_bus — the owner's side of the bus (sy_bus.h): create, start, stop,
 * destroy; publishes and the topics' edges handed to the bus thread
 * (sy_bus_thread.c) under the lock; stats. */
#define _GNU_SOURCE
#include "bus/sy_bus.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "base/sy_random.h"
#include "base/sy_thread.h"
#include "bus/sy_bus_env.h"
#include "bus/sy_bus_int.h"

static char *dup_str(const char *s, size_t len) {
    char *d = sy_malloc(len + 1);
    if (d != NULL) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

/* A copy of an optional string: true when there is none or it is copied. */
static bool dup_opt(char **to, const char *s) { return s == NULL || (*to = dup_str(s, strlen(s))) != NULL; }

/* Copies n addresses into fresh arrays (one slot at least): true when all
 * were copied; free_addrs frees what was. */
static bool dup_addrs(char ***hosts, uint16_t **ports, const char *const *from_hosts, const uint16_t *from_ports,
                      unsigned n) {
    *hosts = sy_calloc(n ? n : 1, sizeof(**hosts));
    *ports = sy_calloc(n ? n : 1, sizeof(**ports));
    bool ok = *hosts != NULL && *ports != NULL;
    for (unsigned i = 0; ok && i < n; i++) {
        (*ports)[i] = from_ports[i];
        ok = ((*hosts)[i] = dup_str(from_hosts[i], strlen(from_hosts[i]))) != NULL;
    }
    return ok;
}

static void free_addrs(char **hosts, uint16_t *ports, unsigned n) {
    if (hosts != NULL)
        for (unsigned i = 0; i < n; i++)
            sy_free(hosts[i]);
    sy_free(hosts);
    sy_free(ports);
}

static void wake(sy_bus_t *b) { sy_wake_signal(&b->wake); }

/* Unlocks b->lock after queueing work for the bus thread, and wakes it
 * unless a wake-up is on its way already. */
static void unlock_and_wake(sy_bus_t *b) {
    bool need_wake = !b->woken;
    b->woken = true;
    sy_mutex_unlock(&b->lock);
    if (need_wake)
        wake(b);
}

sy_bus_t *sy_bus_create(const sy_bus_opts_t *o, sy_topics_t *topics, sy_bus_deliver_fn deliver, void *deliver_ctx,
                        sy_bus_state_fn on_state, void *state_ctx, char *err, size_t errlen) {
    bool bad = false;
    size_t name_len = o->sentinel_name != NULL ? strlen(o->sentinel_name) : 0;
    if (o->nsentinels > 0) {
        if (o->nsentinels > SY_BUS_MAX_SEEDS || o->cluster || o->nseeds != 0) {
            snprintf(err, errlen, "Sentinel needs 1..%u sentinels, no Redis address and no cluster", SY_BUS_MAX_SEEDS);
            bad = true;
        } else if (name_len == 0 || name_len > SY_BUS_SENTINEL_NAME_MAX || strpbrk(o->sentinel_name, " \t\r\n")) {
            snprintf(err, errlen, "the Sentinel primary's name must be 1..%u bytes without spaces",
                     SY_BUS_SENTINEL_NAME_MAX);
            bad = true;
        }
    } else if (o->nseeds == 0 || o->nseeds > SY_BUS_MAX_SEEDS || (!o->cluster && o->nseeds != 1)) {
        snprintf(err, errlen, "the bus needs one Redis (or 1..%u cluster seeds)", SY_BUS_MAX_SEEDS);
        bad = true;
    }
    if (!bad && (o->backoff_min_ms == 0 || o->backoff_max_ms < o->backoff_min_ms || o->connect_timeout_ms == 0)) {
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
    sy_wake_init(&b->wake);
    b->nseeds = o->nseeds;
    b->prefix = dup_str(o->prefix, o->prefix_len);
    /* The nodes' control channel (sy_bus_ctl_publish): prefix + its name. */
    b->ctl_channel_len = o->prefix_len + SY_BUS_CTL_NAME_LEN;
    b->ctl_channel = sy_malloc(b->ctl_channel_len);
    if (b->ctl_channel != NULL) {
        memcpy(b->ctl_channel, o->prefix, o->prefix_len);
        memcpy(b->ctl_channel + o->prefix_len, SY_BUS_CTL_NAME, SY_BUS_CTL_NAME_LEN);
    }
    bool ok = b->prefix != NULL && b->ctl_channel != NULL &&
              dup_addrs(&b->hosts, &b->ports, o->hosts, o->ports, o->nseeds) /* none with Sentinel */ &&
              sy_bus_chans_init(&b->chans, b->prefix, o->prefix_len) == 0 && dup_opt(&b->user, o->user) &&
              dup_opt(&b->pass, o->pass);
    if (ok && o->nsentinels > 0) {
        b->nsentinels = o->nsentinels;
        ok = dup_addrs(&b->sentinel_hosts, &b->sentinel_ports, o->sentinel_hosts, o->sentinel_ports, o->nsentinels) &&
             (b->sentinel_name = dup_str(o->sentinel_name, name_len)) != NULL &&
             dup_opt(&b->sentinel_user, o->sentinel_user) && dup_opt(&b->sentinel_pass, o->sentinel_pass);
    }
    if (ok) {
        b->poll = sy_poll_create();
        ok = b->poll != NULL && sy_wake_open(&b->wake) == 0 &&
             sy_poll_add(b->poll, sy_wake_fd(&b->wake), SY_POLL_IN, 0) == 0;
    }
    if (ok)
        ok = b->lock_ok = sy_mutex_init(&b->lock) == 0;
    if (!ok) {
        snprintf(err, errlen, "cannot set up the bus: %s", sy_strerror(errno ? errno : ENOMEM));
        b->joined = true;
        sy_bus_destroy(b);
        return NULL;
    }
    b->node = sy_random_u64();
    b->epoch_rng = sy_random_u64() | 1;
    sy_bus_script_init(&b->publish_script, sy_bus_seq_publish_lua);
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
    b->sentinel_lconf = b->lconf;
    b->sentinel_lconf.user = b->sentinel_user;
    b->sentinel_lconf.pass = b->sentinel_pass;
    if (b->nsentinels > 0)
        sy_bus_sentinel_init(&b->sentinel,
                             &(sy_bus_sentinel_conf_t){.hosts = b->sentinel_hosts,
                                                       .ports = b->sentinel_ports,
                                                       .n = b->nsentinels,
                                                       .name = b->sentinel_name,
                                                       .links = {&sy_bus_thread_ops, b, &b->sentinel_lconf, b->poll},
                                                       .seed = (uint32_t)(b->node >> 17)});
    sy_bus_shards_init(&b->shards, &(sy_bus_shards_conf_t){.cluster = b->cluster,
                                                           .sentinel = b->nsentinels > 0,
                                                           .hosts = b->hosts,
                                                           .ports = b->ports,
                                                           .nseeds = b->nseeds,
                                                           .links = {&sy_bus_thread_ops, b, &b->lconf, b->poll},
                                                           .seed = (uint32_t)(b->node ^ (b->node >> 32))});
    sy_bus_subs_init(&b->subs, &b->chans, &b->shards, &b->c.channels, &b->c.subscribe_commands);
    b->topics = topics;
    b->deliver = deliver;
    b->deliver_ctx = deliver_ctx;
    b->on_state = on_state;
    b->state_ctx = state_ctx;
    atomic_init(&b->state, SY_BUS_CONNECTING);
    b->joined = true; /* nothing to join until started */
    return b;
}

sy_err_t sy_bus_start(sy_bus_t *b) {
    if (b->started)
        return 0;
    sy_err_t rc = sy_thread_create(&b->thread, sy_bus_thread_main, b);
    if (rc != 0)
        return rc;
    b->started = true;
    b->joined = false;
    return 0;
}

void sy_bus_stop(sy_bus_t *b, unsigned flush_ms) {
    if (!b->started || b->joined)
        return;
    sy_mutex_lock(&b->lock);
    b->stop = true;
    b->flush_ms = flush_ms;
    sy_mutex_unlock(&b->lock);
    wake(b);
    (void)sy_thread_join(&b->thread);
    b->joined = true;
}

void sy_bus_destroy(sy_bus_t *b) {
    if (b == NULL)
        return;
    /* What the thread did not take: queued publishes and edges. */
    while (b->qhead != NULL) {
        sy_bus_msg_t *m = b->qhead;
        b->qhead = m->next;
        sy_bus_msg_drop(b, m);
    }
    while (b->chead != NULL) {
        sy_bus_call_t *c = b->chead;
        b->chead = c->next;
        sy_bus_call_end(c, NULL, "the bus stopped");
    }
    for (size_t i = 0; i < b->nedges; i++)
        sy_topic_release(b->topics, b->edges[i]);
    sy_free(b->edges);
    for (size_t i = 0; i < b->nresync; i++)
        sy_free(b->resync[i]);
    sy_free(b->resync);
    sy_bus_subs_destroy(&b->subs);
    sy_bus_chans_destroy(&b->chans);
    if (b->poll != NULL)
        sy_poll_destroy(b->poll);
    sy_wake_close(&b->wake); /* after the poller: sy_poll.h's rule for closing */
    free_addrs(b->hosts, b->ports, b->nseeds);
    sy_free(b->user);
    sy_free(b->pass);
    free_addrs(b->sentinel_hosts, b->sentinel_ports, b->nsentinels);
    sy_free(b->sentinel_name);
    sy_free(b->sentinel_user);
    sy_free(b->sentinel_pass);
    sy_free(b->prefix);
    sy_free(b->ctl_channel);
    if (b->tls != NULL && b->tls_free != NULL)
        b->tls_free(b->tls);
    if (b->lock_ok)
        sy_mutex_destroy(&b->lock);
    sy_free(b);
}

void sy_bus_msg_drop(sy_bus_t *b, sy_bus_msg_t *m) {
    atomic_fetch_sub(&b->c.buffered_bytes, m->size);
    sy_bus_count(&b->c.dropped, 1);
    sy_free(m);
}

void sy_bus_set_history(sy_bus_t *b, const sy_bus_history_ops_t *ops, void *ctx) {
    b->hist = *ops;
    b->hist_ctx = ctx;
}

void sy_bus_set_ctl(sy_bus_t *b, sy_bus_ctl_fn fn, void *ctx) {
    b->ctl = fn;
    b->ctl_ctx = ctx;
}

void sy_bus_node_id(const sy_bus_t *b, char out[17]) {
    (void)snprintf(out, 17, "%016llx", (unsigned long long)b->node);
}

/* Queues c for the bus thread (sy_bus_call's errors). */
static sy_err_t queue_call(sy_bus_t *b, sy_bus_call_t *c) {
    sy_mutex_lock(&b->lock);
    if (b->stop) {
        sy_mutex_unlock(&b->lock);
        sy_free(c);
        return ESHUTDOWN;
    }
    if (b->ctail != NULL)
        b->ctail->next = c;
    else
        b->chead = c;
    b->ctail = c;
    unlock_and_wake(b);
    return 0;
}

sy_err_t sy_bus_call(sy_bus_t *b, const char *route, size_t route_len, unsigned argc, const char *const *argv,
                     const size_t *lens, sy_bus_call_fn done, void *ctx) {
    if (argc == 0 || argc > SY_BUS_CALL_ARGS_MAX)
        return EINVAL;
    sy_bus_call_t *c = sy_bus_call_new(route, route_len, argc, argv, lens, done, ctx);
    return c != NULL ? queue_call(b, c) : ENOMEM;
}

sy_err_t sy_bus_ctl_publish(sy_bus_t *b, const void *data, size_t len, sy_bus_call_fn done, void *ctx) {
    const char *argv[] = {"SPUBLISH", b->ctl_channel, data};
    size_t lens[] = {8, b->ctl_channel_len, len};
    return sy_bus_call(b, b->ctl_channel, b->ctl_channel_len, 3, argv, lens, done, ctx);
}

sy_err_t sy_bus_ctl_fence(sy_bus_t *b, sy_bus_call_fn done, void *ctx) {
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    sy_bus_call_t *c = sy_bus_call_new(b->ctl_channel, b->ctl_channel_len, 1, argv, lens, done, ctx);
    if (c == NULL)
        return ENOMEM;
    c->sub = true;
    return queue_call(b, c);
}

bool sy_bus_is_up(sy_bus_t *b) { return atomic_load_explicit(&b->state, memory_order_relaxed) == SY_BUS_UP; }

static sy_err_t queue_publish(sy_bus_t *b, const char *topic, size_t topic_len, const void *data, size_t len,
                              unsigned flags, uint32_t hist_size, uint32_t ttl_s) {
    if (atomic_load_explicit(&b->state, memory_order_relaxed) != SY_BUS_UP) {
        sy_bus_count(&b->c.dropped, 1);
        return EAGAIN;
    }
    size_t channel_len = b->prefix_len + topic_len;
    size_t size = sizeof(sy_bus_msg_t) + channel_len + SY_BUS_ENV_LEN + len;
    uint64_t before = atomic_fetch_add(&b->c.buffered_bytes, size);
    if (before + size > b->max_buffer) {
        atomic_fetch_sub(&b->c.buffered_bytes, size);
        sy_bus_count(&b->c.dropped, 1);
        return EAGAIN;
    }
    sy_bus_msg_t *m = sy_malloc(size);
    if (m == NULL) {
        atomic_fetch_sub(&b->c.buffered_bytes, size);
        sy_bus_count(&b->c.dropped, 1);
        return ENOMEM;
    }
    m->next = NULL;
    m->size = size;
    m->redirects = 0;
    m->hist_size = hist_size;
    m->ttl_s = ttl_s;
    m->eval = false;
    m->channel_len = channel_len;
    m->body_len = SY_BUS_ENV_LEN + len;
    memcpy(m->data, b->prefix, b->prefix_len);
    memcpy(m->data + b->prefix_len, topic, topic_len);
    if (len > 0)
        memcpy(m->data + channel_len + SY_BUS_ENV_LEN, data, len);
    sy_mutex_lock(&b->lock);
    /* Numbered in queue order (under the lock): the order on the wire. */
    b->seq++;
    sy_bus_env_write((uint8_t *)m->data + channel_len, b->node, b->seq, flags);
    if (b->qtail != NULL)
        b->qtail->next = m;
    else
        b->qhead = m;
    b->qtail = m;
    unlock_and_wake(b);
    return 0;
}

sy_err_t sy_bus_publish(sy_bus_t *b, const char *topic, size_t topic_len, const void *data, size_t len,
                        unsigned flags) {
    return queue_publish(b, topic, topic_len, data, len, flags, 0, 0);
}

sy_err_t sy_bus_publish_seq(sy_bus_t *b, const char *topic, size_t topic_len, const void *data, size_t len,
                            unsigned flags, uint32_t size, uint32_t ttl_s) {
    return queue_publish(b, topic, topic_len, data, len, flags, size > 0 ? size : 1, ttl_s);
}

void sy_bus_edge(void *ctx, sy_topic_t *t) {
    sy_bus_t *b = ctx;
    sy_topic_ref(t);
    sy_mutex_lock(&b->lock);
    if (b->nedges == b->edges_cap) {
        size_t cap = b->edges_cap ? b->edges_cap * 2 : 64;
        sy_topic_t **e = sy_realloc(b->edges, cap * sizeof(*e));
        if (e == NULL) {
            sy_mutex_unlock(&b->lock);
            /* Lost: the channel follows at the topic's next edge. */
            sy_topic_release(b->topics, t);
            return;
        }
        b->edges = e;
        b->edges_cap = cap;
    }
    b->edges[b->nedges++] = t;
    unlock_and_wake(b);
}

void sy_bus_stats(sy_bus_t *b, sy_bus_stats_t *out) {
#define BUS_READ(field, js, metric, type, help) out->field = atomic_load_explicit(&b->c.field, memory_order_relaxed);
    SY_BUS_STATS_LIST(BUS_READ)
#undef BUS_READ
    out->state = (sy_bus_state_t)atomic_load(&b->state);
}
