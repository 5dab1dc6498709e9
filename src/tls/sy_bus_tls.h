/*
 * sy_bus_tls — rediss://: the bus' connections to Redis over TLS on the
 * private OpenSSL (sy_tls.h), through hiredis' own TLS layer (ssl.c, built
 * against that OpenSSL by deps/hiredis.sh --openssl).
 *
 * A sy_bus_tls_t is one client context (CAs, an optional client
 * certificate, whether to verify) shared by every connection of one bus;
 * sy_bus_tls_attach starts TLS on one freshly connected hiredis context:
 * SNI and the certificate's name checked against servername, or the host
 * (a name, or an IP address). The handshake then runs inside hiredis'
 * reads and writes; a failure (an untrusted certificate, a wrong name)
 * takes the connection down with OpenSSL's reason.
 *
 * Threads: new and free on the owner's thread; attach and error on the bus
 * thread (error reads the calling thread's OpenSSL error queue).
 *
 * Ownership: new copies what it needs (the PEMs go into the SSL_CTX,
 * servername is copied); the context is the caller's until it hands it to
 * the bus (sy_bus_opts_t.tls, taken over), which frees it with
 * sy_bus_tls_free. attach keeps nothing of host; the TLS state it starts
 * belongs to c (hiredis frees it with the context). error writes into the
 * caller's buf.
 *
 * Errors: new returns NULL with a message in err; attach returns 0 or an
 * errno value with a message in err; error returns NULL when there is none.
 */
#ifndef SY_BUS_TLS_H
#define SY_BUS_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/sy_errors.h"
#include "tls/sy_tls.h"

typedef struct sy_bus_tls sy_bus_tls_t;

/* NULL with a message in err. servername (may be NULL): the name to ask
 * for and check instead of each connection's host. */
sy_bus_tls_t *sy_bus_tls_new(const char *ca_pem, size_t ca_len, const sy_tls_cert_t *cert, const char *servername,
                             bool verify, char *err, size_t errlen);
void sy_bus_tls_free(void *t);
/* Starts TLS on c (a hiredis redisContext, connected) to host. 0, or an
 * errno value (ENOMEM, EINVAL: the name cannot be checked, EIO: hiredis
 * refused) with a message in err. Matches sy_bus_link.h's
 * sy_bus_tls_attach_fn. */
sy_err_t sy_bus_tls_attach(void *t, void *c, const char *host, char *err, size_t errlen);
/* The reason of this thread's last OpenSSL error into buf (the queue is
 * cleared), or NULL when there is none. Matches sy_bus_link.h's tls_error. */
const char *sy_bus_tls_error(char *buf, size_t len);

#endif
