/*
 * sy_upgrade — the HTTP phase of a connection: parses the upgrade request
 * (sy_http), checks it (sy_handshake), asks the owner when the server has an
 * upgrade handler (SY_EV_UPGRADE, then its accept or refuse command), writes
 * the 101 or an HTTP error, and hands an accepted connection to sy_conn
 * (sy_conn_opened).
 *
 * Every refusal is an HTTP response written before the socket closes
 * (handshake_rejects counts them): 400/404/426/431/503 from here, the owner's
 * own status from sy_upgrade_refuse.
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: sy_upgrade_accept takes over the accept (freed with
 * sy_accept_free) and extra's reference; sy_upgrade_refuse takes over
 * response's reference, queued to the connection or released. The request
 * head stays in c->rbuf, the connection's.
 *
 * Errors: none to the caller: a bad request is answered with an HTTP error
 * and the connection closed; out of memory closes it (1006 to the owner).
 */
#ifndef SY_UPGRADE_H
#define SY_UPGRADE_H

#include "base/sy_refbuf.h"
#include "io/conn/sy_conn.h"
#include "io/wire/sy_reply.h"
#include "proto/sy_http.h"

/* The request head has grown (c->rbuf): answers it once complete (a
 * stream's POST whose head was read: its body has, io/sy_post.h). */
void sy_upgrade_request(sy_io_t *io, sy_conn_t *c);
/* For the owner's answer (io/app/sy_answer.h), which opens what this
 * floor checked: */
/* What the 101 takes of a connection's maxBackpressure, less the owner's
 * extra headers: a replay at the accept keeps this much room for it. */
#define SY_UPGRADE_RESPONSE_ROOM 512
/* Parses the request head at the start of c->rbuf with the server's limits
 * into req (headers: SY_MAX_HEADERS_CAP entries): sy_http's result. */
#define SY_MAX_HEADERS_CAP 256
long sy_upgrade_parse_head(const sy_io_t *io, const sy_conn_t *c, sy_http_request_t *req, sy_http_header_t *headers);
/* Consumes the request head (head bytes) from c->rbuf: what follows it
 * moves to the start. */
void sy_upgrade_consume_head(sy_conn_t *c, size_t head);
/* What a stream reads its positions from: the Last-Event-ID its client
 * sent back (made a query in *heap, freed by the caller), else its URL's
 * sy.since parameters. NULL, or why not when the header is malformed. */
const char *sy_upgrade_stream_positions(const sy_http_request_t *req, const char **target, size_t *len, char **heap);
/* The message protocol the chosen subprotocol p[0..n) names (registered
 * ones by their name), else raw. */
void sy_upgrade_set_protocol(sy_io_t *io, sy_conn_t *c, const char *p, size_t n);
/* Queues the 101 (with symphony.v2, the greeting) and opens c on the
 * WebSocket wire; c->rbuf holds the bytes that followed the request. */
void sy_upgrade_open_ws(sy_io_t *io, sy_conn_t *c, const char *accept, const char *proto, size_t proto_len,
                        const char *owner_extra, size_t owner_extra_len);
/* Queues an event stream's 200 (with the owner's extra lines) and
 * "sy.open", and opens it speaking symphony.v2 (v2) or v1. */
void sy_upgrade_open_stream(sy_io_t *io, sy_conn_t *c, const char *extra, size_t extra_len, bool v2);
/* The table the thread registers as SY_WIRE_HEAD. */
extern const sy_wire_t sy_head_wire;

#endif
