/*
 * sy_ws — the WebSocket wire (io/conn/sy_wire.h): frames in (parsed,
 * unmasked, UTF-8 checked as they arrive, fragments assembled, inflated
 * within maxPayload), control frames answered (pongs, the close
 * handshake), the inbound limits (maxFragments, controlRate, the
 * message and byte rates), idle pings; whole messages go to the
 * connection's message protocol (sy_conn_message). Frames out are made by
 * proto/sy_ws_msg and queued by the core.
 *
 * Threads: the connection's IO thread.
 *
 * Ownership: the table is static; what a frame needs past the read is
 * kept in the connection's receive or message buffer (c->rbuf, c->mbuf).
 *
 * Errors: a protocol error closes the connection with RFC 6455's code
 * (1002, 1007, 1009), after the owner's replies to what came before
 * (sy_conn_protocol_error); a limit closes it 1008; out of memory 1011.
 */
#ifndef SY_WS_H
#define SY_WS_H

#include "io/conn/sy_conn.h"

/* The table the thread registers as SY_WIRE_WS. */
extern const sy_wire_t sy_ws_wire;

#endif
