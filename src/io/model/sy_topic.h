/*
 * sy_topic — the server's topics: a name, a subscriber count per IO thread,
 * and per IO thread the list of that thread's subscribed connections.
 *
 * The registry (name -> topic) is shared by the JS thread and the IO threads
 * and guarded by one mutex, taken only to find, create or drop a topic;
 * never while delivering. A topic lives while it is referenced: by each
 * subscription, by each queued command that names it, and by whoever is
 * holding it. The last release removes it from the registry and frees it.
 *
 * Interest: per IO thread, the subscriptions there plus the ones queued to
 * it and not yet applied; publish() skips a thread with none. It changes
 * only through sy_topic_add_interest / sy_topic_drop_interest, and every
 * unit of it comes with one reference on the topic.
 *
 * Subscriber arrays hold the connections' slots (sy_io.h): a connection
 * that moves in memory stays where it is here.
 *
 * Threads: sy_topics_count, sy_topic_acquire/ref/release and the interest
 * functions from any thread (the registry's mutex, the atomic counts); the
 * edge callback runs on the thread that made the change, outside the
 * mutex. sy_topics_init and sy_topics_destroy: the owner, before and after
 * every other thread uses the registry. The subscriber array of thread t
 * only from IO thread t.
 *
 * A topic's history (io/sy_history.h) is freed with it.
 *
 * Ownership: acquire returns one reference, the caller's, given back with
 * sy_topic_release (never freed directly); the name is copied into the
 * topic. A unit of interest carries one reference: add_interest takes over
 * the caller's, drop_interest gives one back. The subscriber arrays belong
 * to the topic (freed with it) and hold slots, not connections.
 *
 * Errors: sy_topics_init and sy_topic_add_sub return 0 or an errno value
 * (ENOMEM); sy_topic_acquire returns NULL when missing (without create) or
 * out of memory. The rest cannot fail.
 */
#ifndef SY_TOPIC_H
#define SY_TOPIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "base/sy_strmap.h"
#include "base/sy_thread.h"

/* One IO thread's view of a topic. */
typedef struct sy_topic_slot {
    /* Subscriptions on this thread, plus the ones queued to it and not yet
     * applied: publish() skips a thread whose count is 0. */
    atomic_uint count;
    uint32_t nsubs, cap;
    uint32_t *subs; /* slots of the subscribed connections; IO thread t only */
} sy_topic_slot_t;

struct sy_history;

typedef struct sy_topic {
    sy_strmap_node_t node; /* in the registry's map, under its lock */
    atomic_uint refs;
    atomic_uint interest; /* the sum of the slots' counts (the bus follows its 0 <-> 1 edges) */
    unsigned nthreads;
    uint32_t id;    /* names it in symphony.v1 frames (sy_v1.h); unique among live topics */
    atomic_uint v1; /* subscriptions of symphony.v1 connections (a publish builds their frame when > 0) */
    struct sy_history *_Atomic hist; /* its history (io/sy_history.h), set under the history lock; NULL: none */
    atomic_bool held;                /* its history keeps messages: the bus stays subscribed without interest */
    atomic_uint subs;                /* subscriptions applied on every IO thread (sy_topic_count_sub) */
    sy_topic_slot_t *slots;          /* [nthreads] */
    size_t name_len;
    char name[];
} sy_topic_t;

/* Called (on whichever thread made the change) when a topic's interest
 * across all IO threads went from 0 to 1 or from 1 to 0: the bus
 * (sy_bus.h) follows local interest with its subscriptions. The callee may
 * take a reference (sy_topic_ref) and must read the interest again later
 * rather than trust the order of the calls. */
typedef void (*sy_topic_edge_fn)(void *ctx, sy_topic_t *t);

typedef struct sy_topics {
    sy_mutex_t lock;
    sy_topic_edge_fn on_edge; /* set before any topic exists; NULL: none */
    /* Frees a topic's history (io/model/sy_history.h's sy_history_free),
     * set by whoever gives topics history, before any exists; NULL: none. */
    void (*free_hist)(struct sy_history *h);
    void *edge_ctx;
    sy_strmap_t map; /* name -> topic (base/sy_strmap.h) */
    unsigned nthreads;
    uint32_t next_id; /* under lock */
} sy_topics_t;

/* 0 or an errno value. */
sy_err_t sy_topics_init(sy_topics_t *r, unsigned nthreads);
/* Frees the registry. Every topic must have been released. */
void sy_topics_destroy(sy_topics_t *r);
/* Number of live topics. */
size_t sy_topics_count(sy_topics_t *r);
/* Calls fn for every live topic, under the registry's lock (fn must not
 * acquire or release topics). */
void sy_topics_each(sy_topics_t *r, void (*fn)(void *ctx, sy_topic_t *t), void *ctx);

/* Finds a topic and takes a reference. With create, makes it when missing.
 * NULL when missing (and not create) or out of memory (create). */
sy_topic_t *sy_topic_acquire(sy_topics_t *r, const char *name, size_t len, bool create);
/* Takes another reference on a topic already held. */
void sy_topic_ref(sy_topic_t *t);
/* Drops a reference; the last one removes and frees the topic. */
void sy_topic_release(sy_topics_t *r, sy_topic_t *t);

/* One more unit of interest on thread, with the reference the caller holds
 * (handed over with it). */
void sy_topic_add_interest(sy_topics_t *r, sy_topic_t *t, unsigned thread);
/* Gives back one unit of interest and its reference. */
void sy_topic_drop_interest(sy_topics_t *r, sy_topic_t *t, unsigned thread);
/* Interest on thread now (a relaxed read). */
unsigned sy_topic_interest(const sy_topic_t *t, unsigned thread);
/* Interest on every thread together now. */
unsigned sy_topic_total_interest(const sy_topic_t *t);
/* Whether the bus should be subscribed to t now: interest, or a history
 * that keeps messages (held). */
bool sy_topic_wanted(const sy_topic_t *t);
/* Sets held and, when it changed, calls the edge callback (the bus reads
 * sy_topic_wanted again). The caller holds a reference on t. */
void sy_topic_set_held(sy_topics_t *r, sy_topic_t *t, bool held);

/* The node's subscriptions of t (applied, all IO threads together) went
 * up (add) or down by one: the caller counts each subscription it adds to
 * or removes from a subscriber array. True when that took the count from
 * 0 to 1 or from 1 to 0 (the owner's 'subscription' event, io/sy_events.h;
 * edges on different threads may be seen in any order: read
 * sy_topic_subscribers again). Any thread. */
bool sy_topic_count_sub(sy_topic_t *t, bool add);
/* That count now. Any thread. */
unsigned sy_topic_subscribers(const sy_topic_t *t);

/* Adds slot to thread's subscriber array; *index: its position. 0 or ENOMEM.
 * IO thread `thread` only. */
sy_err_t sy_topic_add_sub(sy_topic_t *t, unsigned thread, uint32_t slot, uint32_t *index);
/* Removes the subscriber at index (the last one moves into its place).
 * True when one moved, with its slot in *moved_slot. */
bool sy_topic_remove_sub(sy_topic_t *t, unsigned thread, uint32_t index, uint32_t *moved_slot);

#endif
