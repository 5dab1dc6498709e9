/*
 * sy_sock — the socket calls whose portable form differs from Linux's, in
 * one place: the system's socket headers; a stream socket and an accepted
 * one made non-blocking and close-on-exec (Linux: SOCK_NONBLOCK |
 * SOCK_CLOEXEC and accept4, atomic; elsewhere the same flags set by ioctl
 * right after, and on macOS SO_NOSIGPIPE besides MSG_NOSIGNAL, which older
 * kernels may not honour), and a descriptor taken over from the owner set
 * up the same way; and the calls Windows names differently (Winsock:
 * closesocket, WSAGetLastError, WSASend for writev, no MSG_NOSIGNAL or
 * MSG_DONTWAIT, SD_SEND), so that the rest of src/ writes each once.
 *
 * A socket is an int everywhere. On Windows a SOCKET is a kernel handle,
 * and 64-bit Windows keeps handles to 32 significant bits (so that 32- and
 * 64-bit processes can share them): the value fits an int, and
 * INVALID_SOCKET becomes -1. A file that includes this header includes no
 * socket header of its own.
 *
 * Threads: any; the functions keep no state. sy_sock_startup, on Windows
 * WSAStartup (counted: one sy_sock_cleanup each), is called by
 * sy_server_create (whose IO threads and bus open every socket of the
 * library; sy_server_destroy cleans up) and by programs that use sockets
 * without a server (the C tests).
 *
 * Ownership: a returned descriptor is the caller's; sy_sock_own changes the
 * flags of the caller's descriptor and never closes it.
 *
 * Errors: the sy_err_t functions return 0 or the errno value of the call
 * that failed (socket(2), accept(2): EAGAIN, EMFILE...), Winsock's codes
 * mapped to errno values (sy_sock_error); *fd is then -1 and nothing is
 * left open. sy_sock_send, sy_sock_sendv and sy_sock_recv return bytes
 * (>= 0; 0 from recv: the peer's end) or -errno, the outcome of one call
 * (a named exception of base/sy_errors.h).
 */
#ifndef SY_SOCK_H
#define SY_SOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/sy_errors.h"

#include "base/sy_inet.h"

#if defined(_WIN32)
/* POSIX's layout; sy_sock_sendv makes WSABUFs of it. */
struct iovec {
    void *iov_base;
    size_t iov_len;
};
#else
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/uio.h>
#endif

/* On Windows WSAStartup (0 or an errno value); elsewhere 0. */
sy_err_t sy_sock_startup(void);
void sy_sock_cleanup(void);
/* The last socket call's error as an errno value (errno; on Windows
 * WSAGetLastError mapped: WSAEWOULDBLOCK is EAGAIN, and so on). */
sy_err_t sy_sock_error(void);

/* *fd: socket(family, SOCK_STREAM, 0), non-blocking and close-on-exec. */
sy_err_t sy_sock_stream(int family, int *fd);
/* *fd: accept(listen_fd), close-on-exec, and non-blocking when nonblock. */
sy_err_t sy_sock_accept(int listen_fd, bool nonblock, int *fd);
/* Makes fd close-on-exec and non-blocking (a socket taken over: adopt). */
sy_err_t sy_sock_own(int fd);
/* Closes a socket (the descriptor is released even when it reports an
 * error, so there is none to see). */
void sy_sock_close(int fd);
/* *out: a second descriptor of fd's socket (dup; on Windows
 * WSADuplicateSocket), not inherited by child processes. */
sy_err_t sy_sock_dup(int fd, int *out);
/* 0 when fd is a stream socket; ENOTSOCK (not a socket, or not a stream
 * one) or EBADF (not open). */
sy_err_t sy_sock_check_stream(int fd);
/* TCP_NODELAY: frames go out when written (an optimisation: not checked). */
void sy_sock_nodelay(int fd);
/* A listener's address may be bound again at once after a restart
 * (SO_REUSEADDR; on Windows SO_EXCLUSIVEADDRUSE, since Windows'
 * SO_REUSEADDR would let another process bind the same port). */
sy_err_t sy_sock_reuse_addr(int fd);
/* A spare descriptor, held so that one can be freed when accept says
 * EMFILE (the client is then accepted and closed at once instead of
 * waiting in the backlog): /dev/null, or -1 where it cannot be opened, and
 * always -1 on Windows, whose sockets have no per-process limit. */
int sy_sock_spare_open(void);
void sy_sock_spare_close(int fd);
/* Ends our direction (shutdown SHUT_WR): 0 or an errno value. */
sy_err_t sy_sock_shutdown_write(int fd);

/* One non-blocking send that never raises SIGPIPE: bytes or -errno. */
long sy_sock_send(int fd, const void *buf, size_t len);
/* The same for n buffers (sendmsg; WSASend on Windows). */
long sy_sock_sendv(int fd, const struct iovec *iov, int n);
/* One non-blocking recv (peek: MSG_PEEK, the bytes stay): bytes, 0 at the
 * peer's end, or -errno. */
long sy_sock_recv(int fd, void *buf, size_t cap, bool peek);

#endif
