/*
 * sy_redis_alloc — hiredis' memory comes from sy_alloc.
 *
 * hiredis (deps/hiredis.sh, the Redis bus's client) allocates through one
 * process-wide table of functions (hi_malloc, hi_calloc, hi_realloc,
 * hi_strdup, hi_free), libc's by default. sy_redis_alloc_init points that
 * table at sy_malloc, sy_calloc, sy_realloc and sy_free (and a strdup over
 * sy_malloc), so that every block hiredis makes is in our jemalloc, in the
 * calling thread's arena, and counted like the rest of symphony's memory.
 * The table is our private copy's (hiredis is linked static and hidden):
 * no other hiredis in the process is affected.
 *
 * It must run before hiredis allocates anything (a block from libc malloc
 * would later be given to sy_free): the addon calls it when it loads
 * (binding/addon.c), before any JS can start a bus, and code that uses
 * hiredis may call it again first.
 *
 * Threads: any thread. The first call sets the table exactly once
 * (sy_once); later and concurrent calls wait for it and change nothing.
 * The probe: any thread.
 *
 * Ownership: the table is process-wide and never given back. A block
 * hiredis makes is freed by hiredis (through sy_free); a probe is the
 * caller's, freed with sy_redis_alloc_probe_free.
 *
 * Errors: sy_redis_alloc_init returns 0 or the errno value of sy_once;
 * the probe is NULL when out of memory or when the init failed.
 */
#ifndef SY_REDIS_ALLOC_H
#define SY_REDIS_ALLOC_H

#include "base/sy_errors.h"

/* Routes hiredis' allocations to sy_alloc. Idempotent. Returns 0, or the
 * error of sy_once (hiredis then still has libc's functions: do not
 * use it). */
sy_err_t sy_redis_alloc_init(void);

/* The self-check's probe: a reply reader made by hiredis itself
 * (redisReaderCreate, as each bus connection makes one), so that
 * allocator.selfCheck can ask whose memory it is. NULL when out of memory
 * or when sy_redis_alloc_init failed. */
void *sy_redis_alloc_probe_new(void);
/* Frees a probe (NULL is a no-op). */
void sy_redis_alloc_probe_free(void *probe);

#endif
