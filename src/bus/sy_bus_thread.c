/* sy_bus_thread — the bus thread (sy_bus.h, sy_bus_int.h): its loop, the
 * links' callbacks, and the publishes it sends. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "base/sy_port.h"
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
    bool sentinel = b->nsentinels > 0;
    if (sy_bus_shards_up(&b->shards) && (!sentinel || b->sentinel.verified)) {
        set_state(b, SY_BUS_UP);
        return;
    }
    /* Every sentinel failed: that is why, whatever a data link last said. */
    const char *why = sentinel ? sy_bus_sentinel_why(&b->sentinel) : NULL;
    if (why != NULL)
        snprintf(b->err, sizeof(b->err), "%s", why);
    if (b->err[0] != '\0')
        set_state(b, SY_BUS_DOWN);
}

/* ---- receiving ------------------------------------------------------ */

/* True when seq is newer than the last message of publisher `from` on
 * the topic's channel (sy_bus_order.h). */
bool sy_bus_in_order(sy_bus_t *b, const char *topic, size_t len, uint64_t from, uint64_t seq) {
    sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, topic, len);
    if (c == NULL)
        return true; /* not ours any more: the fan-out finds no subscriber */
    return sy_bus_order_check(&c->order, from, seq);
}

/* ---- the links' callbacks ------------------------------------------- */

static void send_parked(sy_bus_t *b);

static void on_role(redisAsyncContext *ac, void *r, void *priv);

static void link_up(void *ctx, sy_bus_link_t *l) {
    sy_bus_t *b = ctx;
    if (l->role == SY_BUS_ROLE_CFG)
        return; /* the loop sends CLUSTER SLOTS when the map is wanted */
    if (l->role == SY_BUS_ROLE_SENTINEL || l->role == SY_BUS_ROLE_WATCH) {
        sy_bus_sentinel_up(&b->sentinel, l); /* the loop asks for the primary */
        return;
    }
    /* Sentinel: the address it gave is checked before the bus is up (a
     * sentinel's view can be stale); ROLE goes first on this connection. */
    if (l->role == SY_BUS_ROLE_PUB && b->nsentinels > 0) {
        redisAsyncContext *rac = sy_bus_link_ac(l);
        if (rac == NULL || redisAsyncCommand(rac, on_role, NULL, "ROLE") != REDIS_OK) {
            sy_bus_link_fail(l, "out of memory", false);
            return;
        }
    }
    if (l->role == SY_BUS_ROLE_SUB)
        sy_bus_subs_link_up(&b->subs);
    /* The publish script, loaded on each new publishing connection before
     * any publish: a Redis that never ran it (a replica promoted by a
     * failover: scripts replicate as their effects; the target of a slot
     * migration; a restart) would answer the first EVALSHAs NOSCRIPT, and
     * their resends would go behind newer publishes of the same topic:
     * out of order. The reply does not matter (NOSCRIPT stays the
     * fallback). */
    redisAsyncContext *ac = l->role == SY_BUS_ROLE_PUB ? sy_bus_link_ac(l) : NULL;
    if (ac != NULL && b->hist.size != NULL)
        (void)redisAsyncCommand(ac, NULL, NULL, "SCRIPT LOAD %s", b->publish_script.body);
    if (l->role != SY_BUS_ROLE_PUB)
        return;
    send_parked(b);
    /* A sync goes on the publishing connection: syncs that could not be
     * sent while it was down (sy_bus_retry_later) go now, not at their timer. */
    if (b->nresync > 0)
        sy_bus_run_resync(b);
}

/* True for Redis' answer to a subscription on a node that no longer
 * serves the channel's slot. hiredis closes a subscribing connection on
 * any error reply, so this link reconnects; but it is a slot moving, not
 * Redis failing: the bus does not report itself down for it. */
static bool redirected(const char *err) { return strncmp(err, "MOVED ", 6) == 0 || strncmp(err, "ASK ", 4) == 0; }

static void link_down(void *ctx, sy_bus_link_t *l, const char *err) {
    sy_bus_t *b = ctx;
    if (l->role == SY_BUS_ROLE_SENTINEL || l->role == SY_BUS_ROLE_WATCH) {
        sy_bus_sentinel_down(&b->sentinel, l, err); /* the next sentinel; the bus' state follows the data links */
        return;
    }
    if (b->nsentinels > 0) {
        sy_bus_sentinel_want(&b->sentinel); /* a failover, maybe: where is the primary now? */
        if (l->role == SY_BUS_ROLE_PUB)
            b->sentinel.verified = false;
    }
    if (l->role == SY_BUS_ROLE_PUB)
        send_parked(b); /* those waiting for this connection: elsewhere now, or dropped */
    if (!(l->role == SY_BUS_ROLE_SUB && redirected(err)))
        snprintf(b->err, sizeof(b->err), "%s:%u: %s", l->host, (unsigned)l->port, err);
    if (l->role == SY_BUS_ROLE_CFG) {
        sy_bus_shards_cfg_down(&b->shards, l); /* ask another node next time */
        return;
    }
    if (l->role == SY_BUS_ROLE_SUB) {
        /* Its channels' messages may pass unseen until they are back. */
        sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
        sy_bus_chan_t *c;
        while ((c = sy_bus_chan_next(&b->chans, &it)) != NULL)
            if (c->sent && c->shard == l->owner)
                sy_bus_seq_lost(b, c);
        sy_bus_subs_shard_lost(&b->subs, l->owner);
    }
    sy_bus_shards_want_map(&b->shards); /* a failover, maybe */
}

static void link_push(void *ctx, sy_bus_link_t *l, redisReply *r) {
    sy_bus_t *b = ctx;
    if (l->role != SY_BUS_ROLE_SUB || r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING)
        return;
    const char *kind = r->element[0]->str;
    if (sy_strcasecmp(kind, "smessage") == 0) {
        sy_bus_on_smessage(b, r);
        return;
    }
    bool sub = sy_strcasecmp(kind, "ssubscribe") == 0;
    if (!sub && sy_strcasecmp(kind, "sunsubscribe") != 0)
        return;
    redisReply *ch = r->element[1];
    if (ch->type != REDIS_REPLY_STRING)
        return;
    sy_bus_chan_t *c;
    switch (sy_bus_subs_push(&b->subs, l->owner, sub, ch->str, ch->len, &c)) {
    case SY_BUS_SUBS_CONFIRMED:
        sy_bus_seq_subscribed(b, c);
        break;
    case SY_BUS_SUBS_MOVED:
        sy_bus_shards_want_map_from(&b->shards, l->owner); /* it gave the slot away: it knows the new owner */
        sy_bus_seq_lost(b, c);                             /* unsubscribed until subscribed on the new owner */
        break;
    case SY_BUS_SUBS_NONE:
        break;
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
    send_parked(b);
}

/* ---- Redis Sentinel (sy_bus_sentinel.h) ------------------------------ */

/* A sentinel's answer: the data links go to the primary it names (moved
 * there when elsewhere; checked with ROLE once up). */
static void on_master(redisAsyncContext *ac, void *r, void *priv) {
    (void)priv;
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    sy_bus_sentinel_addr_t a;
    if (!sy_bus_sentinel_answered(&b->sentinel, r, &a))
        return;
    char why[SY_BUS_HOST_MAX + 64];
    snprintf(why, sizeof(why), "Sentinel: the primary is now %s:%u", a.host, (unsigned)a.port);
    bool moved = false;
    if (sy_bus_shards_place(&b->shards, a.host, a.port, why, &moved) != 0) {
        snprintf(b->err, sizeof(b->err), "out of memory");
        sy_bus_sentinel_want(&b->sentinel); /* placed at the next answer */
    } else if (moved) {
        b->sentinel.verified = false;
    }
}

/* ROLE on the publishing connection, the first command after HELLO. */
static void on_role(redisAsyncContext *ac, void *r, void *priv) {
    (void)priv;
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    if (reply == NULL || l->ac != ac)
        return; /* the connection is going away */
    sy_bus_sentinel_role_t role = sy_bus_sentinel_read_role(reply);
    if (role == SY_ROLE_PRIMARY) {
        b->sentinel.verified = true;
        b->sentinel.role_delay = 0;
        send_parked(b); /* held until now (send_to) */
        return;
    }
    /* Not the primary (a sentinel's stale view, a failover under way):
     * both data links go, and come back where Sentinel says, after a
     * delay that doubles while this goes on. */
    char why[SY_BUS_ERRLEN];
    if (role == SY_ROLE_OTHER)
        snprintf(why, sizeof(why), "not the primary (ROLE: %.*s); asking Sentinel again", (int)reply->element[0]->len,
                 reply->element[0]->str);
    else
        snprintf(why, sizeof(why), "ROLE failed: %s", reply->type == REDIS_REPLY_ERROR ? reply->str : "no role");
    unsigned delay = sy_bus_sentinel_role_delay(&b->sentinel);
    sy_bus_shard_t *s = l->owner;
    s->pub.delay_ms = s->sub.delay_ms = delay;
    sy_bus_link_fail(&s->sub, why, false);
    sy_bus_link_fail(&s->pub, why, false);
}

/* ---- publishing ----------------------------------------------------- */

static void send_msg(sy_bus_t *b, sy_bus_msg_t *m);
static void send_to(sy_bus_t *b, sy_bus_msg_t *m, sy_bus_shard_t *s, bool asking);

/* Keeps m until the next map read or publishing connection (its
 * redirection named a node the bus has no connection to: a replica
 * promoted by a failover). In order: every publish after it waits behind
 * it (send_to). */
static void park(sy_bus_t *b, sy_bus_msg_t *m) {
    m->next = NULL;
    if (b->parked_tail != NULL)
        b->parked_tail->next = m;
    else
        b->parked = m;
    b->parked_tail = m;
}

/* The parked publishes, sent where the map now says (on_slots). */
static void send_parked(sy_bus_t *b) {
    sy_bus_msg_t *m = b->parked;
    b->parked = b->parked_tail = NULL;
    while (m != NULL) {
        sy_bus_msg_t *next = m->next;
        send_msg(b, m);
        m = next;
    }
}

/* A publish that Redis will not deliver (its connection went, an error):
 * dropped, and a topic with history's message is delivered to this node's
 * subscribers all the same (the server numbers it in an epoch of its own),
 * as a publish made while the bus is down: its node delivers only what
 * Redis brings back, so without this its own subscribers would lose it
 * too. (If Redis ran the script before its connection went, other nodes
 * may have it: a message to this node's subscribers twice, once in each
 * epoch, is the price of not losing it.) */
static void publish_failed(sy_bus_t *b, sy_bus_msg_t *m) {
    if (m->hist_size > 0 && b->hist.undelivered != NULL) {
        sy_bus_env_msg_t e;
        const uint8_t *body = (const uint8_t *)m->data + m->channel_len;
        if (sy_bus_env_read(body, m->body_len, 0, &e) != SY_BUS_ENV_BAD)
            b->hist.undelivered(b->hist_ctx, m->data + b->prefix_len, m->channel_len - b->prefix_len, e.payload, e.len,
                                e.flags);
    }
    sy_bus_msg_drop(b, m);
}

/* Redis' answer to a publish (priv: the message, kept until now so that a
 * MOVED or an ASK can be followed). */
static void on_published(redisAsyncContext *ac, void *r, void *priv) {
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    sy_bus_msg_t *m = priv;
    if (reply == NULL) {
        publish_failed(b, m); /* the connection went before Redis answered */
        return;
    }
    if (reply->type != REDIS_REPLY_ERROR) {
        sy_bus_count(&b->c.published, 1);
        atomic_fetch_sub(&b->c.buffered_bytes, m->size);
        sy_free(m);
        return;
    }
    if (m->hist_size > 0 && !m->eval && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        m->eval = true; /* this Redis has not seen the script (SCRIPT FLUSH): its body once */
        send_msg(b, m);
        return;
    }
    bool moved = strncmp(reply->str, "MOVED ", 6) == 0, ask = strncmp(reply->str, "ASK ", 4) == 0;
    if (moved || ask)
        sy_bus_shards_want_map(&b->shards);
    if ((moved || ask) && m->redirects < SY_BUS_REDIRECTS_MAX) {
        /* MOVED: the slot has a new owner (a migration done, a failover);
         * ASK: the slot is migrating and this command's keys have gone to
         * the node named, which takes it after ASKING. Not an error: the
         * publish goes on there, in its order (the publishes behind it on
         * this connection are redirected the same way, in turn). */
        m->redirects++;
        sy_bus_shard_t *s = sy_bus_shards_redirect(&b->shards, reply->str);
        if (s != NULL) {
            send_to(b, m, s, ask);
        } else {
            if (moved)
                sy_bus_shards_want_map_from(&b->shards, l->owner); /* it knows the new owner */
            park(b, m);
        }
        return;
    }
    sy_bus_count(&b->c.errors, 1);
    publish_failed(b, m);
}

/* The publish script's call for m (a topic with history). */
static int send_seq(sy_bus_t *b, redisAsyncContext *ac, sy_bus_msg_t *m) {
    char *stream, *meta;
    size_t stream_len, meta_len;
    char *keys = sy_bus_seq_keys(m->data, m->channel_len, &stream, &stream_len, &meta, &meta_len);
    if (keys == NULL)
        return REDIS_ERR;
    char size[16], ttl[24], epoch[17];
    int size_len = snprintf(size, sizeof(size), "%u", m->hist_size);
    int ttl_len = snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)m->ttl_s * 1000u);
    (void)snprintf(epoch, sizeof(epoch), "%016llx", (unsigned long long)sy_bus_epoch_candidate(b));
    const sy_bus_script_t *sc = &b->publish_script;
    const char *argv[] = {m->eval ? "EVAL" : "EVALSHA",
                          m->eval ? sc->body : sc->sha,
                          "2",
                          stream,
                          meta,
                          m->data,
                          m->data + m->channel_len,
                          size,
                          ttl,
                          epoch};
    size_t lens[] = {m->eval ? 4u : 7u,
                     m->eval ? strlen(sc->body) : 40u,
                     1,
                     stream_len,
                     meta_len,
                     m->channel_len,
                     m->body_len,
                     (size_t)size_len,
                     (size_t)ttl_len,
                     16};
    int rc = redisAsyncCommandArgv(ac, on_published, m, 10, argv, lens);
    sy_free(keys);
    return rc;
}

/* Sends m on s's publishing connection (asking: ASKING first, on the same
 * connection, so that Redis takes the next command for a slot it imports). */
static void send_to(sy_bus_t *b, sy_bus_msg_t *m, sy_bus_shard_t *s, bool asking) {
    if (b->parked != NULL) {
        /* Publishes wait already: this one goes after them, or it could
         * pass one of its own topic (a publisher's order; the wait is a
         * map read or a connection, during a failover or a migration). */
        park(b, m);
        return;
    }
    redisAsyncContext *ac = s != NULL ? sy_bus_link_ac(&s->pub) : NULL;
    if (ac == NULL && s != NULL &&
        (m->redirects > 0 || s->pub.state == SY_LINK_CONNECTING || s->pub.state == SY_LINK_HELLO)) {
        /* Redirected, or its slot's shard is connecting (new in the map: a
         * replica promoted): sent when that connection is up, or dropped
         * if it fails (link_up, link_down). */
        park(b, m);
        return;
    }
    if (ac != NULL && b->nsentinels > 0 && !b->sentinel.verified) {
        /* Sentinel's primary, not checked with ROLE yet: sent once it is
         * (on_role), or dropped if that connection fails. */
        park(b, m);
        return;
    }
    int rc = REDIS_ERR;
    if (ac != NULL && asking)
        rc = redisAsyncCommand(ac, NULL, NULL, "ASKING");
    if (ac != NULL && (rc == REDIS_OK || !asking))
        rc = m->hist_size > 0 ? send_seq(b, ac, m)
                              : redisAsyncCommand(ac, on_published, m, "SPUBLISH %b %b", m->data, m->channel_len,
                                                  m->data + m->channel_len, m->body_len);
    if (rc != REDIS_OK)
        publish_failed(b, m);
    /* else kept (and counted in buffered_bytes) until Redis answers */
}

static void send_msg(sy_bus_t *b, sy_bus_msg_t *m) {
    send_to(b, m, sy_bus_shards_publish_target(&b->shards, m->data, m->channel_len), false);
}

/* ---- the owner's calls (sy_bus_call.h) ------------------------------ */

static void send_call(sy_bus_t *b, sy_bus_call_t *c, sy_bus_shard_t *s, bool asking);

static void on_called(redisAsyncContext *ac, void *r, void *priv) {
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    sy_bus_call_t *c = priv;
    if (reply == NULL) {
        sy_bus_call_end(c, NULL, "the connection to Redis went before it answered");
        return;
    }
    if (c->sub) {
        /* The subscribing connection sends its (S)SUBSCRIBEs without a
         * callback: an error reply to one of them lands here, ahead of the
         * PONG. hiredis would have closed the connection on it; so does
         * this. */
        bool pong = reply->type == REDIS_REPLY_STATUS && reply->len == 4 && memcmp(reply->str, "PONG", 4) == 0;
        if (!pong && l->ac == ac)
            sy_bus_link_fail(l, reply->type == REDIS_REPLY_ERROR ? reply->str : "an unexpected reply to PING", false);
        sy_bus_call_end(c, pong ? reply : NULL, "the subscribing connection to Redis failed");
        return;
    }
    bool moved = reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "MOVED ", 6) == 0;
    bool ask = reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "ASK ", 4) == 0;
    if ((moved || ask) && c->redirects < SY_BUS_REDIRECTS_MAX) {
        sy_bus_shards_want_map(&b->shards);
        sy_bus_shard_t *s = sy_bus_shards_redirect(&b->shards, reply->str);
        if (s != NULL) {
            c->redirects++;
            send_call(b, c, s, ask);
            return;
        }
    }
    sy_bus_call_end(c, reply, NULL);
}

/* Sends c on s's publishing connection (asking: ASKING first). */
static void send_call(sy_bus_t *b, sy_bus_call_t *c, sy_bus_shard_t *s, bool asking) {
    (void)b;
    redisAsyncContext *ac = s != NULL ? sy_bus_link_ac(c->sub ? &s->sub : &s->pub) : NULL;
    if (ac == NULL) {
        sy_bus_call_end(c, NULL, "the bus is not connected to the Redis node that serves this key");
        return;
    }
    int rc = asking ? redisAsyncCommand(ac, NULL, NULL, "ASKING") : REDIS_OK;
    if (rc == REDIS_OK)
        rc = redisAsyncCommandArgv(ac, on_called, c, (int)c->argc, c->argv, c->lens);
    if (rc != REDIS_OK)
        sy_bus_call_end(c, NULL, "the command could not be sent to Redis");
}

static void run_calls(sy_bus_t *b, sy_bus_call_t *c) {
    while (c != NULL) {
        sy_bus_call_t *next = c->next;
        c->next = NULL;
        send_call(b, c, sy_bus_shards_publish_target(&b->shards, sy_bus_call_route(c), c->route_len), false);
        c = next;
    }
}

/* ---- the loop ------------------------------------------------------- */

static void drain_wake(sy_bus_t *b) { sy_wake_drain(&b->wake); }

static void take_work(sy_bus_t *b, sy_bus_msg_t **msgs, sy_bus_call_t **calls, sy_topic_t ***edges, size_t *nedges,
                      bool *stop) {
    sy_mutex_lock(&b->lock);
    *msgs = b->qhead;
    b->qhead = b->qtail = NULL;
    *calls = b->chead;
    b->chead = b->ctail = NULL;
    *edges = b->edges;
    *nedges = b->nedges;
    b->edges = NULL;
    b->nedges = b->edges_cap = 0;
    *stop = b->stop;
    b->woken = false;
    sy_mutex_unlock(&b->lock);
}

static void apply_edges(sy_bus_t *b, sy_topic_t **edges, size_t n) {
    for (size_t i = 0; i < n; i++) {
        sy_topic_t *t = edges[i];
        sy_bus_subs_want(&b->subs, t->name, t->name_len, sy_topic_wanted(t));
        /* A topic given history while subscribed already (sy_bus_edge from
         * sy_server_topic_history): synced now rather than at its next
         * subscription. */
        sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, t->name, t->name_len);
        if (c != NULL && c->confirmed && !c->seq.history)
            sy_bus_seq_subscribed(b, c);
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
    if (b->ctl != NULL) /* the nodes' control channel, for as long as the bus runs */
        sy_bus_subs_want(&b->subs, SY_BUS_CTL_NAME, SY_BUS_CTL_NAME_LEN, true);
    if (b->nsentinels > 0)
        sy_bus_sentinel_start(&b->sentinel);
    for (;;) {
        int64_t now = sy_clock_ms();
        int64_t next = sy_bus_shards_tick(&b->shards, now);
        sy_bus_shards_read_map(&b->shards, now, atomic_load(&b->state) == SY_BUS_UP, on_slots);
        if (b->nsentinels > 0) {
            int64_t t = sy_bus_sentinel_tick(&b->sentinel, now);
            if (t < next)
                next = t;
            sy_bus_sentinel_ask(&b->sentinel, now, atomic_load(&b->state) == SY_BUS_UP, on_master);
        }
        int64_t due = sy_bus_subs_run(&b->subs, now);
        if (due < next)
            next = due;
        if (b->nresync > 0 && now >= b->resync_at)
            sy_bus_run_resync(b);
        if (b->nresync > 0 && b->resync_at < next)
            next = b->resync_at;
        update_state(b);
        if (stopping && ((sy_bus_shards_idle(&b->shards) && b->parked == NULL) || now >= stop_deadline))
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
        sy_bus_call_t *calls;
        sy_topic_t **edges;
        size_t nedges;
        bool stop;
        take_work(b, &msgs, &calls, &edges, &nedges, &stop);
        apply_edges(b, edges, nedges);
        while (msgs != NULL) {
            sy_bus_msg_t *m = msgs;
            msgs = m->next;
            send_msg(b, m);
        }
        run_calls(b, calls);
        if (stop && !stopping) {
            stopping = true;
            stop_deadline = sy_clock_ms() + b->flush_ms;
        }
    }
    /* Closing: pending publishes' callbacks run (as dropped), then the links go. */
    while (b->parked != NULL) {
        sy_bus_msg_t *m = b->parked;
        b->parked = m->next;
        sy_bus_msg_drop(b, m);
    }
    b->parked_tail = NULL;
    if (b->nsentinels > 0)
        sy_bus_sentinel_close(&b->sentinel);
    sy_bus_shards_close(&b->shards);
    return NULL;
}
