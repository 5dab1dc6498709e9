/*
 * sy_reply — the one way a request is answered before it is anything else
 * (refused at the head, a POST's answer): the HTTP response is written,
 * then the socket closed.
 *
 * Threads: the connection's IO thread.
 *
 * Ownership: sy_reply takes over response (NULL when it could not be made:
 * the socket just closes).
 *
 * Errors: none to the caller: out of memory closes the connection.
 */
#ifndef SY_REPLY_H
#define SY_REPLY_H

#include <stdbool.h>

#include "base/sy_refbuf.h"
#include "io/conn/sy_conn.h"

/* Writes response, then closes; refusal counts it in handshake_rejects. */
void sy_reply(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response, bool refusal);
/* The same with an HTTP error response made here: status and why. */
void sy_reply_error(sy_io_t *io, sy_conn_t *c, int status, const char *why);

#endif
