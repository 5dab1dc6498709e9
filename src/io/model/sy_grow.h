/*
 * sy_grow — one way the arrays of src/io grow: their capacity doubled (or
 * set to a first size), with the allocator's realloc.
 *
 * Threads: any (it touches only what it is given).
 *
 * Ownership: sy_grow returns the array's new block (the old one is freed,
 * or moved) and sets *cap; out of memory it returns NULL and the old block
 * and *cap stay the caller's, unchanged.
 *
 * Errors: NULL out of memory.
 */
#ifndef SY_GROW_H
#define SY_GROW_H

#include <stddef.h>
#include <stdint.h>

#include "base/sy_alloc.h"

/* Array a of *cap elements of elem bytes, with room for twice as many (first
 * when it has none). */
static inline void *sy_grow(void *a, uint32_t *cap, size_t elem, uint32_t first) {
    uint32_t n = *cap ? *cap * 2 : first;
    void *b = sy_realloc(a, (size_t)n * elem);
    if (b != NULL)
        *cap = n;
    return b;
}

#endif
