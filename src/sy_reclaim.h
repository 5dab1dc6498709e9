/*
 * sy_reclaim — the memory policy of an IO thread: after its connections fall
 * by a large share, or when it goes idle, it gives its memory back.
 *
 * A fan-out node's connections come and go in waves. When a wave recedes,
 * the survivors are scattered through slabs that the peak filled, and each
 * slab with one survivor keeps its pages. A reclaim, run by the IO thread on
 * its own arena only (no other thread waits for it):
 *
 *   1. returns the thread's cached free blocks to their slabs;
 *   2. moves each connection (and its subscription array) that sits in a
 *      slab used less than its size class's average into a fuller one
 *      (sy_alloc_should_move / sy_alloc_move), fixing every pointer to it:
 *      the slot table, the poller and the topics' subscriber lists; up to
 *      SY_RECLAIM_PASSES passes, while a pass still moves 1 in 32;
 *   3. purges the arena: its unused pages go back to the OS now, instead of
 *      after the decay time.
 *
 * When: once a second (the sweep) the thread compares its connections with
 * the most it had since the last reclaim. A fall to half or less (from at
 * least SY_RECLAIM_MIN_PEAK), or SY_RECLAIM_IDLE_MS without any event, runs a
 * reclaim; at most one per SY_RECLAIM_INTERVAL_MS. The cost (a walk over the
 * thread's connections plus one copy per moved block) is measured and kept in
 * the thread's stats (reclaim_us, reclaim_us_max).
 *
 * Only in the jemalloc build, and only with opts.reclaim (the default).
 * Threads: the IO thread that owns io.
 */
#ifndef SY_RECLAIM_H
#define SY_RECLAIM_H

#include <stdint.h>

#include "sy_io.h"

#define SY_RECLAIM_MIN_PEAK 64
#define SY_RECLAIM_IDLE_MS 10000
#define SY_RECLAIM_INTERVAL_MS 2000
#define SY_RECLAIM_PASSES 4

/* A turn of the loop saw events (keeps the thread from counting as idle). */
static inline void sy_reclaim_activity(sy_io_t *io) {
    io->reclaim.last_active_ms = io->now_ms;
    io->reclaim.idle_done = false;
}

/* Called by the sweep, after the dirty list was flushed: runs a reclaim when
 * the policy says so. Also records where a connection's memory lives
 * (stats.conn_arena), so that tests and operators can see the arenas work. */
void sy_reclaim_tick(sy_io_t *io, uint32_t connections);

/* Runs one reclaim now; returns the blocks moved. */
uint64_t sy_reclaim_run(sy_io_t *io);

#endif
