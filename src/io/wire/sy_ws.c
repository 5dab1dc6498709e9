/* sy_ws — see sy_ws.h. */
#define _GNU_SOURCE
#include "io/wire/sy_ws.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_buf.h"
#include "io/model/sy_deflate.h"
#include "io/model/sy_ratelimit.h"
#include "proto/sy_utf8.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"

/* ---- frames in ------------------------------------------------------------ */

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
            sy_conn_policy_close(io, c, &sy_io_ctx(io)->stats.fragment_closes, "too many fragments");
            return false;
        }
    } else if (f->opcode != SY_WS_OP_CLOSE && !control_within_rate(io, c)) {
        sy_conn_policy_close(io, c, &sy_io_ctx(io)->stats.control_rate_closes, "too many control frames");
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
    if (sy_io_rate_wait(io, sy_conn_id(io, c), sy_io_ctx(io)->now_ms + (a > b ? a : b)) != 0) {
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
        sy_conn_policy_close(io, c, &sy_io_ctx(io)->stats.rate_closes, "rate limit exceeded");
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
        sy_conn_protocol_error(io, c, 1009, "message too big");
    } else if (rc == EBADMSG) {
        sy_conn_protocol_error(io, c, 1007, "invalid compressed data");
    } else if (rc != 0) {
        sy_conn_fail_oom(io, c);
    } else if (opcode == SY_WS_OP_TEXT && !sy_utf8_is_valid(msg, len)) {
        sy_conn_protocol_error(io, c, 1007, "invalid UTF-8 in text message");
    } else {
        sy_conn_message(io, c, opcode, msg, len);
    }
    sy_deflate_done(&sy_io_ctx(io)->deflate);
}

static void on_close_frame(sy_io_t *io, sy_conn_t *c, const uint8_t *p, size_t n) {
    uint16_t code = 0;
    const uint8_t *reason = NULL;
    size_t reason_len = 0;
    int rc = sy_ws_close_parse(p, n, &code, &reason, &reason_len);
    if (rc < 0) {
        sy_conn_protocol_error(io, c, (uint16_t)sy_ws_error_close_code(rc), sy_ws_error_str(rc));
        return;
    }
    if (sy_conn_await_owner(io, c, code, (const char *)reason, reason_len, true))
        return;
    if (c->state == SY_CONN_OPEN) {
        c->close_code = code;
        sy_conn_set_close_reason(c, reason, reason_len);
        /* Echo the code (1005, none sent: an empty body, sy_ws_close_payload). */
        (void)sy_conn_queue_own(c, sy_ws_msg_close(code, NULL, 0));
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
        sy_conn_control(io, c, sy_ws_msg(SY_WS_OP_PONG, p, n),
                        sy_outq_own_bytes(&c->outq) >= SY_CONN_PONG_BYTES_ANSWERED);
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
            sy_conn_protocol_error(io, c, 1007, "invalid UTF-8 in text message");
            return;
        }
        sy_conn_message(io, c, f->opcode, p, n);
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
            sy_conn_protocol_error(io, c, 1007, "invalid UTF-8 in text message");
            return;
        }
    }
    if (sy_buf_append(&c->mbuf, &c->mlen, &c->mcap, p, n, 1024) != 0) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (f->fin) {
        if (!c->msg_z) {
            sy_conn_message(io, c, c->msg_op, c->mbuf, c->mlen);
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
        sy_conn_protocol_error(io, c, 1007, "invalid UTF-8 in text message");
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
            sy_conn_protocol_error(io, c, (uint16_t)sy_ws_error_close_code(h), sy_ws_error_str(h));
            return len;
        }
        if (!SY_WS_OP_IS_CONTROL(f.opcode)) {
            long st = sy_ws_frag_step(c->in_msg, f.opcode, f.fin);
            if (st < 0) {
                sy_conn_protocol_error(io, c, (uint16_t)sy_ws_error_close_code(st), sy_ws_error_str(st));
                return len;
            }

            uint64_t so_far = f.opcode == SY_WS_OP_CONTINUATION ? c->mlen : 0;
            if (f.payload_len > max_payload || so_far + f.payload_len > max_payload) {
                sy_conn_protocol_error(io, c, 1009, "message too big");
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

/* ---- the table's operations ------------------------------------------------ */

static void ws_data(sy_io_t *io, sy_conn_t *c, uint8_t *p, size_t n) {
    if (c->rlen > 0) {
        if (rbuf_append(c, p, n) != 0) {
            sy_conn_fail_oom(io, c);
            return;
        }
        ws_consume(io, c, c->rbuf, c->rlen);
    } else {
        ws_consume(io, c, p, n);
    }
}

static void ws_resume(sy_io_t *io, sy_conn_t *c) { ws_consume(io, c, c->rbuf, c->rlen); }

/* The frames that followed the request (a client that did not wait for the
 * 101), or the request head's buffer given back. */
static void ws_opened(sy_io_t *io, sy_conn_t *c) {
    if (c->rlen > 0 && rbuf_append(c, NULL, 0) != 0) /* the room sy_inflate needs */
        sy_conn_fail_oom(io, c);
    else if (c->rlen > 0)
        ws_consume(io, c, c->rbuf, c->rlen);
    else
        (void)keep_bytes(c, NULL, 0, 0); /* gives back a large request head's buffer */
}

/* idleTimeout: a ping at half of it, the close (1001) past it, never
 * without a ping first: with a sweep once a second, a check just before
 * half the timeout is followed by one past it, so the close waits for the
 * sweep after the ping. And a message's buffer given back between
 * messages. */
static bool ws_idle(sy_io_t *io, sy_conn_t *c, int64_t now) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    const sy_msgproto_t *mp = sy_io_ctx(io)->shared->protos[c->proto];
    if (c->state == SY_CONN_OPEN && mp->idle != NULL) { /* its own ping (Pusher's pusher:ping) */
        if (!mp->idle(io, c, now))
            return false;
    } else if (c->state == SY_CONN_OPEN && o->idle_timeout_s > 0) {
        int64_t idle = now - c->last_rx_ms, limit = (int64_t)o->idle_timeout_s * 1000;
        if (idle >= limit && c->ping_sent) {
            sy_stat_inc(&sy_io_ctx(io)->stats.timeouts);
            sy_conn_fail(io, c, 1001, "idle timeout");
            return false;
        }
        if (idle >= limit / 2 && !c->ping_sent) {
            c->ping_sent = true;
            sy_conn_control(io, c, sy_ws_msg(SY_WS_OP_PING, NULL, 0), false);
        }
    }
    if (!c->in_msg && c->mbuf != NULL) {
        sy_free(c->mbuf);
        c->mbuf = NULL;
        c->mlen = c->mcap = 0;
    }
    return true;
}

const sy_wire_t sy_ws_wire = {.name = "websocket",
                              .data = ws_data,
                              .resume = ws_resume,
                              .opened = ws_opened,
                              .idle = ws_idle,
                              .close_msg = sy_ws_msg_close,
                              .close_handshake = true};
