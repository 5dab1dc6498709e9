/* Event streams (docs/sse.md) end to end under the sanitizers (and
 * valgrind): a real server with history and an upgrade handler that
 * accepts each stream with its topics (sy_server_accept), raw loopback
 * clients that read the 200 head and parse the events. Covered: sy.open
 * and its name; publishes to a stream with one topic (the shared event
 * with its id) and with two (its own id line, the shared rest), text,
 * CR/CRLF and binary; an id too long for the stack (24 long topics);
 * direct messages (no id); a resume by Last-Event-ID
 * (exactly the missed ones), a foreign epoch (not recovered), a malformed
 * one (400); POSTs (202 and the message, a body after its head, one sent
 * a byte at a time with its head parsed once, 411, 413, 400, 404, a name
 * with another serial 410, a stream closed meanwhile 410); server.end
 * (sy.close, then the end of the body), a
 * client that leaves (1001), a stream that stops reading (1008 at
 * maxBackpressure) and shutdown with streams open (1001). */
#define _GNU_SOURCE
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "harness.h"
#include "io/model/sy_events.h"
#include "io/wire/sy_post.h"
#include "sy_server.h"

static sy_server_t *srv;
static uint16_t port;

typedef struct {
    int fd;
    uint64_t id;   /* its connection */
    char name[81]; /* its stream's name (sy.open) */
    char buf[16384];
    size_t len;
} client_t;

typedef struct {
    char id[4096], event[128], data[1024];
    size_t data_len;
    bool has_id, has_event, b64;
} ev_t;

/* The first event of type for conn from seen[from] on, waiting up to 5 s. */
static const seen_t *wait_conn(uint8_t type, uint64_t conn, size_t from) {
    for (int i = 0; i < 500; i++) {
        drain(srv);
        for (size_t k = from; k < nseen; k++)
            if (seen[k].type == type && seen[k].conn == conn)
                return &seen[k];
        usleep(10000);
    }
    return NULL;
}

/* More bytes into cl->buf: false at EOF, an error or 3 s without any. */
static bool fill(client_t *cl) {
    struct pollfd p = {.fd = cl->fd, .events = POLLIN};
    if (cl->len == sizeof(cl->buf) || poll(&p, 1, 3000) <= 0)
        return false;
    ssize_t r = read(cl->fd, cl->buf + cl->len, sizeof(cl->buf) - cl->len);
    if (r <= 0)
        return false;
    cl->len += (size_t)r;
    return true;
}

/* The next event (comments and a lone "retry" skipped): false at EOF or timeout. */
static bool next_event(client_t *cl, ev_t *e) {
    for (;;) {
        char *end;
        while ((end = memmem(cl->buf, cl->len, "\n\n", 2)) == NULL)
            if (!fill(cl))
                return false;
        memset(e, 0, sizeof(*e));
        for (char *l = cl->buf; l <= end;) {
            char *nl = memchr(l, '\n', (size_t)(end + 1 - l)), *colon = memchr(l, ':', (size_t)(nl - l));
            size_t fl = colon ? (size_t)(colon - l) : (size_t)(nl - l);
            const char *v = colon ? colon + 1 + (colon[1] == ' ') : nl;
            size_t vl = (size_t)(nl - v);
            if (fl == 2 && memcmp(l, "id", 2) == 0 && vl < sizeof(e->id)) {
                memcpy(e->id, v, vl);
                e->has_id = true;
            } else if (fl == 5 && memcmp(l, "event", 5) == 0 && vl < sizeof(e->event)) {
                memcpy(e->event, v, vl);
                e->has_event = true;
            } else if (fl == 4 && memcmp(l, "data", 4) == 0 && e->data_len + vl + 1 < sizeof(e->data)) {
                if (e->data_len > 0)
                    e->data[e->data_len++] = '\n';
                memcpy(e->data + e->data_len, v, vl);
                e->data_len += vl;
            } else if (fl == 3 && memcmp(l, "enc", 3) == 0) {
                e->b64 = vl == 6 && memcmp(v, "base64", 6) == 0;
            }
            l = nl + 1;
        }
        size_t used = (size_t)(end + 2 - cl->buf);
        memmove(cl->buf, cl->buf + used, cl->len - used);
        cl->len -= used;
        if (e->has_id || e->has_event || e->data_len > 0)
            return true;
    }
}

/* The next event is `name` with data `data` and id `id` (NULL: none). */
static void expect(client_t *cl, const char *name, const char *data, const char *id) {
    ev_t e;
    bool got = next_event(cl, &e);
    CHECK(got);
    if (!got)
        return;
    CHECK_MEMSTR(e.event, strlen(e.event), name);
    CHECK_MEMSTR(e.data, e.data_len, data);
    CHECK(e.has_id == (id != NULL));
    if (id != NULL)
        CHECK_MEMSTR(e.id, strlen(e.id), id);
}

/* The next event is a notice holding `want`. */
static void expect_notice(client_t *cl, const char *want) {
    ev_t e;
    CHECK(next_event(cl, &e));
    CHECK_MEMSTR(e.event, strlen(e.event), "sy.notice");
    e.data[e.data_len] = 0;
    if (strstr(e.data, want) == NULL)
        fprintf(stderr, "notice %s lacks %s\n", e.data, want);
    CHECK(strstr(e.data, want) != NULL);
}

/* True when the peer closed its end (after what is buffered). */
static bool at_eof(client_t *cl) {
    while (fill(cl))
        ;
    struct pollfd p = {.fd = cl->fd, .events = POLLIN};
    char b;
    return cl->len == 0 && poll(&p, 1, 3000) == 1 && read(cl->fd, &b, 1) == 0;
}

/* Opens a stream (extra: request header lines), accepted with topics:
 * checks its head and sy.open (rcvbuf > 0: its receive buffer); its notices are the caller's to read. */
/* The subprotocol open_stream accepts with ("": the default, symphony.v1). */
static const char *accept_proto = "";

static void open_stream(client_t *cl, const char *extra, const char *const *topics, size_t n, int rcvbuf) {
    char req[512];
    int rl =
        snprintf(req, sizeof(req), "GET /feed?x=1 HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n%s\r\n", extra);
    memset(cl, 0, sizeof(*cl));
    size_t mark = nseen;
    cl->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (rcvbuf > 0) /* before connect: the window it offers */
        CHECK_EQ(setsockopt(cl->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
    CHECK_EQ(connect(cl->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_EQ(write(cl->fd, req, (size_t)rl), rl);
    const seen_t *up = wait_event(srv, SY_EV_UPGRADE, mark);
    CHECK(up != NULL && (up->flags & SY_EV_UPGRADE_SSE));
    if (up == NULL)
        return;
    CHECK(up->len > 14 && memcmp(up->payload + 4, "/feed?x=1", 9) == 0); /* the url, first */
    cl->id = up->conn;
    size_t lens[24];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(topics[i]);
    static const char cors[] = "Access-Control-Allow-Origin: *\r\n";
    CHECK_EQ(sy_server_accept(srv, cl->id, accept_proto, strlen(accept_proto), cors, sizeof(cors) - 1, topics, lens, n,
                              true),
             0);
    char *end;
    while ((end = memmem(cl->buf, cl->len, "\r\n\r\n", 4)) == NULL)
        if (!fill(cl))
            break;
    CHECK(end != NULL);
    if (end == NULL)
        return;
    end[2] = 0;
    CHECK(strncmp(cl->buf, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK(strstr(cl->buf, "\r\nContent-Type: text/event-stream; charset=utf-8\r\n") != NULL);
    CHECK(strstr(cl->buf, "\r\nCache-Control: no-cache, no-transform\r\n") != NULL);
    CHECK(strstr(cl->buf, "\r\nX-Accel-Buffering: no\r\n") != NULL);
    CHECK(strstr(cl->buf, "\r\nConnection: close\r\n") != NULL);
    CHECK(strstr(cl->buf, "\r\nAccess-Control-Allow-Origin: *\r\n") != NULL);
    CHECK(strstr(cl->buf, "Content-Length") == NULL && strstr(cl->buf, "Transfer-Encoding") == NULL);
    size_t used = (size_t)(end + 4 - cl->buf);
    CHECK(cl->len - used >= 13 && memcmp(cl->buf + used, "retry: 1000\n\n", 13) == 0);
    memmove(cl->buf, cl->buf + used, cl->len - used);
    cl->len -= used;
    ev_t e;
    CHECK(next_event(cl, &e));
    CHECK_MEMSTR(e.event, strlen(e.event), "sy.open");
    /* Its name (80 hex digits), its protocol, the server's limits and its heartbeat (ms). */
    static const char limits[] = "\",\"limits\":{\"maxPayload\":1024,\"maxSubscriptions\":0,"
                                 "\"maxPending\":0,\"maxTopicLength\":1024,\"maxEntries\":1024},\"heartbeat\":15000}";
    const char *proto = *accept_proto ? "\",\"protocol\":\"symphony.v2" : "\",\"protocol\":\"symphony.v1";
    size_t plen = strlen(proto);
    CHECK(!e.has_id && e.data_len == 11 + 80 + plen + sizeof(limits) - 1);
    CHECK(memcmp(e.data, "{\"stream\":\"", 11) == 0 && strspn(e.data + 11, "0123456789abcdef") == 80);
    CHECK(e.data_len >= 91 + plen + sizeof(limits) - 1 && memcmp(e.data + 91, proto, plen) == 0 &&
          memcmp(e.data + 91 + plen, limits, sizeof(limits) - 1) == 0);
    memcpy(cl->name, e.data + 11, 80);
    const seen_t *op = wait_conn(SY_EV_OPEN, cl->id, mark);
    CHECK(op != NULL && (op->flags & SY_EV_OPEN_SSE));
}

/* A raw request; its answer's status (the server closes the socket after it). */
static int http(const char *req, size_t len) {
    int fd = connect_to(port);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, req, len), (long long)len);
    char buf[1024];
    size_t n = read_some(fd, (uint8_t *)buf, sizeof(buf) - 1, sizeof(buf) - 1);
    close(fd);
    buf[n] = 0;
    int status = 0;
    return sscanf(buf, "HTTP/1.1 %d ", &status) == 1 ? status : -1;
}

/* POSTs body to stream name ("" head: no Content-Length); the status. */
static int post(const char *name, const char *head, const void *body, size_t len) {
    char req[1024];
    int n = snprintf(req, sizeof(req), "POST /feed?a=b&sy.stream=%s HTTP/1.1\r\nHost: h\r\n%s\r\n", name, head);
    memcpy(req + n, body, len);
    return http(req, (size_t)n + len);
}

static int post_text(const char *name, const char *body) {
    char head[64];
    snprintf(head, sizeof(head), "Content-Length: %zu\r\n", strlen(body));
    return post(name, head, body, strlen(body));
}

static void publish(const char *topic, const void *data, size_t len, unsigned flags) {
    size_t subs = 0;
    CHECK_EQ(sy_server_publish(srv, topic, strlen(topic), data, len, flags, &subs), 0);
}

static client_t a, a2, a3, b, many, slow;

/* A symphony.v2 stream (its client keeps its positions) with two topics:
 * its notices carry no id, each publish's id its own topic's position
 * only (the event shared with the one-topic streams: the same bytes). */
static void test_v2_ids(void) {
    static const char *const tcd[] = {"c", "d"};
    static client_t v2;
    accept_proto = "symphony.v2";
    open_stream(&v2, "Sec-WebSocket-Protocol: symphony.v1, symphony.v2\r\n", tcd, 2, 0);
    accept_proto = "";
    ev_t e;
    for (int i = 0; i < 2; i++) {
        CHECK(next_event(&v2, &e));
        CHECK_MEMSTR(e.event, strlen(e.event), "sy.notice");
        CHECK(!e.has_id);
    }
    uint64_t ec = 0, ed = 0, lc = 0, ld = 0, first = 0;
    size_t kept = 0;
    CHECK(sy_server_position(srv, "c", 1, &ec, &lc, &first, &kept));
    CHECK(sy_server_position(srv, "d", 1, &ed, &ld, &first, &kept));
    publish("c", "vc", 2, 0);
    publish("d", "vd", 2, 0);
    publish("c", "vc2", 3, 0);
    char id[160];
    snprintf(id, sizeof(id), "sy.since=%016llx:%llu:c", (unsigned long long)ec, (unsigned long long)lc + 1);
    expect(&v2, "c", "vc", id);
    snprintf(id, sizeof(id), "sy.since=%016llx:%llu:d", (unsigned long long)ed, (unsigned long long)ld + 1);
    expect(&v2, "d", "vd", id);
    snprintf(id, sizeof(id), "sy.since=%016llx:%llu:c", (unsigned long long)ec, (unsigned long long)lc + 2);
    expect(&v2, "c", "vc2", id);
    size_t mark = nseen;
    close(v2.fd);
    const seen_t *cl = wait_conn(SY_EV_CLOSE, v2.id, mark);
    CHECK(cl != NULL && cl->code == 1006); /* the client left without a close handshake */
}

/* A POST sent one byte at a time, head and body: its head is parsed once
 * (the body's bytes are awaited with what it said), then 202 and the
 * message, whole. */
static void test_post_bytes(void) {
    size_t mark = nseen;
    unsigned heads = sy_post_heads_read();
    char req[256];
    int rl = snprintf(req, sizeof(req), "POST /?sy.stream=%s HTTP/1.1\r\nContent-Length: 9\r\n\r\nbyte-wise", b.name);
    int fd = connect_to(port);
    int one = 1;
    CHECK_EQ(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
    for (int i = 0; i < rl; i++)
        CHECK_EQ(write(fd, req + i, 1), 1);
    char ans[256];
    CHECK(read_some(fd, (uint8_t *)ans, sizeof(ans), 12) >= 12);
    CHECK(memcmp(ans, "HTTP/1.1 202", 12) == 0);
    close(fd);
    const seen_t *m = wait_conn(SY_EV_MESSAGE, b.id, mark);
    CHECK(m != NULL && m->len == 9 && memcmp(m->payload, "byte-wise", 9) == 0);
    CHECK_EQU(sy_post_heads_read() - heads, 1);
}

/* A name names one stream: the same id with another serial (as a name of
 * a closed stream whose id was given again would be, after ~2M
 * connections on its thread) reaches nobody and is answered 410, while
 * the stream's own name still reaches it. */
static void test_post_serial(void) {
    uint64_t serial = 0;
    for (int i = 32; i < 48; i++)
        serial = serial << 4 | (uint64_t)(b.name[i] <= '9' ? b.name[i] - '0' : b.name[i] - 'a' + 10);
    char other[81] = {0}, same[81] = {0};
    sy_server_stream_name(srv, b.id, serial + 1, other);
    sy_server_stream_name(srv, b.id, serial, same);
    CHECK(memcmp(same, b.name, 80) == 0);
    CHECK(memcmp(other, b.name, 32) == 0 && memcmp(other + 32, b.name + 32, 16) != 0);
    size_t mark = nseen;
    CHECK_EQ(post_text(other, "not yours"), 410);
    CHECK_EQ(post_text(same, "yours"), 202);
    const seen_t *m = wait_conn(SY_EV_MESSAGE, b.id, mark);
    CHECK(m != NULL && m->len == 5 && memcmp(m->payload, "yours", 5) == 0);
}

/* A stream whose client stops reading (a small receive window): closed
 * 1008 once over maxBackpressure, its body ending with the sy.close event. */
static void test_slow(void) {
    static const char *const topics[] = {"slow"};
    open_stream(&slow, "", topics, 1, 4096);
    expect_notice(&slow, "\"type\":\"subscribed\",\"topic\":\"slow\"");
    static char big[4000];
    memset(big, 'z', sizeof(big));
    sy_stats_t s0, s1;
    uint64_t closes = 0;
    /* A few at a time, so that the socket's buffers fill first (a burst
     * over maxBackpressure in one turn is closed before any write). */
    for (int round = 0; round < 2000 && closes == 0; round++) {
        for (int i = 0; i < 4; i++)
            publish("slow", big, sizeof(big), 0);
        usleep(2000); /* pacing, then a look at the counter */
        sy_server_thread_stats(srv, 0, &s0);
        sy_server_thread_stats(srv, 1, &s1);
        closes = s0.slow_closes + s1.slow_closes;
    }
    CHECK_EQU(closes, 1);
    /* Read it all: the body ends with the close event, then EOF. */
    static const char tail[] = "event: sy.close\ndata: {\"code\":1008,\"reason\":\"slow consumer\"}\n\n";
    const size_t tl = sizeof(tail) - 1;
    size_t total = 0;
    for (;;) {
        if (slow.len > tl) {
            memmove(slow.buf, slow.buf + slow.len - tl, tl);
            slow.len = tl;
        }
        size_t before = slow.len;
        if (!fill(&slow))
            break;
        total += slow.len - before;
    }
    CHECK(total > 8 * sizeof(big)); /* what the socket's buffers held */
    CHECK(slow.len == tl && memcmp(slow.buf, tail, tl) == 0);
    close(slow.fd); /* the server's lingering close ends at our FIN */
    const seen_t *cl = wait_conn(SY_EV_CLOSE, slow.id, 0);
    CHECK(cl != NULL && cl->code == 1008);
}

int main(void) {
    sy_server_opts_t o = {
        .host = "127.0.0.1",
        .threads = 2,
        .max_payload = 1024,
        .max_backpressure = 1 << 16,
        .handshake_timeout_s = 5,
        .close_timeout_s = 2,
        .max_head_bytes = 8192,
        .max_headers = 64,
        .backlog = 64,
        .upgrade_handler = true,
        .history_size = 8,
    };
    char err[SY_ERRLEN];
    srv = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    CHECK(srv != NULL);
    CHECK_EQ(sy_server_listen(srv, &port, err, sizeof(err)), 0);

    /* One stream with topic a, one with a and b: subscribed notices. */
    static const char *const ta[] = {"a"}, *const tab[] = {"a", "b"};
    open_stream(&a, "", ta, 1, 0);
    expect_notice(&a, "\"type\":\"subscribed\",\"topic\":\"a\"");
    open_stream(&b, "", tab, 2, 0);
    expect_notice(&b, "\"topic\":\"a\"");
    expect_notice(&b, "\"topic\":\"b\"");
    CHECK(strcmp(a.name, b.name) != 0);
    uint64_t ea = 0, eb = 0, last = 0, first = 0;
    size_t kept = 0;
    CHECK(sy_server_position(srv, "a", 1, &ea, &last, &first, &kept));
    CHECK(sy_server_position(srv, "b", 1, &eb, &last, &first, &kept));

    /* Publishes: ids carry positions, the event's own topic first. */
    publish("a", "one\ntwo", 7, 0);
    publish("a", "x\r\ny\rz", 6, 0);
    publish("a", "\x00\x01\x02\xff", 4, SY_SEND_BINARY);
    publish("b", "bee", 3, 0);
    char id[160], id2[256];
    ev_t e;
    static const char *const datas[] = {"one\ntwo", "x\ny\nz", "AAEC/w=="};
    for (unsigned k = 1; k <= 3; k++) {
        snprintf(id, sizeof(id), "sy.since=%016llx:%u:a", (unsigned long long)ea, k);
        snprintf(id2, sizeof(id2), "%s&sy.since=%016llx:0:b", id, (unsigned long long)eb);
        expect(&a, "a", datas[k - 1], id);
        expect(&b, "a", datas[k - 1], id2);
    }
    snprintf(id2, sizeof(id2), "sy.since=%016llx:1:b&sy.since=%016llx:3:a", (unsigned long long)eb,
             (unsigned long long)ea);
    expect(&b, "b", "bee", id2);

    /* A stream with 24 long topics: its id (24 entries, 3 KB) is made on
     * the heap. (Its notices' ids grow with each: O(topics^2) bytes at the
     * open, within maxBackpressure here.) */
    static char names[24][101];
    const char *tm[24];
    for (int i = 0; i < 24; i++) {
        memset(names[i], 'x', 100);
        memcpy(names[i], "topic-", 6);
        names[i][6] = (char)('0' + i / 10);
        names[i][7] = (char)('0' + i % 10);
        tm[i] = names[i];
    }
    open_stream(&many, "", tm, 24, 0);
    for (int i = 0; i < 24; i++)
        expect_notice(&many, names[i]);
    publish(names[17], "many", 4, 0);
    CHECK(next_event(&many, &e));
    CHECK_MEMSTR(e.event, strlen(e.event), names[17]);
    CHECK_MEMSTR(e.data, e.data_len, "many");
    uint64_t e17 = 0;
    CHECK(sy_server_position(srv, names[17], 100, &e17, &last, &first, &kept));
    snprintf(id, sizeof(id), "sy.since=%016llx:1:%.20s", (unsigned long long)e17, names[17]);
    size_t amps = 0;
    for (const char *q = e.id; (q = strchr(q, '&')) != NULL; q++)
        amps++;
    CHECK(strncmp(e.id, id, strlen(id)) == 0 && strlen(e.id) == 24 * 128 + 23 && amps == 23);

    /* Direct messages: "message" events without an id. */
    CHECK_EQ(sy_server_send(srv, b.id, "direct", 6, 0), 0);
    CHECK_EQ(sy_server_send(srv, b.id, "\xfb\xff", 2, SY_SEND_BINARY), 0);
    CHECK(next_event(&b, &e));
    CHECK(!e.has_id && !e.has_event && !e.b64);
    CHECK_MEMSTR(e.data, e.data_len, "direct");
    CHECK(next_event(&b, &e));
    CHECK(!e.has_id && !e.has_event && e.b64);
    CHECK_MEMSTR(e.data, e.data_len, "+/8=");

    /* a leaves (1006: no close handshake); two more publishes; it comes
     * back with its last id: exactly the missed ones, then what is new. */
    snprintf(id, sizeof(id), "sy.since=%016llx:3:a", (unsigned long long)ea);
    size_t mark = nseen;
    close(a.fd);
    const seen_t *cl = wait_conn(SY_EV_CLOSE, a.id, mark);
    CHECK(cl != NULL && cl->code == 1006); /* the client left without a close handshake */
    publish("a", "four", 4, 0);
    publish("a", "five", 4, 0);
    char hdr[600];
    snprintf(hdr, sizeof(hdr), "Last-Event-ID: %s\r\n", id);
    mark = nseen;
    open_stream(&a2, hdr, ta, 1, 0);
    const seen_t *rec = wait_conn(SY_EV_RECOVERY, a2.id, mark);
    CHECK(rec != NULL && (rec->flags & SY_EV_RECOVERED));
    expect_notice(&a2, "\"since\":\"3\",\"recovered\":true");
    publish("a", "six", 3, 0);
    static const char *const more[] = {"four", "five", "six"};
    for (unsigned k = 4; k <= 6; k++) {
        snprintf(id, sizeof(id), "sy.since=%016llx:%u:a", (unsigned long long)ea, k);
        snprintf(id2, sizeof(id2), "%s&sy.since=%016llx:1:b", id, (unsigned long long)eb);
        expect(&a2, "a", more[k - 4], id);
        expect(&b, "a", more[k - 4], id2);
    }
    /* A foreign epoch: not recovered, and said so; a malformed id: 400. */
    open_stream(&a3, "Last-Event-ID: sy.since=0000000000000001:2:a\r\n", ta, 1, 0);
    expect_notice(&a3, "\"recovered\":false,\"reason\":\"epoch\"");
    static const char bad[] = "GET / HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nLast-Event-ID: nope\r\n\r\n";
    CHECK_EQ(http(bad, sizeof(bad) - 1), 400);

    /* POSTs: 202 and the stream's message; the refusals. */
    mark = nseen;
    CHECK_EQ(post_text(b.name, "h\xc3\xa9llo"), 202);
    const seen_t *m = wait_conn(SY_EV_MESSAGE, b.id, mark);
    CHECK(m != NULL && m->flags == 0 && m->len == 6 && memcmp(m->payload, "h\xc3\xa9llo", 6) == 0);
    mark = nseen;
    static const char binhead[] = "Content-Type: application/octet-stream\r\nContent-Length: 3\r\n";
    CHECK_EQ(post(b.name, binhead, "\x00\xff\x01", 3), 202);
    m = wait_conn(SY_EV_MESSAGE, b.id, mark);
    CHECK(m != NULL && m->flags == 1 && m->len == 3 && memcmp(m->payload, "\x00\xff\x01", 3) == 0);
    CHECK_EQ(post(b.name, "", "", 0), 411);
    CHECK_EQ(post(b.name, "Transfer-Encoding: chunked\r\n", "0\r\n\r\n", 5), 411);
    CHECK_EQ(post(b.name, "Content-Length: 2000\r\n", "", 0), 413);
    CHECK_EQ(post(b.name, "Content-Length: 2\r\n", "\xff\xfe", 2), 400);
    char forged[81];
    memcpy(forged, b.name, sizeof(forged));
    forged[79] = forged[79] == '0' ? '1' : '0';
    CHECK_EQ(post_text(forged, "x"), 404);
    CHECK_EQ(post_text("abc", "x"), 404);
    /* The body after the head: no answer until it is whole. */
    mark = nseen;
    char req[256];
    int rl = snprintf(req, sizeof(req), "POST /?sy.stream=%s HTTP/1.1\r\nContent-Length: 4\r\n\r\nha", b.name);
    int fd = connect_to(port);
    CHECK_EQ(write(fd, req, (size_t)rl), rl);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    CHECK_EQ(poll(&pf, 1, 50), 0);
    CHECK_EQ(write(fd, "lf", 2), 2);
    CHECK(read_some(fd, (uint8_t *)req, sizeof(req), 12) >= 12);
    CHECK(memcmp(req, "HTTP/1.1 202", 12) == 0);
    close(fd);
    m = wait_conn(SY_EV_MESSAGE, b.id, mark);
    CHECK(m != NULL && m->len == 4 && memcmp(m->payload, "half", 4) == 0);

    test_slow();

    test_post_bytes();
    test_post_serial();
    test_v2_ids();

    /* server.end: sy.close, then the end of the body; a POST after it is
     * answered 410 and reaches nobody. */
    mark = nseen;
    CHECK_EQ(sy_server_end(srv, b.id, 4000, "bye", 3), 0);
    expect(&b, "sy.close", "{\"code\":4000,\"reason\":\"bye\"}", NULL);
    CHECK(at_eof(&b));
    close(b.fd);
    cl = wait_conn(SY_EV_CLOSE, b.id, mark);
    CHECK(cl != NULL && cl->code == 4000);
    size_t after_end = nseen;
    CHECK_EQ(post_text(b.name, "late"), 410);
    CHECK_EQ(sy_server_send(srv, b.id, "x", 1, 0), ENOTCONN);

    /* Shutdown with streams open: each gets sy.close 1001, then EOF. */
    sy_stats_t s0, s1;
    sy_server_thread_stats(srv, 0, &s0);
    sy_server_thread_stats(srv, 1, &s1);
    CHECK_EQU(s0.sse_connections + s1.sse_connections, 3);
    CHECK_EQU(s0.sse_opened + s1.sse_opened, 7);
    CHECK_EQU(s0.sse_posts + s1.sse_posts, 5);
    mark = nseen;
    sy_server_shutdown(srv, 500);
    client_t *open_ones[] = {&a2, &a3, &many};
    for (size_t i = 0; i < 3; i++) {
        expect(open_ones[i], "sy.close", "{\"code\":1001,\"reason\":\"server shutting down\"}", NULL);
        CHECK(at_eof(open_ones[i]));
        close(open_ones[i]->fd);
        cl = wait_conn(SY_EV_CLOSE, open_ones[i]->id, mark);
        CHECK(cl != NULL && cl->code == 1001); /* the server's close: its code */
    }
    int stopped = 0;
    for (int i = 0; i < 300 && stopped < 2; i++) {
        drain(srv);
        stopped = 0;
        for (size_t k = mark; k < nseen; k++)
            stopped += seen[k].type == SY_EV_STOPPED;
        usleep(10000);
    }
    CHECK_EQ(stopped, 2);
    sy_server_join(srv);
    drain(srv);
    for (size_t k = after_end; k < nseen; k++)
        CHECK(seen[k].type != SY_EV_MESSAGE);
    sy_server_destroy(srv);
    return check_report("server_sse");
}
