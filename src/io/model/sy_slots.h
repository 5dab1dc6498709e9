/*
 * sy_slots — an IO thread's slot table: which connection each slot holds,
 * the free slots, and the generation published per slot, so that any
 * thread can tell whether an id (thread, slot, generation: io/sy_io.h)
 * names a connection that is open now without asking the IO thread.
 *
 * A connection's identity inside the core is its slot (the poller's tags
 * and the topics' subscriber arrays hold slots): moving a connection in
 * memory changes one cell (sy_slots_put).
 *
 * Threads: the IO thread that owns the table calls everything, except
 * sy_slots_is_live (any thread: the generation pages are published with
 * release stores and never freed before the table), and sy_slots_init and
 * sy_slots_free, which the owner calls (sy_io_create, sy_io_destroy) before
 * the thread starts and after it is joined.
 *
 * Ownership: the table owns its arrays and generation pages (sy_slots_free
 * frees them); it points at connections without owning them (their IO
 * thread frees them: sy_conn_free).
 *
 * Errors: sy_slots_take returns 0, ENFILE (no slot left: SY_ID_MAX_SLOTS,
 * or the generation pages' reach) or ENOMEM (it makes the slot's generation
 * page, so sy_slots_set_live never needs memory). The rest cannot fail.
 */
#ifndef SY_SLOTS_H
#define SY_SLOTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

#define SY_SLOTS_GEN_PAGE_BITS 12
#define SY_SLOTS_GEN_PAGES 256 /* up to 1M connections per thread */

struct sy_conn;

typedef struct sy_slots {
    struct sy_conn **conns; /* by slot; NULL: free */
    uint32_t n, cap;        /* slots used so far (live or free), and allocated */
    uint32_t next_gen;      /* one counter per table: a slot's next id differs from its last */
    uint32_t *free;         /* free slots, reused last in first out */
    uint32_t nfree, free_cap;
    _Atomic(atomic_uint *) gen_pages[SY_SLOTS_GEN_PAGES]; /* live generation per slot (0: not open) */
} sy_slots_t;

void sy_slots_init(sy_slots_t *t);
/* Frees the table (not the connections). */
void sy_slots_free(sy_slots_t *t);
/* Gives c a slot and a generation (never 0, below 2^21): its identity. */
sy_err_t sy_slots_take(sy_slots_t *t, struct sy_conn *c, uint32_t *slot, uint32_t *gen);
/* The slot is free again (its published generation is the caller's to
 * clear first, with sy_slots_set_live(t, slot, 0)). */
void sy_slots_release(sy_slots_t *t, uint32_t slot);
/* Publishes whether the connection in slot is open (gen) or not (0). */
void sy_slots_set_live(sy_slots_t *t, uint32_t slot, uint32_t gen);
/* True when slot's published generation is gen (gen != 0). Any thread. */
bool sy_slots_is_live(sy_slots_t *t, uint32_t slot, uint32_t gen);
/* Connections in use now. */
static inline uint32_t sy_slots_used(const sy_slots_t *t) { return t->n - t->nfree; }
/* The connection in slot (NULL: free, or past the table). */
static inline struct sy_conn *sy_slots_at(const sy_slots_t *t, uint32_t slot) {
    return slot < t->n ? t->conns[slot] : NULL;
}
/* Points slot at c (a connection moved in memory). */
static inline void sy_slots_put(sy_slots_t *t, uint32_t slot, struct sy_conn *c) { t->conns[slot] = c; }

/* Connection ids: (thread, slot, generation), what the owner names a
 * connection by. */
static inline unsigned sy_id_thread(uint64_t id) { return (unsigned)(id & 0xff); }
static inline uint32_t sy_id_slot(uint64_t id) { return (uint32_t)((id >> 8) & 0xffffff); }
static inline uint32_t sy_id_gen(uint64_t id) { return (uint32_t)(id >> 32); }
static inline uint64_t sy_id_make(unsigned thread, uint32_t slot, uint32_t gen) {
    return ((uint64_t)gen << 32) | ((uint64_t)slot << 8) | (uint64_t)thread;
}
#define SY_ID_MAX_SLOTS (1u << 24)
#define SY_ID_GEN_MASK 0x1fffffu /* ids stay below 2^53 */

#endif
