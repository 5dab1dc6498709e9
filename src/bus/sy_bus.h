/*
 * sy_bus — many symphony processes as one fan-out, over Redis sharded
 * pub/sub (SPUBLISH / SSUBSCRIBE; Redis 7 or later, standalone or Cluster).
 *
 * One bus thread of ours runs every Redis connection (sy_bus_link.h) on
 * its own poller, not an IO thread: a message from Redis goes to every IO
 * thread with subscribers, as a publish from JavaScript does, so no IO
 * thread is closer to it; the IO threads' turns stay free of Redis' bursts;
 * and a cluster's connections and slot map live in one place. A message
 * from Redis goes from this thread straight into the fan-out (the deliver
 * callback), never through the JS thread.
 *
 * Publishing: sy_bus_publish (the owner's thread) copies the message into
 * a queue, with an envelope (sy_bus_env.h) naming this node; the bus thread
 * sends it with SPUBLISH <prefix><topic> on the connection of the channel's
 * shard. The node delivered it locally already and skips it when Redis
 * brings it back. Each publish carries the node's next sequence number; a
 * receiver remembers the last one it delivered per publisher and channel
 * (up to SY_BUS_ORDER_PUBLISHERS publishers each, sy_bus_order.h) and
 * drops an older one that Redis brings later (counted as late): in a
 * failover, a message the old primary took reaches the new one's
 * subscribers over the cluster bus, after newer ones published there
 * directly. Redis pub/sub is at-most-once: while the bus is not up a
 * publish is dropped (counted), and the bytes of publishes sent or queued
 * and not yet answered by Redis are capped at max_buffer; past it new
 * publishes are dropped (counted), so a slow or paused Redis cannot grow
 * memory past the cap.
 *
 * Subscriptions follow local interest (sy_topics_t's edge hook, on every
 * thread that changes a topic's interest across all IO threads between 0
 * and 1): SSUBSCRIBE while a topic has a local subscriber, SUNSUBSCRIBE
 * after the last leaves; the changes of a loop turn (and, after a command,
 * of the next 10 ms) go out as one command per slot (Redis Cluster demands
 * one slot per command; on a standalone Redis, one command). After a
 * reconnect every live topic is subscribed again (sy_bus_subs.h).
 *
 * Cluster: the slot map comes from CLUSTER SLOTS on a control connection
 * (to a seed, then any known node); it is read again when a publish is
 * answered MOVED, when Redis unsubscribes a channel itself (its slot
 * moved), when a shard's connection drops (a failover), every 500 ms while
 * the bus is not up, and every 5 s otherwise (sy_bus_shard.h).
 *
 * The files of src/bus: sy_bus.c (this API, the owner's side) and
 * sy_bus_thread.c (the bus thread: its loop, the links' callbacks,
 * SPUBLISH) share the struct in sy_bus_int.h; below them sy_bus_shard
 * (shards, the slot map), sy_bus_sentinel and sy_bus_sentinel_reply
 * (where Sentinel says the primary is), sy_bus_subs (subscriptions and their batches),
 * sy_bus_chan (the channel table), sy_bus_order (each publisher's order),
 * sy_bus_link (one Redis connection), sy_bus_env, sy_bus_map and sy_slot
 * (what goes over the wire), sy_redis_alloc (hiredis' memory).
 *
 * Threads: sy_bus_create/start/stop/destroy and sy_bus_publish on the
 * owner's thread; sy_bus_edge on any thread (the topics' hook);
 * sy_bus_stats on any thread; the callbacks (deliver, on_state) run on
 * the bus thread.
 *
 * Ownership: the bus copies every option and argument it keeps (the
 * seeds, credentials, prefix; each publish's bytes), and takes o->tls
 * over. topics and the callbacks' contexts are the caller's and must
 * outlive the bus. A topic given to sy_bus_edge is referenced
 * (sy_topic_ref) until the bus thread has read its interest.
 *
 * Sentinel: with o->sentinels, the one Redis is the primary that Redis
 * Sentinel names (sy_bus_sentinel.h): asked of the sentinels in turn, checked
 * with ROLE, followed when a data connection drops or a sentinel says
 * +switch-master.
 *
 * Errors: sy_bus_create returns NULL with a message in err; sy_bus_start
 * and sy_bus_publish an errno value; Redis' failures reach the owner as
 * states (on_state, with the reason) and counters (sy_bus_stats), never
 * as a failed call.
 */
#ifndef SY_BUS_H
#define SY_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "bus/sy_bus_call.h"
#include "io/model/sy_topic.h"

#define SY_BUS_MAX_SEEDS 64

typedef enum sy_bus_state {
    SY_BUS_CONNECTING = 0, /* not up yet, and no attempt has failed */
    SY_BUS_UP,             /* every connection up (and the slot map complete) */
    SY_BUS_DOWN,           /* a connection failed or was lost; reconnecting */
} sy_bus_state_t;

typedef struct sy_bus_opts {
    const char *const *hosts; /* seeds (one without cluster; none with sentinels); copied */
    const uint16_t *ports;
    unsigned nseeds; /* 1..SY_BUS_MAX_SEEDS (0 with sentinels) */
    /* Redis Sentinel (not with cluster): the sentinels, the primary's name
     * (1..SY_BUS_SENTINEL_NAME_MAX bytes, no space) and the sentinels' own
     * credentials (NULL: none); copied. user/pass/tls are the data nodes'
     * (tls applies to the sentinels too). nsentinels 0: no Sentinel. */
    const char *const *sentinel_hosts;
    const uint16_t *sentinel_ports;
    unsigned nsentinels; /* 0..SY_BUS_MAX_SEEDS */
    const char *sentinel_name;
    const char *sentinel_user, *sentinel_pass;
    bool cluster;
    const char *user;   /* NULL: the default user; copied */
    const char *pass;   /* NULL: no AUTH; copied */
    const char *prefix; /* channel = prefix + topic; copied */
    size_t prefix_len;
    size_t max_buffer;  /* bytes toward Redis not yet answered */
    size_t max_payload; /* larger messages from Redis are ignored (counted) */
    unsigned connect_timeout_ms;
    unsigned backoff_min_ms, backoff_max_ms;
    /* rediss://: TLS on every connection (src/tls/sy_bus_tls.h). The bus
     * takes tls over (freed with tls_free by sy_bus_destroy, or at once
     * when sy_bus_create fails). NULL: plain TCP. */
    void *tls;
    int (*tls_attach)(void *tls, void *redis_context, const char *host, char *err, size_t errlen);
    void (*tls_free)(void *tls);
    const char *(*tls_error)(char *buf, size_t len);
} sy_bus_opts_t;

/* clang-format off */
/* X(field, js_name, metric, type, help): the one list of the bus' counters
 * (stats().bus, the symphony_bus_* metrics, the types). */
#define SY_BUS_STATS_LIST(X) \
    X(published, "published", "symphony_bus_published_total", "counter", \
      "Messages published to the bus and acknowledged by Redis.") \
    X(received, "received", "symphony_bus_received_total", "counter", \
      "Messages from other nodes (or other programs) delivered from the bus.") \
    X(dropped, "dropped", "symphony_bus_dropped_total", "counter", \
      "Bus publishes dropped: the bus was not up, the buffer toward Redis was full, or Redis did not acknowledge them.") \
    X(ignored, "ignored", "symphony_bus_ignored_total", "counter", \
      "Messages from Redis ignored: outside the prefix, over maxPayload, or a broken envelope.") \
    X(late, "late", "symphony_bus_late_total", "counter", \
      "Messages from Redis dropped because a newer one of the same publisher and topic came first (a failover or slot migration reordered them), or (history) an offset delivered already.") \
    X(errors, "errors", "symphony_bus_errors_total", "counter", \
      "Error replies from Redis that failed a publish, a sync or a map read (a MOVED or ASK that was followed is not one).") \
    X(reconnects, "reconnects", "symphony_bus_reconnects_total", "counter", \
      "Times the bus came back up after being down.") \
    X(subscribe_commands, "subscribeCommands", "symphony_bus_subscribe_commands_total", "counter", \
      "SSUBSCRIBE and SUNSUBSCRIBE commands sent (each for many channels).") \
    X(map_refreshes, "mapRefreshes", "symphony_bus_map_refreshes_total", "counter", \
      "Cluster slot maps read (CLUSTER SLOTS).") \
    X(buffered_bytes, "bufferedBytes", "symphony_bus_buffered_bytes", "gauge", \
      "Bytes of bus publishes queued or sent toward Redis and not yet acknowledged.") \
    X(syncs, "syncs", "symphony_bus_syncs_total", "counter", \
      "Topics with history read from Redis (at their subscription, or after a hole): history across nodes.") \
    X(filled, "filled", "symphony_bus_filled_total", "counter", \
      "Messages of topics with history this node missed live and delivered from Redis' stream.") \
    X(renewals, "renewals", "symphony_bus_renewals_total", "counter", \
      "Epochs this node renewed in Redis after an offset came twice with different messages (a failover lost writes).") \
    X(channels, "channels", "symphony_bus_channels", "gauge", \
      "Channels this node is subscribed to (confirmed by Redis).")
/* clang-format on */

typedef struct sy_bus_stats {
#define SY_BUS_STAT_FIELD(field, js, metric, type, help) uint64_t field;
    SY_BUS_STATS_LIST(SY_BUS_STAT_FIELD)
#undef SY_BUS_STAT_FIELD
    sy_bus_state_t state;
} sy_bus_stats_t;

/* A message for the local fan-out (flags: SY_BUS_ENV_BINARY,
 * SY_BUS_ENV_COMPRESS). Bus thread. */
typedef void (*sy_bus_deliver_fn)(void *ctx, const char *topic, size_t topic_len, const void *data, size_t len,
                                  unsigned flags);
/* The bus changed state; err: why it is down (else ""). Bus thread. */
typedef void (*sy_bus_state_fn)(void *ctx, sy_bus_state_t state, const char *err);

typedef struct sy_bus sy_bus_t;

/* NULL with a message in err on bad options or no memory. topics: the
 * server's registry, whose edge hook the caller points at sy_bus_edge. */
sy_bus_t *sy_bus_create(const sy_bus_opts_t *o, sy_topics_t *topics, sy_bus_deliver_fn deliver, void *deliver_ctx,
                        sy_bus_state_fn on_state, void *state_ctx, char *err, size_t errlen);
/* History across nodes (sy_bus_seq.h, docs/bus.md): what the bus asks of
 * the server and tells it about topics with history. Bus thread. */
typedef struct sy_bus_history_ops {
    /* Messages the server keeps for topic (0: no history): a topic with
     * history is synced from Redis when its channel is subscribed. */
    uint32_t (*size)(void *ctx, const char *topic, size_t len);
    /* A message at (epoch, offset) of Redis' sequence, in order. live: for
     * the topic's subscribers (and history); else for history only (older
     * than what this node's subscribers follow: read when it subscribed). */
    void (*deliver)(void *ctx, const char *topic, size_t len, uint64_t epoch, uint64_t offset, const void *data,
                    size_t data_len, unsigned flags, bool live);
    /* A sync ended: Redis' epoch (0: it has none) and last offset; every
     * message up to it was delivered before. */
    void (*synced)(void *ctx, const char *topic, size_t len, uint64_t epoch, uint64_t last);
    /* The topic's subscription went (its link dropped, or its slot moved):
     * messages may pass unseen until its next sync. */
    void (*unsynced)(void *ctx, const char *topic, size_t len);
    /* A message at an offset delivered already: true when the server kept
     * a different message there (Redis gave the offset twice: a failover
     * lost writes), and the bus then starts a new epoch in Redis. */
    bool (*differs)(void *ctx, const char *topic, size_t len, uint64_t epoch, uint64_t offset, const void *data,
                    size_t data_len);
    /* A publish of this node's to a topic with history that Redis will not
     * deliver (its connection went before it answered, or an error): for
     * this node's subscribers, numbered by the server itself. */
    void (*undelivered)(void *ctx, const char *topic, size_t len, const void *data, size_t data_len, unsigned flags);
} sy_bus_history_ops_t;
/* Sets the history callbacks (before sy_bus_start; ops is copied). */
void sy_bus_set_history(sy_bus_t *b, const sy_bus_history_ops_t *ops, void *ctx);
/* Starts the bus thread, which connects in the background. 0 or an errno
 * value. */
sy_err_t sy_bus_start(sy_bus_t *b);
/* Sends what is queued, waits up to flush_ms for Redis to acknowledge it,
 * closes every connection and joins the thread. Idempotent. */
void sy_bus_stop(sy_bus_t *b, unsigned flush_ms);
/* Frees the bus (stopped, or never started). */
void sy_bus_destroy(sy_bus_t *b);

/* Queues a message to the bus. flags: SY_BUS_ENV_*. 0, EAGAIN (dropped,
 * counted: the bus is not up, or max_buffer is reached), ENOMEM. */
sy_err_t sy_bus_publish(sy_bus_t *b, const char *topic, size_t topic_len, const void *data, size_t len, unsigned flags);
/* Queues a message of a topic with history (size messages kept, none
 * older than ttl_s; 0: no limit): Redis gives it the topic's next offset,
 * keeps it in the topic's stream and publishes it, in one script; every
 * node delivers it (this one too) when it comes back. Errors as
 * sy_bus_publish. */
sy_err_t sy_bus_publish_seq(sy_bus_t *b, const char *topic, size_t topic_len, const void *data, size_t len,
                            unsigned flags, uint32_t size, uint32_t ttl_s);
/* Node-to-node messages (docs/bus.md, "Presence and counts across
 * nodes"): every node subscribes a control channel of its own (prefix +
 * SY_BUS_CTL_NAME, a name no topic can have: topics are UTF-8) while it
 * runs; what arrives on it is handed to fn as it came (bus thread; data
 * is the bus', valid during the call). Set before sy_bus_start; NULL
 * fn: the channel is not subscribed. */
typedef void (*sy_bus_ctl_fn)(void *ctx, const void *data, size_t len);
void sy_bus_set_ctl(sy_bus_t *b, sy_bus_ctl_fn fn, void *ctx);
/* Queues one Redis command (argv[0..argc), 1..SY_BUS_CALL_ARGS_MAX
 * arguments, copied) for the bus thread, sent to the node that serves
 * route[0..route_len)'s slot (sy_bus_call.h); done gets the encoded reply
 * on the bus thread, once, whatever happens (an error reply when the bus
 * is not up, or stops first). 0, EINVAL (argc), ENOMEM, or ESHUTDOWN (the
 * bus is stopping: done is not called). */
sy_err_t sy_bus_call(sy_bus_t *b, const char *route, size_t route_len, unsigned argc, const char *const *argv,
                     const size_t *lens, sy_bus_call_fn done, void *ctx);
/* Publishes data[0..len) on the nodes' control channel (a call: done
 * gets SPUBLISH's reply, the number of nodes subscribed to it, or an
 * error). Errors as sy_bus_call. */
sy_err_t sy_bus_ctl_publish(sy_bus_t *b, const void *data, size_t len, sy_bus_call_fn done, void *ctx);
/* A fence on the control channel (docs/sse.md, "Several nodes"): a PING
 * on the subscribing connection that carries the channel. done gets PONG
 * after every control message Redis had sent this node before it went to
 * the fn (so whatever another node published there before this call, and
 * was answered, has reached the fn), or an error when the connection is
 * not up or went first (then nothing more of before will come: Redis
 * pub/sub does not replay). Errors as sy_bus_call. */
sy_err_t sy_bus_ctl_fence(sy_bus_t *b, sy_bus_call_fn done, void *ctx);
/* The bus' node id (the envelope's), as 16 hex digits and a NUL. */
void sy_bus_node_id(const sy_bus_t *b, char out[17]);
/* True while the bus is up (a relaxed read). */
bool sy_bus_is_up(sy_bus_t *b);
/* The topics' edge hook (sy_topic_edge_fn): ctx is the bus. */
void sy_bus_edge(void *ctx, sy_topic_t *t);
/* A snapshot of the counters and the state (relaxed reads). */
void sy_bus_stats(sy_bus_t *b, sy_bus_stats_t *out);

#endif
