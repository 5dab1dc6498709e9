/* sy_reply — see sy_reply.h. */
#include "io/wire/sy_reply.h"

#include <string.h>

#include "proto/sy_handshake.h"

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

void sy_reply_error(sy_io_t *io, sy_conn_t *c, int status, const char *why) {
    char buf[512];
    size_t n = sy_http_error_response_msg(buf, sizeof(buf), status, why, why ? strlen(why) : 0, NULL, 0);
    if (n == 0)
        n = sy_http_error_response(buf, sizeof(buf), status, NULL, 0);
    sy_reply(io, c, n > 0 ? sy_refbuf_raw(buf, n) : NULL, true);
}
