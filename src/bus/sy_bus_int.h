/*
 * sy_bus_int — the bus' own struct (sy_bus_t), internal to src/bus: shared
 * by sy_bus.c (the owner's side: create, start, stop, destroy, publish, the
 * topics' edge hook, stats) and sy_bus_thread.c (the bus thread: its loop,
 * the links' callbacks, SPUBLISH). No file outside src/bus includes it.
 *
 * Threads: the two sides meet in the section under `lock` (the publish
 * queue, the topics' edges, stop) and the wake-up (net/sy_wake.h); the counters
 * and the state are atomics any thread reads. Everything below "Bus
 * thread only" is the bus thread's once it runs (the owner's before it
 * starts and after it was joined). sy_bus_msg_drop: any thread holding
 * the message; sy_bus_thread_main and the ops: the bus thread.
 *
 * Ownership: the bus owns its copies of the options, the queued messages
 * (until sent or dropped), a reference on each queued edge's topic, the
 * shards (and their links), the channel table and the subscriptions' state.
 *
 * Errors: as sy_bus.h says; nothing here adds one.
 */
#ifndef SY_BUS_INT_H
#define SY_BUS_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_thread.h"
#include "bus/sy_bus.h"
#include "bus/sy_bus_chan.h"
#include "bus/sy_bus_link.h"
#include "bus/sy_bus_sentinel.h"
#include "bus/sy_bus_seq.h"
#include "bus/sy_bus_shard.h"
#include "bus/sy_bus_subs.h"
#include "net/sy_poll.h"
#include "net/sy_wake.h"

/* A publish on its way to Redis: the channel, the envelope, the payload,
 * contiguous. Its size (the whole allocation) counts in buffered_bytes
 * until Redis answers. */
/* A publish that Redis answers with MOVED or ASK is sent again to the node
 * it names (or, when the bus has no connection to that node yet, after the
 * next map read), at most this many times (as cluster clients follow
 * redirections). */
#define SY_BUS_REDIRECTS_MAX 5

typedef struct sy_bus_msg {
    struct sy_bus_msg *next;
    size_t size;
    unsigned redirects; /* MOVED / ASK replies followed so far (SY_BUS_REDIRECTS_MAX) */
    uint32_t hist_size; /* > 0: a topic with history (sy_bus_seq.h): the publish script */
    uint32_t ttl_s;
    bool eval;          /* send the script's body (Redis answered NOSCRIPT) */
    size_t channel_len; /* prefix + topic */
    size_t body_len;    /* envelope + payload */
    char data[];
} sy_bus_msg_t;

#define SY_BUS_COUNTER(field, js, metric, type, help) atomic_uint_fast64_t field;
typedef struct sy_bus_counters {
    SY_BUS_STATS_LIST(SY_BUS_COUNTER)
} sy_bus_counters_t;
#undef SY_BUS_COUNTER

struct sy_bus {
    /* Fixed at creation. */
    char **hosts;
    uint16_t *ports;
    unsigned nseeds;
    bool cluster;
    char *user, *pass;
    char **sentinel_hosts; /* nsentinels > 0: Redis Sentinel names the primary */
    uint16_t *sentinel_ports;
    unsigned nsentinels;
    char *sentinel_name, *sentinel_user, *sentinel_pass;
    sy_bus_link_conf_t sentinel_lconf;
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

    /* Shared with the owner's thread and the topics' hook. */
    sy_mutex_t lock;
    bool lock_ok;
    sy_bus_msg_t *qhead, *qtail;  /* under lock */
    sy_bus_call_t *chead, *ctail; /* under lock: calls (sy_bus_call.h) for the bus thread */
    sy_topic_t **edges;           /* under lock: topics whose interest crossed 0 (a reference each) */
    size_t nedges, edges_cap;
    bool stop;         /* under lock */
    bool woken;        /* under lock: the wake fd was written and not yet drained */
    unsigned flush_ms; /* under lock */
    atomic_int state;  /* sy_bus_state_t */
    sy_bus_ctl_fn ctl; /* fixed before the thread starts (sy_bus_set_ctl) */
    char *ctl_channel; /* prefix + SY_BUS_CTL_NAME */
    size_t ctl_channel_len;
    void *ctl_ctx;
    sy_bus_history_ops_t hist; /* fixed before the thread starts (sy_bus_set_history) */
    void *hist_ctx;
    sy_bus_script_t publish_script; /* EVALSHA's (sy_bus_seq.h) */
    uint64_t seq;                   /* this node's publishes, numbered from 1 (under lock) */
    sy_bus_counters_t c;

    /* The thread. */
    sy_thread_t thread;
    bool started, joined;
    sy_poll_t *poll;
    sy_wake_t wake; /* net/sy_wake.h */

    /* Bus thread only. */
    sy_bus_shards_t shards;     /* the connections, the slot map */
    sy_bus_sentinel_t sentinel; /* nsentinels > 0: where the primary is */
    sy_bus_chans_t chans;       /* the channels: subscriptions (subs), publishers' order (receiving) */
    sy_bus_subs_t subs;         /* the subscriptions that follow local interest */
    bool ever_up;
    uint64_t epoch_rng;                 /* new epochs' candidates (xorshift, seeded at random) */
    sy_bus_msg_t *parked, *parked_tail; /* redirected to a node not in the map yet: sent after the next map read */
    char **resync;                      /* topics whose sync could not be sent or failed: tried again at resync_at */
    size_t nresync, resync_cap;
    int64_t resync_at;
    char err[SY_BUS_HOST_MAX + SY_BUS_ERRLEN + 16]; /* why the bus is down: "host:port: reason" */
};

static inline void sy_bus_count(atomic_uint_fast64_t *c, uint64_t n) {
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The bus thread's body (sy_thread_create's start routine; arg: the bus). */
void *sy_bus_thread_main(void *arg);
/* The links' callbacks (ctx: the bus; bus thread). */
extern const sy_bus_link_ops_t sy_bus_thread_ops;
/* Frees a publish that will not be sent, counted as dropped. Any thread
 * that holds it. */
void sy_bus_msg_drop(sy_bus_t *b, sy_bus_msg_t *m);

/* Shared by the bus thread's files: sy_bus_thread.c (the loop, the links'
 * callbacks, publishing, the owner's calls) and sy_bus_recv.c (channel
 * messages received, and history across nodes: syncs, renewals, resyncs). */
uint64_t sy_bus_epoch_candidate(sy_bus_t *b);
void sy_bus_on_smessage(sy_bus_t *b, struct redisReply *r);
void sy_bus_retry_later(sy_bus_t *b, char *name);
void sy_bus_run_resync(sy_bus_t *b);
void sy_bus_seq_lost(sy_bus_t *b, sy_bus_chan_t *c);
void sy_bus_seq_subscribed(sy_bus_t *b, sy_bus_chan_t *c);
bool sy_bus_in_order(sy_bus_t *b, const char *topic, size_t len, uint64_t from, uint64_t seq);

#endif
