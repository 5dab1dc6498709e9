/* sy_reply — see sy_reply.h. */
#include "io/wire/sy_reply.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "proto/sy_handshake.h"

/* A kept connection with nothing more to read keeps a receive buffer up to
 * this big for its next request (a large body's is given back). */
#define SY_REPLY_KEPT_RBUF 4096

void sy_reply(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response, bool refusal) {
    if (refusal)
        sy_stat_inc(&sy_io_ctx(io)->stats.handshake_rejects);
    if (response == NULL || sy_outq_push(&c->outq, response) != 0) {
        sy_refbuf_release(response);
        sy_conn_destroy(io, c, 1006);
        return;
    }
    sy_conn_finish(io, c);
}

/* The status line and headers of an error response, at most. */
#define SY_REPLY_ERROR_HEAD 512

void sy_reply_error(sy_io_t *io, sy_conn_t *c, int status, const char *why) {
    char stack[SY_REPLY_ERROR_HEAD];
    size_t why_len = why != NULL ? strlen(why) : 0;
    char *buf = stack;
    size_t n = sy_http_error_response_msg(stack, sizeof(stack), status, why, why_len, NULL, 0);
    /* A message longer than the stack's room (Pusher's "Invalid signature"
     * quotes the string to sign) gets a buffer its size: said whole, never
     * left out. */
    if (n == 0 && why_len > 0 && (buf = sy_malloc(SY_REPLY_ERROR_HEAD + why_len + 1)) != NULL)
        n = sy_http_error_response_msg(buf, SY_REPLY_ERROR_HEAD + why_len + 1, status, why, why_len, NULL, 0);
    if (buf == NULL)
        buf = stack;
    if (n == 0)
        n = sy_http_error_response(buf, sizeof(stack), status, NULL, 0);
    sy_refbuf_t *m = n > 0 ? sy_refbuf_raw(buf, n) : NULL;
    if (buf != stack)
        sy_free(buf);
    sy_reply(io, c, m, true);
}

/* The kept form of response (the caller's alone) for a client of HTTP/1.x
 * (http10: 1.0), or NULL (response then still the caller's). */
static sy_refbuf_t *kept_form(sy_refbuf_t *response, bool http10) {
    char *p = (char *)response->data;
    if (!http10) { /* shorter: in place, nobody else sees it yet */
        size_t n = sy_http_keep_alive_response(p, response->len, false, p, response->len);
        if (n == 0)
            return NULL;
        response->len = n;
        return response;
    }
    sy_refbuf_t *m = sy_refbuf_alloc(0, response->len + 32, SY_REFBUF_Z_NONE);
    size_t n = m != NULL ? sy_http_keep_alive_response(p, response->len, true, (char *)m->data, m->len) : 0;
    if (n == 0) {
        sy_refbuf_release(m);
        return NULL;
    }
    m->len = n;
    sy_refbuf_release(response);
    return m;
}

/* m, a kept answer, goes out; the request's used bytes are dropped from
 * c->rbuf and c reads the next request head. */
static void kept(sy_io_t *io, sy_conn_t *c, size_t used, sy_refbuf_t *m) {
    if (!sy_conn_answer(io, c, m)) {
        sy_conn_destroy(io, c, 1006);
        return;
    }
    sy_stat_inc(&sy_io_ctx(io)->stats.kept_answers);
    memmove(c->rbuf, c->rbuf + used, c->rlen - used);
    c->rlen -= used;
    if (c->rlen == 0 && c->rcap > SY_REPLY_KEPT_RBUF) {
        sy_free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
    }
    if (!c->http_kept) {
        c->http_kept = 1;
        sy_stat_inc(&sy_io_ctx(io)->stats.keep_alive);
    }
    /* The next request: a deadline of its own (the head's, from now). */
    c->deadline_ms = 0;
    sy_conn_enter(io, c, SY_CONN_HTTP);
}

void sy_reply_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, size_t used, sy_refbuf_t *response) {
    sy_refbuf_t *m = NULL;
    if (response != NULL && used <= c->rlen && c->state == SY_CONN_HTTP && sy_http_request_keeps_alive(req))
        m = kept_form(response, req->minor_version == 0);
    if (m == NULL)
        sy_reply(io, c, response, false);
    else
        kept(io, c, used, m);
}

void sy_reply_later(sy_io_t *io, sy_conn_t *c, bool keep, sy_refbuf_t *response, bool refusal) {
    sy_refbuf_t *m = NULL;
    if (response != NULL && keep && !refusal && c->rlen == 0 && c->state == SY_CONN_UPGRADING)
        m = kept_form(response, false);
    if (m == NULL) {
        sy_reply(io, c, response, refusal);
        return;
    }
    sy_conn_enter(io, c, SY_CONN_HTTP); /* an answer is queued in HTTP only */
    kept(io, c, 0, m);
}

void sy_reply_next(sy_io_t *io, sy_conn_t *c) {
    if (c->http_kept && c->state == SY_CONN_HTTP) {
        c->http_kept = 0;
        sy_stat_dec(&sy_io_ctx(io)->stats.keep_alive);
    }
}

void sy_reply_closing(sy_io_t *io, sy_conn_t *c) {
    if (!c->opened && c->http_kept) {
        c->http_kept = 0;
        sy_stat_dec(&sy_io_ctx(io)->stats.keep_alive);
    }
}
