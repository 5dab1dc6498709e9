/* sy_io_thread — see sy_io_thread.h. */
#define _GNU_SOURCE
#include "io/loop/sy_io_thread.h"

#include "base/sy_alloc.h"
#include "io/loop/sy_io_struct.h"
#include "io/loop/sy_queue.h"
#include "io/model/sy_grow.h"

uint32_t sy_io_slot_count(const sy_io_t *io) { return io->slots.n; }

uint32_t sy_io_current_seq(const sy_io_t *io) { return io->batch_seq + 1; }

/* ---- slots and live ids -------------------------------------------------- */

void sy_io_set_live(sy_io_t *io, uint32_t slot, uint32_t gen) { sy_slots_set_live(&io->slots, slot, gen); }

sy_err_t sy_io_rate_wait(sy_io_t *io, uint64_t id, int64_t due_ms) {
    return sy_rate_waits_push(&io->rate_waits, id, due_ms);
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

void sy_io_hand_over(sy_io_t *io) {
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

bool sy_io_owner_done(const sy_io_t *io, uint32_t seq) { return (int32_t)(seq - io->owner_applied) <= 0; }

bool sy_io_await_owner(sy_io_t *io, uint64_t id, uint32_t msg_seq) {
    if (io->nawaiting == io->awaiting_cap) {
        uint64_t *a = sy_grow(io->awaiting, &io->awaiting_cap, sizeof(*a), 8);
        if (a == NULL)
            return false;
        io->awaiting = a;
    }
    io->awaiting[io->nawaiting++] = id;
    /* With sy_io_batch_done's store and load: either the owner sees this
     * waiter (and queues OWNER_DONE after its replies), or this sees the
     * batch handled: then OWNER_DONE is queued here, after every command
     * the owner queued before it handled the batch. */
    atomic_store(&io->owner_waiters, io->nawaiting);
    uint32_t seen = atomic_load(&io->owner_seq);
    if ((int32_t)(msg_seq - seen) <= 0) {
        sy_cmd_t cmd = {.type = SY_CMD_OWNER_DONE, .arg.seq = seen};
        (void)sy_io_push(io, &cmd); /* out of memory: the sweep's deadline */
    }
    return true;
}
