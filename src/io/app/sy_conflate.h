/*
 * sy_conflate — the 'conflate' slow-consumer policy: a connection over its
 * send limit (max_backpressure) gets the newest message of each topic, not
 * the oldest queued ones and then a gap.
 *
 * While a connection is over the limit, a publish of topic T takes the
 * place of the newest queued message of T that none of is written yet (the
 * replaced frame's reference is released, counted in `conflated`); when T
 * has none queued (or its newest is being written), the message is
 * appended. A replaced message keeps its place in the queue: per topic the
 * client still receives increasing positions (each replacement swaps a
 * message for a newer one of the same topic, and nothing of that topic is
 * queued after it), and the queue never moves or leaves holes, so a
 * replacement costs O(1) plus finding the subscription. Order across
 * topics and against direct messages is not kept for a replaced message:
 * the newer value arrives where the older one was.
 *
 * Where a topic's newest queued message is: its subscription records the
 * queue's id for it (sy_sub_t.cq, in what was padding), and the connection
 * has one bit (conflating). Nothing is allocated: a connection that never
 * went over its limit pays nothing, and one that did pays a walk of its
 * subscriptions per publish until its queue is empty again
 * (sy_conflate_reset).
 *
 * The bound: the queue held at most max_backpressure bytes when
 * conflation began; the newest message of each topic may take it to
 * twice that, no further. A message that would (a new topic's first, or a
 * larger value's replacement) closes the connection with 1008 "slow
 * consumer", counted in slowCloses, as 'close' does: past that bound the
 * client cannot be given the newest state of every topic it holds, and a
 * silent stale topic is what this policy exists to avoid.
 *
 * Anything else pushed to a conflating connection (send(), symphony.v1
 * notices, history replays, which sy_resume already keeps within the
 * limit) goes through sy_conn_push, under the 'drop' rule: queued under
 * the limit, dropped and counted (`dropped`) over it.
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: as sy_conn_push's: on true the queue owns one reference the
 * caller must add (the replaced frame's was released); on false nothing
 * was taken.
 *
 * Errors: none to the caller: false when the message was not queued (the
 * connection not open, closed by the bound, or failed for lack of memory:
 * 1011, oom_closes).
 */
#ifndef SY_CONFLATE_H
#define SY_CONFLATE_H

#include <stdbool.h>

#include "base/sy_refbuf.h"
#include "io/conn/sy_conn.h"

/* Queues frame m of topic t (c is subscribed to t) under the conflate
 * policy; see above. */
bool sy_conflate_push(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, sy_topic_t *t);
/* The queue is empty: c is no longer conflating; its subscriptions forget
 * their queued ids. No-op unless c->conflating. */
void sy_conflate_reset(sy_conn_t *c);

#endif
