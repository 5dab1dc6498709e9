/*
 * sy_ratelimit — a client's inbound rate (maxMessagesPerSecond and
 * maxBytesPerSecond): two token buckets per connection in GCRA form, each
 * one 32-bit time, and the IO thread's list of the connections that wait
 * for their buckets (a min-heap by due time).
 *
 * A bucket is its theoretical arrival time (tat): the time at which it
 * would be full again. A unit (a message, a byte) costs the bucket's period
 * (a second / the rate); a bucket with `limit` ticks of burst lets n units
 * in when tat - now + their cost <= limit, and charging them moves tat on by
 * their cost (from now when tat is past): exactly a token bucket of `burst`
 * tokens. n units that cost more than the whole burst (a message larger
 * than byteBurst) get in when the bucket is full, and the wait after them
 * pays them back: on average the rate holds, and no message is ever
 * refused for its size alone.
 *
 * Time is in ticks of 1/16 µs (SY_RATE_TICKS_PER_MS) on 32 bits, compared
 * by difference: a wrap takes 268 s. A bucket never runs more than
 * SY_RATE_AHEAD_MAX ahead of now (a message worth more than two minutes of
 * the rate pauses its connection for two minutes, not longer), and the
 * owner's once-a-second sweep brings a past tat up to now
 * (sy_rate_current), so the difference always fits in an int32_t. A burst
 * (the limit) is at most SY_RATE_BURST_MAX_MS long.
 *
 * Threads: sy_rate_* are pure functions (any thread). A sy_rate_waits_t is
 * its IO thread's alone.
 *
 * Ownership: sy_rate_waits_t owns its array (sy_rate_waits_free); it names
 * connections by id and keeps no pointer: an id whose connection is gone
 * is skipped by the caller when it comes due.
 *
 * Errors: sy_rate_init returns EINVAL when the burst is longer than
 * SY_RATE_BURST_MAX_MS (or the rate is out of range); sy_rate_waits_push
 * returns ENOMEM. Nothing else fails.
 */
#ifndef SY_RATELIMIT_H
#define SY_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/sy_errors.h"

#define SY_RATE_TICKS_PER_MS 16000u
#define SY_RATE_TICKS_PER_S 16000000u
#define SY_RATE_AHEAD_MAX 2000000000u /* 125 s of ticks: the most a bucket runs ahead */
#define SY_RATE_BURST_MAX_MS 60000u   /* a burst (and close's grace) is at most a minute's worth */
#define SY_RATE_MAX_PER_S (UINT64_C(1) << 32)

/* One kind of unit's rate: per_s units a second (0: no limit), a burst
 * of `limit` ticks (the time the burst's units cost). */
typedef struct sy_rate {
    uint64_t per_s;
    uint32_t limit;
} sy_rate_t;

/* The bounds every bucket of symphony takes (this rate's, and a
 * connection's work budget, io/model/sy_budget.h): per_s (not 0) at most
 * SY_RATE_MAX_PER_S and a burst at most SY_RATE_BURST_MAX_MS long; a burst
 * of 0 becomes per_s (a second's worth). 0, or EINVAL. */
sy_err_t sy_rate_bounds(uint64_t per_s, uint64_t *burst);

/* per_s units a second (0: off, 1..SY_RATE_MAX_PER_S), in bursts of
 * `burst` units (0: per_s, one second's worth). EINVAL when per_s is out of
 * range or the burst lasts longer than SY_RATE_BURST_MAX_MS. */
sy_err_t sy_rate_init(sy_rate_t *r, uint64_t per_s, uint64_t burst);

/* The thread's clock (milliseconds) as ticks. */
static inline uint32_t sy_rate_now(int64_t now_ms) { return (uint32_t)((uint64_t)now_ms * SY_RATE_TICKS_PER_MS); }

/* How far tat is ahead of now, in ticks (0 when it is past). */
static inline uint32_t sy_rate_ahead(uint32_t tat, uint32_t now) {
    int32_t d = (int32_t)(tat - now);
    return d > 0 ? (uint32_t)d : 0;
}

/* What n units cost, in ticks (at most SY_RATE_AHEAD_MAX; 0 unlimited). */
uint64_t sy_rate_cost(const sy_rate_t *r, uint64_t n);

/* True when the bucket lets n more units in: their cost (or the whole
 * burst, when they cost more) fits within the burst plus `extra` ticks. An
 * unlimited rate always does. */
bool sy_rate_fits(const sy_rate_t *r, uint32_t tat, uint32_t now, uint64_t n, uint32_t extra);

/* The bucket's time after n more units (tat itself when unlimited). */
uint32_t sy_rate_charge(const sy_rate_t *r, uint32_t tat, uint32_t now, uint64_t n);

/* Milliseconds until n more units fit (0: they do), rounded up. */
uint32_t sy_rate_wait_ms(const sy_rate_t *r, uint32_t tat, uint32_t now, uint64_t n);

/* A past tat brought up to now (what the sweep does once a second). */
static inline uint32_t sy_rate_current(uint32_t tat, uint32_t now) { return (int32_t)(tat - now) < 0 ? now : tat; }

/* The connections of an IO thread that wait for their buckets, by due time. */
typedef struct sy_rate_wait {
    int64_t due_ms;
    uint64_t id; /* the connection's id (sy_conn_id) */
} sy_rate_wait_t;

typedef struct sy_rate_waits {
    sy_rate_wait_t *heap;
    uint32_t n, cap;
} sy_rate_waits_t;

/* Adds id, due at due_ms. 0 or ENOMEM. */
sy_err_t sy_rate_waits_push(sy_rate_waits_t *w, uint64_t id, int64_t due_ms);
/* The earliest due time, or INT64_MAX when none waits. */
static inline int64_t sy_rate_waits_next(const sy_rate_waits_t *w) { return w->n > 0 ? w->heap[0].due_ms : INT64_MAX; }
/* Takes the earliest entry due at now_ms or before into *id; false when none
 * is. An array grown past 16 entries is given back once it is empty. */
bool sy_rate_waits_pop_due(sy_rate_waits_t *w, int64_t now_ms, uint64_t *id);
void sy_rate_waits_free(sy_rate_waits_t *w);

#endif
