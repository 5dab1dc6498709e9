/*
 * sy_addrlimit — a server's table of client addresses: for each address (an
 * IPv4 address or an IPv6 prefix, cut to the configured prefix lengths) its
 * open connections (maxConnectionsPerAddress) and the rate of its new
 * connections (upgradeRatePerAddress: a GCRA in nanoseconds, bursts of as
 * many as the rate).
 *
 * One table per server, shared by its IO threads under one mutex: a
 * connection is admitted on the thread that adopts it and may be released
 * on that thread or (a thread stopping) at its end, and an address's count
 * must be one number whichever thread its connections landed on. The lock
 * is taken once per new connection and once per close, for one hash lookup:
 * never on the path of a message. Per-thread tables would need the
 * threads to sum counts at every accept, or split each address's cap.
 *
 * An entry lives while its address has connections or its rate state is
 * not idle (the bucket not yet full again); then it is freed: at the last
 * close when the bucket is full by then, else by sy_addrlimit_sweep, which
 * walks only those entries (a list of the lingering). The buckets array
 * shrinks as entries go and is freed when the table is empty, so memory
 * follows the number of addresses seen in the last second or so.
 *
 * The hash is seeded from sy_random once per table, so a peer cannot pick
 * addresses (an IPv6 /48 holds 65,536 /64s) that fall into one chain.
 *
 * Keys (sy_addr_key_make, pure): an IPv4 address (or an IPv4-mapped IPv6
 * one, ::ffff:a.b.c.d) keeps its first v4_prefix bits (1..32); an IPv6
 * address its first v6_prefix bits (1..64): the smallest unit a site is
 * given is a /64, whose host picks its own 64-bit interface ids (SLAAC,
 * privacy addresses), so keys finer than a /64 would give one host 2^64 of
 * them. A key fits in 64 bits and a flag.
 *
 * Threads: sy_addrlimit_create and _destroy on the owner's thread, before
 * the IO threads start and after they were joined; the others from any
 * thread (under the table's mutex). sy_addr_key_make is pure.
 *
 * Ownership: the table owns its entries and buckets; the caller's key is
 * copied.
 *
 * Errors: sy_addrlimit_create returns NULL (out of memory, or the mutex
 * could not be made). sy_addrlimit_admit answers SY_ADDR_NOMEM when a new
 * address's entry cannot be allocated (the caller refuses the connection:
 * a limit that cannot be counted does not let it through). sy_addr_key_make
 * returns false for an address that is not IPv4 or IPv6.
 */
#ifndef SY_ADDRLIMIT_H
#define SY_ADDRLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/sy_sock.h"

typedef struct sy_addrlimit sy_addrlimit_t;

typedef struct sy_addr_key {
    uint64_t bits; /* IPv4: the address's kept bits (low 32); IPv6: the prefix's (big-endian order) */
    bool v6;
} sy_addr_key_t;

typedef struct sy_addrlimit_conf {
    uint32_t max_conns; /* open connections per address; 0: no limit */
    uint32_t rate;      /* new connections per second per address, bursts of as many; 0: none */
    uint8_t v4_prefix;  /* 1..32 */
    uint8_t v6_prefix;  /* 1..64 */
} sy_addrlimit_conf_t;

typedef enum sy_addr_verdict {
    SY_ADDR_OK = 0,   /* admitted and counted: sy_addrlimit_release it at its close */
    SY_ADDR_TOO_MANY, /* the address has max_conns open (answer 503) */
    SY_ADDR_TOO_FAST, /* over its rate of new connections (answer 429; *retry_s) */
    SY_ADDR_NOMEM,    /* a new address could not be entered */
} sy_addr_verdict_t;

sy_addrlimit_t *sy_addrlimit_create(const sy_addrlimit_conf_t *conf);
void sy_addrlimit_destroy(sy_addrlimit_t *t);

/* The table's key of a peer's address: false when sa is neither AF_INET nor
 * AF_INET6 (or len too short). */
bool sy_addr_key_make(const struct sockaddr *sa, socklen_t len, unsigned v4_prefix, unsigned v6_prefix,
                      sy_addr_key_t *out);
/* The key's prefix lengths, from the table's configuration. */
bool sy_addrlimit_key(const sy_addrlimit_t *t, const struct sockaddr *sa, socklen_t len, sy_addr_key_t *out);

/* A new connection from key at now_ns (a monotonic clock): the rate first
 * (a refused attempt is not charged), then the count. On SY_ADDR_TOO_FAST,
 * *retry_s is the whole seconds after which the next attempt would be let
 * in (at least 1). */
sy_addr_verdict_t sy_addrlimit_admit(sy_addrlimit_t *t, const sy_addr_key_t *key, int64_t now_ns, uint32_t *retry_s);
/* A connection admitted with SY_ADDR_OK closed. */
void sy_addrlimit_release(sy_addrlimit_t *t, const sy_addr_key_t *key, int64_t now_ns);
/* Frees the entries with no connection whose rate went idle by now_ns. */
void sy_addrlimit_sweep(sy_addrlimit_t *t, int64_t now_ns);
/* Entries in the table now (any thread; a relaxed read). */
size_t sy_addrlimit_count(const sy_addrlimit_t *t);

#endif
