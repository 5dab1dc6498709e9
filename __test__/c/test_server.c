/* The server core end to end under the sanitizers (and valgrind): a real
 * listening socket on loopback, a raw client, every event through batches,
 * shutdown, join and free with nothing leaked. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/sy_alloc.h"
#include "check.h"
#include "harness.h"
#include "io/model/sy_events.h"
#include "sy_server.h"

static void send_masked(int fd, uint8_t b0, const char *payload, size_t len, int mask) {
    uint8_t f[140];
    size_t n = 0;
    f[n++] = b0;
    f[n++] = (uint8_t)((mask ? 0x80 : 0) | len);
    const uint8_t key[4] = {1, 2, 3, 4};
    if (mask) {
        memcpy(f + n, key, 4);
        n += 4;
    }
    for (size_t i = 0; i < len; i++)
        f[n++] = (uint8_t)(payload[i] ^ (mask ? key[i & 3] : 0));
    CHECK_EQ(write(fd, f, n), (long long)n);
}

/* The memory policy's moves, checked by the sanitizers: every block moves
 * (sy_alloc_test_move_all), 200 connections fall to 10, the reclaim moves the
 * survivors; then each survivor must still get a publish to its topic and
 * still be heard. A pointer left behind (slot table, poller, topic list) is
 * a use after free here. */
#define RECLAIM_CLIENTS 200
#define RECLAIM_KEEP 10

static void test_reclaim_moves(sy_server_t *s, uint16_t port, const char *req) {
    static int fds[RECLAIM_CLIENTS];
    uint8_t buf[256];
    sy_alloc_test_move_all(true);
    size_t mark = nseen;
    for (int i = 0; i < RECLAIM_CLIENTS; i++) {
        fds[i] = connect_to(port);
        CHECK(fds[i] >= 0);
        CHECK_EQ(write(fds[i], req, strlen(req)), (long long)strlen(req));
        CHECK(read_some(fds[i], buf, sizeof(buf), 129) >= 129);
    }
    size_t opened = 0, next = mark;
    for (int t = 0; t < 500 && opened < RECLAIM_CLIENTS; t++) {
        drain(s);
        for (; next < nseen; next++)
            if (seen[next].type == SY_EV_OPEN && sy_server_subscribe(s, seen[next].conn, "r", 1) == 0)
                opened++;
        if (opened < RECLAIM_CLIENTS)
            usleep(10000);
    }
    CHECK_EQU(opened, RECLAIM_CLIENTS);
    for (int i = 0; i < RECLAIM_CLIENTS - RECLAIM_KEEP; i++)
        close(fds[i]);
    uint64_t reclaims = 0, moved = 0;
    for (int t = 0; t < 600 && !(reclaims >= 2 && moved >= RECLAIM_KEEP); t++) {
        drain(s);
        sy_stats_t a, b;
        sy_server_thread_stats(s, 0, &a);
        sy_server_thread_stats(s, 1, &b);
        reclaims = (a.reclaims > 0) + (b.reclaims > 0);
        moved = a.reclaim_moved + b.reclaim_moved;
        usleep(10000);
    }
    CHECK_EQU(reclaims, 2); /* both threads fell from 100 to 5 */
    CHECK(moved >= RECLAIM_KEEP);
    size_t subs = 0;
    CHECK_EQ(sy_server_publish(s, "r", 1, "moved", 5, 0, &subs), 0);
    CHECK_EQU(subs, RECLAIM_KEEP);
    for (int i = RECLAIM_CLIENTS - RECLAIM_KEEP; i < RECLAIM_CLIENTS; i++) {
        size_t n = read_some(fds[i], buf, sizeof(buf), 7);
        CHECK(n == 7 && buf[0] == 0x81 && buf[1] == 5 && memcmp(buf + 2, "moved", 5) == 0);
    }
    mark = nseen;
    for (int i = RECLAIM_CLIENTS - RECLAIM_KEEP; i < RECLAIM_CLIENTS; i++)
        send_masked(fds[i], 0x81, "ok", 2, 1);
    size_t heard = 0;
    for (int t = 0; t < 300 && heard < RECLAIM_KEEP; t++) {
        drain(s);
        heard = 0;
        for (size_t k = mark; k < nseen; k++)
            heard += seen[k].type == SY_EV_MESSAGE && seen[k].len == 2 && memcmp(seen[k].payload, "ok", 2) == 0;
        usleep(10000);
    }
    CHECK_EQU(heard, RECLAIM_KEEP);
    for (int i = RECLAIM_CLIENTS - RECLAIM_KEEP; i < RECLAIM_CLIENTS; i++)
        close(fds[i]);
    sy_alloc_test_move_all(false);
}

int main(void) {
    sy_server_opts_t o = {
        .host = "127.0.0.1",
        .port = 0,
        .threads = 2,
        .max_payload = 1 << 16,
        .max_backpressure = 1 << 20,
        .idle_timeout_s = 0,
        .handshake_timeout_s = 5,
        .close_timeout_s = 2,
        .max_head_bytes = 8192,
        .max_headers = 64,
        .backlog = 64,
        .reclaim = true,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    CHECK(s != NULL);
    uint16_t port = 0;
    CHECK_EQ(sy_server_listen(s, &port, err, sizeof(err)), 0);
    CHECK(port != 0);

    int fd = connect_to(port);
    CHECK(fd >= 0);
    const char *req = "GET /x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    CHECK_EQ(write(fd, req, strlen(req)), (long long)strlen(req));
    uint8_t buf[4096];
    size_t n = read_some(fd, buf, sizeof(buf) - 1, 129);
    buf[n] = 0;
    CHECK(strstr((char *)buf, "HTTP/1.1 101") == (char *)buf);
    CHECK(strstr((char *)buf, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") != NULL);

    const seen_t *open = wait_event(s, SY_EV_OPEN, 0);
    CHECK(open != NULL);
    uint64_t id = open ? open->conn : 0;
    CHECK(sy_server_is_open(s, id));
    CHECK_EQ(sy_server_subscribe(s, id, "t", 1), 0);
    size_t subs = 9;
    CHECK_EQ(sy_server_publish(s, "t", 1, "hi", 2, 0, &subs), 0);
    CHECK_EQU(subs, 1);
    CHECK_EQ(sy_server_publish(s, "nobody", 6, "x", 1, 0, &subs), 0);
    CHECK_EQU(subs, 0);
    n = read_some(fd, buf, sizeof(buf), 4);
    CHECK_EQU(n, 4);
    CHECK(buf[0] == 0x81 && buf[1] == 2 && memcmp(buf + 2, "hi", 2) == 0);

    size_t mark = nseen;
    send_masked(fd, 0x81, "yo", 2, 1);
    const seen_t *msg = wait_event(s, SY_EV_MESSAGE, mark);
    CHECK(msg != NULL && msg->len == 2 && memcmp(msg->payload, "yo", 2) == 0 && msg->conn == id);

    /* An unmasked frame: 1002, the socket closed, the close event says so. */
    mark = nseen;
    send_masked(fd, 0x81, "no", 2, 0);
    n = read_some(fd, buf, sizeof(buf), 64);
    CHECK(n >= 4 && buf[0] == 0x88 && ((buf[2] << 8) | buf[3]) == 1002);
    const seen_t *cl = wait_event(s, SY_EV_CLOSE, mark);
    CHECK(cl != NULL && cl->code == 1002 && cl->conn == id);
    CHECK(!sy_server_is_open(s, id));
    CHECK_EQ(sy_server_send(s, id, "x", 1, 0), ENOTCONN);
    close(fd);

    test_reclaim_moves(s, port, req);

    /* A second client stays open through shutdown: it gets 1001. */
    fd = connect_to(port);
    CHECK_EQ(write(fd, req, strlen(req)), (long long)strlen(req));
    n = read_some(fd, buf, sizeof(buf), 129);
    CHECK(n >= 129);
    mark = nseen;
    CHECK(wait_event(s, SY_EV_OPEN, mark) != NULL);
    sy_stats_t st0, st1;
    sy_server_thread_stats(s, 0, &st0);
    sy_server_thread_stats(s, 1, &st1);
    CHECK_EQU(st0.opened + st1.opened, 2 + RECLAIM_CLIENTS);
    CHECK_EQU(st0.opened, 1 + RECLAIM_CLIENTS / 2); /* dealt round robin */
    CHECK_EQU(st0.protocol_errors + st1.protocol_errors, 1);

    mark = nseen;
    sy_server_shutdown(s, 200);
    n = read_some(fd, buf, sizeof(buf), 64);
    CHECK(n >= 4 && buf[0] == 0x88 && ((buf[2] << 8) | buf[3]) == 1001);
    int stopped = 0;
    for (int i = 0; i < 300 && stopped < 2; i++) {
        drain(s);
        stopped = 0;
        for (size_t k = mark; k < nseen; k++)
            stopped += seen[k].type == SY_EV_STOPPED;
        usleep(10000);
    }
    CHECK_EQ(stopped, 2);
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    close(fd);
    return check_report("server");
}
