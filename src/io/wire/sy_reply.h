/*
 * sy_reply — the one way a request is answered before it is anything else
 * (refused at the head, a POST's answer, a registered protocol's HTTP
 * request: Pusher's HTTP API): the HTTP response is written, then the
 * socket closed; or, for a request answered whole on its IO thread
 * (sy_reply_request), or later (sy_reply_later: a stream's POST), whose
 * client allows it, HTTP/1.1 keep-alive: the
 * response is written without its "Connection: close", the request's head
 * and body are dropped from c->rbuf and the connection goes back to
 * reading the next request head on the same socket (sy_upgrade_request
 * answers the ones already read, pipelined, in order), with the head's
 * deadline (handshakeTimeout) renewed: an idle kept connection closes
 * when it passes. A kept connection counts toward maxConnections as
 * every socket does, and in stats.keep_alive while it waits.
 *
 * Threads: the connection's IO thread.
 *
 * Ownership: sy_reply and sy_reply_request take over response (NULL when
 * it could not be made: the socket just closes). The response must be
 * the caller's alone (just made): sy_reply_request rewrites it in place
 * (sy_http_keep_alive_response). req points into c->rbuf, which stays
 * the connection's.
 *
 * Errors: none to the caller: out of memory closes the connection.
 */
#ifndef SY_REPLY_H
#define SY_REPLY_H

#include <stdbool.h>

#include "base/sy_refbuf.h"
#include "io/conn/sy_conn.h"
#include "proto/sy_http.h"

/* Writes response, then closes; refusal counts it in handshake_rejects. */
void sy_reply(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response, bool refusal);
/* The same with an HTTP error response made here: status and why. */
void sy_reply_error(sy_io_t *io, sy_conn_t *c, int status, const char *why);
/* A successful answer (response, written with "Connection: close") to
 * req, whose head and body are the first used bytes of c->rbuf: kept
 * alive when the client allows it (sy_http_request_keeps_alive) and the
 * response has a kept form (sy_http_keep_alive_response); else sy_reply. */
void sy_reply_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, size_t used, sy_refbuf_t *response);
/* The same for a request answered after its connection waited
 * (SY_CONN_UPGRADING: a stream's POST, io/wire/sy_post.h), whose bytes the
 * caller dropped from c->rbuf when it was read: kept alive when keep (its
 * client is HTTP/1.1 and allows it), it is no refusal, and nothing came
 * after it (c->rlen 0); else sy_reply (refusal as there). */
void sy_reply_later(sy_io_t *io, sy_conn_t *c, bool keep, sy_refbuf_t *response, bool refusal);
/* A kept connection's next request head is whole: it no longer waits
 * (stats.keep_alive). Called by the head's wire for every head. */
void sy_reply_next(sy_io_t *io, sy_conn_t *c);
/* c, in SY_CONN_HTTP, closes: its count in stats.keep_alive, if any, is
 * given back (the app floor's closing hook calls it). */
void sy_reply_closing(sy_io_t *io, sy_conn_t *c);

#endif
