/* sy_bus_recv — what the bus thread receives (sy_bus_int.h): channel
 * messages in order, and history across nodes (sy_bus_seq.h): syncs that
 * fill holes, epoch renewals, resyncs. */
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

/* ---- history across nodes (sy_bus_seq.h) ------------------------- */

static void start_sync(sy_bus_t *b, sy_bus_chan_t *c);
static void renew_epoch(sy_bus_t *b, sy_bus_chan_t *c, uint64_t epoch);

/* A new epoch's candidate (xorshift; used only where the topic has none). */
uint64_t sy_bus_epoch_candidate(sy_bus_t *b) {
    b->epoch_rng ^= b->epoch_rng << 13;
    b->epoch_rng ^= b->epoch_rng >> 7;
    b->epoch_rng ^= b->epoch_rng << 17;
    return b->epoch_rng | 1;
}

/* Hands a message of Redis' sequence to the server: body is what the
 * publisher gave the script (an envelope, or another program's bytes). */
static void seq_deliver(sy_bus_t *b, sy_bus_chan_t *c, uint64_t epoch, uint64_t offset, const uint8_t *body, size_t len,
                        bool live) {
    sy_bus_env_msg_t m;
    if (sy_bus_env_read(body, len, 0, &m) == SY_BUS_ENV_BAD || m.len > b->max_payload) {
        /* Unusable (a broken envelope, over maxPayload): not delivered, so
         * the server sees a hole at the next offset and tells the topic's
         * subscribers ("trimmed") rather than skip it silently. */
        sy_bus_count(&b->c.ignored, 1);
        return;
    }
    if (live)
        sy_bus_count(&b->c.received, 1);
    b->hist.deliver(b->hist_ctx, c->name, c->len, epoch, offset, m.payload, m.len, m.flags, live);
}

/* A channel message at (epoch, offset): delivered when it follows the
 * channel's last, kept for after the sync otherwise. */
static void seq_message(sy_bus_t *b, sy_bus_chan_t *c, uint64_t epoch, uint64_t offset, const uint8_t *body,
                        size_t len) {
    sy_bus_seq_chan_t *q = &c->seq;
    if (q->syncing) {
        if (!sy_bus_seq_wait(q, epoch, offset, body, len, b->max_buffer))
            q->again = true; /* dropped: the next sync reads it from the stream */
        return;
    }
    bool follows = q->epoch == epoch ? offset == q->last + 1 : (q->epoch == 0 && (offset == 1 || !q->history));
    if (follows) {
        q->epoch = epoch;
        q->last = offset;
        seq_deliver(b, c, epoch, offset, body, len, true);
        return;
    }
    if (q->epoch == epoch && offset <= q->last) {
        /* Delivered already (a sync read it first), unless the server kept
         * another message there: Redis gave the offset twice (a failover
         * lost writes). The topic then moves to a new epoch, for all. */
        sy_bus_env_msg_t m;
        if (b->hist.differs != NULL && sy_bus_env_read(body, len, 0, &m) != SY_BUS_ENV_BAD &&
            b->hist.differs(b->hist_ctx, c->name, c->len, epoch, offset, m.payload, m.len))
            renew_epoch(b, c, epoch);
        else
            sy_bus_count(&b->c.late, 1);
        return;
    }
    /* A jump, or a new epoch: what is missing comes from the stream first. */
    if (!sy_bus_seq_wait(q, epoch, offset, body, len, b->max_buffer))
        q->again = true;
    start_sync(b, c);
}

/* The renewal's answer (priv: the topic's name, allocated): the topic syncs
 * (in its new epoch, whoever renewed it). */
static void on_renewed(redisAsyncContext *ac, void *r, void *priv) {
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    char *name = priv;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        sy_bus_count(&b->c.errors, 1);
    sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, name, strlen(name));
    sy_free(name);
    if (c != NULL) {
        c->seq.syncing = false; /* a sync that found Redis behind waits for this one */
        start_sync(b, c);
    }
}

/* What a script about c's topic needs: its keys in Redis, and its name (a
 * NUL-terminated copy, the reply's priv). */
typedef struct topic_keys {
    char *keys, *stream, *meta, *name;
    size_t stream_len, meta_len;
} topic_keys_t;

/* False when out of memory (nothing to free then). */
static bool topic_keys(sy_bus_t *b, const sy_bus_chan_t *c, topic_keys_t *k) {
    *k = (topic_keys_t){0};
    char *key = sy_bus_chan_key(&b->chans, c->name, c->len);
    if (key != NULL)
        k->keys = sy_bus_seq_keys(key, b->prefix_len + c->len, &k->stream, &k->stream_len, &k->meta, &k->meta_len);
    sy_free(key);
    k->name = sy_malloc(c->len + 1);
    if (k->keys == NULL || k->name == NULL) {
        sy_free(k->keys);
        sy_free(k->name);
        return false;
    }
    memcpy(k->name, c->name, c->len);
    k->name[c->len] = '\0';
    return true;
}

/* Offsets of epoch repeated on c's topic: a new epoch in Redis (if no node
 * did it first), then a sync. */
static void renew_epoch(sy_bus_t *b, sy_bus_chan_t *c, uint64_t epoch) {
    topic_keys_t k;
    redisAsyncContext *ac = c->shard != NULL ? sy_bus_link_ac(&c->shard->pub) : NULL;
    if (ac == NULL || !topic_keys(b, c, &k)) {
        c->seq.syncing = false; /* the next repeated offset or sync tries again */
        return;
    }
    sy_bus_count(&b->c.renewals, 1);
    char old[17], fresh[17];
    (void)snprintf(old, sizeof(old), "%016llx", (unsigned long long)epoch);
    (void)snprintf(fresh, sizeof(fresh), "%016llx", (unsigned long long)sy_bus_epoch_candidate(b));
    const char *argv[] = {"EVAL", sy_bus_seq_renew_lua, "2", k.stream, k.meta, old, fresh};
    size_t lens[] = {4, strlen(sy_bus_seq_renew_lua), 1, k.stream_len, k.meta_len, 16, 16};
    if (redisAsyncCommandArgv(ac, on_renewed, k.name, 7, argv, lens) != REDIS_OK) {
        sy_free(k.name);
        c->seq.syncing = false;
    }
    sy_free(k.keys);
}

/* The sync's answer (priv: the topic's name, NUL-terminated, allocated). */
static void on_sync(redisAsyncContext *ac, void *r, void *priv) {
    sy_bus_link_t *l = ac->data;
    sy_bus_t *b = l->ctx;
    redisReply *reply = r;
    char *name = priv;
    size_t name_len = strlen(name);
    sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, name, name_len);
    if (c == NULL || !c->seq.syncing) {
        sy_free(name);
        return;
    }
    sy_bus_seq_chan_t *q = &c->seq;
    uint64_t epoch, last;
    const redisReply *entries;
    if (reply == NULL || !sy_bus_seq_sync_reply(reply, &epoch, &last, &entries)) {
        if (reply != NULL) {
            sy_bus_count(&b->c.errors, 1);
            if (reply->type == REDIS_REPLY_ERROR)
                snprintf(b->err, sizeof(b->err), "%s:%u: %s", l->host, (unsigned)l->port, reply->str);
        }
        sy_bus_retry_later(b, name); /* its messages keep waiting until then */
        return;
    }
    sy_free(name);
    /* Entries after the channel's last: live when the channel had a
     * position (this node's subscribers missed them), else history only
     * (the node has just subscribed: they are older than its subscribers). */
    bool live = q->epoch != 0;
    /* Redis is behind what this node delivered, in the same epoch: it gave
     * (or will give) those offsets again (a failover lost writes). */
    bool behind = epoch != 0 && q->epoch == epoch && last < q->last;
    for (size_t i = 0; epoch != 0 && i < entries->elements; i++) {
        uint64_t offset;
        const uint8_t *body;
        size_t len;
        if (!sy_bus_seq_entry(entries, i, &offset, &body, &len)) {
            sy_bus_count(&b->c.ignored, 1);
            continue;
        }
        if (q->epoch == epoch && offset <= q->last)
            continue;
        seq_deliver(b, c, epoch, offset, body, len, live);
        if (live)
            sy_bus_count(&b->c.filled, 1);
        q->epoch = epoch;
        q->last = offset;
    }
    if (behind) {
        renew_epoch(b, c, epoch); /* then syncs again, in the new epoch (its messages keep waiting) */
        return;
    }
    if (epoch != 0 && q->epoch != epoch) { /* a new epoch, nothing of it in the stream (trimmed, or renewed) */
        q->epoch = epoch;
        q->last = last;
    } else if (epoch != 0 && q->last < last) { /* the stream did not go as far as Redis' last */
        q->last = last;
    }
    b->hist.synced(b->hist_ctx, c->name, c->len, epoch, last);
    q->syncing = false;
    bool again = q->again;
    q->again = false;
    /* The messages that came meanwhile, in their order (one may start
     * another sync: the rest wait again behind it). */
    sy_bus_seq_msg_t *m = sy_bus_seq_take(q);
    while (m != NULL) {
        sy_bus_seq_msg_t *next = m->next;
        seq_message(b, c, m->epoch, m->offset, m->body, m->len);
        sy_free(m);
        m = next;
    }
    if (again)
        start_sync(b, c);
}

/* Reads what Redis has after the channel's last position (all of the
 * stream when it has none). */
static void start_sync(sy_bus_t *b, sy_bus_chan_t *c) {
    sy_bus_seq_chan_t *q = &c->seq;
    if (q->syncing) {
        q->again = true;
        return;
    }
    q->syncing = true;
    q->again = false;
    topic_keys_t k;
    if (!topic_keys(b, c, &k)) {
        q->syncing = false; /* out of memory: at its next jump or resubscription */
        return;
    }
    sy_bus_shard_t *s = c->shard != NULL ? c->shard : sy_bus_shards_sub_target(&b->shards, c->slot);
    redisAsyncContext *ac = s != NULL ? sy_bus_link_ac(&s->pub) : NULL;
    if (ac == NULL) {
        sy_free(k.keys);
        sy_bus_retry_later(b, k.name); /* its connection is not up (yet) */
        return;
    }
    char after[24], count[16], epoch[17] = "";
    int after_len = snprintf(after, sizeof(after), "%llu", (unsigned long long)(q->epoch != 0 ? q->last : 0));
    int count_len = snprintf(count, sizeof(count), "%u", b->hist.size(b->hist_ctx, c->name, c->len) + 1u);
    if (q->epoch != 0)
        (void)snprintf(epoch, sizeof(epoch), "%016llx", (unsigned long long)q->epoch);
    /* The script's body (EVAL), not its SHA-1: a sync is rare, and a
     * NOSCRIPT would cost a round trip. */
    const char *argv[] = {"EVAL", sy_bus_seq_sync_lua, "2", k.stream, k.meta, after, count, epoch};
    size_t lens[] = {4,
                     strlen(sy_bus_seq_sync_lua),
                     1,
                     k.stream_len,
                     k.meta_len,
                     (size_t)after_len,
                     (size_t)count_len,
                     strlen(epoch)};
    if (redisAsyncCommandArgv(ac, on_sync, k.name, 8, argv, lens) != REDIS_OK)
        sy_bus_retry_later(b, k.name);
    else
        sy_bus_count(&b->c.syncs, 1);
    sy_free(k.keys);
}

/* The channel's subscription is in place: a topic with history syncs. */
void sy_bus_seq_subscribed(sy_bus_t *b, sy_bus_chan_t *c) {
    if (b->hist.size == NULL)
        return;
    if (!c->seq.history)
        c->seq.history = b->hist.size(b->hist_ctx, c->name, c->len) > 0;
    if (c->seq.history)
        start_sync(b, c);
}

/* The channel's subscription went: messages may pass unseen until it is
 * back (and synced). */
void sy_bus_seq_lost(sy_bus_t *b, sy_bus_chan_t *c) {
    if (!c->seq.history || b->hist.unsynced == NULL)
        return;
    b->hist.unsynced(b->hist_ctx, c->name, c->len);
}

/* Syncs that could not be sent (their connection was not up) or failed,
 * tried again: the channel's name, and when. */
#define RESYNC_MS 50

void sy_bus_retry_later(sy_bus_t *b, char *name) {
    if (b->nresync == b->resync_cap) {
        size_t cap = b->resync_cap ? b->resync_cap * 2 : 16;
        char **a = sy_realloc(b->resync, cap * sizeof(*a));
        if (a == NULL) {
            sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, name, strlen(name));
            if (c != NULL)
                c->seq.syncing = false; /* out of memory: at its next jump or resubscription */
            sy_free(name);
            return;
        }
        b->resync = a;
        b->resync_cap = cap;
    }
    if (b->nresync == 0)
        b->resync_at = sy_clock_ms() + RESYNC_MS;
    b->resync[b->nresync++] = name;
}

void sy_bus_run_resync(sy_bus_t *b) {
    size_t n = b->nresync;
    char **names = b->resync;
    b->resync = NULL;
    b->nresync = b->resync_cap = 0;
    for (size_t i = 0; i < n; i++) {
        sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, names[i], strlen(names[i]));
        if (c != NULL && c->seq.syncing) {
            c->seq.syncing = false;
            if (c->confirmed)
                start_sync(b, c); /* else at its resubscription */
        }
        sy_free(names[i]);
    }
    sy_free(names);
}

void sy_bus_on_smessage(sy_bus_t *b, struct redisReply *r) {
    redisReply *ch = r->element[1], *msg = r->element[2];
    if (ch->type != REDIS_REPLY_STRING || msg->type != REDIS_REPLY_STRING || ch->len < b->prefix_len ||
        memcmp(ch->str, b->prefix, b->prefix_len) != 0 || msg->len > b->max_payload + SY_BUS_ENV_LEN + 64) {
        sy_bus_count(&b->c.ignored, 1);
        return;
    }
    if (ch->len == b->prefix_len + SY_BUS_CTL_NAME_LEN &&
        memcmp(ch->str + b->prefix_len, SY_BUS_CTL_NAME, SY_BUS_CTL_NAME_LEN) == 0) {
        if (b->ctl != NULL)
            b->ctl(b->ctl_ctx, msg->str, msg->len);
        return;
    }
    uint64_t epoch, offset;
    const uint8_t *body;
    size_t body_len;
    if (msg->len > 0 && (uint8_t)msg->str[0] == SY_BUS_SEQ_MAGIC) {
        sy_bus_chan_t *c = sy_bus_chan_find(&b->chans, ch->str + b->prefix_len, ch->len - b->prefix_len);
        if (c == NULL || b->hist.deliver == NULL)
            return; /* not ours any more */
        if (!sy_bus_seq_read((const uint8_t *)msg->str, msg->len, &epoch, &offset, &body, &body_len)) {
            sy_bus_count(&b->c.ignored, 1);
            return;
        }
        seq_message(b, c, epoch, offset, body, body_len);
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
    if (m.seq != 0 && !sy_bus_in_order(b, topic, topic_len, m.from, m.seq)) {
        sy_bus_count(&b->c.late, 1);
        return;
    }
    sy_bus_count(&b->c.received, 1);
    b->deliver(b->deliver_ctx, topic, topic_len, m.payload, m.len, m.flags);
}
