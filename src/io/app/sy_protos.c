/* sy_protos — see sy_protos.h. */
#include "io/app/sy_protos.h"

#include <stdatomic.h>

#include "io/app/sy_admit.h"
#include "io/app/sy_ask.h"
#include "io/app/sy_conflate.h"
#include "io/app/sy_subs.h"
#include "io/wire/sy_reply.h"
#include "proto/sy_v1.h"
#include "proto/sy_v2.h"

/* A symphony.v1 client tells a direct message by its "d" header. */
static sy_refbuf_t *v1_direct(const sy_refbuf_t *m) {
    return sy_v1_direct_frame(m->data[0] & 0x0fu, sy_refbuf_payload(m), sy_refbuf_payload_len(m),
                              atomic_load_explicit(&m->deflate, memory_order_relaxed) != SY_REFBUF_Z_NONE);
}

const sy_msgproto_t sy_raw_proto = {.name = NULL};
const sy_msgproto_t sy_v1_proto = {.name = SY_V1_PROTOCOL, .direct_frame = v1_direct};
const sy_msgproto_t sy_v2_proto = {.name = SY_V2_PROTOCOL, .message = sy_ask_message, .direct_frame = v1_direct};

static bool admit(sy_io_t *io, sy_conn_t *c, const void *sa, unsigned len) {
    return sy_admit(io, c, (const struct sockaddr *)sa, (socklen_t)len);
}

static void closing(sy_io_t *io, sy_conn_t *c) {
    const sy_msgproto_t *mp = sy_io_ctx(io)->shared->protos[c->proto];
    if (mp->closing != NULL)
        mp->closing(io, c); /* a registered protocol's state */
    sy_conn_unsubscribe_all(io, c);
    if (sy_conn_v2(c))
        sy_ask_forget(io, c);
    sy_admit_release(io, c);
    sy_reply_closing(io, c); /* a kept HTTP connection's count */
}

static void drained(sy_io_t *io, sy_conn_t *c) {
    (void)io;
    sy_conflate_reset(c);
}

const sy_conn_hooks_t sy_app_hooks = {.admit = admit, .closing = closing, .drained = drained};
