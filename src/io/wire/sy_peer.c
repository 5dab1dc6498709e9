/* sy_peer — see sy_peer.h. */
#define _GNU_SOURCE
#include "io/wire/sy_peer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_buf.h"
#include "io/conn/sy_wire.h"
#include "net/sy_sock.h"
#include "proto/sy_cidr.h"
#include "proto/sy_proxy.h"

void sy_peer_of_fd(int fd, sy_peer_addr_t *out) {
    memset(out, 0, sizeof(*out));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        out->family = 4;
        out->port = ntohs(a->sin_port);
        memcpy(out->addr, &a->sin_addr, 4);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        out->family = 6;
        out->port = ntohs(a->sin6_port);
        memcpy(out->addr, &a->sin6_addr, 16);
    }
}

void sy_peer_format(const sy_peer_addr_t *a, char *addr, size_t addr_cap, char *port, size_t port_cap) {
    addr[0] = '\0';
    port[0] = '\0';
    if (a->family != 4 && a->family != 6)
        return;
    if (inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->addr, addr, (socklen_t)addr_cap) == NULL) {
        addr[0] = '\0';
        return;
    }
    (void)snprintf(port, port_cap, "%u", (unsigned)a->port);
}

void sy_peer_get(const sy_conn_t *c, sy_peer_addr_t *out) {
    if (c->has_peer)
        *out = c->peer[0];
    else
        sy_peer_of_fd(c->stream.fd, out);
}

/* Takes n bytes the peek saw off the socket. False when they were not all
 * there (they were: the socket is broken). */
static bool take(int fd, uint8_t *scratch, size_t n) {
    while (n > 0) {
        long r = sy_sock_recv(fd, scratch, n, false);
        if (r == -EINTR)
            continue;
        if (r <= 0)
            return false;
        n -= (size_t)r;
    }
    return true;
}

static void reject(sy_io_t *io, sy_conn_t *c) {
    sy_stat_inc(&sy_io_ctx(io)->stats.proxy_rejects);
    sy_conn_destroy(io, c, 1006);
}

/* A header was read (hlen bytes of buf, of which `have` were taken
 * earlier): take the rest off the socket, check its source, and adopt its
 * address. */
static void header_read(sy_io_t *io, sy_conn_t *c, const sy_proxy_t *p, size_t hlen, size_t have) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    if (!take(c->stream.fd, sy_io_ctx(io)->rx, hlen - have)) {
        sy_conn_destroy(io, c, 1006);
        return;
    }
    c->rlen = 0;
    sy_peer_addr_t *peer = &c->peer[0]; /* the socket's so far (sy_conn_start) */
    if (o->proxy_from_n > 0 && !sy_cidr_any(o->proxy_from, o->proxy_from_n, peer->family, peer->addr)) {
        sy_stat_inc(&sy_io_ctx(io)->stats.proxy_untrusted);
        sy_conn_destroy(io, c, 1006);
        return;
    }
    sy_stat_inc(&sy_io_ctx(io)->stats.proxy_headers);
    if (!p->keep) {
        peer->family = p->family;
        peer->port = p->src_port;
        memcpy(peer->addr, p->src, sizeof(peer->addr));
        c->proxied = true;
    }
    sy_peer_final(io, c);
}

void sy_peer_on_readable(sy_io_t *io, sy_conn_t *c) {
    uint8_t *rx = sy_io_ctx(io)->rx;
    size_t have = c->rlen;
    long n = sy_sock_recv(c->stream.fd, rx, SY_PEER_PROXY_MAX - have, true);
    if (n < 0) {
        if (n != -EAGAIN && n != -EWOULDBLOCK && n != -EINTR)
            sy_conn_destroy(io, c, 1006);
        return;
    }
    if (n == 0) {
        /* EOF: a header cut short is a bad one; nothing at all is a probe. */
        if (have > 0)
            reject(io, c);
        else
            sy_conn_destroy(io, c, 1006);
        return;
    }
    c->last_rx_ms = sy_io_ctx(io)->now_ms;
    const uint8_t *buf = rx;
    size_t len = (size_t)n;
    if (have > 0) {
        if (sy_buf_append(&c->rbuf, &c->rlen, &c->rcap, rx, (size_t)n, 256) != 0) {
            sy_conn_destroy(io, c, 1006);
            return;
        }
        buf = c->rbuf;
        len = c->rlen;
    }
    sy_proxy_t p;
    long r = sy_proxy_parse(buf, len, SY_PEER_PROXY_MAX, &p);
    if (r > 0) {
        header_read(io, c, &p, (size_t)r, have);
        return;
    }
    if (r == SY_PROXY_PARTIAL) {
        /* Every byte seen is the header's: take them, keep them. */
        if ((have == 0 && sy_buf_append(&c->rbuf, &c->rlen, &c->rcap, rx, (size_t)n, 256) != 0) ||
            !take(c->stream.fd, rx, (size_t)n))
            sy_conn_destroy(io, c, 1006);
        return;
    }
    c->rlen = have; /* what was taken before this peek, and only that */
    if (r == SY_PROXY_E_NOT_PROXY && sy_io_ctx(io)->shared->opts.proxy_protocol == SY_PROXY_OPTIONAL &&
        (have == 0 || sy_stream_is_plain(&c->stream))) {
        /* No header: a plain connection (bytes taken of a false start
         * stay in rbuf for the HTTP parser; a TLS transport could not
         * take them back, so there it is a bad one). */
        sy_peer_final(io, c);
        return;
    }
    reject(io, c);
}

void sy_peer_final(sy_io_t *io, sy_conn_t *c) {
    /* Admission by address (the hook: io/app/sy_admit.h): the PROXY header's address when
     * one came, else the socket's. Refused, c is answered and closed. */
    struct sockaddr_storage ss;
    socklen_t len = 0;
    if (c->proxied) {
        sy_peer_addr_t a;
        sy_peer_get(c, &a);
        memset(&ss, 0, sizeof(ss));
        if (a.family == 4) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            in->sin_family = AF_INET;
            in->sin_port = htons(a.port);
            memcpy(&in->sin_addr, a.addr, 4);
            len = sizeof(*in);
        } else if (a.family == 6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons(a.port);
            memcpy(&in6->sin6_addr, a.addr, 16);
            len = sizeof(*in6);
        }
    }
    if (!sy_conn_hooks(io)->admit(io, c, len > 0 ? (const void *)&ss : NULL, (unsigned)len))
        return;
    sy_conn_begin(io, c);
}

void sy_peer_start(sy_io_t *io, sy_conn_t *c) {
    if (c->has_peer)
        sy_peer_of_fd(c->stream.fd, &c->peer[0]);
    if (c->listener && c->has_peer) {
        c->wire = SY_WIRE_PROXY;
        sy_conn_enter(io, c, SY_CONN_PROXY);
        return;
    }
    sy_peer_final(io, c);
}

const sy_wire_t sy_peer_wire = {.name = "PROXY", .readable = sy_peer_on_readable};
