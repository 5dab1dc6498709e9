/*
 * sy_ask — what a symphony.v2 client asks (proto/sy_v2.h), on the IO
 * thread that owns it: its application messages go to the owner as
 * SY_EV_MESSAGE (without their "d\n"); its subscribes, publishes and
 * requests go to the owner as SY_EV_ASK events to decide (the application's
 * hooks), each then pending until the owner answers it (sy_ask_settle);
 * its unsubscribes are done here at once. What needs no decision is
 * answered here: a malformed frame (an error answer; past
 * SY_ASK_BAD_MAX of them the connection is closed 1008, after the answers
 * queued before), a bad entry of a subscribe frame (refused "bad-request"
 * alone, the others go on; a frame with any counts once as malformed), a
 * kind this server does not know (an error answer), a subscribe past
 * max_subscriptions (refused), a subscribe to a topic the connection holds
 * (answered with its place, no decision, queued behind the publishes
 * numbered before it).
 *
 * max_pending: a subscribe entry that finds max_pending asks pending waits
 * here, in order (copied; at most max_subscriptions entries, else
 * SY_V2_BATCH_MAX, holding at most max_payload bytes; past that it is
 * refused "too-many-pending"), and goes on as earlier asks are answered
 * (sy_ask_drain): one frame of 1,024 subscribes is all taken. Waiting
 * entries count toward max_subscriptions; an unsubscribe drops those of its
 * topic. A publish or a request past max_pending is refused at once.
 *
 * Answers and notices go out through sy_conn_notice: never dropped or
 * conflated by the slow-consumer policy (or the connection is closed).
 *
 * The work budget (io/sy_budget.h, maxWorkPerSecond): each subscribe
 * entry, publish, request and unsubscribe, and each message POSTed to a
 * symphony.v2 event stream, costs SY_WORK_ENTRY; each token signature
 * checked its weight (auth/sy_jwt.h), charged after the check. An entry
 * the budget has no room for is refused `rate-limited` before anything
 * else is done for it (an unsubscribe and a POSTed message are done
 * anyway: the first lowers the work, the second was answered already); a
 * connection that goes on asking past the grace is closed (1008, counted
 * in workCloses).
 * A token refused on this thread is remembered (auth/sy_tokcache.h): the
 * same bytes are refused again without a check, until the key set changes.
 *
 * SY_EV_ASK (sy_events.h): flags = the kind ('s', 'p', 'r', 'u'); code:
 * SY_ASK_BINARY (p, r: the payload came in a binary frame) | SY_ASK_RESUB
 * (s: the client is subscribing again after a reconnect); payload: a
 * sequence of u32-length-prefixed strings (as SY_EV_UPGRADE's):
 *   s: rid (decimal), topic, since ("<epoch hex>:<offset>" or ""), token, data (JSON or "")
 *   p: rid, topic, payload
 *   r: rid, payload
 *   u: rid, topic (done already: the owner drops what it had pending for it)
 *   S: rid, topic (a token granted it here: told only with tell_token_subscribes)
 *   P: rid, topic, payload (a publish its token granted here: the owner publishes it)
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: a connection's pending asks live in a table of the thread's
 * (one pointer per slot, made when a connection first asks), freed by
 * sy_ask_forget when it goes and by sy_ask_free_all with the thread.
 *
 * Errors: none to the caller: out of memory closes the connection (1011).
 */
#ifndef SY_ASK_H
#define SY_ASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/conn/sy_conn.h"
#include "io/loop/sy_loop.h"

#define SY_ASK_BINARY 1u
#define SY_ASK_RESUB 2u
/* Malformed frames a connection may send; the next one closes it (1008). */
#define SY_ASK_BAD_MAX 16

/* A message from c, which speaks symphony.v2 (opcode text or binary). */
void sy_ask_message(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n);
/* The owner answers c's ask rid: true when it was pending (and is no
 * longer); false when it is not (answered already, or dropped: the client
 * unsubscribed meanwhile), and the owner's answer is dropped. */
bool sy_ask_settle(sy_io_t *io, sy_conn_t *c, uint32_t rid);
/* Room under max_pending (an ask answered, dropped): the subscribe
 * entries that wait go on, oldest first, while there is room. The IO
 * thread calls it after each owner's answer (sy_io.c). */
void sy_ask_drain(sy_io_t *io, sy_conn_t *c);
/* When c holds t already, answers the ask pos->rid with the "subscribed"
 * notice at pos->head (no replay) and returns true. */
bool sy_ask_answer_held(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, const sy_sub_pos_t *pos);
/* c goes: its pending asks are dropped. */
void sy_ask_forget(sy_io_t *io, sy_conn_t *c);
/* The thread ends: every table freed. */
void sy_ask_free_all(sy_io_t *io);

#endif
