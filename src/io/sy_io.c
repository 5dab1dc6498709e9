/* sy_io — the IO thread: made, started, its loop (a turn: poll, events,
 * commands, flush, the sweep, the memory policy), stopped (sy_io.h). */
#define _GNU_SOURCE
#include "io/sy_io.h"

#include "io/loop/sy_io_struct.h"
#include "io/sy_accept.h"
#include "io/sy_io_cmd.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "io/app/sy_ask.h"
#include "io/app/sy_park.h"
#include "io/app/sy_protos.h"
#include "io/conn/sy_conn.h"
#include "io/conn/sy_io_send.h"
#include "io/model/sy_addrlimit.h"
#include "io/model/sy_reclaim.h"
#include "io/wire/sy_peer.h"
#include "io/wire/sy_sse_out.h"
#include "io/wire/sy_upgrade.h"
#include "io/wire/sy_ws.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"
#include "net/sy_wake.h"

#define SY_POLL_RETRY_MS 10 /* pause after a failed wait */
/* Command queue entries kept between bursts (per array, per thread). */
#define SY_QUEUE_KEEP 64

_Static_assert(SY_WIRES == sizeof(((sy_io_shared_t *)0)->wires) / sizeof(void *), "a slot per wire");
_Static_assert(SY_PROTOS == sizeof(((sy_io_shared_t *)0)->protos) / sizeof(void *), "a slot per protocol");

static void io_free(sy_io_t *io);

void sy_io_protocols(sy_io_shared_t *sh) {
    sh->wires[SY_WIRE_HEAD] = &sy_head_wire;
    sh->wires[SY_WIRE_PROXY] = &sy_peer_wire;
    sh->wires[SY_WIRE_WS] = &sy_ws_wire;
    sh->wires[SY_WIRE_SSE] = &sy_sse_wire;
    sh->protos[SY_PROTO_RAW] = &sy_raw_proto;
    sh->protos[SY_PROTO_V1] = &sy_v1_proto;
    sh->protos[SY_PROTO_V2] = &sy_v2_proto;
    sh->hooks = &sy_app_hooks;
}

sy_err_t sy_io_add_protocol(sy_io_shared_t *sh, const sy_wire_t *wire, const sy_msgproto_t *proto) {
    unsigned w = SY_WIRE_FIRST_FREE, p = SY_PROTO_RAW;
    while (w < SY_WIRES && sh->wires[w] != NULL)
        w++;
    if (w == SY_WIRES && wire != NULL)
        return ENOSPC;
    if (proto != NULL) {
        for (p = SY_PROTO_FIRST_FREE; p < SY_PROTOS && sh->protos[p] != NULL && sh->protos[p] != proto; p++)
            ;
        if (p == SY_PROTOS)
            return ENOSPC;
        sh->protos[p] = proto;
        if (sh->keeper == NULL && proto->keeps != NULL)
            sh->keeper = proto;
    }
    if (wire == NULL)
        return 0; /* a message protocol on a wire that exists (Pusher's, on WebSocket) */
    sh->wires[w] = wire;
    sh->wire_proto[w] = (uint8_t)p;
    return 0;
}
static void *io_main(void *arg);

/* Sets up io (zeroed): 0 or an errno value; io_free undoes what was done. */
static int io_init(sy_io_t *io, sy_io_shared_t *shared, unsigned index, int listen_fd) {
    io->ctx.shared = shared;
    io->ctx.index = index;
    io->listen_fd = listen_fd;
    sy_wake_init(&io->wake);
    io->spare_fd = -1;
    sy_slots_init(&io->slots);
    sy_stats_live_init(&io->ctx.stats);
    int rc = sy_mutex_init(&io->qlock);
    if (rc != 0)
        return rc;
    io->poll = sy_poll_create();
    if (io->poll == NULL)
        return errno ? errno : ENOMEM;
    if ((rc = sy_wake_open(&io->wake)) != 0)
        return rc;
    if (listen_fd >= 0)
        io->spare_fd = sy_sock_spare_open(); /* -1 is survivable */
    sy_deflate_init(&io->ctx.deflate, (int)shared->opts.compress_level, &io->ctx.stats);
    io->ctx.rx = sy_malloc(SY_IO_RX_SIZE + SY_INFLATE_TAIL);
    if (io->ctx.rx == NULL)
        return ENOMEM;
    if ((rc = sy_poll_add(io->poll, sy_wake_fd(&io->wake), SY_POLL_IN, WAKE_TAG)) != 0)
        return rc;
    if (io->listen_fd >= 0 && (rc = sy_poll_add(io->poll, io->listen_fd, SY_POLL_IN, LISTEN_TAG)) != 0)
        return rc;
    return 0;
}

sy_io_t *sy_io_create(sy_io_shared_t *shared, unsigned index, int listen_fd, int *err) {
    sy_io_t *io = sy_calloc(1, sizeof(*io));
    if (io == NULL) {
        if (listen_fd >= 0)
            sy_sock_close(listen_fd);
        *err = ENOMEM;
        return NULL;
    }
    int rc = io_init(io, shared, index, listen_fd);
    if (rc != 0) {
        io_free(io);
        *err = rc;
        return NULL;
    }
    return io;
}

sy_err_t sy_io_start(sy_io_t *io) {
    int rc = sy_thread_create(&io->thread, io_main, io);
    if (rc == 0)
        io->started = true;
    return rc;
}

void sy_io_join(sy_io_t *io) {
    if (io->started) {
        (void)sy_thread_join(&io->thread); /* a started, unjoined thread: cannot fail */
        io->started = false;
    }
}

static void io_free(sy_io_t *io) {
    /* The poller first: its descriptors leave it before they are closed
     * (net/sy_poll.h's rule for closing). */
    sy_poll_destroy(io->poll);
    io->poll = NULL;
    /* Connections are all gone when the thread has run; these are for a
     * thread that never started. */
    for (uint32_t i = 0; i < io->slots.n; i++) {
        if (io->slots.conns[i] != NULL)
            sy_conn_free(io->slots.conns[i]); /* closes its socket */
    }
    for (size_t i = 0; i < io->qlen; i++)
        sy_io_cmd_discard(io, &io->queue[i]);
    sy_free(io->queue);
    sy_free(io->work);
    sy_slots_free(&io->slots);
    sy_free(io->ctx.rx);
    sy_ask_free_all(io);
    sy_free(io->ctx.stream_scratch);
    sy_deflate_free(&io->ctx.deflate);
    sy_free(io->awaiting);
    sy_rate_waits_free(&io->rate_waits);
    sy_batch_free(io->batch);
    if (io->listen_fd >= 0)
        sy_sock_close(io->listen_fd);
    sy_wake_close(&io->wake);
    if (io->spare_fd >= 0)
        sy_sock_spare_close(io->spare_fd);
    sy_mutex_destroy(&io->qlock);
}

void sy_io_destroy(sy_io_t *io) {
    if (io == NULL)
        return;
    io_free(io);
    sy_free(io);
}

/* The connections whose inbound rate has room again. */
static void resume_rate_waits(sy_io_t *io) {
    uint64_t id;
    while (sy_rate_waits_pop_due(&io->rate_waits, io->ctx.now_ms, &id)) {
        sy_conn_t *c = sy_io_conn_live(io, sy_id_slot(id), sy_id_gen(id));
        if (c != NULL)
            sy_conn_rate_resume(io, c);
    }
}

/* ---- the loop ------------------------------------------------------------------ */

static void sweep(sy_io_t *io) {
    for (uint32_t i = 0; i < io->slots.n; i++) {
        sy_conn_t *c = io->slots.conns[i];
        if (c != NULL)
            sy_conn_sweep(io, c);
    }
    /* Freed pages go back after their decay time even if no thread
     * allocates again (jemalloc decays only on activity otherwise). */
    if (io->ctx.index == 0) {
        (void)sy_alloc_decay_all();
        /* Topics' history: what ttl expired goes, and idle topics with it. */
        sy_hist_t *g = &io->ctx.shared->hist;
        if (sy_hist_default_on(g) || io->ctx.shared->history_used)
            sy_hist_sweep(g, &io->ctx.shared->topics, io->ctx.now_ms);
        /* Subscriptions that waited too long for their topic's sync are
         * served from what this node has (io/sy_park.h). */
        if (g->sequenced)
            sy_park_expire(g, io->ctx.now_ms - SY_PARK_MAX_MS);
        /* Addresses with no connection whose rate went idle. */
        if (io->ctx.shared->addrs != NULL)
            sy_addrlimit_sweep(io->ctx.shared->addrs, io->ctx.now_ms * 1000000);
    }
    sy_deflate_trim(&io->ctx.deflate, io->ctx.now_ms);
    sy_io_settle_awaiting(io);
    /* The spare descriptor could not be taken back after a refusal (another
     * thread had just taken the one freed): again now. */
    if (io->spare_fd < 0 && io->listen_fd >= 0)
        io->spare_fd = sy_sock_spare_open();
    if (io->listen_paused && io->listen_fd >= 0 && !io->stopping) {
        if (sy_poll_add(io->poll, io->listen_fd, SY_POLL_IN, LISTEN_TAG) == 0)
            io->listen_paused = false;
    }
    /* Memory follows the load: a command queue that grew for a burst shrinks
     * (the two arrays swap at every run). */
    if (io->wcap > SY_QUEUE_KEEP) {
        sy_free(io->work);
        io->work = NULL;
        io->wcap = 0;
    }
    /* And the producer's side, when nothing is queued in it. */
    sy_mutex_lock(&io->qlock);
    if (io->qlen == 0 && io->qcap > SY_QUEUE_KEEP) {
        sy_free(io->queue);
        io->queue = NULL;
        io->qcap = 0;
    }
    sy_mutex_unlock(&io->qlock);
}

static void on_event(sy_io_t *io, const sy_poll_event_t *ev, bool *commands) {
    if (ev->tag == WAKE_TAG) {
        *commands = true;
    } else if (ev->tag == LISTEN_TAG) {
        sy_io_accept_some(io);
    } else {
        /* A connection closed earlier in this turn may have given its slot
         * to a new one: the generation tells them apart. */
        sy_conn_t *c = sy_io_conn_live(io, (uint32_t)ev->tag, (uint32_t)(ev->tag >> 32));
        if (c == NULL)
            return;
        if (ev->events & SY_POLL_OUT)
            sy_io_mark_dirty(io, c);
        if (ev->events & SY_POLL_IN)
            sy_conn_on_readable(io, c);
    }
}

/* The poller failed: a short pause, then try again; after
 * SY_IO_POLL_FAILURES_MAX failures in a row the thread gives up (sy_io.h).
 * Returns true when it gave up. */
static bool poll_failed(sy_io_t *io, int err) {
    sy_stat_inc(&io->ctx.stats.poll_failures);
    if (++io->poll_failures_row < SY_IO_POLL_FAILURES_MAX) {
        sy_clock_sleep_ms(SY_POLL_RETRY_MS);
        return false;
    }
    const char *why = sy_strerror(err);
    sy_io_emit(io, io->ctx.index, SY_EV_FAILED, 0, (uint16_t)err, why, strlen(why));
    return true; /* the loop's end closes the connections (1011) */
}

/* The memory policy's walk over this thread's connections. */
static uint32_t walk_slots(void *arg) { return sy_io_slot_count(arg); }
static unsigned walk_compact(void *arg, uint32_t slot, bool *skipped) { return sy_io_compact_slot(arg, slot, skipped); }
static const void *walk_any(void *arg) { return sy_io_any_conn(arg); }

static void *io_main(void *arg) {
    sy_io_t *io = arg;
    const sy_reclaim_walk_t walk = {.arg = io, .slots = walk_slots, .compact = walk_compact, .any = walk_any};
    /* Each IO thread allocates from an arena of its own (jemalloc build). */
    if (sy_alloc_arena_acquire(&io->arena) == 0) {
        io->own_arena = sy_alloc_thread_use_arena(io->arena) == 0;
        if (!io->own_arena)
            sy_alloc_arena_release(io->arena);
        else
            atomic_store_explicit(&io->ctx.stats.arena, (int)io->arena, memory_order_relaxed);
    }
    sy_io_sends_open(io); /* after the arena: its arrays are this thread's */
    io->ctx.now_ms = sy_clock_ms();
    sy_reclaim_init(&io->reclaim, &io->ctx.stats, io->arena, io->own_arena, io->ctx.shared->opts.reclaim,
                    io->ctx.now_ms);
    io->next_sweep_ms = io->ctx.now_ms + SY_SWEEP_MS;
    sy_poll_event_t events[256];
    bool failed = false;
    for (;;) {
        int64_t wait = io->next_sweep_ms - io->ctx.now_ms;
        if (io->stopping && io->stop_deadline_ms - io->ctx.now_ms < wait)
            wait = io->stop_deadline_ms - io->ctx.now_ms;
        if (wait < 0)
            wait = 0;
        if (sy_rate_waits_next(&io->rate_waits) - io->ctx.now_ms < wait)
            wait = sy_rate_waits_next(&io->rate_waits) - io->ctx.now_ms;
        if (wait < 0 || io->dirty != NULL || (sy_reclaim_pending(&io->reclaim) && !io->stopping))
            wait = 0;
        int n = 0;
        int rc = sy_poll_wait(io->poll, events, 256, (int)wait, &n);
        io->ctx.now_ms = sy_clock_ms();
        io->ctx.handshake_turn_us = 0;
        if (rc != 0) {
            failed = poll_failed(io, rc);
        } else {
            io->poll_failures_row = 0;
            if (n > 0)
                sy_reclaim_activity(&io->reclaim, io->ctx.now_ms);
        }
        bool commands = false;
        for (int i = 0; i < n; i++)
            on_event(io, &events[i], &commands);
        if (commands)
            sy_io_run_commands(io);
        resume_rate_waits(io);
        sy_io_flush_dirty(io);
        if (io->ctx.now_ms >= io->next_sweep_ms) {
            sweep(io);
            sy_io_flush_dirty(io);
            sy_reclaim_tick(&io->reclaim, &walk, io->ctx.now_ms, (uint32_t)sy_io_live_conns(io));
            io->next_sweep_ms = io->ctx.now_ms + SY_SWEEP_MS;
        }
        /* The memory policy, a slice per turn (the dirty list is empty here). */
        if (sy_reclaim_pending(&io->reclaim) && !io->stopping)
            sy_reclaim_step(&io->reclaim, &walk, io->ctx.now_ms);
        if (failed || (io->stopping && (sy_io_live_conns(io) == 0 || io->ctx.now_ms >= io->stop_deadline_ms))) {
            for (uint32_t i = 0; i < io->slots.n; i++)
                if (io->slots.conns[i] != NULL)
                    sy_conn_destroy(io, io->slots.conns[i], failed ? 1011 : 1001);
            sy_mutex_lock(&io->qlock);
            io->exited = true; /* nothing is queued after this */
            sy_mutex_unlock(&io->qlock);
            sy_io_run_commands(io); /* release what was queued meanwhile */
            sy_io_free_dead(io);
            sy_io_emit(io, io->ctx.index, SY_EV_STOPPED, 0, 0, NULL, 0);
            sy_io_hand_over(io);
            break;
        }
        sy_io_free_dead(io);
        sy_io_hand_over(io);
    }
    /* The compressor's memory is in this thread's arena: freed first. */
    sy_deflate_free(&io->ctx.deflate);
    sy_rate_waits_free(&io->rate_waits);
    sy_io_sends_close(io);
    /* Give the arena's pages back (this thread's connections are gone) and
     * the arena to the pool, for the next IO thread. */
    if (io->own_arena)
        sy_alloc_arena_release(io->arena);
    return NULL;
}
