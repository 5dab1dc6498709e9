/* sy_slots — see sy_slots.h. */
#include "io/model/sy_slots.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"

#define PAGE_SLOTS (1u << SY_SLOTS_GEN_PAGE_BITS)

void sy_slots_init(sy_slots_t *t) {
    memset(t, 0, sizeof(*t));
    t->next_gen = 1;
}

void sy_slots_free(sy_slots_t *t) {
    sy_free(t->conns);
    sy_free(t->free);
    for (unsigned i = 0; i < SY_SLOTS_GEN_PAGES; i++)
        sy_free(atomic_load_explicit(&t->gen_pages[i], memory_order_relaxed));
    memset(t, 0, sizeof(*t));
}

/* The generation cell of slot (made with its page when create), or NULL. */
static atomic_uint *gen_cell(sy_slots_t *t, uint32_t slot, bool create) {
    uint32_t page = slot >> SY_SLOTS_GEN_PAGE_BITS;
    if (page >= SY_SLOTS_GEN_PAGES)
        return NULL;
    atomic_uint *p = atomic_load_explicit(&t->gen_pages[page], memory_order_acquire);
    if (p == NULL && create) {
        p = sy_calloc(PAGE_SLOTS, sizeof(*p));
        if (p == NULL)
            return NULL;
        atomic_store_explicit(&t->gen_pages[page], p, memory_order_release);
    }
    return p == NULL ? NULL : &p[slot & (PAGE_SLOTS - 1)];
}

void sy_slots_set_live(sy_slots_t *t, uint32_t slot, uint32_t gen) {
    atomic_uint *cell = gen_cell(t, slot, false);
    if (cell != NULL)
        atomic_store_explicit(cell, gen, memory_order_release);
}

bool sy_slots_is_live(sy_slots_t *t, uint32_t slot, uint32_t gen) {
    atomic_uint *cell = gen != 0 ? gen_cell(t, slot, false) : NULL;
    return cell != NULL && atomic_load_explicit(cell, memory_order_acquire) == gen;
}

sy_err_t sy_slots_take(sy_slots_t *t, struct sy_conn *c, uint32_t *slot_out, uint32_t *gen_out) {
    uint32_t slot;
    if (t->nfree > 0) {
        slot = t->free[--t->nfree];
    } else {
        if (t->n >= SY_ID_MAX_SLOTS || t->n >= SY_SLOTS_GEN_PAGES * PAGE_SLOTS)
            return ENFILE;
        if (t->n == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 256;
            struct sy_conn **conns = sy_realloc(t->conns, (size_t)cap * sizeof(*conns));
            if (conns == NULL)
                return ENOMEM;
            t->conns = conns;
            t->cap = cap;
        }
        slot = t->n;
        if (gen_cell(t, slot, true) == NULL)
            return ENOMEM;
        t->conns[slot] = NULL;
        t->n++;
    }
    /* Generations come from one counter per table, so a slot's next id
     * differs from its last one. */
    *slot_out = slot;
    *gen_out = t->next_gen;
    t->next_gen = (t->next_gen + 1) & SY_ID_GEN_MASK;
    if (t->next_gen == 0)
        t->next_gen = 1;
    t->conns[slot] = c;
    return 0;
}

void sy_slots_release(sy_slots_t *t, uint32_t slot) {
    t->conns[slot] = NULL;
    if (t->nfree == t->free_cap) {
        uint32_t cap = t->free_cap ? t->free_cap * 2 : 256;
        uint32_t *f = sy_realloc(t->free, (size_t)cap * sizeof(*f));
        if (f == NULL)
            return; /* the slot is leaked until the server stops; harmless */
        t->free = f;
        t->free_cap = cap;
    }
    t->free[t->nfree++] = slot;
}
