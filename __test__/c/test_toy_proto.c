/*
 * test_toy_proto — a protocol the core has never heard of, added the way
 * docs/internals.md "Adding a protocol" says, without touching a file of
 * src/: a line protocol ("lines"), its wire (a client's line is a message;
 * the owner's messages and publishes are lines; the server's close is a
 * "bye <code> <reason>" line) and its message protocol, registered with
 * sy_server_add_protocol and chosen at the request head by its Upgrade
 * token. Real sockets on loopback, the owner's events through batches; run
 * under ASan/UBSan (make test) and valgrind (make valgrind).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_buf.h"
#include "check.h"
#include "harness.h"
#include "io/conn/sy_conn.h"
#include "proto/sy_ws_frame.h"

/* ---- the protocol: its own file in a real server ------------------------- */

/* Bytes read: every whole line (without its LF) is a message; the rest
 * waits in the connection's receive buffer. */
static void lines_data(sy_io_t *io, sy_conn_t *c, uint8_t *p, size_t n) {
    if (sy_buf_append(&c->rbuf, &c->rlen, &c->rcap, p, n, 256) != 0) {
        sy_conn_fail_oom(io, c);
        return;
    }
    size_t start = 0;
    for (size_t i = 0; i < c->rlen && c->state == SY_CONN_OPEN; i++) {
        if (c->rbuf[i] == '\n') {
            sy_conn_message(io, c, SY_WS_OP_TEXT, c->rbuf + start, i - start);
            start = i + 1;
        }
    }
    if (c->state == SY_CONN_DEAD)
        return;
    memmove(c->rbuf, c->rbuf + start, c->rlen - start);
    c->rlen -= start;
}

/* The lines that followed the request head, sent before the 101. */
static void lines_opened(sy_io_t *io, sy_conn_t *c) {
    if (c->rlen == 0)
        return;
    size_t n = c->rlen;
    c->rlen = 0;
    uint8_t copy[256];
    if (n > sizeof(copy))
        n = sizeof(copy);
    memcpy(copy, c->rbuf, n);
    lines_data(io, c, copy, n);
}

static sy_refbuf_t *line_of(const uint8_t *p, size_t n) {
    uint8_t buf[512];
    if (n + 1 > sizeof(buf))
        return NULL;
    memcpy(buf, p, n);
    buf[n] = '\n';
    return sy_refbuf_raw(buf, n + 1);
}

static sy_refbuf_t *lines_close(unsigned code, const char *reason, size_t len) {
    char buf[300];
    int n = snprintf(buf, sizeof(buf), "bye %u %.*s", code, (int)(len < 200 ? len : 200), reason ? reason : "");
    return n > 0 ? line_of((const uint8_t *)buf, (size_t)n) : NULL;
}

/* The owner's message (a WebSocket frame, m): its payload as a line. */
static sy_refbuf_t *lines_direct(const sy_refbuf_t *m) {
    return line_of(sy_refbuf_payload(m), sy_refbuf_payload_len(m));
}

/* A publish: its payload as a line, made once per publish and thread. */
static sy_refbuf_t *lines_publish(const sy_topic_t *t, const sy_refbuf_t *plain, const sy_refbuf_t *v1,
                                  const sy_refbuf_t *meta) {
    (void)t;
    (void)v1;
    (void)meta;
    return plain != NULL ? line_of(sy_refbuf_payload(plain), sy_refbuf_payload_len(plain)) : NULL;
}

static const sy_wire_t lines_wire = {
    .name = "lines",
    .upgrade = "lines",
    .data = lines_data,
    .opened = lines_opened,
    .close_msg = lines_close,
};
static const sy_msgproto_t lines_proto = {
    .name = "lines",
    .direct_frame = lines_direct,
    .publish_frame = lines_publish,
};

/* ---- the test ----------------------------------------------------------- */

/* Reads until the buffer holds want (a NUL-terminated string) or EOF. */
static bool read_until(int fd, char *buf, size_t cap, size_t *have, const char *want) {
    for (int i = 0; i < 300; i++) {
        buf[*have] = 0;
        if (strstr(buf, want) != NULL)
            return true;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 10) <= 0)
            continue;
        ssize_t r = read(fd, buf + *have, cap - 1 - *have);
        if (r <= 0)
            return false;
        *have += (size_t)r;
    }
    return false;
}

static const seen_t *wait_message(sy_server_t *s, const char *text, size_t from) {
    for (int i = 0; i < 300; i++) {
        drain(s);
        for (size_t k = from; k < nseen; k++)
            if (seen[k].type == SY_EV_MESSAGE && seen[k].len == strlen(text) &&
                memcmp(seen[k].payload, text, seen[k].len) == 0)
                return &seen[k];
        usleep(10000);
    }
    return NULL;
}

int main(void) {
    sy_server_opts_t o = {
        .host = "127.0.0.1",
        .threads = 2,
        .max_payload = 1 << 16,
        .max_backpressure = 1 << 20,
        .handshake_timeout_s = 5,
        .close_timeout_s = 2,
        .max_head_bytes = 8192,
        .max_headers = 64,
        .backlog = 64,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    CHECK(s != NULL);
    if (s == NULL)
        return check_report("toy_proto");
    /* The one registration line. */
    CHECK_EQ(sy_server_add_protocol(s, &lines_wire, &lines_proto), 0);
    uint16_t port = 0;
    CHECK_EQ(sy_server_listen(s, &port, err, sizeof(err)), 0);
    CHECK_EQ(sy_server_add_protocol(s, &lines_wire, &lines_proto), EBUSY); /* not once it runs */

    /* Two clients, one per thread; the first sends a line and a half with
     * its request, before the 101. */
    int fd[2];
    uint64_t id[2];
    char buf[2][1024];
    size_t have[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        size_t mark = nseen;
        fd[k] = connect_to(port);
        CHECK(fd[k] >= 0);
        const char *req =
            k == 0 ? "GET /any HTTP/1.1\r\nHost: h\r\nUpgrade: LINES\r\nConnection: Upgrade\r\n\r\nhello\nwor"
                   : "GET /any HTTP/1.1\r\nHost: h\r\nUpgrade: lines\r\nConnection: Upgrade\r\n\r\n";
        CHECK_EQ(write(fd[k], req, strlen(req)), (long long)strlen(req));
        CHECK(read_until(fd[k], buf[k], sizeof(buf[k]), &have[k], "\r\n\r\n"));
        CHECK(strncmp(buf[k], "HTTP/1.1 101 Switching Protocols\r\nUpgrade: lines\r\n", 50) == 0);
        have[k] = 0;
        const seen_t *open = wait_event(s, SY_EV_OPEN, mark);
        CHECK(open != NULL && open->len == 5 && memcmp(open->payload, "lines", 5) == 0);
        id[k] = open != NULL ? open->conn : 0;
    }
    CHECK(id[0] != id[1] && (id[0] & 0xff) != (id[1] & 0xff)); /* one on each thread */

    /* Lines in: messages to the owner (one before the 101, one split). */
    const seen_t *m = wait_message(s, "hello", 0);
    CHECK(m != NULL && m->conn == id[0]);
    size_t mark = nseen;
    CHECK_EQ(write(fd[0], "ld\n", 3), 3);
    m = wait_message(s, "world", mark);
    CHECK(m != NULL && m->conn == id[0]);

    /* The owner's message out: a line. */
    CHECK_EQ(sy_server_send(s, id[0], "echo: world", 11, 0), 0);
    CHECK(read_until(fd[0], buf[0], sizeof(buf[0]), &have[0], "echo: world\n"));

    /* A publish: one line per subscriber, on both threads. */
    for (int k = 0; k < 2; k++)
        CHECK_EQ(sy_server_subscribe(s, id[k], "news", 4), 0);
    size_t subs = 0;
    for (int i = 0; i < 100 && subs < 2; i++) {
        CHECK_EQ(sy_server_publish(s, "news", 4, i == 0 ? "first" : "again", 5, 0, &subs), 0);
        if (subs < 2)
            usleep(10000);
    }
    CHECK_EQU(subs, 2);
    for (int k = 0; k < 2; k++)
        CHECK(read_until(fd[k], buf[k], sizeof(buf[k]), &have[k], "first\n"));

    /* The server's close: its close line, then the end; the owner's close
     * event says the code and reason. */
    mark = nseen;
    CHECK_EQ(sy_server_end(s, id[0], 4000, "done", 4), 0);
    CHECK(read_until(fd[0], buf[0], sizeof(buf[0]), &have[0], "bye 4000 done\n"));
    const seen_t *cl = wait_event(s, SY_EV_CLOSE, mark);
    CHECK(cl != NULL && cl->conn == id[0] && cl->code == 4000 && cl->len == 4 && memcmp(cl->payload, "done", 4) == 0);
    close(fd[0]);

    /* A client that leaves: 1006. */
    mark = nseen;
    close(fd[1]);
    cl = wait_event(s, SY_EV_CLOSE, mark);
    CHECK(cl != NULL && cl->conn == id[1] && cl->code == 1006);

    /* An Upgrade nobody registered is not ours: a WebSocket's checks refuse it. */
    int x = connect_to(port);
    const char *bad = "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: nope\r\nConnection: Upgrade\r\n\r\n";
    CHECK_EQ(write(x, bad, strlen(bad)), (long long)strlen(bad));
    char r[512];
    size_t rn = 0;
    CHECK(read_until(x, r, sizeof(r), &rn, "\r\n\r\n") && strncmp(r, "HTTP/1.1 4", 10) == 0);
    close(x);

    mark = nseen;
    sy_server_shutdown(s, 200);
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
    CHECK_EQU(sy_conn_illegal_transitions(), 0);
    return check_report("toy_proto");
}
