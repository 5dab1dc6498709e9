/*
 * sy_errors — how src/ reports failure: one convention, for every module.
 *
 *  1. An operation that can fail returns int: 0 on success or a positive
 *     errno value (ENOMEM, EINVAL, ENOTCONN, ...), as pthread_* do. Never -1
 *     with errno, never a negative errno. Results come back through
 *     pointers (sy_poll_wait's count, sy_topic_add_sub's index).
 *  2. A constructor returns a pointer, NULL when it fails; the header says
 *     why it can fail (almost always: out of memory). sy_poll_create alone
 *     also sets errno, because several system calls can fail inside it.
 *  3. A question returns bool, and its name says what true means
 *     (sy_io_is_open, sy_outq_empty). So does an attempt that may
 *     legitimately not happen and is not an error (sy_conn_push: queued or
 *     not, by the slow-consumer policy).
 *  4. A step that waits on a peer returns a state enum of its module
 *     (sy_stream_rc_t, sy_tls_want_t), never an int.
 *  5. The parsers (sy_http, sy_ws_frame, sy_utf8) return long: bytes
 *     consumed (>= 0), SY_*_PARTIAL, or a negative error code of their
 *     own, which maps to an HTTP status or close code and a text.
 *  6. Counts and sizes are size_t or uint*_t, never int.
 *
 * One named exception: sy_handshake_check returns 0 or the HTTP status to
 * answer (400, 405, 426, 505), since the status is the answer.
 *
 * A failure the library cannot go on from is reported, never an abort (see
 * sy_io.h for the IO thread's).
 */
#ifndef SY_ERRORS_H
#define SY_ERRORS_H

#include <errno.h>

#endif
