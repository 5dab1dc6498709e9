/*
 * sy_sock — the socket calls whose portable form differs from Linux's, in
 * one place: a stream socket and an accepted one made non-blocking and
 * close-on-exec (Linux: SOCK_NONBLOCK | SOCK_CLOEXEC and accept4, atomic;
 * elsewhere the same flags set by ioctl right after, and on macOS
 * SO_NOSIGPIPE besides MSG_NOSIGNAL, which older kernels may not honour),
 * and a descriptor taken over from the owner set up the same way.
 *
 * Threads: any; the functions keep no state.
 *
 * Ownership: a returned descriptor is the caller's; sy_sock_own changes the
 * flags of the caller's descriptor and never closes it.
 *
 * Errors: each returns 0 or the errno value of the call that failed
 * (socket(2), accept(2): EAGAIN, EMFILE...); *fd is then -1 and nothing is
 * left open.
 */
#ifndef SY_SOCK_H
#define SY_SOCK_H

#include <stdbool.h>

#include "base/sy_errors.h"

/* *fd: socket(family, SOCK_STREAM, 0), non-blocking and close-on-exec. */
sy_err_t sy_sock_stream(int family, int *fd);
/* *fd: accept(listen_fd), close-on-exec, and non-blocking when nonblock. */
sy_err_t sy_sock_accept(int listen_fd, bool nonblock, int *fd);
/* Makes fd close-on-exec and non-blocking (a socket taken over: adopt). */
sy_err_t sy_sock_own(int fd);

#endif
