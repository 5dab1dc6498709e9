/*
 * sy_history — the recent messages of topics with history, and their
 * positions (docs/history.md): each publish on such a topic gets the next
 * offset in the topic's epoch, and its symphony.v1 frame (sy_v1.h, built
 * once per publish) is kept: the last `size` of them, none older than
 * `ttl`, within the server-wide `max_bytes` (the oldest go first,
 * whichever topic they belong to). A resume replays kept frames: the IO
 * thread queues references to them, no copy per client.
 *
 * One topic's history (sy_history_t) hangs off its topic (sy_topic.h,
 * t->hist), made on first use with a new random epoch; the topic is freed
 * (history and all) once nothing references it, and a topic made again
 * gets a new epoch. A history that holds messages holds one reference on
 * its topic (so a topic nobody subscribes to keeps its messages until they
 * expire or are pushed out); the sweep gives it back once the history is
 * empty.
 *
 * Exactness (docs/history.md says it in full): every change to a history
 * and every queueing of a publish of a topic with history happen under the
 * server's one history lock, and so does a subscription's "head" (the
 * last offset when its interest was counted and its command queued). So on
 * each IO thread the commands of one topic arrive in offset order, every
 * publish after the head reaches the new subscriber live, and every one up
 * to it is in history (or reported trimmed): replaying (since, head] and
 * then going live is exact.
 *
 * Threads: sy_hist_init and sy_hist_destroy on the owner before and after
 * the threads; the functions marked "locked" with sy_hist_lock held, from
 * any thread (the owner's publishes, the bus thread's, IO threads'
 * replays, IO thread 0's sweep); sy_hist_sweep and sy_hist_totals take
 * the lock themselves.
 *
 * Ownership: the history owns its entries and one reference on each kept
 * frame; sy_hist_replay gives the caller one reference per frame returned
 * (and the array, freed with sy_free). sy_history_free is the topic's, when
 * it is freed.
 *
 * Errors: sy_hist_init and sy_hist_configure return 0 or an errno value;
 * sy_hist_append returns false when the frame could not be kept (out of
 * memory: the history is emptied, so a resume across the hole fails
 * "trimmed" rather than skip it); sy_hist_replay returns the reason a
 * resume cannot be served.
 */
#ifndef SY_HISTORY_H
#define SY_HISTORY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "base/sy_refbuf.h"
#include "base/sy_thread.h"
#include "proto/sy_v1.h"

struct sy_topic;
struct sy_topics;

/* What each kept message costs besides its frame's bytes: its ring slot
 * (24), the frame's header (24) and the allocator's rounding of the frame
 * (16 on average). max_bytes counts both. */
#define SY_HIST_ENTRY_OVERHEAD 64

typedef struct sy_hist_conf {
    uint32_t size;    /* messages kept per topic; 0: no history */
    uint32_t ttl_s;   /* none older (seconds); 0: no limit */
    size_t max_bytes; /* all topics together; 0: no limit */
} sy_hist_conf_t;

typedef struct sy_hist_entry sy_hist_entry_t; /* a ring slot: the frame, when, its order */
typedef struct sy_hist_slot sy_hist_slot_t;   /* a slot of the heap of histories (sy_hist_t.heap) */

/* One topic's history. */
/* When a history's live subscribers are told their position again
 * (sy_hist_adopt, sy_hist_localize, sy_hist_synced; SY_CMD_NOTICE): its
 * sequence changed, and why they may have missed messages (SY_V1_EPOCH,
 * SY_V1_TRIMMED for a hole), or SY_V1_RECOVERED when they missed nothing
 * (a new epoch that starts where the old one was, at 0). */
typedef struct sy_hist_change {
    bool changed;
    sy_v1_reason_t reason;
    uint64_t before; /* the last offset of the old sequence */
} sy_hist_change_t;

typedef struct sy_history {
    uint64_t epoch;
    uint64_t last;  /* the last offset given (0: none yet) */
    uint64_t first; /* the offset of the oldest kept (last + 1 when none) */
    uint32_t size, ttl_s;
    uint32_t head, count, cap; /* the ring of kept entries, oldest at head */
    sy_hist_entry_t *ring;
    /* The newest kept message's meta (the publish's event name, Pusher's
     * cache channels: sy_hist_last), one reference; NULL: none. Only the
     * newest's is kept, so that an entry costs what it did. */
    sy_refbuf_t *last_meta;
    uint32_t heap_at; /* its place in the server's heap while it keeps messages */
    bool holds_ref;   /* one reference on topic while it has held messages */
    /* With a bus (sy_hist_t.sequenced): the epoch and offsets are Redis'
     * (one sequence per topic across nodes, docs/bus.md), not this node's. */
    bool remote;
    /* With a bus: caught up with Redis since this node subscribed (or its
     * subscription came back); until then new subscriptions wait
     * (io/sy_park.h). */
    bool synced;
    /* With a bus: a change that a sync's entries made while they were kept
     * for history only (sy_hist_defer), told at the sync's end. */
    sy_hist_change_t untold;
    struct sy_topic *topic;
} sy_history_t;

/* The server's. */
typedef struct sy_hist {
    sy_mutex_t lock;
    sy_hist_conf_t conf; /* the defaults; per topic: sy_hist_configure */
    size_t bytes, count; /* kept, all topics (under lock) */
    uint64_t seq;        /* messages kept so far: orders them for max_bytes */
    /* The registry, when topics that keep messages must stay wanted by the
     * bus (sy_topic_set_held): set by the server before the threads start;
     * NULL: not followed. */
    struct sy_topics *topics;
    /* The histories that keep messages, as a binary heap by their oldest
     * message (each slot with its key): max_bytes drops the oldest message
     * of all in O(log n). */
    struct sy_hist_slot *heap;
    uint32_t nheap, heap_cap;
    /* With a bus: offsets come from Redis (sy_hist_adopt) and histories
     * must be synced before they serve a subscription (fixed before the
     * threads start). */
    bool sequenced;
    atomic_bool bus_up;     /* the bus is up now: a subscription waits for its topic's sync */
    struct sy_park *parked; /* subscriptions waiting for a sync (io/sy_park.h), under lock */
} sy_hist_t;

sy_err_t sy_hist_init(sy_hist_t *g, const sy_hist_conf_t *conf);
/* After every topic is freed. */
void sy_hist_destroy(sy_hist_t *g);
void sy_hist_lock(sy_hist_t *g);
void sy_hist_unlock(sy_hist_t *g);
/* True when topics get history by default. Any thread (fixed at init). */
static inline bool sy_hist_default_on(const sy_hist_t *g) { return g->conf.size > 0; }

/* Locked. t's history: made (new epoch) when it has none and create and
 * the defaults keep history; NULL when none. A history of size 0 (turned
 * off for that topic) is returned too: check ->size. */
sy_history_t *sy_hist_of(sy_hist_t *g, struct sy_topic *t, bool create);
/* Locked. t keeps size messages, none older than ttl_s (a handle's
 * override): made if needed; trimmed now if smaller. 0 or ENOMEM. */
sy_err_t sy_hist_configure(sy_hist_t *g, struct sy_topic *t, uint32_t size, uint32_t ttl_s, int64_t now_ms);
/* t keeps its last message for ttl_s seconds (0: no limit): configured
 * (under the lock it takes) unless it is so already. 0 or ENOMEM. */
sy_err_t sy_hist_keep_last(sy_hist_t *g, struct sy_topic *t, uint32_t ttl_s, int64_t now_ms);
/* Locked. The next offset of h (h->size > 0). */
static inline uint64_t sy_history_next(sy_history_t *h) { return ++h->last; }
/* Locked. Keeps frame (a reference of its own) as the message at offset
 * h->last, then trims by size, ttl and max_bytes. False when it could
 * not (see Errors), or frame is NULL (the caller could not make it). */
bool sy_hist_append(sy_hist_t *g, sy_history_t *h, sy_refbuf_t *frame, int64_t now_ms);
/* Locked. The same, with the publish's meta (a reference of its own;
 * NULL: none) kept while this is the newest message: Pusher's event name,
 * which a cache channel's subscriber gets with its last event. */
bool sy_hist_append_meta(sy_hist_t *g, sy_history_t *h, sy_refbuf_t *frame, sy_refbuf_t *meta, int64_t now_ms);
/* Locked. h's newest kept message, once what ttl expired is dropped: true
 * with its frame and its meta (NULL: none), a reference each for the
 * caller; false (both NULL) when it keeps none. */
bool sy_hist_last(sy_hist_t *g, sy_history_t *h, int64_t now_ms, sy_refbuf_t **frame, sy_refbuf_t **meta);
/* Locked. The frames after since up to head (a subscription's head: the
 * last offset when it was made) for a client that had (epoch, since),
 * when they are all kept and their bytes fit budget: SY_V1_RECOVERED with
 * *frames (one reference each; NULL when none) and *n. Else the reason. */
sy_v1_reason_t sy_hist_replay(sy_hist_t *g, sy_history_t *h, uint64_t epoch, uint64_t since, uint64_t head,
                              size_t budget, int64_t now_ms, sy_refbuf_t ***frames, size_t *n);
/* Locked. Makes h ready to keep the message at offset in epoch, both
 * Redis' (with a bus): a history in another epoch (or this node's own)
 * starts again at offset; a hole (offset > last + 1) empties it. *change
 * says what live subscribers must be told (SY_V1_RECOVERED: nothing).
 * False when offset is not new (the message is a duplicate: skip it).
 * Then sy_history_next gives offset. */
bool sy_hist_adopt(sy_hist_t *g, sy_history_t *h, uint64_t epoch, uint64_t offset, sy_hist_change_t *change);
/* Locked. A publish of this node's own while the bus cannot sequence it:
 * a history in Redis' epoch moves to a new epoch of this node's (offsets
 * go on from last), so that no offset means two messages. *change as
 * above. */
void sy_hist_localize(sy_hist_t *g, sy_history_t *h, sy_hist_change_t *change);
/* Locked. change was made by an entry kept for history only (a sync's,
 * older than the live subscribers, sy_hist_adopt): told by the sync's
 * sy_hist_synced, at the position the sync leaves, rather than now at
 * the entry's (from which the subscribers would expect the entries). */
void sy_hist_defer(sy_history_t *h, const sy_hist_change_t *change);
/* Locked. Redis has (epoch, last) for h's topic after a sync (its stream's
 * entries were adopted before): a history behind it starts after last in
 * that epoch (*change: a hole or a new epoch), and a change deferred by
 * the entries is told (SY_V1_EPOCH or SY_V1_TRIMMED, never
 * SY_V1_RECOVERED: the subscribers never got the entries); then h is
 * synced. */
void sy_hist_synced(sy_hist_t *g, sy_history_t *h, uint64_t epoch, uint64_t last, sy_hist_change_t *change);
/* Locked. True when h keeps, at offset, a message other than data[0..len)
 * (false when it keeps nothing there: it cannot tell). */
bool sy_hist_differs(const sy_history_t *h, uint64_t offset, const void *data, size_t len);
/* Locked. True when a subscription to h's topic must wait for its sync. */
bool sy_hist_needs_sync(const sy_hist_t *g, const sy_history_t *h);
/* Drops what ttl expired from every topic's history and gives back the
 * topic references of the empty ones (IO thread 0, about once a second;
 * takes the registry's lock, then this one). */
void sy_hist_sweep(sy_hist_t *g, struct sy_topics *topics, int64_t now_ms);
/* Messages and bytes kept now. */
void sy_hist_totals(sy_hist_t *g, size_t *count, size_t *bytes);
/* Frees a history (its topic is being freed): empty, or the whole server
 * is going. NULL is a no-op. */
void sy_history_free(sy_history_t *h);

#endif
