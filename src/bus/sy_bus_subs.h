/*
 * sy_bus_subs — the bus' subscriptions follow local interest: SSUBSCRIBE
 * while a topic has a local subscriber, SUNSUBSCRIBE after the last one
 * leaves, in batches.
 *
 * A change (sy_bus_subs_want, a link up or down, a push from Redis, a new
 * slot map) marks the channels it touches dirty; sy_bus_subs_run
 * reconciles the dirty ones with what they want, as one command per
 * shard, kind and (cluster) slot (Redis Cluster demands one slot per
 * command), of at most 512 channels each. After a command the next
 * changes wait SUBSCRIBE_WINDOW_MS (10 ms), so that a burst of
 * connections becomes a few commands, not one per turn; the first change
 * after a quiet spell goes at once. A channel nobody wants and whose
 * unsubscribe Redis confirmed is forgotten.
 *
 * Redis confirms each channel with a push (ssubscribe / sunsubscribe); the
 * channels it confirmed are the bus' `channels` gauge. When Redis
 * unsubscribes a channel itself (its slot moved), the channel is
 * subscribed again where the next map says.
 *
 * Threads: sy_bus_subs_init and _destroy on the owner's thread (before the
 * bus thread starts, after it ended); everything else on the bus thread.
 *
 * Ownership: the channel table, the shards and the two counters are the
 * bus', and outlive the subs; the subs own their dirty list only. They
 * make and forget channels in the table (sy_bus_chan_get, _remove).
 *
 * Errors: nothing here reports one. A change that cannot be recorded or
 * sent for want of memory (or because a link is down) is retried at a
 * later turn, or when the link comes up; a topic's change lost (no memory
 * for its channel) is made up at the topic's next change.
 */
#ifndef SY_BUS_SUBS_H
#define SY_BUS_SUBS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "bus/sy_bus_chan.h"
#include "bus/sy_bus_shard.h"

typedef struct sy_bus_subs {
    sy_bus_chans_t *chans;          /* every channel the bus knows */
    sy_bus_shards_t *shards;        /* where the commands go */
    atomic_uint_fast64_t *channels; /* gauge: channels Redis confirmed */
    atomic_uint_fast64_t *commands; /* counter: (S)SUBSCRIBE commands sent */
    sy_bus_chan_t **dirty;          /* channels to reconcile */
    size_t ndirty, dirty_cap;
    bool all_dirty; /* reconcile every channel */
    int64_t due_ms; /* no command before (the window) */
} sy_bus_subs_t;

/* Subscriptions for the channels of chans, sent to shards; channels: the
 * gauge of confirmed channels, commands: the counter of commands sent. */
void sy_bus_subs_init(sy_bus_subs_t *s, sy_bus_chans_t *chans, sy_bus_shards_t *shards, atomic_uint_fast64_t *channels,
                      atomic_uint_fast64_t *commands);
/* Frees the dirty list; zero-filled subs are safe to destroy. */
void sy_bus_subs_destroy(sy_bus_subs_t *s);

/* Topic name[0..len) has local interest now (want), or none. */
void sy_bus_subs_want(sy_bus_subs_t *s, const char *name, size_t len, bool want);
/* A subscribing link came up: every channel is reconciled. */
void sy_bus_subs_link_up(sy_bus_subs_t *s);
/* shard's subscribing link went down, and its subscriptions with it. */
void sy_bus_subs_shard_lost(sy_bus_subs_t *s, const sy_bus_shard_t *shard);
/* What a subscription push from Redis meant. */
typedef enum sy_bus_subs_event {
    SY_BUS_SUBS_NONE = 0,
    SY_BUS_SUBS_CONFIRMED, /* a subscription of ours is in place */
    SY_BUS_SUBS_MOVED,     /* Redis undid one of ours by itself (its slot moved): read the map again */
} sy_bus_subs_event_t;

/* Redis confirmed (subscribe) or undid one subscription of channel
 * name[0..len) (prefix included) on shard; *chan: its channel (or NULL). */
sy_bus_subs_event_t sy_bus_subs_push(sy_bus_subs_t *s, const sy_bus_shard_t *shard, bool subscribe, const char *name,
                                     size_t len, sy_bus_chan_t **chan);
/* A slot map is being applied (sy_bus_shards_stage, before _commit):
 * channels whose shard changes are unsubscribed from the old one (when it
 * stays, and its link is up) and subscribed where next says. */
void sy_bus_subs_rehome(sy_bus_subs_t *s, const sy_bus_shard_set_t *next);
/* Sends what the dirty channels need, when the window allows. Returns the
 * time (ms) it waits for, or INT64_MAX. */
int64_t sy_bus_subs_run(sy_bus_subs_t *s, int64_t now);

#endif
