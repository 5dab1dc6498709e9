/* sy_uring, alone and under the server's flush.
 *
 * The module: a batch of many sockets (one buffer and several), a full
 * socket answering -EAGAIN at once (not armed), a peer that reset giving
 * an error (and no SIGPIPE), the bounds.
 *
 * The server (plain TCP): many subscribers written in batches, one of them
 * with a small receive window that does not read for a while (its socket
 * fills: EAGAIN, then resumed on EPOLLOUT), every message then arriving in
 * order; a peer that reset is closed; and stats say which sender ran.
 *
 * Where io_uring cannot be used (valgrind may not know its system calls,
 * a seccomp filter, SYMPHONY_IO_URING=0), the module tests are skipped and
 * the server tests check that the fallback served everything instead. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>

#include "check.h"
#include "harness.h"
#include "net/sy_sock.h"
#include "net/sy_uring.h"

static const char *REQ = "GET /x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

/* A connected loopback TCP pair: *a the sender (non-blocking), *b the peer. */
static int tcp_pair(int *a, int *b) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (l < 0 || bind(l, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&addr, &len) != 0)
        return -1;
    *b = socket(AF_INET, SOCK_STREAM, 0);
    if (*b < 0 || connect(*b, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        return -1;
    int rc = sy_sock_accept(l, true, a);
    close(l);
    return rc != 0 ? -1 : 0;
}

#define PAIRS 200

static void test_batch_of_many(sy_uring_t *u) {
    int a[PAIRS], b[PAIRS];
    static char bufs[PAIRS][3][32];
    static struct iovec iov[PAIRS][3];
    static sy_uring_send_t s[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        CHECK_EQ(tcp_pair(&a[i], &b[i]), 0);
        int parts = i % 2 == 0 ? 1 : 3; /* IORING_OP_SEND and IORING_OP_SENDMSG */
        for (int k = 0; k < parts; k++) {
            int n = snprintf(bufs[i][k], sizeof(bufs[i][k]), "<%d.%d>", i, k);
            iov[i][k] = (struct iovec){bufs[i][k], (size_t)n};
        }
        s[i] = (sy_uring_send_t){.fd = a[i], .iovcnt = parts, .iov = iov[i]};
    }
    CHECK(sy_uring_capacity(u) >= PAIRS);
    CHECK_EQ(sy_uring_send(u, s, PAIRS), 0);
    for (int i = 0; i < PAIRS; i++) {
        char want[128] = "", got[128];
        for (int k = 0; k < s[i].iovcnt; k++)
            strcat(want, bufs[i][k]);
        CHECK_EQ(s[i].res, (long)strlen(want));
        size_t n = read_some(b[i], (uint8_t *)got, sizeof(got) - 1, strlen(want));
        got[n] = 0;
        CHECK(strcmp(got, want) == 0);
        close(a[i]);
        close(b[i]);
    }
    /* The ring is reusable: a second batch on fresh sockets. */
    int x, y;
    CHECK_EQ(tcp_pair(&x, &y), 0);
    struct iovec one = {(void *)"again", 5};
    sy_uring_send_t again[2] = {{.fd = x, .iovcnt = 1, .iov = &one}, {.fd = x, .iovcnt = 1, .iov = &one}};
    CHECK_EQ(sy_uring_send(u, again, 1), 0); /* one send per socket per batch */
    CHECK_EQ(again[0].res, 5);
    CHECK_EQ(sy_uring_send(u, again, 0), EINVAL);
    CHECK_EQ(sy_uring_send(u, again, sy_uring_capacity(u) + 1), EINVAL);
    close(x);
    close(y);
}

static void test_full_socket(sy_uring_t *u) {
    int a, b;
    CHECK_EQ(tcp_pair(&a, &b), 0);
    int small = 4096;
    CHECK_EQ(setsockopt(a, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    CHECK_EQ(setsockopt(b, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    static char big[1 << 16];
    memset(big, 'f', sizeof(big));
    struct iovec iov = {big, sizeof(big)};
    sy_uring_send_t s = {.fd = a, .iovcnt = 1, .iov = &iov};
    size_t sent = 0;
    int rounds = 0;
    /* Short writes, then -EAGAIN, each at once (the peer never reads). */
    for (; rounds < 100; rounds++) {
        CHECK_EQ(sy_uring_send(u, &s, 1), 0);
        if (s.res < 0)
            break;
        sent += (size_t)s.res;
        CHECK(s.res < (int32_t)sizeof(big));
    }
    CHECK_EQ(s.res, -EAGAIN);
    CHECK(sent > 0 && rounds < 100);
    /* Drained by the peer, the socket takes bytes again. */
    static char sink[1 << 16];
    size_t got = read_some(b, (uint8_t *)sink, sizeof(sink), sent);
    CHECK_EQU(got, sent);
    CHECK_EQ(sy_uring_send(u, &s, 1), 0);
    CHECK(s.res > 0);
    close(a);
    close(b);
}

static void test_peer_reset(sy_uring_t *u) {
    int a, b;
    CHECK_EQ(tcp_pair(&a, &b), 0);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    CHECK_EQ(setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(b); /* an RST */
    usleep(20000);
    struct iovec iov[2] = {{(void *)"dead", 4}, {(void *)"peer", 4}};
    sy_uring_send_t s = {.fd = a, .iovcnt = 2, .iov = iov};
    CHECK_EQ(sy_uring_send(u, &s, 1), 0);
    CHECK(s.res == -ECONNRESET || s.res == -EPIPE);
    CHECK_EQ(sy_uring_send(u, &s, 1), 0); /* and again: EPIPE, never SIGPIPE */
    CHECK_EQ(s.res, -EPIPE);
    close(a);
}

/* ---- the server ---------------------------------------------------------- */

#define CLIENTS 40
#define MSGS 400
#define MSG_LEN 200

static int open_client(uint16_t port, int rcvbuf) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (rcvbuf > 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return -1;
    CHECK_EQ(write(fd, REQ, strlen(REQ)), (long long)strlen(REQ));
    uint8_t buf[256];
    CHECK(read_some(fd, buf, 129, 129) == 129);
    return fd;
}

/* Reads MSGS frames of MSG_LEN (126-length form) and checks that each
 * carries its sequence number, in order. Returns how many were right. */
static int read_in_order(int fd) {
    static uint8_t frame[4 + MSG_LEN];
    int ok = 0;
    for (int i = 0; i < MSGS; i++) {
        if (read_some(fd, frame, sizeof(frame), sizeof(frame)) != sizeof(frame))
            break;
        unsigned seq = 0;
        if (frame[0] != 0x82 || frame[1] != 126 || sscanf((char *)frame + 4, "%u", &seq) != 1 || seq != (unsigned)i)
            break;
        ok++;
    }
    return ok;
}

static sy_server_t *start(uint16_t *port) {
    sy_server_opts_t o = {
        .host = "127.0.0.1", .threads = 2, .max_payload = 1 << 16, .max_backpressure = 4 << 20,
        .handshake_timeout_s = 5, .close_timeout_s = 1, .max_head_bytes = 8192, .max_headers = 64, .backlog = 64,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    CHECK(s != NULL && sy_server_listen(s, port, err, sizeof(err)) == 0);
    return s;
}

static void totals(sy_server_t *s, sy_stats_t *t) {
    memset(t, 0, sizeof(*t));
    for (unsigned i = 0; i < 2; i++) {
        sy_stats_t one;
        sy_server_thread_stats(s, i, &one);
        t->io_uring += one.io_uring;
        t->uring_batches += one.uring_batches;
        t->uring_sends += one.uring_sends;
        t->closed += one.closed;
        t->bytes_out += one.bytes_out;
    }
}

/* expect_uring: io_uring is usable here and not forced off. */
static void test_server_fanout(bool expect_uring) {
    nseen = 0;
    uint16_t port = 0;
    sy_server_t *s = start(&port);
    int fds[CLIENTS];
    uint64_t ids[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        size_t mark = nseen;
        fds[i] = open_client(port, i == 0 ? 4096 : 0); /* 0: a small window, not read for a while */
        const seen_t *ev = wait_event(s, SY_EV_OPEN, mark);
        ids[i] = ev != NULL ? ev->conn : 0;
        CHECK_EQ(sy_server_subscribe(s, ids[i], "t", 1), 0);
    }
    usleep(50000);
    /* Published in bursts, so that each loop turn has many dirty
     * connections; client 0's socket fills meanwhile. */
    static char msg[MSG_LEN];
    for (int i = 0; i < MSGS; i++) {
        memset(msg, '.', sizeof(msg));
        snprintf(msg, sizeof(msg), "%u", (unsigned)i);
        size_t subs = 0;
        CHECK_EQ(sy_server_publish(s, "t", 1, msg, sizeof(msg), SY_SEND_BINARY, &subs), 0);
        if (i % 50 == 49)
            usleep(2000);
    }
    for (int i = 1; i < CLIENTS; i++)
        CHECK_EQ(read_in_order(fds[i]), MSGS);
    usleep(100000);
    CHECK_EQ(read_in_order(fds[0]), MSGS); /* resumed on writability, nothing lost or reordered */
    sy_stats_t t;
    totals(s, &t);
    CHECK_EQU(t.bytes_out >= (uint64_t)CLIENTS * MSGS * (4 + MSG_LEN), 1);
    printf("  io_uring threads %llu, batches %llu, sends %llu\n", (unsigned long long)t.io_uring,
           (unsigned long long)t.uring_batches, (unsigned long long)t.uring_sends);
    if (expect_uring) {
        CHECK_EQU(t.io_uring, 2);
        CHECK(t.uring_batches > 0 && t.uring_sends >= 2 * t.uring_batches);
    } else {
        CHECK_EQU(t.io_uring, 0);
        CHECK_EQU(t.uring_batches, 0);
    }

    /* A peer that reset: the next write fails and the connection closes. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    CHECK_EQ(setsockopt(fds[1], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(fds[1]);
    fds[1] = -1;
    usleep(20000);
    size_t mark = nseen;
    size_t subs = 0;
    for (int i = 0; i < 3; i++)
        CHECK_EQ(sy_server_publish(s, "t", 1, msg, sizeof(msg), SY_SEND_BINARY, &subs), 0);
    const seen_t *cl = wait_event(s, SY_EV_CLOSE, mark);
    CHECK(cl != NULL && cl->conn == ids[1]);
    for (int i = 2; i < CLIENTS; i++) { /* the others got all three */
        static uint8_t frame[3 * (4 + MSG_LEN)];
        CHECK_EQU(read_some(fds[i], frame, sizeof(frame), sizeof(frame)), sizeof(frame));
    }
    sy_server_shutdown(s, 0);
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    for (int i = 0; i < CLIENTS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int main(void) {
    signal(SIGPIPE, SIG_DFL); /* a send without MSG_NOSIGNAL would kill the test */
    sy_uring_t *u = NULL;
    int rc = sy_uring_open(256, &u);
    bool usable = rc == 0 && sy_uring_env_allows();
    if (rc != 0)
        printf("  io_uring not usable here (%s): the fallback is tested\n", strerror(rc));
    if (u != NULL) {
        test_batch_of_many(u);
        test_full_socket(u);
        test_peer_reset(u);
        sy_uring_close(u);
    }
    test_server_fanout(usable);
    /* Forced off: the same traffic through send()/sendmsg(). */
    CHECK_EQ(setenv("SYMPHONY_IO_URING", "0", 1), 0);
    CHECK(!sy_uring_env_allows());
    test_server_fanout(false);
    CHECK_EQ(setenv("SYMPHONY_IO_URING", "1", 1), 0);
    CHECK(sy_uring_env_allows());
    return check_report("uring");
}
