/* sy_wake — see sy_wake.h. */
#define _GNU_SOURCE
#include "net/sy_wake.h"

#include <errno.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/eventfd.h>
#endif
#if !defined(_WIN32)
#include <fcntl.h>
#include <unistd.h>
#endif

#include "net/sy_sock.h"

void sy_wake_init(sy_wake_t *w) { w->rfd = w->wfd = -1; }

#if defined(_WIN32)

/* A UDP socket on 127.0.0.1 connected to itself: a datagram makes it
 * readable (the pollers of Windows watch sockets only). */
sy_err_t sy_wake_open(sy_wake_t *w) {
    sy_wake_init(w);
    SOCKET s = WSASocketW(AF_INET, SOCK_DGRAM, IPPROTO_UDP, NULL, 0, WSA_FLAG_NO_HANDLE_INHERIT);
    if (s == INVALID_SOCKET)
        return sy_sock_error();
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int len = sizeof(a);
    u_long nonblock = 1;
    if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || getsockname(s, (struct sockaddr *)&a, &len) != 0 ||
        connect(s, (struct sockaddr *)&a, sizeof(a)) != 0 || ioctlsocket(s, FIONBIO, &nonblock) != 0) {
        sy_err_t rc = sy_sock_error();
        (void)closesocket(s);
        return rc;
    }
    w->rfd = w->wfd = (int)s;
    return 0;
}

void sy_wake_signal(sy_wake_t *w) {
    /* WSAEWOULDBLOCK: the socket's buffer is full of wake-ups, so the
     * thread is awake anyway. */
    (void)sy_sock_send(w->wfd, "", 1);
}

void sy_wake_drain(sy_wake_t *w) {
    char buf[64];
    while (sy_sock_recv(w->rfd, buf, sizeof(buf), false) > 0) {
    }
}

#elif defined(__linux__)

sy_err_t sy_wake_open(sy_wake_t *w) {
    sy_wake_init(w);
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return errno;
    w->rfd = w->wfd = fd;
    return 0;
}

void sy_wake_signal(sy_wake_t *w) {
    uint64_t one = 1;
    ssize_t n;
    do
        n = write(w->wfd, &one, sizeof(one));
    while (n < 0 && errno == EINTR);
    /* EAGAIN: the counter is full, so the thread is awake anyway. */
}

void sy_wake_drain(sy_wake_t *w) {
    uint64_t v;
    (void)!read(w->rfd, &v, sizeof(v)); /* one read resets the counter */
}

#else

static int set_flags(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
        return errno;
    return 0;
}

sy_err_t sy_wake_open(sy_wake_t *w) {
    sy_wake_init(w);
    int fds[2];
    if (pipe(fds) != 0)
        return errno;
    w->rfd = fds[0];
    w->wfd = fds[1];
    int rc = set_flags(fds[0]);
    if (rc == 0)
        rc = set_flags(fds[1]);
    if (rc != 0)
        sy_wake_close(w);
    return rc;
}

void sy_wake_signal(sy_wake_t *w) {
    char one = 1;
    ssize_t n;
    do
        n = write(w->wfd, &one, 1);
    while (n < 0 && errno == EINTR);
    /* EAGAIN: the pipe is full of wake-ups, so the thread is awake anyway. */
}

void sy_wake_drain(sy_wake_t *w) {
    char buf[64];
    ssize_t n;
    do
        n = read(w->rfd, buf, sizeof(buf));
    while (n == (ssize_t)sizeof(buf) || (n < 0 && errno == EINTR));
}

#endif

void sy_wake_close(sy_wake_t *w) {
#if defined(_WIN32)
    if (w->rfd >= 0)
        sy_sock_close(w->rfd);
#else
    if (w->wfd >= 0 && w->wfd != w->rfd)
        (void)close(w->wfd);
    if (w->rfd >= 0)
        (void)close(w->rfd);
#endif
    sy_wake_init(w);
}
