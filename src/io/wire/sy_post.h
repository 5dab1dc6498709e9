/*
 * sy_post — what an event stream's client says: its messages, POSTed to
 * the server's path with the stream's name (`?sy.stream=<name>`, told to
 * the stream in its first event, "sy.open"), reach the stream's 'message'
 * handler as a WebSocket client's messages do (docs/sse.md).
 *
 * The name is the server's tag, the stream's id, its serial and a MAC of
 * the three under the server's random key (HMAC-SHA-1, 128 bits kept):
 * nobody who did not read the stream can speak for it, and nothing is
 * stored per stream. The serial (a per-thread count, sy_io_ctx_t's
 * stream_serials) never repeats in the process, where connection ids do
 * (after about 2M connections on one thread: io/sy_slots.h): a name names
 * exactly one stream, and is dead from its stream's close on, even when
 * its id is given to another connection; a new process draws a new key,
 * so no name of an earlier one is taken.
 *
 * A POST is answered once the stream's IO thread has seen its body: 202
 * when the stream was open and it was handed to the owner as the stream's
 * message, 410 when the stream has closed (or its id now names another
 * connection), 429 when the message was over the stream's inbound rate
 * (not delivered: the stream is closed 1008, sy_conn_deliver). POSTs a
 * client sends one after another (each after the last one's answer)
 * reach the handler in that order. The head is parsed once:
 * a body that arrives after it is awaited with what the head said
 * (sy_post_wait_t in c->post), never by parsing the head again.
 *
 * A name of another node (its tag is not this node's: with a bus, a POST
 * that a load balancer sent elsewhere) goes to the owner as SY_EV_POST
 * (the POST's connection waits, as an upgrade does): the owner forwards it
 * over the bus to its node, which delivers it (sy_server_post), and
 * answers 202 once Redis took it (sy_server_post_answer), so that POSTs
 * sent one after another keep their order across nodes too; the stream's
 * node drops it when the stream has closed (the answer went already).
 * Without a bus (shared->posts_forwarded false), 404. With a bus, a POST
 * for this node's own stream goes to the owner too (SY_EV_POST, flag 2):
 * one forwarded before it (answered 202 before this one was sent) may
 * still be on its way from Redis to this node's bus thread, a thread of
 * its own; the owner fences the bus' control channel first
 * (sy_bus_ctl_fence) and then gives it back (sy_server_post), queued to
 * the stream's thread behind the forwarded ones, which answers it.
 *
 * A 202 keeps the connection when its client allows it (HTTP/1.1
 * keep-alive, sy_reply_later): the POST's bytes are dropped from c->rbuf
 * once its body is read (c->post_keep: its client allows keeping; nothing
 * may follow them in c->rbuf), and the connection reads its next request
 * once answered.
 *
 * Refusals are HTTP answers, then the socket closes: 411 without a
 * Content-Length (or with a Transfer-Encoding), 413 over maxPayload, 400
 * for text that is not UTF-8, 404 for a name that is not one of this
 * server's streams, 410 for a stream that has closed.
 *
 * Threads: the IO thread the POST arrived on (sy_post_request,
 * sy_post_body, sy_post_answered), and the stream's (sy_post_deliver).
 *
 * Ownership: sy_post_deliver takes no reference of the command's body.
 *
 * Errors: none to the caller: a request that cannot be served is answered
 * with its HTTP error.
 */
#ifndef SY_POST_H
#define SY_POST_H

#include <stdbool.h>
#include <stdint.h>

#include "io/conn/sy_conn.h"
#include "io/loop/sy_io_thread.h"
#include "io/loop/sy_loop.h"
#include "proto/sy_http.h"

#define SY_POST_PARAM "sy.stream"
#define SY_POST_NAME_LEN 80 /* 16 hex digits of the node's tag, 16 of id, 16 of serial, 32 of MAC */

/* The server's key and tag (sy_io_shared_t.stream_key, node_tag): set
 * once, before the threads. */
void sy_post_key_init(uint8_t key[32], uint64_t *tag);
/* The name of this node's stream (id, serial) into out (SY_POST_NAME_LEN
 * characters, no NUL). */
void sy_post_name(const sy_io_shared_t *sh, uint64_t id, uint64_t serial, char out[SY_POST_NAME_LEN]);
/* The node tag a name names (its first 16 hex digits): false when it has none. */
bool sy_post_name_node(const char *name, size_t len, uint64_t *tag);
/* The stream of this node a name names, when its MAC is right: its id and
 * serial (whether it is still open is for its thread to say). */
bool sy_post_name_stream(const sy_io_shared_t *sh, const char *name, size_t len, uint64_t *id, uint64_t *serial);
/* A new event stream c (on its thread, before its name is told): its serial. */
void sy_post_stream_opened(sy_io_t *io, sy_conn_t *c);

/* True when req is a POST for a stream (it has the sy.stream parameter):
 * then it was answered, or waits (its state in c->post, the head consumed)
 * for the rest of its body, or for the stream's thread. */
bool sy_post_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head);
/* More of a waiting POST's body (c->post != NULL) was read. */
void sy_post_body(sy_io_t *io, sy_conn_t *c);

/* The answer to a POST (202, or 404/410/429/503 with why): NULL when out of memory. */
sy_refbuf_t *sy_post_answer(int status);

/* On the stream's thread: the SY_CMD_POSTED cmd for stream c (NULL: no
 * longer open): delivered as its message when c is the stream the name
 * named and is open; the POST (cmd->offset, when not 0) answered 202,
 * 410 or 429 on its own thread. */
void sy_post_deliver(sy_io_t *io, sy_conn_t *c, const sy_cmd_t *cmd);
/* On the POST's thread: the stream's thread's answer (SY_CMD_POST_ANSWER). */
void sy_post_answered(sy_io_t *io, sy_conn_t *c, int status);

#ifdef SY_TESTING
/* Testing builds: how many POST heads for a stream were parsed (whole). */
unsigned sy_post_heads_read(void);
#endif

#endif
