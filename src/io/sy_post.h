/*
 * sy_post — what an event stream's client says: its messages, POSTed to
 * the server's path with the stream's name (`?sy.stream=<name>`, told to
 * the stream in its first event, "sy.open"), reach the stream's 'message'
 * handler as a WebSocket client's messages do (docs/sse.md).
 *
 * The name is the stream's id and a MAC of it under the server's random
 * key (HMAC-SHA-1, 128 bits kept): nobody who did not read the stream can
 * speak for it, and nothing is stored per stream. A POST is answered 202
 * once its body is queued to the stream's IO thread, which hands it to
 * the owner as the stream's message if the stream is still open. POSTs a
 * client sends one after another (each after the last one's answer) reach
 * the handler in that order.
 *
 * A name of another node (its tag is not this node's: with a bus, a POST
 * that a load balancer sent elsewhere) goes to the owner as SY_EV_POST
 * (the POST's connection waits, as an upgrade does): the owner forwards it
 * over the bus to its node, which delivers it (sy_server_post), and
 * answers 202 once Redis took it (sy_server_post_answer), so that POSTs
 * sent one after another keep their order across nodes too. Without a bus
 * (shared->posts_forwarded false), 404.
 *
 * Refusals are HTTP answers, then the socket closes: 411 without a
 * Content-Length (or with a Transfer-Encoding), 413 over maxPayload, 400
 * for text that is not UTF-8, 404 for a name that is not one of this
 * server's streams.
 *
 * Threads: the IO thread the POST arrived on (sy_post_request), and the
 * stream's (sy_post_deliver).
 *
 * Ownership: sy_post_deliver takes no reference of body.
 *
 * Errors: none to the caller: a request that cannot be served is answered
 * with its HTTP error.
 */
#ifndef SY_POST_H
#define SY_POST_H

#include <stdbool.h>
#include <stdint.h>

#include "io/sy_conn.h"
#include "io/sy_io_thread.h"
#include "proto/sy_http.h"

#define SY_POST_PARAM "sy.stream"
#define SY_POST_NAME_LEN 64 /* 16 hex digits of the node's tag, 16 of id, 32 of MAC */

/* The server's key and tag (sy_io_shared_t.stream_key, node_tag): set
 * once, before the threads. */
void sy_post_key_init(uint8_t key[32], uint64_t *tag);
/* The name of this node's stream id into out (SY_POST_NAME_LEN characters, no NUL). */
void sy_post_name(const sy_io_shared_t *sh, uint64_t id, char out[SY_POST_NAME_LEN]);
/* The node tag a name names (its first 16 hex digits): false when it has none. */
bool sy_post_name_node(const char *name, size_t len, uint64_t *tag);
/* The stream of this node a name names, when its MAC is right: its id. */
bool sy_post_name_stream(const sy_io_shared_t *sh, const char *name, size_t len, uint64_t *id);

/* True when req is a POST for a stream (it has the sy.stream parameter):
 * then it was answered, or waits for the rest of its body in c->rbuf. */
bool sy_post_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, long head);

/* The answer to a POST (202, or 404/503 with why): NULL when out of memory. */
sy_refbuf_t *sy_post_answer(int status);

/* On the stream's thread: body[0..len) is stream c's message. */
void sy_post_deliver(sy_io_t *io, sy_conn_t *c, bool binary, const uint8_t *body, size_t len);

#endif
