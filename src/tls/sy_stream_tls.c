/* sy_stream_tls — see sy_stream_tls.h. */
#include "tls/sy_stream_tls.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"

typedef struct tls_stream {
    sy_tls_conn_t *ssl;
    uint8_t *held; /* a record's plaintext OpenSSL took but could not write yet;
                      its length is the stream's `held` */
} tls_stream_t;

int sy_tls_source_init(sy_tls_source_t *src) {
    src->ctx = NULL;
    return sy_mutex_init(&src->lock);
}

void sy_tls_source_set(sy_tls_source_t *src, sy_tls_ctx_t *ctx) {
    sy_tls_ctx_t *old;
    sy_mutex_lock(&src->lock);
    old = src->ctx;
    src->ctx = ctx;
    sy_mutex_unlock(&src->lock);
    sy_tls_ctx_unref(old);
}

void sy_tls_source_destroy(sy_tls_source_t *src) {
    sy_tls_ctx_unref(src->ctx);
    src->ctx = NULL;
    sy_mutex_destroy(&src->lock);
}

static int tls_open(sy_stream_t *s, void *arg) {
    sy_tls_source_t *src = arg;
    sy_tls_ctx_t *ctx;
    sy_mutex_lock(&src->lock);
    ctx = src->ctx;
    if (ctx != NULL)
        sy_tls_ctx_ref(ctx);
    sy_mutex_unlock(&src->lock);
    if (ctx == NULL)
        return EINVAL;
    tls_stream_t *t = sy_calloc(1, sizeof(*t));
    if (t != NULL && (t->ssl = sy_tls_conn_new(ctx, s->fd)) == NULL) {
        sy_free(t);
        t = NULL;
    }
    sy_tls_ctx_unref(ctx); /* the connection holds its own */
    if (t == NULL)
        return ENOMEM;
    s->impl = t;
    return 0;
}

static sy_stream_rc_t from_want(sy_tls_want_t w) {
    switch (w) {
    case SY_TLS_DONE:
        return SY_STREAM_OK;
    case SY_TLS_WANT_READ:
        return SY_STREAM_WANT_READ;
    case SY_TLS_WANT_WRITE:
        return SY_STREAM_WANT_WRITE;
    case SY_TLS_CLOSED:
        return SY_STREAM_END;
    default:
        return SY_STREAM_BAD;
    }
}

static sy_stream_rc_t tls_handshake(sy_stream_t *s) {
    tls_stream_t *t = s->impl;
    sy_stream_rc_t rc = from_want(sy_tls_handshake(t->ssl, NULL));
    return rc == SY_STREAM_END ? SY_STREAM_BAD : rc; /* closed midway: a failed handshake */
}

/* Whole records up to the buffer: a record's plaintext is never left half
 * read in OpenSSL, so the level-triggered poller still sees whatever waits. */
static sy_stream_rc_t tls_read(sy_stream_t *s, uint8_t *buf, size_t cap, size_t *n) {
    tls_stream_t *t = s->impl;
    size_t got = 0;
    sy_stream_rc_t rc = SY_STREAM_OK;
    while (cap - got >= SY_STREAM_SCRATCH) {
        size_t k = 0;
        rc = from_want(sy_tls_read(t->ssl, buf + got, cap - got, &k));
        if (rc != SY_STREAM_OK)
            break;
        got += k;
    }
    *n = got;
    /* WANT_WRITE: a post-handshake message (a key update) must be answered;
     * OpenSSL sends it with the next write or read. */
    if (rc == SY_STREAM_WANT_READ || rc == SY_STREAM_WANT_WRITE)
        return got > 0 ? SY_STREAM_OK : SY_STREAM_WANT_READ;
    return rc;
}

/* Offers OpenSSL the held record first (it must see the same bytes again),
 * then records of up to 16 KiB gathered from the queue (a large entry goes
 * without the copy). A record OpenSSL took but could not write moves out of
 * the queue into t->held (the queue may drop entries meanwhile, for a slow
 * consumer or a close). */
static sy_stream_rc_t tls_flush(sy_stream_t *s, sy_outq_t *q, uint8_t **scratch, size_t *written) {
    tls_stream_t *t = s->impl;
    *written = 0;
    for (;;) {
        size_t n = 0;
        sy_tls_want_t w;
        if (s->held > 0) {
            w = sy_tls_write(t->ssl, t->held, s->held, &n);
            if (w == SY_TLS_DONE) {
                *written += n;
                s->held -= (uint32_t)n;
                if (s->held > 0) {
                    memmove(t->held, t->held + n, s->held);
                } else {
                    sy_free(t->held);
                    t->held = NULL;
                }
                continue;
            }
        } else {
            if (sy_outq_empty(q))
                return SY_STREAM_OK;
            size_t len;
            const uint8_t *p = sy_outq_head(q, &len);
            if (len < SY_STREAM_SCRATCH && q->len > 1) {
                if (*scratch == NULL && (*scratch = sy_malloc(SY_STREAM_SCRATCH)) == NULL)
                    return SY_STREAM_ERROR;
                len = sy_outq_copy(q, *scratch, SY_STREAM_SCRATCH);
                p = *scratch;
            } else if (len > SY_STREAM_SCRATCH) {
                len = SY_STREAM_SCRATCH;
            }
            w = sy_tls_write(t->ssl, p, len, &n);
            if (w == SY_TLS_DONE) {
                *written += n;
                sy_outq_consume(q, n);
                continue;
            }
            if (w == SY_TLS_WANT_WRITE || w == SY_TLS_WANT_READ) {
                if ((t->held = sy_memdup(p, len)) == NULL)
                    return SY_STREAM_ERROR;
                s->held = (uint32_t)len;
                sy_outq_consume(q, len);
            }
        }
        if (w == SY_TLS_WANT_WRITE || w == SY_TLS_WANT_READ)
            return SY_STREAM_WANT_WRITE;
        return SY_STREAM_ERROR;
    }
}

static void tls_close_notify(sy_stream_t *s) {
    tls_stream_t *t = s->impl;
    if (t != NULL && s->fd >= 0)
        sy_tls_close_notify(t->ssl);
}

static void tls_free(sy_stream_t *s) {
    tls_stream_t *t = s->impl;
    if (t == NULL)
        return;
    sy_tls_conn_free(t->ssl);
    sy_free(t->held);
    sy_free(t);
    s->impl = NULL;
    s->held = 0;
}

const sy_stream_ops_t sy_stream_tls_ops = {
    .name = "tls",
    .handshake_first = true,
    .open = tls_open,
    .handshake = tls_handshake,
    .read = tls_read,
    .flush = tls_flush,
    .close_notify = tls_close_notify,
    .free = tls_free,
};
