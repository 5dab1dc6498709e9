/*
 * sy_subs — a connection's subscriptions on its IO thread: its array of
 * topics (c->subs) and its places in the topics' subscriber arrays, kept in
 * step; the node's count of each topic's subscriptions, whose 0 <-> 1
 * edges the owner hears of when it asked (SY_EV_TOPIC); an event stream's
 * positions beside them (io/wire/sy_sse_out.h); the "unsubscribed"
 * notice of a symphony.v1 client (io/app/sy_resume.h).
 *
 * Threads: the connection's IO thread.
 *
 * Ownership: sy_conn_subscribe takes over one topic reference and one count
 * of interest (both given back when not added); an unsubscribe gives the
 * subscription's back.
 *
 * Errors: sy_conn_subscribe answers false when not added (already
 * subscribed, not open or upgrading, out of memory); the others do not
 * fail.
 */
#ifndef SY_SUBS_H
#define SY_SUBS_H

#include <stdbool.h>

#include "io/conn/sy_conn.h"

/* Subscribes c to t; true when added. */
bool sy_conn_subscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t);
/* Unsubscribes c from t (a symphony.v1 client is told); false when it was
 * not subscribed. */
bool sy_conn_unsubscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t);
/* Every subscription of c goes (its client is not told). */
void sy_conn_unsubscribe_all(sy_io_t *io, sy_conn_t *c);

#endif
