/* sy_admit — see sy_admit.h. */
#define _GNU_SOURCE
#include "io/app/sy_admit.h"

#include <stdio.h>
#include <string.h>

#include "io/model/sy_addrlimit.h"
#include "net/sy_sock.h"
#include "proto/sy_handshake.h"

/* What a refused client gets read from it, at most, before the close: its
 * request (so that the close is a FIN, not a reset that could discard our
 * answer on its side). More than that is not waited for. */
#define SY_ADMIT_DRAIN_READS 4

static const char TOO_MANY[] = "too many connections from this address";
static const char TOO_FAST[] = "too many new connections from this address";

/* Writes the answer with one send (a fresh socket's buffer takes it
 * whole; a short write is the client's loss, not a wait), reads and drops
 * what the client sent, and closes. */
static void answer_and_close(sy_io_t *io, sy_conn_t *c, int status, const char *why, uint32_t retry_s) {
    if (sy_stream_is_plain(&c->stream)) {
        char extra[48] = "", buf[512];
        size_t extra_len = 0;
        if (status == 429) {
            int n = snprintf(extra, sizeof(extra), "Retry-After: %u\r\n", (unsigned)retry_s);
            extra_len = n > 0 && (size_t)n < sizeof(extra) ? (size_t)n : 0;
        }
        size_t n = sy_http_error_response_msg(buf, sizeof(buf), status, why, strlen(why), extra, extra_len);
        if (n > 0)
            (void)sy_sock_send(c->stream.fd, buf, n); /* best effort: closed next */
        for (int i = 0; i < SY_ADMIT_DRAIN_READS; i++) {
            if (sy_sock_recv(c->stream.fd, sy_io_ctx(io)->rx, SY_IO_RX_SIZE, false) <= 0)
                break;
        }
    }
    sy_conn_destroy(io, c, 1006);
}

bool sy_admit(sy_io_t *io, sy_conn_t *c, const struct sockaddr *peer, socklen_t len) {
    sy_addrlimit_t *t = sy_io_ctx(io)->shared->addrs;
    if (t == NULL)
        return true;
    struct sockaddr_storage ss;
    if (peer == NULL) {
        len = sizeof(ss);
        if (getpeername(c->stream.fd, (struct sockaddr *)&ss, &len) != 0)
            return true; /* reset already: its first read says so */
        peer = (const struct sockaddr *)&ss;
    }
    sy_addr_key_t key;
    if (!sy_addrlimit_key(t, peer, len, &key))
        return true; /* not IP (a Unix socket handed over by handleUpgrade) */
    uint32_t retry_s = 0;
    switch (sy_addrlimit_admit(t, &key, sy_io_ctx(io)->now_ms * 1000000, &retry_s)) {
    case SY_ADDR_OK:
        c->addr_bits = key.bits;
        c->addr_v6 = key.v6;
        c->addr_held = true;
        return true;
    case SY_ADDR_TOO_MANY:
        sy_stat_inc(&sy_io_ctx(io)->stats.address_rejects);
        answer_and_close(io, c, 503, TOO_MANY, 0);
        return false;
    case SY_ADDR_TOO_FAST:
        sy_stat_inc(&sy_io_ctx(io)->stats.upgrade_rate_rejects);
        answer_and_close(io, c, 429, TOO_FAST, retry_s);
        return false;
    default:
        sy_stat_inc(&sy_io_ctx(io)->stats.oom_closes);
        answer_and_close(io, c, 503, "out of memory", 0);
        return false;
    }
}

void sy_admit_release(sy_io_t *io, sy_conn_t *c) {
    if (!c->addr_held)
        return;
    c->addr_held = false;
    sy_addr_key_t key = {.bits = c->addr_bits, .v6 = c->addr_v6};
    sy_addrlimit_release(sy_io_ctx(io)->shared->addrs, &key, sy_io_ctx(io)->now_ms * 1000000);
}
