/* sy_sock — see sy_sock.h. */
#define _GNU_SOURCE
#include "net/sy_sock.h"

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

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
