/* sy_stream — see sy_stream.h. The plain TCP transport. */
#define _GNU_SOURCE
#include "net/sy_stream.h"

#include <errno.h>

#include "net/sy_sock.h"

sy_err_t sy_stream_open(sy_stream_t *s, const sy_stream_ops_t *ops, void *arg, int fd) {
    s->ops = ops;
    s->impl = NULL;
    s->fd = fd;
    s->held = 0;
    int rc = ops->open(s, arg);
    if (rc != 0)
        s->fd = -1;
    return rc;
}

void sy_stream_shut(sy_stream_t *s) {
    if (s->fd >= 0)
        sy_sock_close(s->fd);
    s->fd = -1;
}

void sy_stream_free(sy_stream_t *s) {
    sy_stream_shut(s);
    s->ops->free(s);
}

static int plain_open(sy_stream_t *s, void *arg) {
    (void)s;
    (void)arg;
    return 0;
}

static sy_stream_rc_t plain_handshake(sy_stream_t *s) {
    (void)s;
    return SY_STREAM_OK;
}

static sy_stream_rc_t plain_read(sy_stream_t *s, uint8_t *buf, size_t cap, size_t *n) {
    *n = 0;
    long r = sy_sock_recv(s->fd, buf, cap, false);
    if (r > 0) {
        *n = (size_t)r;
        return SY_STREAM_OK;
    }
    if (r == 0)
        return SY_STREAM_END;
    if (r == -EAGAIN || r == -EWOULDBLOCK || r == -EINTR)
        return SY_STREAM_WANT_READ;
    return SY_STREAM_ERROR;
}

sy_stream_rc_t sy_stream_plain_wrote(sy_outq_t *q, long res, size_t total, size_t *written) {
    *written = 0;
    if (res < 0) {
        if (res == -EINTR)
            return SY_STREAM_OK; /* write again */
        if (res == -EAGAIN || res == -EWOULDBLOCK)
            return SY_STREAM_WANT_WRITE;
        return SY_STREAM_ERROR;
    }
    *written = (size_t)res;
    sy_outq_consume(q, (size_t)res);
    return (size_t)res < total ? SY_STREAM_WANT_WRITE : SY_STREAM_OK;
}

/* One write of the queue's next iovecs: send() for one buffer (the kernel
 * then imports no msghdr and iovec array), sendmsg() for several. */
static long plain_write(int fd, sy_outq_t *q, size_t *total) {
    struct iovec iov[SY_STREAM_MAX_IOV];
    int n = sy_outq_iov(q, iov, SY_STREAM_MAX_IOV, total);
    return n == 1 ? sy_sock_send(fd, iov[0].iov_base, iov[0].iov_len) : sy_sock_sendv(fd, iov, n);
}

static sy_stream_rc_t plain_flush(sy_stream_t *s, sy_outq_t *q, uint8_t **scratch, size_t *written) {
    (void)scratch;
    *written = 0;
    sy_stream_rc_t rc = SY_STREAM_OK;
    while (rc == SY_STREAM_OK && !sy_outq_empty(q)) {
        size_t total, wrote;
        long res = plain_write(s->fd, q, &total);
        rc = sy_stream_plain_wrote(q, res, total, &wrote);
        *written += wrote;
    }
    return rc;
}

static void plain_nothing(sy_stream_t *s) { (void)s; }

const sy_stream_ops_t sy_stream_plain_ops = {
    .name = "tcp",
    .handshake_first = false,
    .open = plain_open,
    .handshake = plain_handshake,
    .read = plain_read,
    .flush = plain_flush,
    .close_notify = plain_nothing,
    .free = plain_nothing,
};
