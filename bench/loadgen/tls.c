/*
 * wss:// for loadgen: a client TLS session per connection on the private
 * OpenSSL (deps/openssl.sh; libc malloc, this is not the addon). No
 * certificate check: every server is on loopback and ours. See lg.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "lg.h"

bool lg_tls_init(lg_run_t *r)
{
    if (!r->opts->tls)
        return true;
    if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
        return false;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        SSL_CTX_free(ctx);
        return false;
    }
    static const unsigned char alpn[] = "\x08http/1.1";
    if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0) {
        SSL_CTX_free(ctx);
        return false;
    }
    /* X25519 only, as Node's OpenSSL 3.0 (the peer arm) would agree:
     * OpenSSL 3.5 would otherwise offer and get the larger, slower hybrid
     * X25519MLKEM768 from symphony (browsers offer it too; not measured). */
    if (SSL_CTX_set1_groups_list(ctx, "X25519:P-256") != 1) {
        SSL_CTX_free(ctx);
        return false;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); /* every handshake a full one */
    r->ssl_ctx = ctx;
    return true;
}

void lg_tls_free(lg_run_t *r)
{
    SSL_CTX_free(r->ssl_ctx);
    r->ssl_ctx = NULL;
}

bool lg_tls_new(lg_run_t *r, lg_conn_t *c)
{
    SSL *ssl = SSL_new(r->ssl_ctx);
    if (ssl == NULL || SSL_set_fd(ssl, c->fd) != 1 || SSL_set_tlsext_host_name(ssl, "localhost") != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return false;
    }
    SSL_set_connect_state(ssl);
    c->ssl = ssl;
    return true;
}

void lg_tls_release(lg_conn_t *c)
{
    SSL_free(c->ssl); /* no close_notify: the WebSocket close came first */
    c->ssl = NULL;
}

/* 1 done, 0 wants to read, 2 wants to write, -1 failed. */
int lg_tls_handshake(lg_run_t *r, lg_conn_t *c)
{
    int64_t t0 = lg_now_ns();
    ERR_clear_error();
    int rc = SSL_do_handshake(c->ssl);
    r->tls_ns += lg_now_ns() - t0;
    if (rc == 1) {
        r->tls_handshakes++;
        return 1;
    }
    switch (SSL_get_error(c->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        return 0;
    case SSL_ERROR_WANT_WRITE:
        return 2;
    default:
        ERR_clear_error();
        return -1;
    }
}

/* Like send()/recv(): -1 with errno EAGAIN when TLS must wait, ECONNRESET
 * on a TLS error; recv returns 0 at the end of the stream. */
static ssize_t io_error(int e)
{
    ERR_clear_error();
    errno = e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? EAGAIN : ECONNRESET;
    return -1;
}

ssize_t lg_io_send(lg_conn_t *c, const void *p, size_t n)
{
    if (c->ssl == NULL)
        return send(c->fd, p, n, MSG_NOSIGNAL);
    size_t done = 0;
    ERR_clear_error();
    if (SSL_write_ex(c->ssl, p, n, &done) == 1)
        return (ssize_t)done;
    return io_error(SSL_get_error(c->ssl, 0));
}

ssize_t lg_io_recv(lg_conn_t *c, void *p, size_t n)
{
    if (c->ssl == NULL)
        return recv(c->fd, p, n, 0);
    size_t got = 0;
    ERR_clear_error();
    if (SSL_read_ex(c->ssl, p, n, &got) == 1)
        return (ssize_t)got;
    int e = SSL_get_error(c->ssl, 0);
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    if (e == SSL_ERROR_SYSCALL && errno == 0)
        return 0; /* EOF without close_notify */
    return io_error(e);
}
