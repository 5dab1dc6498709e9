/* slowConsumer 'conflate' end to end under the sanitizers (and valgrind): a
 * raw client with a small receive buffer stops reading while three topics
 * publish numbered messages; the queue's replaced frames are released (a
 * leak or a double release shows here), a direct message over the limit is
 * dropped, and once the client reads it gets per topic increasing numbers
 * ending with the last one. Also the topics' 0 <-> 1 events (SY_EV_TOPIC):
 * one on at the subscriptions, one off at the close. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/sy_alloc.h"
#include "check.h"
#include "harness.h"
#include "io/model/sy_events.h"
#include "sy_server.h"

#define NTOPICS 3
#define ROUNDS 400
#define SIZE 512
#define LIMIT 8192

static const char *const names[NTOPICS] = {"a", "b", "c"};

/* A client whose receive buffer stays small (set before connect: no
 * autotuning), so that the server's queue, not the kernel, holds the
 * backlog. */
static int connect_small(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int rcv = 4096;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) != 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return -1;
    return fd;
}

static sy_stats_t stats_of(sy_server_t *s) {
    sy_stats_t st;
    sy_server_thread_stats(s, 0, &st);
    return st;
}

/* Waits until pred holds on the thread's stats (about 5 s at most). */
static bool wait_stats(sy_server_t *s, bool (*pred)(const sy_stats_t *, uint64_t), uint64_t arg) {
    for (int i = 0; i < 500; i++) {
        drain(s);
        sy_stats_t st = stats_of(s);
        if (pred(&st, arg))
            return true;
        usleep(10000);
    }
    return false;
}
static bool all_handled(const sy_stats_t *st, uint64_t n) { return st->messages_out + st->dropped >= n; }

/* One round: each topic's message number r ("<topic> <r>", padded). */
static void publish_round(sy_server_t *s, int r, unsigned flags) {
    char msg[SIZE];
    for (int t = 0; t < NTOPICS; t++) {
        memset(msg, ' ', sizeof(msg));
        int k = snprintf(msg, sizeof(msg), "%d %d", t, r);
        msg[k] = ' ';
        size_t subs = 0;
        CHECK_EQ(sy_server_publish(s, names[t], 1, msg, sizeof(msg), flags, &subs), 0);
    }
}

/* SY_EV_TOPIC events for topic name seen so far. */
static int topic_events(const char *name) {
    int n = 0;
    for (size_t k = 0; k < nseen; k++)
        n += seen[k].type == SY_EV_TOPIC && seen[k].len == strlen(name) &&
             memcmp(seen[k].payload, name, seen[k].len) == 0;
    return n;
}

int main(void) {
    sy_server_opts_t o = {
        .host = "127.0.0.1",
        .port = 0,
        .threads = 1,
        .max_payload = 1 << 16,
        .max_backpressure = LIMIT,
        .slow_consumer = SY_SLOW_CONFLATE,
        .idle_timeout_s = 0,
        .handshake_timeout_s = 5,
        .close_timeout_s = 2,
        .max_head_bytes = 8192,
        .max_headers = 64,
        .backlog = 64,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    CHECK(s != NULL);
    uint16_t port = 0;
    CHECK_EQ(sy_server_listen(s, &port, err, sizeof(err)), 0);
    sy_server_topic_events(s, true);

    int fd = connect_small(port);
    CHECK(fd >= 0);
    const char *req = "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    CHECK_EQ(write(fd, req, strlen(req)), (long long)strlen(req));
    static uint8_t buf[1 << 20];
    size_t n = read_some(fd, buf, 129, 129);
    CHECK(n == 129 && memcmp(buf, "HTTP/1.1 101", 12) == 0);
    const seen_t *open = wait_event(s, SY_EV_OPEN, 0);
    CHECK(open != NULL);
    uint64_t id = open ? open->conn : 0;
    for (int t = 0; t < NTOPICS; t++)
        CHECK_EQ(sy_server_subscribe(s, id, names[t], 1), 0);
    for (int i = 0; i < 500 && topic_events("c") == 0; i++) {
        drain(s);
        usleep(10000);
    }
    for (int t = 0; t < NTOPICS; t++) {
        CHECK_EQ(topic_events(names[t]), 1); /* 0 -> 1 */
        CHECK_EQU(sy_server_topic_applied(s, names[t], 1), 1);
    }

    /* The client reads nothing while every round publishes each topic. */
    int rounds = 0;
    for (; rounds < ROUNDS; rounds++) {
        publish_round(s, rounds, 0);
        if (rounds % 50 == 49) /* the command queue is not the bound under test */
            CHECK(wait_stats(s, all_handled, (uint64_t)(rounds + 1) * NTOPICS));
    }
    CHECK(wait_stats(s, all_handled, (uint64_t)rounds * NTOPICS));
    sy_stats_t st = stats_of(s);
    CHECK(st.conflated > 0);
    CHECK_EQU(st.dropped, 0);
    CHECK_EQU(st.slow_closes, 0);
    CHECK_EQU(st.messages_out, (uint64_t)rounds * NTOPICS);

    /* A direct message over the limit is dropped and counted: queued in the
     * same turn as a burst of publishes (SY_SEND_LATER, then one wake-up), so
     * that the queue is over the limit when it comes, whatever the kernel
     * took meanwhile (a send buffer that grows lets it take more). */
    for (int k = 0; k < 20; k++)
        publish_round(s, rounds++, SY_SEND_LATER);
    CHECK_EQ(sy_server_send(s, id, "direct", 6, SY_SEND_LATER), 0);
    sy_server_wake(s);
    CHECK(wait_stats(s, all_handled, (uint64_t)rounds * NTOPICS + 1));
    st = stats_of(s);
    CHECK_EQU(st.dropped, 1);
    CHECK_EQU(st.messages_out, (uint64_t)rounds * NTOPICS);

    /* Reading now: per topic increasing numbers, ending with the last. */
    int last[NTOPICS] = {-1, -1, -1};
    size_t have = 0, frames = 0, got_directs = 0;
    bool done = false;
    for (int spins = 0; spins < 5000 && !done; spins++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 3000) <= 0)
            break;
        ssize_t r = read(fd, buf + have, sizeof(buf) - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        size_t at = 0;
        for (;;) {
            if (have - at < 2)
                break;
            size_t len = buf[at + 1] & 0x7fu, hdr = 2;
            if (len == 126) {
                if (have - at < 4)
                    break;
                len = (size_t)((buf[at + 2] << 8) | buf[at + 3]);
                hdr = 4;
            }
            if (have - at < hdr + len)
                break;
            CHECK(buf[at] == 0x81);
            if (len == 6) {
                CHECK(memcmp(buf + at + hdr, "direct", 6) == 0);
                got_directs++;
            } else {
                CHECK_EQU(len, SIZE);
                int t = -1, v = -1;
                CHECK_EQ(sscanf((const char *)buf + at + hdr, "%d %d", &t, &v), 2);
                if (t >= 0 && t < NTOPICS) {
                    CHECK(v > last[t]); /* per topic, increasing */
                    last[t] = v;
                }
                frames++;
            }
            at += hdr + len;
        }
        memmove(buf, buf + at, have - at);
        have -= at;
        done = last[0] == rounds - 1 && last[1] == rounds - 1 && last[2] == rounds - 1;
    }
    CHECK(done);
    CHECK_EQU(got_directs, 0); /* the dropped one never comes */
    CHECK(frames < (size_t)rounds * NTOPICS);
    CHECK_EQU(frames + stats_of(s).conflated, (uint64_t)rounds * NTOPICS);

    /* The close ends the subscriptions: one 1 -> 0 per topic. */
    size_t mark = nseen;
    close(fd);
    CHECK(wait_event(s, SY_EV_CLOSE, mark) != NULL);
    for (int i = 0; i < 500 && topic_events("c") < 2; i++) {
        drain(s);
        usleep(10000);
    }
    for (int t = 0; t < NTOPICS; t++) {
        CHECK_EQ(topic_events(names[t]), 2);
        CHECK_EQU(sy_server_topic_applied(s, names[t], 1), 0);
    }

    sy_server_shutdown(s, 0);
    for (int i = 0; i < 300 && wait_event(s, SY_EV_STOPPED, mark) == NULL; i++)
        usleep(10000);
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    return check_report("conflate");
}
