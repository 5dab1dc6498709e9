/*
 * sy_clock — the monotonic clock, the one way src/ reads time; and the
 * wall clock, for what is dated in Unix time (tokens' exp and nbf).
 *
 * CLOCK_MONOTONIC cannot fail with a valid clock id on Linux; should it, the
 * reading is 0 (deadlines then fire early rather than never). The same for
 * CLOCK_REALTIME (a token then looks expired rather than valid forever).
 *
 * Threads: any.
 *
 * Ownership: nothing is kept.
 *
 * Errors: none reported: a failed reading is 0 (above).
 */
#ifndef SY_CLOCK_H
#define SY_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds since an arbitrary start. */
static inline int64_t sy_clock_us(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Milliseconds since the same start. */
static inline int64_t sy_clock_ms(void) { return sy_clock_us() / 1000; }

/* Seconds since the Unix epoch (the wall clock: it may jump). */
static inline int64_t sy_clock_unix_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec;
}

#endif
