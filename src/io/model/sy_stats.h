/*
 * sy_stats — the one list of an IO thread's counters.
 *
 * Every place that names the counters comes from SY_STATS_LIST: the IO
 * thread's live counters (sy_stats_live_t), the owner's snapshot
 * (sy_stats_t), the binding's JS object (binding/server_stats.c) and, through the
 * descriptors the binding exports, lib/metrics.js's Prometheus text and the
 * TypeScript types' field list. Adding a counter is one line here.
 *
 * X(field, js_name, agg, metric, type, scale, help):
 *   field    the C member;
 *   js_name  its name in server.stats() and stats().threads[i];
 *   agg      how the threads' values combine in server.stats(): SY_STAT_SUM
 *            or SY_STAT_MAX;
 *   metric   the Prometheus family name (base units, _total for counters);
 *   type     "counter" or "gauge";
 *   scale    factor from the field's unit to the metric's (1 or 1e-6 for
 *            microseconds to seconds);
 *   help     the Prometheus HELP text, which also documents the field.
 *
 * Threads: each counter has one writer, the IO thread that owns it, so the
 * updates below are a relaxed load and store (no atomic read-modify-write on
 * the fan-out path); any thread may read them (relaxed loads:
 * sy_stats_snapshot). sy_stats_live_init runs before the thread starts.
 *
 * Ownership: nothing is kept: the counters live inside the IO thread's
 * struct; a snapshot is written into the caller's sy_stats_t.
 *
 * Errors: none: nothing here can fail.
 */
#ifndef SY_STATS_H
#define SY_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define SY_STAT_SUM 0
#define SY_STAT_MAX 1

/* clang-format off */
#define SY_STATS_LIST(X) \
    X(connections, "connections", SY_STAT_SUM, "symphony_connections", "gauge", 1, \
      "Open WebSocket connections.") \
    X(opened, "opened", SY_STAT_SUM, "symphony_connections_opened_total", "counter", 1, \
      "Connections that completed the upgrade.") \
    X(closed, "closed", SY_STAT_SUM, "symphony_connections_closed_total", "counter", 1, \
      "Upgraded connections that closed.") \
    X(messages_in, "messagesIn", SY_STAT_SUM, "symphony_messages_received_total", "counter", 1, \
      "Messages received from clients.") \
    X(bytes_in, "bytesIn", SY_STAT_SUM, "symphony_received_bytes_total", "counter", 1, \
      "Payload bytes of the messages received from clients.") \
    X(messages_out, "messagesOut", SY_STAT_SUM, "symphony_messages_sent_total", "counter", 1, \
      "Frames queued to clients.") \
    X(bytes_out, "bytesOut", SY_STAT_SUM, "symphony_sent_bytes_total", "counter", 1, \
      "Bytes written to client sockets.") \
    X(dropped, "dropped", SY_STAT_SUM, "symphony_messages_dropped_total", "counter", 1, \
      "Messages skipped for slow consumers.") \
    X(slow_closes, "slowCloses", SY_STAT_SUM, "symphony_slow_consumer_closes_total", "counter", 1, \
      "Connections closed as slow consumers (1008).") \
    X(conflated, "conflated", SY_STAT_SUM, "symphony_messages_conflated_total", "counter", 1, \
      "Queued messages replaced by a newer message of their topic for a slow consumer (slowConsumer 'conflate').") \
    X(ask_subscribes, "askSubscribes", SY_STAT_SUM, "symphony_client_subscribes_total", "counter", 1, \
      "Subscribes asked by symphony.v2 clients and handed to the application (onSubscribe).") \
    X(ask_publishes, "askPublishes", SY_STAT_SUM, "symphony_client_publishes_total", "counter", 1, \
      "Publishes asked by symphony.v2 clients and handed to the application (onPublish, or published as their token granted).") \
    X(ask_requests, "askRequests", SY_STAT_SUM, "symphony_client_requests_total", "counter", 1, \
      "Requests from symphony.v2 clients handed to the application (onRequest).") \
    X(token_subscribes, "tokenSubscribes", SY_STAT_SUM, "symphony_token_subscribes_total", "counter", 1, \
      "Client subscribes granted by a token checked on an IO thread (no call into JavaScript).") \
    X(token_refused, "tokenRefused", SY_STAT_SUM, "symphony_token_refused_total", "counter", 1, \
      "Client subscribes and publishes refused by their token (invalid, expired, not for that topic).") \
    X(token_checks, "tokenChecks", SY_STAT_SUM, "symphony_token_checks_total", "counter", 1, \
      "Token signatures checked on IO threads (a token without kid tried with two keys: two).") \
    X(work_refused, "workRefused", SY_STAT_SUM, "symphony_work_refused_total", "counter", 1, \
      "Client asks refused (rate-limited) over their connection's maxWorkPerSecond.") \
    X(work_closes, "workCloses", SY_STAT_SUM, "symphony_work_closes_total", "counter", 1, \
      "Connections closed (1008) for asking on past maxWorkPerSecond after their refusals.") \
    X(ask_refused, "askRefused", SY_STAT_SUM, "symphony_client_asks_refused_total", "counter", 1, \
      "Client subscribes and publishes refused by the server's limits (maxSubscriptions, maxPending).") \
    X(ask_errors, "askErrors", SY_STAT_SUM, "symphony_client_ask_errors_total", "counter", 1, \
      "Malformed or unknown frames, and bad subscribe entries, from symphony.v2 clients (answered with an error or a refusal).") \
    X(handshake_rejects, "handshakeRejects", SY_STAT_SUM, "symphony_handshake_rejects_total", "counter", 1, \
      "Upgrade requests answered with an HTTP error.") \
    X(keep_alive, "keepAlive", SY_STAT_SUM, "symphony_http_keep_alive_connections", "gauge", 1, \
      "HTTP connections kept open after an answer, waiting for their next request (keep-alive).") \
    X(kept_answers, "keptAnswers", SY_STAT_SUM, "symphony_http_kept_answers_total", "counter", 1, \
      "HTTP requests answered on their IO thread with the connection kept open (keep-alive).") \
    X(protocol_errors, "protocolErrors", SY_STAT_SUM, "symphony_protocol_errors_total", "counter", 1, \
      "Connections failed for protocol errors (1002/1007/1009).") \
    X(control_waits, "controlWaits", SY_STAT_SUM, "symphony_control_waits_total", "counter", 1, \
      "Times a connection was not read while its control replies (pongs) waited to be written.") \
    X(fragment_closes, "fragmentCloses", SY_STAT_SUM, "symphony_fragment_closes_total", "counter", 1, \
      "Connections closed (1008) for a message in more than maxFragments frames.") \
    X(control_rate_closes, "controlRateCloses", SY_STAT_SUM, "symphony_control_rate_closes_total", "counter", 1, \
      "Connections closed (1008) for control frames over controlRate per second.") \
    X(rate_waits, "rateWaits", SY_STAT_SUM, "symphony_rate_waits_total", "counter", 1, \
      "Times a connection was not read while over maxMessagesPerSecond or maxBytesPerSecond.") \
    X(rate_closes, "rateCloses", SY_STAT_SUM, "symphony_rate_closes_total", "counter", 1, \
      "Connections closed (1008) over maxMessagesPerSecond or maxBytesPerSecond (rateLimit 'close').") \
    X(address_rejects, "addressRejects", SY_STAT_SUM, "symphony_address_rejects_total", "counter", 1, \
      "Connections refused (503) at maxConnectionsPerAddress.") \
    X(upgrade_rate_rejects, "upgradeRateRejects", SY_STAT_SUM, "symphony_upgrade_rate_rejects_total", "counter", 1, \
      "Connections refused (429) over upgradeRatePerAddress.") \
    X(timeouts, "timeouts", SY_STAT_SUM, "symphony_timeouts_total", "counter", 1, \
      "Handshake and idle timeouts.") \
    X(oom_closes, "oomCloses", SY_STAT_SUM, "symphony_oom_closes_total", "counter", 1, \
      "Connections closed (1011) for lack of memory.") \
    X(events_lost, "eventsLost", SY_STAT_SUM, "symphony_events_lost_total", "counter", 1, \
      "Events that could not be queued to JavaScript.") \
    X(command_runs, "commandRuns", SY_STAT_SUM, "symphony_command_runs_total", "counter", 1, \
      "Times an IO thread took its queue of commands (publishes, sends, the bus' deliveries): one wake-up each.") \
    X(accept_rejects, "acceptRejects", SY_STAT_SUM, "symphony_accept_rejects_total", "counter", 1, \
      "Connections closed at accept: out of file descriptors.") \
    X(poll_failures, "pollFailures", SY_STAT_SUM, "symphony_poll_failures_total", "counter", 1, \
      "Failed waits of the IO thread's poller (the thread stops after 100 in a row).") \
    X(io_uring, "ioUring", SY_STAT_SUM, "symphony_io_uring_threads", "gauge", 1, \
      "IO threads sending with io_uring (1 per thread; 0: send/sendmsg, forced or io_uring unavailable).") \
    X(uring_batches, "uringBatches", SY_STAT_SUM, "symphony_io_uring_batches_total", "counter", 1, \
      "Batches of sends submitted to io_uring, one io_uring_enter each.") \
    X(uring_sends, "uringSends", SY_STAT_SUM, "symphony_io_uring_sends_total", "counter", 1, \
      "Sends made in io_uring batches (one per connection per batch).") \
    X(reclaims, "reclaims", SY_STAT_SUM, "symphony_reclaims_total", "counter", 1, \
      "Memory reclaims run by the policy.") \
    X(reclaim_moved, "reclaimMoved", SY_STAT_SUM, "symphony_reclaim_moved_blocks_total", "counter", 1, \
      "Blocks moved out of sparse slabs by reclaims.") \
    X(reclaim_freed_bytes, "reclaimFreedBytes", SY_STAT_SUM, "symphony_reclaim_freed_bytes_total", "counter", 1, \
      "Arena pages given back by reclaims.") \
    X(reclaim_us, "reclaimMicros", SY_STAT_SUM, "symphony_reclaim_seconds_total", "counter", 1e-6, \
      "Time spent in reclaims.") \
    X(reclaim_us_max, "reclaimMaxMicros", SY_STAT_MAX, "symphony_reclaim_max_seconds", "gauge", 1e-6, \
      "The longest reclaim slice.") \
    X(tls_handshakes, "tlsHandshakes", SY_STAT_SUM, "symphony_tls_handshakes_total", "counter", 1, \
      "TLS handshakes completed.") \
    X(tls_failures, "tlsFailures", SY_STAT_SUM, "symphony_tls_failures_total", "counter", 1, \
      "TLS handshakes failed (not TLS, unsupported version, bad record, closed).") \
    X(tls_deferred, "tlsDeferred", SY_STAT_SUM, "symphony_tls_deferred_total", "counter", 1, \
      "TLS handshake steps left for the next loop turn (per-turn budget).") \
    X(proxy_headers, "proxyHeaders", SY_STAT_SUM, "symphony_proxy_headers_total", "counter", 1, \
      "Connections whose PROXY protocol header was accepted (LOCAL ones included).") \
    X(proxy_rejects, "proxyRejects", SY_STAT_SUM, "symphony_proxy_rejects_total", "counter", 1, \
      "Connections closed for a PROXY protocol header that was bad, truncated (the handshake timeout) or missing.") \
    X(proxy_untrusted, "proxyUntrusted", SY_STAT_SUM, "symphony_proxy_untrusted_total", "counter", 1, \
      "Connections closed for a PROXY protocol header from a source not in proxyProtocolFrom.") \
    X(deflate_connections, "deflateConnections", SY_STAT_SUM, "symphony_deflate_connections", "gauge", 1, \
      "Open connections that negotiated permessage-deflate.") \
    X(sse_connections, "sseConnections", SY_STAT_SUM, "symphony_sse_connections", "gauge", 1, \
      "Open event streams (Server-Sent Events; also counted in connections).") \
    X(sse_opened, "sseOpened", SY_STAT_SUM, "symphony_sse_opened_total", "counter", 1, \
      "Event streams opened (also counted in opened).") \
    X(sse_posts, "ssePosts", SY_STAT_SUM, "symphony_sse_posts_total", "counter", 1, \
      "Messages an event stream's client sent by POST.") \
    X(sse_rate_closes, "sseRateCloses", SY_STAT_SUM, "symphony_sse_rate_closes_total", "counter", 1, \
      "Event streams closed (1008) for POSTing over maxMessagesPerSecond or maxBytesPerSecond.") \
    X(compressed, "compressed", SY_STAT_SUM, "symphony_compressed_messages_total", "counter", 1, \
      "Messages compressed (once per publish, shared by its subscribers).") \
    X(compress_bytes_in, "compressBytesIn", SY_STAT_SUM, "symphony_compress_in_bytes_total", "counter", 1, \
      "Payload bytes given to the compressor.") \
    X(compress_bytes_out, "compressBytesOut", SY_STAT_SUM, "symphony_compress_out_bytes_total", "counter", 1, \
      "Compressed payload bytes it produced (kept only when smaller).") \
    X(compress_us, "compressMicros", SY_STAT_SUM, "symphony_compress_seconds_total", "counter", 1e-6, \
      "Time spent compressing.") \
    X(inflated, "inflated", SY_STAT_SUM, "symphony_inflated_messages_total", "counter", 1, \
      "Compressed client messages inflated.") \
    X(inflate_bytes_in, "inflateBytesIn", SY_STAT_SUM, "symphony_inflate_in_bytes_total", "counter", 1, \
      "Compressed payload bytes received from clients.") \
    X(replays, "replays", SY_STAT_SUM, "symphony_replays_total", "counter", 1, \
      "Resumes that replayed missed messages from history.") \
    X(replayed, "replayed", SY_STAT_SUM, "symphony_replayed_messages_total", "counter", 1, \
      "Messages queued by replays.") \
    X(recovered, "recovered", SY_STAT_SUM, "symphony_recoveries_total", "counter", 1, \
      "Resumes that recovered (replayed or already up to date).") \
    X(recovery_epoch, "recoveryFailedEpoch", SY_STAT_SUM, "symphony_recovery_failures_epoch_total", "counter", 1, \
      "Resumes that failed: the epoch was not the topic's.") \
    X(recovery_trimmed, "recoveryFailedTrimmed", SY_STAT_SUM, "symphony_recovery_failures_trimmed_total", \
      "counter", 1, "Resumes that failed: history no longer held the first missed message.") \
    X(recovery_future, "recoveryFailedFuture", SY_STAT_SUM, "symphony_recovery_failures_future_total", "counter", \
      1, "Resumes that failed: the position was past the last offset.") \
    X(recovery_too_large, "recoveryFailedTooLarge", SY_STAT_SUM, "symphony_recovery_failures_too_large_total", \
      "counter", 1, "Resumes that failed: the missed messages were over maxBackpressure.") \
    X(recovery_no_history, "recoveryFailedNoHistory", SY_STAT_SUM, "symphony_recovery_failures_no_history_total", \
      "counter", 1, "Resumes that failed: the topic keeps no history (or the connection is not symphony.v1).") \
    X(recovery_memory, "recoveryFailedMemory", SY_STAT_SUM, "symphony_recovery_failures_memory_total", "counter", \
      1, "Resumes that failed: out of memory.")
/* clang-format on */

/* An IO thread's counters, as it updates them. */
typedef struct sy_stats_live {
#define SY_STAT_LIVE_FIELD(field, js, agg, metric, type, scale, help) atomic_uint_fast64_t field;
    SY_STATS_LIST(SY_STAT_LIVE_FIELD)
#undef SY_STAT_LIVE_FIELD
    atomic_int arena;      /* this thread's jemalloc arena; -1: none (system build) */
    atomic_int conn_arena; /* the arena jemalloc says a connection's memory is in; -1: not seen */
} sy_stats_live_t;

/* A snapshot of one thread's counters (sy_server_thread_stats). */
typedef struct sy_stats {
#define SY_STAT_SNAP_FIELD(field, js, agg, metric, type, scale, help) uint64_t field;
    SY_STATS_LIST(SY_STAT_SNAP_FIELD)
#undef SY_STAT_SNAP_FIELD
    int arena;      /* the thread's jemalloc arena; -1: none */
    int conn_arena; /* where jemalloc says its connections live; -1: unknown */
} sy_stats_t;

/* Single-writer updates (the owning IO thread only). */
static inline void sy_stat_add(atomic_uint_fast64_t *c, uint64_t n) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}
static inline void sy_stat_inc(atomic_uint_fast64_t *c) { sy_stat_add(c, 1); }
static inline void sy_stat_dec(atomic_uint_fast64_t *c) { sy_stat_add(c, (uint64_t)-1); }
static inline void sy_stat_max(atomic_uint_fast64_t *c, uint64_t v) {
    if (v > atomic_load_explicit(c, memory_order_relaxed))
        atomic_store_explicit(c, v, memory_order_relaxed);
}

/* Initial values (every counter 0, arenas -1). */
void sy_stats_live_init(sy_stats_live_t *s);
/* Relaxed loads of every counter into out (any thread). */
void sy_stats_snapshot(const sy_stats_live_t *s, sy_stats_t *out);

#endif
