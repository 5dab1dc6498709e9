/*
 * sy_uring — synchronous batched socket sends over io_uring.
 *
 * One ring per IO thread. sy_uring_send() writes a batch of sends (one per
 * socket, each one buffer or several) with a single io_uring_enter: it
 * queues one SQE per send (IORING_OP_SEND for one buffer, IORING_OP_SENDMSG
 * for several, both with MSG_NOSIGNAL | MSG_DONTWAIT, so a full socket
 * completes at once with -EAGAIN instead of being armed in the kernel),
 * submits them all, waits for all of their completions and returns. Nothing
 * is in flight when it returns: the caller's buffers need to live only for
 * the call, and a socket that has one send in the batch keeps its byte
 * order (never give one socket two sends in one batch).
 *
 * Raw system calls (io_uring_setup, io_uring_enter, io_uring_register and
 * mmap of the rings): no liburing. The rings are kernel memory mapped into
 * the process (about 25 KiB for 256 entries), plus one small array of
 * message headers from sy_alloc.
 *
 * When io_uring cannot be used — a kernel without it or without
 * IORING_OP_SEND (before 5.6), kernel.io_uring_disabled, a seccomp filter
 * (Docker's default profile answers EPERM), a build whose headers lack
 * <linux/io_uring.h> — sy_uring_open() or the first sy_uring_send() fails
 * with the errno value, and the caller sends with send()/sendmsg() itself.
 *
 * Threads: a ring is used by the thread that opened it only (it is made
 * with IORING_SETUP_SINGLE_ISSUER when the kernel has it); sy_uring_env_allows
 * may be called from any thread that does not race with setenv().
 *
 * Ownership: sy_uring_open gives the caller the ring, which it closes with
 * sy_uring_close. The sends and their buffers stay the caller's: nothing of
 * them is kept past the call.
 *
 * Errors: sy_uring_open and sy_uring_send return 0 or an errno value; each
 * send's res is bytes or -errno as io_uring reports it (data, not the
 * function's failure: a named exception of base/sy_errors.h).
 */
#ifndef SY_URING_H
#define SY_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "net/sy_sock.h" /* struct iovec */

typedef struct sy_uring sy_uring_t;

/* A send's res before its completion is known (sy_uring_send). */
#define SY_URING_NOT_SENT INT32_MIN

/* One send of a batch. */
typedef struct sy_uring_send {
    int fd;                  /* a connected stream socket */
    int iovcnt;              /* >= 1 */
    const struct iovec *iov; /* the bytes, in order */
    int32_t res;             /* out: bytes written, or -errno (-EAGAIN: the socket
                                is full); SY_URING_NOT_SENT: not submitted */
} sy_uring_send_t;

/* False when the environment variable SYMPHONY_IO_URING is "0" (the
 * send()/sendmsg() path is forced); true when it is unset or anything else
 * ("1": use io_uring when the kernel lets us). */
bool sy_uring_env_allows(void);

/* A ring for batches of up to `entries` sends (rounded up to a power of
 * two by the kernel; sy_uring_capacity says how many). Tries
 * SINGLE_ISSUER|DEFER_TASKRUN|SUBMIT_ALL, then fewer flags when the kernel
 * refuses them (EINVAL), and checks that the kernel supports IORING_OP_SEND
 * and IORING_OP_SENDMSG. 0, or an errno value (ENOSYS, EPERM, ENOMEM,
 * EOPNOTSUPP...; *out is NULL then). */
sy_err_t sy_uring_open(unsigned entries, sy_uring_t **out);
/* How many sends one sy_uring_send() takes at most. */
unsigned sy_uring_capacity(const sy_uring_t *u);
/* Writes every send of s[0..n) (1 <= n <= capacity) with one
 * io_uring_enter (more only if interrupted by a signal) and waits for all
 * of them: each res is set. 0, or an errno value when the ring failed (the
 * first call: EPERM or ENOSYS from a seccomp filter, for instance): the
 * sends not submitted keep res SY_URING_NOT_SENT (nothing of theirs was
 * written), those submitted but not seen completing get -EIO (their bytes
 * may or may not have left), and the ring must not be used again (close
 * it). */
sy_err_t sy_uring_send(sy_uring_t *u, sy_uring_send_t *s, unsigned n);
/* Unmaps the rings and closes the ring's descriptor (NULL: no-op). */
void sy_uring_close(sy_uring_t *u);

#endif
