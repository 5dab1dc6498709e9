/*
 * sy_server — a WebSocket fan-out server on its own IO threads.
 *
 * The owner thread (the JS thread, through binding/) creates a server,
 * starts it with sy_server_listen, and drives it with the calls below, each
 * of which copies its arguments and queues a command to the IO thread that
 * owns the connection (or to every IO thread with subscribers, for publish).
 * No call blocks on the network. Events come back in batches through the
 * batch callback, called on IO threads; the owner frees each batch with
 * sy_server_batch_done.
 *
 * Connections are named by 53-bit ids: generation << 32 | slot << 8 | thread.
 *
 * Threads: the owner thread (one thread: the JS thread) calls every
 * sy_server_* function; sy_server_bus_stats may also be called from any
 * thread. The batch callback runs on IO threads. Inside, the server's
 * commands reach the IO threads through io/sy_io.h's queue, which the bus
 * thread also feeds (a publish from Redis) and IO thread 0 (a socket dealt
 * to another thread).
 *
 * Ownership: every call copies what it is given (topic names, payloads,
 * headers, reasons) before it returns; sy_server_set_tls takes over the
 * caller's context reference when it returns 0, sy_server_set_bus takes
 * over o->tls (freed on failure too);
 * sy_server_adopt duplicates fd (the caller keeps its own). A topic handle
 * (sy_server_topic) is one reference, given back with
 * sy_server_topic_release. A batch handed to the callback is the owner's
 * until sy_server_batch_done. The server is the caller's, freed with
 * sy_server_destroy.
 *
 * Errors: base/sy_errors.h's convention; the calls that a user's mistake
 * can fail (create, listen, start, set_bus) also write a message in err.
 */
#ifndef SY_SERVER_H
#define SY_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "bus/sy_bus.h"
#include "io/model/sy_events.h"
#include "io/model/sy_io_opts.h"
#include "io/model/sy_stats.h"

#define SY_SERVER_MAX_THREADS 64
#define SY_TOPIC_MAX_LEN 1024
#define SY_ERRLEN 256

/* The server's options are its IO threads' (io/sy_io_opts.h). */
typedef sy_io_opts_t sy_server_opts_t;

/* flags of sy_server_publish and sy_server_send. */
#define SY_SEND_BINARY 1u /* a binary message (else text) */
#define SY_SEND_COMPRESS \
    2u                   /* may go compressed to the connections that negotiated
                               permessage-deflate (a server with compression, a payload
                               of at least compress_threshold bytes) */
#define SY_SEND_LOCAL 4u /* publish: this node only, not the bus */
#define SY_SEND_LATER \
    8u                             /* the IO threads' wake-up may wait for sy_server_wake (the
                               owner calls it at the end of its loop's turn): the turn's
                               messages reach each IO thread as one batch */
#define SY_SERVER_BUS_FLUSH_MS 500 /* shutdown waits this long for Redis to take the last publishes */

typedef struct sy_server sy_server_t;

/* NULL on failure (bad thread count, out of memory), with a message in err. */
sy_server_t *sy_server_create(const sy_server_opts_t *opts, sy_batch_fn on_batch, void *ctx, char *err, size_t errlen);
/* Binds one listening socket (IO thread 0 accepts and deals the sockets out
 * to every IO thread in turn) and starts the threads. 0, or an errno value
 * with a message in err. *port: the bound port. */
sy_err_t sy_server_listen(sy_server_t *s, uint16_t *port, char *err, size_t errlen);

/* Starts the IO threads without a listening socket (a server that shares
 * another's port): connections come only through sy_server_adopt. 0, or
 * an errno value with a message in err. */
sy_err_t sy_server_start(sy_server_t *s, char *err, size_t errlen);
/* Takes over a connected TCP socket whose upgrade request someone else has
 * read (Node's http server, then handleUpgrade): a duplicate of fd is
 * made (the caller still closes its own fd), and an IO thread handles
 * bytes[0..len) (the request head as received, then whatever followed it)
 * as if it had read them from the socket: the same checks and answers,
 * the owner's SY_EV_UPGRADE, the 101 written there. 0, or ENOTCONN (not
 * running), ENOTSOCK (fd is not a stream socket), EBADF, EMFILE, ENOMEM. */
sy_err_t sy_server_adopt(sy_server_t *s, int fd, const void *bytes, size_t len);

/* Makes the server one node of a bus over Redis (sy_bus.h): before it
 * starts (and before any topic exists). The bus thread starts with the IO
 * threads and stops first at shutdown. on_state: the bus' state changes,
 * on the bus thread. o->max_payload is the server's; o->tls is taken over
 * (freed on failure too). 0, or EINVAL with a message in err. */
sy_err_t sy_server_set_bus(sy_server_t *s, const sy_bus_opts_t *o, sy_bus_state_fn on_state, void *ctx, char *err,
                           size_t errlen);
/* The server's bus (sy_bus.h), or NULL. For the owner's calls of sy_bus.h
 * (sy_bus_set_ctl before the start; sy_bus_call, sy_bus_node_id). */
sy_bus_t *sy_server_bus(sy_server_t *s);
/* The bus' counters and state: false when the server has no bus. Any thread. */
bool sy_server_bus_stats(sy_server_t *s, sy_bus_stats_t *out);

/* Queues a message to every subscriber of topic; *subscribers: how many it
 * was queued toward on this node (as known now), and, with a bus and
 * without SY_SEND_LOCAL, to the bus for the other nodes (dropped and
 * counted there while it is not up). flags: SY_SEND_*. 0 or ENOMEM. It is
 * compressed (at most once) by the first IO thread with a subscriber that
 * negotiated permessage-deflate, not here: the owner's thread never waits
 * for a compression. */
sy_err_t sy_server_publish(sy_server_t *s, const char *topic, size_t topic_len, const void *data, size_t len,
                           unsigned flags, size_t *subscribers);
/* What a publish may carry besides its payload: meta for a registered
 * protocol's frame (Pusher's event name, at most SY_PUB_META_MAX bytes;
 * the bus carries it to the other nodes) and a connection to leave out
 * (exclude: its id, 0 none; exclude_node: the Pusher node of its socket id,
 * 0 this node's: only the node it names leaves it out). */
#define SY_PUB_META_MAX 1024
typedef struct sy_pub_extra {
    const void *meta;
    size_t meta_len;
    uint64_t exclude, exclude_node;
} sy_pub_extra_t;
/* sy_server_publish with extras (x: NULL none): also EINVAL for a meta
 * past SY_PUB_META_MAX. */
sy_err_t sy_server_publish_x(sy_server_t *s, const char *topic, size_t topic_len, const void *data, size_t len,
                             unsigned flags, const sy_pub_extra_t *x, size_t *subscribers);
/* The Pusher node of this server's socket ids (sy_server_set_pusher), or 0. */
uint64_t sy_server_pusher_node(const sy_server_t *s);
/* A topic handle: a reference to topic (made if it does not exist yet), for
 * sy_server_publish_topic, which then skips the lookup. The topic stays in
 * the registry while the handle lives. NULL: out of memory. The owner
 * releases it with sy_server_topic_release, before sy_server_destroy (after
 * it, the handle is gone with the registry: do not release it). */
sy_topic_t *sy_server_topic(sy_server_t *s, const char *topic, size_t topic_len);
void sy_server_topic_release(sy_server_t *s, sy_topic_t *t);
/* sy_server_publish to a topic handle. */
sy_err_t sy_server_publish_topic(sy_server_t *s, sy_topic_t *t, const void *data, size_t len, unsigned flags,
                                 size_t *subscribers);
/* Wakes the IO threads that have commands queued with SY_SEND_LATER. */
void sy_server_wake(sy_server_t *s);
/* These queue a command to the connection's IO thread: 0, ENOTCONN when the
 * id names no open connection (or no connection awaiting its upgrade
 * answer, for accept and refuse), or ENOMEM. */
sy_err_t sy_server_send(sy_server_t *s, uint64_t id, const void *data, size_t len, unsigned flags);
sy_err_t sy_server_subscribe(sy_server_t *s, uint64_t id, const char *topic, size_t topic_len);
/* The same for a client that had every message of topic up to offset since
 * in epoch: it gets the rest from history first, or is told why not
 * (io/sy_resume.h, SY_EV_RECOVERY). */
sy_err_t sy_server_subscribe_since(sy_server_t *s, uint64_t id, const char *topic, size_t topic_len, uint64_t epoch,
                                   uint64_t since);
/* The owner's answers to a symphony.v2 client's asks (io/sy_ask.h), each
 * dropped on the IO thread unless the ask rid is still pending there.
 * answer_subscribe: the client is subscribed to topic (from (epoch, since)
 * when resume) as by sy_server_subscribe_since, and its "subscribed" notice
 * carries extra[0..extra_len) (",\"rid\":N..." JSON members, at most
 * SY_V1_EXTRA_MAX bytes: EMSGSIZE). answer: the frame (text or binary)
 * data[0..len) goes as it is (a "c" notice or an "r" reply, made by the
 * owner). 0, ENOTCONN, ENOMEM. Owner only. */
sy_err_t sy_server_answer_subscribe(sy_server_t *s, uint64_t id, uint32_t rid, const char *topic, size_t topic_len,
                                    bool resume, uint64_t epoch, uint64_t since, const char *extra, size_t extra_len);
sy_err_t sy_server_answer(sy_server_t *s, uint64_t id, uint32_t rid, const void *data, size_t len, bool binary);
/* A topic's position: its history's epoch, its last offset, the oldest
 * kept and how many are kept. False when the topic does not exist or
 * keeps no history. Any thread (takes the history lock). */
bool sy_server_position(sy_server_t *s, const char *topic, size_t topic_len, uint64_t *epoch, uint64_t *last,
                        uint64_t *first, size_t *kept);
/* The history a topic handle's topic keeps (a handle's override: size 0
 * keeps none), ttl_s 0: no age limit. 0 or ENOMEM. */
sy_err_t sy_server_topic_history(sy_server_t *s, sy_topic_t *t, uint32_t size, uint32_t ttl_s);
/* Messages and bytes the history keeps now, all topics. */
void sy_server_history_totals(sy_server_t *s, size_t *count, size_t *bytes);
sy_err_t sy_server_unsubscribe(sy_server_t *s, uint64_t id, const char *topic, size_t topic_len);
/* Close handshake with code (a valid wire code) and reason (<= 123 bytes UTF-8). */
sy_err_t sy_server_end(sy_server_t *s, uint64_t id, unsigned code, const char *reason, size_t reason_len);
/* Hard close: no close frame, the socket is closed at once. */
sy_err_t sy_server_terminate(sy_server_t *s, uint64_t id);
/* Answers an SY_EV_UPGRADE. protocol: the chosen subprotocol (may be empty);
 * headers: extra response header lines, each ending in CRLF (validated by the
 * caller); topics: to subscribe before any message can be published to it;
 * compress: false declines a permessage-deflate offer the server would
 * accept (true changes nothing when there is none or compression is off). */
sy_err_t sy_server_accept(sy_server_t *s, uint64_t id, const char *protocol, size_t protocol_len, const char *headers,
                          size_t headers_len, const char *const *topics, const size_t *topic_lens, size_t ntopics,
                          bool compress);
sy_err_t sy_server_refuse(sy_server_t *s, uint64_t id, int status, const char *headers, size_t headers_len);
/* Event streams across nodes (io/sy_post.h): the answer to a POST the owner
 * was given as SY_EV_POST (202 once forwarded; 404, 503); a POST for name
 * to deliver: forwarded from another node (answer 0: the forwarding node
 * has answered), or this node's own POST connection answer, given as
 * SY_EV_POST with flag 2, which the stream's thread answers once it
 * delivered or not (202, 410, 429). ENOENT: not a stream of this node;
 * ENOTCONN: not running; a stream of this node that has closed does not
 * get it, and 0 is returned. */
sy_err_t sy_server_post_answer(sy_server_t *s, uint64_t id, int status);
/* A whole HTTP response (copied) to a request the owner was given to answer
 * (SY_EV_PUSHER 'u'), then the close; ENOTCONN: not running. */
sy_err_t sy_server_reply(sy_server_t *s, uint64_t id, const void *response, size_t len);
sy_err_t sy_server_post(sy_server_t *s, const char *name, size_t name_len, const void *data, size_t len, bool binary,
                        uint64_t answer);
#ifdef SY_TESTING
/* Testing builds: the name of stream id with any serial (80 characters,
 * no NUL: io/sy_post.h), as a stream that held the id before would have. */
void sy_server_stream_name(sy_server_t *s, uint64_t id, uint64_t serial, char *out);
#endif
void sy_server_node_tag(const sy_server_t *s, char out[17]);
/* True when id names a connection that is open now. */
bool sy_server_is_open(sy_server_t *s, uint64_t id);

/* Stats of IO thread i (i < threads). */
void sy_server_thread_stats(sy_server_t *s, unsigned i, sy_stats_t *out);
unsigned sy_server_threads(sy_server_t *s);
size_t sy_server_topic_count(sy_server_t *s);
/* Client addresses in the per-address table now (0 without per-address
 * limits): those with connections, or whose rate of new ones is not idle.
 * Any thread. */
size_t sy_server_address_count(sy_server_t *s);
/* Subscribers of topic on this node now (subscriptions made, counted at
 * the call that made them, less those ended); 0 for no such topic. Any
 * thread. */
unsigned sy_server_subscribers(sy_server_t *s, const char *topic, size_t topic_len);
/* Subscriptions of topic the IO threads have applied now (0 for no such
 * topic): the count whose 0 <-> 1 edges SY_EV_TOPIC reports. Any thread. */
unsigned sy_server_topic_applied(sy_server_t *s, const char *topic, size_t topic_len);
/* From now on (on) the IO threads report each topic's 0 <-> 1 edges of
 * that count as SY_EV_TOPIC events (io/sy_events.h), or no more (off).
 * Any thread; an edge racing the switch may or may not be reported (read
 * the count). */
void sy_server_topic_events(sy_server_t *s, bool on);
/* One topic of sy_server_topic_list: its name (in the list's block) and
 * subscribers. */
typedef struct sy_topic_count {
    const char *name;
    size_t len;
    unsigned subscribers;
    unsigned applied; /* subscriptions the IO threads have applied (sy_server_topic_applied) */
} sy_topic_count_t;
/* Every live topic and its subscribers, in one block the caller frees with
 * sy_free (*out NULL when there is none). 0 or ENOMEM. Any thread (the
 * registry's lock, held while the names are copied). */
sy_err_t sy_server_topic_list(sy_server_t *s, sy_topic_count_t **out, size_t *n);

struct sy_tls_ctx;
/* TLS (builds with SY_WITH_TLS; src/tls/sy_tls.h makes the context). Before
 * sy_server_listen: the server speaks TLS only (its transport becomes
 * sy_stream_tls_ops). After: a reload, atomic for new handshakes; live
 * connections keep the context they began with. Takes over the caller's
 * reference and drops the previous context's. 0, or (ctx not taken) EINVAL
 * when the server is listening without TLS or ctx is NULL, ENOTSUP in a
 * build without TLS, or the errno value of the first call's lock init. */
sy_err_t sy_server_set_tls(sy_server_t *s, struct sy_tls_ctx *ctx);
struct sy_tokens;
/* What the IO threads check clients' tokens with (auth/sy_tokens.h; builds
 * with SY_WITH_TLS): takes over the caller's reference (NULL: none, tokens
 * go to the owner's hook as any subscribe), drops the previous set's;
 * before or after sy_server_listen (a rotation: every token checked after
 * the call returns is checked with the new set). 0, or ENOTSUP in a build
 * without TLS (not taken).
 * Owner only. */
sy_err_t sy_server_set_tokens(sy_server_t *s, struct sy_tokens *tokens);
/* True when the server speaks TLS. */
bool sy_server_tls(sy_server_t *s);
/* Registers one more protocol (io/conn/sy_wire.h: a wire, chosen at the
 * request head by its Upgrade token, with its message protocol, or NULL:
 * raw) before the server listens or starts. 0, EBUSY (already started) or
 * ENOSPC (every slot taken). The tables must outlive the server. */
struct sy_wire;
struct sy_msgproto;
sy_err_t sy_server_add_protocol(sy_server_t *s, const struct sy_wire *wire, const struct sy_msgproto *proto);
/* Speaks Pusher (io/app/sy_pusher_conn.h) with apps (a
 * reference taken) and cfg (copied), before the server listens or starts:
 * 0 with *node (its socket ids' first part), EBUSY, or sy_pusher_srv_new's
 * and sy_server_add_protocol's errors (into err). */
struct sy_pusher_apps;
struct sy_pusher_cfg;
sy_err_t sy_server_set_pusher(sy_server_t *s, struct sy_pusher_apps *apps, const struct sy_pusher_cfg *cfg,
                              uint64_t *node, char *err, size_t errlen);

/* Gives back a batch the callback handed over. */
void sy_server_batch_done(sy_server_t *s, sy_batch_t *batch);

/* Begins shutdown: stop accepting, 1001 to every client, wait for close
 * replies up to deadline_ms (0: close everything now). Each IO thread sends
 * SY_EV_STOPPED as its last event. Idempotent. */
void sy_server_shutdown(sy_server_t *s, unsigned deadline_ms);
/* Joins the IO threads (they must be stopping). Blocks until they exit. */
void sy_server_join(sy_server_t *s);
/* Frees the server; the threads must be joined (or never started). */
void sy_server_destroy(sy_server_t *s);

#endif
