/* sy_sock — see sy_sock.h. */
#define _GNU_SOURCE
#include "net/sy_sock.h"

#if defined(_WIN32)

#include <limits.h>

/* ---- Windows: Winsock ----------------------------------------------------- */

sy_err_t sy_sock_startup(void) {
    WSADATA d;
    int rc = WSAStartup(MAKEWORD(2, 2), &d);
    return rc == 0 ? 0 : EIO;
}

void sy_sock_cleanup(void) { (void)WSACleanup(); }

sy_err_t sy_sock_error(void) {
    switch (WSAGetLastError()) {
    case WSAEWOULDBLOCK:
    case WSAEINPROGRESS:
        return EAGAIN;
    case WSAEINTR:
        return EINTR;
    case WSAEMFILE:
        return EMFILE;
    case WSAENOBUFS:
        return ENOBUFS;
    case WSAECONNRESET:
    case WSAENETRESET:
        return ECONNRESET;
    case WSAECONNABORTED:
        return ECONNABORTED;
    case WSAECONNREFUSED:
        return ECONNREFUSED;
    case WSAESHUTDOWN:
        return EPIPE;
    case WSAENOTCONN:
        return ENOTCONN;
    case WSAENOTSOCK:
        return ENOTSOCK;
    case WSAEBADF:
        return EBADF;
    case WSAEADDRINUSE:
        return EADDRINUSE;
    case WSAEADDRNOTAVAIL:
        return EADDRNOTAVAIL;
    case WSAEAFNOSUPPORT:
        return EAFNOSUPPORT;
    case WSAEACCES:
        return EACCES;
    case WSAETIMEDOUT:
        return ETIMEDOUT;
    case WSAEMSGSIZE:
        return EMSGSIZE;
    case WSAEINVAL:
        return EINVAL;
    default:
        return EIO;
    }
}

/* Not inherited by child processes, and non-blocking when asked. */
static sy_err_t set_flags(int fd, bool nonblock) {
    u_long mode = nonblock ? 1 : 0;
    if (!SetHandleInformation((HANDLE)(uintptr_t)fd, HANDLE_FLAG_INHERIT, 0))
        return EBADF;
    return ioctlsocket((SOCKET)fd, FIONBIO, &mode) == 0 ? 0 : sy_sock_error();
}

static sy_err_t finish(int *fd, bool nonblock) {
    sy_err_t rc = set_flags(*fd, nonblock);
    if (rc != 0) {
        sy_sock_close(*fd);
        *fd = -1;
    }
    return rc;
}

sy_err_t sy_sock_stream(int family, int *fd) {
    SOCKET s = WSASocketW(family, SOCK_STREAM, IPPROTO_TCP, NULL, 0, WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
    *fd = s == INVALID_SOCKET ? -1 : (int)s;
    return *fd < 0 ? sy_sock_error() : finish(fd, true);
}

sy_err_t sy_sock_accept(int listen_fd, bool nonblock, int *fd) {
    SOCKET s = accept((SOCKET)listen_fd, NULL, NULL);
    *fd = s == INVALID_SOCKET ? -1 : (int)s;
    /* An accepted socket inherits the listener's non-blocking mode: set
     * either way. */
    return *fd < 0 ? sy_sock_error() : finish(fd, nonblock);
}

sy_err_t sy_sock_own(int fd) { return set_flags(fd, true); }

void sy_sock_close(int fd) { (void)closesocket((SOCKET)fd); }

int sy_sock_spare_open(void) { return -1; }

sy_err_t sy_sock_dup(int fd, int *out) {
    WSAPROTOCOL_INFOW info;
    *out = -1;
    if (WSADuplicateSocketW((SOCKET)fd, GetCurrentProcessId(), &info) != 0)
        return sy_sock_error();
    SOCKET s = WSASocketW(FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, &info, 0,
                          WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
    if (s == INVALID_SOCKET)
        return sy_sock_error();
    *out = (int)s;
    return 0;
}

sy_err_t sy_sock_check_stream(int fd) {
    int type = 0, len = sizeof(type);
    if (getsockopt((SOCKET)fd, SOL_SOCKET, SO_TYPE, (char *)&type, &len) != 0)
        return sy_sock_error() == ENOTSOCK ? ENOTSOCK : EBADF;
    return type == SOCK_STREAM ? 0 : ENOTSOCK;
}

sy_err_t sy_sock_reuse_addr(int fd) {
    BOOL one = TRUE;
    return setsockopt((SOCKET)fd, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&one, sizeof(one)) == 0
               ? 0
               : sy_sock_error();
}
void sy_sock_spare_close(int fd) { (void)fd; }

sy_err_t sy_sock_shutdown_write(int fd) { return shutdown((SOCKET)fd, SD_SEND) == 0 ? 0 : sy_sock_error(); }

void sy_sock_nodelay(int fd) {
    BOOL one = TRUE;
    (void)setsockopt((SOCKET)fd, IPPROTO_TCP, TCP_NODELAY, (const char *)&one, sizeof(one));
}

long sy_sock_send(int fd, const void *buf, size_t len) {
    int r = send((SOCKET)fd, buf, len > INT_MAX ? INT_MAX : (int)len, 0);
    return r < 0 ? -(long)sy_sock_error() : (long)r;
}

long sy_sock_sendv(int fd, const struct iovec *iov, int n) {
    WSABUF b[64];
    DWORD count = 0, sent = 0;
    for (int i = 0; i < n && count < 64; i++) {
        if (iov[i].iov_len > ULONG_MAX / 2)
            break;
        b[count].buf = iov[i].iov_base;
        b[count++].len = (ULONG)iov[i].iov_len;
    }
    if (WSASend((SOCKET)fd, b, count, &sent, 0, NULL, NULL) != 0)
        return -(long)sy_sock_error();
    return (long)sent;
}

long sy_sock_recv(int fd, void *buf, size_t cap, bool peek) {
    int r = recv((SOCKET)fd, buf, cap > INT_MAX ? INT_MAX : (int)cap, peek ? MSG_PEEK : 0);
    return r < 0 ? -(long)sy_sock_error() : (long)r;
}

#else

/* ---- POSIX ------------------------------------------------------------------ */

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

sy_err_t sy_sock_startup(void) { return 0; }
void sy_sock_cleanup(void) {}
sy_err_t sy_sock_error(void) { return errno; }

/* ioctl, not fcntl: glibc 2.28 renamed fcntl's symbol, and the prebuilt
 * binaries keep to older glibc (binding/glibc_floor.h). */
static sy_err_t set_flags(int fd, bool nonblock) {
    int one = 1;
    if (ioctl(fd, FIOCLEX) != 0 || (nonblock && ioctl(fd, FIONBIO, &one) != 0))
        return errno;
#if defined(SO_NOSIGPIPE)
    if (setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof(one)) != 0)
        return errno;
#endif
    return 0;
}

#if defined(__linux__)

sy_err_t sy_sock_stream(int family, int *fd) {
    *fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    return *fd < 0 ? errno : 0;
}

sy_err_t sy_sock_accept(int listen_fd, bool nonblock, int *fd) {
    *fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0));
    return *fd < 0 ? errno : 0;
}

#else

/* fd set up by set_flags, or closed and -1. */
static sy_err_t finish(int *fd, bool nonblock) {
    sy_err_t rc = set_flags(*fd, nonblock);
    if (rc != 0) {
        (void)close(*fd);
        *fd = -1;
    }
    return rc;
}

sy_err_t sy_sock_stream(int family, int *fd) {
    *fd = socket(family, SOCK_STREAM, 0);
    return *fd < 0 ? errno : finish(fd, true);
}

sy_err_t sy_sock_accept(int listen_fd, bool nonblock, int *fd) {
    *fd = accept(listen_fd, NULL, NULL);
    if (*fd < 0)
        return errno;
    /* BSD sockets inherit the listener's O_NONBLOCK: cleared when not asked. */
    int off = 0;
    if (!nonblock && ioctl(*fd, FIONBIO, &off) != 0) {
        sy_err_t rc = errno;
        (void)close(*fd);
        *fd = -1;
        return rc;
    }
    return finish(fd, nonblock);
}

#endif

sy_err_t sy_sock_own(int fd) { return set_flags(fd, true); }

/* A close() error on a socket leaves nothing to do: the descriptor is
 * released anyway. */
void sy_sock_close(int fd) { (void)close(fd); }

int sy_sock_spare_open(void) { return open("/dev/null", O_RDONLY | O_CLOEXEC); }

sy_err_t sy_sock_dup(int fd, int *out) {
    *out = dup(fd);
    if (*out < 0)
        return errno;
    sy_err_t rc = set_flags(*out, false);
    if (rc != 0) {
        (void)close(*out);
        *out = -1;
    }
    return rc;
}

sy_err_t sy_sock_check_stream(int fd) {
    int type = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        return errno == ENOTSOCK ? ENOTSOCK : EBADF;
    return type == SOCK_STREAM ? 0 : ENOTSOCK;
}

sy_err_t sy_sock_reuse_addr(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 ? 0 : errno;
}

void sy_sock_spare_close(int fd) {
    if (fd >= 0)
        (void)close(fd);
}

sy_err_t sy_sock_shutdown_write(int fd) { return shutdown(fd, SHUT_WR) == 0 ? 0 : errno; }

void sy_sock_nodelay(int fd) {
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

long sy_sock_send(int fd, const void *buf, size_t len) {
    ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    return w < 0 ? -(long)errno : (long)w;
}

long sy_sock_sendv(int fd, const struct iovec *iov, int n) {
    struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    return w < 0 ? -(long)errno : (long)w;
}

long sy_sock_recv(int fd, void *buf, size_t cap, bool peek) {
    ssize_t r = recv(fd, buf, cap, MSG_DONTWAIT | (peek ? MSG_PEEK : 0));
    return r < 0 ? -(long)errno : (long)r;
}

#endif
