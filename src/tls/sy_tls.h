/*
 * sy_tls — TLS for the IO threads, on a private static OpenSSL 3.5 whose
 * memory comes from symphony's allocator (sy_alloc), never from Node's.
 *
 * Built into the addon with SY_WITH_TLS (binding.gyp, given deps/openssl.sh's
 * OpenSSL); the TLS transport (sy_stream_tls.h) drives a connection's
 * handshake and I/O through it, and holds the server's current context
 * (sy_tls_source_t, set by sy_server_set_tls).
 *
 * Model:
 *   - sy_tls_global_init() once per process, before any other OpenSSL call:
 *     OpenSSL's allocation hooks over sy_alloc, init without loading a
 *     configuration file and without atexit handlers.
 *   - A context (sy_tls_ctx_t) is immutable once made and refcounted: a
 *     default certificate, any number of SNI certificates, optional client
 *     CA. Reloading = making a new context and swapping the server's pointer;
 *     connections keep the context they started with (their SSL holds it).
 *   - Per connection one SSL on the socket (SSL_set_fd). The IO thread drives
 *     the handshake and reads/writes; every call returns what to wait for.
 *
 * Threads: contexts may be made on any thread and used from several IO
 * threads at once (OpenSSL's SSL_CTX is thread-safe for that; the reference
 * count is atomic, so ref and unref from any thread); a connection's SSL
 * only by the thread that owns the connection. sy_tls_global_init from any
 * thread (sy_once: concurrent calls wait for the first), before any
 * other call of this module (the binding makes it before its first TLS use).
 *
 * Ownership: the PEM buffers and sy_tls_cert_t are read during the call
 * only. sy_tls_ctx_new returns a context with one reference, the caller's,
 * given back with sy_tls_ctx_unref; sy_tls_conn_new takes a reference of
 * its own (dropped by sy_tls_conn_free) and not the fd, which stays the
 * caller's. sy_tls_client_ctx_new's SSL_CTX is the caller's, freed with
 * sy_tls_client_ctx_free; a probe with sy_tls_probe_free. The texts of
 * sy_tls_version and a handshake's why are static.
 *
 * Errors: sy_tls_global_init returns 0 or EIO with a message in err; the
 * constructors return NULL (out of memory; with a message in err for the
 * contexts); the steps return sy_tls_want_t (base/sy_errors.h rule 4):
 * SY_TLS_CLOSED and SY_TLS_FAILED end the connection.
 */
#ifndef SY_TLS_H
#define SY_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/sy_errors.h"

/* 0, or EIO with a message in err. Idempotent; must run before any other
 * OpenSSL call in the process (the allocation hooks cannot be set later). */
sy_err_t sy_tls_global_init(char *err, size_t errlen);

/* Bytes OpenSSL holds through sy_alloc now, and allocations it ever made
 * there: proof that its memory is ours (the self-check). */
int64_t sy_tls_allocated(void);
uint64_t sy_tls_allocations(void);

/* One certificate: PEM chain (leaf first) and its private key (PEM,
 * possibly encrypted with passphrase). servername: the SNI name it serves
 * (NULL for the default). Buffers are read during the call only. */
typedef struct sy_tls_cert {
    const char *cert_pem;
    size_t cert_len;
    const char *key_pem;
    size_t key_len;
    const char *passphrase; /* NUL-terminated, or NULL */
    const char *servername; /* NUL-terminated, or NULL */
} sy_tls_cert_t;

typedef struct sy_tls_ctx sy_tls_ctx_t;

/* The self-check's probe: an object OpenSSL allocates (a memory BIO), to
 * ask the allocator who owns it. NULL when out of memory. */
void *sy_tls_probe_new(void);
void sy_tls_probe_free(void *probe);

/* A server context: certs[0] is the default (its servername ignored), the
 * others are chosen by SNI (exact, case-insensitive; "*.example.com" matches
 * one label). ca_pem (may be NULL): CAs to ask clients for certificates.
 * TLS 1.2 minimum, 1.3 preferred, ALPN http/1.1, session tickets on,
 * SSL_MODE_RELEASE_BUFFERS. NULL on failure, with a specific message in err
 * (bad certificate, key that does not match, wrong passphrase ...). */
sy_tls_ctx_t *sy_tls_ctx_new(const sy_tls_cert_t *certs, size_t ncerts, const char *ca_pem, size_t ca_len, char *err,
                             size_t errlen);

/* A client context (the bus' rediss://, src/tls/sy_bus_tls.c): TLS 1.2
 * minimum; ca_pem (may be NULL): the CAs that may sign the server's
 * certificate; cert (may be NULL): a client certificate and key for
 * servers that ask (Redis' tls-auth-clients); verify: check the server's
 * certificate (its name is checked per connection). NULL on failure, with
 * a specific message in err. */
struct ssl_ctx_st;
struct ssl_ctx_st *sy_tls_client_ctx_new(const char *ca_pem, size_t ca_len, const sy_tls_cert_t *cert, bool verify,
                                         char *err, size_t errlen);
void sy_tls_client_ctx_free(struct ssl_ctx_st *ctx);
void sy_tls_ctx_ref(sy_tls_ctx_t *ctx);
void sy_tls_ctx_unref(sy_tls_ctx_t *ctx);

typedef struct ssl_st sy_tls_conn_t; /* OpenSSL's SSL */

/* What a call needs next. */
typedef enum sy_tls_want {
    SY_TLS_DONE = 0,       /* finished (handshake) or made progress (io) */
    SY_TLS_WANT_READ = 1,  /* call again when the socket is readable */
    SY_TLS_WANT_WRITE = 2, /* call again when the socket is writable */
    SY_TLS_CLOSED = 3,     /* the peer closed (close_notify, EOF) or the socket failed */
    SY_TLS_FAILED = 4,     /* TLS protocol error: close the socket */
} sy_tls_want_t;

/* A server-side connection on fd (non-blocking, owned by the caller). NULL
 * when out of memory. It holds a reference to ctx until freed. */
sy_tls_conn_t *sy_tls_conn_new(sy_tls_ctx_t *ctx, int fd);
void sy_tls_conn_free(sy_tls_conn_t *c);

/* Drives the handshake. On SY_TLS_FAILED, why (a short static text). */
sy_tls_want_t sy_tls_handshake(sy_tls_conn_t *c, const char **why);
/* Decrypted bytes into buf; *n set on SY_TLS_DONE. */
sy_tls_want_t sy_tls_read(sy_tls_conn_t *c, void *buf, size_t len, size_t *n);
/* Encrypts and writes up to len bytes; *n set on SY_TLS_DONE (may be < len:
 * the rest waits for SY_TLS_WANT_WRITE). */
sy_tls_want_t sy_tls_write(sy_tls_conn_t *c, const void *buf, size_t len, size_t *n);
/* Sends a close_notify alert, best effort (nothing is waited for). */
void sy_tls_close_notify(sy_tls_conn_t *c);
#ifdef SY_TESTING
/* The SNI name the client asked for, or NULL (built with SY_TESTING only). */
const char *sy_tls_servername(sy_tls_conn_t *c);
#endif

/* OpenSSL's version text, e.g. "OpenSSL 3.5.7 ..." */
const char *sy_tls_version(void);

#endif
