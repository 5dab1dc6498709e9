/* sy_io — see sy_io.h and sy_io_thread.h. */
#define _GNU_SOURCE
#include "io/sy_io_struct.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "io/sy_addrlimit.h"
#include "io/sy_ask.h"
#include "io/sy_conflate.h"
#include "io/sy_conn.h"
#include "io/sy_park.h"
#include "io/sy_post.h"
#include "io/sy_reclaim.h"
#include "io/sy_resume.h"
#include "io/sy_sse_out.h"
#include "io/sy_upgrade.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"
#include "net/sy_wake.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_msg.h"

#define SY_SWEEP_MS 1000
#define SY_ACCEPTS_PER_TURN 64
#define SY_POLL_RETRY_MS 10 /* pause after a failed wait */
/* Command queue entries kept between bursts (per array, per thread). */
#define SY_QUEUE_KEEP 64
/* Flow control of events: stop reading from clients while the owner holds
 * opts.max_event_bytes of unprocessed batches; start again below a quarter. */
#define SY_EVENTS_HIGH(io) ((io)->ctx.shared->opts.max_event_bytes)
#define SY_EVENTS_LOW(io) ((io)->ctx.shared->opts.max_event_bytes / 4)

/* Poller tags: a connection's is (generation, slot), never with generation
 * 0; the two descriptors that are not connections use generation 0. */
#define WAKE_TAG ((uint64_t)1)
#define LISTEN_TAG ((uint64_t)2)

static uint64_t conn_tag(const sy_conn_t *c) { return ((uint64_t)c->gen << 32) | c->slot; }

static void io_free(sy_io_t *io);

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

unsigned sy_io_index(const sy_io_t *io) { return io->ctx.index; }

void sy_io_stats_snapshot(sy_io_t *io, sy_stats_t *out) { sy_stats_snapshot(&io->ctx.stats, out); }

uint32_t sy_io_slot_count(const sy_io_t *io) { return io->slots.n; }

sy_conn_t *sy_io_conn_at(const sy_io_t *io, uint32_t slot) { return sy_slots_at(&io->slots, slot); }

uint32_t sy_io_current_seq(const sy_io_t *io) { return io->batch_seq + 1; }

const sy_conn_t *sy_io_any_conn(const sy_io_t *io) {
    for (uint32_t i = 0; i < io->slots.n; i++) {
        if (io->slots.conns[i] != NULL)
            return io->slots.conns[i];
    }
    return NULL;
}

static void *io_main(void *arg);

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

void sy_accept_free(sy_topics_t *topics, unsigned thread, sy_accept_t *a) {
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->ntopics; i++)
        sy_topic_drop_interest(topics, a->topics[i], thread);
    sy_free(a->topics);
    sy_free(a->heads);
    sy_free(a);
}

/* Gives back what a command still holds. */
static void cmd_release(sy_io_t *io, sy_cmd_t *cmd) {
    if (cmd->type == SY_CMD_ADOPT && cmd->arg.fd >= 0) {
        sy_sock_close(cmd->arg.fd);
        atomic_fetch_sub_explicit(&io->ctx.shared->connections, 1, memory_order_relaxed);
    }
    sy_refbuf_release(cmd->buf);
    sy_refbuf_release(cmd->v1);
    if (cmd->topic != NULL) {
        if (cmd->type == SY_CMD_SUBSCRIBE)
            sy_topic_drop_interest(&io->ctx.shared->topics, cmd->topic, io->ctx.index);
        else
            sy_topic_release(&io->ctx.shared->topics, cmd->topic);
    }
    if (cmd->type == SY_CMD_ACCEPT)
        sy_accept_free(&io->ctx.shared->topics, io->ctx.index, cmd->accept);
    else if (cmd->type == SY_CMD_SUBSCRIBE)
        sy_free(cmd->pos);
}

void sy_io_cmd_discard(sy_io_t *io, sy_cmd_t *cmd) { cmd_release(io, cmd); }

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
        cmd_release(io, &io->queue[i]);
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

/* ---- the command queue -------------------------------------------------- */

static void wake(sy_io_t *io) { sy_wake_signal(&io->wake); }

/* Appends cmd under qlock; *wake_now: the thread needs a wake-up now. */
static int enqueue(sy_io_t *io, const sy_cmd_t *cmd, bool later, bool *wake_now) {
    sy_mutex_lock(&io->qlock);
    if (io->exited) {
        sy_mutex_unlock(&io->qlock);
        return EPIPE;
    }
    if (io->qlen == io->qcap) {
        size_t cap = io->qcap ? io->qcap * 2 : 64;
        sy_cmd_t *q = sy_realloc(io->queue, cap * sizeof(*q));
        if (q == NULL) {
            sy_mutex_unlock(&io->qlock);
            return ENOMEM;
        }
        io->queue = q;
        io->qcap = cap;
    }
    io->queue[io->qlen++] = *cmd;
    /* The first command after the thread took the queue wakes it, unless
     * that may wait (then it is owed), until the queue is long. */
    bool first = io->qlen == 1;
    if (later && first) {
        io->wake_owed = true;
        *wake_now = false;
    } else if (later) {
        *wake_now = io->wake_owed && io->qlen >= SY_IO_DEFER_MAX;
    } else {
        *wake_now = first || io->wake_owed;
    }
    if (*wake_now)
        io->wake_owed = false;
    sy_mutex_unlock(&io->qlock);
    return 0;
}

static int push(sy_io_t *io, const sy_cmd_t *cmd, bool later) {
    bool now = false;
    int rc = enqueue(io, cmd, later, &now);
    if (now)
        wake(io);
    return rc;
}

sy_err_t sy_io_push(sy_io_t *io, const sy_cmd_t *cmd) { return push(io, cmd, false); }

sy_err_t sy_io_push_later(sy_io_t *io, const sy_cmd_t *cmd) { return push(io, cmd, true); }

void sy_io_wake(sy_io_t *io) {
    sy_mutex_lock(&io->qlock);
    bool owed = io->wake_owed;
    io->wake_owed = false;
    sy_mutex_unlock(&io->qlock);
    if (owed)
        wake(io);
}

/* ---- slots and live ids -------------------------------------------------- */

void sy_io_set_live(sy_io_t *io, uint32_t slot, uint32_t gen) { sy_slots_set_live(&io->slots, slot, gen); }

bool sy_io_is_open(sy_io_t *io, uint64_t id) {
    return sy_id_gen(id) != 0 && sy_slots_is_live(&io->slots, sy_id_slot(id), sy_id_gen(id));
}

/* The live connection named by (slot, generation), or NULL. */
static sy_conn_t *conn_at(sy_io_t *io, uint32_t slot, uint32_t gen) {
    sy_conn_t *c = sy_slots_at(&io->slots, slot);
    return c != NULL && c->gen == gen && c->state != SY_CONN_DEAD ? c : NULL;
}

static void unpause(sy_io_t *io, sy_conn_t *c) {
    if (!c->paused)
        return;
    /* Rare (a paused connection that times out or is terminated), so a walk
     * is fine. */
    for (sy_conn_t **p = &io->paused; *p != NULL; p = &(*p)->next_paused) {
        if (*p == c) {
            *p = c->next_paused;
            break;
        }
    }
    c->paused = false;
    c->next_paused = NULL;
}

void sy_io_forget(sy_io_t *io, sy_conn_t *c) {
    atomic_fetch_sub_explicit(&io->ctx.shared->connections, 1, memory_order_relaxed);
    sy_slots_release(&io->slots, c->slot);
    unpause(io, c);
    c->next_dead = io->dead;
    io->dead = c;
}

sy_err_t sy_io_rate_wait(sy_io_t *io, sy_conn_t *c, int64_t due_ms) {
    return sy_rate_waits_push(&io->rate_waits, sy_conn_id(io, c), due_ms);
}

/* The connections whose inbound rate has room again. */
static void resume_rate_waits(sy_io_t *io) {
    uint64_t id;
    while (sy_rate_waits_pop_due(&io->rate_waits, io->ctx.now_ms, &id)) {
        sy_conn_t *c = conn_at(io, sy_id_slot(id), sy_id_gen(id));
        if (c != NULL)
            sy_conn_rate_resume(io, c);
    }
}

void sy_io_pause(sy_io_t *io, sy_conn_t *c) {
    if (c->paused)
        return;
    c->paused = true;
    c->next_paused = io->paused;
    io->paused = c;
    sy_io_update_poll(io, c);
}

unsigned sy_io_compact_slot(sy_io_t *io, uint32_t slot, bool *skipped) {
    sy_conn_t *c = sy_slots_at(&io->slots, slot);
    /* On a list (dirty, dead, paused) a connection is pointed at from
     * elsewhere too: those stay where they are this time. */
    *skipped = c == NULL || c->state == SY_CONN_DEAD || c->dirty || c->paused;
    if (*skipped)
        return 0;
    unsigned moved = 0;
    sy_slots_put(&io->slots, slot, sy_conn_compact(c, &moved)); /* the one cell that names it */
    return moved;
}

/* ---- events, dirty list, poll interest ------------------------------------ */

void sy_io_emit_strings(sy_io_t *io, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code, const char *const *strs,
                        const size_t *lens, size_t n) {
    if (sy_batch_add_strings(&io->batch, io->ctx.index, conn, type, flags, code, strs, lens, n) != 0)
        sy_stat_inc(&io->ctx.stats.events_lost);
}

void sy_io_emit(sy_io_t *io, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code, const void *payload,
                size_t len) {
    if (sy_batch_add(&io->batch, io->ctx.index, conn, type, flags, code, payload, len) != 0)
        sy_stat_inc(&io->ctx.stats.events_lost);
}

void sy_io_mark_dirty(sy_io_t *io, sy_conn_t *c) {
    if (!c->dirty && c->state != SY_CONN_DEAD) {
        c->dirty = true;
        c->next_dirty = io->dirty;
        io->dirty = c;
    }
}

void sy_io_update_poll(sy_io_t *io, sy_conn_t *c) {
    if (c->state == SY_CONN_DEAD || c->broken)
        return;
    uint32_t ev = sy_conn_interest(c);
    if (ev == c->poll_ev)
        return;
    if (sy_poll_mod(io->poll, c->stream.fd, ev, conn_tag(c)) != 0) {
        c->broken = true; /* destroyed by sy_io_flush_dirty, after any walk in progress */
        sy_io_mark_dirty(io, c);
        return;
    }
    c->poll_ev = (uint8_t)ev;
}

void sy_io_unwatch(sy_io_t *io, sy_conn_t *c) {
    /* A failure leaves nothing to undo: EBADF or ENOENT, it was not there. */
    if (c->stream.fd >= 0)
        (void)sy_poll_del(io->poll, c->stream.fd);
    c->poll_ev = 0;
}

static void hand_over_batch(sy_io_t *io) {
    sy_batch_t *b = io->batch;
    if (b == NULL)
        return;
    io->batch = NULL;
    b->seq = ++io->batch_seq;
    size_t bytes = sy_batch_bytes(b);
    size_t total = atomic_fetch_add_explicit(&io->event_bytes, bytes, memory_order_relaxed) + bytes;
    if (total > SY_EVENTS_HIGH(io))
        io->ctx.reads_paused = true;
    io->ctx.shared->on_batch(io->ctx.shared->ctx, b);
}

void sy_io_batch_done(sy_io_t *io, size_t bytes, uint32_t seq) {
    /* With sy_io_await_owner's store and load, sequentially consistent:
     * either this sees the waiter, or the waiter sees this batch done. */
    atomic_store(&io->owner_seq, seq);
    if (atomic_load(&io->owner_waiters) > 0) {
        sy_cmd_t cmd = {.type = SY_CMD_OWNER_DONE, .arg.seq = seq};
        (void)sy_io_push(io, &cmd); /* out of memory: the sweep's deadline closes them */
    }
    size_t before = atomic_fetch_sub_explicit(&io->event_bytes, bytes, memory_order_relaxed);
    if (before >= SY_EVENTS_LOW(io) && before - bytes < SY_EVENTS_LOW(io)) {
        sy_cmd_t cmd = {.type = SY_CMD_RESUME};
        (void)sy_io_push(io, &cmd); /* out of memory: the next batch retries */
    }
}

bool sy_io_owner_done(const sy_io_t *io, uint32_t seq) { return (int32_t)(seq - io->owner_applied) <= 0; }

bool sy_io_await_owner(sy_io_t *io, sy_conn_t *c) {
    if (io->nawaiting == io->awaiting_cap) {
        uint32_t cap = io->awaiting_cap ? io->awaiting_cap * 2 : 8;
        uint64_t *a = sy_realloc(io->awaiting, (size_t)cap * sizeof(*a));
        if (a == NULL)
            return false;
        io->awaiting = a;
        io->awaiting_cap = cap;
    }
    io->awaiting[io->nawaiting++] = sy_conn_id(io, c);
    /* With sy_io_batch_done's store and load: either the owner sees this
     * waiter (and queues OWNER_DONE after its replies), or this sees the
     * batch handled: then OWNER_DONE is queued here, after every command
     * the owner queued before it handled the batch. */
    atomic_store(&io->owner_waiters, io->nawaiting);
    uint32_t seen = atomic_load(&io->owner_seq);
    if ((int32_t)(c->msg_seq - seen) <= 0) {
        sy_cmd_t cmd = {.type = SY_CMD_OWNER_DONE, .arg.seq = seen};
        (void)sy_io_push(io, &cmd); /* out of memory: the sweep's deadline */
    }
    return true;
}

/* The connections awaiting the owner: those it has caught up with (or all,
 * at their deadline: the sweep) close; the list keeps the others. */
static void settle_awaiting(sy_io_t *io) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < io->nawaiting; i++) {
        uint64_t id = io->awaiting[i];
        sy_conn_t *c = conn_at(io, sy_id_slot(id), sy_id_gen(id));
        if (c == NULL || c->state != SY_CONN_AWAIT_OWNER)
            continue;
        if (!sy_conn_owner_behind(io, c) || io->ctx.now_ms >= c->deadline_ms)
            sy_conn_owner_caught_up(io, c);
        else
            io->awaiting[kept++] = id;
    }
    io->nawaiting = kept;
    atomic_store(&io->owner_waiters, kept);
    if (kept == 0 && io->awaiting_cap > 64) {
        sy_free(io->awaiting);
        io->awaiting = NULL;
        io->awaiting_cap = 0;
    }
}

/* ---- accepting ------------------------------------------------------------- */

static size_t live_conns(sy_io_t *io) { return sy_slots_used(&io->slots); }

/* sy_io_adopt, and for the listener's sockets (listener: a PROXY header
 * may come first, sy_peer.h). */
static struct sy_conn *adopt(sy_io_t *io, int fd, bool listener) {
    sy_conn_t *c = NULL;
    if (io->stopping || sy_conn_new(io, fd, &c) != 0) {
        sy_sock_close(fd);
    } else if (sy_slots_take(&io->slots, c, &c->slot, &c->gen) != 0) {
        sy_conn_free(c); /* closes fd */
    } else if (sy_poll_add(io->poll, fd, SY_POLL_IN, conn_tag(c)) != 0) {
        sy_slots_release(&io->slots, c->slot);
        sy_conn_free(c);
    } else {
        sy_reclaim_note_count(&io->reclaim, (uint32_t)live_conns(io));
        c->listener = listener;
        sy_conn_start(io, c);
        return c;
    }
    atomic_fetch_sub_explicit(&io->ctx.shared->connections, 1, memory_order_relaxed);
    return NULL;
}

struct sy_conn *sy_io_adopt(sy_io_t *io, int fd) {
    return adopt(io, fd, false);
}

static void accept_some(sy_io_t *io) {
    for (int i = 0; i < SY_ACCEPTS_PER_TURN && io->listen_fd >= 0; i++) {
        int fd;
        int err = sy_sock_accept(io->listen_fd, true, &fd);
        if ((err == EMFILE || err == ENFILE) && io->spare_fd >= 0) {
            /* Out of descriptors: free the spare one, accept and close at
             * once, so the client learns now instead of waiting in the
             * backlog; then take the spare back. accept4 says EMFILE before
             * it looks at the backlog: EAGAIN now means nobody else waits,
             * and the level-triggered listener calls again when one does. */
            sy_sock_spare_close(io->spare_fd);
            sy_err_t again = sy_sock_accept(io->listen_fd, false, &fd);
            if (again == 0) {
                sy_sock_close(fd);
                sy_stat_inc(&io->ctx.stats.accept_rejects);
            }
            io->spare_fd = sy_sock_spare_open();
            if (again == 0)
                continue;
            if ((again == EAGAIN || again == EWOULDBLOCK) && io->spare_fd >= 0)
                return;
            err = EMFILE;
        }
        if (err != 0) {
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                /* Out of descriptors: stop listening until the next sweep, or
                 * the level-triggered listener would spin. */
                (void)sy_poll_del(io->poll, io->listen_fd);
                io->next_sweep_ms = io->ctx.now_ms + SY_SWEEP_MS;
                io->listen_paused = true;
            }
            return;
        }
        sy_sock_nodelay(fd);
        atomic_fetch_add_explicit(&io->ctx.shared->connections, 1, memory_order_relaxed);
        unsigned t = io->ctx.shared->next_thread++ % io->ctx.shared->nthreads;
        if (t == io->ctx.index) {
            (void)adopt(io, fd, true);
            continue;
        }
        sy_cmd_t cmd = {.type = SY_CMD_ADOPT, .arg.fd = fd};
        if (sy_io_push(io->ctx.shared->ios[t], &cmd) != 0)
            (void)adopt(io, fd, true); /* the other queue is out of memory or closed: keep it here */
    }
}

/* ---- commands ---------------------------------------------------------------- */

/* The symphony.v1 frame of a publish whose publisher made none (a topic
 * without history that had no symphony.v1 subscriber when it looked): made
 * here from the plain frame, once per command. */
static sy_refbuf_t *v1_frame_of(sy_topic_t *t, const sy_refbuf_t *plain) {
    unsigned opcode = plain->data[0] & 0x0fu;
    bool z = atomic_load_explicit(&plain->deflate, memory_order_relaxed) != SY_REFBUF_Z_NONE;
    return sy_v1_publish_frame(opcode, t->id, false, 0, sy_refbuf_payload(plain), sy_refbuf_payload_len(plain), z);
}

/* Walks the topic's subscribers of this thread. A push never removes a
 * subscriber (sy_conn_push: a failing connection is destroyed after the
 * walk), so the array holds still meanwhile. Each subscriber gets its
 * format's frame (plain or symphony.v1), or that frame's compressed twin. */
static void do_publish(sy_io_t *io, sy_cmd_t *cmd) {
    sy_topic_slot_t *slot = &cmd->topic->slots[io->ctx.index];
    sy_refbuf_t *frames[2] = {cmd->buf, cmd->v1}; /* [v1] */
    sy_refbuf_t *twins[2] = {NULL, NULL};
    uint32_t queued[2] = {0, 0}, queued_twin[2] = {0, 0};
    bool conflate = io->ctx.shared->opts.slow_consumer == SY_SLOW_CONFLATE; /* once per publish, not per subscriber */
    sy_sse_shared_t sse = {0}; /* the event streams' events, made on first need */
    /* The command's own references keep the buffers (and their compressed
     * twins) alive while the loop stores pointers; the queues' references
     * are added in one step after. */
    for (uint32_t i = 0; i < slot->nsubs; i++) {
        sy_conn_t *c = io->slots.conns[slot->subs[i]]; /* a subscriber is live: no bounds check on the hot path */
        unsigned f = c->v1;
        if (frames[f] == NULL) {
            if (f == 0 || (frames[1] = cmd->v1 = v1_frame_of(cmd->topic, cmd->buf)) == NULL)
                continue; /* no plain frame (only symphony.v1 subscribers were counted), or no memory */
        }
        if (c->sse) {
            (void)sy_sse_out_publish(io, c, cmd, frames[1], &sse);
            continue;
        }
        sy_refbuf_t *m = sy_conn_frame_for(io, c, frames[f]);
        if (conflate ? sy_conflate_push(io, c, m, cmd->topic) : sy_conn_push(io, c, m, false)) {
            if (m == frames[f]) {
                queued[f]++;
            } else {
                twins[f] = m;
                queued_twin[f]++;
            }
        }
    }
    sy_sse_shared_done(&sse);
    for (unsigned f = 0; f < 2; f++) {
        if (queued[f] > 0)
            sy_refbuf_ref(frames[f], queued[f]);
        if (queued_twin[f] > 0)
            sy_refbuf_ref(twins[f], queued_twin[f]);
    }
}

/* A notice to the topic's symphony.v1 subscribers of this thread. */
static void do_notice(sy_io_t *io, sy_cmd_t *cmd) {
    sy_topic_slot_t *slot = &cmd->topic->slots[io->ctx.index];
    uint32_t queued = 0;
    for (uint32_t i = 0; i < slot->nsubs; i++) {
        sy_conn_t *c = io->slots.conns[slot->subs[i]];
        if (c->sse) {
            sy_sse_out_position(c, cmd->topic, true, cmd->epoch, cmd->offset);
            (void)sy_sse_out_push(io, c, cmd->buf, true);
        } else if (c->v1 && sy_conn_notice(io, c, cmd->buf)) { /* never dropped */
            queued++;
        }
    }
    if (queued > 0)
        sy_refbuf_ref(cmd->buf, queued);
}

/* Begins this thread's stop: no more accepting, a close handshake (1001) to
 * every open connection with deadline_ms > 0, or every connection closed
 * now. */
static void begin_stop(sy_io_t *io, uint32_t deadline_ms) {
    if (io->stopping) {
        if (deadline_ms == 0)
            io->stop_deadline_ms = io->ctx.now_ms; /* a forced stop after a graceful one */
        return;
    }
    io->stopping = true;
    io->stop_deadline_ms = io->ctx.now_ms + deadline_ms;
    if (io->listen_fd >= 0) {
        if (!io->listen_paused)
            (void)sy_poll_del(io->poll, io->listen_fd);
        sy_sock_close(io->listen_fd);
        io->listen_fd = -1;
    }
    for (uint32_t i = 0; i < io->slots.n; i++) {
        sy_conn_t *k = io->slots.conns[i];
        if (k == NULL)
            continue;
        if (k->state == SY_CONN_OPEN && deadline_ms > 0) {
            sy_refbuf_t *m = sy_ws_msg_close(1001, "server shutting down", 20);
            if (m == NULL || !sy_conn_end(io, k, m, 1001)) {
                sy_refbuf_release(m);
                sy_conn_destroy(io, k, 1001);
            }
        } else if (sy_conn_before_open((sy_conn_state_t)k->state) || deadline_ms == 0) {
            sy_conn_destroy(io, k, 1001);
        }
    }
}

static void do_command(sy_io_t *io, sy_cmd_t *cmd) {
    sy_conn_t *c = cmd->conn != 0 ? conn_at(io, sy_id_slot(cmd->conn), sy_id_gen(cmd->conn)) : NULL;
    switch (cmd->type) {
    case SY_CMD_PUBLISH:
        do_publish(io, cmd);
        break;
    case SY_CMD_NOTICE:
        do_notice(io, cmd);
        break;
    case SY_CMD_SEND:
        if (c != NULL && c->sse) {
            /* An event stream's direct message: a "message" event, no id. */
            sy_refbuf_t *d = sy_v1_direct_frame(cmd->buf->data[0] & 0x0fu, sy_refbuf_payload(cmd->buf),
                                                sy_refbuf_payload_len(cmd->buf), false);
            if (d == NULL)
                sy_conn_fail_oom(io, c);
            else
                (void)sy_sse_out_push(io, c, d, true);
            sy_refbuf_release(d);
            break;
        }
        if (c != NULL && c->v1) {
            /* A symphony.v1 client tells a direct message by its "d" header. */
            sy_refbuf_t *d = sy_v1_direct_frame(
                cmd->buf->data[0] & 0x0fu, sy_refbuf_payload(cmd->buf), sy_refbuf_payload_len(cmd->buf),
                atomic_load_explicit(&cmd->buf->deflate, memory_order_relaxed) != SY_REFBUF_Z_NONE);
            if (d == NULL) {
                sy_conn_fail_oom(io, c);
                break;
            }
            sy_refbuf_release(cmd->buf);
            cmd->buf = d;
        }
        if (c != NULL) {
            sy_refbuf_t *m = sy_conn_frame_for(io, c, cmd->buf);
            if (sy_conn_push(io, c, m, false)) {
                if (m == cmd->buf)
                    cmd->buf = NULL; /* the queue has its reference */
                else
                    sy_refbuf_ref(m, 1); /* the twin's; cmd->buf (its owner) goes */
            }
        }
        break;
    case SY_CMD_SUBSCRIBE:
        /* A client's ask the owner granted: only while it is pending (the
         * client may have unsubscribed meanwhile). */
        if (c != NULL && (cmd->pos == NULL || !cmd->pos->asked || (c->v2 && sy_ask_settle(io, c, cmd->pos->rid)))) {
            sy_topic_t *t = cmd->topic;
            /* One held already (server.subscribe() came first): answered
             * with its place; cmd_release gives t back. */
            if (cmd->pos != NULL && cmd->pos->asked && sy_ask_answer_held(io, c, t, cmd->pos)) {
                sy_ask_drain(io, c); /* room for the asks that wait */
                break;
            }
            cmd->topic = NULL;
            if (sy_conn_subscribe(io, c, t)) { /* takes the reference and the interest */
                size_t budget = sy_resume_budget(io, c);
                sy_resume_item_t it;
                sy_resume_prepare(io, c, t, cmd->pos, &budget, &it);
                sy_resume_deliver(io, c, &it);
            }
            if (cmd->pos != NULL && cmd->pos->asked)
                sy_ask_drain(io, c); /* room for the asks that wait */
        }
        break;
    case SY_CMD_POSTED:
        sy_post_deliver(io, c, cmd);
        break;
    case SY_CMD_POST_ANSWER:
        if (c != NULL)
            sy_post_answered(io, c, cmd->arg.status);
        break;
    case SY_CMD_ANSWER:
        if (c != NULL && c->v2 && sy_ask_settle(io, c, cmd->arg.rid)) {
            if (c->sse)
                (void)sy_sse_out_push(io, c, cmd->buf, true); /* its event; cmd->buf goes with the command */
            else if (sy_conn_notice(io, c, cmd->buf))
                cmd->buf = NULL; /* the queue has its reference */
            sy_ask_drain(io, c); /* room for the asks that wait */
        }
        break;
    case SY_CMD_UNSUBSCRIBE:
        if (c != NULL)
            (void)sy_conn_unsubscribe(io, c, cmd->topic);
        break;
    case SY_CMD_END:
        if (c != NULL && sy_conn_end(io, c, cmd->buf, cmd->arg.close_code))
            cmd->buf = NULL;
        break;
    case SY_CMD_TERMINATE:
        if (c != NULL)
            sy_conn_destroy(io, c, 1006);
        break;
    case SY_CMD_ACCEPT:
        if (c != NULL) {
            sy_upgrade_accept(io, c, cmd->accept, cmd->buf);
            cmd->accept = NULL;
            cmd->buf = NULL;
        }
        break;
    case SY_CMD_REFUSE:
        if (c != NULL) {
            sy_upgrade_refuse(io, c, cmd->buf);
            cmd->buf = NULL;
        }
        break;
    case SY_CMD_STOP:
        begin_stop(io, cmd->arg.deadline_ms);
        break;
    case SY_CMD_ADOPT: {
        sy_conn_t *k = adopt(io, cmd->arg.fd, cmd->buf == NULL); /* no bytes: the listener's */
        cmd->arg.fd = -1;                                        /* adopted (or closed): nothing to release */
        if (k != NULL && cmd->buf != NULL)
            sy_conn_feed(io, k, cmd->buf->data, cmd->buf->len);
        break;
    }
    case SY_CMD_OWNER_DONE:
        if ((int32_t)(cmd->arg.seq - io->owner_applied) > 0)
            io->owner_applied = cmd->arg.seq;
        settle_awaiting(io);
        break;
    case SY_CMD_RESUME:
        if (io->ctx.reads_paused && atomic_load_explicit(&io->event_bytes, memory_order_relaxed) < SY_EVENTS_LOW(io)) {
            io->ctx.reads_paused = false;
            while (io->paused != NULL) {
                sy_conn_t *k = io->paused;
                io->paused = k->next_paused;
                k->next_paused = NULL;
                k->paused = false;
                sy_io_update_poll(io, k);
            }
        }
        break;
    default:
        break;
    }
    cmd_release(io, cmd);
}

static void run_commands(sy_io_t *io) {
    sy_wake_drain(&io->wake);
    sy_mutex_lock(&io->qlock);
    sy_cmd_t *work = io->queue;
    size_t n = io->qlen, cap = io->qcap;
    io->queue = io->work;
    io->qcap = io->wcap;
    io->qlen = 0;
    io->wake_owed = false; /* taken, every one */
    sy_mutex_unlock(&io->qlock);
    io->work = work;
    io->wcap = cap;
    if (n > 0)
        sy_stat_inc(&io->ctx.stats.command_runs);
    for (size_t i = 0; i < n; i++)
        do_command(io, &work[i]);
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
    settle_awaiting(io);
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

static void free_dead(sy_io_t *io) {
    while (io->dead != NULL) {
        sy_conn_t *c = io->dead;
        io->dead = c->next_dead;
        sy_conn_free(c);
    }
}

static void on_event(sy_io_t *io, const sy_poll_event_t *ev, bool *commands) {
    if (ev->tag == WAKE_TAG) {
        *commands = true;
    } else if (ev->tag == LISTEN_TAG) {
        accept_some(io);
    } else {
        /* A connection closed earlier in this turn may have given its slot
         * to a new one: the generation tells them apart. */
        sy_conn_t *c = conn_at(io, (uint32_t)ev->tag, (uint32_t)(ev->tag >> 32));
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

static void *io_main(void *arg) {
    sy_io_t *io = arg;
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
            run_commands(io);
        resume_rate_waits(io);
        sy_io_flush_dirty(io);
        if (io->ctx.now_ms >= io->next_sweep_ms) {
            sweep(io);
            sy_io_flush_dirty(io);
            sy_reclaim_tick(&io->reclaim, io, io->ctx.now_ms, (uint32_t)live_conns(io));
            io->next_sweep_ms = io->ctx.now_ms + SY_SWEEP_MS;
        }
        /* The memory policy, a slice per turn (the dirty list is empty here). */
        if (sy_reclaim_pending(&io->reclaim) && !io->stopping)
            sy_reclaim_step(&io->reclaim, io, io->ctx.now_ms);
        if (failed || (io->stopping && (live_conns(io) == 0 || io->ctx.now_ms >= io->stop_deadline_ms))) {
            for (uint32_t i = 0; i < io->slots.n; i++)
                if (io->slots.conns[i] != NULL)
                    sy_conn_destroy(io, io->slots.conns[i], failed ? 1011 : 1001);
            sy_mutex_lock(&io->qlock);
            io->exited = true; /* nothing is queued after this */
            sy_mutex_unlock(&io->qlock);
            run_commands(io); /* release what was queued meanwhile */
            free_dead(io);
            sy_io_emit(io, io->ctx.index, SY_EV_STOPPED, 0, 0, NULL, 0);
            hand_over_batch(io);
            break;
        }
        free_dead(io);
        hand_over_batch(io);
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
