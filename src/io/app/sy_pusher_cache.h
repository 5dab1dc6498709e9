/*
 * sy_pusher_cache — Pusher's cache channels (cache-, private-cache-,
 * presence-cache-, private-encrypted-cache-; docs/pusher.md, "Cache
 * channels") on symphony's history: a cache channel's topic keeps its last
 * message (a history of size 1, none older than the app's cacheTtl), with
 * the publish's meta (its event name) beside it (sy_hist_append_meta). A
 * new subscriber gets that message as the event it was, or
 * pusher:cache_miss when none is kept. With a bus, the topic's history is
 * Redis' (a stream of 1 with the same ttl), so a publish on one node is
 * the last event on every node that syncs the topic.
 *
 * Threads: any thread (the history lock is taken here).
 *
 * Ownership: the caller holds a reference on t throughout; an answer is a
 * new frame with one reference, the caller's.
 *
 * Errors: sy_pusher_cache_keep returns 0 or ENOMEM; sy_pusher_cache_answer
 * returns NULL when out of memory; sy_pusher_cache_unkept cannot fail.
 */
#ifndef SY_PUSHER_CACHE_H
#define SY_PUSHER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "base/sy_refbuf.h"
#include "io/loop/sy_loop.h"
#include "io/model/sy_topic.h"

/* Makes t (a cache channel's topic) keep its last message for ttl_s
 * seconds (0: no limit), before its first publish or subscription: the
 * publish then goes through its history (and, with a bus, Redis'). */
sy_err_t sy_pusher_cache_keep(sy_io_shared_t *sh, sy_topic_t *t, uint32_t ttl_s);

/* What a new subscriber of cache channel channel[0..len) (topic t) gets
 * after its subscription_succeeded: the last event, or pusher:cache_miss
 * (*miss true). The one place a cache miss is decided (the cache_miss
 * webhook's source). */
sy_refbuf_t *sy_pusher_cache_answer(sy_io_shared_t *sh, sy_topic_t *t, const char *channel, size_t len, bool *miss);

/* A connection's cache subscriptions waiting to be answered: a cache
 * channel's until its topic's sync lands (a bus), a presence-cache one's
 * until the owner's subscribe lands. Each holds a reference on its topic.
 * Zeroed: empty. The connection's IO thread only. */
typedef struct sy_pusher_cache_wait {
    sy_topic_t *t;
    bool cancelled; /* unsubscribed meanwhile: ended once it lands */
    bool presence;  /* the owner sent its subscription_succeeded */
} sy_pusher_cache_wait_t;
typedef struct sy_pusher_cache_waits {
    sy_pusher_cache_wait_t *w;
    uint32_t n, cap;
} sy_pusher_cache_waits_t;

/* The wait on topic name[0..len), or NULL. */
sy_pusher_cache_wait_t *sy_pusher_cache_wait_of(sy_pusher_cache_waits_t *l, const char *name, size_t len);
/* A new wait on t (referenced here). False: out of memory. */
bool sy_pusher_cache_wait_add(sy_pusher_cache_waits_t *l, sy_topic_t *t, bool presence);
/* Ends the wait on t, its reference given back to topics; *out (NULL: not
 * wanted) what it was. False: none. */
bool sy_pusher_cache_wait_take(sy_pusher_cache_waits_t *l, struct sy_topics *topics, const sy_topic_t *t,
                               sy_pusher_cache_wait_t *out);
/* Every wait ended (the connection closes). */
void sy_pusher_cache_waits_free(sy_pusher_cache_waits_t *l, struct sy_topics *topics);

/* Whether a publish with this meta is left out of a cache channel's
 * history: the server's own pusher_internal: events (a presence-cache
 * channel's member_added and member_removed) are delivered, not kept, so
 * the cached event stays the last one published. Any thread. */
bool sy_pusher_cache_unkept(const void *meta, size_t len);

#endif
