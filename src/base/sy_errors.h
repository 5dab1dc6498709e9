/*
 * sy_errors — how src/ reports failure: one convention, for every module,
 * carried by the types below so that a reader (and the compiler, through
 * the allocator's attributes in base/sy_alloc.h) sees it in each signature.
 *
 *  1. An operation that can fail returns sy_err_t: 0 on success or a
 *     positive errno value (ENOMEM, EINVAL, ENOTCONN, ...), as pthread_* do.
 *     Never -1 with errno, never a negative errno. Results come back through
 *     pointers (sy_poll_wait's count, sy_topic_add_sub's index). A function
 *     that also has words for the user takes (char *err, size_t errlen)
 *     and writes a message there when it fails (sy_server_listen,
 *     sy_tls_global_init, sy_bus_tls_attach), still returning an errno value.
 *  2. A constructor returns a pointer, NULL when it fails; the header says
 *     why it can fail (almost always: out of memory), or it reports the
 *     errno value through an int *err (sy_io_create). sy_poll_create alone
 *     sets errno, because several system calls can fail inside it.
 *  3. A question returns bool, and its name says what true means
 *     (sy_io_is_open, sy_outq_empty, sy_utf8_is_valid). So does an attempt
 *     that may legitimately not happen and is not an error (sy_conn_push:
 *     queued or not, by the slow-consumer policy).
 *  4. A step that waits on a peer returns a state enum of its module
 *     (sy_stream_rc_t, sy_tls_want_t), never an int.
 *  5. The parsers (sy_http, sy_ws_frame, sy_utf8) return long: bytes
 *     consumed (>= 0), SY_*_PARTIAL, or a negative error code of their
 *     own (SY_HTTP_E_*, SY_WS_E_*), which maps to an HTTP status or close
 *     code and a text. sy_ws_close_parse likewise returns 0 or an SY_WS_E_*.
 *  6. Counts and sizes are size_t or uint*_t, never int.
 *
 * The named exceptions:
 *  - sy_handshake_check and sy_http_error_status return 0 or the HTTP status
 *    to answer (400, 405, 426, 505), since the status is the answer.
 *  - A system call's result travels as data where it is the outcome of one
 *    send, not the function's failure: sy_uring_send_t.res and the res of
 *    sy_conn_wrote are bytes written or -errno (as io_uring reports it), and
 *    sy_stream_plain_wrote takes the same; so do sy_sock_send, sy_sock_sendv
 *    and sy_sock_recv (net/sy_sock.h).
 *  - sy_outq_iov returns the count it filled (an int, as struct iovec
 *    counts are for writev).
 *
 * A failure the library cannot go on from is reported, never an abort (see
 * io/sy_io.h for the IO thread's).
 *
 * Threads: any (sy_strerror keeps no state of its own).
 *
 * Ownership: nothing is kept; sy_strerror's text is static.
 *
 * Errors: this header defines the convention above; it reports none itself.
 */
#ifndef SY_ERRORS_H
#define SY_ERRORS_H

#include <errno.h>

/* 0 on success, or a positive errno value (rule 1). */
typedef int sy_err_t;

/* The values src/ uses that Windows' C runtime lacks. */
#if !defined(ESHUTDOWN)
#define ESHUTDOWN ECANCELED /* stopping: the bus refuses new calls */
#endif

/* The words for an errno value, as strerror, and on Windows also for the
 * socket values its C runtime does not name. */
const char *sy_strerror(sy_err_t e);

#endif
