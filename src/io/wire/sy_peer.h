/*
 * sy_peer — who a connection's client is: its socket's peer, or, on a
 * listener with proxyProtocol, the source address of the PROXY protocol
 * header a load balancer puts before the client's bytes (proto/sy_proxy.h),
 * kept in the connection (sy_conn_t.peer[0], which only a server with
 * proxyProtocol allocates; sy_peer_get reads either). sy_peer_final is the one moment
 * the address becomes final, for every connection (the listener's, with
 * or without a header, and those adopted from Node): what the owner's
 * onUpgrade, the limits and the counters see from then on.
 *
 * Reading the header (SY_CONN_PROXY): the bytes are peeked (MSG_PEEK) and
 * only the header's are taken from the socket, so whatever follows it in
 * the same segment (the HTTP request, a TLS ClientHello) is left for the
 * transport and the upgrade, untouched. A beginning that is not yet a
 * whole header is all header (sy_proxy's PARTIAL), so it is taken too and
 * kept in c->rbuf: the level-triggered poller does not spin on it. At most
 * SY_PEER_PROXY_MAX bytes; the deadline is the handshake timeout from
 * accept (the sweep closes it, counted in proxy_rejects and timeouts).
 *
 * A bad header, one cut short by the peer's EOF, or none where it is
 * required: the socket is closed at once (no answer: the peer is a proxy),
 * counted in proxy_rejects. A header from a source outside proxy_from:
 * closed, counted in proxy_untrusted. With SY_PROXY_OPTIONAL, bytes that
 * do not start a header are a plain connection (what was taken of a
 * beginning that looked like one stays in rbuf for the HTTP parser). A
 * peer that closes before sending anything is closed, not counted (a load
 * balancer's TCP health check does exactly that).
 *
 * Threads: the IO thread that owns the connection; sy_peer_of_fd and
 * sy_peer_format are pure helpers (any thread).
 *
 * Ownership: nothing is kept beyond the connection's own fields (peer,
 * rbuf while the header is incomplete).
 *
 * Errors: none to the caller: a connection that cannot go on is closed
 * and counted. sy_peer_of_fd leaves family 0 when the socket has no IP
 * peer (a UNIX socket) or getpeername fails.
 */
#ifndef SY_PEER_H
#define SY_PEER_H

#include <stddef.h>

#include "io/conn/sy_conn.h"

#define SY_PEER_PROXY_MAX 4096 /* the longest PROXY header read (v2 with TLVs; v1 is at most 107) */

/* The socket's peer, as a sy_peer_addr_t (family 0 when not an IP peer). */
void sy_peer_of_fd(int fd, sy_peer_addr_t *out);
/* addr as text (INET6_ADDRSTRLEN bytes) and its port in decimal (8
 * bytes); both empty for family 0. An IPv4-mapped IPv6 address is written
 * as IPv6 text, as Node's sockets show it. */
void sy_peer_format(const sy_peer_addr_t *a, char *addr, size_t addr_cap, char *port, size_t port_cap);

/* c's client address: peer[0] when the connection has one, else its
 * socket's peer (a system call). */
void sy_peer_get(const sy_conn_t *c, sy_peer_addr_t *out);

/* SY_CONN_PROXY: the socket is readable. */
void sy_peer_on_readable(sy_io_t *io, sy_conn_t *c);

/* THE moment c's client address is final (sy_peer_get: the PROXY header's
 * source, or the socket's peer). Called exactly once per connection: by
 * sy_conn_start for a connection without a PROXY phase, by
 * sy_peer_on_readable when the header is read (or, optional, is not
 * there). Checks of the client by address (admission, per-address limits)
 * belong here, before any byte of the transport or HTTP is read; they
 * close c to refuse it. Then the connection goes on (sy_conn_begin). */
void sy_peer_final(sy_io_t *io, sy_conn_t *c);

/* A new connection's first state (after the thread registered it): PROXY
 * (on this wire) for a listener's connection when the server reads PROXY
 * protocol headers; else its address is final now (sy_peer_final). */
void sy_peer_start(sy_io_t *io, sy_conn_t *c);
/* The table the thread registers as SY_WIRE_PROXY. */
extern const sy_wire_t sy_peer_wire;

#endif
