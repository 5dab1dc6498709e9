/* sy_conn — see sy_conn.h. */
#define _GNU_SOURCE
#include "io/conn/sy_conn.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_buf.h"
#include "base/sy_clock.h"
#include "io/conn/sy_wire.h"
#include "io/loop/sy_io_struct.h"
#include "io/model/sy_deflate.h"
#include "io/model/sy_ratelimit.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"
#include "proto/sy_ws_frame.h"

#define SY_HANDSHAKE_TURN_US 4000 /* transport handshake work per IO loop turn */

#if UINTPTR_MAX == UINT64_MAX
/* One jemalloc size class per parked connection (sy_conn.h): a field that
 * does not fit must say what it costs. */
_Static_assert(sizeof(sy_conn_t) == 224, "sy_conn_t is 224 bytes on 64-bit systems");
#endif

uint64_t sy_conn_id(const sy_io_t *io, const sy_conn_t *c) { return sy_id_make(sy_io_ctx(io)->index, c->slot, c->gen); }

/* The code for the owner's close event: the one exchanged, or else `code`. */
static uint16_t close_code_or(const sy_conn_t *c, uint16_t code) { return c->close_code ? c->close_code : code; }

/* ---- states ------------------------------------------------------------- */

static int64_t deadline_of(const sy_io_t *io, const sy_conn_t *c, sy_conn_state_t st) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    switch (st) {
    case SY_CONN_PROXY:
    case SY_CONN_HANDSHAKE:
        return sy_io_ctx(io)->now_ms + (int64_t)o->handshake_timeout_s * 1000;
    case SY_CONN_HTTP:
    case SY_CONN_UPGRADING:
        /* One deadline from accept to the owner's answer. */
        return c->deadline_ms ? c->deadline_ms : sy_io_ctx(io)->now_ms + (int64_t)o->handshake_timeout_s * 1000;
    case SY_CONN_CLOSING:
    case SY_CONN_FLUSH_CLOSE:
        return sy_io_ctx(io)->now_ms + (int64_t)o->close_timeout_s * 1000;
    case SY_CONN_DRAINING:
        return sy_io_ctx(io)->now_ms + SY_CONN_DRAIN_MS;
    case SY_CONN_AWAIT_OWNER:
        return sy_io_ctx(io)->now_ms + SY_CONN_AWAIT_OWNER_MS;
    default:
        return 0;
    }
}

uint32_t sy_conn_interest(const sy_conn_t *c) {
    uint32_t ev = 0;
    if (c->state != SY_CONN_UPGRADING && c->state != SY_CONN_AWAIT_OWNER && !c->paused && !c->ctl_wait && !c->rate_wait)
        ev |= SY_POLL_IN;
    if (c->want_out)
        ev |= SY_POLL_OUT;
    return ev;
}

#define TO(st) (1u << (st))
/* The transitions sy_conn_enter makes, by the state left: the one table of
 * the connection's life (sy_conn.h draws it). Entering the state a
 * connection is in renews its deadline and interest (allowed where listed).
 * DEAD is final: entering anything from it changes nothing. */
static const uint16_t transitions[SY_CONN_STATES] = {
    [SY_CONN_HTTP] = TO(SY_CONN_HTTP) | TO(SY_CONN_PROXY) | TO(SY_CONN_HANDSHAKE) | TO(SY_CONN_UPGRADING) |
                     TO(SY_CONN_OPEN) | TO(SY_CONN_FLUSH_CLOSE) | TO(SY_CONN_DEAD),
    [SY_CONN_PROXY] = TO(SY_CONN_HANDSHAKE) | TO(SY_CONN_HTTP) | TO(SY_CONN_DEAD),
    [SY_CONN_HANDSHAKE] = TO(SY_CONN_HTTP) | TO(SY_CONN_FLUSH_CLOSE) | TO(SY_CONN_DEAD),
    [SY_CONN_UPGRADING] = TO(SY_CONN_OPEN) | TO(SY_CONN_FLUSH_CLOSE) | TO(SY_CONN_HTTP) | TO(SY_CONN_DEAD),
    [SY_CONN_OPEN] = TO(SY_CONN_AWAIT_OWNER) | TO(SY_CONN_CLOSING) | TO(SY_CONN_FLUSH_CLOSE) | TO(SY_CONN_DEAD),
    [SY_CONN_AWAIT_OWNER] = TO(SY_CONN_FLUSH_CLOSE) | TO(SY_CONN_DEAD),
    [SY_CONN_CLOSING] = TO(SY_CONN_FLUSH_CLOSE) | TO(SY_CONN_DRAINING) | TO(SY_CONN_DEAD),
    [SY_CONN_FLUSH_CLOSE] = TO(SY_CONN_DRAINING) | TO(SY_CONN_DEAD),
    [SY_CONN_DRAINING] = TO(SY_CONN_DEAD),
    [SY_CONN_DEAD] = 0,
};
#undef TO

bool sy_conn_transition_allowed(sy_conn_state_t from, sy_conn_state_t to) {
    return from < SY_CONN_STATES && to < SY_CONN_STATES && (transitions[from] & (1u << to)) != 0;
}

#ifdef SY_TESTING
static atomic_uint illegal_transitions;

unsigned sy_conn_illegal_transitions(void) { return atomic_load(&illegal_transitions); }

/* A testing build checks every transition against the table: one that is
 * not there is printed and counted (the C tests assert none happened). */
static void check_transition(sy_conn_state_t from, sy_conn_state_t to) {
    if (from != SY_CONN_DEAD && !sy_conn_transition_allowed(from, to)) {
        atomic_fetch_add(&illegal_transitions, 1);
        fprintf(stderr, "sy_conn: illegal transition %s -> %s\n", sy_conn_state_name(from), sy_conn_state_name(to));
    }
}
#else
static inline void check_transition(sy_conn_state_t from, sy_conn_state_t to) {
    (void)from;
    (void)to;
}
#endif

const char *sy_conn_state_name(sy_conn_state_t st) {
    static const char *const names[SY_CONN_STATES] = {
        [SY_CONN_HTTP] = "HTTP",         [SY_CONN_HANDSHAKE] = "HANDSHAKE",
        [SY_CONN_PROXY] = "PROXY",       [SY_CONN_UPGRADING] = "UPGRADING",
        [SY_CONN_OPEN] = "OPEN",         [SY_CONN_AWAIT_OWNER] = "AWAIT_OWNER",
        [SY_CONN_CLOSING] = "CLOSING",   [SY_CONN_FLUSH_CLOSE] = "FLUSH_CLOSE",
        [SY_CONN_DRAINING] = "DRAINING", [SY_CONN_DEAD] = "DEAD",
    };
    return st < SY_CONN_STATES ? names[st] : "?";
}

void sy_conn_enter(sy_io_t *io, sy_conn_t *c, sy_conn_state_t st) {
    sy_conn_state_t from = (sy_conn_state_t)c->state;
    if (from == SY_CONN_DEAD)
        return;
    check_transition(from, st);
    if (sy_conn_open_to_owner(from) && !sy_conn_open_to_owner(st))
        sy_io_set_live(io, c->slot, 0);
    c->state = (uint8_t)st;
    if (st == SY_CONN_DEAD)
        return;
    c->deadline_ms = deadline_of(io, c, st);
    if (st != SY_CONN_OPEN)
        c->rate_wait = false; /* the inbound rate is OPEN's: a close reply is read at once */
    if (st == SY_CONN_OPEN)
        sy_io_set_live(io, c->slot, c->gen);
    sy_io_update_poll(io, c);
}

size_t sy_conn_size(const sy_conn_t *c) { return sizeof(*c) + (c->has_peer ? sizeof(sy_peer_addr_t) : 0); }

sy_err_t sy_conn_new(sy_io_t *io, int fd, sy_conn_t **out) {
    bool has_peer = sy_io_ctx(io)->shared->opts.proxy_protocol != SY_PROXY_OFF;
    sy_conn_t *c = sy_calloc(1, sizeof(*c) + (has_peer ? sizeof(sy_peer_addr_t) : 0));
    if (c == NULL)
        return ENOMEM;
    c->has_peer = has_peer;
    int rc = sy_stream_open(&c->stream, sy_io_ctx(io)->shared->transport, sy_io_ctx(io)->shared->transport_arg, fd);
    if (rc != 0) {
        sy_free(c);
        return rc;
    }
    c->last_rx_ms = sy_io_ctx(io)->now_ms;
    c->poll_ev = SY_POLL_IN; /* as sy_io registers it */
    c->state = SY_CONN_HTTP;
    *out = c;
    return 0;
}

void sy_conn_begin(sy_io_t *io, sy_conn_t *c) {
    c->wire = SY_WIRE_HEAD;
    sy_conn_enter(io, c, c->stream.ops->handshake_first ? SY_CONN_HANDSHAKE : SY_CONN_HTTP);
    if (c->state == SY_CONN_HTTP && c->rlen > 0)
        sy_conn_wire(io, c)->resume(io, c); /* bytes of a false PROXY start (io/wire/sy_peer.h) */
}

void sy_conn_free(sy_conn_t *c) {
    sy_stream_free(&c->stream);
    sy_outq_free(&c->outq);
    sy_free(c->rbuf);
    sy_free(c->mbuf);
    sy_free(c->subs);
    sy_free(c->close_reason);
    sy_free(c);
}

sy_conn_t *sy_conn_compact(sy_conn_t *c, unsigned *moved) {
    if (c->subs != NULL && sy_alloc_should_move(c->subs)) {
        sy_sub_t *subs = sy_alloc_move(c->subs, (size_t)c->subs_cap * sizeof(*subs));
        if (subs != NULL) {
            c->subs = subs;
            (*moved)++;
        }
    }
    if (!sy_alloc_should_move(c))
        return c;
    sy_conn_t *n = sy_alloc_move(c, sy_conn_size(c));
    if (n == NULL)
        return c;
    (*moved)++;
    return n;
}

void sy_conn_set_close_reason(sy_conn_t *c, const void *reason, size_t len) {
    sy_free(c->close_reason);
    c->close_reason = NULL;
    c->close_reason_len = 0;
    if (len > SY_CONN_REASON_MAX)
        len = SY_CONN_REASON_MAX;
    if (len > 0 && (c->close_reason = sy_memdup(reason, len)) != NULL)
        c->close_reason_len = (uint8_t)len;
}

/* ---- the send queue ---------------------------------------------------- */

/* Bytes still to be written: queued, or held by the transport. */
static size_t pending(const sy_conn_t *c) { return sy_outq_bytes(&c->outq) + sy_stream_held(&c->stream); }

/* Queues a frame the caller made (one reference) ahead of the policy, or
 * releases it. False when it could not be queued. */
bool sy_conn_queue_own(sy_conn_t *c, sy_refbuf_t *m) {
    if (m == NULL)
        return false;
    if (sy_outq_push(&c->outq, m) != 0) {
        sy_refbuf_release(m);
        return false;
    }
    return true;
}

/* Queues c's close message (its wire's) or nothing; false when it has one
 * and it could not be queued. */
static bool queue_close(sy_io_t *io, const sy_conn_t *c, sy_conn_t *q, uint16_t code, const char *reason, size_t len) {
    const sy_wire_t *w = sy_conn_wire(io, c);
    return w->close_msg == NULL || sy_conn_queue_own(q, w->close_msg(code, reason, len));
}

/* Queues a close message after discarding what is queued and not started:
 * for a failing or slow connection, the close must not wait behind data. */
static void queue_close_now(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    sy_outq_clear(&c->outq, true);
    (void)queue_close(io, c, c, code, reason, reason ? strlen(reason) : 0); /* best effort */
    sy_io_mark_dirty(io, c);
}

void sy_conn_fail(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    if (c->state == SY_CONN_DEAD || c->state == SY_CONN_FLUSH_CLOSE || c->state == SY_CONN_DRAINING)
        return;
    if (sy_conn_open_to_owner((sy_conn_state_t)c->state)) {
        queue_close_now(io, c, code, reason);
        c->close_code = code;
        sy_conn_set_close_reason(c, reason, reason ? strlen(reason) : 0);
    } else if (c->state != SY_CONN_CLOSING) {
        sy_outq_clear(&c->outq, true); /* our close frame, if any, is already queued */
    }
    sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
    sy_io_mark_dirty(io, c);
}

void sy_conn_fail_after(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    if (c->state != SY_CONN_OPEN) {
        sy_conn_fail(io, c, code, reason);
        return;
    }
    size_t len = reason ? strlen(reason) : 0;
    if (!queue_close(io, c, c, code, reason, len)) {
        sy_conn_fail_oom(io, c);
        return;
    }
    c->close_code = code;
    sy_conn_set_close_reason(c, reason, len);
    sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
    sy_io_mark_dirty(io, c);
}

void sy_conn_fail_oom(sy_io_t *io, sy_conn_t *c) {
    sy_stat_inc(&sy_io_ctx(io)->stats.oom_closes);
    sy_conn_fail(io, c, 1011, "out of memory");
}

void sy_conn_finish(sy_io_t *io, sy_conn_t *c) {
    c->rlen = 0;
    sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
    sy_io_mark_dirty(io, c);
}

/* The most a connection's queue may cost before it is no longer read for
 * its control replies: the data's cap twice over, and room for a close. */
static size_t control_cap(const sy_io_t *io) { return 2 * sy_io_ctx(io)->shared->opts.max_backpressure + 1024; }

/* What the queue costs against control_cap: the bytes still to write plus
 * what its control frames hold (an empty pong is 2 bytes on the wire, a
 * 32-byte allocation and a ring slot here). */
static size_t queue_charge(const sy_conn_t *c) { return pending(c) + sy_outq_own_bytes(&c->outq); }

/* Queues a control frame made for c (taking over m's reference on true).
 * A pong (replace) takes the place of an earlier one not yet started (RFC
 * 6455 5.5.3: answering the most recent ping is enough), so a client that
 * pings without reading costs one pong, not one per ping. When the reply
 * takes the queue's charge past control_cap, or replaces a pong that waits
 * behind a full socket, the peer is not reading its replies: c is not read
 * (ctl_wait; TCP pushes back on the peer) until they are written
 * (resume_control). The reply is queued all the same: never more than two
 * pongs (one started, one not), an idle ping and a close frame. */
static bool queue_control(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool replace) {
    if (c->state != SY_CONN_OPEN && c->state != SY_CONN_CLOSING)
        return false;
    bool replaced = false;
    if (sy_outq_push_own(&c->outq, m, replace, &replaced) != 0) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    if (!c->ctl_wait && (queue_charge(c) > control_cap(io) || (replaced && c->want_out))) {
        c->ctl_wait = true;
        sy_stat_inc(&sy_io_ctx(io)->stats.control_waits);
        sy_io_update_poll(io, c);
    }
    sy_io_mark_dirty(io, c);
    return true;
}

/* Reading again once every control reply is written and the queue is back
 * under the cap. */
static void resume_control(sy_io_t *io, sy_conn_t *c) {
    if (c->ctl_wait && sy_outq_own_bytes(&c->outq) == 0 && queue_charge(c) <= control_cap(io)) {
        c->ctl_wait = false;
        sy_io_update_poll(io, c);
    }
}

bool sy_conn_push(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool control) {
    if (control)
        return queue_control(io, c, m, false);
    if (!sy_conn_open_to_owner((sy_conn_state_t)c->state))
        return false;
    size_t queued = pending(c);
    if (queued > 0 && queued + m->len > sy_io_ctx(io)->shared->opts.max_backpressure) {
        c->hit_limit = true;
        /* A client that cannot see a gap (an event stream's: EventSource
         * has no offsets) is closed, and resumes from its last id. */
        if (sy_io_ctx(io)->shared->opts.slow_consumer == SY_SLOW_CLOSE || sy_conn_wire(io, c)->no_gaps) {
            sy_stat_inc(&sy_io_ctx(io)->stats.slow_closes);
            sy_conn_fail(io, c, 1008, "slow consumer");
        } else {
            sy_stat_inc(&sy_io_ctx(io)->stats.dropped); /* 'drop', and what is not a topic's under 'conflate' */
        }
        return false;
    }
    if (sy_outq_push(&c->outq, m) != 0) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    sy_stat_inc(&sy_io_ctx(io)->stats.messages_out);
    sy_io_mark_dirty(io, c);
    return true;
}

/* The most a connection's queue may cost with a notice in it (sy_conn_notice):
 * past it the client is closed rather than left without one. */
static size_t notice_cap(const sy_io_t *io) { return 4 * sy_io_ctx(io)->shared->opts.max_backpressure + 65536; }

bool sy_conn_notice(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m) {
    if (!sy_conn_open_to_owner((sy_conn_state_t)c->state))
        return false;
    if (queue_charge(c) + m->len > notice_cap(io)) {
        sy_stat_inc(&sy_io_ctx(io)->stats.slow_closes);
        sy_conn_fail(io, c, 1008, "slow consumer");
        return false;
    }
    if (sy_outq_push(&c->outq, m) != 0) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    if (!c->ctl_wait && queue_charge(c) > control_cap(io)) {
        /* Its answers back up: its asks are not read until they are
         * written (as queue_control's replies). */
        c->ctl_wait = true;
        sy_stat_inc(&sy_io_ctx(io)->stats.control_waits);
        sy_io_update_poll(io, c);
    }
    sy_stat_inc(&sy_io_ctx(io)->stats.messages_out);
    sy_io_mark_dirty(io, c);
    return true;
}

bool sy_conn_answer(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m) {
    if (c->state != SY_CONN_HTTP) {
        sy_refbuf_release(m);
        return false;
    }
    if (!sy_conn_queue_own(c, m))
        return false;
    if (!c->ctl_wait && queue_charge(c) > control_cap(io)) {
        c->ctl_wait = true; /* read again once written (resume_control) */
        sy_stat_inc(&sy_io_ctx(io)->stats.control_waits);
        sy_io_update_poll(io, c);
    }
    sy_io_mark_dirty(io, c);
    return true;
}

sy_refbuf_t *sy_conn_frame_for(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m) {
    if (!c->deflate || !sy_conn_open_to_owner((sy_conn_state_t)c->state) ||
        atomic_load_explicit(&m->deflate, memory_order_relaxed) == SY_REFBUF_Z_NONE)
        return m;
    if (c->zwin != 0 && sy_refbuf_payload_len(m) > (size_t)1 << c->zwin)
        return m; /* a match could reach past the client's window */
    sy_refbuf_t *twin =
        sy_deflate_twin(&sy_io_ctx(io)->deflate, &sy_io_ctx(io)->shared->deflate_once, m, sy_io_ctx(io)->now_ms);
    return twin != NULL ? twin : m;
}

void sy_conn_control(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool replace) {
    if (m == NULL) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (!queue_control(io, c, m, replace))
        sy_refbuf_release(m);
}

static void want_writable(sy_io_t *io, sy_conn_t *c, bool want) {
    if (want != c->want_out) {
        c->want_out = want;
        sy_io_update_poll(io, c);
    }
}

static void after_flush(sy_io_t *io, sy_conn_t *c) {
    if (pending(c) > 0)
        return;
    if (c->conflating)
        sy_conn_hooks(io)->drained(io, c);
    if (c->hit_limit && c->state == SY_CONN_OPEN) {
        c->hit_limit = false;
        sy_io_emit(io, sy_conn_id(io, c), SY_EV_DRAIN, 0, 0, NULL, 0);
    }
    if (c->state == SY_CONN_FLUSH_CLOSE) {
        /* Everything is written: our FIN (after the transport's close, e.g.
         * TLS close_notify, best effort), then read until the peer's, so
         * that unread bytes never turn our close into a reset. */
        sy_stream_close_notify(&c->stream);
        if (sy_sock_shutdown_write(c->stream.fd) != 0) {
            sy_conn_destroy(io, c, close_code_or(c, 1006));
            return;
        }
        sy_conn_enter(io, c, SY_CONN_DRAINING);
    }
}

/* One step of the transport's handshake. from_read: a readable socket, which
 * waits for the next loop turn once this turn's handshake budget is spent
 * (the poller is level-triggered, so it comes back); a burst of reconnects
 * must not starve delivery to the connections already open. */
static void handshake_step(sy_io_t *io, sy_conn_t *c, bool from_read) {
    if (from_read && sy_io_ctx(io)->handshake_turn_us >= SY_HANDSHAKE_TURN_US) {
        sy_stat_inc(&sy_io_ctx(io)->stats.tls_deferred);
        return;
    }
    int64_t t0 = sy_clock_us();
    sy_stream_rc_t rc = sy_stream_handshake(&c->stream);
    sy_io_ctx(io)->handshake_turn_us += sy_clock_us() - t0;
    switch (rc) {
    case SY_STREAM_OK:
        sy_stat_inc(&sy_io_ctx(io)->stats.tls_handshakes);
        c->want_out = false;
        sy_conn_enter(io, c, SY_CONN_HTTP); /* the request, if sent, is still in the socket */
        return;
    case SY_STREAM_WANT_READ:
        want_writable(io, c, false);
        return;
    case SY_STREAM_WANT_WRITE:
        want_writable(io, c, true);
        return;
    default: /* not TLS, an unsupported version, a bad record, closed midway */
        sy_stat_inc(&sy_io_ctx(io)->stats.tls_failures);
        sy_conn_destroy(io, c, 1006);
        return;
    }
}

/* What a flush's result means for the connection: the bytes counted, the
 * socket failed (closed now) or its writability asked for while bytes wait,
 * and the state's next step once everything is written. */
static void flushed(sy_io_t *io, sy_conn_t *c, sy_stream_rc_t rc, size_t written) {
    sy_stat_add(&sy_io_ctx(io)->stats.bytes_out, written);
    if (rc != SY_STREAM_OK && rc != SY_STREAM_WANT_WRITE && rc != SY_STREAM_WANT_READ) {
        sy_conn_destroy(io, c, close_code_or(c, 1006));
        return;
    }
    want_writable(io, c, pending(c) > 0);
    resume_control(io, c);
    after_flush(io, c);
}

void sy_conn_flush(sy_io_t *io, sy_conn_t *c) {
    if (c->state == SY_CONN_DEAD)
        return;
    if (c->state == SY_CONN_HANDSHAKE) {
        handshake_step(io, c, false);
        return;
    }
    size_t written = 0;
    sy_stream_rc_t rc = sy_stream_flush(&c->stream, &c->outq, &sy_io_ctx(io)->stream_scratch, &written);
    flushed(io, c, rc, written);
}

bool sy_conn_batchable(const sy_conn_t *c) {
    return sy_stream_is_plain(&c->stream) && !c->broken && c->state != SY_CONN_HANDSHAKE && c->state != SY_CONN_DEAD &&
           !sy_outq_empty(&c->outq);
}

void sy_conn_wrote(sy_io_t *io, sy_conn_t *c, long res, size_t total) {
    size_t written = 0;
    sy_stream_rc_t rc = sy_stream_plain_wrote(&c->outq, res, total, &written);
    if (rc == SY_STREAM_OK && !sy_outq_empty(&c->outq)) {
        /* More than one write's buffers, or EINTR: the next batch. */
        sy_stat_add(&sy_io_ctx(io)->stats.bytes_out, written);
        sy_io_mark_dirty(io, c);
        return;
    }
    flushed(io, c, rc, written);
}

/* ---- closing ------------------------------------------------------------ */

void sy_conn_destroy(sy_io_t *io, sy_conn_t *c, uint16_t code) {
    if (c->state == SY_CONN_DEAD)
        return;
    sy_conn_enter(io, c, SY_CONN_DEAD);
    sy_io_unwatch(io, c); /* before the stream closes the socket */
    sy_stream_shut(&c->stream);
    sy_conn_hooks(io)->closing(io, c); /* its subscriptions, asks and address count */
    sy_outq_clear(&c->outq, false);
    if (c->opened) {
        sy_io_emit(io, sy_conn_id(io, c), SY_EV_CLOSE, 0, close_code_or(c, code), c->close_reason, c->close_reason_len);
        sy_stat_inc(&sy_io_ctx(io)->stats.closed);
        sy_stat_dec(&sy_io_ctx(io)->stats.connections);
        if (c->deflate)
            sy_stat_dec(&sy_io_ctx(io)->stats.deflate_connections);
        const sy_wire_t *w = sy_conn_wire(io, c);
        if (w->gone != NULL)
            w->gone(io, c);
    }
    sy_io_forget(io, c);
}

bool sy_conn_end(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason, size_t len) {
    if (c->state != SY_CONN_OPEN)
        return false;
    if (!queue_close(io, c, c, code, reason, len))
        return false;
    c->close_code = code;
    /* The reason we told the client is the owner's close event's too (an
     * echo carries none). */
    sy_conn_set_close_reason(c, reason, len);
    /* A wire with a close handshake waits for the peer's reply; another
     * (an event stream's "sy.close" event) ends once it is written. */
    sy_conn_enter(io, c, sy_conn_wire(io, c)->close_handshake ? SY_CONN_CLOSING : SY_CONN_FLUSH_CLOSE);
    sy_io_mark_dirty(io, c);
    return true;
}

void sy_conn_message(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n) {
    c->msg_seq = sy_io_current_seq(io);
    sy_stat_inc(&sy_io_ctx(io)->stats.messages_in);
    sy_stat_add(&sy_io_ctx(io)->stats.bytes_in, n);
    const sy_msgproto_t *mp = sy_conn_proto(io, c);
    if (mp->message != NULL)
        mp->message(io, c, opcode, p, n); /* one indirect call per message */
    else
        sy_io_emit(io, sy_conn_id(io, c), SY_EV_MESSAGE, opcode == SY_WS_OP_BINARY ? 1 : 0, 0, p, n);
}

bool sy_conn_owner_behind(const sy_io_t *io, const sy_conn_t *c) {
    return c->msg_seq != 0 && !sy_io_owner_done(io, c->msg_seq);
}

bool sy_conn_await_owner(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason, size_t reason_len, bool echo) {
    if (c->state != SY_CONN_OPEN || !sy_conn_owner_behind(io, c))
        return false;
    c->close_code = code;
    c->close_echo = echo;
    sy_conn_set_close_reason(c, reason, reason_len);
    if (!sy_io_await_owner(io, sy_conn_id(io, c), c->msg_seq))
        return false;
    sy_conn_enter(io, c, SY_CONN_AWAIT_OWNER);
    return true;
}

void sy_conn_owner_caught_up(sy_io_t *io, sy_conn_t *c) {
    if (c->state != SY_CONN_AWAIT_OWNER)
        return;
    /* The peer's code back when it closed (1005, none sent: an empty body,
     * sy_ws_close_payload); else ours, with its reason. Best effort, as
     * every close message. */
    if (c->close_echo)
        (void)queue_close(io, c, c, c->close_code, NULL, 0);
    else
        (void)queue_close(io, c, c, c->close_code, c->close_reason, c->close_reason_len);
    sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
    sy_io_mark_dirty(io, c);
}

void sy_conn_protocol_error(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    sy_stat_inc(&sy_io_ctx(io)->stats.protocol_errors);
    if (!sy_conn_await_owner(io, c, code, reason, strlen(reason), false))
        sy_conn_fail(io, c, code, reason);
}

void sy_conn_policy_close(sy_io_t *io, sy_conn_t *c, atomic_uint_fast64_t *counter, const char *reason) {
    sy_stat_inc(counter);
    if (!sy_conn_await_owner(io, c, 1008, reason, strlen(reason), false))
        sy_conn_fail(io, c, 1008, reason);
}

void sy_conn_opened(sy_io_t *io, sy_conn_t *c, const char *protocol, size_t protocol_len) {
    sy_outq_pin(&c->outq);
    c->opened = true;
    c->last_rx_ms = sy_io_ctx(io)->now_ms;
    c->ctl_tat_us = (uint32_t)(sy_io_ctx(io)->now_ms * 1000);            /* a full burst of control frames */
    c->in_msg_tat = c->in_byte_tat = sy_rate_now(sy_io_ctx(io)->now_ms); /* and of messages */
    sy_conn_enter(io, c, SY_CONN_OPEN);
    sy_stat_inc(&sy_io_ctx(io)->stats.opened);
    sy_stat_inc(&sy_io_ctx(io)->stats.connections);
    if (c->deflate)
        sy_stat_inc(&sy_io_ctx(io)->stats.deflate_connections);
    const sy_wire_t *w = sy_conn_wire(io, c);
    sy_io_emit(io, sy_conn_id(io, c), SY_EV_OPEN, (uint8_t)((c->deflate ? SY_EV_OPEN_DEFLATE : 0) | w->open_flags), 0,
               protocol, protocol_len);
    sy_io_mark_dirty(io, c);
    if (w->opened != NULL)
        w->opened(io, c); /* the bytes that followed the request */
}

/* ---- reading ------------------------------------------------------------------ */

void sy_conn_on_readable(sy_io_t *io, sy_conn_t *c) {
    if (c->state == SY_CONN_DEAD || c->state == SY_CONN_UPGRADING)
        return;
    if (c->state == SY_CONN_HANDSHAKE) {
        handshake_step(io, c, true);
        return;
    }
    const sy_wire_t *w = sy_conn_wire(io, c);
    if (w->readable != NULL) {
        w->readable(io, c); /* a wire that reads itself (the PROXY header is peeked) */
        return;
    }
    if (c->ctl_wait || c->rate_wait)
        return; /* until its control replies are written (queue_control), or its rate has room */
    if (sy_io_ctx(io)->reads_paused && c->state == SY_CONN_OPEN) {
        sy_io_pause(io, c);
        return;
    }
    size_t n = 0;
    sy_stream_rc_t rc = sy_stream_read(&c->stream, sy_io_ctx(io)->rx, SY_IO_RX_SIZE, &n);
    if (rc == SY_STREAM_WANT_READ || rc == SY_STREAM_WANT_WRITE)
        return;
    if (n > 0) {
        c->last_rx_ms = sy_io_ctx(io)->now_ms;
        c->ping_sent = false;
        /* FLUSH_CLOSE, DRAINING: read and ignored until EOF. */
        if (c->state == SY_CONN_HTTP || c->state == SY_CONN_OPEN || c->state == SY_CONN_CLOSING)
            w->data(io, c, sy_io_ctx(io)->rx, n); /* one indirect call per read */
    }
    if (rc == SY_STREAM_OK || c->state == SY_CONN_DEAD)
        return;
    /* The stream ended or failed (after the bytes above). */
    if (rc == SY_STREAM_BAD)
        sy_stat_inc(&sy_io_ctx(io)->stats.protocol_errors);
    /* The client left without a close handshake (a stream's client has
     * none: it closes its socket), or the socket failed: 1006. */
    sy_conn_destroy(io, c, close_code_or(c, 1006));
}

void sy_conn_feed(sy_io_t *io, sy_conn_t *c, const uint8_t *p, size_t n) {
    if (c->state != SY_CONN_HTTP || n == 0)
        return;
    if (sy_buf_append(&c->rbuf, &c->rlen, &c->rcap, p, n, 256) != 0) {
        sy_conn_destroy(io, c, 1006);
        return;
    }
    sy_conn_wire(io, c)->resume(io, c);
}

void sy_conn_sweep(sy_io_t *io, sy_conn_t *c) {
    int64_t now = sy_io_ctx(io)->now_ms;
    if (sy_conn_before_open((sy_conn_state_t)c->state)) {
        if (now >= c->deadline_ms) {
            sy_stat_inc(&sy_io_ctx(io)->stats.timeouts);
            if (c->state == SY_CONN_PROXY)
                sy_stat_inc(&sy_io_ctx(io)->stats.proxy_rejects); /* a header cut short, or none */
            sy_conn_destroy(io, c, 1006);
        }
        return;
    }
    if (c->state == SY_CONN_AWAIT_OWNER) {
        if (now >= c->deadline_ms)
            sy_conn_owner_caught_up(io, c);
        return;
    }
    if (c->state != SY_CONN_OPEN && c->deadline_ms > 0 && now >= c->deadline_ms) {
        sy_conn_destroy(io, c, close_code_or(c, 1006));
        return;
    }
    /* The wire's own: idle pings, heartbeats, its idle buffers. */
    const sy_wire_t *w = sy_conn_wire(io, c);
    if (w->idle != NULL && !w->idle(io, c, now))
        return;
    /* Memory follows the load: an empty receive buffer (the request head's,
     * or a partial frame's that completed) and an empty send queue give
     * their memory back; a parked connection keeps only itself. */
    if (c->rlen == 0 && c->rbuf != NULL) {
        sy_free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
    }
    sy_outq_shrink(&c->outq);
    /* The control frames' rate: a time in the past is now (see
     * sy_ws's control_within_rate). */
    uint32_t now_us = (uint32_t)(now * 1000);
    if ((int32_t)(c->ctl_tat_us - now_us) < 0)
        c->ctl_tat_us = now_us;
    /* So do the inbound buckets. */
    uint32_t ticks = sy_rate_now(now);
    c->in_msg_tat = sy_rate_current(c->in_msg_tat, ticks);
    c->in_byte_tat = sy_rate_current(c->in_byte_tat, ticks);
}

void sy_conn_rate_resume(sy_io_t *io, sy_conn_t *c) {
    if (!c->rate_wait || c->state != SY_CONN_OPEN)
        return;
    c->rate_wait = false;
    sy_io_update_poll(io, c);
    const sy_wire_t *w = sy_conn_wire(io, c);
    if (c->rlen > 0 && w->resume != NULL)
        w->resume(io, c); /* what waited: it may wait again */
}

/* ---- who points at a connection (the lists, the poller, the slot table) ---- */

sy_conn_t *sy_io_conn_at(const sy_io_t *io, uint32_t slot) { return sy_slots_at(&io->slots, slot); }

const sy_conn_t *sy_io_any_conn(const sy_io_t *io) {
    for (uint32_t i = 0; i < io->slots.n; i++) {
        if (io->slots.conns[i] != NULL)
            return io->slots.conns[i];
    }
    return NULL;
}

/* The live connection named by (slot, generation), or NULL. */
sy_conn_t *sy_io_conn_live(sy_io_t *io, uint32_t slot, uint32_t gen) {
    sy_conn_t *c = sy_slots_at(&io->slots, slot);
    return c != NULL && c->gen == gen && c->state != SY_CONN_DEAD ? c : NULL;
}

static void unpause(sy_io_t *io, sy_conn_t *c) {
    if (!c->paused)
        return;
    /* Rare (a paused connection that times out or is terminated), so a walk
     * is fine. */
    for (sy_conn_t **p = &io->paused; *p != NULL; p = &(*p)->next_paused) {
        if (*p == c) {
            *p = c->next_paused;
            break;
        }
    }
    c->paused = false;
    c->next_paused = NULL;
}

void sy_io_forget(sy_io_t *io, sy_conn_t *c) {
    atomic_fetch_sub_explicit(&io->ctx.shared->connections, 1, memory_order_relaxed);
    sy_slots_release(&io->slots, c->slot);
    unpause(io, c);
    c->next_dead = io->dead;
    io->dead = c;
}

void sy_io_pause(sy_io_t *io, sy_conn_t *c) {
    if (c->paused)
        return;
    c->paused = true;
    c->next_paused = io->paused;
    io->paused = c;
    sy_io_update_poll(io, c);
}

unsigned sy_io_compact_slot(sy_io_t *io, uint32_t slot, bool *skipped) {
    sy_conn_t *c = sy_slots_at(&io->slots, slot);
    /* On a list (dirty, dead, paused) a connection is pointed at from
     * elsewhere too: those stay where they are this time. */
    *skipped = c == NULL || c->state == SY_CONN_DEAD || c->dirty || c->paused;
    if (*skipped)
        return 0;
    unsigned moved = 0;
    sy_slots_put(&io->slots, slot, sy_conn_compact(c, &moved)); /* the one cell that names it */
    return moved;
}

void sy_io_mark_dirty(sy_io_t *io, sy_conn_t *c) {
    if (!c->dirty && c->state != SY_CONN_DEAD) {
        c->dirty = true;
        c->next_dirty = io->dirty;
        io->dirty = c;
    }
}

void sy_io_update_poll(sy_io_t *io, sy_conn_t *c) {
    if (c->state == SY_CONN_DEAD || c->broken)
        return;
    uint32_t ev = sy_conn_interest(c);
    if (ev == c->poll_ev)
        return;
    if (sy_poll_mod(io->poll, c->stream.fd, ev, sy_io_conn_tag(c->slot, c->gen)) != 0) {
        c->broken = true; /* destroyed by sy_io_flush_dirty, after any walk in progress */
        sy_io_mark_dirty(io, c);
        return;
    }
    c->poll_ev = (uint8_t)ev;
}

void sy_io_unwatch(sy_io_t *io, sy_conn_t *c) {
    /* A failure leaves nothing to undo: EBADF or ENOENT, it was not there. */
    if (c->stream.fd >= 0)
        (void)sy_poll_del(io->poll, c->stream.fd);
    c->poll_ev = 0;
}

void sy_io_free_dead(sy_io_t *io) {
    while (io->dead != NULL) {
        sy_conn_t *c = io->dead;
        io->dead = c->next_dead;
        sy_conn_free(c);
    }
}
