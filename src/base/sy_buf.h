/*
 * sy_buf — the one growable byte buffer of the core: a (data, len, cap)
 * triple kept in the caller's own struct, grown by doubling through the
 * allocator module. Used for a connection's receive and message buffers and
 * for event batches.
 *
 * Threads: whoever owns the triple.
 *
 * Ownership: the triple's data is the caller's (sy_alloc memory, freed with
 * sy_free); these functions may move it (a realloc) and copy what they
 * append. Nothing else is kept.
 *
 * Errors: 0 or ENOMEM (base/sy_errors.h); the triple is unchanged on failure.
 */
#ifndef SY_BUF_H
#define SY_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

/* Makes room for `need` more bytes after *len (capacity at least min_cap).
 * 0, or ENOMEM when out of memory or the size would overflow (nothing
 * changes then). */
sy_err_t sy_buf_reserve(uint8_t **data, size_t len, size_t *cap, size_t need, size_t min_cap);

/* The same, growing to exactly len + need (no doubling): for a size known
 * in advance, such as a frame whose header has arrived. */
sy_err_t sy_buf_reserve_exact(uint8_t **data, size_t len, size_t *cap, size_t need);

/* Appends p[0..n) (growing as sy_buf_reserve does). 0 or ENOMEM. */
sy_err_t sy_buf_append(uint8_t **data, size_t *len, size_t *cap, const void *p, size_t n, size_t min_cap);

#endif
