/* sy_sse_out — see sy_sse_out.h. */
#include "io/wire/sy_sse_out.h"

#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "proto/sy_sse.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_frame.h"

/* The notices' and the close's event names (docs/sse.md). */
#define NOTICE_EVENT "sy.notice"
#define CLOSE_EVENT "sy.close"
#define REPLY_EVENT "sy.reply"
/* An id this long is made on the stack; longer ones on the heap. */
#define ID_STACK 2048

bool sy_sse_out_reserve(sy_conn_t *c, uint32_t cap) {
    sy_sse_pos_t *p = sy_realloc(c->sse_pos, (size_t)cap * sizeof(*p));
    if (p == NULL)
        return false;
    c->sse_pos = p;
    return true;
}

void sy_sse_out_removed(sy_conn_t *c, uint32_t i) {
    if (c->sse_pos != NULL)
        c->sse_pos[i] = c->sse_pos[c->nsubs - 1];
}

/* The index of t among c's subscriptions; c->nsubs when it is not one. */
static uint32_t sub_of(const sy_conn_t *c, const sy_topic_t *t) {
    uint32_t i = 0;
    while (i < c->nsubs && c->subs[i].topic != t)
        i++;
    return i;
}

void sy_sse_out_position(sy_conn_t *c, const sy_topic_t *t, bool known, uint64_t epoch, uint64_t offset) {
    uint32_t i = sub_of(c, t);
    if (i < c->nsubs && c->sse_pos != NULL)
        c->sse_pos[i] = (sy_sse_pos_t){.epoch = epoch, .offset = offset, .known = known};
}

/* c's id, subscription `first` first: the known positions joined by '&',
 * in *buf (small, or a heap copy the caller frees: *heap). Its length; 0
 * when none is known or out of memory. */
static size_t stream_id(const sy_conn_t *c, uint32_t first, char *small, char **heap, char **buf) {
    *heap = NULL;
    *buf = small;
    size_t cap = ID_STACK, n = 0;
    for (uint32_t k = 0; k < c->nsubs; k++) {
        uint32_t i = k == 0 ? first : (k == first ? 0 : k);
        if (i >= c->nsubs || !c->sse_pos[i].known)
            continue;
        if (n + SY_SSE_ENTRY_MAX + 1 > cap) {
            size_t ncap = cap * 2 + SY_SSE_ENTRY_MAX;
            char *b = sy_malloc(ncap);
            if (b == NULL) {
                sy_free(*heap);
                *heap = NULL;
                return 0;
            }
            memcpy(b, *buf, n);
            sy_free(*heap);
            *heap = *buf = b;
            cap = ncap;
        }
        if (n > 0)
            (*buf)[n++] = '&';
        const sy_topic_t *t = c->subs[i].topic;
        n += sy_sse_id_entry(*buf + n, c->sse_pos[i].epoch, c->sse_pos[i].offset, t->name, t->name_len);
    }
    return n;
}

/* c's id line ("id: ", its known positions joined by '&', subscription
 * `first` first, "\n"), written once into a buffer of its exact length
 * (one per delivery: no copy, no growing). At least one position must be
 * known. NULL when out of memory. */
static sy_refbuf_t *stream_id_line(const sy_conn_t *c, uint32_t first) {
    size_t len = 4; /* "id: " */
    for (uint32_t k = 0; k < c->nsubs; k++) {
        const sy_topic_t *t = c->subs[k].topic;
        if (c->sse_pos[k].known) /* the entry and its '&' (or the last one's "\n") */
            len += sy_sse_id_entry_len(c->sse_pos[k].offset, t->name, t->name_len) + 1;
    }
    sy_refbuf_t *m = sy_refbuf_alloc(0, len, 0);
    if (m == NULL)
        return NULL;
    char *o = (char *)m->data;
    memcpy(o, "id: ", 4);
    size_t at = 4;
    for (uint32_t k = 0; k < c->nsubs; k++) {
        uint32_t i = k == 0 ? first : (k == first ? 0 : k);
        if (!c->sse_pos[i].known)
            continue;
        if (at > 4)
            o[at++] = '&';
        const sy_topic_t *t = c->subs[i].topic;
        at += sy_sse_id_entry(o + at, c->sse_pos[i].epoch, c->sse_pos[i].offset, t->name, t->name_len);
    }
    o[at] = '\n';
    return m;
}

/* Queues m (one reference, the caller's: taken over either way). */
static bool push_own(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m) {
    if (m == NULL) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    if (sy_conn_push(io, c, m, false))
        return true;
    sy_refbuf_release(m);
    return false;
}

/* True when c knows its position in no topic but subscription i. */
static bool alone(const sy_conn_t *c, uint32_t i) {
    for (uint32_t k = 0; k < c->nsubs; k++)
        if (k != i && c->sse_pos[k].known)
            return false;
    return true;
}

bool sy_sse_out_publish(sy_io_t *io, sy_conn_t *c, const sy_cmd_t *cmd, const sy_refbuf_t *v1, sy_sse_shared_t *sh) {
    const sy_topic_t *t = cmd->topic;
    if (!sh->read) { /* once per publish */
        sh->read = true;
        sh->bad = !sy_v1_frame_read(v1, &sh->fi) || sh->fi.kind != 'p';
    }
    if (sh->bad)
        return false;
    const sy_v1_frame_info_t *fi = &sh->fi;
    const uint8_t *body = sy_refbuf_payload(v1) + fi->body;
    size_t blen = sy_refbuf_payload_len(v1) - fi->body;
    /* A symphony.v2 stream's ids are its event's topic's position only (its
     * client keeps the others): the shared event, nothing per stream or per
     * topic it holds (the caller walks this topic's subscribers). */
    uint32_t i = 0;
    if (!sy_conn_v2(c)) {
        if ((i = sub_of(c, t)) == c->nsubs)
            return false;
        if (fi->has_offset)
            c->sse_pos[i] = (sy_sse_pos_t){.epoch = cmd->epoch, .offset = fi->offset, .known = true};
    }
    if (fi->has_offset && (sy_conn_v2(c) || alone(c, i))) {
        if (sh->alone == NULL) {
            char id[SY_SSE_ENTRY_MAX];
            size_t n = sy_sse_id_entry(id, cmd->epoch, fi->offset, t->name, t->name_len);
            if ((sh->alone = sy_sse_event(id, n, t->name, t->name_len, body, blen, fi->binary)) == NULL) {
                sy_conn_fail_oom(io, c);
                return false;
            }
        }
        /* Never conflated: a stream over maxBackpressure is closed (sy_conn_push). */
        if (!sy_conn_push(io, c, sh->alone, false))
            return false;
        sh->queued_alone++;
        return true;
    }
    if (sh->rest == NULL && (sh->rest = sy_sse_event(NULL, 0, t->name, t->name_len, body, blen, fi->binary)) == NULL) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    if (fi->has_offset && !push_own(io, c, stream_id_line(c, i)))
        return false; /* (without an offset, the stream's last id still says where it is) */
    if (!sy_conn_push(io, c, sh->rest, false))
        return false;
    sh->queued_rest++;
    return true;
}

void sy_sse_shared_done(sy_sse_shared_t *sh) {
    if (sh->queued_alone > 0)
        sy_refbuf_ref(sh->alone, sh->queued_alone);
    if (sh->queued_rest > 0)
        sy_refbuf_ref(sh->rest, sh->queued_rest);
    sy_refbuf_release(sh->alone);
    sy_refbuf_release(sh->rest);
    *sh = (sy_sse_shared_t){0};
}

/* An id entry at most: "sy.since=", epoch, ':', 20 digits, ':', the name encoded, '&'. */
static size_t entry_max(const sy_topic_t *t) { return 9 + 16 + 1 + 20 + 1 + 3 * t->name_len + 1; }

size_t sy_sse_out_replay_cost(const sy_conn_t *c, const sy_topic_t *t, sy_refbuf_t *const *frames, size_t n) {
    size_t id = sy_conn_v2(c) ? entry_max(t) : 0;
    for (uint32_t k = 0; !sy_conn_v2(c) && k < c->nsubs; k++)
        id += entry_max(c->subs[k].topic);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        sy_v1_frame_info_t fi;
        if (!sy_v1_frame_read(frames[i], &fi))
            continue; /* not sent either */
        total += sy_sse_event_len(id, t->name_len, sy_refbuf_payload(frames[i]) + fi.body,
                                  sy_refbuf_payload_len(frames[i]) - fi.body, fi.binary);
    }
    return total;
}

bool sy_sse_out_push(sy_io_t *io, sy_conn_t *c, const sy_refbuf_t *m, bool notice_id) {
    const uint8_t *p = sy_refbuf_payload(m);
    size_t plen = sy_refbuf_payload_len(m);
    if (m->hlen > 0 && plen > 0 && p[0] == 'r') {
        /* A symphony.v2 reply ("r<rid>\n" and its value): "sy.reply", its
         * data the rest ("<rid>\n" and the value), no id. */
        bool binary = (m->data[0] & 0x0fu) == SY_WS_OP_BINARY;
        return push_own(io, c, sy_sse_event(NULL, 0, REPLY_EVENT, sizeof(REPLY_EVENT) - 1, p + 1, plen - 1, binary));
    }
    sy_v1_frame_info_t fi;
    if (!sy_v1_frame_read(m, &fi))
        return false;
    const uint8_t *body = sy_refbuf_payload(m) + fi.body;
    size_t blen = sy_refbuf_payload_len(m) - fi.body;
    const char *name = NULL;
    size_t name_len = 0;
    uint32_t first = 0;
    bool ids = true;
    switch (fi.kind) {
    case 'p': {
        uint32_t i = 0;
        while (i < c->nsubs && c->subs[i].topic->id != fi.id)
            i++;
        if (i == c->nsubs)
            return false; /* no longer subscribed */
        name = c->subs[i].topic->name;
        name_len = c->subs[i].topic->name_len;
        if (fi.has_offset && c->sse_pos[i].known)
            c->sse_pos[i].offset = fi.offset;
        first = i;
        break;
    }
    case 'c':
        name = NOTICE_EVENT;
        name_len = sizeof(NOTICE_EVENT) - 1;
        ids = notice_id;
        break;
    default: /* 'd': a direct message, a "message" event; the id stays */
        ids = false;
        break;
    }
    char small[ID_STACK > SY_SSE_ENTRY_MAX ? ID_STACK : SY_SSE_ENTRY_MAX], *heap = NULL, *id = small;
    size_t n = 0;
    if (sy_conn_v2(c)) /* a publish's own position only; a notice none (its client keeps them) */
        n = fi.kind == 'p' && fi.has_offset && c->sse_pos[first].known
                ? sy_sse_id_entry(small, c->sse_pos[first].epoch, fi.offset, name, name_len)
                : 0;
    else if (ids)
        n = stream_id(c, first, small, &heap, &id);
    sy_refbuf_t *e = sy_sse_event(id, n, name, name_len, body, blen, fi.binary);
    sy_free(heap);
    return push_own(io, c, e);
}

sy_refbuf_t *sy_sse_out_close(unsigned code, const char *reason, size_t len) {
    char buf[64 + 6 * 255];
    if (len > 255)
        len = 255;
    int n = snprintf(buf, sizeof(buf), "{\"code\":%u,\"reason\":\"", (unsigned)code);
    if (n < 0)
        return NULL;
    size_t o = (size_t)n + sy_v1_json_string(buf + n, reason != NULL ? reason : "", reason != NULL ? len : 0);
    buf[o++] = '"';
    buf[o++] = '}';
    return sy_sse_event(NULL, 0, CLOSE_EVENT, sizeof(CLOSE_EVENT) - 1, buf, o, false);
}

/* ---- the wire ------------------------------------------------------------------ */

uint32_t sy_sse_heartbeat_ms(const sy_io_opts_t *o) {
    return o->idle_timeout_s > 0 ? o->idle_timeout_s * 500u : SY_SSE_HEARTBEAT_MS;
}

/* A stream's client has nothing to say on it (its messages are POSTs):
 * what it sends after its GET is read and dropped. */
static void sse_data(sy_io_t *io, sy_conn_t *c, uint8_t *p, size_t n) {
    (void)io;
    (void)c;
    (void)p;
    (void)n;
}

/* A stream reads nothing after its request: the bytes that followed it go. */
static void sse_opened(sy_io_t *io, sy_conn_t *c) {
    sy_stat_inc(&sy_io_ctx(io)->stats.sse_connections);
    c->rlen = 0;
    if (c->rcap > 4096) {
        sy_free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
    }
}

static void sse_gone(sy_io_t *io, sy_conn_t *c) {
    (void)c;
    sy_stat_dec(&sy_io_ctx(io)->stats.sse_connections);
}

/* A stream hears nothing from its client: a comment now and then keeps
 * proxies from closing it as idle (and finds a dead peer by the write
 * failing). Every sy_sse_heartbeat_ms; last_rx_ms is when the last went. */
static bool sse_idle(sy_io_t *io, sy_conn_t *c, int64_t now) {
    if (c->state != SY_CONN_OPEN)
        return true;
    int64_t every = sy_sse_heartbeat_ms(&sy_io_ctx(io)->shared->opts);
    if (now - c->last_rx_ms < every)
        return true;
    c->last_rx_ms = now;
    if (sy_outq_bytes(&c->outq) > 0)
        return true; /* something is on its way already */
    sy_conn_control(io, c, sy_sse_comment("", 0), false);
    return true;
}

const sy_wire_t sy_sse_wire = {.name = "event stream",
                               .data = sse_data,
                               .opened = sse_opened,
                               .idle = sse_idle,
                               .close_msg = sy_sse_out_close,
                               .gone = sse_gone,
                               .no_gaps = true,
                               .open_flags = SY_EV_OPEN_SSE};
