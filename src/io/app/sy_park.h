/*
 * sy_park — subscriptions that wait for their topic's sync (docs/bus.md,
 * "History across nodes"). With a bus, a topic's offsets are Redis', and a
 * node that has just subscribed to a topic (or whose subscription came
 * back after an outage) reads what Redis' stream has before it serves a
 * subscription from its history. A subscription (SY_CMD_SUBSCRIBE with a
 * position, or an SY_CMD_ACCEPT whose topics have history) made meanwhile
 * waits here, its interest counted (so the bus subscribes) and its
 * command not queued yet. Its heads are read, and the command queued,
 * under the history lock once every topic it names is synced: the
 * exactness argument of io/sy_history.h holds as for a command queued at
 * once. A wait ends anyway when the bus goes down or after
 * SY_PARK_MAX_MS: the subscription is then served from what this node has.
 *
 * Threads: every function but sy_park_expire and sy_park_discard with the
 * history lock held (sy_hist_lock),
 * from any thread (the owner's subscriptions, the bus thread's syncs, IO
 * thread 0's sweep); those two without it.
 *
 * Ownership: a parked command keeps its references (topics, interest,
 * positions, the accept); a command that could not be queued comes back
 * to the caller, for sy_park_discard after the lock.
 *
 * Errors: sy_park_or_push returns 0 or the errno value of the queueing
 * (the caller keeps the command's references then).
 */
#ifndef SY_PARK_H
#define SY_PARK_H

#include <stdint.h>

#include "base/sy_errors.h"
#include "io/loop/sy_loop.h"
#include "io/model/sy_history.h"

/* A wait for a sync ends after this long, synced or not. */
#define SY_PARK_MAX_MS 5000

typedef struct sy_park sy_park_t;

/* Locked. Queues cmd (SY_CMD_SUBSCRIBE with pos, or SY_CMD_ACCEPT with
 * heads) to io with its heads read now, or parks it while one of its
 * topics needs a sync (sy_hist_needs_sync). 0 or an errno value. */
sy_err_t sy_park_or_push(sy_hist_t *g, sy_io_t *io, sy_cmd_t *cmd, int64_t now_ms);
/* Not locked (takes the lock). The subscription of connection id (of io)
 * to t (held: its one reference is handed over) where the subscriber must
 * learn its position (t has history, or since is given): a position is
 * made (since's fields, or none; extra[0..extra_len) for its notice,
 * io/sy_io.h), t's history made when history is on by default, its
 * interest counted and its command queued with its head (or parked) under
 * the history lock, as io/sy_history.h's exactness needs. Any thread (the
 * owner's subscribe, an IO thread's own for a client). 0, or ENOMEM or
 * EPIPE (the thread has ended): t's reference is given back then. */
sy_err_t sy_park_subscribe(sy_hist_t *g, struct sy_topics *topics, sy_io_t *io, uint64_t id, struct sy_topic *t,
                           const sy_sub_pos_t *since, const char *extra, size_t extra_len, int64_t now_ms);
/* Locked. The waits on t are over (t synced; NULL: every wait parked at or
 * before until_ms): each command is queued, or parks on another topic of
 * its own that needs a sync. Returns those that could not be queued. */
sy_park_t *sy_park_settle(sy_hist_t *g, struct sy_topic *t, int64_t until_ms);
/* Takes the lock: every wait parked at or before until_ms ends (the
 * sweep's SY_PARK_MAX_MS; INT64_MAX: all, the bus is down or stopped);
 * their commands are queued, or discarded when they cannot be. */
void sy_park_expire(sy_hist_t *g, int64_t until_ms);
/* Gives back what the commands of list hold (not under the lock: it may
 * free topics). */
void sy_park_discard(sy_park_t *list);

#endif
