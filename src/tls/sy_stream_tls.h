/*
 * sy_stream_tls — the TLS transport of sy_stream (src/sy_stream.h) over
 * sy_tls. Built with SY_WITH_TLS only; sy_server chooses it for a server
 * with certificates.
 *
 * A server's certificates are a sy_tls_source_t: the context new
 * handshakes use, swapped whole by a reload under its lock (each connection
 * keeps a reference to the context it began with). sy_stream_tls_ops's open
 * takes a sy_tls_source_t * as its argument.
 *
 * Threads: sy_tls_source_* from any thread (set and the transport's open
 * take the source's lock; init and destroy while no other thread uses it:
 * the server does them on the owner's thread); the stream functions from
 * the IO thread that owns the connection.
 *
 * Ownership: the source holds one reference to its context:
 * sy_tls_source_set takes over the caller's and drops the previous one,
 * sy_tls_source_destroy drops the last. A connection's open takes its own
 * reference (through sy_tls_conn_new), kept until the stream is freed.
 *
 * Errors: sy_tls_source_init returns 0 or an errno value (sy_mutex_init's, as an
 * int); the stream functions report as net/sy_stream.h says (open: EINVAL
 * when the source has no context, ENOMEM).
 */
#ifndef SY_STREAM_TLS_H
#define SY_STREAM_TLS_H

#include "base/sy_thread.h"

#include "net/sy_stream.h"
#include "tls/sy_tls.h"

typedef struct sy_tls_source {
    sy_mutex_t lock;
    sy_tls_ctx_t *ctx; /* one reference; NULL until set */
} sy_tls_source_t;

/* 0 or an errno value. */
int sy_tls_source_init(sy_tls_source_t *src);
/* Takes over the caller's reference on ctx and drops the previous one's. */
void sy_tls_source_set(sy_tls_source_t *src, sy_tls_ctx_t *ctx);
void sy_tls_source_destroy(sy_tls_source_t *src);

extern const sy_stream_ops_t sy_stream_tls_ops;

#endif
