/*
 * sy_server_int — what the files of the server (sy_server.c: its life,
 * connections and answers; sy_server_publish.c: publishing, history and
 * the bus' callbacks) share: the struct and three helpers. Private to
 * them.
 *
 * Threads: the owner's (as sy_server.h's functions).
 *
 * Ownership: as sy_server.h: the struct owns its threads, its bus and the
 * copies of its options; sy_server_message_frame returns a new frame (one
 * reference, the caller's).
 *
 * Errors: sy_server_message_frame returns NULL out of memory;
 * sy_server_push_io 0 or an errno value (sy_io_push's).
 */
#ifndef SY_SERVER_INT_H
#define SY_SERVER_INT_H

#include "sy_server.h"

#include "auth/sy_tokens.h"
#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "base/sy_refbuf.h"
#include "bus/sy_bus.h"
#include "bus/sy_bus_env.h"
#include "io/app/sy_park.h"
#include "io/model/sy_addrlimit.h"
#include "io/model/sy_topic.h"
#include "io/sy_io.h"
#include "io/wire/sy_post.h"
#include "net/sy_sock.h"
#include "net/sy_uring.h"
#include "proto/sy_handshake.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"
#include "tls/sy_stream_tls.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

struct sy_server {
    sy_io_shared_t shared; /* shared.nthreads: the thread count, kept once */
    char *host;
    char *path;
    bool listening; /* the IO threads run (with or without a listening socket) */
    bool shutting_down;
    unsigned next_adopt;          /* round robin of adopted sockets */
    sy_bus_t *bus;                /* NULL: this server is an island */
    sy_bus_state_fn bus_on_state; /* the caller's (sy_server_set_bus) */
    void *bus_state_ctx;
#ifdef SY_WITH_TLS
    sy_tls_source_t tls; /* the certificates of a TLS server (shared.transport_arg) */
#endif
    sy_io_t *io[]; /* NULL until the threads are made */
};

/* The frame of a message (sy_server_publish, sy_server_send): compressible
 * when asked, the server negotiates compression, and it is not too small. */
sy_refbuf_t *sy_server_message_frame(const sy_server_t *s, const void *data, size_t len, unsigned flags);
/* Queues cmd to io, with SY_SEND_LATER's wake-up (sy_io_push_later) when
 * flags ask for it. */
int sy_server_push_io(sy_io_t *io, const sy_cmd_t *cmd, unsigned flags);
/* True when t keeps history (its own, or the server's default). */
bool sy_server_with_history(sy_server_t *s, sy_topic_t *t);
/* The existing topic named topic[0..len) with the server's history lock
 * taken (NULL: no such topic, nothing taken); sy_server_hist_done gives
 * both back. */
sy_topic_t *sy_server_hist_topic(sy_server_t *s, const char *topic, size_t len);
void sy_server_hist_done(sy_server_t *s, sy_topic_t *t);

#endif
