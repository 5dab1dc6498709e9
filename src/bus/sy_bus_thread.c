/* sy_bus_thread — the bus thread (sy_bus.h, sy_bus_int.h): its loop, the
 * links' callbacks, and the publishes it sends. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "bus/sy_bus_env.h"
#include "bus/sy_bus_int.h"

#define BUS_EVENTS 64

/* ---- state ---------------------------------------------------------- */

static void set_state(sy_bus_t *b, sy_bus_state_t st) {
    sy_bus_state_t old = (sy_bus_state_t)atomic_load(&b->state);
    if (old == st)
        return;
    atomic_store(&b->state, (int)st);
    if (st == SY_BUS_UP) {
        if (b->ever_up)
            sy_bus_count(&b->c.reconnects, 1);
        b->ever_up = true;
        b->err[0] = '\0';
    }
    b->on_state(b->state_ctx, st, st == SY_BUS_DOWN ? b->err : "");
}

static void update_state(sy_bus_t *b) {
    if (sy_bus_shards_up(&b->shards))
        set_state(b, SY_BUS_UP);
    else if (b->err[0] != '\0')
        set_state(b, SY_BUS_DOWN);
}

/* ---- receiving ------------------------------------------------------ */

/* True when seq is newer than the last message of publisher `from` on
 * the topic's channel (sy_bus_order.h). */
static bool in_order(sy_bus_t *b, const char *topic, size_t len, uint64_t from, uint64_t seq) {
    sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, topic, len);
    if (c == NULL)
        return true; /* not ours any more: the fan-out finds no subscriber */
    return sy_bus_order_check(&c->order, from, seq);
}

static void on_smessage(sy_bus_t *b, redisReply *r) {
    redisReply *ch = r->element[1], *msg = r->element[2];
    if (ch->type != REDIS_REPLY_STRING || msg->type != REDIS_REPLY_STRING || ch->len < b->prefix_len ||
        memcmp(ch->str, b->prefix, b->prefix_len) != 0 || msg->len > b->max_payload + SY_BUS_ENV_LEN) {
        sy_bus_count(&b->c.ignored, 1);
        return;
    }
    sy_bus_env_msg_t m;
    switch (sy_bus_env_read((const uint8_t *)msg->str, msg->len, b->node, &m)) {
    case SY_BUS_ENV_OWN:
        return;
    case SY_BUS_ENV_BAD:
        sy_bus_count(&b->c.ignored, 1);
        return;
    case SY_BUS_ENV_DELIVER:
        break;
    }
    if (m.len > b->max_payload) {
        sy_bus_count(&b->c.ignored, 1);
        return;
    }
    const char *topic = ch->str + b->prefix_len;
    size_t topic_len = ch->len - b->prefix_len;
    if (m.seq != 0 && !in_order(b, topic, topic_len, m.from, m.seq)) {
        sy_bus_count(&b->c.late, 1);
        return;
    }
    sy_bus_count(&b->c.received, 1);
    b->deliver(b->deliver_ctx, topic, topic_len, m.payload, m.len, m.flags);
}

/* ---- the links' callbacks ------------------------------------------- */

static void link_up(void *ctx, sy_bus_link_t *l) {
    sy_bus_t *b = ctx;
    if (l->role == SY_BUS_ROLE_CFG)
        return; /* the loop sends CLUSTER SLOTS when the map is wanted */
    if (l->role == SY_BUS_ROLE_SUB)
        sy_bus_subs_link_up(&b->subs);
}

/* True for Redis' answer to a subscription on a node that no longer
 * serves the channel's slot. hiredis closes a subscribing connection on
 * any error reply, so this link reconnects; but it is a slot moving, not
 * Redis failing: the bus does not report itself down for it. */
static bool redirected(const char *err) { return strncmp(err, "MOVED ", 6) == 0 || strncmp(err, "ASK ", 4) == 0; }

static void link_down(void *ctx, sy_bus_link_t *l, const char *err) {
    sy_bus_t *b = ctx;
    if (!(l->role == SY_BUS_ROLE_SUB && redirected(err)))
        snprintf(b->err, sizeof(b->err), "%s:%u: %s", l->host, (unsigned)l->port, err);
    if (l->role == SY_BUS_ROLE_CFG) {
        sy_bus_shards_cfg_down(&b->shards, l); /* ask another node next time */
        return;
    }
    if (l->role == SY_BUS_ROLE_SUB) {
        sy_bus_subs_shard_lost(&b->subs, l->owner);
        if (b->on_gap != NULL)
            b->on_gap(b->gap_ctx); /* messages may pass unseen until it is back */
    }
    sy_bus_shards_want_map(&b->shards); /* a failover, maybe */
}

static void link_push(void *ctx, sy_bus_link_t *l, redisReply *r) {
    sy_bus_t *b = ctx;
    if (l->role != SY_BUS_ROLE_SUB || r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING)
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
    if (ch->type != REDIS_REPLY_STRING)
        return;
    if (sy_bus_subs_push(&b->subs, l->owner, sub, ch->str, ch->len)) {
        sy_bus_shards_want_map_from(&b->shards, l->owner); /* it gave the slot away: it knows the new owner */
        if (b->on_gap != NULL)
            b->on_gap(b->gap_ctx); /* unsubscribed until subscribed on the new owner */
    }
}

const sy_bus_link_ops_t sy_bus_thread_ops = {.up = link_up, .down = link_down, .push = link_push};

/* ---- the slot map (cluster) ----------------------------------------- */

static void on_slots(redisAsyncContext *ac, void *r, void *priv) {
    (void)priv;
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    bool failed = reply != NULL && reply->type == REDIS_REPLY_ERROR;
    sy_bus_shards_map_answered(&b->shards, failed, sy_clock_ms());
    if (reply == NULL)
        return;
    if (failed) {
        sy_bus_count(&b->c.errors, 1);
        snprintf(b->err, sizeof(b->err), "%s:%u: %s", l->host, (unsigned)l->port, reply->str);
        return;
    }
    sy_bus_count(&b->c.map_refreshes, 1);
    sy_bus_shard_set_t next;
    if (sy_bus_shards_stage(&b->shards, reply, l->host, &next) != 0)
        return; /* not a map, or no memory: read again when due */
    /* Channels whose shard changed: undo the old subscription (if that
     * node is still there) and subscribe on the new one. */
    sy_bus_subs_rehome(&b->subs, &next);
    /* Shards no longer in the map go (their pending publishes count as dropped). */
    sy_bus_shards_commit(&b->shards, &next);
    if (!b->shards.set.complete)
        snprintf(b->err, sizeof(b->err), "the cluster's slot map does not cover every slot");
}

/* ---- publishing ----------------------------------------------------- */

static void send_msg(sy_bus_t *b, sy_bus_msg_t *m);

/* Redis' answer to a publish (priv: the message, kept until now so that a
 * MOVED can be followed). */
static void on_published(redisAsyncContext *ac, void *r, void *priv) {
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    sy_bus_msg_t *m = priv;
    if (reply == NULL) {
        sy_bus_msg_drop(b, m); /* the connection went before Redis answered */
        return;
    }
    if (reply->type != REDIS_REPLY_ERROR) {
        sy_bus_count(&b->c.published, 1);
        atomic_fetch_sub(&b->c.buffered_bytes, m->size);
        sy_free(m);
        return;
    }
    sy_bus_count(&b->c.errors, 1);
    if (strncmp(reply->str, "MOVED", 5) == 0 || strncmp(reply->str, "ASK", 3) == 0)
        sy_bus_shards_want_map(&b->shards);
    if (strncmp(reply->str, "MOVED ", 6) == 0 && m->redirects < SY_BUS_REDIRECTS_MAX) {
        /* The slot has moved: its new owner gets it (sy_bus_shards_moved
         * points the slot there when that node is one of the shards). */
        sy_bus_shards_moved(&b->shards, reply->str);
        m->redirects++;
        send_msg(b, m);
        return;
    }
    sy_bus_msg_drop(b, m);
}

static void send_msg(sy_bus_t *b, sy_bus_msg_t *m) {
    sy_bus_shard_t *s = sy_bus_shards_publish_target(&b->shards, m->data, m->channel_len);
    redisAsyncContext *ac = s != NULL ? sy_bus_link_ac(&s->pub) : NULL;
    if (ac == NULL || redisAsyncCommand(ac, on_published, m, "SPUBLISH %b %b", m->data, m->channel_len,
                                        m->data + m->channel_len, m->body_len) != REDIS_OK)
        sy_bus_msg_drop(b, m);
    /* else kept (and counted in buffered_bytes) until Redis answers */
}

/* ---- the loop ------------------------------------------------------- */

static void drain_wake(sy_bus_t *b) { sy_wake_drain(&b->wake); }

static void take_work(sy_bus_t *b, sy_bus_msg_t **msgs, sy_topic_t ***edges, size_t *nedges, bool *stop) {
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
        sy_bus_subs_want(&b->subs, t->name, t->name_len, sy_topic_wanted(t));
        sy_topic_release(b->topics, t);
    }
    sy_free(edges);
}

void *sy_bus_thread_main(void *arg) {
    sy_bus_t *b = arg;
    sy_poll_event_t ev[BUS_EVENTS];
    int64_t stop_deadline = 0;
    bool stopping = false;
    if (sy_bus_shards_start(&b->shards) != 0) {
        snprintf(b->err, sizeof(b->err), "out of memory");
        set_state(b, SY_BUS_DOWN);
    }
    for (;;) {
        int64_t now = sy_clock_ms();
        int64_t next = sy_bus_shards_tick(&b->shards, now);
        sy_bus_shards_read_map(&b->shards, now, atomic_load(&b->state) == SY_BUS_UP, on_slots);
        int64_t due = sy_bus_subs_run(&b->subs, now);
        if (due < next)
            next = due;
        update_state(b);
        if (stopping && (sy_bus_shards_idle(&b->shards) || now >= stop_deadline))
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
        sy_bus_msg_t *msgs;
        sy_topic_t **edges;
        size_t nedges;
        bool stop;
        take_work(b, &msgs, &edges, &nedges, &stop);
        apply_edges(b, edges, nedges);
        while (msgs != NULL) {
            sy_bus_msg_t *m = msgs;
            msgs = m->next;
            send_msg(b, m);
        }
        if (stop && !stopping) {
            stopping = true;
            stop_deadline = sy_clock_ms() + b->flush_ms;
        }
    }
    /* Closing: pending publishes' callbacks run (as dropped), then the links go. */
    sy_bus_shards_close(&b->shards);
    return NULL;
}
