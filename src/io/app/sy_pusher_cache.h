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

/* Whether a publish with this meta is left out of a cache channel's
 * history: the server's own pusher_internal: events (a presence-cache
 * channel's member_added and member_removed) are delivered, not kept, so
 * the cached event stays the last one published. Any thread. */
bool sy_pusher_cache_unkept(const void *meta, size_t len);

#endif
