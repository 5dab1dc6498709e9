/* test_tls — src/tls/sy_tls on the private OpenSSL 3.5 (deps/openssl.sh):
 * its memory goes through sy_alloc; certificates, keys and passphrases are
 * checked with specific errors; SNI picks the certificate; a handshake over
 * a socket pair agrees TLS 1.3 and http/1.1, carries data both ways and ends
 * cleanly; plain HTTP, an old protocol version and garbage are refused; a
 * connection and a context give back everything they took.
 *
 *   make -C __test__/c tls OPENSSL_DIR=$(deps/openssl.sh)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "../check.h"
#include "tls/sy_tls.h"

typedef struct pem {
    char cert[4096];
    char key[4096];
    char enc_key[4096]; /* the same key, encrypted with "secret" */
} pem_t;

static void bio_string(BIO *b, char *out, size_t cap) {
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    size_t len = n > 0 && (size_t)n < cap ? (size_t)n : 0;
    memcpy(out, data, len);
    out[len] = 0;
}

/* A self-signed P-256 certificate for cn, as PEM. */
static void make_cert(const char *cn, pem_t *out) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    CHECK(key != NULL && x != NULL);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    CHECK(X509_sign(x, key, EVP_sha256()) > 0);
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    bio_string(b, out->cert, sizeof(out->cert));
    BIO_free(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
    bio_string(b, out->key, sizeof(out->key));
    BIO_free(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PKCS8PrivateKey(b, key, EVP_aes_256_cbc(), "secret", 6, NULL, NULL);
    bio_string(b, out->enc_key, sizeof(out->enc_key));
    BIO_free(b);
    X509_free(x);
    EVP_PKEY_free(key);
}

static sy_tls_cert_t cert_of(const pem_t *p, const char *key, const char *pass, const char *sni) {
    sy_tls_cert_t c = {.cert_pem = p->cert, .cert_len = strlen(p->cert), .key_pem = key, .key_len = strlen(key),
                       .passphrase = pass, .servername = sni};
    return c;
}

static void expect_error(const sy_tls_cert_t *certs, size_t n, const char *needle) {
    char err[256] = "";
    sy_tls_ctx_t *t = sy_tls_ctx_new(certs, n, NULL, 0, err, sizeof(err));
    CHECK(t == NULL);
    if (t != NULL)
        sy_tls_ctx_unref(t);
    if (strstr(err, needle) == NULL)
        fprintf(stderr, "  expected \"%s\" in \"%s\"\n", needle, err);
    CHECK(strstr(err, needle) != NULL);
}

static void nonblock(int fd) { CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0); }

/* Client and server handshake over a socket pair, pumped until both are
 * done or one fails. Returns the server's final state. */
static sy_tls_want_t pump(SSL *client, sy_tls_conn_t *server, const char **why) {
    sy_tls_want_t s = SY_TLS_WANT_READ;
    int c = 0;
    for (int i = 0; i < 1000; i++) {
        if (c != 1) {
            c = SSL_connect(client);
            if (c != 1) {
                int e = SSL_get_error(client, c);
                if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
                    c = -2;
            }
        }
        if (s == SY_TLS_WANT_READ || s == SY_TLS_WANT_WRITE)
            s = sy_tls_handshake(server, why);
        if ((c == 1 || c == -2) && s != SY_TLS_WANT_READ && s != SY_TLS_WANT_WRITE)
            break;
        if (c == -2 && (s == SY_TLS_WANT_READ || s == SY_TLS_WANT_WRITE) && i > 50)
            break;
    }
    return s;
}

static SSL_CTX *client_ctx(int max_version) {
    SSL_CTX *cc = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(cc, SSL_VERIFY_NONE, NULL);
    if (max_version)
        SSL_CTX_set_max_proto_version(cc, max_version);
    if (max_version && max_version < TLS1_2_VERSION)
        SSL_CTX_set_security_level(cc, 0);
    return cc;
}

static void test_handshake(sy_tls_ctx_t *t) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    nonblock(sv[0]);
    nonblock(sv[1]);
    SSL_CTX *cc = client_ctx(0);
    SSL *client = SSL_new(cc);
    SSL_set_fd(client, sv[0]);
    SSL_set_tlsext_host_name(client, "sni.test");
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_set_alpn_protos(client, alpn, sizeof(alpn) - 1);
    sy_tls_conn_t *server = sy_tls_conn_new(t, sv[1]);
    CHECK(server != NULL);
    const char *why = NULL;
    CHECK_EQ(pump(client, server, &why), SY_TLS_DONE);
    CHECK(strcmp(SSL_get_version(client), "TLSv1.3") == 0);
    const unsigned char *sel = NULL;
    unsigned int sel_len = 0;
    SSL_get0_alpn_selected(client, &sel, &sel_len);
    CHECK(sel_len == 8 && memcmp(sel, "http/1.1", 8) == 0);
    CHECK(sy_tls_servername(server) != NULL && strcmp(sy_tls_servername(server), "sni.test") == 0);
    X509 *peer = SSL_get1_peer_certificate(client);
    char cn[64] = "";
    if (peer != NULL)
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
    X509_free(peer);
    CHECK(strcmp(cn, "sni.test") == 0); /* SNI chose the second certificate */

    CHECK(SSL_write(client, "hello", 5) == 5);
    char buf[64];
    size_t n = 0;
    sy_tls_want_t w = SY_TLS_WANT_READ;
    for (int i = 0; i < 100 && w == SY_TLS_WANT_READ; i++)
        w = sy_tls_read(server, buf, sizeof(buf), &n);
    CHECK(w == SY_TLS_DONE && n == 5 && memcmp(buf, "hello", 5) == 0);
    CHECK(sy_tls_write(server, "world", 5, &n) == SY_TLS_DONE && n == 5);
    int r = 0;
    for (int i = 0; i < 100 && r <= 0; i++)
        r = SSL_read(client, buf, sizeof(buf));
    CHECK(r == 5 && memcmp(buf, "world", 5) == 0);
    SSL_shutdown(client);
    w = SY_TLS_WANT_READ;
    for (int i = 0; i < 100 && w == SY_TLS_WANT_READ; i++)
        w = sy_tls_read(server, buf, sizeof(buf), &n);
    CHECK_EQ(w, SY_TLS_CLOSED);
    sy_tls_conn_free(server);
    SSL_free(client);
    SSL_CTX_free(cc);
    close(sv[0]);
    close(sv[1]);
}

/* Bytes a stranger sends instead of a TLS handshake: refused, with a reason. */
static void test_refused(sy_tls_ctx_t *t, const char *bytes, size_t len, int client_max_version) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    nonblock(sv[0]);
    nonblock(sv[1]);
    sy_tls_conn_t *server = sy_tls_conn_new(t, sv[1]);
    const char *why = NULL;
    sy_tls_want_t s;
    if (bytes != NULL) {
        CHECK(write(sv[0], bytes, len) == (ssize_t)len);
        s = sy_tls_handshake(server, &why);
    } else {
        SSL_CTX *cc = client_ctx(client_max_version);
        SSL *client = SSL_new(cc);
        SSL_set_fd(client, sv[0]);
        s = pump(client, server, &why);
        SSL_free(client);
        SSL_CTX_free(cc);
    }
    CHECK_EQ(s, SY_TLS_FAILED);
    CHECK(why != NULL && why[0] != 0);
    printf("  refused: %s\n", why ? why : "(no reason)");
    sy_tls_conn_free(server);
    close(sv[0]);
    close(sv[1]);
}

int main(void) {
    char err[256];
    CHECK_EQ(sy_tls_global_init(err, sizeof(err)), 0);
    printf("%s\n", sy_tls_version());
    static pem_t a, b;
    make_cert("default.test", &a);
    make_cert("sni.test", &b);
    CHECK(sy_tls_allocations() > 0); /* OpenSSL's memory came through sy_alloc */

    sy_tls_cert_t good[2] = {cert_of(&a, a.key, NULL, NULL), cert_of(&b, b.key, NULL, "sni.test")};
    /* Bad input: each a clear, specific error. */
    sy_tls_cert_t bad = good[0];
    bad.cert_pem = "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n";
    bad.cert_len = strlen(bad.cert_pem);
    expect_error(&bad, 1, "certificate: not a PEM certificate");
    bad = cert_of(&a, b.key, NULL, NULL);
    expect_error(&bad, 1, "does not match the certificate");
    bad = cert_of(&a, a.enc_key, "wrong", NULL);
    expect_error(&bad, 1, "wrong passphrase");
    bad = cert_of(&a, a.enc_key, NULL, NULL);
    expect_error(&bad, 1, "encrypted without a passphrase");
    sy_tls_cert_t nosni[2] = {good[0], cert_of(&b, b.key, NULL, NULL)};
    expect_error(nosni, 2, "needs a servername");
    expect_error(good, 0, "no certificate");
    sy_tls_cert_t enc = cert_of(&a, a.enc_key, "secret", NULL);
    sy_tls_ctx_t *e = sy_tls_ctx_new(&enc, 1, NULL, 0, err, sizeof(err));
    CHECK(e != NULL);
    sy_tls_ctx_unref(e);

    sy_tls_ctx_t *t = sy_tls_ctx_new(good, 2, NULL, 0, err, sizeof(err));
    CHECK(t != NULL);
    if (t == NULL) {
        fprintf(stderr, "%s\n", err);
        return check_report("test_tls");
    }
    int64_t before = 0, after = 0;
    for (int round = 0; round < 2; round++) { /* the first warms OpenSSL's lazily made state */
        before = sy_tls_allocated();
        test_handshake(t);
        static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        static const char junk[] = "\x42\x03\x03\x00\x05hello, not a TLS record";
        test_refused(t, http, sizeof(http) - 1, 0);
        test_refused(t, junk, sizeof(junk) - 1, 0);
        test_refused(t, NULL, 0, TLS1_1_VERSION);
        after = sy_tls_allocated();
    }
    printf("OpenSSL bytes held: %lld before, %lld after a handshake and three refusals\n", (long long)before,
           (long long)after);
    CHECK(after <= before); /* connections give back everything they took */
    sy_tls_ctx_unref(t);
    return check_report("test_tls");
}
