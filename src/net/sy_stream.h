/*
 * sy_stream — a connection's transport: the bytes between the socket and
 * the WebSocket code. Plain TCP (sy_stream_plain_ops, here) or TLS
 * (sy_stream_tls_ops, src/tls/sy_stream_tls.h), chosen per server when a
 * connection is made; the WebSocket state machine (sy_conn) sees bytes only
 * and has no TLS code, as uSockets layers its SSL under its sockets.
 *
 * A transport may need a handshake before any byte (TLS): the connection
 * then starts in SY_CONN_HANDSHAKE and steps it on readiness. Reads fill a
 * caller's buffer; a flush writes what a send queue (sy_outq) holds. A
 * transport may hold bytes it took from the queue but could not write yet
 * (TLS: OpenSSL must be offered the same record again); they count as
 * queued (sy_stream_held) and go out before anything else.
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: sy_stream_open takes over fd (sy_stream_shut or sy_stream_free
 * closes it) only when it succeeds; the transport's state (impl) is the
 * stream's, freed by sy_stream_free. A flush takes bytes from the caller's
 * queue, consuming what left (a transport may hold a copy of some:
 * sy_stream_held); *scratch is the caller's buffer (the IO thread's),
 * allocated on first use and freed by the caller. Reads fill the caller's
 * buffer.
 *
 * Errors: sy_stream_open (and an ops' open) returns 0 or an errno value; a
 * step returns sy_stream_rc_t (base/sy_errors.h rule 4): BAD and ERROR are
 * failures. sy_stream_plain_wrote takes a write's result as data, bytes or
 * -errno (a named exception).
 */
#ifndef SY_STREAM_H
#define SY_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "net/sy_outq.h"

/* What a step of a transport did, or needs next. */
typedef enum sy_stream_rc {
    SY_STREAM_OK = 0,     /* handshake done / read *n > 0 bytes / the queue and the held bytes are written */
    SY_STREAM_WANT_READ,  /* nothing more until the socket is readable */
    SY_STREAM_WANT_WRITE, /* nothing more until the socket is writable */
    SY_STREAM_END,        /* (read) the peer ended the stream, after *n bytes */
    SY_STREAM_BAD,        /* the peer sent what the transport rejects (not TLS, a bad record) */
    SY_STREAM_ERROR,      /* the socket failed (reset, broken pipe) or out of memory */
} sy_stream_rc_t;

typedef struct sy_stream {
    const struct sy_stream_ops *ops;
    void *impl;    /* the transport's own per-connection state; NULL for plain TCP */
    int fd;        /* -1 once shut */
    uint32_t held; /* bytes the transport took from the queue and holds (kept
                      by the transport; read on every push, so not a call) */
} sy_stream_t;

typedef struct sy_stream_ops {
    const char *name;
    bool handshake_first; /* a handshake precedes the first byte */
    /* Makes s's state for s->fd; arg: the transport's per-server argument.
     * 0 or an errno value (nothing to free then). */
    int (*open)(sy_stream_t *s, void *arg);
    sy_stream_rc_t (*handshake)(sy_stream_t *s);
    /* Up to cap bytes into buf; *n: how many (also with END, BAD, ERROR). */
    sy_stream_rc_t (*read)(sy_stream_t *s, uint8_t *buf, size_t cap, size_t *n);
    /* Writes held bytes, then q's, until done or the socket is full;
     * *written: bytes that left (for stats). scratch: the IO thread's
     * staging buffer of SY_STREAM_SCRATCH bytes, made on first use. */
    sy_stream_rc_t (*flush)(sy_stream_t *s, sy_outq_t *q, uint8_t **scratch, size_t *written);
    void (*close_notify)(sy_stream_t *s); /* best effort; nothing is waited for */
    void (*free)(sy_stream_t *s);         /* the transport's state, not the fd */
} sy_stream_ops_t;

#define SY_STREAM_SCRATCH 16384 /* one TLS record's plaintext */

extern const sy_stream_ops_t sy_stream_plain_ops;

/* Buffers per write of plain TCP (sy_outq_iov's max). */
#define SY_STREAM_MAX_IOV 64

/* True for plain TCP: a flush is writes of sy_outq_iov's buffers, one
 * after the other, and nothing is held. A caller that writes for many
 * connections at once (sy_uring, from sy_io's flush) may make those writes
 * itself and hand each result to sy_stream_plain_wrote. */
static inline bool sy_stream_is_plain(const sy_stream_t *s) { return s->ops == &sy_stream_plain_ops; }
/* Applies the result of one write of the buffers sy_outq_iov gave (total:
 * their bytes) to q, as plain TCP's flush does: res is the bytes written
 * or -errno. Returns OK when nothing stops another write (everything was
 * written, or EINTR): write again while q is not empty; WANT_WRITE when the
 * socket is full (a short write, EAGAIN); ERROR when it failed (reset,
 * broken pipe). *written: bytes that left. */
sy_stream_rc_t sy_stream_plain_wrote(sy_outq_t *q, long res, size_t total, size_t *written);

/* A stream on fd (taken over: sy_stream_free closes it). 0 or an errno value
 * (fd still the caller's then). */
sy_err_t sy_stream_open(sy_stream_t *s, const sy_stream_ops_t *ops, void *arg, int fd);
/* Closes the socket now (its poller registration goes with it); the
 * transport's state stays until sy_stream_free. */
void sy_stream_shut(sy_stream_t *s);
/* Closes the socket if still open and frees the transport's state. */
void sy_stream_free(sy_stream_t *s);

static inline sy_stream_rc_t sy_stream_handshake(sy_stream_t *s) { return s->ops->handshake(s); }
static inline sy_stream_rc_t sy_stream_read(sy_stream_t *s, uint8_t *buf, size_t cap, size_t *n) {
    return s->ops->read(s, buf, cap, n);
}
static inline sy_stream_rc_t sy_stream_flush(sy_stream_t *s, sy_outq_t *q, uint8_t **scratch, size_t *written) {
    return s->ops->flush(s, q, scratch, written);
}
static inline size_t sy_stream_held(const sy_stream_t *s) { return s->held; }
static inline void sy_stream_close_notify(sy_stream_t *s) { s->ops->close_notify(s); }

#endif
