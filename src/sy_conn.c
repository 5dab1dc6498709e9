/* sy_conn — see sy_conn.h. */
#define _GNU_SOURCE
#include "sy_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sy_alloc.h"
#include "sy_buf.h"
#include "sy_handshake.h"
#include "sy_http.h"
#include "sy_utf8.h"
#include "sy_ws_frame.h"
#ifdef SY_WITH_TLS
#include <time.h>

#include "tls/sy_tls.h"

#define SY_TLS_RECORD 16384      /* plaintext of one TLS record */
#define SY_TLS_TURN_US 4000      /* handshake work per IO loop turn */
#endif

#define SY_RX_SIZE (64 * 1024) /* must match sy_io.c's receive buffer */
#define SY_MAX_IOV 64
#define SY_MAX_HEADERS_CAP 256
#define SY_OUTQ_MIN 8
#define SY_DRAIN_MS 2000 /* how long a closed connection may take to send its EOF */

static uint64_t conn_id(sy_io_t *io, const sy_conn_t *c) {
    return sy_id_make(io->index, c->slot, c->gen);
}

/* Leaves SY_CONN_OPEN: the owner can no longer send to it. */
static void set_state(sy_io_t *io, sy_conn_t *c, sy_conn_state_t st) {
    if (c->state == SY_CONN_OPEN && st != SY_CONN_OPEN)
        sy_io_set_live(io, c->slot, 0);
    c->state = (uint8_t)st;
}

sy_conn_t *sy_conn_new(sy_io_t *io, int fd) {
    sy_conn_t *c = sy_calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->fd = fd;
    c->state = SY_CONN_HTTP;
    c->last_rx_ms = io->now_ms;
    /* One deadline for the TLS handshake and the upgrade request together. */
    c->deadline_ms = io->now_ms + (int64_t)io->shared->opts.handshake_timeout_s * 1000;
#ifdef SY_WITH_TLS
    if (io->shared->tls_on) {
        sy_tls_ctx_t *ctx = NULL;
        if (pthread_mutex_lock(&io->shared->tls_lock) == 0) {
            ctx = io->shared->tls;
            if (ctx != NULL)
                sy_tls_ctx_ref(ctx);
            (void)pthread_mutex_unlock(&io->shared->tls_lock);
        }
        c->tls = ctx != NULL ? sy_tls_conn_new(ctx, fd) : NULL;
        sy_tls_ctx_unref(ctx); /* the connection holds its own */
        if (c->tls == NULL) {
            sy_free(c);
            return NULL;
        }
        c->state = SY_CONN_TLS;
    }
#endif
    return c;
}

void sy_conn_free(sy_conn_t *c) {
#ifdef SY_WITH_TLS
    sy_tls_conn_free(c->tls);
    sy_free(c->tls_wbuf);
#endif
    sy_free(c->rbuf);
    sy_free(c->mbuf);
    sy_free(c->outq);
    sy_free(c->subs);
    sy_free(c->close_reason);
    sy_free(c);
}

unsigned sy_conn_compact(sy_io_t *io, sy_conn_t *c) {
    unsigned moved = 0;
    if (c->subs != NULL && sy_alloc_should_move(c->subs)) {
        sy_sub_t *subs = sy_alloc_move(c->subs, (size_t)c->subs_cap * sizeof(*subs));
        if (subs != NULL) {
            c->subs = subs;
            moved++;
        }
    }
    if (!sy_alloc_should_move(c))
        return moved;
    sy_conn_t *n = sy_alloc_move(c, sizeof(*c));
    if (n == NULL)
        return moved;
    io->conns[n->slot] = n;
    for (uint32_t i = 0; i < n->nsubs; i++)
        n->subs[i].topic->slots[io->index].subs[n->subs[i].index] = n;
    sy_io_update_poll(io, n); /* the poller hands out the new address from now on */
    return moved + 1;
}

static void set_close_reason(sy_conn_t *c, const void *reason, size_t len) {
    sy_free(c->close_reason);
    c->close_reason = NULL;
    c->close_reason_len = 0;
    if (len > 0 && (c->close_reason = sy_memdup(reason, len)) != NULL)
        c->close_reason_len = len;
}

/* ---- the send queue ---------------------------------------------------- */

/* Drops queued frames. With keep_head, what must still go out first stays:
 * a frame already partly written (cutting it would corrupt the stream) and
 * the handshake response (a close frame without it is no WebSocket). */
static void outq_clear(sy_conn_t *c, bool keep_head) {
    uint32_t keep = 0;
    if (keep_head) {
        keep = c->out_len > 0 && c->out_off > 0 ? 1 : 0;
        if (c->out_pinned > keep)
            keep = c->out_pinned < c->out_len ? c->out_pinned : c->out_len;
    }
    for (uint32_t i = keep; i < c->out_len; i++) {
        sy_refbuf_t *m = c->outq[(c->out_head + i) & (c->out_cap - 1)];
        c->out_bytes -= m->len - (i == 0 ? c->out_off : 0);
        sy_refbuf_release(m);
    }
    c->out_len = keep;
    if (keep == 0) {
        c->out_off = 0;
        c->out_bytes = c->tls_wlen; /* a record OpenSSL holds still goes out */
    }
    if (c->out_pinned > keep)
        c->out_pinned = keep;
}

static bool outq_append(sy_conn_t *c, sy_refbuf_t *m) {
    if (c->out_len == c->out_cap) {
        uint32_t cap = c->out_cap ? c->out_cap * 2 : SY_OUTQ_MIN;
        if (cap <= c->out_cap)
            return false;
        sy_refbuf_t **q = sy_malloc((size_t)cap * sizeof(*q));
        if (q == NULL)
            return false;
        for (uint32_t i = 0; i < c->out_len; i++)
            q[i] = c->outq[(c->out_head + i) & (c->out_cap - 1)];
        sy_free(c->outq);
        c->outq = q;
        c->out_cap = cap;
        c->out_head = 0;
    }
    c->outq[(c->out_head + c->out_len) & (c->out_cap - 1)] = m;
    c->out_len++;
    c->out_bytes += m->len;
    return true;
}

/* Queues a close frame after discarding what is queued and not started:
 * for a failing or slow connection, the close must not wait behind data. */
static void queue_close_now(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    outq_clear(c, true);
    sy_refbuf_t *m = sy_refbuf_close(code, reason, reason ? strlen(reason) : 0);
    if (m != NULL && !outq_append(c, m))
        sy_refbuf_release(m);
    sy_io_mark_dirty(io, c);
}

void sy_conn_fail(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    if (c->state == SY_CONN_DEAD || c->state == SY_CONN_FLUSH_CLOSE || c->state == SY_CONN_DRAINING)
        return;
    if (c->state == SY_CONN_OPEN) {
        queue_close_now(io, c, code, reason);
        c->close_code = code;
        set_close_reason(c, reason, reason ? strlen(reason) : 0);
    } else if (c->state != SY_CONN_CLOSING) {
        outq_clear(c, true); /* our close frame, if any, is already queued */
    }
    set_state(io, c, SY_CONN_FLUSH_CLOSE);
    c->deadline_ms = io->now_ms + (int64_t)io->shared->opts.close_timeout_s * 1000;
    sy_io_update_poll(io, c);
    sy_io_mark_dirty(io, c);
}

bool sy_conn_push(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool control) {
    if (control) {
        if (c->state != SY_CONN_OPEN && c->state != SY_CONN_CLOSING)
            return false;
        /* A peer that pings without reading gets no unbounded pong queue. */
        if (c->out_bytes > 2 * io->shared->opts.max_backpressure + 1024)
            return false;
    } else {
        if (c->state != SY_CONN_OPEN)
            return false;
        if (c->out_bytes > 0 && c->out_bytes + m->len > io->shared->opts.max_backpressure) {
            c->hit_limit = true;
            if (io->shared->opts.slow_consumer == SY_SLOW_CLOSE) {
                sy_stat_inc(&io->stats.slow_closes);
                sy_conn_fail(io, c, 1008, "slow consumer");
            } else {
                sy_stat_inc(&io->stats.dropped);
            }
            return false;
        }
    }
    if (!outq_append(c, m)) {
        sy_stat_inc(&io->stats.oom_closes);
        sy_conn_fail(io, c, 1011, "out of memory");
        return false;
    }
    if (!control)
        sy_stat_inc(&io->stats.messages_out);
    sy_io_mark_dirty(io, c);
    return true;
}

/* Pushes a frame the caller made (one reference) or releases it. */
static void push_own(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool control) {
    if (m == NULL) {
        sy_stat_inc(&io->stats.oom_closes);
        sy_conn_fail(io, c, 1011, "out of memory");
        return;
    }
    if (!sy_conn_push(io, c, m, control))
        sy_refbuf_release(m);
}

/* The first write of a response head, before the connection is a WebSocket. */
static bool push_raw(sy_conn_t *c, sy_refbuf_t *m) {
    if (m == NULL)
        return false;
    if (!outq_append(c, m)) {
        sy_refbuf_release(m);
        return false;
    }
    return true;
}

/* Bytes still to be written: queued frames, or a TLS record OpenSSL holds. */
static bool has_output(const sy_conn_t *c) {
    return c->out_len > 0 || c->tls_wlen > 0;
}

static void after_flush(sy_io_t *io, sy_conn_t *c) {
    if (has_output(c))
        return;
    if (c->hit_limit && c->state == SY_CONN_OPEN) {
        c->hit_limit = false;
        sy_io_emit(io, conn_id(io, c), SY_EV_DRAIN, 0, 0, NULL, 0);
    }
    if (c->state == SY_CONN_FLUSH_CLOSE) {
        /* Everything is written: send our FIN, then read until the peer's,
         * so that unread bytes never turn our close into a reset. Over TLS
         * a close_notify first (best effort: a full socket loses it). */
#ifdef SY_WITH_TLS
        if (c->tls != NULL)
            sy_tls_close_notify(c->tls);
#endif
        if (shutdown(c->fd, SHUT_WR) != 0) {
            sy_conn_destroy(io, c, c->close_code ? c->close_code : 1006);
            return;
        }
        set_state(io, c, SY_CONN_DRAINING);
        c->deadline_ms = io->now_ms + SY_DRAIN_MS;
    }
}

/* Drops n written bytes from the head of the send queue. */
static void outq_consume(sy_conn_t *c, size_t n) {
    c->out_bytes -= n;
    while (n > 0) {
        sy_refbuf_t *m = c->outq[c->out_head];
        size_t rest = m->len - c->out_off;
        if (n < rest) {
            c->out_off += n;
            break;
        }
        n -= rest;
        c->out_off = 0;
        c->out_head = (c->out_head + 1) & (c->out_cap - 1);
        c->out_len--;
        if (c->out_pinned > 0)
            c->out_pinned--;
        sy_refbuf_release(m);
    }
}

static void want_writable(sy_io_t *io, sy_conn_t *c, bool want) {
    if (want != c->want_out) {
        c->want_out = want;
        sy_io_update_poll(io, c);
    }
}

#ifdef SY_WITH_TLS
static int64_t mono_us(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One step of the TLS handshake. from_read: a readable socket, which waits
 * for the next loop turn once this turn's handshake budget is spent (the
 * poller is level-triggered, so it comes back); a burst of reconnects must
 * not starve delivery to the connections already open. */
static void tls_handshake_step(sy_io_t *io, sy_conn_t *c, bool from_read) {
    if (from_read && io->tls_turn_us >= SY_TLS_TURN_US) {
        sy_stat_inc(&io->stats.tls_deferred);
        return;
    }
    int64_t t0 = mono_us();
    sy_tls_want_t w = sy_tls_handshake(c->tls, NULL); /* counted, not reported: no open event yet */
    io->tls_turn_us += mono_us() - t0;
    switch (w) {
    case SY_TLS_DONE:
        sy_stat_inc(&io->stats.tls_handshakes);
        set_state(io, c, SY_CONN_HTTP); /* the request, if sent, is still in the socket */
        want_writable(io, c, false);
        return;
    case SY_TLS_WANT_READ:
        want_writable(io, c, false);
        return;
    case SY_TLS_WANT_WRITE:
        want_writable(io, c, true);
        return;
    default: /* not TLS, an unsupported version, a bad record, closed midway */
        sy_stat_inc(&io->stats.tls_failures);
        sy_conn_destroy(io, c, 1006);
        return;
    }
}

/* Writes the send queue through TLS: frames are gathered into records of
 * up to 16 KiB (a large frame goes without the copy). When OpenSSL takes a
 * record it cannot write yet, it must be offered the same bytes again, so
 * they move out of the queue into tls_wbuf (the queue may drop frames
 * meanwhile, for a slow consumer or a close). */
static void tls_flush(sy_io_t *io, sy_conn_t *c) {
    while (c->state != SY_CONN_DEAD) {
        size_t n = 0;
        sy_tls_want_t w;
        if (c->tls_wlen > 0) {
            w = sy_tls_write(c->tls, c->tls_wbuf, c->tls_wlen, &n);
            if (w == SY_TLS_DONE) {
                c->out_bytes -= n;
                c->tls_wlen -= (uint32_t)n;
                if (c->tls_wlen > 0) {
                    memmove(c->tls_wbuf, c->tls_wbuf + n, c->tls_wlen);
                } else {
                    sy_free(c->tls_wbuf);
                    c->tls_wbuf = NULL;
                }
                sy_stat_add(&io->stats.bytes_out, (uint64_t)n);
                continue;
            }
        } else {
            if (c->out_len == 0)
                break;
            sy_refbuf_t *head = c->outq[c->out_head];
            const uint8_t *p = head->data + c->out_off;
            size_t len = head->len - c->out_off;
            if (len < SY_TLS_RECORD && c->out_len > 1) {
                if (io->tls_stage == NULL && (io->tls_stage = sy_malloc(SY_TLS_RECORD)) == NULL) {
                    sy_conn_destroy(io, c, 1006);
                    return;
                }
                len = 0;
                for (uint32_t i = 0; i < c->out_len && len < SY_TLS_RECORD; i++) {
                    sy_refbuf_t *m = c->outq[(c->out_head + i) & (c->out_cap - 1)];
                    size_t off = i == 0 ? c->out_off : 0, take = m->len - off;
                    if (take > SY_TLS_RECORD - len)
                        take = SY_TLS_RECORD - len;
                    memcpy(io->tls_stage + len, m->data + off, take);
                    len += take;
                }
                p = io->tls_stage;
            } else if (len > SY_TLS_RECORD) {
                len = SY_TLS_RECORD;
            }
            w = sy_tls_write(c->tls, p, len, &n);
            if (w == SY_TLS_DONE) {
                outq_consume(c, n);
                sy_stat_add(&io->stats.bytes_out, (uint64_t)n);
                continue;
            }
            if (w == SY_TLS_WANT_WRITE || w == SY_TLS_WANT_READ) {
                if ((c->tls_wbuf = sy_memdup(p, len)) == NULL) {
                    sy_conn_destroy(io, c, 1006);
                    return;
                }
                c->tls_wlen = (uint32_t)len;
                outq_consume(c, len);
                c->out_bytes += len; /* still to be written */
            }
        }
        if (w == SY_TLS_WANT_WRITE || w == SY_TLS_WANT_READ)
            break;
        sy_conn_destroy(io, c, c->close_code ? c->close_code : 1006);
        return;
    }
    if (c->state == SY_CONN_DEAD)
        return;
    want_writable(io, c, has_output(c));
    after_flush(io, c);
}
#endif

void sy_conn_flush(sy_io_t *io, sy_conn_t *c) {
#ifdef SY_WITH_TLS
    if (c->tls != NULL) {
        if (c->state == SY_CONN_TLS)
            tls_handshake_step(io, c, false);
        else
            tls_flush(io, c);
        return;
    }
#endif
    while (c->out_len > 0 && c->state != SY_CONN_DEAD) {
        struct iovec iov[SY_MAX_IOV];
        int n = 0;
        size_t total = 0;
        for (uint32_t i = 0; i < c->out_len && n < SY_MAX_IOV; i++) {
            sy_refbuf_t *m = c->outq[(c->out_head + i) & (c->out_cap - 1)];
            size_t off = i == 0 ? c->out_off : 0;
            iov[n].iov_base = m->data + off;
            iov[n].iov_len = m->len - off;
            total += iov[n].iov_len;
            n++;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            sy_conn_destroy(io, c, c->close_code ? c->close_code : 1006);
            return;
        }
        sy_stat_add(&io->stats.bytes_out, (uint64_t)w);
        outq_consume(c, (size_t)w);
        if ((size_t)w < total)
            break;
    }
    if (c->state == SY_CONN_DEAD)
        return;
    want_writable(io, c, c->out_len > 0);
    after_flush(io, c);
}

/* ---- subscriptions ----------------------------------------------------- */

bool sy_conn_subscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t) {
    bool ok = c->state == SY_CONN_OPEN || c->state == SY_CONN_UPGRADING;
    for (uint32_t i = 0; ok && i < c->nsubs; i++)
        if (c->subs[i].topic == t)
            ok = false;
    if (ok && c->nsubs == c->subs_cap) {
        uint32_t cap = c->subs_cap ? c->subs_cap * 2 : 2;
        sy_sub_t *subs = sy_realloc(c->subs, (size_t)cap * sizeof(*subs));
        if (subs == NULL)
            ok = false;
        else {
            c->subs = subs;
            c->subs_cap = cap;
        }
    }
    long index = ok ? sy_topic_slot_add(t, io->index, c) : -1;
    if (index < 0) {
        atomic_fetch_sub_explicit(&t->slots[io->index].count, 1, memory_order_relaxed);
        sy_topic_release(&io->shared->topics, t);
        return false;
    }
    c->subs[c->nsubs].topic = t;
    c->subs[c->nsubs].index = (uint32_t)index;
    c->nsubs++;
    return true;
}

static void remove_sub(sy_io_t *io, sy_conn_t *c, uint32_t i) {
    sy_topic_t *t = c->subs[i].topic;
    sy_conn_t *moved = sy_topic_slot_remove(t, io->index, c->subs[i].index);
    if (moved != NULL) {
        for (uint32_t j = 0; j < moved->nsubs; j++) {
            if (moved->subs[j].topic == t) {
                moved->subs[j].index = c->subs[i].index;
                break;
            }
        }
    }
    c->subs[i] = c->subs[--c->nsubs];
    atomic_fetch_sub_explicit(&t->slots[io->index].count, 1, memory_order_relaxed);
    sy_topic_release(&io->shared->topics, t);
}

bool sy_conn_unsubscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t) {
    for (uint32_t i = 0; i < c->nsubs; i++) {
        if (c->subs[i].topic == t) {
            remove_sub(io, c, i);
            return true;
        }
    }
    return false;
}

/* ---- closing ------------------------------------------------------------ */

void sy_conn_destroy(sy_io_t *io, sy_conn_t *c, uint16_t code) {
    if (c->state == SY_CONN_DEAD)
        return;
    set_state(io, c, SY_CONN_DEAD);
    /* Removing it from the poller is implied by close(); a close() error on
     * a socket leaves nothing to do (the descriptor is released anyway). */
    (void)close(c->fd);
    c->fd = -1;
    while (c->nsubs > 0)
        remove_sub(io, c, c->nsubs - 1);
    outq_clear(c, false);
    if (c->opened) {
        uint16_t reported = c->close_code ? c->close_code : code;
        sy_io_emit(io, conn_id(io, c), SY_EV_CLOSE, 0, reported, c->close_reason, c->close_reason_len);
        sy_stat_inc(&io->stats.closed);
        sy_stat_dec(&io->stats.connections);
    }
    atomic_fetch_sub_explicit(&io->shared->connections, 1, memory_order_relaxed);
    sy_io_release_slot(io, c->slot);
    if (c->paused) {
        /* Unlink from the paused list: it must never point at a freed
         * connection. Rare (a paused connection that times out or is
         * terminated), so a walk is fine. */
        for (sy_conn_t **p = &io->paused; *p != NULL; p = &(*p)->next_paused) {
            if (*p == c) {
                *p = c->next_paused;
                break;
            }
        }
        c->paused = false;
    }
    c->next_dead = io->dead;
    io->dead = c;
}

bool sy_conn_end(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *close_frame, uint16_t code) {
    if (c->state != SY_CONN_OPEN)
        return false;
    if (!outq_append(c, close_frame))
        return false;
    c->close_code = code;
    set_state(io, c, SY_CONN_CLOSING);
    c->deadline_ms = io->now_ms + (int64_t)io->shared->opts.close_timeout_s * 1000;
    sy_io_mark_dirty(io, c);
    return true;
}

/* ---- frames in ------------------------------------------------------------ */

static void deliver(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n) {
    sy_stat_inc(&io->stats.messages_in);
    sy_stat_add(&io->stats.bytes_in, n);
    sy_io_emit(io, conn_id(io, c), SY_EV_MESSAGE, opcode == SY_WS_OP_BINARY ? 1 : 0, 0, p, n);
}

static void protocol_error(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason) {
    sy_stat_inc(&io->stats.protocol_errors);
    sy_conn_fail(io, c, code, reason);
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
    if (c->state == SY_CONN_CLOSING) {
        /* The reply to our close: the handshake is complete. */
        set_state(io, c, SY_CONN_FLUSH_CLOSE);
        c->deadline_ms = io->now_ms + SY_DRAIN_MS;
        sy_io_mark_dirty(io, c);
        return;
    }
    c->close_code = code;
    set_close_reason(c, reason, reason_len);
    /* Echo the code (1005 means the peer sent none: reply with none). */
    sy_refbuf_t *m = code == 1005 ? sy_refbuf_close(0, NULL, 0) : sy_refbuf_frame(SY_WS_OP_CLOSE, p, 2);
    if (m != NULL && !outq_append(c, m))
        sy_refbuf_release(m);
    set_state(io, c, SY_CONN_FLUSH_CLOSE);
    c->deadline_ms = io->now_ms + (int64_t)io->shared->opts.close_timeout_s * 1000;
    sy_io_mark_dirty(io, c);
}

static void on_frame(sy_io_t *io, sy_conn_t *c, const sy_ws_frame_t *f, const uint8_t *p, size_t n) {
    switch (f->opcode) {
    case SY_WS_OP_PING:
        push_own(io, c, sy_refbuf_frame(SY_WS_OP_PONG, p, n), true);
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
        if (f->opcode == SY_WS_OP_TEXT && !sy_utf8_is_valid(p, n)) {
            protocol_error(io, c, 1007, "invalid UTF-8 in text message");
            return;
        }
        deliver(io, c, f->opcode, p, n);
        return;
    }
    if (!c->in_msg) {
        c->in_msg = true;
        c->msg_op = f->opcode;
        c->utf8 = SY_UTF8_ACCEPT;
        c->mlen = 0;
    }
    if (c->msg_op == SY_WS_OP_TEXT) {
        c->utf8 = sy_utf8_validate(c->utf8, p, n);
        if (c->utf8 == SY_UTF8_REJECT || (f->fin && c->utf8 != SY_UTF8_ACCEPT)) {
            protocol_error(io, c, 1007, "invalid UTF-8 in text message");
            return;
        }
    }
    if (!sy_buf_append(&c->mbuf, &c->mlen, &c->mcap, p, n, 1024)) {
        sy_stat_inc(&io->stats.oom_closes);
        sy_conn_fail(io, c, 1011, "out of memory");
        return;
    }
    if (f->fin) {
        deliver(io, c, c->msg_op, c->mbuf, c->mlen);
        c->in_msg = false;
        c->mlen = 0;
        if (c->mcap > 64 * 1024) {
            sy_free(c->mbuf);
            c->mbuf = NULL;
            c->mcap = 0;
        }
    }
}

/* Parses and handles the frames in buf[0..len); returns the bytes used. */
static size_t ws_process(sy_io_t *io, sy_conn_t *c, uint8_t *buf, size_t len) {
    size_t pos = 0;
    const size_t max_payload = io->shared->opts.max_payload;
    while (pos < len && (c->state == SY_CONN_OPEN || c->state == SY_CONN_CLOSING)) {
        sy_ws_frame_t f;
        long h = sy_ws_frame_parse(buf + pos, len - pos, &f);
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
        if (f.payload_len > len - pos - (size_t)h)
            break; /* the rest of this frame has not arrived */
        uint8_t *p = buf + pos + h;
        size_t n = (size_t)f.payload_len;
        sy_ws_unmask(p, n, f.mask, 0);
        pos += (size_t)h + n;
        on_frame(io, c, &f, p, n);
    }
    return pos;
}

/* Keeps buf[0..len) for the next read (buf may be c->rbuf itself). */
static bool keep_bytes(sy_conn_t *c, const uint8_t *buf, size_t len) {
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
    if (!sy_buf_reserve(&c->rbuf, 0, &c->rcap, len, 256))
        return false;
    memcpy(c->rbuf, buf, len);
    c->rlen = len;
    return true;
}

static bool rbuf_append(sy_conn_t *c, const uint8_t *p, size_t n) {
    return sy_buf_append(&c->rbuf, &c->rlen, &c->rcap, p, n, 256);
}

/* Frames from buf (io->rx or c->rbuf); keeps the incomplete rest. */
static void ws_consume(sy_io_t *io, sy_conn_t *c, uint8_t *buf, size_t len) {
    size_t used = ws_process(io, c, buf, len);
    if (c->state == SY_CONN_DEAD)
        return;
    if (c->state != SY_CONN_OPEN && c->state != SY_CONN_CLOSING)
        used = len; /* failing or closed: the rest is ignored */
    if (!keep_bytes(c, buf + used, len - used)) {
        sy_stat_inc(&io->stats.oom_closes);
        sy_conn_fail(io, c, 1011, "out of memory");
    }
}

/* ---- the upgrade ------------------------------------------------------------ */

/* The one way an upgrade is refused: the HTTP response (taken over; NULL
 * when it could not be made) is written, then the socket closed. */
static void respond_and_close(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response) {
    sy_stat_inc(&io->stats.handshake_rejects);
    c->rlen = 0;
    if (response == NULL || !push_raw(c, response)) {
        sy_conn_destroy(io, c, 1006);
        return;
    }
    set_state(io, c, SY_CONN_FLUSH_CLOSE);
    c->deadline_ms = io->now_ms + SY_DRAIN_MS;
    sy_io_update_poll(io, c);
    sy_io_mark_dirty(io, c);
}

static void reject(sy_io_t *io, sy_conn_t *c, int status, const char *why) {
    char buf[512];
    size_t n = sy_http_error_response_msg(buf, sizeof(buf), status, why, why ? strlen(why) : 0, NULL, 0);
    if (n == 0)
        n = sy_http_error_response(buf, sizeof(buf), status, NULL, 0);
    respond_and_close(io, c, n > 0 ? sy_refbuf_raw(buf, n) : NULL);
}

static bool path_allowed(sy_io_t *io, const char *target, size_t len) {
    const char *path = io->shared->opts.path;
    if (path == NULL)
        return true;
    const char *q = memchr(target, '?', len);
    size_t plen = q ? (size_t)(q - target) : len;
    return plen == io->shared->path_len && memcmp(target, path, plen) == 0;
}

static void emit_upgrade(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req) {
    char addr[INET6_ADDRSTRLEN] = "", port[8] = "";
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, addr, sizeof(addr));
            snprintf(port, sizeof(port), "%u", (unsigned)ntohs(a->sin_port));
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof(addr));
            snprintf(port, sizeof(port), "%u", (unsigned)ntohs(a->sin6_port));
        }
    }
    /* Pieces: each string as a u32 length then its bytes. */
    size_t n = 3 + 2 * req->num_headers;
    const void *parts[2 * (3 + 2 * SY_MAX_HEADERS_CAP)];
    size_t lens[2 * (3 + 2 * SY_MAX_HEADERS_CAP)];
    uint32_t sizes[3 + 2 * SY_MAX_HEADERS_CAP];
    const char *strs[3 + 2 * SY_MAX_HEADERS_CAP];
    size_t slens[3 + 2 * SY_MAX_HEADERS_CAP];
    strs[0] = req->target;
    slens[0] = req->target_len;
    strs[1] = addr;
    slens[1] = strlen(addr);
    strs[2] = port;
    slens[2] = strlen(port);
    for (size_t i = 0; i < req->num_headers; i++) {
        strs[3 + 2 * i] = req->headers[i].name;
        slens[3 + 2 * i] = req->headers[i].name_len;
        strs[4 + 2 * i] = req->headers[i].value;
        slens[4 + 2 * i] = req->headers[i].value_len;
    }
    for (size_t i = 0; i < n; i++) {
        sizes[i] = (uint32_t)slens[i];
        parts[2 * i] = &sizes[i];
        lens[2 * i] = sizeof(uint32_t);
        parts[2 * i + 1] = strs[i];
        lens[2 * i + 1] = slens[i];
    }
    sy_io_emitv(io, conn_id(io, c), SY_EV_UPGRADE, parts, lens, 2 * n);
}

/* Writes the 101 and opens the connection; rest[0..rest_len) are bytes that
 * followed the request head (already in c->rbuf after the accept key). */
static void open_conn(sy_io_t *io, sy_conn_t *c, const char *accept, const char *proto, size_t proto_len,
                      const char *extra, size_t extra_len) {
    char buf[2048];
    size_t n = sy_handshake_response(buf, sizeof(buf), accept, proto, proto_len, extra, extra_len);
    sy_refbuf_t *m = NULL;
    if (n == 0) {
        /* Large extra headers: build the response on the heap. */
        size_t cap = extra_len + proto_len + 512;
        char *big = sy_malloc(cap);
        if (big != NULL) {
            n = sy_handshake_response(big, cap, accept, proto, proto_len, extra, extra_len);
            if (n > 0)
                m = sy_refbuf_raw(big, n);
            sy_free(big);
        }
    } else {
        m = sy_refbuf_raw(buf, n);
    }
    if (m == NULL || !push_raw(c, m)) {
        sy_stat_inc(&io->stats.oom_closes);
        sy_conn_destroy(io, c, 1006);
        return;
    }
    c->out_pinned = c->out_len;
    set_state(io, c, SY_CONN_OPEN);
    c->opened = true;
    c->deadline_ms = 0;
    c->last_rx_ms = io->now_ms;
    sy_io_set_live(io, c->slot, c->gen);
    sy_stat_inc(&io->stats.opened);
    sy_stat_inc(&io->stats.connections);
    sy_io_emit(io, conn_id(io, c), SY_EV_OPEN, 0, 0, proto, proto_len);
    sy_io_update_poll(io, c);
    sy_io_mark_dirty(io, c);
}

static void http_process(sy_io_t *io, sy_conn_t *c) {
    const sy_server_opts_t *o = &io->shared->opts;
    sy_http_header_t headers[SY_MAX_HEADERS_CAP];
    size_t max_headers = o->max_headers < SY_MAX_HEADERS_CAP ? o->max_headers : SY_MAX_HEADERS_CAP;
    sy_http_request_t req = {.headers = headers, .num_headers = max_headers};
    sy_http_limits_t lim = {.max_head_bytes = o->max_head_bytes, .max_line_bytes = o->max_head_bytes,
                            .max_headers = max_headers};
    long n = sy_http_parse_request((const char *)c->rbuf, c->rlen, &lim, &req);
    if (n == SY_HTTP_PARTIAL)
        return;
    if (n < 0) {
        reject(io, c, sy_http_error_status(n), sy_http_error_str(n));
        return;
    }
    if (!path_allowed(io, req.target, req.target_len)) {
        reject(io, c, 404, "no WebSocket endpoint at this path");
        return;
    }
    sy_handshake_t hs;
    int status = sy_handshake_check(&req, &hs);
    if (status != 0) {
        reject(io, c, status, hs.problem);
        return;
    }
    if (o->max_connections > 0 &&
        atomic_load_explicit(&io->shared->connections, memory_order_relaxed) > o->max_connections) {
        reject(io, c, 503, "too many connections");
        return;
    }
    char accept[SY_WS_ACCEPT_LEN];
    sy_ws_accept_key(hs.key, hs.key_len, accept);
    size_t head = (size_t)n, rest = c->rlen - head;
    if (o->upgrade_handler) {
        emit_upgrade(io, c, &req);
        /* Keep the accept key, then any bytes that followed the head. */
        memmove(c->rbuf + SY_WS_ACCEPT_LEN, c->rbuf + head, rest);
        memcpy(c->rbuf, accept, SY_WS_ACCEPT_LEN);
        c->rlen = SY_WS_ACCEPT_LEN + rest;
        set_state(io, c, SY_CONN_UPGRADING);
        sy_io_update_poll(io, c);
        return;
    }
    /* No handler: accept, choosing the first subprotocol offered. */
    sy_handshake_iter_t it = {0};
    const char *proto = NULL;
    size_t proto_len = 0;
    char proto_copy[256];
    if (sy_handshake_next_protocol(&req, &it, &proto, &proto_len) && proto_len < sizeof(proto_copy)) {
        memcpy(proto_copy, proto, proto_len);
    } else {
        proto_len = 0;
    }
    memmove(c->rbuf, c->rbuf + head, rest);
    c->rlen = rest;
    open_conn(io, c, accept, proto_copy, proto_len, NULL, 0);
    if (c->state == SY_CONN_OPEN && c->rlen > 0)
        ws_consume(io, c, c->rbuf, c->rlen);
    else if (c->state == SY_CONN_OPEN)
        keep_bytes(c, NULL, 0);
}

void sy_conn_accept(sy_io_t *io, sy_conn_t *c, sy_accept_t *a, sy_refbuf_t *extra) {
    if (c->state != SY_CONN_UPGRADING || c->rlen < SY_WS_ACCEPT_LEN) {
        sy_refbuf_release(extra);
        for (size_t i = 0; i < a->ntopics; i++) {
            atomic_fetch_sub_explicit(&a->topics[i]->slots[io->index].count, 1, memory_order_relaxed);
            sy_topic_release(&io->shared->topics, a->topics[i]);
        }
        return;
    }
    char accept[SY_WS_ACCEPT_LEN];
    memcpy(accept, c->rbuf, SY_WS_ACCEPT_LEN);
    size_t rest = c->rlen - SY_WS_ACCEPT_LEN;
    memmove(c->rbuf, c->rbuf + SY_WS_ACCEPT_LEN, rest);
    c->rlen = rest;
    for (size_t i = 0; i < a->ntopics; i++)
        sy_conn_subscribe(io, c, a->topics[i]);
    open_conn(io, c, accept, a->protocol, a->protocol_len, extra ? (const char *)extra->data : NULL,
              extra ? extra->len : 0);
    sy_refbuf_release(extra);
    if (c->state == SY_CONN_OPEN && c->rlen > 0)
        ws_consume(io, c, c->rbuf, c->rlen);
    else if (c->state == SY_CONN_OPEN)
        keep_bytes(c, NULL, 0);
}

void sy_conn_refuse(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response) {
    if (c->state != SY_CONN_UPGRADING) {
        sy_refbuf_release(response);
        return;
    }
    while (c->nsubs > 0)
        remove_sub(io, c, c->nsubs - 1);
    respond_and_close(io, c, response);
}

/* ---- reading ------------------------------------------------------------------ */

/* Reads what the socket has into io->rx, like recv: bytes, 0 at the end,
 * or -1 with errno (EAGAIN: nothing now). Over TLS, whole records up to
 * the buffer (a record's plaintext is never left half read in OpenSSL, so
 * the level-triggered poller still sees whatever waits); *eof when the
 * stream ended after the bytes returned. */
static ssize_t conn_read(sy_io_t *io, sy_conn_t *c, bool *eof) {
    *eof = false;
#ifdef SY_WITH_TLS
    if (c->tls != NULL) {
        size_t got = 0;
        while (SY_RX_SIZE - got >= SY_TLS_RECORD) {
            size_t n = 0;
            sy_tls_want_t w = sy_tls_read(c->tls, io->rx + got, SY_RX_SIZE - got, &n);
            if (w == SY_TLS_DONE) {
                got += n;
                continue;
            }
            /* WANT_WRITE: a post-handshake message (a key update) must be
             * answered; OpenSSL sends it with the next write or read. */
            if (w == SY_TLS_WANT_READ || w == SY_TLS_WANT_WRITE) {
                if (got > 0)
                    break;
                errno = EAGAIN;
                return -1;
            }
            if (w == SY_TLS_FAILED)
                sy_stat_inc(&io->stats.protocol_errors);
            if (got == 0)
                return 0;
            *eof = true;
            break;
        }
        return (ssize_t)got;
    }
#endif
    return recv(c->fd, io->rx, SY_RX_SIZE, MSG_DONTWAIT);
}

void sy_conn_on_readable(sy_io_t *io, sy_conn_t *c) {
    if (c->state == SY_CONN_DEAD || c->state == SY_CONN_UPGRADING)
        return;
#ifdef SY_WITH_TLS
    if (c->state == SY_CONN_TLS) {
        tls_handshake_step(io, c, true);
        return;
    }
#endif
    if (io->reads_paused && (c->state == SY_CONN_OPEN)) {
        if (!c->paused) {
            c->paused = true;
            c->next_paused = io->paused;
            io->paused = c;
            sy_io_update_poll(io, c);
        }
        return;
    }
    bool eof;
    ssize_t r = conn_read(io, c, &eof);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        sy_conn_destroy(io, c, c->close_code ? c->close_code : 1006);
        return;
    }
    if (r == 0) {
        sy_conn_destroy(io, c, c->close_code ? c->close_code : 1006);
        return;
    }
    c->last_rx_ms = io->now_ms;
    c->ping_sent = false;
    size_t n = (size_t)r;
    switch (c->state) {
    case SY_CONN_HTTP:
        if (!rbuf_append(c, io->rx, n)) {
            sy_conn_destroy(io, c, 1006);
            return;
        }
        http_process(io, c);
        break;
    case SY_CONN_OPEN:
    case SY_CONN_CLOSING:
        if (c->rlen > 0) {
            if (!rbuf_append(c, io->rx, n)) {
                sy_stat_inc(&io->stats.oom_closes);
                sy_conn_fail(io, c, 1011, "out of memory");
                return;
            }
            ws_consume(io, c, c->rbuf, c->rlen);
        } else {
            ws_consume(io, c, io->rx, n);
        }
        break;
    default:
        break; /* FLUSH_CLOSE, DRAINING: read and ignore until EOF */
    }
    if (eof) /* the TLS stream ended after these bytes */
        sy_conn_destroy(io, c, c->close_code ? c->close_code : 1006);
}

void sy_conn_resume(sy_io_t *io, sy_conn_t *c) {
    c->paused = false;
    sy_io_update_poll(io, c);
}

/* ---- timeouts -------------------------------------------------------------------- */

void sy_conn_sweep(sy_io_t *io, sy_conn_t *c) {
    const sy_server_opts_t *o = &io->shared->opts;
    int64_t now = io->now_ms;
    switch (c->state) {
    case SY_CONN_TLS:
    case SY_CONN_HTTP:
    case SY_CONN_UPGRADING:
        if (now >= c->deadline_ms) {
            sy_stat_inc(&io->stats.timeouts);
            sy_conn_destroy(io, c, 1006);
        }
        return;
    case SY_CONN_OPEN:
        if (o->idle_timeout_s > 0) {
            int64_t idle = now - c->last_rx_ms, limit = (int64_t)o->idle_timeout_s * 1000;
            /* Never closed without a ping first: with a sweep once a second,
             * a check just before half the timeout is followed by one past
             * it, so the close waits for the sweep after the ping. */
            if (idle >= limit && c->ping_sent) {
                sy_stat_inc(&io->stats.timeouts);
                sy_conn_fail(io, c, 1001, "idle timeout");
                return;
            }
            if (idle >= limit / 2 && !c->ping_sent) {
                c->ping_sent = true;
                push_own(io, c, sy_refbuf_frame(SY_WS_OP_PING, NULL, 0), true);
            }
        }
        break;
    default:
        if (c->deadline_ms > 0 && now >= c->deadline_ms) {
            sy_conn_destroy(io, c, c->close_code ? c->close_code : 1006);
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
    if (!c->in_msg && c->mbuf != NULL) {
        sy_free(c->mbuf);
        c->mbuf = NULL;
        c->mlen = c->mcap = 0;
    }
    if (c->out_len == 0 && c->outq != NULL) {
        sy_free(c->outq);
        c->outq = NULL;
        c->out_cap = 0;
        c->out_head = 0;
    }
}
