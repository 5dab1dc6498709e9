/*
 * sy_random — 64 random bits for ids that must differ across processes and
 * restarts (a bus node's id, a topic history's epoch): the kernel's
 * getrandom (getentropy on macOS), or, where it cannot answer at once, the
 * clock, the process id and a counter mixed (unique enough for ids, not
 * for secrets).
 *
 * Threads: any thread.
 * Ownership: nothing is kept.
 * Errors: none (the fallback always answers).
 */
#ifndef SY_RANDOM_H
#define SY_RANDOM_H

#include <stdint.h>

uint64_t sy_random_u64(void);

#endif
