/* Faults the review found, injected for real from outside the IO threads
 * (no hooks in the core): the descriptors are found through /proc/self/fd.
 *
 *  1. A publish walking a topic's subscribers while one of them fails and
 *     the poller refuses it (its socket taken out of the epoll set): every
 *     other subscriber must still get the message. Before the fix, the
 *     failing one was destroyed mid-walk and the subscriber swapped into
 *     its place was skipped.
 *  2. The poller's wait failing for good (the epoll descriptor replaced by
 *     /dev/null): the IO thread must report SY_EV_FAILED, close its
 *     connections and stop, instead of spinning. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "check.h"
#include "harness.h"

static const char *REQ = "GET /x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

/* The server's end of a client socket: the descriptor whose peer is the
 * client's local address. */
static int server_side(int client) {
    struct sockaddr_in local, peer;
    socklen_t l = sizeof(local);
    if (getsockname(client, (struct sockaddr *)&local, &l) != 0)
        return -1;
    for (int fd = 3; fd < 4096; fd++) {
        if (fd == client)
            continue;
        socklen_t pl = sizeof(peer);
        if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && pl == sizeof(peer) &&
            peer.sin_port == local.sin_port && peer.sin_addr.s_addr == local.sin_addr.s_addr)
            return fd;
    }
    return -1;
}

/* A client that completed the upgrade; rcvbuf > 0 sets its receive buffer
 * before connecting. */
static int open_client(uint16_t port, int rcvbuf) {
    int fd = -1;
    if (rcvbuf > 0) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
            return -1;
    } else if ((fd = connect_to(port)) < 0) {
        return -1;
    }
    CHECK_EQ(write(fd, REQ, strlen(REQ)), (long long)strlen(REQ));
    uint8_t buf[256];
    CHECK(read_some(fd, buf, 129, 129) == 129);
    return fd;
}

/* Reads one server frame (16-bit or 64-bit length); returns its payload
 * length, or -1. */
static long read_frame(int fd, uint8_t *payload, size_t cap) {
    uint8_t h[10];
    if (read_some(fd, h, 2, 2) != 2)
        return -1;
    size_t len = h[1] & 0x7f;
    if (len == 126) {
        if (read_some(fd, h + 2, 2, 2) != 2)
            return -1;
        len = ((size_t)h[2] << 8) | h[3];
    } else if (len == 127) {
        if (read_some(fd, h + 2, 8, 8) != 8)
            return -1;
        len = 0;
        for (int i = 2; i < 10; i++)
            len = (len << 8) | h[i];
    }
    if (len > cap || read_some(fd, payload, cap, len) != len)
        return -1;
    return (long)len;
}

#define SUBS 6
#define BIG (60 * 1024)

static void test_publish_while_failing(void) {
    sy_server_opts_t o = {
        .host = "127.0.0.1", .threads = 1, .max_payload = 1 << 16, .max_backpressure = 64 * 1024,
        .slow_consumer = SY_SLOW_CLOSE, .handshake_timeout_s = 5, .close_timeout_s = 1, .max_head_bytes = 8192,
        .max_headers = 64, .backlog = 64,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    uint16_t port = 0;
    CHECK(s != NULL && sy_server_listen(s, &port, err, sizeof(err)) == 0);
    int fds[SUBS];
    uint64_t ids[SUBS];
    for (int i = 0; i < SUBS; i++) {
        size_t mark = nseen;
        fds[i] = open_client(port, i == 0 ? 4096 : 0); /* 0: the victim, a small receive buffer */
        const seen_t *ev = wait_event(s, SY_EV_OPEN, mark);
        ids[i] = ev != NULL ? ev->conn : 0;
        /* In this order: the victim first in the subscriber array. */
        CHECK_EQ(sy_server_subscribe(s, ids[i], "t", 1), 0);
    }
    /* The victim's socket fills (it never reads) while its queue keeps some
     * bytes: the poller is asked for writability now, while it still can. */
    int victim = server_side(fds[0]);
    CHECK(victim >= 0);
    int small = 4096;
    CHECK_EQ(setsockopt(victim, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    static uint8_t chunk[BIG];
    memset(chunk, 'v', sizeof(chunk));
    for (int i = 0; i < 12; i++)
        CHECK_EQ(sy_server_send(s, ids[0], chunk, 4096, SY_SEND_BINARY), 0);
    usleep(300000);
    /* Now the poller refuses the victim: the next change of its interest
     * fails (ENOENT). */
    int ep[4];
    CHECK_EQ(epoll_fds(ep, 4), 1);
    CHECK_EQ(epoll_ctl(ep[0], EPOLL_CTL_DEL, victim, NULL), 0);
    /* A message too big for the victim's queue: it fails (slow consumer)
     * in the middle of the walk; everyone else must get it. */
    size_t subs = 0;
    memset(chunk, 'B', sizeof(chunk));
    CHECK_EQ(sy_server_publish(s, "t", 1, chunk, BIG, SY_SEND_BINARY, &subs), 0);
    CHECK_EQU(subs, SUBS);
    static uint8_t got[BIG];
    for (int i = 1; i < SUBS; i++) {
        long n = read_frame(fds[i], got, sizeof(got));
        CHECK_EQ(n, BIG);
        if (n != BIG)
            fprintf(stderr, "  subscriber %d of %d missed the message\n", i, SUBS);
        else
            CHECK(got[0] == 'B' && got[BIG - 1] == 'B');
    }
    /* The victim closes: after its close timeout, since it never reads. */
    size_t mark = 0;
    const seen_t *cl = NULL;
    for (int tries = 0; tries < 5 && cl == NULL; tries++) {
        cl = wait_event(s, SY_EV_CLOSE, mark);
        if (cl != NULL && cl->conn != ids[0]) {
            mark = (size_t)(cl - seen) + 1;
            cl = NULL;
        }
    }
    CHECK(cl != NULL);
    sy_stats_t st;
    sy_server_thread_stats(s, 0, &st);
    CHECK_EQU(st.slow_closes, 1);
    CHECK_EQU(st.connections, SUBS - 1);
    sy_server_shutdown(s, 0);
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    for (int i = 0; i < SUBS; i++)
        close(fds[i]);
}

static void test_poll_failure(void) {
    nseen = 0;
    sy_server_opts_t o = {
        .host = "127.0.0.1", .threads = 2, .max_payload = 1 << 16, .max_backpressure = 1 << 20,
        .handshake_timeout_s = 5, .close_timeout_s = 1, .max_head_bytes = 8192, .max_headers = 64, .backlog = 64,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    uint16_t port = 0;
    CHECK(s != NULL && sy_server_listen(s, &port, err, sizeof(err)) == 0);
    int a = open_client(port, 0), b = open_client(port, 0);
    CHECK(wait_event(s, SY_EV_OPEN, 0) != NULL);
    int ep[4];
    int n = epoll_fds(ep, 4);
    CHECK_EQ(n, 2);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (int i = 0; i < n; i++)
        CHECK(dup2(null, ep[i]) == ep[i]); /* every later epoll_wait fails: EINVAL */
    close(null);
    /* Both threads give up within their retries (100 x 10 ms), report why,
     * close their connections and stop. */
    int failed = 0, stopped = 0, closed = 0;
    for (int i = 0; i < 1000 && stopped < 2; i++) {
        drain(s);
        usleep(10000);
        failed = stopped = closed = 0;
        for (size_t k = 0; k < nseen; k++) {
            failed += seen[k].type == SY_EV_FAILED;
            stopped += seen[k].type == SY_EV_STOPPED;
            closed += seen[k].type == SY_EV_CLOSE;
        }
    }
    CHECK_EQ(failed, 2);
    CHECK_EQ(stopped, 2);
    CHECK_EQ(closed, 2);
    for (size_t k = 0; k < nseen; k++) {
        if (seen[k].type == SY_EV_FAILED) /* why, as an errno value and its text */
            CHECK(seen[k].code == EINVAL && seen[k].len > 0);
        if (seen[k].type == SY_EV_CLOSE) /* the clients' close events: a server error */
            CHECK_EQ(seen[k].code, 1011);
    }
    if (stopped < 2) {
        fprintf(stderr, "test_faults: the IO threads did not stop after their poller failed\n");
        _exit(check_report("faults"));
    }
    uint8_t buf[64];
    CHECK_EQU(read_some(a, buf, sizeof(buf), sizeof(buf)), 0); /* closed, no close frame */
    CHECK_EQU(read_some(b, buf, sizeof(buf), sizeof(buf)), 0);
    sy_stats_t st0, st1;
    sy_server_thread_stats(s, 0, &st0);
    sy_server_thread_stats(s, 1, &st1);
    CHECK(st0.poll_failures >= 100 && st1.poll_failures >= 100);
    CHECK_EQU(st0.connections + st1.connections, 0);
    /* A thread that has stopped takes no more commands. */
    CHECK_EQ(sy_server_subscribe(s, seen[0].conn, "t", 1), ENOTCONN);
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    close(a);
    close(b);
}

/* Only IO thread 1's poller fails: thread 0 goes on accepting, and the
 * sockets it would have dealt to thread 1 (which takes no more commands)
 * are served by thread 0 instead of waiting in a dead queue. */
static void test_one_thread_fails(void) {
    nseen = 0;
    sy_server_opts_t o = {
        .host = "127.0.0.1", .threads = 2, .max_payload = 1 << 16, .max_backpressure = 1 << 20,
        .handshake_timeout_s = 5, .close_timeout_s = 1, .max_head_bytes = 8192, .max_headers = 64, .backlog = 64,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    uint16_t port = 0;
    CHECK(s != NULL && sy_server_listen(s, &port, err, sizeof(err)) == 0);
    /* Thread 0's epoll set is the one that holds the listening socket. */
    int listener = -1;
    for (int fd = 3; fd < 1024 && listener < 0; fd++) {
        struct sockaddr_in a;
        socklen_t l = sizeof(a);
        int acc = 0;
        socklen_t al = sizeof(acc);
        if (getsockname(fd, (struct sockaddr *)&a, &l) == 0 && a.sin_family == AF_INET && ntohs(a.sin_port) == port &&
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc)
            listener = fd;
    }
    CHECK(listener >= 0);
    int ep[4], n = epoll_fds(ep, 4), other = -1;
    CHECK_EQ(n, 2);
    for (int i = 0; i < n; i++) {
        struct epoll_event probe = {.events = EPOLLIN | EPOLLRDHUP, .data.u64 = 2 /* sy_io.c's LISTEN_TAG */};
        if (epoll_ctl(ep[i], EPOLL_CTL_MOD, listener, &probe) != 0 && errno == ENOENT)
            other = ep[i];
    }
    CHECK(other >= 0);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(dup2(null, other) == other);
    close(null);
    int failed = 0;
    for (int i = 0; i < 500 && failed == 0; i++) {
        drain(s);
        usleep(10000);
        for (size_t k = 0; k < nseen; k++)
            failed += seen[k].type == SY_EV_FAILED && seen[k].conn == 1;
    }
    CHECK_EQ(failed, 1);
    /* Dealt in turn to both threads: every one must still be upgraded. */
    int fds[6];
    for (int i = 0; i < 6; i++) {
        fds[i] = open_client(port, 0); /* checks the 101 */
        CHECK(fds[i] >= 0);
    }
    sy_stats_t st0;
    sy_server_thread_stats(s, 0, &st0);
    CHECK_EQU(st0.opened, 6);
    CHECK_EQU(st0.connections, 6);
    sy_server_shutdown(s, 0);
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    for (int i = 0; i < 6; i++)
        close(fds[i]);
}

int main(void) {
    test_publish_while_failing();
    test_poll_failure();
    test_one_thread_fails();
    return check_report("faults");
}
