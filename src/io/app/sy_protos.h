/*
 * sy_protos — symphony's message protocols as tables (io/conn/sy_wire.h):
 * raw (bare payloads), symphony.v1 (positions, notices, resumes: its
 * direct messages carry the "d" header), symphony.v2 (v1, and the client
 * asks: io/app/sy_ask); and the hooks io/app gives the connection's core
 * (admission by address, a closing connection's subscriptions, asks and
 * address count, conflation's reset). The thread registers them
 * (io/sy_io).
 *
 * Threads: the tables are immutable; their operations run on the
 * connection's IO thread.
 *
 * Ownership: static tables; direct_frame returns a new frame (one
 * reference, the caller's).
 *
 * Errors: direct_frame returns NULL out of memory; the hooks do not fail
 * (admit answers whether the connection may stay).
 */
#ifndef SY_PROTOS_H
#define SY_PROTOS_H

#include "io/conn/sy_conn.h"

extern const sy_msgproto_t sy_raw_proto; /* SY_PROTO_RAW */
extern const sy_msgproto_t sy_v1_proto;  /* SY_PROTO_V1 */
extern const sy_msgproto_t sy_v2_proto;  /* SY_PROTO_V2 */
extern const sy_conn_hooks_t sy_app_hooks;

#endif
