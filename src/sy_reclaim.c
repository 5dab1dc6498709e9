/* sy_reclaim — see sy_reclaim.h. */
#define _GNU_SOURCE
#include "sy_reclaim.h"

#include <time.h>

#include "sy_alloc.h"
#include "sy_conn.h"

static int64_t now_us(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Pages of the thread's arena that are not free address space: what a
 * reclaim can give back is the fall of this figure. */
static int64_t arena_pages_bytes(sy_io_t *io) {
    sy_alloc_arena_stats_t a;
    if (sy_alloc_arena_stats(io->arena, true, &a) != 0)
        return -1;
    return a.active + a.dirty + a.muzzy;
}

static void note_conn_arena(sy_io_t *io) {
    for (uint32_t i = 0; i < io->nslots; i++) {
        unsigned arena;
        if (io->conns[i] != NULL) {
            if (sy_alloc_owner(io->conns[i], &arena) == 0)
                atomic_store_explicit(&io->stats.conn_arena, (int)arena, memory_order_relaxed);
            return;
        }
    }
}

uint64_t sy_reclaim_run(sy_io_t *io) {
    int64_t t0 = now_us();
    int64_t before = arena_pages_bytes(io);
    (void)sy_alloc_thread_flush(); /* nothing cached to return if it fails */
    /* Each pass moves the blocks of the slabs used less than average into
     * the fullest-first current slab, which raises the average: a few passes
     * pack the survivors. Stop when a pass moves few. */
    uint64_t moved = 0;
    for (unsigned pass = 0; pass < SY_RECLAIM_PASSES; pass++) {
        uint64_t seen = 0, now = 0;
        for (uint32_t i = 0; i < io->nslots; i++) {
            sy_conn_t *c = io->conns[i];
            /* On a list (dirty, dead, paused) a connection is pointed at from
             * elsewhere too: those stay where they are this time. */
            if (c != NULL && c->state != SY_CONN_DEAD && !c->dirty && !c->paused) {
                seen++;
                now += sy_conn_compact(io, c);
            }
        }
        moved += now;
        if (now * 32 <= seen)
            break;
    }
    (void)sy_alloc_thread_flush();
    (void)sy_alloc_arena_purge(io->arena); /* a failed purge leaves the pages to decay */
    int64_t after = arena_pages_bytes(io);
    int64_t us = now_us() - t0;
    if (us < 0)
        us = 0;
    sy_io_atomic_stats_t *st = &io->stats;
    atomic_fetch_add_explicit(&st->reclaims, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->reclaim_moved, moved, memory_order_relaxed);
    if (before >= 0 && after >= 0 && before > after)
        atomic_fetch_add_explicit(&st->reclaim_freed_bytes, (uint64_t)(before - after), memory_order_relaxed);
    atomic_fetch_add_explicit(&st->reclaim_us, (uint64_t)us, memory_order_relaxed);
    if ((uint64_t)us > atomic_load_explicit(&st->reclaim_us_max, memory_order_relaxed))
        atomic_store_explicit(&st->reclaim_us_max, (uint64_t)us, memory_order_relaxed);
    return moved;
}

void sy_reclaim_tick(sy_io_t *io, uint32_t connections) {
    if (!io->own_arena)
        return;
    note_conn_arena(io);
    sy_reclaim_state_t *r = &io->reclaim;
    if (connections > r->peak)
        r->peak = connections;
    if (!io->shared->opts.reclaim || io->now_ms < r->next_allowed_ms)
        return;
    bool fell = r->peak >= SY_RECLAIM_MIN_PEAK && connections <= r->peak / 2;
    bool idle = !r->idle_done && io->now_ms - r->last_active_ms >= SY_RECLAIM_IDLE_MS;
    if (!fell && !idle)
        return;
    (void)sy_reclaim_run(io);
    r->peak = connections;
    r->idle_done = true;
    r->next_allowed_ms = io->now_ms + SY_RECLAIM_INTERVAL_MS;
}
