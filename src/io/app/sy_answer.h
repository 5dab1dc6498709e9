/*
 * sy_answer — the owner's answer to an upgrade it was asked about
 * (SY_EV_UPGRADE): accepted, the connection is subscribed to the accept's
 * topics (with what each tells the client: the resume decided while the
 * request, with the client's positions, is still in rbuf), then opened on
 * its wire (io/wire/sy_upgrade: the 101 or the stream's 200) with the
 * message protocol the answer chose; refused, the owner's response is
 * written and the socket closed.
 *
 * Threads: the connection's IO thread (its SY_CMD_ACCEPT or SY_CMD_REFUSE).
 *
 * Ownership: sy_answer_accept takes over the accept (freed with
 * sy_accept_free) and extra's reference (raw header lines; may be NULL);
 * sy_answer_refuse takes over response's reference (the whole HTTP
 * response), queued or released.
 *
 * Errors: none to the caller: either does nothing but release what it was
 * given when the connection no longer waits for the answer; out of memory
 * closes it (1006 to the owner).
 */
#ifndef SY_ANSWER_H
#define SY_ANSWER_H

#include "base/sy_refbuf.h"
#include "io/conn/sy_conn.h"

void sy_answer_accept(sy_io_t *io, sy_conn_t *c, sy_accept_t *accept, sy_refbuf_t *extra);
void sy_answer_refuse(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response);

#endif
