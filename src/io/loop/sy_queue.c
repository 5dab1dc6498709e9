/* sy_queue — see sy_queue.h. */
#define _GNU_SOURCE
#include "io/loop/sy_queue.h"

#include <errno.h>

#include "base/sy_alloc.h"
#include "io/loop/sy_io_struct.h"
#include "net/sy_sock.h"
#include "net/sy_wake.h"

/* Gives back what a command still holds. */
unsigned sy_io_index(const sy_io_t *io) { return io->ctx.index; }

void sy_io_stats_snapshot(sy_io_t *io, sy_stats_t *out) { sy_stats_snapshot(&io->ctx.stats, out); }

void sy_accept_free(sy_topics_t *topics, unsigned thread, sy_accept_t *a) {
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->ntopics; i++)
        sy_topic_drop_interest(topics, a->topics[i], thread);
    sy_free(a->topics);
    sy_free(a->heads);
    sy_free(a);
}

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
    else if (cmd->type == SY_CMD_PUBLISH)
        sy_refbuf_release(cmd->meta);
}

void sy_io_cmd_discard(sy_io_t *io, sy_cmd_t *cmd) { cmd_release(io, cmd); }

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

bool sy_io_is_open(sy_io_t *io, uint64_t id) {
    return sy_id_gen(id) != 0 && sy_slots_is_live(&io->slots, sy_id_slot(id), sy_id_gen(id));
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
