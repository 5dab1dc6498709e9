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
#include "io/sy_conn.h"
#include "io/sy_io_thread.h"

/* The request head has grown (c->rbuf): answers it once complete (a
 * stream's POST whose head was read: its body has, io/sy_post.h). */
void sy_upgrade_request(sy_io_t *io, sy_conn_t *c);
/* The owner's answer to an SY_EV_UPGRADE. accept takes over the accept's
 * topic references and interest counts (sy_accept_free) and extra (raw
 * header lines; may be NULL); refuse takes over response (the whole HTTP
 * response). Either does nothing but release them when the connection is
 * no longer waiting for the answer. */
void sy_upgrade_accept(sy_io_t *io, sy_conn_t *c, sy_accept_t *accept, sy_refbuf_t *extra);
void sy_upgrade_refuse(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response);
/* The one way a request is answered before it is anything else: the HTTP
 * response (taken over; NULL when it could not be made: the socket just
 * closes) is written, then the socket closed; refusal counts it in
 * handshake_rejects. sy_upgrade_reject makes the response: status and why. */
void sy_upgrade_respond(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response, bool refusal);
void sy_upgrade_reject(sy_io_t *io, sy_conn_t *c, int status, const char *why);

#endif
