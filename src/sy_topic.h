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
 * Threads: sy_topics_* and sy_topic_acquire/release from any thread.
 * counts[t] from any thread (atomics). subs[t] only from IO thread t.
 */
#ifndef SY_TOPIC_H
#define SY_TOPIC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sy_conn;

/* One IO thread's view of a topic. */
typedef struct sy_topic_slot {
    /* Subscriptions on this thread, plus the ones queued to it and not yet
     * applied: publish() skips a thread whose count is 0. */
    atomic_uint count;
    uint32_t nsubs, cap;
    struct sy_conn **subs; /* IO thread t only */
} sy_topic_slot_t;

typedef struct sy_topic {
    struct sy_topic *next; /* hash chain, under the registry lock */
    uint64_t hash;
    atomic_uint refs;
    unsigned nthreads;
    sy_topic_slot_t *slots; /* [nthreads] */
    size_t name_len;
    char name[];
} sy_topic_t;

typedef struct sy_topics {
    pthread_mutex_t lock;
    sy_topic_t **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
    unsigned nthreads;
} sy_topics_t;

/* 0 or an errno value. */
int sy_topics_init(sy_topics_t *r, unsigned nthreads);
/* Frees the registry. Every topic must have been released. */
void sy_topics_destroy(sy_topics_t *r);
/* Number of live topics. */
size_t sy_topics_count(sy_topics_t *r);

/* Finds a topic and takes a reference. With create, makes it when missing.
 * NULL when missing (and not create) or out of memory (create). */
sy_topic_t *sy_topic_acquire(sy_topics_t *r, const char *name, size_t len, bool create);
/* Takes another reference on a topic already held. */
void sy_topic_ref(sy_topic_t *t);
/* Drops a reference; the last one removes and frees the topic. */
void sy_topic_release(sy_topics_t *r, sy_topic_t *t);

/* Adds conn to thread's subscriber list; returns its index, or -1 when out
 * of memory. IO thread `thread` only. */
long sy_topic_slot_add(sy_topic_t *t, unsigned thread, struct sy_conn *conn);
/* Removes the subscriber at index (swap with the last). Returns the
 * connection that moved into `index`, or NULL if none moved. */
struct sy_conn *sy_topic_slot_remove(sy_topic_t *t, unsigned thread, uint32_t index);

#endif
