/*
 * sy_budget — the work one connection may cause on its IO thread
 * (maxWorkPerSecond, workBurst; docs/limits.md): one bucket per
 * connection, in work units, filled at the rate and holding the burst.
 *
 * What costs what (the caller charges it; about 10 µs of a server core
 * per unit): each entry a symphony.v2 client asks for (a subscribe entry,
 * counted per entry and not per frame; a publish; a request; an
 * unsubscribe; a message POSTed to a symphony.v2 event stream)
 * SY_WORK_ENTRY; each token signature actually checked its weight by
 * algorithm
 * (auth/sy_jwt.h: sy_jwt_verify_work), charged after the check, so that a
 * token tried with two keys costs two checks; an entry refused for the
 * budget SY_WORK_REFUSAL (its answer is work too).
 *
 * An entry is let in when the bucket holds its cost (sy_budget_take: OK,
 * charged). Else it is refused (REFUSED: the caller answers it
 * `rate-limited`, and the refusal is charged past the burst); once the
 * refusals have cost a second burst's worth more than the bucket holds,
 * sy_budget_take says CLOSE (the caller closes the connection, 1008). A
 * client that backs off after a refusal drains its bucket at the rate and
 * is never closed; one that goes on asking is.
 *
 * Time is the bucket's theoretical arrival time (GCRA) in nanoseconds on
 * 64 bits, from the thread's millisecond clock: it never wraps, so a
 * connection idle for days needs no sweep. A unit costs 1e9 / per_s ns.
 *
 * Threads: pure functions; a connection's time is its IO thread's.
 *
 * Ownership: nothing is kept.
 *
 * Errors: sy_budget_init returns EINVAL when the rate is over
 * SY_WORK_MAX_PER_S or the burst lasts longer than SY_WORK_BURST_MAX_S
 * seconds of it; nothing else fails.
 */
#ifndef SY_BUDGET_H
#define SY_BUDGET_H

#include <stdint.h>

#include "base/sy_errors.h"
#include "io/model/sy_ratelimit.h"

#define SY_WORK_ENTRY 1u   /* an ask's entry, an unsubscribe, a POSTed message */
#define SY_WORK_REFUSAL 1u /* an entry answered `rate-limited` */
/* A budget takes a rate's bounds (sy_rate_bounds). */
#define SY_WORK_MAX_PER_S SY_RATE_MAX_PER_S
#define SY_WORK_BURST_MAX_S (SY_RATE_BURST_MAX_MS / 1000u)
/* The default (maxWorkPerSecond's in io/sy_io_opts.h's list): 2,048 units a second, in
 * bursts of a second's worth: about 2% of a core for one connection that
 * asks all it may, about 20 ms of the thread for a whole burst; a
 * resubscribe of 1,024 topics with one token (1,024 entries and one check)
 * fits a burst, as does one with a token of its own per topic for HS256
 * (docs/limits.md: why, and what the attack bench measured). */
#define SY_WORK_DEFAULT_PER_S 2048u

typedef struct sy_budget {
    uint64_t per_s;   /* 0: no budget */
    int64_t limit_ns; /* the burst's cost */
    int64_t grace_ns; /* refusals past it before the close: another burst */
} sy_budget_t;

typedef enum sy_budget_verdict {
    SY_BUDGET_OK = 0,  /* charged: do it */
    SY_BUDGET_REFUSED, /* the refusal charged: answer `rate-limited` */
    SY_BUDGET_CLOSE    /* refused past the grace: close the connection */
} sy_budget_verdict_t;

/* per_s units a second (0: off; at most SY_WORK_MAX_PER_S) in bursts of
 * `burst` units (0: per_s, a second's worth; at most SY_WORK_BURST_MAX_S
 * seconds' worth). EINVAL when out of range. */
sy_err_t sy_budget_init(sy_budget_t *b, uint64_t per_s, uint64_t burst);

/* The thread's clock (milliseconds) as the budget's time. */
static inline int64_t sy_budget_now(int64_t now_ms) { return now_ms * 1000000; }

/* What n units cost, in ns (capped at the limit plus the grace). */
int64_t sy_budget_cost(const sy_budget_t *b, uint64_t n);

/* An entry worth `units` asks to be done at now_ns, *tat its connection's
 * time (0 at first): see above. An unlimited budget always says OK. */
sy_budget_verdict_t sy_budget_take(const sy_budget_t *b, int64_t *tat, int64_t now_ns, uint64_t units);

/* Work done that its entry's take did not know yet (a token's checks):
 * charged whatever the bucket holds, up to the limit plus the grace (the
 * next take then refuses, or closes). */
void sy_budget_charge(const sy_budget_t *b, int64_t *tat, int64_t now_ns, uint64_t units);

/* How far *tat is ahead of now, in ns (0: the bucket is full). */
static inline int64_t sy_budget_ahead(int64_t tat, int64_t now_ns) { return tat > now_ns ? tat - now_ns : 0; }

#endif
