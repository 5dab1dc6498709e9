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
 *      (sy_alloc_should_move / sy_alloc_move) through sy_io_compact_slot:
 *      the poller and the topics name connections by slot, so the slot
 *      table's one cell is all that changes; up to SY_RECLAIM_PASSES passes,
 *      while a pass still moves 1 in 32;
 *   3. purges the arena: its unused pages go back to the OS now, instead of
 *      after the decay time.
 *
 * When: once a second (the sweep) the thread compares its connections with
 * the most it had since the last reclaim. A fall to half or less (from at
 * least SY_RECLAIM_MIN_PEAK), or SY_RECLAIM_IDLE_MS without any event, starts
 * a reclaim; so does a fall that went on below where the last reclaim began
 * and has now stopped (a fast drop still closing sockets when its reclaim
 * ran), and, while the thread stays idle, unused pages that appeared in its
 * arena since (blocks other threads freed into it); at most one per
 * SY_RECLAIM_INTERVAL_MS after the last ended.
 * It runs in slices, one per loop turn between the turn's events (at most
 * SY_RECLAIM_SLICE connections looked at per slice, then the purge), so the
 * thread's sockets never wait for a whole walk. Its cost is measured and kept
 * in the thread's stats: reclaim_us (all slices), reclaim_us_max (the longest
 * slice: the longest the policy held the thread).
 *
 * Only in the jemalloc build, and only with opts.reclaim (the default).
 *
 * Threads: the IO thread that owns io. It writes the thread's counters
 * (relaxed atomics, which any thread reads).
 *
 * Ownership: the state lives inside sy_io_t and allocates nothing; stats
 * points at the thread's counters. A moved connection's new address goes
 * into its slot (sy_io_compact_slot); nothing else is kept.
 *
 * Errors: none reported: the functions return nothing, and a block that
 * cannot move (out of memory) stays where it is.
 */
#ifndef SY_RECLAIM_H
#define SY_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

#define SY_RECLAIM_MIN_PEAK 64
#define SY_RECLAIM_IDLE_MS 10000
#define SY_RECLAIM_INTERVAL_MS 2000
#define SY_RECLAIM_PASSES 4
#define SY_RECLAIM_SLICE 256

#include "io/model/sy_stats.h"

/* How the policy walks the thread's connections without knowing them (the
 * thread gives it this: io/sy_io.c): how many slots, moving one slot's
 * connection (the blocks moved; *skipped: empty or pinned), and any live
 * connection (to learn which arena they come from), each with arg. */
typedef struct sy_reclaim_walk {
    void *arg;
    uint32_t (*slots)(void *arg);
    unsigned (*compact)(void *arg, uint32_t slot, bool *skipped);
    const void *(*any)(void *arg);
} sy_reclaim_walk_t;

/* The policy's state, one per IO thread (inside sy_io_t). The thread
 * reaches the policy only through the functions below, and the policy
 * reaches the thread only through sy_io_slot_count, sy_io_any_conn and
 * sy_io_compact_slot (io/sy_io_thread.h). */
typedef struct sy_reclaim {
    /* Set once by sy_reclaim_init, on the IO thread. */
    sy_stats_live_t *stats; /* the thread's counters */
    unsigned arena;         /* the thread's own jemalloc arena, when own_arena */
    bool own_arena;
    bool enabled;            /* opts.reclaim */
    uint32_t peak;           /* most connections since the last reclaim */
    uint32_t started_at;     /* connections when the last reclaim started (0: none) */
    uint32_t prev;           /* connections at the previous sweep */
    int64_t last_active_ms;  /* last turn with any event */
    bool idle_done;          /* reclaimed since the thread went idle */
    int64_t next_allowed_ms; /* rate limit */
    /* A reclaim in progress, done a slice per loop turn (sy_reclaim_step). */
    bool running;
    unsigned pass;   /* defragmentation pass, 0-based */
    uint32_t cursor; /* next slot to look at in this pass */
    uint64_t seen, moved_pass, moved;
    int64_t before_bytes; /* the arena's pages when it began */
    int64_t busy_us;      /* time spent in its slices so far */
} sy_reclaim_t;

/* Before the thread's loop: its counters, its arena (own_arena false:
 * none; the policy then only reports), whether the policy is on. */
static inline void sy_reclaim_init(sy_reclaim_t *r, sy_stats_live_t *stats, unsigned arena, bool own_arena,
                                   bool enabled, int64_t now_ms) {
    r->stats = stats;
    r->arena = arena;
    r->own_arena = own_arena;
    r->enabled = enabled;
    r->last_active_ms = now_ms;
}

/* The thread now has n connections: the peak the next fall is measured
 * from (also taken at each sweep). */
static inline void sy_reclaim_note_count(sy_reclaim_t *r, uint32_t n) {
    if (n > r->peak)
        r->peak = n;
}

/* A turn of the loop saw events at now_ms (keeps the thread from counting
 * as idle). */
static inline void sy_reclaim_activity(sy_reclaim_t *r, int64_t now_ms) {
    r->last_active_ms = now_ms;
    r->idle_done = false;
}

/* True while a reclaim is in progress: the loop must not sleep, and calls
 * sy_reclaim_step once per turn, after its events and before freeing the
 * dead (the dirty list is empty then). */
static inline bool sy_reclaim_pending(const sy_reclaim_t *r) { return r->running; }

/* Called by the sweep, after the dirty list was flushed: starts a reclaim
 * when the policy says so. Also records where a connection's memory lives
 * (stats.conn_arena), so that tests and operators can see the arenas work. */
void sy_reclaim_tick(sy_reclaim_t *r, const sy_reclaim_walk_t *w, int64_t now_ms, uint32_t connections);

/* One slice of the reclaim in progress: up to SY_RECLAIM_SLICE connections
 * looked at (each moved by w->compact, the thread's, which owns every
 * pointer to a connection), or the final purge. The longest slice is the
 * longest the thread's sockets wait for the policy (stats.reclaim_us_max). */
void sy_reclaim_step(sy_reclaim_t *r, const sy_reclaim_walk_t *w, int64_t now_ms);

#endif
