/*
 * sy_bus_sentinel — where a Sentinel-managed Redis' primary is: the bus'
 * connections to Redis Sentinel (docs/bus.md, "Redis Sentinel").
 *
 * Two links to one sentinel at a time (sy_bus_link.h): the ask link sends
 * `SENTINEL get-master-addr-by-name <name>` when the address is wanted
 * (at the start, when a data link drops, on a +switch-master event), every
 * 500 ms while the bus is not up and every 5 s while it is; the watch link
 * subscribes to `+switch-master` (no other command goes on it: hiredis
 * matches a subscription's messages by its callback) and wants the
 * address again at once when the primary of that name moves. The caller
 * moves its data links to each address answered (sy_bus_shards_place)
 * and checks it with ROLE before calling the bus up (verified).
 *
 * A sentinel that cannot be reached, fails to answer, or knows no primary
 * of that name is left for the next one (round robin over the list, after
 * the ask link's backoff delay); once every sentinel has failed in a row,
 * sy_bus_sentinel_why says so, naming the last one and its reason. An
 * answer resets that count.
 *
 * The links' callbacks go to the ops and ctx of the conf's links (roles
 * SY_BUS_ROLE_SENTINEL and SY_BUS_ROLE_WATCH, owner the sy_bus_sentinel_t);
 * the caller hands the ask link's up/down back here (sy_bus_sentinel_up,
 * sy_bus_sentinel_down).
 *
 * Threads: sy_bus_sentinel_init on the owner's thread before the bus
 * thread starts; everything else on the bus thread.
 *
 * Ownership: the struct is the caller's; it owns its two links. The
 * conf's pointers are the caller's and must outlive it.
 *
 * Errors: none returned: a sentinel's failures are recorded (why) and the
 * links retry by themselves.
 */
#ifndef SY_BUS_SENTINEL_H
#define SY_BUS_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus/sy_bus_link.h"
#include "bus/sy_bus_sentinel_reply.h"
#include "net/sy_poll.h"

struct redisAsyncContext;

/* The longest primary name (bytes). */
#define SY_BUS_SENTINEL_NAME_MAX 128

/* sy_bus_link_t.role of the sentinel links (after sy_bus_shard.h's). */
enum { SY_BUS_ROLE_SENTINEL = 3, SY_BUS_ROLE_WATCH = 4 };

typedef struct sy_bus_sentinel_conf {
    char *const *hosts; /* the sentinels */
    const uint16_t *ports;
    unsigned n;
    const char *name;        /* the primary's name (no space) */
    sy_bus_link_env_t links; /* with the sentinels' credentials and TLS */
    uint32_t seed;
} sy_bus_sentinel_conf_t;

typedef struct sy_bus_sentinel {
    sy_bus_sentinel_conf_t conf;
    size_t name_len;
    sy_bus_link_t ask;   /* SENTINEL get-master-addr-by-name */
    sy_bus_link_t watch; /* SUBSCRIBE +switch-master */
    unsigned at;         /* the sentinel both links go to */
    unsigned failed;     /* sentinels that failed in a row */
    bool pending;        /* asked, not answered */
    bool wanted;         /* ask as soon as the ask link is up */
    int64_t due_ms;
    bool verified;       /* the data links' primary said ROLE master (the caller's flag) */
    unsigned role_delay; /* the data links' next delay after a ROLE that is not master */
    char why[SY_BUS_SENTINEL_NAME_MAX + SY_BUS_HOST_MAX + SY_BUS_ERRLEN + 96];
} sy_bus_sentinel_t;

/* Remembers conf; no connection yet. */
void sy_bus_sentinel_init(sy_bus_sentinel_t *st, const sy_bus_sentinel_conf_t *conf);
/* Connects both links to the first sentinel. */
void sy_bus_sentinel_start(sy_bus_sentinel_t *st);
/* Closes both links (a pending ask's callback runs with a NULL reply). */
void sy_bus_sentinel_close(sy_bus_sentinel_t *st);
/* Runs the links' timers; returns the next deadline (ms) or INT64_MAX. */
int64_t sy_bus_sentinel_tick(sy_bus_sentinel_t *st, int64_t now);
/* Wants the primary's address again (a data link dropped). */
void sy_bus_sentinel_want(sy_bus_sentinel_t *st);
/* Asks the sentinel when wanted or due and the ask link is up; done gets
 * the reply (privdata NULL). up: the bus is up (next due in 5 s, else
 * 500 ms). */
void sy_bus_sentinel_ask(sy_bus_sentinel_t *st, int64_t now, bool up,
                         void (*done)(struct redisAsyncContext *ac, void *reply, void *priv));
/* The ask's reply (NULL: its connection went): true with the primary's
 * address in *out; else false, and a failure recorded: the ask link then
 * moves to the next sentinel. */
bool sy_bus_sentinel_answered(sy_bus_sentinel_t *st, void *reply, sy_bus_sentinel_addr_t *out);
/* One of the two links is up (the watch link subscribes). */
void sy_bus_sentinel_up(sy_bus_sentinel_t *st, sy_bus_link_t *l);
/* One of the two links went down (err: why): the ask link's failure
 * counts, and both move to the next sentinel. */
void sy_bus_sentinel_down(sy_bus_sentinel_t *st, sy_bus_link_t *l, const char *err);
/* A ROLE answer that was not master: the delay before the data links try
 * again (doubling from backoff_min_ms to backoff_max_ms; reset once
 * verified). */
unsigned sy_bus_sentinel_role_delay(sy_bus_sentinel_t *st);
/* NULL, or why the primary cannot be found: every sentinel failed in a
 * row ("Sentinel: ..."). */
const char *sy_bus_sentinel_why(const sy_bus_sentinel_t *st);

#endif
