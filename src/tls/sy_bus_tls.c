#define _GNU_SOURCE
#include "tls/sy_bus_tls.h"

#include <errno.h>

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>

#include "base/sy_alloc.h"
#include "net/sy_sock.h"

struct sy_bus_tls {
    SSL_CTX *ctx;
    bool verify;
    char *servername; /* NULL: each connection's host */
};

sy_bus_tls_t *sy_bus_tls_new(const char *ca_pem, size_t ca_len, const sy_tls_cert_t *cert, const char *servername,
                             bool verify, char *err, size_t errlen) {
    sy_bus_tls_t *t = sy_calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->verify = verify;
    if (servername != NULL && (t->servername = sy_memdup(servername, strlen(servername) + 1)) == NULL) {
        snprintf(err, errlen, "out of memory");
        sy_free(t);
        return NULL;
    }
    if ((t->ctx = sy_tls_client_ctx_new(ca_pem, ca_len, cert, verify, err, errlen)) == NULL) {
        sy_free(t->servername);
        sy_free(t);
        return NULL;
    }
    return t;
}

void sy_bus_tls_free(void *p) {
    sy_bus_tls_t *t = p;
    if (t == NULL)
        return;
    sy_tls_client_ctx_free(t->ctx);
    sy_free(t->servername);
    sy_free(t);
}

static bool is_ip(const char *s) {
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

sy_err_t sy_bus_tls_attach(void *p, void *rc, const char *host, char *err, size_t errlen) {
    sy_bus_tls_t *t = p;
    redisContext *c = rc;
    const char *name = t->servername != NULL ? t->servername : host;
    ERR_clear_error();
    SSL *ssl = SSL_new(t->ctx);
    if (ssl == NULL) {
        snprintf(err, errlen, "TLS: out of memory (SSL_new)");
        return ENOMEM;
    }
    bool ok = true;
    if (!is_ip(name))
        ok = SSL_set_tlsext_host_name(ssl, name) == 1;
    if (ok && t->verify) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        ok = is_ip(name) ? X509_VERIFY_PARAM_set1_ip_asc(vp, name) == 1 : SSL_set1_host(ssl, name) == 1;
    }
    if (!ok) {
        snprintf(err, errlen, "TLS: cannot check the name '%s'", name);
        SSL_free(ssl);
        return EINVAL;
    }
    if (redisInitiateSSL(c, ssl) != REDIS_OK) {
        snprintf(err, errlen, "TLS: %s", c->errstr[0] ? c->errstr : "cannot start");
        SSL_free(ssl); /* not taken on failure */
        return EIO;
    }
    return 0;
}

const char *sy_bus_tls_error(char *buf, size_t len) {
    unsigned long e = ERR_peek_last_error();
    if (e == 0)
        return NULL;
    const char *reason = ERR_reason_error_string(e);
    snprintf(buf, len, "TLS: %s", reason != NULL ? reason : "handshake failed");
    ERR_clear_error();
    return buf;
}
