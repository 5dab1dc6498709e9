/*
 * sy_io_opts — what a server's IO threads are told: one struct, filled by
 * the owner before the threads start (sy_server_create copies it; the
 * server's public name for it is sy_server_opts_t) and read-only after.
 *
 * Threads: written by the owner before sy_io_start, then read by every IO
 * thread.
 *
 * Ownership: host and path point at copies the server owns (the caller's
 * strings are copied by sy_server_create).
 *
 * Errors: none: a struct, no functions (sy_server_create checks the values).
 */
#ifndef SY_IO_OPTS_H
#define SY_IO_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sy_cidr.h"

/* What a connection over max_backpressure gets: new messages dropped,
 * closed (1008), or each topic's newest message (io/sy_conflate.h). */
typedef enum { SY_SLOW_DROP = 0, SY_SLOW_CLOSE = 1, SY_SLOW_CONFLATE = 2 } sy_slow_policy_t;

/* The PROXY protocol on the listener (io/sy_peer.h): off, required before
 * every connection's first byte, or optional (a connection that does not
 * start with one is plain). */
typedef enum { SY_PROXY_OFF = 0, SY_PROXY_REQUIRED = 1, SY_PROXY_OPTIONAL = 2 } sy_proxy_mode_t;
#define SY_PROXY_FROM_MAX 64 /* ranges in proxy_from */

typedef struct sy_io_opts {
    const char *host;        /* numeric address or name to bind; copied */
    uint16_t port;           /* 0: any free port */
    const char *path;        /* only this path (before '?') upgrades; NULL: any */
    unsigned threads;        /* 1..SY_SERVER_MAX_THREADS */
    size_t max_payload;      /* largest message accepted from a client */
    uint32_t max_fragments;  /* frames in one message; more: close 1008. 0: no limit */
    uint32_t control_rate;   /* control frames (ping, pong) per second per connection, with
                                bursts of as many; more: close 1008. 0: no limit */
    size_t max_backpressure; /* queued bytes per connection before the policy */
    sy_slow_policy_t slow_consumer;
    unsigned idle_timeout_s;      /* 0: none */
    unsigned handshake_timeout_s; /* complete upgrade request within this */
    unsigned close_timeout_s;     /* wait this long for the peer's close reply */
    size_t max_head_bytes;        /* request line + headers; default 8192 */
    unsigned max_headers;         /* default 64 */
    unsigned backlog;             /* listen() backlog */
    uint32_t max_connections;     /* per server; 0: no limit beyond the fd limit */
    /* Per client address (io/sy_addrlimit.h, io/sy_admit.h): open
     * connections, and new ones per second in bursts of as many; 0: no
     * limit. The address is cut to its first v4/v6 prefix bits. */
    uint32_t max_conns_per_address;
    uint32_t upgrade_rate_per_address;
    uint8_t address_prefix_v4; /* 1..32 */
    uint8_t address_prefix_v6; /* 1..64 */
    /* Inbound, per connection (io/sy_ratelimit.h): messages and payload
     * bytes per second (0: no limit), in bursts of *_burst (0: a second's
     * worth). Over them, reading pauses until they have room; rate_close:
     * the connection is closed (1008) once more than rate_grace_ms ahead. */
    uint64_t max_messages_per_s, message_burst;
    uint64_t max_bytes_per_s, byte_burst;
    bool rate_close;
    uint32_t rate_grace_ms;
    /* The work one connection may cause on its IO thread (io/sy_budget.h),
     * in units per second (0: no budget), in bursts of work_burst (0: a
     * second's worth). Over it, asks are refused `rate-limited`;
     * persisting, the connection is closed (1008). */
    uint64_t max_work_per_s, work_burst;
    size_t max_event_bytes;     /* per IO thread: stop reading clients while the owner
                                     holds this many bytes of undelivered events */
    bool upgrade_handler;       /* ask the owner about each upgrade (SY_EV_UPGRADE) */
    bool reclaim;               /* memory policy: give memory back after a drop (sy_reclaim.h) */
    bool compression;           /* negotiate permessage-deflate (sy_pmd.h, sy_deflate.h) */
    unsigned compress_level;    /* 1..9 */
    size_t compress_threshold;  /* payloads below this many bytes always go plain */
    uint32_t max_subscriptions; /* per connection, asked by a symphony.v2 client (io/sy_ask.h); 0: no limit */
    uint32_t max_pending;       /* per connection, a symphony.v2 client's asks waiting for the owner */
    bool tell_token_subscribes; /* the owner hears of each subscribe a token granted (SY_EV_ASK 'S'): presence */
    uint32_t history_size;      /* messages kept per topic by default; 0: no history (sy_history.h) */
    uint32_t history_ttl_s;     /* none kept longer; 0: no limit */
    size_t history_max_bytes;   /* all topics' history together; 0: no limit */

    /* The PROXY protocol (the listener's connections only): proxy_protocol
     * is a sy_proxy_mode_t; a header is accepted from the proxy_from_n
     * ranges of proxy_from (0: from any source). */
    uint8_t proxy_protocol;
    uint8_t proxy_from_n;
    sy_cidr_t proxy_from[SY_PROXY_FROM_MAX];
} sy_io_opts_t;

#endif
