/* sy_tls — see sy_tls.h. */
#define _GNU_SOURCE
#include "tls/sy_tls.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "base/sy_alloc.h"
#include "base/sy_port.h"
#include "base/sy_thread.h"

#define SY_TLS_ERRLEN_SUB 200

/* Our headers, not Node's (Node's include folder has OpenSSL 3.0 headers
 * too): the build must see the private 3.5. */
#if OPENSSL_VERSION_NUMBER < 0x30500000L
#error "sy_tls: OpenSSL 3.5 or newer headers expected (deps/openssl.sh); another OpenSSL's headers came first"
#endif

/* ---- memory: OpenSSL allocates through sy_alloc ------------------------- */

/* The bytes OpenSSL holds are counted by the allocator's usable size of
 * each block (the self-check's proof, and the per-connection figure). */
static atomic_llong tls_bytes;
static atomic_ullong tls_allocs;

static void *tls_malloc(size_t n, const char *file, int line) {
    (void)file;
    (void)line;
    void *p = sy_malloc(n);
    if (p == NULL)
        return NULL;
    atomic_fetch_add_explicit(&tls_bytes, (long long)sy_alloc_usable(p), memory_order_relaxed);
    atomic_fetch_add_explicit(&tls_allocs, 1, memory_order_relaxed);
    return p;
}

static void tls_free(void *ptr, const char *file, int line) {
    (void)file;
    (void)line;
    if (ptr == NULL)
        return;
    atomic_fetch_sub_explicit(&tls_bytes, (long long)sy_alloc_usable(ptr), memory_order_relaxed);
    sy_free(ptr);
}

static void *tls_realloc(void *ptr, size_t n, const char *file, int line) {
    if (ptr == NULL)
        return tls_malloc(n, file, line);
    if (n == 0) {
        tls_free(ptr, file, line);
        return NULL;
    }
    long long before = (long long)sy_alloc_usable(ptr);
    void *p = sy_realloc(ptr, n);
    if (p == NULL)
        return NULL;
    atomic_fetch_add_explicit(&tls_bytes, (long long)sy_alloc_usable(p) - before, memory_order_relaxed);
    atomic_fetch_add_explicit(&tls_allocs, 1, memory_order_relaxed);
    return p;
}

int64_t sy_tls_allocated(void) { return atomic_load_explicit(&tls_bytes, memory_order_relaxed); }
uint64_t sy_tls_allocations(void) { return atomic_load_explicit(&tls_allocs, memory_order_relaxed); }

static sy_once_t init_once = SY_ONCE_INIT;
static int init_rc = -1;
static char init_err[160];

static void global_init(void) {
    if (CRYPTO_set_mem_functions(tls_malloc, tls_realloc, tls_free) != 1) {
        snprintf(init_err, sizeof(init_err),
                 "OpenSSL allocated before symphony could route its memory (CRYPTO_set_mem_functions)");
        return;
    }
    uint64_t opts = OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_LOAD_SSL_STRINGS |
                    OPENSSL_INIT_LOAD_CRYPTO_STRINGS;
    if (OPENSSL_init_ssl(opts, NULL) != 1) {
        snprintf(init_err, sizeof(init_err), "OPENSSL_init_ssl failed");
        return;
    }
    init_rc = 0;
}

sy_err_t sy_tls_global_init(char *err, size_t errlen) {
    if (sy_once(&init_once, global_init) != 0 || init_rc != 0) {
        snprintf(err, errlen, "%s", init_err[0] ? init_err : "TLS initialization failed");
        return EIO;
    }
    return 0;
}

const char *sy_tls_version(void) { return OpenSSL_version(OPENSSL_VERSION); }

void *sy_tls_probe_new(void) {
    BIO *b = BIO_new(BIO_s_mem());
    if (b == NULL)
        ERR_clear_error();
    return b;
}

void sy_tls_probe_free(void *probe) { BIO_free(probe); }

/* ---- contexts ------------------------------------------------------------ */

typedef struct sni_entry {
    char *name;   /* lower case; "*.example.com" for a wildcard */
    SSL_CTX *ctx; /* the certificate for that name (same settings) */
} sni_entry_t;

struct sy_tls_ctx {
    atomic_uint refs;
    SSL_CTX *def;
    sni_entry_t *sni;
    size_t nsni;
};

/* The first queued OpenSSL error as text, after a prefix; the queue is
 * cleared. */
static void set_err(char *err, size_t errlen, const char *what) {
    unsigned long e = ERR_peek_last_error();
    char buf[200] = "";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
}

typedef struct pass_cb {
    const char *pass;
} pass_cb_t;

static int pem_pass(char *buf, int size, int rwflag, void *u) {
    (void)rwflag;
    const pass_cb_t *p = u;
    if (p == NULL || p->pass == NULL || size <= 0)
        return 0;
    size_t n = strlen(p->pass);
    if (n > (size_t)size)
        n = (size_t)size;
    memcpy(buf, p->pass, n);
    return (int)n;
}

static const unsigned char ALPN_HTTP11[] = "http/1.1";

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    /* in: length-prefixed protocol names. Only http/1.1 (a WebSocket upgrade). */
    for (unsigned int i = 0; i < inlen;) {
        unsigned int len = in[i];
        if (i + 1 + len > inlen)
            break;
        if (len == sizeof(ALPN_HTTP11) - 1 && memcmp(in + i + 1, ALPN_HTTP11, len) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)len;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_NOACK; /* no ALPN agreed: carry on without it */
}

static bool name_matches(const char *pattern, const char *name) {
    if (strncmp(pattern, "*.", 2) == 0) {
        const char *dot = strchr(name, '.');
        return dot != NULL && dot != name && sy_strcasecmp(dot + 1, pattern + 2) == 0;
    }
    return sy_strcasecmp(pattern, name) == 0;
}

static int servername_cb(SSL *ssl, int *alert, void *arg) {
    (void)alert;
    const sy_tls_ctx_t *t = arg;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (name == NULL)
        return SSL_TLSEXT_ERR_NOACK;
    for (size_t i = 0; i < t->nsni; i++) {
        if (name_matches(t->sni[i].name, name)) {
            if (SSL_set_SSL_CTX(ssl, t->sni[i].ctx) == NULL)
                return SSL_TLSEXT_ERR_ALERT_FATAL;
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_NOACK; /* the default certificate */
}

/* The certificate chain and private key of c into ctx. */
static bool use_cert(SSL_CTX *ctx, const sy_tls_cert_t *c, char *err, size_t errlen) {
    BIO *bio = NULL;
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    pass_cb_t pass = {.pass = c->passphrase};
    if (c->cert_pem == NULL || c->cert_len == 0 || c->cert_len > INT32_MAX) {
        snprintf(err, errlen, "certificate: empty");
        goto fail;
    }
    bio = BIO_new_mem_buf(c->cert_pem, (int)c->cert_len);
    if (bio == NULL || (leaf = PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL)) == NULL) {
        set_err(err, errlen, "certificate: not a PEM certificate");
        goto fail;
    }
    if (SSL_CTX_use_certificate(ctx, leaf) != 1) {
        set_err(err, errlen, "certificate: not usable");
        goto fail;
    }
    /* The rest of the chain. */
    for (;;) {
        X509 *extra = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (extra == NULL)
            break;
        if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
            X509_free(extra);
            set_err(err, errlen, "certificate chain");
            goto fail;
        }
    }
    ERR_clear_error(); /* the end of the chain reads as an error */
    BIO_free(bio);
    bio = NULL;
    if (c->key_pem == NULL || c->key_len == 0 || c->key_len > INT32_MAX) {
        snprintf(err, errlen, "private key: empty");
        goto fail;
    }
    bio = BIO_new_mem_buf(c->key_pem, (int)c->key_len);
    if (bio == NULL || (key = PEM_read_bio_PrivateKey(bio, NULL, pem_pass, &pass)) == NULL) {
        set_err(err, errlen,
                c->passphrase ? "private key: cannot be read (wrong passphrase?)"
                              : "private key: cannot be read (encrypted without a passphrase, or not PEM)");
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        set_err(err, errlen, "private key: does not match the certificate");
        goto fail;
    }
    BIO_free(bio);
    X509_free(leaf);
    EVP_PKEY_free(key);
    return true;
fail:
    BIO_free(bio);
    X509_free(leaf);
    EVP_PKEY_free(key);
    return false;
}

/* One SSL_CTX for one certificate, with symphony's settings. */
static SSL_CTX *make_ctx(const sy_tls_cert_t *c, X509_STORE *ca, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        set_err(err, errlen, "out of memory (SSL_CTX_new)");
        goto fail;
    }
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        set_err(err, errlen, "TLS 1.2 minimum");
        goto fail;
    }
    SSL_CTX_set_mode(ctx,
                     SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* IGNORE_UNEXPECTED_EOF: a TCP close without close_notify is an end of
     * stream, as over plain TCP (WebSocket framing, not TLS, tells a clean
     * close from a cut one), not a protocol error. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL:!MD5:!SHA1") != 1) {
        set_err(err, errlen, "cipher list");
        goto fail;
    }
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
    /* Session tickets stay on (OpenSSL's default); no stateful cache. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);

    if (!use_cert(ctx, c, err, errlen))
        goto fail;
    if (ca != NULL) {
        if (X509_STORE_up_ref(ca) != 1) {
            set_err(err, errlen, "CA store");
            goto fail;
        }
        SSL_CTX_set_cert_store(ctx, ca);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

static X509_STORE *load_ca(const char *pem, size_t len, char *err, size_t errlen) {
    if (len > INT32_MAX) {
        snprintf(err, errlen, "ca: too large");
        return NULL;
    }
    X509_STORE *store = X509_STORE_new();
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    size_t n = 0;
    if (store == NULL || bio == NULL) {
        set_err(err, errlen, "ca: out of memory");
        goto fail;
    }
    for (;;) {
        X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (x == NULL)
            break;
        int ok = X509_STORE_add_cert(store, x);
        X509_free(x);
        if (ok != 1) {
            set_err(err, errlen, "ca: certificate not added");
            goto fail;
        }
        n++;
    }
    ERR_clear_error();
    if (n == 0) {
        snprintf(err, errlen, "ca: no PEM certificate in it");
        goto fail;
    }
    BIO_free(bio);
    return store;
fail:
    BIO_free(bio);
    X509_STORE_free(store);
    return NULL;
}

sy_tls_ctx_t *sy_tls_ctx_new(const sy_tls_cert_t *certs, size_t ncerts, const char *ca_pem, size_t ca_len, char *err,
                             size_t errlen) {
    if (sy_tls_global_init(err, errlen) != 0)
        return NULL;
    if (certs == NULL || ncerts == 0) {
        snprintf(err, errlen, "no certificate");
        return NULL;
    }
    X509_STORE *ca = NULL;
    if (ca_pem != NULL && ca_len > 0 && (ca = load_ca(ca_pem, ca_len, err, errlen)) == NULL)
        return NULL;
    sy_tls_ctx_t *t = sy_calloc(1, sizeof(*t));
    if (t == NULL || (ncerts > 1 && (t->sni = sy_calloc(ncerts - 1, sizeof(*t->sni))) == NULL)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    atomic_init(&t->refs, 1);
    char sub[SY_TLS_ERRLEN_SUB];
    if ((t->def = make_ctx(&certs[0], ca, sub, sizeof(sub))) == NULL) {
        snprintf(err, errlen, "cert[0]: %s", sub);
        goto fail;
    }
    for (size_t i = 1; i < ncerts; i++) {
        if (certs[i].servername == NULL || certs[i].servername[0] == '\0') {
            snprintf(err, errlen, "cert[%zu]: an SNI certificate needs a servername", i);
            goto fail;
        }
        sni_entry_t *e = &t->sni[t->nsni];
        if ((e->ctx = make_ctx(&certs[i], ca, sub, sizeof(sub))) == NULL) {
            snprintf(err, errlen, "cert[%zu] (%s): %s", i, certs[i].servername, sub);
            goto fail;
        }
        t->nsni++;
        if ((e->name = sy_memdup(certs[i].servername, strlen(certs[i].servername) + 1)) == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    if (t->nsni > 0) {
        /* Every context answers SNI (a connection may switch ctx mid-hello). */
        SSL_CTX_set_tlsext_servername_callback(t->def, servername_cb);
        SSL_CTX_set_tlsext_servername_arg(t->def, t);
    }
    X509_STORE_free(ca); /* the contexts hold their own references */
    return t;
fail:
    X509_STORE_free(ca);
    if (t != NULL) {
        atomic_store(&t->refs, 1);
        sy_tls_ctx_unref(t);
    }
    return NULL;
}

void sy_tls_ctx_ref(sy_tls_ctx_t *t) { atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed); }

void sy_tls_ctx_unref(sy_tls_ctx_t *t) {
    if (t == NULL || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < t->nsni; i++) {
        SSL_CTX_free(t->sni[i].ctx);
        sy_free(t->sni[i].name);
    }
    sy_free(t->sni);
    SSL_CTX_free(t->def);
    sy_free(t);
}

/* ---- connections -------------------------------------------------------- */

/* The connection's context reference lives in the SSL's ex data, so that
 * freeing the SSL drops it. */
static int ctx_index = -1;
static sy_once_t index_once = SY_ONCE_INIT;
static void make_index(void) { ctx_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL); }

sy_tls_conn_t *sy_tls_conn_new(sy_tls_ctx_t *t, int fd) {
    if (sy_once(&index_once, make_index) != 0 || ctx_index < 0)
        return NULL;
    SSL *ssl = SSL_new(t->def);
    if (ssl == NULL) {
        ERR_clear_error();
        return NULL;
    }
    if (SSL_set_fd(ssl, fd) != 1 || SSL_set_ex_data(ssl, ctx_index, t) != 1) {
        ERR_clear_error();
        SSL_free(ssl);
        return NULL;
    }
    sy_tls_ctx_ref(t);
    SSL_set_accept_state(ssl);
    return ssl;
}

void sy_tls_conn_free(sy_tls_conn_t *ssl) {
    if (ssl == NULL)
        return;
    sy_tls_ctx_t *t = ctx_index >= 0 ? SSL_get_ex_data(ssl, ctx_index) : NULL;
    SSL_free(ssl);
    ERR_clear_error();
    sy_tls_ctx_unref(t);
}

static sy_tls_want_t want_of(SSL *ssl, int rc, const char **why) {
    int e = SSL_get_error(ssl, rc);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        return SY_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return SY_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        return SY_TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        /* The socket ended or failed (EOF, a reset): the peer is gone, which
         * is not a TLS protocol error. */
        if (why != NULL)
            *why = errno == 0 ? "connection closed during TLS" : "socket error during TLS";
        ERR_clear_error();
        return SY_TLS_CLOSED;
    default: {
        unsigned long err = ERR_peek_error();
        if (why != NULL) {
            const char *r = ERR_reason_error_string(err);
            *why = r != NULL ? r : "TLS protocol error";
        }
        ERR_clear_error();
        return SY_TLS_FAILED;
    }
    }
}

/* Before each call: SSL_get_error reads the error queue and errno. */
static void clear_errors(void) {
    ERR_clear_error();
    errno = 0;
}

sy_tls_want_t sy_tls_handshake(sy_tls_conn_t *ssl, const char **why) {
    clear_errors();
    int rc = SSL_do_handshake(ssl);
    return rc == 1 ? SY_TLS_DONE : want_of(ssl, rc, why);
}

sy_tls_want_t sy_tls_read(sy_tls_conn_t *ssl, void *buf, size_t len, size_t *n) {
    clear_errors();
    int rc = SSL_read_ex(ssl, buf, len, n);
    return rc == 1 ? SY_TLS_DONE : want_of(ssl, rc, NULL);
}

sy_tls_want_t sy_tls_write(sy_tls_conn_t *ssl, const void *buf, size_t len, size_t *n) {
    clear_errors();
    int rc = SSL_write_ex(ssl, buf, len, n);
    return rc == 1 ? SY_TLS_DONE : want_of(ssl, rc, NULL);
}

void sy_tls_close_notify(sy_tls_conn_t *ssl) {
    clear_errors();
    (void)SSL_shutdown(ssl); /* 0: sent; -1: the socket is full (dropped) */
    ERR_clear_error();
}

#ifdef SY_TESTING
const char *sy_tls_servername(sy_tls_conn_t *ssl) { return SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name); }
#endif

SSL_CTX *sy_tls_client_ctx_new(const char *ca_pem, size_t ca_len, const sy_tls_cert_t *cert, bool verify, char *err,
                               size_t errlen) {
    if (sy_tls_global_init(err, errlen) != 0)
        return NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        set_err(err, errlen, "out of memory (SSL_CTX_new)");
        return NULL;
    }
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        set_err(err, errlen, "TLS 1.2 minimum");
        goto fail;
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    if (cert != NULL && !use_cert(ctx, cert, err, errlen))
        goto fail;
    if (ca_pem != NULL && ca_len > 0) {
        X509_STORE *ca = load_ca(ca_pem, ca_len, err, errlen);
        if (ca == NULL)
            goto fail;
        SSL_CTX_set_cert_store(ctx, ca); /* the context owns it now */
    }
    SSL_CTX_set_verify(ctx, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

void sy_tls_client_ctx_free(SSL_CTX *ctx) { SSL_CTX_free(ctx); }
