/*
 * sy_io_opts — what a server's IO threads are told: one struct, made from
 * one list of the options (SY_IO_OPTS_LIST, below, which the binding and
 * lib/ read too), filled by the owner before the threads start
 * (sy_server_create copies it; the server's public name for it is
 * sy_server_opts_t) and read-only after.
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

/* The kinds of option (SY_IO_OPTS_LIST's kind): an integer within
 * [min, max]; a boolean; one of the names of `values` (space-separated),
 * stored as its index; a string (NULL for null), copied. */
typedef enum { SY_OPT_UINT = 1, SY_OPT_BOOL, SY_OPT_ENUM, SY_OPT_STRING } sy_opt_kind_t;
/* An option without a default: its owner always gives it (lib/ computes it:
 * threads from the CPUs, maxFragments from maxPayload, a burst from its rate). */
#define SY_OPT_NODEF INT64_MIN

/*
 * The options, once: sy_io_opts_t's fields are made from this list, and the
 * binding decodes its JS options (binding/server_opts.c) and exports them to
 * lib/ (binding.optionSchema: validation, defaults and messages in
 * lib/options.js) from it. A row:
 *   X(type, field, name, path, kind, def, min, max, values, help)
 * type/field: the C field; name: the binding's key for it; path: the public
 * option it comes from (dots for the parts of an object option:
 * "history.size"), "" where lib/ derives it from other options; def: its
 * default (SY_OPT_NODEF: none; for a part of an object option, its default
 * when the object is given); min/max: the range of an SY_OPT_UINT; values:
 * an SY_OPT_ENUM's names, or an SY_OPT_STRING's default (def 1; def 0: the
 * default is null); help: what it is, in a few words. The names the rows
 * use (SY_SERVER_MAX_THREADS, SY_DEFLATE_LEVEL_*, SY_WORK_*) are defined
 * where the list is read with them (sy_server.h, io/sy_deflate.h,
 * io/sy_budget.h); the struct needs only the first two columns.
 */
/* clang-format off */
#define SY_IO_OPTS_LIST(X) \
    X(const char *, host, "host", "host", SY_OPT_STRING, 1, 0, 0, "0.0.0.0", \
      "numeric address or name to bind") \
    X(uint16_t, port, "port", "port", SY_OPT_UINT, 0, 0, 65535, "", "port to listen on; 0: any free port") \
    X(const char *, path, "path", "path", SY_OPT_STRING, 0, 0, 0, "", \
      "only this path (before '?') upgrades; null: any") \
    X(unsigned, threads, "threads", "threads", SY_OPT_UINT, SY_OPT_NODEF, 1, SY_SERVER_MAX_THREADS, "", \
      "IO threads") \
    X(size_t, max_payload, "maxPayload", "maxPayload", SY_OPT_UINT, 1 << 20, 1, (int64_t)1 << 40, "", \
      "largest message accepted from a client, in bytes") \
    X(uint32_t, max_fragments, "maxFragments", "maxFragments", SY_OPT_UINT, SY_OPT_NODEF, 0, UINT32_MAX, "", \
      "frames in one client message; more: close 1008. 0: no limit") \
    X(uint32_t, control_rate, "controlRate", "controlRate", SY_OPT_UINT, 100, 0, 1000000, "", \
      "pings and pongs per second per connection, in bursts of as many; more: close 1008. 0: no limit") \
    X(size_t, max_backpressure, "maxBackpressure", "maxBackpressure", SY_OPT_UINT, 1 << 20, 1, (int64_t)1 << 40, "", \
      "bytes queued to one connection before slowConsumer applies") \
    X(sy_slow_policy_t, slow_consumer, "slowConsumer", "slowConsumer", SY_OPT_ENUM, SY_SLOW_DROP, 0, 0, \
      "drop close conflate", "what a connection over maxBackpressure gets") \
    X(unsigned, idle_timeout_s, "idleTimeout", "idleTimeout", SY_OPT_UINT, 120, 0, 86400, "", \
      "seconds without a byte from the client before it is closed; 0: none") \
    X(unsigned, handshake_timeout_s, "handshakeTimeout", "handshakeTimeout", SY_OPT_UINT, 10, 1, 86400, "", \
      "seconds a client has to complete its upgrade request") \
    X(unsigned, close_timeout_s, "closeTimeout", "closeTimeout", SY_OPT_UINT, 5, 1, 3600, "", \
      "seconds to wait for the peer's close reply") \
    X(size_t, max_head_bytes, "maxHeaderSize", "maxHeaderSize", SY_OPT_UINT, 8192, 256, 1 << 20, "", \
      "bytes of the request line and headers") \
    X(unsigned, max_headers, "maxHeaders", "maxHeaders", SY_OPT_UINT, 64, 1, 256, "", "headers of a request") \
    X(unsigned, backlog, "backlog", "backlog", SY_OPT_UINT, 511, 1, 65535, "", "the listen() backlog") \
    X(uint32_t, max_connections, "maxConnections", "maxConnections", SY_OPT_UINT, 0, 0, UINT32_MAX, "", \
      "open connections; 0: no limit beyond the fd limit") \
    X(uint32_t, max_conns_per_address, "maxConnectionsPerAddress", "maxConnectionsPerAddress", SY_OPT_UINT, 0, 0, \
      UINT32_MAX, "", "open connections per client address; over it: 503. 0: no limit") \
    X(uint32_t, upgrade_rate_per_address, "upgradeRatePerAddress", "upgradeRatePerAddress", SY_OPT_UINT, 0, 0, \
      1000000, "", "new connections per second per address, in bursts of as many; over it: 429. 0: no limit") \
    X(uint8_t, address_prefix_v4, "addressPrefixV4", "addressPrefix.v4", SY_OPT_UINT, 32, 1, 32, "", \
      "the bits of an IPv4 address that name a client") \
    X(uint8_t, address_prefix_v6, "addressPrefixV6", "addressPrefix.v6", SY_OPT_UINT, 64, 1, 64, "", \
      "the bits of an IPv6 address that name a client") \
    X(uint64_t, max_messages_per_s, "maxMessagesPerSecond", "maxMessagesPerSecond", SY_OPT_UINT, 0, 0, \
      (int64_t)1 << 32, "", "messages per second from one connection; 0: no limit") \
    X(uint64_t, message_burst, "messageBurst", "messageBurst", SY_OPT_UINT, SY_OPT_NODEF, 1, (int64_t)1 << 38, "", \
      "the burst of maxMessagesPerSecond; null: a second's worth") \
    X(uint64_t, max_bytes_per_s, "maxBytesPerSecond", "maxBytesPerSecond", SY_OPT_UINT, 0, 0, (int64_t)1 << 32, \
      "", "payload bytes per second from one connection; 0: no limit") \
    X(uint64_t, byte_burst, "byteBurst", "byteBurst", SY_OPT_UINT, SY_OPT_NODEF, 1, (int64_t)1 << 38, "", \
      "the burst of maxBytesPerSecond; null: a second's worth") \
    X(bool, rate_close, "rateLimit", "rateLimit", SY_OPT_ENUM, 0, 0, 0, "pause close", \
      "over the rate: stop reading the connection, or close it (1008)") \
    X(uint32_t, rate_grace_ms, "rateLimitGrace", "rateLimitGrace", SY_OPT_UINT, 1000, 0, 60000, "", \
      "with rateLimit 'close': ms of its rate a connection may be ahead before it is closed") \
    X(uint64_t, max_work_per_s, "maxWorkPerSecond", "maxWorkPerSecond", SY_OPT_UINT, SY_WORK_DEFAULT_PER_S, 0, \
      SY_WORK_MAX_PER_S, "", "units of work per second one connection may cause on its IO thread; 0: no budget") \
    X(uint64_t, work_burst, "workBurst", "workBurst", SY_OPT_UINT, SY_OPT_NODEF, 1, (int64_t)1 << 38, "", \
      "the burst of maxWorkPerSecond; null: a second's worth") \
    X(size_t, max_event_bytes, "maxEventBytes", "maxEventBytes", SY_OPT_UINT, 64 << 20, 65536, (int64_t)1 << 40, \
      "", "bytes of undelivered events per IO thread before it stops reading its clients") \
    X(bool, upgrade_handler, "upgradeHandler", "", SY_OPT_BOOL, 0, 0, 0, "", \
      "ask the owner about each upgrade (onUpgrade)") \
    X(bool, reclaim, "reclaim", "reclaim", SY_OPT_BOOL, 1, 0, 0, "", \
      "give memory back after a drop in connections") \
    X(bool, compression, "compression", "compression", SY_OPT_BOOL, 0, 0, 0, "", \
      "negotiate permessage-deflate") \
    X(unsigned, compress_level, "compressLevel", "compression.level", SY_OPT_UINT, 6, SY_DEFLATE_LEVEL_MIN, \
      SY_DEFLATE_LEVEL_MAX, "", "the deflate level") \
    X(size_t, compress_threshold, "compressThreshold", "compression.threshold", SY_OPT_UINT, 128, 0, \
      (int64_t)1 << 40, "", "payloads below this many bytes go plain") \
    X(uint32_t, max_subscriptions, "maxSubscriptions", "maxSubscriptions", SY_OPT_UINT, 1024, 0, 1 << 24, "", \
      "subscriptions per connection; 0: no limit") \
    X(uint32_t, max_pending, "maxPending", "maxPending", SY_OPT_UINT, 16, 1, 65535, "", \
      "a connection's asks waiting for a hook at once") \
    X(bool, tell_token_subscribes, "tellTokenSubscribes", "", SY_OPT_BOOL, 0, 0, 0, "", \
      "the owner hears of each subscribe a token granted (presence)") \
    X(uint32_t, history_size, "historySize", "history.size", SY_OPT_UINT, 100, 0, 1 << 24, "", \
      "messages kept per topic; 0: no history") \
    X(uint32_t, history_ttl_s, "historyTtl", "history.ttl", SY_OPT_UINT, 300, 0, 31536000, "", \
      "seconds a message is kept; 0: no limit") \
    X(size_t, history_max_bytes, "historyMaxBytes", "history.maxBytes", SY_OPT_UINT, 64 << 20, 0, \
      (int64_t)1 << 40, "", "bytes of all topics' history together; 0: no limit") \
    X(uint8_t, proxy_protocol, "proxyProtocol", "", SY_OPT_UINT, SY_PROXY_OFF, 0, 2, "", \
      "the PROXY protocol: a sy_proxy_mode_t")
/* clang-format on */

/* What the IO threads are told. The fields of the list, with their
 * meaning in its help; then the sources a PROXY header is accepted from
 * (proxy_from_n ranges of proxy_from; 0: any source), which the binding
 * decodes by hand. */
typedef struct sy_io_opts {
#define SY_IO_OPTS_FIELD(type, field, name, path, kind, def, min, max, values, help) type field;
    SY_IO_OPTS_LIST(SY_IO_OPTS_FIELD)
#undef SY_IO_OPTS_FIELD
    uint8_t proxy_from_n;
    sy_cidr_t proxy_from[SY_PROXY_FROM_MAX];
} sy_io_opts_t;

#endif
