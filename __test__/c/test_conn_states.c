/* sy_conn's states on their own, on the test's thread as if it were the IO
 * thread (the thread never starts): each state's deadline and poll
 * interest come from sy_conn_enter alone, the owner sees a connection as
 * open exactly while it is OPEN, and a poller that refuses a connection
 * marks it broken instead of freeing it under the caller. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/epoll.h>
#endif
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "io/conn/sy_conn.h"
#include "io/loop/sy_io_struct.h" /* white-box: the lists */
#include "io/sy_accept.h"
#include "io/sy_io.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"

static void no_batches(void *ctx, sy_batch_t *b) {
    (void)ctx;
    sy_batch_free(b);
}

int main(void) {
    sy_io_shared_t sh;
    memset(&sh, 0, sizeof(sh));
    sh.opts.threads = 1;
    sh.opts.handshake_timeout_s = 5;
    sh.opts.close_timeout_s = 3;
    sh.opts.max_backpressure = 1 << 20;
    sh.opts.max_payload = 1 << 16;
    sh.opts.max_event_bytes = 1 << 20;
    sh.on_batch = no_batches;
    sh.nthreads = 1;
    sh.transport = &sy_stream_plain_ops;
    CHECK_EQ(sy_topics_init(&sh.topics, 1), 0);
    sy_io_protocols(&sh); /* the tables and hooks, as sy_server_create registers them */
    int err = 0;
    sy_io_t *io = sy_io_create(&sh, 0, -1, &err);
    CHECK(io != NULL);
    if (io == NULL)
        return check_report("conn_states");
    sh.ios = &io;
    io->ctx.now_ms = 1000000;

    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK_EQ(sy_sock_own(sv[0]), 0); /* non-blocking (SOCK_NONBLOCK is Linux's) */
    CHECK_EQ(sy_sock_own(sv[1]), 0);
    atomic_fetch_add(&sh.connections, 1); /* as accept counts it */
    sy_conn_t *c = sy_io_adopt(io, sv[0]);
    CHECK(c != NULL);
    if (c == NULL)
        return check_report("conn_states");
    uint64_t id = sy_conn_id(io, c);
    const int64_t hs = 5000, ct = 3000;

    /* New: reading the request, the handshake deadline, readable. */
    CHECK_EQ(c->state, SY_CONN_HTTP);
    CHECK_EQ(c->deadline_ms, 1000000 + hs);
    CHECK_EQU(c->poll_ev, SY_POLL_IN);
    CHECK(!sy_io_is_open(io, id));

    /* A transport handshake and the request share one deadline. */
    io->ctx.now_ms += 100;
    sy_conn_enter(io, c, SY_CONN_HANDSHAKE);
    CHECK_EQ(c->deadline_ms, 1000100 + hs);
    io->ctx.now_ms += 100;
    sy_conn_enter(io, c, SY_CONN_HTTP);
    CHECK_EQ(c->deadline_ms, 1000100 + hs);
    /* So does the owner's decision; it is not read meanwhile. */
    sy_conn_enter(io, c, SY_CONN_UPGRADING);
    CHECK_EQ(c->deadline_ms, 1000100 + hs);
    CHECK_EQU(c->poll_ev, 0);
    CHECK(!sy_io_is_open(io, id));

    /* Open: no deadline, readable, open to the owner. */
    sy_conn_enter(io, c, SY_CONN_OPEN);
    CHECK_EQ(c->deadline_ms, 0);
    CHECK_EQU(c->poll_ev, SY_POLL_IN);
    CHECK(sy_io_is_open(io, id));
    CHECK_EQU(sy_conn_interest(c), SY_POLL_IN);

    /* Awaiting the owner (the peer closed or broke the protocol while the
     * owner had messages to handle): not read, still open to the owner (its
     * replies go out), a short deadline. Back to open only for this test,
     * which the table forbids: a testing build counts it. */
    sy_conn_enter(io, c, SY_CONN_AWAIT_OWNER);
    CHECK_EQ(c->deadline_ms, io->ctx.now_ms + SY_CONN_AWAIT_OWNER_MS);
    CHECK_EQU(c->poll_ev, 0);
    CHECK(sy_io_is_open(io, id));
    CHECK(!sy_conn_transition_allowed(SY_CONN_AWAIT_OWNER, SY_CONN_OPEN));
    unsigned illegal = sy_conn_illegal_transitions();
    sy_conn_enter(io, c, SY_CONN_OPEN);
    CHECK_EQU(sy_conn_illegal_transitions(), illegal + 1);
    check_illegal_expected = illegal + 1;
    CHECK_EQU(c->poll_ev, SY_POLL_IN);

    /* Paused for flow control: not read; the interest follows. */
    sy_io_pause(io, c);
    CHECK(c->paused && io->paused == c);
    CHECK_EQU(c->poll_ev, 0);

    /* Closing: the close timeout from now; no longer open to the owner. */
    io->ctx.now_ms += 1000;
    sy_conn_enter(io, c, SY_CONN_CLOSING);
    CHECK_EQ(c->deadline_ms, io->ctx.now_ms + ct);
    CHECK(!sy_io_is_open(io, id));
    io->ctx.now_ms += 1000;
    sy_conn_enter(io, c, SY_CONN_FLUSH_CLOSE);
    CHECK_EQ(c->deadline_ms, io->ctx.now_ms + ct);
    io->ctx.now_ms += 1000;
    sy_conn_enter(io, c, SY_CONN_DRAINING);
    CHECK_EQ(c->deadline_ms, io->ctx.now_ms + SY_CONN_DRAIN_MS);

#if defined(__linux__)
    /* The poller refusing it (its socket gone from the epoll set): marked
     * broken and put on the dirty list, not freed here. Linux by nature: it
     * reaches into the epoll set from outside (kqueue's EV_ADD would not
     * refuse). */
    int ep[2];
    CHECK_EQ(epoll_fds(ep, 2), 1);
    CHECK_EQ(epoll_ctl(ep[0], EPOLL_CTL_DEL, sv[0], NULL), 0);
    io->paused = NULL;
    c->paused = false;
    c->want_out = true;
    sy_io_update_poll(io, c);
    CHECK(c->broken);
    CHECK(c->dirty && io->dirty == c);
    CHECK(c->state == SY_CONN_DRAINING);
#endif

    /* Destroyed: dead, its slot given back, on the dead list. */
    io->dirty = NULL;
    c->dirty = false;
    sy_conn_destroy(io, c, 1006);
    CHECK_EQ(c->state, SY_CONN_DEAD);
    CHECK(sy_slots_at(&io->slots, c->slot) == NULL);
    CHECK(io->dead == c);
    CHECK_EQU(atomic_load(&sh.connections), 0);
    /* Entering any state from DEAD changes nothing. */
    sy_conn_enter(io, c, SY_CONN_OPEN);
    CHECK_EQ(c->state, SY_CONN_DEAD);
    CHECK(!sy_io_is_open(io, id));

    io->dead = NULL;
    sy_conn_free(c);
    close(sv[1]);
    sy_io_destroy(io);
    sy_topics_destroy(&sh.topics);
    return check_report("conn_states");
}
