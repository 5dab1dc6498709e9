/*
 * sy_fanout — a publish or a notice written to a topic's subscribers of
 * one IO thread: each subscriber gets its kind's frame (plain, symphony.v1,
 * an event stream's event), made once per publish, or that frame's
 * compressed twin. The loop over subscribers makes direct calls only.
 *
 * Threads: the IO thread's own (its command runs it).
 *
 * Ownership: the command keeps its references (the queues take theirs in
 * one step after the walk); a frame made here (the symphony.v1 frame of a
 * publish without one) is stored in the command, which releases it.
 *
 * Errors: none to the caller: a subscriber that cannot take a frame is
 * handled by its slow-consumer policy or closed (out of memory: 1011).
 */
#ifndef SY_FANOUT_H
#define SY_FANOUT_H

#include "io/loop/sy_loop.h"

/* SY_CMD_PUBLISH: the topic's subscribers of this thread. */
void sy_fanout_publish(sy_io_t *io, sy_cmd_t *cmd);
/* SY_CMD_NOTICE: the topic's symphony.v1 subscribers of this thread. */
void sy_fanout_notice(sy_io_t *io, sy_cmd_t *cmd);

#endif
