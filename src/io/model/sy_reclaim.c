/* sy_reclaim — see sy_reclaim.h. */
#define _GNU_SOURCE
#include "io/model/sy_reclaim.h"

#include "base/sy_alloc.h"
#include "base/sy_clock.h"

/* The thread's arena now: its unused pages (dirty + muzzy) in *unused, and
 * the pages that are not free address space (active + unused) returned, or
 * -1 (and *unused 0) when unknown. A reclaim gives back the fall of the latter. */
static int64_t arena_pages(const sy_reclaim_t *r, int64_t *unused) {
    sy_alloc_arena_stats_t a;
    *unused = 0;
    if (!r->own_arena || sy_alloc_arena_stats(r->arena, true, &a) != 0)
        return -1;
    *unused = a.dirty + a.muzzy;
    return a.active + *unused;
}

static void note_conn_arena(sy_reclaim_t *r, const sy_reclaim_walk_t *w) {
    const void *c = w->any(w->arg);
    unsigned arena;
    if (c != NULL && sy_alloc_owner(c, &arena) == 0)
        atomic_store_explicit(&r->stats->conn_arena, (int)arena, memory_order_relaxed);
}

static void note_slice(sy_reclaim_t *r, int64_t t0) {
    int64_t us = sy_clock_us() - t0;
    if (us < 0)
        us = 0;
    r->busy_us += us;
    sy_stat_max(&r->stats->reclaim_us_max, (uint64_t)us);
}

static void start(sy_reclaim_t *r) {
    int64_t t0 = sy_clock_us();
    r->running = true;
    r->pass = 0;
    r->cursor = 0;
    r->seen = r->moved_pass = r->moved = 0;
    r->busy_us = 0;
    int64_t unused;
    r->before_bytes = arena_pages(r, &unused);
    (void)sy_alloc_thread_flush(); /* nothing cached to return if it fails */
    note_slice(r, t0);
}

/* The last slice: return the cache, purge the arena, count. */
static void finish(sy_reclaim_t *r, int64_t now_ms) {
    (void)sy_alloc_thread_flush();
    if (r->own_arena)
        (void)sy_alloc_arena_purge(r->arena); /* a failed purge leaves the pages to decay */
    int64_t unused;
    int64_t after = arena_pages(r, &unused);
    sy_stats_live_t *st = r->stats;
    sy_stat_inc(&st->reclaims);
    sy_stat_add(&st->reclaim_moved, r->moved);
    if (r->before_bytes >= 0 && after >= 0 && r->before_bytes > after)
        sy_stat_add(&st->reclaim_freed_bytes, (uint64_t)(r->before_bytes - after));
    r->running = false;
    r->next_allowed_ms = now_ms + SY_RECLAIM_INTERVAL_MS;
}

void sy_reclaim_step(sy_reclaim_t *r, const sy_reclaim_walk_t *w, int64_t now_ms) {
    if (!r->running)
        return;
    int64_t t0 = sy_clock_us();
    uint32_t nslots = w->slots(w->arg);
    if (r->pass >= SY_RECLAIM_PASSES) {
        finish(r, now_ms);
    } else {
        /* Each pass moves the blocks of the slabs used less than average
         * into the fullest-first current slab, which raises the average: a
         * few passes pack the survivors. Stop when a pass moves few. */
        uint32_t looked = 0;
        while (r->cursor < nslots && looked < SY_RECLAIM_SLICE) {
            bool skipped;
            unsigned moved = w->compact(w->arg, r->cursor++, &skipped);
            if (!skipped) {
                looked++;
                r->seen++;
                r->moved_pass += moved;
            }
        }
        if (r->cursor >= nslots) {
            r->moved += r->moved_pass;
            bool again = r->moved_pass * 32 > r->seen;
            r->pass = again ? r->pass + 1 : SY_RECLAIM_PASSES;
            r->cursor = 0;
            r->seen = r->moved_pass = 0;
        }
    }
    note_slice(r, t0);
    if (!r->running)
        sy_stat_add(&r->stats->reclaim_us, (uint64_t)r->busy_us);
}

void sy_reclaim_tick(sy_reclaim_t *r, const sy_reclaim_walk_t *w, int64_t now_ms, uint32_t connections) {
    if (!r->own_arena && !sy_alloc_moving_all())
        return;
    note_conn_arena(r, w);
    if (connections > r->peak)
        r->peak = connections;
    if (!r->enabled || now_ms < r->next_allowed_ms)
        return;
    uint32_t prev = r->prev;
    r->prev = connections;
    if (r->running)
        return;
    bool fell = r->peak >= SY_RECLAIM_MIN_PEAK && connections <= r->peak / 2;
    /* A fast drop is often still closing sockets when its reclaim starts:
     * once the count stops falling below where that reclaim began, one more
     * gives back what the rest of the drop freed. */
    bool settled = r->started_at > 0 && connections < r->started_at && connections == prev;
    /* Idle: once after the last event, and again whenever pages got dirty
     * meanwhile (blocks freed by other threads: the owner giving back event
     * batches after the drop's reclaim ran). */
    bool idle = now_ms - r->last_active_ms >= SY_RECLAIM_IDLE_MS;
    if (idle && r->idle_done) {
        int64_t unused;
        (void)arena_pages(r, &unused);
        idle = unused > 0;
    }
    if (!fell && !settled && !idle)
        return;
    start(r);
    r->peak = connections;
    r->started_at = connections;
    r->idle_done = true;
}
