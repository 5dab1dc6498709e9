/* sy_server_publish — publishing, topics' history and the bus' callbacks
 * of the server (sy_server.h; the struct: sy_server_int.h). */
#define _GNU_SOURCE
#include "sy_server_int.h"

#include <errno.h>
#include <string.h>

sy_refbuf_t *sy_server_message_frame(const sy_server_t *s, const void *data, size_t len, unsigned flags) {
    const sy_server_opts_t *o = &s->shared.opts;
    bool z = (flags & SY_SEND_COMPRESS) && o->compression && len >= o->compress_threshold;
    return sy_ws_msg_z((flags & SY_SEND_BINARY) ? SY_WS_OP_BINARY : SY_WS_OP_TEXT, data, len, z);
}

/* Queues cmd to io, with SY_SEND_LATER's wake-up (sy_io_push_later) when
 * flags ask for it. */
int sy_server_push_io(sy_io_t *io, const sy_cmd_t *cmd, unsigned flags) {
    return (flags & SY_SEND_LATER) ? sy_io_push_later(io, cmd) : sy_io_push(io, cmd);
}

/* The connection x leaves out when it is on this node (its socket id's
 * node is this server's, or 0), else 0. */
static uint64_t excluded_here(const sy_server_t *s, const sy_pub_extra_t *x) {
    if (x == NULL || x->exclude == 0)
        return 0;
    return x->exclude_node == 0 || x->exclude_node == sy_server_pusher_node(s) ? x->exclude : 0;
}

/* Queues the message's frames to every IO thread with subscribers of t
 * (plain: made on first need, one reference each; v1: the symphony.v1
 * frame or NULL, a reference each). */
static int push_publish(sy_server_t *s, sy_topic_t *t, const void *data, size_t len, unsigned flags, sy_refbuf_t *v1,
                        uint64_t epoch, size_t *subscribers, const sy_pub_extra_t *x) {
    int rc = 0;
    sy_refbuf_t *m = NULL, *meta = NULL;
    if (x != NULL && x->meta_len > 0 && (meta = sy_refbuf_raw(x->meta, x->meta_len)) == NULL)
        return ENOMEM;
    for (unsigned i = 0; i < s->shared.nthreads; i++) {
        unsigned n = sy_topic_interest(t, i);
        if (n == 0)
            continue;
        if (m == NULL && (m = sy_server_message_frame(s, data, len, flags)) == NULL) {
            rc = ENOMEM;
            break;
        }
        sy_refbuf_ref(m, 1);
        if (v1 != NULL)
            sy_refbuf_ref(v1, 1);
        if (meta != NULL)
            sy_refbuf_ref(meta, 1);
        sy_topic_ref(t);
        sy_cmd_t cmd = {.type = SY_CMD_PUBLISH,
                        .topic = t,
                        .buf = m,
                        .v1 = v1,
                        .epoch = epoch,
                        .meta = meta,
                        .conn = excluded_here(s, x)};
        if (sy_server_push_io(s->io[i], &cmd, flags) != 0) {
            sy_refbuf_release(m);
            sy_refbuf_release(v1);
            sy_refbuf_release(meta);
            sy_topic_release(&s->shared.topics, t); /* not the last: the caller holds one */
            continue;
        }
        *subscribers += n;
    }
    sy_refbuf_release(m);
    sy_refbuf_release(meta);
    return rc;
}

/* The symphony.v1 frame of a message (offset: with has_offset). */
static sy_refbuf_t *v1_frame(const sy_server_t *s, const sy_topic_t *t, bool has_offset, uint64_t offset,
                             const void *data, size_t len, unsigned flags) {
    const sy_server_opts_t *o = &s->shared.opts;
    bool z = (flags & SY_SEND_COMPRESS) && o->compression && len >= o->compress_threshold;
    return sy_v1_publish_frame((flags & SY_SEND_BINARY) ? SY_WS_OP_BINARY : SY_WS_OP_TEXT, t->id, has_offset, offset,
                               data, len, z);
}

/* True when publishes to t go through its history (sy_history.h). */
bool sy_server_with_history(sy_server_t *s, sy_topic_t *t) {
    return sy_hist_default_on(&s->shared.hist) || atomic_load_explicit(&t->hist, memory_order_acquire) != NULL;
}

/* Locked. t's history h changed sequence (change): its symphony.v1
 * subscribers are told their new position before what follows, in the
 * same order as the topic's publishes (sy_history.h). */
static void announce(sy_server_t *s, sy_topic_t *t, const sy_history_t *h, const sy_hist_change_t *change) {
    if (!change->changed)
        return;
    sy_v1_subscribed_t n = {.topic = t->name,
                            .topic_len = t->name_len,
                            .id = t->id,
                            .history = true,
                            .epoch = h->epoch,
                            .offset = h->last,
                            .resumed = true,
                            .since = change->before,
                            .reason = change->reason};
    sy_refbuf_t *m = NULL;
    for (unsigned i = 0; i < s->shared.nthreads; i++) {
        if (sy_topic_interest(t, i) == 0)
            continue;
        if (m == NULL && (m = sy_v1_subscribed_frame(&n)) == NULL)
            return; /* out of memory: their next resume says what they missed */
        sy_refbuf_ref(m, 1);
        sy_topic_ref(t);
        sy_cmd_t cmd = {.type = SY_CMD_NOTICE, .topic = t, .buf = m, .epoch = h->epoch, .offset = h->last};
        if (sy_io_push(s->io[i], &cmd) != 0) {
            sy_refbuf_release(m);
            sy_topic_release(&s->shared.topics, t); /* not the last: the caller holds one */
        }
    }
    sy_refbuf_release(m);
}

/* Where a message of Redis' sequence goes (the bus' history callbacks). */
/* A publish's extras on the bus, before its payload: the meta's length
 * (2 bytes, little-endian), the meta, then the excluded connection's node
 * (its Pusher node: 0 none) and id (8 bytes each, little-endian). */
#define EXTRAS_FIXED 18u

static uint8_t *extras_join(const sy_server_t *s, const sy_pub_extra_t *x, const void *data, size_t len,
                            size_t *out_len) {
    uint64_t node = x->exclude != 0 && x->exclude_node == 0 ? sy_server_pusher_node(s) : x->exclude_node;
    uint8_t *p = sy_malloc(EXTRAS_FIXED + x->meta_len + len);
    if (p == NULL)
        return NULL;
    p[0] = (uint8_t)(x->meta_len & 0xff);
    p[1] = (uint8_t)(x->meta_len >> 8);
    if (x->meta_len > 0)
        memcpy(p + 2, x->meta, x->meta_len);
    uint8_t *q = p + 2 + x->meta_len;
    for (unsigned i = 0; i < 8; i++) {
        q[i] = (uint8_t)(node >> (8 * i));
        q[8 + i] = (uint8_t)(x->exclude >> (8 * i));
    }
    if (len > 0)
        memcpy(q + 16, data, len);
    *out_len = EXTRAS_FIXED + x->meta_len + len;
    return p;
}

/* Reads the extras at *data (moved past them; push_publish leaves the
 * connection out only on the node it names). False: cut short. */
static bool extras_read(const void **data, size_t *len, sy_pub_extra_t *x) {
    const uint8_t *p = *data;
    if (*len < EXTRAS_FIXED)
        return false;
    size_t ml = (size_t)p[0] | ((size_t)p[1] << 8);
    if (*len < EXTRAS_FIXED + ml)
        return false;
    const uint8_t *q = p + 2 + ml;
    uint64_t node = 0, conn = 0;
    for (unsigned i = 0; i < 8; i++) {
        node |= (uint64_t)q[i] << (8 * i);
        conn |= (uint64_t)q[8 + i] << (8 * i);
    }
    *x = (sy_pub_extra_t){.meta = p + 2, .meta_len = ml, .exclude_node = node, .exclude = node != 0 ? conn : 0};
    *data = q + 16;
    *len -= EXTRAS_FIXED + ml;
    return true;
}

typedef struct seq_at {
    uint64_t epoch, offset;
    bool live; /* to the subscribers too (else history only) */
} seq_at_t;

/* Queues a message to this node's subscribers of t (the owner's publish,
 * and the bus thread's deliveries, which wake the IO threads at once).
 * A topic with history: the offset, the kept frame and the commands under
 * the history lock, so that each IO thread sees the topic's publishes in
 * offset order and a subscription's head splits them exactly
 * (io/sy_history.h). at: the message's place in Redis' sequence (with a
 * bus); NULL: this node numbers it. */
/* What the registered message protocol says a publish to topic keeps
 * (io/conn/sy_wire.h: keeps; a Pusher cache channel's), *ttl_s with it. */
static sy_keep_t proto_keeps(const sy_server_t *s, const char *topic, size_t len, const sy_pub_extra_t *x,
                             uint32_t *ttl_s) {
    const sy_msgproto_t *mp = s->shared.keeper;
    if (mp == NULL)
        return SY_KEEP_DEFAULT;
    return mp->keeps(s->shared.proto_state, topic, len, x != NULL ? x->meta : NULL, x != NULL ? x->meta_len : 0, ttl_s);
}

/* A publish the protocol keeps out of its topic's history (delivered only). */
static bool unkept(const sy_server_t *s, const sy_topic_t *t, const sy_pub_extra_t *x) {
    uint32_t ttl_s;
    return x != NULL && proto_keeps(s, t->name, t->name_len, x, &ttl_s) == SY_KEEP_NOT;
}

static int publish_local(sy_server_t *s, sy_topic_t *t, const void *data, size_t len, unsigned flags,
                         size_t *subscribers, const seq_at_t *at, const sy_pub_extra_t *x) {
    if (at == NULL && (!sy_server_with_history(s, t) || unkept(s, t, x))) {
        sy_refbuf_t *v1 = NULL;
        if (atomic_load_explicit(&t->v1, memory_order_relaxed) > 0)
            v1 = v1_frame(s, t, false, 0, data, len, flags); /* NULL: the IO threads make it */
        int rc = push_publish(s, t, data, len, flags, v1, 0, subscribers, x);
        sy_refbuf_release(v1);
        return rc;
    }
    sy_hist_t *g = &s->shared.hist;
    sy_hist_lock(g);
    sy_history_t *h = sy_hist_of(g, t, true);
    bool keep = h != NULL && h->size > 0;
    sy_hist_change_t change = {.changed = false};
    if (keep && at != NULL) {
        if (!sy_hist_adopt(g, h, at->epoch, at->offset, &change)) {
            sy_hist_unlock(g);
            return 0; /* kept already */
        }
    } else if (keep && g->sequenced) {
        sy_hist_localize(g, h, &change); /* numbered here: never in Redis' epoch */
    }
    bool live = at == NULL || at->live;
    if (keep && live)
        announce(s, t, h, &change);
    else if (keep)
        sy_hist_defer(h, &change); /* told at the sync's end, at its position */
    uint64_t offset = keep ? sy_history_next(h) : 0;
    sy_refbuf_t *v1 = NULL;
    if (keep || (live && atomic_load_explicit(&t->v1, memory_order_relaxed) > 0))
        v1 = v1_frame(s, t, keep, offset, data, len, flags);
    if (keep) {
        /* A publish's meta is kept with it (a Pusher cache channel's last event names its event). */
        sy_refbuf_t *meta = x != NULL && x->meta_len > 0 ? sy_refbuf_raw(x->meta, x->meta_len) : NULL;
        (void)sy_hist_append_meta(g, h, v1, meta,
                                  sy_clock_ms()); /* not kept: history emptied (a resume must not skip it) */
        sy_refbuf_release(meta);
    }
    int rc = live ? push_publish(s, t, data, len, flags, v1, keep ? h->epoch : 0, subscribers, x) : 0;
    sy_hist_unlock(g);
    sy_refbuf_release(v1);
    return rc;
}

/* The size and ttl of t's history (size 0: none). */
static uint32_t history_of(sy_server_t *s, sy_topic_t *t, uint32_t *ttl_s) {
    sy_hist_t *g = &s->shared.hist;
    sy_hist_lock(g);
    sy_history_t *h = sy_hist_of(g, t, true);
    uint32_t size = h != NULL ? h->size : 0;
    *ttl_s = h != NULL ? h->ttl_s : 0;
    sy_hist_unlock(g);
    return size;
}

/* The owner's publish to t (held by the caller): the bus first (unless
 * SY_SEND_LOCAL), then this node. With a bus, a topic with history is
 * numbered by Redis: every node delivers it (this one too) when Redis
 * brings it back; while the bus is down, this node numbers it itself, in
 * an epoch of its own (sy_hist_localize). */
static int publish_owner(sy_server_t *s, sy_topic_t *t, const char *topic, size_t topic_len, const void *data,
                         size_t len, unsigned flags, size_t *subscribers, const sy_pub_extra_t *x) {
    if (s->bus != NULL && !(flags & SY_SEND_LOCAL)) {
        unsigned env =
            ((flags & SY_SEND_BINARY) ? SY_BUS_ENV_BINARY : 0) | ((flags & SY_SEND_COMPRESS) ? SY_BUS_ENV_COMPRESS : 0);
        uint32_t ttl_s = 0,
                 size = t != NULL && sy_server_with_history(s, t) && !unkept(s, t, x) ? history_of(s, t, &ttl_s) : 0;
        /* With extras, the payload the bus carries begins with them. */
        uint8_t *joined = NULL;
        const void *body = data;
        size_t body_len = len;
        if (x != NULL) {
            if ((joined = extras_join(s, x, data, len, &body_len)) == NULL)
                return ENOMEM;
            body = joined;
            env |= SY_BUS_ENV_META;
        }
        sy_err_t rc = size > 0 ? sy_bus_publish_seq(s->bus, topic, topic_len, body, body_len, env, size, ttl_s)
                               : sy_bus_publish(s->bus, topic, topic_len, body, body_len, env);
        sy_free(joined);
        /* Dropped (EAGAIN) is counted by the bus; local delivery goes on. */
        if (rc == ENOMEM)
            return ENOMEM;
        if (rc == 0 && size > 0) {
            *subscribers = sy_topic_total_interest(t);
            return 0;
        }
    }
    return t == NULL ? 0 : publish_local(s, t, data, len, flags, subscribers, NULL, x);
}

/* The topic of a publish (held; NULL: none), made when history is on by
 * default or when the protocol keeps the topic's last message (a Pusher
 * cache channel's; out of memory: delivered, not kept). */
static sy_topic_t *publish_topic(sy_server_t *s, const char *topic, size_t len, const sy_pub_extra_t *x) {
    uint32_t ttl_s = 0;
    bool last = proto_keeps(s, topic, len, x, &ttl_s) == SY_KEEP_LAST;
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, len, last || sy_hist_default_on(&s->shared.hist));
    if (t != NULL && last && sy_hist_keep_last(&s->shared.hist, t, ttl_s, sy_clock_ms()) == 0 &&
        !atomic_load_explicit(&s->shared.history_used, memory_order_relaxed))
        atomic_store(&s->shared.history_used, true); /* the sweep expires what it keeps */
    return t;
}

sy_err_t sy_server_publish(sy_server_t *s, const char *topic, size_t topic_len, const void *data, size_t len,
                           unsigned flags, size_t *subscribers) {
    *subscribers = 0;
    if (!s->listening || s->shutting_down)
        return 0;
    /* With history by default, a topic nobody subscribes to keeps its messages too. */
    sy_topic_t *t = publish_topic(s, topic, topic_len, NULL);
    int rc = publish_owner(s, t, topic, topic_len, data, len, flags, subscribers, NULL);
    sy_topic_release(&s->shared.topics, t);
    return rc;
}

sy_err_t sy_server_publish_x(sy_server_t *s, const char *topic, size_t topic_len, const void *data, size_t len,
                             unsigned flags, const sy_pub_extra_t *x, size_t *subscribers) {
    *subscribers = 0;
    if (!s->listening || s->shutting_down)
        return 0;
    if (x != NULL && x->meta_len > SY_PUB_META_MAX)
        return EINVAL;
    sy_topic_t *t = publish_topic(s, topic, topic_len, x);
    int rc = publish_owner(s, t, topic, topic_len, data, len, flags, subscribers, x);
    sy_topic_release(&s->shared.topics, t);
    return rc;
}

sy_topic_t *sy_server_topic(sy_server_t *s, const char *topic, size_t topic_len) {
    return sy_topic_acquire(&s->shared.topics, topic, topic_len, true);
}

void sy_server_topic_release(sy_server_t *s, sy_topic_t *t) { sy_topic_release(&s->shared.topics, t); }

sy_err_t sy_server_publish_topic(sy_server_t *s, sy_topic_t *t, const void *data, size_t len, unsigned flags,
                                 size_t *subscribers) {
    *subscribers = 0;
    if (!s->listening || s->shutting_down)
        return 0;
    return publish_owner(s, t, t->name, t->name_len, data, len, flags, subscribers, NULL);
}

void sy_server_wake(sy_server_t *s) {
    if (!s->listening)
        return;
    for (unsigned i = 0; i < s->shared.nthreads; i++)
        sy_io_wake(s->io[i]);
}

/* The bus thread's deliveries (sy_bus_deliver_fn). The bus is stopped
 * before the IO threads are (sy_server_shutdown), so they run here. */
static void deliver_from_bus(void *ctx, const char *topic, size_t topic_len, const void *data, size_t len,
                             unsigned env) {
    sy_server_t *s = ctx;
    size_t n = 0;
    unsigned flags =
        ((env & SY_BUS_ENV_BINARY) ? SY_SEND_BINARY : 0) | ((env & SY_BUS_ENV_COMPRESS) ? SY_SEND_COMPRESS : 0);
    sy_pub_extra_t x;
    if ((env & SY_BUS_ENV_META) && !extras_read(&data, &len, &x))
        return; /* cut short: not one of ours */
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, topic_len, false);
    if (t != NULL) {
        (void)publish_local(s, t, data, len, flags, &n, NULL, (env & SY_BUS_ENV_META) ? &x : NULL);
        sy_topic_release(&s->shared.topics, t);
    }
}

/* ---- history across nodes: the bus' callbacks (sy_bus_history_ops_t) ---- */

static uint32_t bus_history_size(void *ctx, const char *topic, size_t len) {
    sy_server_t *s = ctx;
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, len, false);
    if (t == NULL)
        return 0;
    uint32_t ttl_s, size = sy_server_with_history(s, t) ? history_of(s, t, &ttl_s) : 0;
    sy_topic_release(&s->shared.topics, t);
    return size;
}

static void bus_history_deliver(void *ctx, const char *topic, size_t topic_len, uint64_t epoch, uint64_t offset,
                                const void *data, size_t len, unsigned env, bool live) {
    sy_server_t *s = ctx;
    size_t n = 0;
    unsigned flags =
        ((env & SY_BUS_ENV_BINARY) ? SY_SEND_BINARY : 0) | ((env & SY_BUS_ENV_COMPRESS) ? SY_SEND_COMPRESS : 0);
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, topic_len, false);
    if (t == NULL)
        return;
    seq_at_t at = {.epoch = epoch, .offset = offset, .live = live};
    sy_pub_extra_t x;
    if ((env & SY_BUS_ENV_META) && !extras_read(&data, &len, &x)) {
        sy_topic_release(&s->shared.topics, t);
        return;
    }
    (void)publish_local(s, t, data, len, flags, &n, &at, (env & SY_BUS_ENV_META) ? &x : NULL);
    sy_topic_release(&s->shared.topics, t);
}

static void bus_history_synced(void *ctx, const char *topic, size_t len, uint64_t epoch, uint64_t last) {
    sy_server_t *s = ctx;
    sy_topic_t *t = sy_server_hist_topic(s, topic, len);
    if (t == NULL)
        return;
    sy_hist_t *g = &s->shared.hist;
    sy_history_t *h = sy_hist_of(g, t, true);
    if (h != NULL && h->size > 0) {
        sy_hist_change_t change;
        sy_hist_synced(g, h, epoch, last, &change);
        announce(s, t, h, &change);
    }
    sy_park_t *failed = sy_park_settle(g, t, 0);
    sy_hist_unlock(g);
    sy_park_discard(failed); /* outside the lock, with the topic still held */
    sy_topic_release(&s->shared.topics, t);
}

static void bus_history_unsynced(void *ctx, const char *topic, size_t len) {
    sy_server_t *s = ctx;
    sy_topic_t *t = sy_server_hist_topic(s, topic, len);
    if (t == NULL)
        return;
    sy_history_t *h = sy_hist_of(&s->shared.hist, t, false);
    if (h != NULL)
        h->synced = false;
    sy_server_hist_done(s, t);
}

static bool bus_history_differs(void *ctx, const char *topic, size_t topic_len, uint64_t epoch, uint64_t offset,
                                const void *data, size_t len) {
    sy_server_t *s = ctx;
    sy_topic_t *t = sy_server_hist_topic(s, topic, topic_len);
    if (t == NULL)
        return false;
    sy_history_t *h = sy_hist_of(&s->shared.hist, t, false);
    bool differs = h != NULL && h->remote && h->epoch == epoch && sy_hist_differs(h, offset, data, len);
    sy_server_hist_done(s, t);
    return differs;
}

static void bus_history_undelivered(void *ctx, const char *topic, size_t len, const void *data, size_t data_len,
                                    unsigned env) {
    deliver_from_bus(ctx, topic, len, data, data_len, env); /* numbered here (publish_local) */
}

static const sy_bus_history_ops_t bus_history_ops = {.size = bus_history_size,
                                                     .undelivered = bus_history_undelivered,
                                                     .differs = bus_history_differs,
                                                     .deliver = bus_history_deliver,
                                                     .synced = bus_history_synced,
                                                     .unsynced = bus_history_unsynced};

/* The bus' state (sy_bus_state_fn), for history first: subscriptions wait
 * for their topic's sync only while the bus is up. */
static void bus_state(void *ctx, sy_bus_state_t state, const char *err) {
    sy_server_t *s = ctx;
    sy_hist_t *g = &s->shared.hist;
    atomic_store(&g->bus_up, state == SY_BUS_UP);
    if (state != SY_BUS_UP)
        sy_park_expire(g, INT64_MAX); /* no sync comes while it is down */
    s->bus_on_state(s->bus_state_ctx, state, err);
}

sy_err_t sy_server_set_bus(sy_server_t *s, const sy_bus_opts_t *o, sy_bus_state_fn on_state, void *ctx, char *err,
                           size_t errlen) {
    if (s->listening || s->bus != NULL || sy_topics_count(&s->shared.topics) != 0) {
        snprintf(err, errlen, "the bus must be set before the server starts");
        if (o->tls != NULL && o->tls_free != NULL)
            o->tls_free(o->tls); /* taken over, as sy_bus_create would */
        return EINVAL;
    }
    sy_bus_opts_t bo = *o;
    bo.max_payload = s->shared.opts.max_payload;
    s->bus_on_state = on_state;
    s->bus_state_ctx = ctx;
    s->bus = sy_bus_create(&bo, &s->shared.topics, deliver_from_bus, s, bus_state, s, err, errlen);
    if (s->bus == NULL)
        return EINVAL;
    s->shared.topics.edge_ctx = s->bus;
    s->shared.topics.on_edge = sy_bus_edge;
    /* History with a bus: a topic that keeps messages stays subscribed (so
     * a client's reconnect finds what other nodes published meanwhile), and
     * its offsets are Redis' (docs/bus.md). */
    s->shared.hist.topics = &s->shared.topics;
    s->shared.hist.sequenced = true;
    sy_bus_set_history(s->bus, &bus_history_ops, s);
    return 0;
}

sy_bus_t *sy_server_bus(sy_server_t *s) { return s->bus; }

bool sy_server_bus_stats(sy_server_t *s, sy_bus_stats_t *out) {
    if (s->bus == NULL)
        return false;
    sy_bus_stats(s->bus, out);
    return true;
}

/* Queues cmd to the thread of a connection the caller found open (flags:
 * SY_SEND_LATER or 0): 0,
 * ENOTCONN (the thread has ended), or ENOMEM. On failure the caller keeps
 * cmd's references. */
