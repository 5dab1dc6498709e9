/* sy_ask through a real server on loopback (io/sy_ask.h, docs/protocol.md
 * "Clients ask"): a raw symphony.v2 client's application message, a
 * subscribe answered by the owner (the notice carries its request id), a
 * subscribe left pending, the limits (maxPending, maxSubscriptions), an
 * unsubscribe that drops a pending grant (the owner's late answer is
 * dropped natively), an unknown kind, and malformed frames until the
 * 1008 close; the greeting; entries past maxPending waiting for room; one
 * bad entry refused alone; 17 malformed frames in one write (the 16
 * answers before the close); then a connection closed with asks pending and the server
 * torn down: LeakSanitizer (make test) and valgrind (make valgrind) see
 * every ask's memory given back. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "harness.h"
#include "io/app/sy_ask.h"
#include "proto/sy_v2.h"

/* One masked client frame (FIN, opcode) carrying payload. */
static void send_frame(int fd, unsigned opcode, const void *payload, size_t len) {
    uint8_t h[14] = {(uint8_t)(0x80 | opcode)};
    size_t hl = 2;
    if (len < 126) {
        h[1] = (uint8_t)(0x80 | len);
    } else {
        h[1] = 0x80 | 126;
        h[2] = (uint8_t)(len >> 8);
        h[3] = (uint8_t)len;
        hl = 4;
    }
    static const uint8_t mask[4] = {1, 2, 3, 4};
    memcpy(h + hl, mask, 4);
    hl += 4;
    uint8_t body[2048];
    for (size_t i = 0; i < len && i < sizeof(body); i++)
        body[i] = ((const uint8_t *)payload)[i] ^ mask[i % 4];
    CHECK_EQ(write(fd, h, hl), (long long)hl);
    CHECK_EQ(write(fd, body, len), (long long)len);
}

static void send_text(int fd, const char *s) { send_frame(fd, 0x1, s, strlen(s)); }

/* A masked text frame of s (under 126 bytes) at out: its length. */
static size_t text_frame_into(uint8_t *out, const char *s) {
    size_t len = strlen(s);
    static const uint8_t mask[4] = {1, 2, 3, 4};
    out[0] = 0x81;
    out[1] = (uint8_t)(0x80 | len);
    memcpy(out + 2, mask, 4);
    for (size_t i = 0; i < len; i++)
        out[6 + i] = (uint8_t)s[i] ^ mask[i % 4];
    return 6 + len;
}

/* The next server frame's opcode and payload (NUL-terminated in out). */
static int read_frame(int fd, char *out, size_t cap, size_t *len) {
    uint8_t h[4];
    if (read_some(fd, h, 2, 2) != 2)
        return -1;
    size_t n = h[1] & 0x7f;
    if (n == 126) {
        if (read_some(fd, h + 2, 2, 2) != 2)
            return -1;
        n = ((size_t)h[2] << 8) | h[3];
    }
    if (n >= cap || read_some(fd, (uint8_t *)out, n, n) != n)
        return -1;
    out[n] = '\0';
    *len = n;
    return h[0] & 0x0f;
}

/* Reads frames until one holds want; true when found. */
static bool expect_frame(int fd, const char *want) {
    char f[4096];
    size_t n;
    for (int i = 0; i < 20; i++) {
        if (read_frame(fd, f, sizeof(f), &n) < 0)
            return false;
        if (strstr(f, want) != NULL)
            return true;
    }
    return false;
}

static int open_v2(uint16_t port) {
    int fd = connect_to(port);
    CHECK(fd >= 0);
    const char *req = "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                      "Sec-WebSocket-Protocol: symphony.v1, symphony.v2\r\n\r\n";
    CHECK_EQ(write(fd, req, strlen(req)), (long long)strlen(req));
    char head[1024];
    size_t got = 0;
    while (got < sizeof(head) - 1) { /* up to the end of the 101 */
        if (read_some(fd, (uint8_t *)head + got, 1, 1) != 1)
            break;
        got++;
        head[got] = '\0';
        if (got >= 4 && memcmp(head + got - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    CHECK(strstr(head, "HTTP/1.1 101") == head);
    CHECK(strstr(head, "Sec-WebSocket-Protocol: symphony.v2\r\n") != NULL);
    /* The greeting is the first frame (issue 42): the server's limits. */
    char f[512];
    size_t n = 0;
    CHECK_EQ(read_frame(fd, f, sizeof(f), &n), 0x1);
    CHECK(strcmp(f, "c{\"type\":\"hello\",\"limits\":{\"maxPayload\":65536,\"maxSubscriptions\":3,"
                    "\"maxPending\":2,\"maxTopicLength\":1024,\"maxEntries\":1024}}") == 0);
    return fd;
}

/* The next SY_EV_ASK after *from (the harness keeps no flags: the kind is
 * the test's order of asks). */
static const seen_t *wait_ask(sy_server_t *s, size_t *from) {
    const seen_t *e = wait_event(s, SY_EV_ASK, *from);
    if (e != NULL)
        *from = (size_t)(e - seen) + 1;
    return e;
}

int main(void) {
    sy_server_opts_t o = {
        .host = "127.0.0.1",
        .port = 0,
        .threads = 1,
        .max_payload = 1 << 16,
        .max_backpressure = 1 << 20,
        .idle_timeout_s = 0,
        .handshake_timeout_s = 5,
        .close_timeout_s = 2,
        .max_head_bytes = 8192,
        .max_headers = 64,
        .backlog = 64,
        .reclaim = true,
        .max_subscriptions = 3,
        .max_pending = 2,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    CHECK(s != NULL);
    uint16_t port = 0;
    CHECK_EQ(sy_server_listen(s, &port, err, sizeof(err)), 0);

    int fd = open_v2(port);
    const seen_t *open = wait_event(s, SY_EV_OPEN, 0);
    CHECK(open != NULL);
    uint64_t id = open ? open->conn : 0;

    /* An application message: "d\n" taken off. */
    size_t mark = nseen;
    send_text(fd, "d\nhello");
    const seen_t *m = wait_event(s, SY_EV_MESSAGE, mark);
    CHECK(m != NULL && m->len == 5 && memcmp(m->payload, "hello", 5) == 0);

    /* Two subscribes: both to the owner, as SY_EV_ASK 's'. */
    size_t from = nseen;
    send_text(fd, "s{\"subs\":[{\"rid\":1,\"topic\":\"a\"},{\"rid\":2,\"topic\":\"b\"}]}");
    const seen_t *a1 = wait_ask(s, &from);
    const seen_t *a2 = wait_ask(s, &from);
    CHECK(a1 != NULL && a2 != NULL);
    CHECK(a1 != NULL && a1->payload[0] == 1); /* the rid's length: "1" */
    /* rid 1 granted: the notice names it. */
    CHECK_EQ(sy_server_answer_subscribe(s, id, 1, "a", 1, false, 0, 0, ",\"rid\":1", 8), 0);
    CHECK(expect_frame(fd, "\"type\":\"subscribed\",\"topic\":\"a\""));
    /* rid 3 pending too (2 of maxPending 2); rid 4 past maxSubscriptions
     * (1 held + 2 asked = 3); rid 5 past maxPending is refused the same way
     * only once subscriptions have room: here the subscriptions' limit says no. */
    send_text(fd, "s{\"subs\":[{\"rid\":3,\"topic\":\"c\"},{\"rid\":4,\"topic\":\"d\"}]}");
    CHECK(wait_ask(s, &from) != NULL);
    CHECK(expect_frame(fd, "\"type\":\"refused\",\"rid\":4,\"topic\":\"d\",\"code\":\"too-many-subscriptions\""));
    /* A request past maxPending. */
    send_text(fd, "r{\"rid\":6}\nq");
    CHECK(expect_frame(fd, "\"type\":\"error\",\"rid\":6,\"code\":\"too-many-pending\""));

    /* Unsubscribe b while its grant is pending: answered, the grant dropped. */
    send_text(fd, "u{\"rid\":7,\"topic\":\"b\"}");
    CHECK(expect_frame(fd, "\"type\":\"unsubscribed\",\"rid\":7,\"topic\":\"b\""));
    CHECK(wait_ask(s, &from) != NULL);
    CHECK_EQ(sy_server_answer_subscribe(s, id, 2, "b", 1, false, 0, 0, ",\"rid\":2", 8), 0);
    /* An answer to an ask that is not pending is dropped too. */
    const char stray[] = "c{\"type\":\"published\",\"rid\":99}";
    CHECK_EQ(sy_server_answer(s, id, 99, stray, sizeof(stray) - 1, false), 0);
    /* The next frame the client gets is the answer to what follows (the
     * dropped ones sent nothing). */
    send_text(fd, "x{}");
    CHECK(expect_frame(fd, "\"code\":\"unknown-kind\""));
    CHECK_EQU(sy_server_subscribers(s, "b", 1), 0);
    CHECK_EQU(sy_server_subscribers(s, "a", 1), 1);

    /* Malformed frames: answered, and the 17th closes 1008. */
    for (int i = 0; i < SY_ASK_BAD_MAX; i++) {
        send_text(fd, "s[]");
        CHECK(expect_frame(fd, "\"code\":\"bad-request\""));
    }
    send_text(fd, "s[]");
    char f[512];
    size_t n = 0;
    int op = read_frame(fd, f, sizeof(f), &n);
    CHECK_EQ(op, 0x8);
    CHECK(n >= 2 && ((uint8_t)f[0] << 8 | (uint8_t)f[1]) == 1008);
    close(fd);

    /* Past maxPending, a frame's entries wait on the IO thread and go to
     * the owner as earlier asks are answered (issue 43): none refused. */
    int fd3 = open_v2(port);
    mark = nseen;
    send_text(fd3, "s{\"subs\":[{\"rid\":1,\"topic\":\"x\"},{\"rid\":2,\"topic\":\"y\"},{\"rid\":3,"
                   "\"topic\":\"z\",\"data\":[1]}]}");
    const seen_t *o3 = wait_event(s, SY_EV_OPEN, mark);
    uint64_t id3 = o3 ? o3->conn : 0;
    from = nseen;
    CHECK(wait_ask(s, &from) != NULL);
    CHECK(wait_ask(s, &from) != NULL);
    CHECK_EQ(sy_server_answer_subscribe(s, id3, 1, "x", 1, false, 0, 0, ",\"rid\":1", 8), 0);
    CHECK(expect_frame(fd3, "\"type\":\"subscribed\",\"topic\":\"x\""));
    const seen_t *z = wait_ask(s, &from); /* rid 3 went on once rid 1 was answered */
    CHECK(z != NULL && z->len > 5 && z->payload[4] == '3');
    /* Full (1 held, 2 pending: maxSubscriptions 3): refused, not kept. */
    send_text(fd3, "s{\"subs\":[{\"rid\":4,\"topic\":\"w\"}]}");
    CHECK(expect_frame(fd3, "\"rid\":4,\"topic\":\"w\",\"code\":\"too-many-subscriptions\""));
    close(fd3);

    /* One bad entry refuses one entry: the other goes to the owner. */
    int fd4 = open_v2(port);
    from = nseen;
    send_text(fd4, "s{\"subs\":[{\"rid\":1,\"topic\":\"\"},{\"rid\":2,\"topic\":\"q\"},{\"rid\":3,\"topic\":\"r\","
                   "\"since\":5}]}");
    CHECK(expect_frame(fd4, "\"type\":\"refused\",\"rid\":1,\"topic\":\"\",\"code\":\"bad-request\""));
    CHECK(expect_frame(fd4, "\"type\":\"refused\",\"rid\":3,\"topic\":\"r\",\"code\":\"bad-request\""));
    const seen_t *q = wait_ask(s, &from);
    CHECK(q != NULL && q->len > 5 && q->payload[4] == '2');
    close(fd4);

    /* 17 malformed frames in one write: the 16 answers, then the 1008. */
    int fd5 = open_v2(port);
    uint8_t burst[(SY_ASK_BAD_MAX + 1) * 16];
    size_t bn = 0;
    for (int i = 0; i <= SY_ASK_BAD_MAX; i++)
        bn += text_frame_into(burst + bn, "s[]");
    CHECK_EQ(write(fd5, burst, bn), (long long)bn);
    int answers = 0;
    for (;;) {
        op = read_frame(fd5, f, sizeof(f), &n);
        if (op != 0x1)
            break;
        answers += strstr(f, "\"code\":\"bad-request\"") != NULL;
    }
    CHECK_EQ(answers, SY_ASK_BAD_MAX);
    CHECK_EQ(op, 0x8);
    CHECK(n >= 2 && ((uint8_t)f[0] << 8 | (uint8_t)f[1]) == 1008);
    close(fd5);

    /* A connection that goes with asks pending (rid 3 of the first one went
     * with it too): nothing leaks. */
    int fd2 = open_v2(port);
    send_text(fd2, "s{\"subs\":[{\"rid\":1,\"topic\":\"p\",\"data\":{\"k\":[1,2]}}]}");
    send_text(fd2, "p{\"rid\":2,\"topic\":\"p\"}\npayload");
    CHECK(wait_ask(s, &from) != NULL);
    CHECK(wait_ask(s, &from) != NULL);
    close(fd2);

    sy_server_shutdown(s, 0);
    for (int i = 0; i < 500; i++) {
        drain(s);
        bool stopped = false;
        for (size_t k = 0; k < nseen; k++)
            stopped = stopped || seen[k].type == SY_EV_STOPPED;
        if (stopped)
            break;
        usleep(10000);
    }
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    return check_report("test_ask");
}
