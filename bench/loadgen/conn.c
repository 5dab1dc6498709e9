/*
 * One client connection: non-blocking connect from a chosen source address,
 * the client handshake, a streaming frame reader and the few writes a client
 * makes (request, pongs, closes). See lg.h.
 *
 * Memory: a connection keeps a fixed struct. The reader streams: it keeps a
 * split frame header (<= 14 bytes), the first LG_HEAD_LEN payload bytes of a
 * data message (its timestamp) and a control frame's payload (<= 125
 * bytes), and skips the rest of every payload in place in the shared
 * receive buffer, so any message size costs nothing per connection. Heap
 * memory only during the handshake (the response head), while output is
 * waiting for the socket, and with permessage-deflate a buffer for the
 * compressed message being gathered (kept for the next one, freed with the
 * connection).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lg.h"
#include "proto/sy_base64.h"
#include "proto/sy_handshake.h"
#include "proto/sy_http.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

/* A timestamp older than this is not one of ours. */
#define MAX_LATENCY_NS (3600LL * 1000000000LL)

static void note_error(lg_run_t *r, const char *what, int err)
{
    if (r->first_error[0] == '\0')
        snprintf(r->first_error, sizeof(r->first_error), "%s%s%s", what, err ? ": " : "",
                 err ? strerror(err) : "");
}

/* ---- leaving a state ---------------------------------------------------- */

static void release(lg_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd); /* also drops it from the epoll set */
    c->fd = -1;
    free(c->head);
    c->head = NULL;
    c->head_len = 0;
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_cap = 0;
    free(c->z);
    c->z = NULL;
    c->z_len = c->z_cap = 0;
    lg_tls_release(c);
}

/* Leaving a pending state: the attempt settled. */
static void leave_pending(lg_run_t *r, lg_conn_t *c)
{
    r->pending--;
    if (c->attempt_kind == LG_ATTEMPT_RAMP)
        r->ramp_inflight--;
}

/* Entering LG_CS_CLOSING from LG_CS_OPEN, with a deadline for the server. */
static void enter_closing(lg_run_t *r, lg_conn_t *c, int64_t now)
{
    r->open--;
    r->closing++;
    if (c->close_kind == LG_CLOSE_DROP)
        r->drop_closing++;
    c->state = LG_CS_CLOSING;
    c->deadline_ns = now + (int64_t)(r->opts->close_wait_s * 1e9);
}

static void leave_state(lg_run_t *r, lg_conn_t *c)
{
    switch (c->state) {
    case LG_CS_CONNECTING:
    case LG_CS_TLS:
    case LG_CS_HANDSHAKE:
        leave_pending(r, c);
        break;
    case LG_CS_OPEN:
        r->open--;
        break;
    case LG_CS_CLOSING:
        r->closing--;
        if (c->close_kind == LG_CLOSE_DROP)
            r->drop_closing--;
        break;
    default:
        break;
    }
}

/* The slot of c is free again (it is restarted from the main loop only). */
static void free_slot(lg_run_t *r, lg_conn_t *c)
{
    c->state = LG_CS_DONE;
    r->free_slots[(r->free_head + r->nfree++) % r->cap] = (uint32_t)(c - r->conns);
}

/* An attempt that never opened. */
static void fail(lg_run_t *r, lg_conn_t *c, lg_fail_t why)
{
    leave_state(r, c);
    release(c);
    free_slot(r, c);
    r->failed[why]++;
    if (c->attempt_kind == LG_ATTEMPT_CHURN)
        r->churn_reopen_failed++;
}

/* An open (or closing) connection ends. */
static void finish(lg_run_t *r, lg_conn_t *c, lg_end_t how)
{
    leave_state(r, c);
    release(c);
    free_slot(r, c);
    r->ended[how]++;
    if (how == LG_END_SERVER_CLOSE)
        lg_codes_add(&r->close_codes, c->close_code);
}

static bool set_interest(lg_run_t *r, uint32_t i, lg_conn_t *c, uint32_t events)
{
    if (c->ep_events == events)
        return true;
    struct epoll_event ev = {.events = events, .data.u32 = i};
    if (epoll_ctl(r->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        return false;
    c->ep_events = events;
    return true;
}

/* ---- writing ------------------------------------------------------------ */

/* Sends data, or keeps what the socket does not take and asks for EPOLLOUT.
 * Returns false if the connection failed (it is then finished or failed). */
static bool send_bytes(lg_run_t *r, uint32_t i, lg_conn_t *c, const void *data, size_t len)
{
    size_t done = 0;
    if (c->out_len == 0) {
        ssize_t n = lg_io_send(c, data, len);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            if (c->state == LG_CS_HANDSHAKE)
                fail(r, c, LG_FAIL_CLOSED);
            else
                finish(r, c, LG_END_RESET);
            return false;
        }
        done = n > 0 ? (size_t)n : 0;
        if (done == len)
            return true;
    }
    size_t rest = len - done;
    if ((size_t)c->out_len + rest > LG_MAX_OUTPUT) {
        note_error(r, "output queue overflow (server not reading)", 0);
        finish(r, c, LG_END_OUTPUT);
        return false;
    }
    if (c->out_len + rest > c->out_cap) {
        uint32_t cap = c->out_cap ? c->out_cap : 256;
        while (cap < c->out_len + rest)
            cap *= 2;
        uint8_t *p = realloc(c->out, cap);
        if (p == NULL) {
            finish(r, c, LG_END_OUTPUT);
            return false;
        }
        c->out = p;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, (const uint8_t *)data + done, rest);
    c->out_len += (uint32_t)rest;
    if (!set_interest(r, i, c, c->ep_events | EPOLLOUT)) {
        finish(r, c, LG_END_RESET);
        return false;
    }
    return true;
}

/* Writes queued output on EPOLLOUT; drops EPOLLOUT once it is all out. */
static bool flush_out(lg_run_t *r, uint32_t i, lg_conn_t *c)
{
    while (c->out_len > 0) {
        ssize_t n = lg_io_send(c, c->out, c->out_len);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return true;
            if (errno == EINTR)
                continue;
            if (c->state == LG_CS_HANDSHAKE)
                fail(r, c, LG_FAIL_CLOSED);
            else
                finish(r, c, LG_END_RESET);
            return false;
        }
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (uint32_t)n;
    }
    free(c->out);
    c->out = NULL;
    c->out_cap = 0;
    if (!set_interest(r, i, c, EPOLLIN)) {
        finish(r, c, LG_END_RESET);
        return false;
    }
    return true;
}

/* A masked client frame (control frames only: payload <= 125 bytes). */
static bool send_frame(lg_run_t *r, uint32_t i, lg_conn_t *c, unsigned op, const uint8_t *payload,
                       size_t len)
{
    uint8_t frame[SY_WS_MAX_HEADER_LEN + SY_WS_MAX_CONTROL_PAYLOAD];
    uint8_t key[4];
    uint32_t k = (uint32_t)lg_rand(r);
    memcpy(key, &k, 4);
    size_t h = sy_ws_frame_header_masked(frame, 1, op, len, key);
    if (h == 0 || len > SY_WS_MAX_CONTROL_PAYLOAD)
        return true; /* cannot happen for the frames built here */
    if (len > 0)
        memcpy(frame + h, payload, len);
    sy_ws_unmask(frame + h, len, key, 0);
    return send_bytes(r, i, c, frame, h + len);
}

bool lg_conn_send_text(lg_run_t *r, uint32_t i, lg_conn_t *c, const char *text, size_t len)
{
    uint8_t frame[SY_WS_MAX_HEADER_LEN + 1024];
    uint8_t key[4];
    uint32_t k = (uint32_t)lg_rand(r);
    memcpy(key, &k, 4);
    if (len > sizeof(frame) - SY_WS_MAX_HEADER_LEN)
        return true; /* cannot happen for the messages built here (pusher.c) */
    size_t h = sy_ws_frame_header_masked(frame, 1, SY_WS_OP_TEXT, len, key);
    if (h == 0)
        return true;
    memcpy(frame + h, text, len);
    sy_ws_unmask(frame + h, len, key, 0);
    return send_bytes(r, i, c, frame, h + len);
}

static bool send_close(lg_run_t *r, uint32_t i, lg_conn_t *c, unsigned code)
{
    uint8_t payload[2];
    size_t len = 0;
    if (code != 0) {
        payload[0] = (uint8_t)(code >> 8);
        payload[1] = (uint8_t)code;
        len = 2;
    }
    c->close_sent = 1;
    return send_frame(r, i, c, SY_WS_OP_CLOSE, payload, len);
}

/* ---- connecting --------------------------------------------------------- */

void lg_conn_start(lg_run_t *r, uint32_t i, unsigned attempt_kind)
{
    const lg_opts_t *o = r->opts;
    lg_conn_t *c = &r->conns[i];
    memset(c, 0, sizeof(*c)); /* a reused slot starts clean */
    if (i >= r->hwm)
        r->hwm = i + 1;
    c->attempt_kind = (uint8_t)attempt_kind;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    c->state = LG_CS_CONNECTING;
    r->pending++;
    if (attempt_kind == LG_ATTEMPT_RAMP)
        r->ramp_inflight++;
    if (c->fd < 0) {
        int err = errno;
        if (err == EMFILE || err == ENFILE) {
            if (!r->warned_fd_limit && !o->quiet)
                fprintf(stderr,
                        "loadgen: out of file descriptors after %u open connections "
                        "(RLIMIT_NOFILE %d); the rest fail as fd_limit\n",
                        r->open + r->closing + r->pending - 1, r->fd_limit);
            r->warned_fd_limit = true;
            fail(r, c, LG_FAIL_FD_LIMIT);
        } else {
            note_error(r, "socket", err);
            fail(r, c, LG_FAIL_SOCKET);
        }
        return;
    }
    /* The source address spreads the 4-tuples: each 127.0.0.x has its own
     * ephemeral port range toward the one server address. With
     * IP_BIND_ADDRESS_NO_PORT the port is chosen at connect() time, knowing
     * the destination, instead of reserving a port for any destination. */
    int one = 1;
    (void)setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = 0};
    src.sin_addr.s_addr = htonl(0x7F000001u + (i % o->sources));
    if (bind(c->fd, (struct sockaddr *)&src, sizeof(src)) != 0) {
        int err = errno;
        note_error(r, "bind", err);
        fail(r, c, (err == EADDRINUSE || err == EADDRNOTAVAIL) ? LG_FAIL_NO_PORT : LG_FAIL_SOCKET);
        return;
    }
    if (connect(c->fd, (const struct sockaddr *)&o->dst, sizeof(o->dst)) != 0 &&
        errno != EINPROGRESS) {
        int err = errno;
        note_error(r, "connect", err);
        fail(r, c,
             err == EADDRNOTAVAIL || err == EADDRINUSE ? LG_FAIL_NO_PORT
             : err == ECONNREFUSED                    ? LG_FAIL_REFUSED
                                                      : LG_FAIL_CONNECT);
        return;
    }
    /* Writable means connected (or failed: SO_ERROR says which). */
    struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = i};
    if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        note_error(r, "epoll_ctl", errno);
        fail(r, c, LG_FAIL_SOCKET);
        return;
    }
    c->ep_events = EPOLLOUT;
    c->deadline_ns = lg_now_ns() + (int64_t)(o->connect_timeout_s * 1e9);
}

static void send_request(lg_run_t *r, uint32_t i, lg_conn_t *c)
{
    uint8_t nonce[16];
    uint64_t a = lg_rand(r), b = lg_rand(r);
    memcpy(nonce, &a, 8);
    memcpy(nonce + 8, &b, 8);
    char key[SY_WS_KEY_LEN + 1];
    (void)sy_base64_encode(nonce, sizeof(nonce), key, sizeof(key));
    key[SY_WS_KEY_LEN] = '\0';
    sy_ws_accept_key(key, SY_WS_KEY_LEN, c->accept);

    char req[LG_MAX_PATH + 256];
    if (r->opts->sse) { /* an event stream: a plain GET */
        int m = snprintf(req, sizeof(req),
                         "GET %s HTTP/1.1\r\n"
                         "Host: %s\r\n"
                         "Accept: text/event-stream\r\n"
                         "Cache-Control: no-cache\r\n"
                         "\r\n",
                         r->opts->path, r->opts->host_header);
        c->state = LG_CS_HANDSHAKE;
        if (!set_interest(r, i, c, EPOLLIN)) {
            fail(r, c, LG_FAIL_SOCKET);
            return;
        }
        (void)send_bytes(r, i, c, req, (size_t)m);
        return;
    }
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\n"
                     "Host: %s\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n"
                     "%s"
                     "\r\n",
                     r->opts->path, r->opts->host_header, key,
                     r->opts->deflate ? lg_deflate_offer() : "");
    c->state = LG_CS_HANDSHAKE;
    if (!set_interest(r, i, c, EPOLLIN)) {
        fail(r, c, LG_FAIL_SOCKET);
        return;
    }
    (void)send_bytes(r, i, c, req, (size_t)n);
}

/* ---- the handshake response --------------------------------------------- */

/* The Sec-WebSocket-Extensions answer: none unless offered (--deflate),
 * then permessage-deflate with server_no_context_takeover (deflate.c).
 * Sets c->deflate; false when the answer is not acceptable. */
static bool check_extensions(lg_run_t *r, lg_conn_t *c, const char *v, size_t len)
{
    if (!r->opts->deflate)
        return false;
    switch (lg_deflate_answer(v, len)) {
    case LG_PMD_OK:
        c->deflate = 1;
        return true;
    case LG_PMD_CONTEXT:
        r->deflate_refused++;
        note_error(r, "handshake: permessage-deflate without server_no_context_takeover "
                      "(this client inflates each message on its own)", 0);
        return false;
    default:
        note_error(r, "handshake: a Sec-WebSocket-Extensions answer we did not offer", 0);
        return false;
    }
}

/* Checks a complete response head (ending in CRLF CRLF) against RFC 6455
 * 4.1: status 101, Upgrade: websocket, Connection: upgrade, the right
 * Sec-WebSocket-Accept, and no extension but the one offered. */
static lg_fail_t check_response(lg_run_t *r, lg_conn_t *c, const char *h, size_t len)
{
    if (len < 12 || memcmp(h, "HTTP/1.1 ", 9) != 0 || h[9] < '0' || h[9] > '9' ||
        h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9')
        return LG_FAIL_BAD_RESPONSE;
    unsigned status = (unsigned)((h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0'));
    if (status != 101) {
        char what[48];
        snprintf(what, sizeof(what), "handshake: HTTP status %u", status);
        note_error(r, what, 0);
        lg_codes_add(&r->statuses, status);
        return LG_FAIL_STATUS;
    }
    bool upgrade = false, connection = false, accept = false;
    const char *p = memchr(h, '\n', len);
    const char *end = h + len;
    while (p != NULL && ++p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            break;
        const char *line_end = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        const char *colon = memchr(p, ':', (size_t)(line_end - p));
        if (colon != NULL) {
            const char *v = colon + 1;
            while (v < line_end && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = line_end;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            size_t nl = (size_t)(colon - p), vl = (size_t)(ve - v);
            if (sy_http_case_eq(p, nl, "upgrade", 7))
                upgrade = upgrade || sy_http_list_contains(v, vl, "websocket", 9);
            else if (sy_http_case_eq(p, nl, "connection", 10))
                connection = connection || sy_http_list_contains(v, vl, "upgrade", 7);
            else if (sy_http_case_eq(p, nl, "sec-websocket-accept", 20))
                accept = vl == SY_WS_ACCEPT_LEN && memcmp(v, c->accept, SY_WS_ACCEPT_LEN) == 0;
            else if (sy_http_case_eq(p, nl, "sec-websocket-extensions", 24) && vl > 0 &&
                     (c->deflate || !check_extensions(r, c, v, vl)))
                return LG_FAIL_HANDSHAKE;
        }
        p = eol;
    }
    return upgrade && connection && accept ? LG_FAIL__COUNT : LG_FAIL_HANDSHAKE;
}

/* SSE: checks a complete response head: status 200, Content-Type
 * text/event-stream; notes Transfer-Encoding: chunked. */
static lg_fail_t check_sse_response(lg_run_t *r, lg_conn_t *c, const char *h, size_t len)
{
    if (len < 12 || memcmp(h, "HTTP/1.1 ", 9) != 0 || h[9] < '0' || h[9] > '9' ||
        h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9')
        return LG_FAIL_BAD_RESPONSE;
    unsigned status = (unsigned)((h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0'));
    if (status != 200) {
        char what[48];
        snprintf(what, sizeof(what), "event stream: HTTP status %u", status);
        note_error(r, what, 0);
        lg_codes_add(&r->statuses, status);
        return LG_FAIL_STATUS;
    }
    bool event_stream = false;
    const char *p = memchr(h, '\n', len);
    const char *end = h + len;
    while (p != NULL && ++p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            break;
        const char *line_end = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        const char *colon = memchr(p, ':', (size_t)(line_end - p));
        if (colon != NULL) {
            const char *v = colon + 1;
            while (v < line_end && (*v == ' ' || *v == '\t'))
                v++;
            size_t nl = (size_t)(colon - p), vl = (size_t)(line_end - v);
            if (sy_http_case_eq(p, nl, "content-type", 12))
                event_stream = vl >= 17 && sy_http_case_eq(v, 17, "text/event-stream", 17);
            else if (sy_http_case_eq(p, nl, "transfer-encoding", 17))
                c->sse_chunked = sy_http_list_contains(v, vl, "chunked", 7);
        }
        p = eol;
    }
    if (!event_stream) {
        note_error(r, "event stream: 200 without Content-Type: text/event-stream", 0);
        return LG_FAIL_HANDSHAKE;
    }
    return LG_FAIL__COUNT;
}

static void frames_input(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *p, size_t n,
                         int64_t now);
static void sse_body(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *p, size_t n,
                     int64_t now);

static void handshake_input(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *p, size_t n,
                            int64_t now)
{
    size_t room = LG_MAX_RESPONSE_HEAD - c->head_len;
    size_t take = n < room ? n : room;
    if (c->head == NULL) {
        c->head = malloc(LG_MAX_RESPONSE_HEAD);
        if (c->head == NULL) {
            fail(r, c, LG_FAIL_SOCKET);
            return;
        }
    }
    memcpy(c->head + c->head_len, p, take);
    /* Search from 3 bytes before the new data: the CRLFCRLF may straddle. */
    size_t from = c->head_len > 3 ? c->head_len - 3 : 0;
    c->head_len += (uint32_t)take;
    const char *end = memmem(c->head + from, c->head_len - from, "\r\n\r\n", 4);
    if (end == NULL) {
        if (c->head_len == LG_MAX_RESPONSE_HEAD)
            fail(r, c, LG_FAIL_BAD_RESPONSE);
        return;
    }
    size_t head_len = (size_t)(end - c->head) + 4;
    lg_fail_t why = r->opts->sse ? check_sse_response(r, c, c->head, head_len)
                                 : check_response(r, c, c->head, head_len);
    if (why != LG_FAIL__COUNT) {
        if (why == LG_FAIL_HANDSHAKE && !r->opts->sse)
            note_error(r, "handshake: 101 without the right Upgrade/Connection/Accept", 0);
        fail(r, c, why);
        return;
    }
    /* Bytes after the head are already frames. */
    size_t extra = c->head_len - head_len; /* from this read only */
    free(c->head);
    c->head = NULL;
    c->head_len = 0;
    leave_pending(r, c);
    r->open++;
    r->opened++;
    r->deflate_opened += c->deflate;
    if (c->attempt_kind == LG_ATTEMPT_CHURN)
        r->churn_reopened++;
    c->state = LG_CS_OPEN;
    if (r->opts->sse) {
        if (extra > 0)
            sse_body(r, i, c, p + (take - extra), extra, now);
        if (take < n && c->state == LG_CS_OPEN)
            sse_body(r, i, c, p + take, n - take, now);
        return;
    }
    if (extra > 0)
        frames_input(r, i, c, p + (take - extra), extra, now);
    if (take < n && c->state == LG_CS_OPEN)
        frames_input(r, i, c, p + take, n - take, now);
}

/* ---- frames ------------------------------------------------------------- */

static void protocol_error(lg_run_t *r, uint32_t i, lg_conn_t *c, long err)
{
    char what[96];
    snprintf(what, sizeof(what), "server frame: %s", sy_ws_error_str(err));
    note_error(r, what, 0);
    if (send_close(r, i, c, 1002))
        finish(r, c, LG_END_PROTOCOL);
}

/* The send timestamp in a message's first bytes, or 0 when it has none: a
 * binary message starts with it (uint64, little-endian); a text one with
 * {"ts":N, (N in decimal). */
static uint64_t timestamp_of(const lg_conn_t *c)
{
    if (c->msg_op != SY_WS_OP_TEXT) {
        if (c->head_have < 8)
            return 0;
        uint64_t ts = 0;
        for (int k = 7; k >= 0; k--)
            ts = (ts << 8) | c->msg_head[k];
        return ts;
    }
    static const char prefix[] = "{\"ts\":";
    size_t k = sizeof(prefix) - 1;
    if (c->head_have < k || memcmp(c->msg_head, prefix, k) != 0)
        return 0;
    uint64_t ts = 0;
    size_t digits = 0;
    for (; k < c->head_have && c->msg_head[k] >= '0' && c->msg_head[k] <= '9' && digits < 19; k++, digits++)
        ts = ts * 10 + (uint64_t)(c->msg_head[k] - '0');
    return digits > 0 && k < c->head_have ? ts : 0;
}

static void record_latency(lg_run_t *r, const lg_conn_t *c, int64_t now)
{
    uint64_t ts = timestamp_of(c);
    if (ts == 0)
        return;
    int64_t lat = now - (int64_t)ts;
    if ((int64_t)ts <= 0 || lat < 0 || lat > MAX_LATENCY_NS) {
        r->c.bad_timestamps++;
        return;
    }
    r->c.timestamped++;
    lg_hist_record(&r->lat, (uint64_t)lat);
    lg_hist_record(&r->lat_tick, (uint64_t)lat);
    lg_hist_record(&r->lat_mark, (uint64_t)lat);
    if (r->steady)
        lg_hist_record(&r->lat_steady, (uint64_t)lat);
}

/* --seq: the message's sequence number (bytes 8..15 of a binary message,
 * little-endian) against the connection's last one (see lg.h). */
/* A text message's fields {"ts":T,"seq":S,"p":" (our text payloads):
 * *seq and the length of that prefix; false when the head is not that. */
static bool text_fields(const lg_conn_t *c, uint64_t *seq, size_t *prefix)
{
    static const char ts[] = "{\"ts\":", sq[] = ",\"seq\":", pp[] = ",\"p\":\"";
    const uint8_t *h = c->msg_head;
    size_t n = c->head_have, k = sizeof(ts) - 1;
    if (n < k || memcmp(h, ts, k) != 0)
        return false;
    size_t d = 0;
    for (; k < n && h[k] >= '0' && h[k] <= '9'; k++)
        d++;
    if (d == 0 || n - k < sizeof(sq) - 1 || memcmp(h + k, sq, sizeof(sq) - 1) != 0)
        return false;
    k += sizeof(sq) - 1;
    uint64_t v = 0;
    d = 0;
    for (; k < n && h[k] >= '0' && h[k] <= '9' && d < 19; k++, d++)
        v = v * 10 + (uint64_t)(h[k] - '0');
    if (d == 0 || k >= n)
        return false;
    *seq = v;
    if (n - k >= sizeof(pp) - 1 && memcmp(h + k, pp, sizeof(pp) - 1) == 0)
        *prefix = k + sizeof(pp) - 1;
    else
        *prefix = 0;
    return true;
}

/* --check-size: the text message is check_size bytes of
 * {"ts":T,"seq":S,"p":"xx...x"}. */
static void check_payload(lg_run_t *r, const lg_conn_t *c)
{
    uint64_t seq;
    size_t prefix = 0;
    r->c.checked++;
    if (c->msg_len != r->opts->check_size || !text_fields(c, &seq, &prefix) || prefix == 0 ||
        c->msg_len < prefix + 2 || c->pay_x != c->msg_len - prefix - 2 ||
        c->pay_tail[0] != '"' || c->pay_tail[1] != '}')
        r->c.bad_payload++;
}

static void check_seq(lg_run_t *r, lg_conn_t *c)
{
    uint64_t seq = 0;
    if (c->msg_op == SY_WS_OP_TEXT) {
        size_t prefix;
        if (!text_fields(c, &seq, &prefix))
            return;
    } else {
        if (c->head_have < 16)
            return;
        for (int k = 15; k >= 8; k--)
            seq = (seq << 8) | c->msg_head[k];
    }
    if (!c->have_seq) {
        c->have_seq = 1;
        c->last_seq = seq;
    } else if (seq == c->last_seq) {
        r->c.seq_dups++;
    } else if (seq < c->last_seq) {
        r->c.seq_back++;
    } else {
        r->c.seq_gaps += seq - c->last_seq - 1;
        c->last_seq = seq;
    }
}

/* Keeps the first LG_HEAD_LEN bytes of a message (its timestamp). */
static void keep_head(lg_conn_t *c, const uint8_t *p, size_t n)
{
    if (c->head_have >= LG_HEAD_LEN)
        return;
    size_t t = LG_HEAD_LEN - c->head_have < n ? LG_HEAD_LEN - c->head_have : n;
    memcpy(c->msg_head + c->head_have, p, t);
    c->head_have = (uint8_t)(c->head_have + t);
}

/* Payload bytes of an uncompressed message (a WebSocket data frame's, an
 * SSE data value's): its head, its length, and with --check-size what
 * check_payload() needs. */
static void payload_bytes(lg_run_t *r, lg_conn_t *c, const uint8_t *p, size_t n)
{
    keep_head(c, p, n);
    c->msg_len += n;
    if (r->opts->check_size == 0 || n == 0)
        return;
    uint32_t x = 0;
    for (size_t k = 0; k < n; k++)
        x += p[k] == 'x';
    c->pay_x += x;
    if (n >= 2) {
        c->pay_tail[0] = p[n - 2];
        c->pay_tail[1] = p[n - 1];
    } else {
        c->pay_tail[0] = c->pay_tail[1];
        c->pay_tail[1] = p[0];
    }
}

/* A compressed message is whole: inflate it (its length and head become
 * the inflated ones). False when it is not valid DEFLATE: we close 1007. */
static bool inflate_message(lg_run_t *r, lg_conn_t *c)
{
    size_t n = 0;
    const uint8_t *out = lg_inflate(r, c->z, c->z_len, &n);
    if (out == NULL) {
        r->inflate_errors++;
        return false;
    }
    c->msg_len = n;
    c->head_have = 0;
    keep_head(c, out, n);
    return true;
}

/* A data message is whole. False when the connection is gone. */
static bool message_done(lg_run_t *r, uint32_t i, lg_conn_t *c, int64_t now)
{
    uint64_t wire = c->msg_z || c->msg_whole ? c->z_len : c->msg_len;
    if (c->msg_whole) { /* --pusher: the protocol's events are not messages */
        int k = lg_pusher_message(r, i, c, c->z, c->z_len, now);
        c->z_len = 0;
        if (k <= 0)
            return k == 0;
    }
    if (c->msg_z && !inflate_message(r, c)) {
        note_error(r, "server frame: a compressed message that does not inflate", 0);
        if (send_close(r, i, c, 1007))
            finish(r, c, LG_END_PROTOCOL);
        return false;
    }
    c->z_len = 0;
    if (!r->measuring)
        return true;
    if (r->c.messages == 0) { /* the measured window starts */
        r->t_first_msg = now;
        lg_sample_self(&r->self_first, now);
        if (r->opts->server_pid > 0)
            lg_sample_pid(&r->srv_first, r->opts->server_pid, now);
    }
    r->c.messages++;
    r->c.bytes += c->msg_len;
    r->c.wire_payload += wire;
    r->c.compressed += c->msg_z;
    if (c->msg_op == SY_WS_OP_TEXT) {
        r->c.text_messages++;
        if (r->opts->check_size > 0)
            check_payload(r, c);
    }
    record_latency(r, c, now);
    if (r->opts->seq)
        check_seq(r, c);
    if (r->t_first_since_mark == 0)
        r->t_first_since_mark = now;
    r->t_last_msg = now;
    return true;
}

/* Appends a compressed message's payload bytes to c->z (room for the
 * inflate tail kept). False past LG_MAX_COMPRESSED or out of memory. */
static bool gather(lg_conn_t *c, const uint8_t *p, size_t n)
{
    size_t need = (size_t)c->z_len + n + LG_INFLATE_TAIL;
    if ((size_t)c->z_len + n > LG_MAX_COMPRESSED)
        return false;
    if (need > c->z_cap) {
        size_t cap = c->z_cap ? c->z_cap : 1024;
        while (cap < need)
            cap *= 2;
        uint8_t *q = realloc(c->z, cap);
        if (q == NULL)
            return false;
        c->z = q;
        c->z_cap = (uint32_t)cap;
    }
    memcpy(c->z + c->z_len, p, n);
    c->z_len += (uint32_t)n;
    return true;
}

/* The whole payload of c->fr has been read. Returns false if the connection
 * is gone. */
static bool frame_done(lg_run_t *r, uint32_t i, lg_conn_t *c, int64_t now)
{
    const sy_ws_frame_t *f = &c->fr;
    c->in_payload = 0;
    switch (f->opcode) {
    case SY_WS_OP_PING:
        r->c.pings++;
        if (c->close_sent)
            return true;
        r->c.pongs_sent++;
        return send_frame(r, i, c, SY_WS_OP_PONG, c->ctrl, (size_t)f->payload_len);
    case SY_WS_OP_PONG:
        return true;
    case SY_WS_OP_CLOSE: {
        uint16_t code;
        const uint8_t *reason;
        size_t reason_len;
        int err = sy_ws_close_parse(c->ctrl, (size_t)f->payload_len, &code, &reason, &reason_len);
        if (err != 0) {
            protocol_error(r, i, c, err);
            return false;
        }
        c->close_rcvd = 1;
        c->close_code = code;
        if (!c->close_sent) {
            /* Echo the code (none if the server sent none), then wait for
             * the server to close TCP first (RFC 6455 7.1.1). */
            if (!send_close(r, i, c, code == 1005 ? 0 : code))
                return false;
            enter_closing(r, c, now);
        }
        return true;
    }
    default: /* a data frame: the message ends with its FIN frame */
        return !f->fin || message_done(r, i, c, now);
    }
}

/* Parses a frame header from buf[0..len) (client role); on a connection
 * that negotiated permessage-deflate, RSV1 may mark the first frame of a
 * data message (the parser's SY_WS_ALLOW_RSV1), reported in *rsv1. */
static long parse_header(const lg_conn_t *c, const uint8_t *buf, size_t len, sy_ws_frame_t *fr,
                         bool *rsv1)
{
    unsigned flags = SY_WS_ROLE_CLIENT | (c->deflate ? SY_WS_ALLOW_RSV1 : 0u);
    long h = sy_ws_frame_parse(buf, len, flags, fr);
    *rsv1 = h > 0 && (fr->rsv & 4u);
    return h;
}

/* Reads a frame header at p (or completes the split one in c->hdr).
 * Returns the bytes of p it took (> 0), 0 when p ran out (kept in c->hdr),
 * or a negative SY_WS_E_* error. */
static long frame_header(lg_conn_t *c, const uint8_t *p, size_t n, bool *rsv1)
{
    long h;
    if (c->hdr_have == 0) {
        h = parse_header(c, p, n, &c->fr, rsv1);
        if (h == SY_WS_PARTIAL) { /* keep the start of a split header */
            memcpy(c->hdr, p, n);
            c->hdr_have = (uint8_t)n;
        }
        return h;
    }
    size_t add = sizeof(c->hdr) - c->hdr_have;
    if (add > n)
        add = n;
    memcpy(c->hdr + c->hdr_have, p, add);
    h = parse_header(c, c->hdr, c->hdr_have + add, &c->fr, rsv1);
    if (h == SY_WS_PARTIAL) {
        c->hdr_have = (uint8_t)(c->hdr_have + add);
        return 0;
    }
    if (h > 0)
        h -= c->hdr_have; /* the bytes of p that completed it */
    c->hdr_have = 0;
    return h;
}

/* A data frame's header was read: a new message or a continuation. */
static long data_frame_begins(const lg_run_t *r, lg_conn_t *c, bool rsv1)
{
    const sy_ws_frame_t *f = &c->fr;
    long st = sy_ws_frag_step(c->in_msg, f->opcode, f->fin);
    if (st < 0)
        return st;
    if (f->opcode != SY_WS_OP_CONTINUATION) { /* a new message */
        c->msg_op = f->opcode;
        c->msg_len = 0;
        c->head_have = 0;
        c->pay_x = 0;
        c->pay_tail[0] = c->pay_tail[1] = 0;
        c->msg_z = rsv1;
        c->msg_whole = r->opts->pusher && f->opcode == SY_WS_OP_TEXT && !rsv1;
        c->z_len = 0;
    }
    c->in_msg = (uint8_t)st;
    return 0;
}

/* Payload bytes of a data frame: kept whole when compressed (false past
 * the limit), else only the message's head. */
static bool data_payload(lg_run_t *r, lg_conn_t *c, const uint8_t *p, size_t k)
{
    if (c->msg_z || c->msg_whole)
        return gather(c, p, k);
    payload_bytes(r, c, p, k);
    return true;
}

/* Feeds n bytes read from a connection past its handshake to the reader. */
static void frames_input(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *p, size_t n,
                         int64_t now)
{
    while (n > 0) {
        if (c->close_rcvd) /* nothing may follow a close frame; ignore it */
            return;
        if (!c->in_payload) {
            bool rsv1 = false;
            long h = frame_header(c, p, n, &rsv1);
            if (h == 0)
                return;
            if (h > 0 && !SY_WS_OP_IS_CONTROL(c->fr.opcode)) {
                long st = data_frame_begins(r, c, rsv1);
                if (st < 0)
                    h = st;
            }
            if (h < 0) {
                protocol_error(r, i, c, h);
                return;
            }
            p += h;
            n -= (size_t)h;
            c->in_payload = 1;
            c->pay_off = 0;
        }
        /* payload bytes of the current frame */
        uint64_t left = c->fr.payload_len - c->pay_off;
        size_t k = left < n ? (size_t)left : n;
        if (SY_WS_OP_IS_CONTROL(c->fr.opcode)) {
            memcpy(c->ctrl + c->pay_off, p, k);
        } else if (!data_payload(r, c, p, k)) {
            note_error(r, "server frame: a compressed message too large to gather", 0);
            if (send_close(r, i, c, 1009))
                finish(r, c, LG_END_PROTOCOL);
            return;
        }
        c->pay_off += k;
        p += k;
        n -= k;
        if (c->pay_off == c->fr.payload_len && !frame_done(r, i, c, now))
            return;
    }
}

/* ---- SSE: the event stream ---------------------------------------------- */

/* The chunk decoder's states (Transfer-Encoding: chunked). */
enum { LG_CH_SIZE, LG_CH_DATA, LG_CH_CRLF, LG_CH_END };
/* The event parser's states. */
enum { LG_SL_START, LG_SL_DATA, LG_SL_SKIP };

/* A blank line: the event ends. An event whose data starts with {"ts": is
 * a message; any other (a notice, sy.open) counts in sse_other. */
static void sse_dispatch(lg_run_t *r, uint32_t i, lg_conn_t *c, int64_t now)
{
    if (!c->sse_ev_data)
        return; /* retry:, comments (heartbeats), an id alone */
    c->sse_ev_data = 0;
    c->msg_op = SY_WS_OP_TEXT;
    c->msg_z = 0;
    if (c->head_have >= 6 && memcmp(c->msg_head, "{\"ts\":", 6) == 0)
        (void)message_done(r, i, c, now);
    else if (r->measuring)
        r->c.sse_other++;
    c->msg_len = 0;
    c->head_have = 0;
    c->pay_x = 0;
    c->pay_tail[0] = c->pay_tail[1] = 0;
}

/* Body bytes of the event stream (de-chunked): lines, fields, events. Only
 * data fields are kept (their value's head, length and check); every other
 * field and comment is skipped to its end of line. */
static void sse_events(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *p, size_t n,
                       int64_t now)
{
    while (n > 0) {
        if (c->sse_lstate == LG_SL_START) {
            uint8_t b = *p++;
            n--;
            if (b == '\n') {
                if (c->sse_name_len == 0)
                    sse_dispatch(r, i, c, now);
                c->sse_name_len = 0; /* a field line without a colon: ignored */
            } else if (b == '\r') {
                /* CRLF line ends: the CR is dropped */
            } else if (b == ':') {
                bool data = c->sse_name_len == 4 && memcmp(c->sse_name, "data", 4) == 0;
                c->sse_name_len = 0;
                if (data) {
                    if (c->sse_ev_data) /* a second data line: joined by LF */
                        payload_bytes(r, c, (const uint8_t *)"\n", 1);
                    c->sse_ev_data = 1;
                    c->sse_sp = 1;
                    c->sse_lstate = LG_SL_DATA;
                } else {
                    c->sse_lstate = LG_SL_SKIP; /* another field, or a comment */
                }
            } else if (c->sse_name_len < sizeof(c->sse_name)) {
                c->sse_name[c->sse_name_len++] = (char)b;
            }
            continue;
        }
        const uint8_t *nl = memchr(p, '\n', n);
        size_t k = nl ? (size_t)(nl - p) : n;
        if (c->sse_lstate == LG_SL_DATA) {
            const uint8_t *v = p;
            size_t vl = k;
            if (vl > 0 && c->sse_sp) {
                if (*v == ' ') {
                    v++;
                    vl--;
                }
                c->sse_sp = 0;
            }
            if (vl > 0 && nl && v[vl - 1] == '\r')
                vl--; /* CRLF */
            payload_bytes(r, c, v, vl);
        }
        if (nl == NULL)
            return;
        p += k + 1;
        n -= k + 1;
        c->sse_lstate = LG_SL_START;
        c->sse_name_len = 0;
    }
}

static int hex_value(uint8_t b)
{
    return b >= '0' && b <= '9' ? b - '0' : b >= 'a' && b <= 'f' ? b - 'a' + 10 : b >= 'A' && b <= 'F' ? b - 'A' + 10 : -1;
}

/* Body bytes as they came: de-chunked when the response was chunked. */
static void sse_body(lg_run_t *r, uint32_t i, lg_conn_t *c, const uint8_t *p, size_t n,
                     int64_t now)
{
    if (!c->sse_chunked) {
        sse_events(r, i, c, p, n, now);
        return;
    }
    while (n > 0 && c->state == LG_CS_OPEN) {
        switch (c->sse_cstate) {
        case LG_CH_SIZE: {
            uint8_t b = *p++;
            n--;
            int v = hex_value(b);
            if (b == '\n') {
                c->sse_ext = 0;
                c->sse_cstate = c->sse_chunk_left > 0 ? LG_CH_DATA : LG_CH_END;
            } else if (v >= 0 && !c->sse_ext) {
                if (c->sse_chunk_left > (UINT64_C(1) << 40)) {
                    note_error(r, "event stream: a chunk size beyond 1 TiB", 0);
                    finish(r, c, LG_END_PROTOCOL);
                    return;
                }
                c->sse_chunk_left = c->sse_chunk_left * 16 + (uint64_t)v;
            } else {
                c->sse_ext = 1; /* ;extension, or the CR */
            }
            break;
        }
        case LG_CH_DATA: {
            size_t k = c->sse_chunk_left < n ? (size_t)c->sse_chunk_left : n;
            sse_events(r, i, c, p, k, now);
            p += k;
            n -= k;
            c->sse_chunk_left -= k;
            if (c->sse_chunk_left == 0)
                c->sse_cstate = LG_CH_CRLF;
            break;
        }
        case LG_CH_CRLF: {
            uint8_t b = *p++;
            n--;
            if (b == '\n') {
                c->sse_cstate = LG_CH_SIZE;
            } else if (b != '\r') {
                note_error(r, "event stream: no CRLF after a chunk", 0);
                finish(r, c, LG_END_PROTOCOL);
                return;
            }
            break;
        }
        default: /* the last chunk: the body ended; the trailer is ignored */
            return;
        }
    }
}

/* ---- events ------------------------------------------------------------- */

/* wss://: one TLS handshake step; the request goes out once it is done. */
static void tls_step(lg_run_t *r, uint32_t i, lg_conn_t *c)
{
    switch (lg_tls_handshake(r, c)) {
    case 1:
        send_request(r, i, c);
        return;
    case 0:
        if (!set_interest(r, i, c, EPOLLIN))
            fail(r, c, LG_FAIL_SOCKET);
        return;
    case 2:
        if (!set_interest(r, i, c, EPOLLOUT))
            fail(r, c, LG_FAIL_SOCKET);
        return;
    default:
        fail(r, c, LG_FAIL_TLS);
        return;
    }
}

static void on_connected(lg_run_t *r, uint32_t i, lg_conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        note_error(r, "connect", err);
        fail(r, c,
             err == ECONNREFUSED                      ? LG_FAIL_REFUSED
             : err == EADDRNOTAVAIL || err == EADDRINUSE ? LG_FAIL_NO_PORT
                                                      : LG_FAIL_CONNECT);
        return;
    }
    if (r->opts->tls) {
        if (!lg_tls_new(r, c)) {
            fail(r, c, LG_FAIL_SOCKET);
            return;
        }
        c->state = LG_CS_TLS;
        tls_step(r, i, c);
        return;
    }
    send_request(r, i, c);
}

static void on_readable(lg_run_t *r, uint32_t i, lg_conn_t *c)
{
    /* Level-triggered: one recv per wake-up; what is left stays readable. */
    ssize_t n = lg_io_recv(c, r->rbuf, r->rbuf_cap);
    if (n > 0) {
        int64_t now = lg_now_ns();
        r->c.wire_bytes += (uint64_t)n;
        if (c->state == LG_CS_HANDSHAKE)
            handshake_input(r, i, c, r->rbuf, (size_t)n, now);
        else if (r->opts->sse)
            sse_body(r, i, c, r->rbuf, (size_t)n, now);
        else
            frames_input(r, i, c, r->rbuf, (size_t)n, now);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    int err = n < 0 ? errno : 0;
    switch (c->state) {
    case LG_CS_HANDSHAKE:
        fail(r, c, LG_FAIL_CLOSED);
        break;
    case LG_CS_CLOSING:
        if (c->closed_by_us)
            finish(r, c, c->close_rcvd ? LG_END_CLIENT_CLOSE : LG_END_CLIENT_NO_REPLY);
        else
            finish(r, c, LG_END_SERVER_CLOSE);
        break;
    default:
        if (err)
            note_error(r, "recv", err);
        finish(r, c, err ? LG_END_RESET : LG_END_EOF);
        break;
    }
}

void lg_conn_event(lg_run_t *r, uint32_t i, uint32_t events)
{
    lg_conn_t *c = &r->conns[i];
    if (c->state == LG_CS_CONNECTING) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            on_connected(r, i, c);
        return;
    }
    if (c->state == LG_CS_TLS) {
        tls_step(r, i, c);
        return;
    }
    if (c->state == LG_CS_DONE || c->state == LG_CS_IDLE)
        return; /* a stale event for an fd closed earlier in this batch */
    if ((events & EPOLLOUT) && c->out_len > 0 && !flush_out(r, i, c))
        return;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        on_readable(r, i, c);
}

void lg_conn_timeout(lg_run_t *r, uint32_t i)
{
    lg_conn_t *c = &r->conns[i];
    if (c->state == LG_CS_CONNECTING || c->state == LG_CS_TLS || c->state == LG_CS_HANDSHAKE)
        fail(r, c, LG_FAIL_TIMEOUT);
}

void lg_conn_close(lg_run_t *r, uint32_t i, lg_close_t why)
{
    lg_conn_t *c = &r->conns[i];
    if (c->state != LG_CS_OPEN)
        return;
    c->closed_by_us = 1;
    c->close_kind = (uint8_t)why;
    r->closed_by[why]++;
    if (r->opts->sse) { /* an event stream has no closing handshake */
        finish(r, c, LG_END_CLIENT_CLOSE);
        return;
    }
    if (!send_close(r, i, c, 1000))
        return; /* finished: LG_END_RESET or LG_END_OUTPUT */
    enter_closing(r, c, lg_now_ns());
}

void lg_conn_close_timeout(lg_run_t *r, uint32_t i)
{
    lg_conn_t *c = &r->conns[i];
    if (c->state == LG_CS_CLOSING)
        finish(r, c, c->closed_by_us ? LG_END_CLIENT_NO_REPLY : LG_END_SERVER_CLOSE);
}

void lg_conn_abandon(lg_run_t *r, uint32_t i)
{
    lg_conn_t *c = &r->conns[i];
    switch (c->state) {
    case LG_CS_CONNECTING:
    case LG_CS_TLS:
    case LG_CS_HANDSHAKE:
        fail(r, c, LG_FAIL_CUT_SHORT);
        break;
    case LG_CS_OPEN:
    case LG_CS_CLOSING:
        finish(r, c, c->closed_by_us ? LG_END_CLIENT_NO_REPLY : LG_END_SERVER_CLOSE);
        break;
    default:
        break;
    }
}
