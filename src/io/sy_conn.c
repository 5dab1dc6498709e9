/* sy_conn — see sy_conn.h. */
#define _GNU_SOURCE
#include "io/sy_conn.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_buf.h"
#include "base/sy_clock.h"
#include "io/sy_admit.h"
#include "io/sy_ask.h"
#include "io/sy_conflate.h"
#include "io/sy_deflate.h"
#include "io/sy_peer.h"
#include "io/sy_ratelimit.h"
#include "io/sy_resume.h"
#include "io/sy_sse_out.h"
#include "io/sy_upgrade.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"
#include "proto/sy_sse.h"
#include "proto/sy_utf8.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"

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
    [SY_CONN_UPGRADING] = TO(SY_CONN_OPEN) | TO(SY_CONN_FLUSH_CLOSE) | TO(SY_CONN_DEAD),
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

void sy_conn_start(sy_io_t *io, sy_conn_t *c) {
    if (c->has_peer)
        sy_peer_of_fd(c->stream.fd, &c->peer[0]);
    if (c->listener && c->has_peer) {
        sy_conn_enter(io, c, SY_CONN_PROXY);
        return;
    }
    sy_peer_final(io, c);
}

void sy_conn_begin(sy_io_t *io, sy_conn_t *c) {
    sy_conn_enter(io, c, c->stream.ops->handshake_first ? SY_CONN_HANDSHAKE : SY_CONN_HTTP);
    if (c->state == SY_CONN_HTTP && c->rlen > 0)
        sy_upgrade_request(io, c); /* bytes of a false PROXY start (sy_peer.h) */
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

static void set_close_reason(sy_conn_t *c, const void *reason, size_t len) {
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
static bool queue_own(sy_conn_t *c, sy_refbuf_t *m) {
    if (m == NULL)
        return false;
    if (sy_outq_push(&c->outq, m) != 0) {
        sy_refbuf_release(m);
        return false;
    }
    return true;
}

/* Queues a close frame after discarding what is queued and not started:
 * for a failing or slow connection, the close must not wait behind data. */
static void queue_close_now(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    sy_outq_clear(&c->outq, true);
    size_t len = reason ? strlen(reason) : 0;
    (void)queue_own(c, c->sse ? sy_sse_out_close(code, reason, len)
                              : sy_ws_msg_close(code, reason, len)); /* best effort */
    sy_io_mark_dirty(io, c);
}

void sy_conn_fail(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    if (c->state == SY_CONN_DEAD || c->state == SY_CONN_FLUSH_CLOSE || c->state == SY_CONN_DRAINING)
        return;
    if (sy_conn_open_to_owner((sy_conn_state_t)c->state)) {
        queue_close_now(io, c, code, reason);
        c->close_code = code;
        set_close_reason(c, reason, reason ? strlen(reason) : 0);
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
    if (!queue_own(c, c->sse ? sy_sse_out_close(code, reason, len) : sy_ws_msg_close(code, reason, len))) {
        sy_conn_fail_oom(io, c);
        return;
    }
    c->close_code = code;
    set_close_reason(c, reason, len);
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
        /* An event stream's client cannot see a gap (EventSource has no
         * offsets): it is closed, and resumes from its last id. */
        if (sy_io_ctx(io)->shared->opts.slow_consumer == SY_SLOW_CLOSE || c->sse) {
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

uint32_t sy_conn_sse_heartbeat_ms(const sy_io_opts_t *o) {
    return o->idle_timeout_s > 0 ? o->idle_timeout_s * 500u : SY_CONN_SSE_HEARTBEAT_MS;
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

/* Queues a control frame the caller made (one reference) or releases it;
 * replace: a pong (queue_control). */
static void push_control(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool replace) {
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
        sy_conflate_reset(c);
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

/* ---- subscriptions ----------------------------------------------------- */

/* One subscription of t more or less on the node; at a 0 <-> 1 edge the
 * owner hears of it when it asked (SY_EV_TOPIC). */
static void count_sub(sy_io_t *io, sy_topic_t *t, bool add) {
    if (sy_topic_count_sub(t, add) && atomic_load_explicit(&sy_io_ctx(io)->shared->topic_events, memory_order_relaxed))
        sy_io_emit(io, 0, SY_EV_TOPIC, add ? SY_EV_TOPIC_ON : 0, 0, t->name, t->name_len);
}

bool sy_conn_subscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t) {
    bool ok = c->state == SY_CONN_OPEN || c->state == SY_CONN_UPGRADING;
    for (uint32_t i = 0; ok && i < c->nsubs; i++)
        if (c->subs[i].topic == t)
            ok = false;
    if (ok && c->nsubs == c->subs_cap) {
        uint32_t cap = c->subs_cap ? c->subs_cap * 2 : 2;
        sy_sub_t *subs = sy_realloc(c->subs, (size_t)cap * sizeof(*subs));
        if (subs == NULL || (c->sse && !sy_sse_out_reserve(c, cap))) {
            ok = false;
        }
        if (subs != NULL) {
            c->subs = subs;
            c->subs_cap = ok ? cap : c->subs_cap;
        }
    }
    uint32_t index;
    if (!ok || sy_topic_add_sub(t, sy_io_ctx(io)->index, c->slot, &index) != 0) {
        sy_topic_drop_interest(&sy_io_ctx(io)->shared->topics, t, sy_io_ctx(io)->index);
        return false;
    }
    c->subs[c->nsubs].topic = t;
    c->subs[c->nsubs].index = index;
    c->subs[c->nsubs].cq = 0;
    if (c->sse)
        c->sse_pos[c->nsubs] = (sy_sse_pos_t){.known = false};
    c->nsubs++;
    count_sub(io, t, true);
    return true;
}

/* Removes subscription i (notify: tell a symphony.v1 client). */
static void remove_sub(sy_io_t *io, sy_conn_t *c, uint32_t i, bool notify) {
    sy_topic_t *t = c->subs[i].topic;
    sy_resume_unsubscribed(io, c, t, notify);
    uint32_t moved_slot;
    if (sy_topic_remove_sub(t, sy_io_ctx(io)->index, c->subs[i].index, &moved_slot)) {
        /* The subscriber swapped into this index learns its new place. */
        sy_conn_t *moved = sy_io_conn_at(io, moved_slot);
        for (uint32_t j = 0; j < moved->nsubs; j++) {
            if (moved->subs[j].topic == t) {
                moved->subs[j].index = c->subs[i].index;
                break;
            }
        }
    }
    if (c->sse)
        sy_sse_out_removed(c, i);
    c->subs[i] = c->subs[--c->nsubs];
    count_sub(io, t, false);
    sy_topic_drop_interest(&sy_io_ctx(io)->shared->topics, t, sy_io_ctx(io)->index);
}

void sy_conn_unsubscribe_all(sy_io_t *io, sy_conn_t *c) {
    while (c->nsubs > 0)
        remove_sub(io, c, c->nsubs - 1, false);
}

bool sy_conn_unsubscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t) {
    for (uint32_t i = 0; i < c->nsubs; i++) {
        if (c->subs[i].topic == t) {
            remove_sub(io, c, i, true);
            return true;
        }
    }
    return false;
}

/* ---- closing ------------------------------------------------------------ */

void sy_conn_destroy(sy_io_t *io, sy_conn_t *c, uint16_t code) {
    if (c->state == SY_CONN_DEAD)
        return;
    sy_conn_enter(io, c, SY_CONN_DEAD);
    sy_io_unwatch(io, c); /* before the stream closes the socket */
    sy_stream_shut(&c->stream);
    sy_conn_unsubscribe_all(io, c);
    if (c->v2)
        sy_ask_forget(io, c);
    sy_outq_clear(&c->outq, false);
    sy_admit_release(io, c);
    if (c->opened) {
        sy_io_emit(io, sy_conn_id(io, c), SY_EV_CLOSE, 0, close_code_or(c, code), c->close_reason, c->close_reason_len);
        sy_stat_inc(&sy_io_ctx(io)->stats.closed);
        sy_stat_dec(&sy_io_ctx(io)->stats.connections);
        if (c->deflate)
            sy_stat_dec(&sy_io_ctx(io)->stats.deflate_connections);
        if (c->sse)
            sy_stat_dec(&sy_io_ctx(io)->stats.sse_connections);
    }
    sy_io_forget(io, c);
}

bool sy_conn_end(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *close_frame, uint16_t code) {
    if (c->state != SY_CONN_OPEN)
        return false;
    if (c->sse) {
        /* No close handshake: the "sy.close" event, then the end of the
         * response. The frame's payload is the code then the reason. */
        size_t n = sy_refbuf_payload_len(close_frame);
        sy_refbuf_t *e =
            sy_sse_out_close(code, n > 2 ? (const char *)sy_refbuf_payload(close_frame) + 2 : NULL, n > 2 ? n - 2 : 0);
        if (e == NULL || sy_outq_push(&c->outq, e) != 0) {
            sy_refbuf_release(e);
            return false;
        }
        if (n > 2)
            set_close_reason(c, sy_refbuf_payload(close_frame) + 2, n - 2);
        sy_refbuf_release(close_frame);
        c->close_code = code;
        sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
        sy_io_mark_dirty(io, c);
        return true;
    }
    size_t n = sy_refbuf_payload_len(close_frame);
    if (sy_outq_push(&c->outq, close_frame) != 0)
        return false;
    c->close_code = code;
    /* The reason we told the client is the owner's close event's too (its
     * echo carries none). */
    if (n > 2)
        set_close_reason(c, sy_refbuf_payload(close_frame) + 2, n - 2);
    sy_conn_enter(io, c, SY_CONN_CLOSING);
    sy_io_mark_dirty(io, c);
    return true;
}

/* ---- frames in ------------------------------------------------------------ */

static void deliver(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n);
static void policy_close(sy_io_t *io, sy_conn_t *c, atomic_uint_fast64_t *counter, const char *reason);

bool sy_conn_deliver(sy_io_t *io, sy_conn_t *c, bool binary, const uint8_t *p, size_t n) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    if (sh->rate_on) {
        /* The per-connection rates hold for POSTed messages too. A POST was
         * answered already and cannot be held back as a socket's bytes
         * are: over the rate, the stream is closed (its client sees it). */
        uint32_t now = sy_rate_now(sy_io_ctx(io)->now_ms);
        if (!sy_rate_fits(&sh->in_msgs, c->in_msg_tat, now, 1, 0) ||
            !sy_rate_fits(&sh->in_bytes, c->in_byte_tat, now, n, 0)) {
            policy_close(io, c, &sy_io_ctx(io)->stats.sse_rate_closes, "too many messages");
            return false;
        }
        c->in_msg_tat = sy_rate_charge(&sh->in_msgs, c->in_msg_tat, now, 1);
        c->in_byte_tat = sy_rate_charge(&sh->in_bytes, c->in_byte_tat, now, n);
    }
    deliver(io, c, binary ? SY_WS_OP_BINARY : SY_WS_OP_TEXT, p, n);
    return true;
}

static void deliver(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n) {
    c->msg_seq = sy_io_current_seq(io);
    sy_stat_inc(&sy_io_ctx(io)->stats.messages_in);
    sy_stat_add(&sy_io_ctx(io)->stats.bytes_in, n);
    if (c->v2)
        sy_ask_message(io, c, opcode, p, n);
    else
        sy_io_emit(io, sy_conn_id(io, c), SY_EV_MESSAGE, opcode == SY_WS_OP_BINARY ? 1 : 0, 0, p, n);
}

bool sy_conn_owner_behind(const sy_io_t *io, const sy_conn_t *c) {
    return c->msg_seq != 0 && !sy_io_owner_done(io, c->msg_seq);
}

/* The peer broke the protocol or sent its close frame while the owner has
 * messages of this connection still to handle: wait for it (AWAIT_OWNER),
 * so that its replies go before our close frame. False: close now. */
static bool await_owner(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason, size_t reason_len, bool echo) {
    if (c->state != SY_CONN_OPEN || !sy_conn_owner_behind(io, c))
        return false;
    c->close_code = code;
    c->close_echo = echo;
    set_close_reason(c, reason, reason_len);
    if (!sy_io_await_owner(io, c))
        return false;
    sy_conn_enter(io, c, SY_CONN_AWAIT_OWNER);
    return true;
}

void sy_conn_owner_caught_up(sy_io_t *io, sy_conn_t *c) {
    if (c->state != SY_CONN_AWAIT_OWNER)
        return;
    sy_refbuf_t *m;
    if (c->sse)
        m = sy_sse_out_close(c->close_code, c->close_reason, c->close_reason_len);
    else if (!c->close_echo)
        m = sy_ws_msg_close(c->close_code, c->close_reason, c->close_reason_len);
    else /* the peer's code back (1005, none sent: an empty body, sy_ws_close_payload) */
        m = sy_ws_msg_close(c->close_code, NULL, 0);
    (void)queue_own(c, m); /* best effort, as every close frame */
    sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
    sy_io_mark_dirty(io, c);
}

static void protocol_error(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    sy_stat_inc(&sy_io_ctx(io)->stats.protocol_errors);
    if (!await_owner(io, c, code, reason, strlen(reason), false))
        sy_conn_fail(io, c, code, reason);
}

/* A limit of the server's policy was passed: close 1008 (after the owner's
 * replies, as a protocol error), counted in `counter`. */
static void policy_close(sy_io_t *io, sy_conn_t *c, atomic_uint_fast64_t *counter, const char *reason) {
    sy_stat_inc(counter);
    if (!await_owner(io, c, 1008, reason, strlen(reason), false))
        sy_conn_fail(io, c, 1008, reason);
}

/* One more control frame from the peer within controlRate (a token bucket
 * as GCRA: one timestamp per connection; a burst of controlRate frames,
 * then controlRate per second). False when over it. */
static bool control_within_rate(sy_io_t *io, sy_conn_t *c) {
    uint32_t rate = sy_io_ctx(io)->shared->opts.control_rate;
    if (rate == 0)
        return true;
    /* Microseconds on 32 bits, compared by difference: the sweep brings a
     * past one up to now at least once a second (sy_conn_sweep), so it
     * never lags by more than the 35 minutes a wrap takes. */
    uint32_t now = (uint32_t)(sy_io_ctx(io)->now_ms * 1000), interval = 1000000 / rate;
    uint32_t tat = (int32_t)(c->ctl_tat_us - now) > 0 ? c->ctl_tat_us : now;
    if ((uint64_t)(tat - now) > (uint64_t)interval * (rate - 1))
        return false;
    c->ctl_tat_us = tat + interval;
    return true;
}

/* The frame f, whole, within maxFragments and controlRate; else the
 * connection is closed (1008) and false returned. A message in endless
 * (empty) fragments, or pings at line rate, make the server work without
 * sending data: each is bounded like a message's bytes. */
static bool within_limits(sy_io_t *io, sy_conn_t *c, const sy_ws_frame_t *f) {
    if (!SY_WS_OP_IS_CONTROL(f->opcode)) {
        uint32_t max = sy_io_ctx(io)->shared->opts.max_fragments;
        c->msg_frags = f->opcode == SY_WS_OP_CONTINUATION ? c->msg_frags + 1 : 1;
        if (max > 0 && c->msg_frags > max) {
            policy_close(io, c, &sy_io_ctx(io)->stats.fragment_closes, "too many fragments");
            return false;
        }
    } else if (f->opcode != SY_WS_OP_CLOSE && !control_within_rate(io, c)) {
        policy_close(io, c, &sy_io_ctx(io)->stats.control_rate_closes, "too many control frames");
        return false;
    }
    return true;
}

/* Both inbound buckets let frame f in (`extra`: ticks past the burst): its
 * payload's bytes, and a message when it ends one. */
static bool rate_fits(const sy_io_t *io, const sy_conn_t *c, const sy_ws_frame_t *f, uint32_t now, uint32_t extra) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    return sy_rate_fits(&sh->in_msgs, c->in_msg_tat, now, f->fin ? 1 : 0, extra) &&
           sy_rate_fits(&sh->in_bytes, c->in_byte_tat, now, f->payload_len, extra);
}

/* Not read until frame f fits its buckets: f and what follows stay in rbuf,
 * TCP pushes back on the peer, and sy_io calls sy_conn_rate_resume when the
 * wait is over (f is checked again then). The thread's list out of memory:
 * closed 1011. */
static void rate_pause(sy_io_t *io, sy_conn_t *c, const sy_ws_frame_t *f, uint32_t now) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    uint32_t a = sy_rate_wait_ms(&sh->in_msgs, c->in_msg_tat, now, f->fin ? 1 : 0);
    uint32_t b = sy_rate_wait_ms(&sh->in_bytes, c->in_byte_tat, now, f->payload_len);
    if (sy_io_rate_wait(io, c, sy_io_ctx(io)->now_ms + (a > b ? a : b)) != 0) {
        sy_conn_fail_oom(io, c);
        return;
    }
    c->rate_wait = true;
    sy_stat_inc(&sy_io_ctx(io)->stats.rate_waits);
    sy_io_update_poll(io, c);
}

/* The inbound rate (maxMessagesPerSecond, maxBytesPerSecond), checked before
 * a whole data frame is handled: true to go on, the frame charged (its
 * payload's bytes; a message when it is the last frame of one). When it
 * does not fit: with rateLimit 'pause', c waits (rate_pause) and false; with
 * 'close', a frame that does not fit even the grace past the burst closes c
 * (1008, after the owner's replies) and false. */
static bool within_rate(sy_io_t *io, sy_conn_t *c, const sy_ws_frame_t *f) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    if (!sh->rate_on || c->state != SY_CONN_OPEN || SY_WS_OP_IS_CONTROL(f->opcode))
        return true; /* control frames are controlRate's */
    uint32_t now = sy_rate_now(sy_io_ctx(io)->now_ms);
    if (rate_fits(io, c, f, now, sh->opts.rate_close ? sh->rate_grace : 0)) {
        if (f->fin)
            c->in_msg_tat = sy_rate_charge(&sh->in_msgs, c->in_msg_tat, now, 1);
        c->in_byte_tat = sy_rate_charge(&sh->in_bytes, c->in_byte_tat, now, f->payload_len);
        return true;
    }
    if (sh->opts.rate_close)
        policy_close(io, c, &sy_io_ctx(io)->stats.rate_closes, "rate limit exceeded");
    else
        rate_pause(io, c, f, now);
    return false;
}

/* A compressed message, whole, at p[0..n) with SY_INFLATE_TAIL writable
 * bytes after it: inflated within maxPayload, checked, delivered. */
static void deliver_compressed(sy_io_t *io, sy_conn_t *c, unsigned opcode, uint8_t *p, size_t n) {
    const uint8_t *msg;
    size_t len;
    int rc = sy_inflate(&sy_io_ctx(io)->deflate, p, n, sy_io_ctx(io)->shared->opts.max_payload, sy_io_ctx(io)->now_ms,
                        &msg, &len);
    if (rc == EMSGSIZE) {
        protocol_error(io, c, 1009, "message too big");
    } else if (rc == EBADMSG) {
        protocol_error(io, c, 1007, "invalid compressed data");
    } else if (rc != 0) {
        sy_conn_fail_oom(io, c);
    } else if (opcode == SY_WS_OP_TEXT && !sy_utf8_is_valid(msg, len)) {
        protocol_error(io, c, 1007, "invalid UTF-8 in text message");
    } else {
        deliver(io, c, opcode, msg, len);
    }
    sy_deflate_done(&sy_io_ctx(io)->deflate);
}

static void on_close_frame(sy_io_t *io, sy_conn_t *c, const uint8_t *p, size_t n) {
    uint16_t code = 0;
    const uint8_t *reason = NULL;
    size_t reason_len = 0;
    int rc = sy_ws_close_parse(p, n, &code, &reason, &reason_len);
    if (rc < 0) {
        protocol_error(io, c, (uint16_t)sy_ws_error_close_code(rc), sy_ws_error_str(rc));
        return;
    }
    if (await_owner(io, c, code, (const char *)reason, reason_len, true))
        return;
    if (c->state == SY_CONN_OPEN) {
        c->close_code = code;
        set_close_reason(c, reason, reason_len);
        /* Echo the code (1005, none sent: an empty body, sy_ws_close_payload). */
        (void)queue_own(c, sy_ws_msg_close(code, NULL, 0));
    }
    /* Else the reply to our close: the handshake is complete. */
    sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
    sy_io_mark_dirty(io, c);
}

/* p[0..n): the unmasked payload, with SY_INFLATE_TAIL writable bytes after
 * it; its first `checked` bytes were UTF-8 checked while it arrived
 * (check_partial: c->utf8 is the state after them). */
static void on_frame(sy_io_t *io, sy_conn_t *c, const sy_ws_frame_t *f, uint8_t *p, size_t n, size_t checked) {
    switch (f->opcode) {
    case SY_WS_OP_PING:
        /* Every ping is answered while the pongs waiting to go cost little;
         * past that, only the newest (RFC 6455 5.5.3), so a peer that pings
         * without reading cannot grow the queue. */
        push_control(io, c, sy_ws_msg(SY_WS_OP_PONG, p, n), sy_outq_own_bytes(&c->outq) >= SY_CONN_PONG_BYTES_ANSWERED);
        return;
    case SY_WS_OP_PONG:
        return;
    case SY_WS_OP_CLOSE:
        on_close_frame(io, c, p, n);
        return;
    default:
        break;
    }
    if (c->state != SY_CONN_OPEN)
        return; /* data after our close frame is dropped */
    if (!c->in_msg && f->fin) {
        if (f->rsv != 0) {
            deliver_compressed(io, c, f->opcode, p, n);
            return;
        }
        bool valid = f->opcode != SY_WS_OP_TEXT ||
                     (checked > 0 ? sy_utf8_validate(c->utf8, p + checked, n - checked) == SY_UTF8_ACCEPT
                                  : sy_utf8_is_valid(p, n));
        if (!valid) {
            protocol_error(io, c, 1007, "invalid UTF-8 in text message");
            return;
        }
        deliver(io, c, f->opcode, p, n);
        return;
    }
    if (!c->in_msg) {
        c->in_msg = true;
        c->msg_op = f->opcode;
        if (checked == 0)
            c->utf8 = SY_UTF8_ACCEPT;
        c->mlen = 0;
        c->msg_z = f->rsv != 0;
    }
    if (c->msg_op == SY_WS_OP_TEXT && !c->msg_z) {
        c->utf8 = sy_utf8_validate(c->utf8, p + checked, n - checked);
        if (c->utf8 == SY_UTF8_REJECT || (f->fin && c->utf8 != SY_UTF8_ACCEPT)) {
            protocol_error(io, c, 1007, "invalid UTF-8 in text message");
            return;
        }
    }
    if (sy_buf_append(&c->mbuf, &c->mlen, &c->mcap, p, n, 1024) != 0) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (f->fin) {
        if (!c->msg_z) {
            deliver(io, c, c->msg_op, c->mbuf, c->mlen);
        } else if (sy_buf_reserve(&c->mbuf, c->mlen, &c->mcap, SY_INFLATE_TAIL, 1024) != 0) {
            sy_conn_fail_oom(io, c);
            return;
        } else {
            deliver_compressed(io, c, c->msg_op, c->mbuf, c->mlen);
        }
        c->in_msg = false;
        c->mlen = 0;
        if (c->mcap > 64 * 1024) {
            sy_free(c->mbuf);
            c->mbuf = NULL;
            c->mcap = 0;
        }
    }
}

static bool reading_frames(const sy_conn_t *c) { return c->state == SY_CONN_OPEN || c->state == SY_CONN_CLOSING; }

/* A text frame still arriving, p[0..have) of its payload here: unmasks and
 * UTF-8 checks what is new, so that invalid text fails the connection as
 * soon as its bytes arrive (not when the frame is complete). False when it
 * failed the connection. */
static bool check_partial(sy_io_t *io, sy_conn_t *c, const sy_ws_frame_t *f, uint8_t *p, size_t have) {
    bool text = f->rsv == 0 && (f->opcode == SY_WS_OP_TEXT || (f->opcode == SY_WS_OP_CONTINUATION && c->in_msg &&
                                                               c->msg_op == SY_WS_OP_TEXT && !c->msg_z));
    if (!text || c->state != SY_CONN_OPEN || have <= c->frame_checked || have > UINT32_MAX)
        return true;
    size_t from = c->frame_checked;
    if (from == 0 && f->opcode == SY_WS_OP_TEXT)
        c->utf8 = SY_UTF8_ACCEPT; /* a message starts with this frame */
    sy_ws_unmask(p + from, have - from, f->mask, from);
    c->utf8 = sy_utf8_validate(c->utf8, p + from, have - from);
    c->frame_checked = (uint32_t)have;
    if (c->utf8 == SY_UTF8_REJECT) {
        protocol_error(io, c, 1007, "invalid UTF-8 in text message");
        return false;
    }
    return true;
}

/* Parses and handles the frames in buf[0..len); returns the bytes used. */
static size_t ws_process(sy_io_t *io, sy_conn_t *c, uint8_t *buf, size_t len) {
    size_t pos = 0;
    const size_t max_payload = sy_io_ctx(io)->shared->opts.max_payload;
    while (pos < len && reading_frames(c)) {
        sy_ws_frame_t f;
        long h = sy_ws_frame_parse(buf + pos, len - pos, c->deflate ? SY_WS_ALLOW_RSV1 : SY_WS_ROLE_SERVER, &f);
        if (h == SY_WS_PARTIAL)
            break;
        if (h < 0) {
            protocol_error(io, c, (uint16_t)sy_ws_error_close_code(h), sy_ws_error_str(h));
            return len;
        }
        if (!SY_WS_OP_IS_CONTROL(f.opcode)) {
            long st = sy_ws_frag_step(c->in_msg, f.opcode, f.fin);
            if (st < 0) {
                protocol_error(io, c, (uint16_t)sy_ws_error_close_code(st), sy_ws_error_str(st));
                return len;
            }

            uint64_t so_far = f.opcode == SY_WS_OP_CONTINUATION ? c->mlen : 0;
            if (f.payload_len > max_payload || so_far + f.payload_len > max_payload) {
                protocol_error(io, c, 1009, "message too big");
                return len;
            }
        }
        if (f.payload_len > len - pos - (size_t)h) {
            /* The rest of this frame has not arrived. */
            if (!check_partial(io, c, &f, buf + pos + h, len - pos - (size_t)h))
                return len;
            break;
        }
        if (!within_rate(io, c, &f)) {
            if (c->rate_wait)
                break; /* this frame and the rest wait in rbuf */
            return len;
        }
        if (!within_limits(io, c, &f))
            return len;
        uint8_t *p = buf + pos + h;
        size_t n = (size_t)f.payload_len, checked = c->frame_checked;
        c->frame_checked = 0;
        sy_ws_unmask(p + checked, n - checked, f.mask, checked);
        pos += (size_t)h + n;
        on_frame(io, c, &f, p, n, checked);
    }
    return pos;
}

/* Appends p[0..n) to c->rbuf, keeping SY_INFLATE_TAIL bytes of room. */
static int rbuf_append(sy_conn_t *c, const uint8_t *p, size_t n) {
    if (n > SIZE_MAX - SY_INFLATE_TAIL || sy_buf_reserve(&c->rbuf, c->rlen, &c->rcap, n + SY_INFLATE_TAIL, 256) != 0)
        return ENOMEM;
    if (n > 0)
        memcpy(c->rbuf + c->rlen, p, n);
    c->rlen += n;
    return 0;
}

/* The bytes the frame starting at p[0..n) takes in all, header and
 * payload, once its header is there (the payload was checked against
 * maxPayload already); else n. */
static size_t frame_bytes(const sy_conn_t *c, const uint8_t *p, size_t n) {
    sy_ws_frame_t f;
    long h = sy_ws_frame_parse(p, n, c->deflate ? SY_WS_ALLOW_RSV1 : SY_WS_ROLE_SERVER, &f);
    if (h <= 0 || f.payload_len > SIZE_MAX - (size_t)h - SY_INFLATE_TAIL)
        return n;
    return (size_t)h + (size_t)f.payload_len;
}

/* Keeps buf[0..len) (buf may be c->rbuf itself). */
static bool keep_bytes_now(sy_conn_t *c, const uint8_t *buf, size_t len) {
    if (len == 0) {
        c->rlen = 0;
        if (c->rcap > 4096) {
            sy_free(c->rbuf);
            c->rbuf = NULL;
            c->rcap = 0;
        }
        return true;
    }
    if (buf == c->rbuf) {
        c->rlen = len;
        return true;
    }
    if (buf > c->rbuf && buf < c->rbuf + c->rcap) {
        memmove(c->rbuf, buf, len);
        c->rlen = len;
        return true;
    }
    c->rlen = 0;
    return rbuf_append(c, buf, len) == 0;
}

/* Keeps buf[0..len) for the next read (buf may be c->rbuf itself), with
 * room for `whole` bytes (the incomplete frame's size, when known) made at
 * once: a large frame is received into a buffer of its size, not of the
 * next power of two. */
static bool keep_bytes(sy_conn_t *c, const uint8_t *buf, size_t len, size_t whole) {
    if (!keep_bytes_now(c, buf, len))
        return false;
    return whole <= c->rlen ||
           sy_buf_reserve_exact(&c->rbuf, c->rlen, &c->rcap, whole - c->rlen + SY_INFLATE_TAIL) == 0;
}

/* Frames from buf (sy_io_ctx(io)->rx or c->rbuf); keeps the incomplete rest. */
static void ws_consume(sy_io_t *io, sy_conn_t *c, uint8_t *buf, size_t len) {
    size_t used = ws_process(io, c, buf, len);
    if (c->state == SY_CONN_DEAD)
        return;
    if (!reading_frames(c))
        used = len; /* failing or closed: the rest is ignored */
    size_t rest = len - used;
    if (!keep_bytes(c, buf + used, rest, rest > 0 ? frame_bytes(c, buf + used, rest) : 0))
        sy_conn_fail_oom(io, c);
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
    if (c->sse)
        sy_stat_inc(&sy_io_ctx(io)->stats.sse_connections);
    sy_io_emit(io, sy_conn_id(io, c), SY_EV_OPEN,
               (uint8_t)((c->deflate ? SY_EV_OPEN_DEFLATE : 0) | (c->sse ? SY_EV_OPEN_SSE : 0)), 0, protocol,
               protocol_len);
    sy_io_mark_dirty(io, c);
    if (c->sse)
        c->rlen = 0;                                 /* a stream reads nothing after its request */
    if (c->rlen > 0 && rbuf_append(c, NULL, 0) != 0) /* the room sy_inflate needs */
        sy_conn_fail_oom(io, c);
    else if (c->rlen > 0)
        ws_consume(io, c, c->rbuf, c->rlen);
    else
        (void)keep_bytes(c, NULL, 0, 0); /* gives back a large request head's buffer */
}

/* ---- reading ------------------------------------------------------------------ */

void sy_conn_on_readable(sy_io_t *io, sy_conn_t *c) {
    if (c->state == SY_CONN_DEAD || c->state == SY_CONN_UPGRADING)
        return;
    if (c->state == SY_CONN_HANDSHAKE) {
        handshake_step(io, c, true);
        return;
    }
    if (c->state == SY_CONN_PROXY) {
        sy_peer_on_readable(io, c);
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
        switch (c->state) {
        case SY_CONN_HTTP:
            if (sy_buf_append(&c->rbuf, &c->rlen, &c->rcap, sy_io_ctx(io)->rx, n, 256) != 0) {
                sy_conn_destroy(io, c, 1006);
                return;
            }
            sy_upgrade_request(io, c);
            break;
        case SY_CONN_OPEN:
        case SY_CONN_CLOSING:
            if (c->sse)
                break; /* a stream's client has nothing to say (its messages are POSTs): ignored */
            if (c->rlen > 0) {
                if (rbuf_append(c, sy_io_ctx(io)->rx, n) != 0) {
                    sy_conn_fail_oom(io, c);
                    return;
                }
                ws_consume(io, c, c->rbuf, c->rlen);
            } else {
                ws_consume(io, c, sy_io_ctx(io)->rx, n);
            }
            break;
        default:
            break; /* FLUSH_CLOSE, DRAINING: read and ignore until EOF */
        }
    }
    if (rc == SY_STREAM_OK)
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
    sy_upgrade_request(io, c);
}

/* ---- timeouts -------------------------------------------------------------------- */

/* A stream hears nothing from its client: a comment now and then keeps
 * proxies from closing it as idle (and finds a dead peer by the write
 * failing). Every half idleTimeout, else every SY_CONN_SSE_HEARTBEAT_MS;
 * last_rx_ms is when the last went. */
static void sse_heartbeat(sy_io_t *io, sy_conn_t *c, int64_t now) {
    int64_t every = sy_conn_sse_heartbeat_ms(&sy_io_ctx(io)->shared->opts);
    if (now - c->last_rx_ms < every)
        return;
    c->last_rx_ms = now;
    if (sy_outq_bytes(&c->outq) > 0)
        return; /* something is on its way already */
    push_control(io, c, sy_sse_comment("", 0), false);
}

void sy_conn_sweep(sy_io_t *io, sy_conn_t *c) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
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
    switch (c->state) {
    case SY_CONN_AWAIT_OWNER:
        if (now >= c->deadline_ms)
            sy_conn_owner_caught_up(io, c);
        return;
    case SY_CONN_OPEN:
        if (c->sse) {
            sse_heartbeat(io, c, now);
        } else if (o->idle_timeout_s > 0) {
            int64_t idle = now - c->last_rx_ms, limit = (int64_t)o->idle_timeout_s * 1000;
            /* Never closed without a ping first: with a sweep once a second,
             * a check just before half the timeout is followed by one past
             * it, so the close waits for the sweep after the ping. */
            if (idle >= limit && c->ping_sent) {
                sy_stat_inc(&sy_io_ctx(io)->stats.timeouts);
                sy_conn_fail(io, c, 1001, "idle timeout");
                return;
            }
            if (idle >= limit / 2 && !c->ping_sent) {
                c->ping_sent = true;
                push_control(io, c, sy_ws_msg(SY_WS_OP_PING, NULL, 0), false);
            }
        }
        break;
    default:
        if (c->deadline_ms > 0 && now >= c->deadline_ms) {
            sy_conn_destroy(io, c, close_code_or(c, 1006));
            return;
        }
        break;
    }
    /* Memory follows the load: an empty receive buffer (the request head's,
     * or a partial frame's that completed) and an empty send queue give
     * their memory back; a parked connection keeps only itself. */
    if (c->rlen == 0 && c->rbuf != NULL) {
        sy_free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
    }
    if (!c->sse && !c->in_msg && c->state != SY_CONN_HTTP && c->mbuf != NULL) { /* HTTP: a POST's (post) */
        sy_free(c->mbuf);
        c->mbuf = NULL;
        c->mlen = c->mcap = 0;
    }
    sy_outq_shrink(&c->outq);
    /* The control frames' rate: a time in the past is now (see
     * control_within_rate). */
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
    if (c->rlen > 0)
        ws_consume(io, c, c->rbuf, c->rlen); /* what waited: it may wait again */
}
