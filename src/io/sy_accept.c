/* sy_accept — sockets made connections of an IO thread: accepted by
 * thread 0 and dealt out, or adopted (sy_io_adopt). */
#define _GNU_SOURCE
#include "io/sy_accept.h"

#include "io/loop/sy_io_struct.h"
#include "io/loop/sy_queue.h"

#include <errno.h>

#include "io/conn/sy_conn.h"
#include "io/model/sy_reclaim.h"
#include "io/wire/sy_peer.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"

#define SY_ACCEPTS_PER_TURN 64

/* sy_io_adopt, and for the listener's sockets (listener: a PROXY header
 * may come first, sy_peer.h). */
struct sy_conn *sy_io_adopt_fd(sy_io_t *io, int fd, bool listener) {
    sy_conn_t *c = NULL;
    if (io->stopping || sy_conn_new(io, fd, &c) != 0) {
        sy_sock_close(fd);
    } else if (sy_slots_take(&io->slots, c, &c->slot, &c->gen) != 0) {
        sy_conn_free(c); /* closes fd */
    } else if (sy_poll_add(io->poll, fd, SY_POLL_IN, sy_io_conn_tag(c->slot, c->gen)) != 0) {
        sy_slots_release(&io->slots, c->slot);
        sy_conn_free(c);
    } else {
        sy_reclaim_note_count(&io->reclaim, (uint32_t)sy_io_live_conns(io));
        c->listener = listener;
        sy_peer_start(io, c);
        return c;
    }
    atomic_fetch_sub_explicit(&io->ctx.shared->connections, 1, memory_order_relaxed);
    return NULL;
}

struct sy_conn *sy_io_adopt(sy_io_t *io, int fd) {
    return sy_io_adopt_fd(io, fd, false);
}

void sy_io_accept_some(sy_io_t *io) {
    for (int i = 0; i < SY_ACCEPTS_PER_TURN && io->listen_fd >= 0; i++) {
        int fd;
        int err = sy_sock_accept(io->listen_fd, true, &fd);
        if ((err == EMFILE || err == ENFILE) && io->spare_fd >= 0) {
            /* Out of descriptors: free the spare one, accept and close at
             * once, so the client learns now instead of waiting in the
             * backlog; then take the spare back. accept4 says EMFILE before
             * it looks at the backlog: EAGAIN now means nobody else waits,
             * and the level-triggered listener calls again when one does. */
            sy_sock_spare_close(io->spare_fd);
            sy_err_t again = sy_sock_accept(io->listen_fd, false, &fd);
            if (again == 0) {
                sy_sock_close(fd);
                sy_stat_inc(&io->ctx.stats.accept_rejects);
            }
            io->spare_fd = sy_sock_spare_open();
            if (again == 0)
                continue;
            if ((again == EAGAIN || again == EWOULDBLOCK) && io->spare_fd >= 0)
                return;
            err = EMFILE;
        }
        if (err != 0) {
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                /* Out of descriptors: stop listening until the next sweep, or
                 * the level-triggered listener would spin. */
                (void)sy_poll_del(io->poll, io->listen_fd);
                io->next_sweep_ms = io->ctx.now_ms + SY_SWEEP_MS;
                io->listen_paused = true;
            }
            return;
        }
        sy_sock_nodelay(fd);
        atomic_fetch_add_explicit(&io->ctx.shared->connections, 1, memory_order_relaxed);
        unsigned t = io->ctx.shared->next_thread++ % io->ctx.shared->nthreads;
        if (t == io->ctx.index) {
            (void)sy_io_adopt_fd(io, fd, true);
            continue;
        }
        sy_cmd_t cmd = {.type = SY_CMD_ADOPT, .arg.fd = fd};
        if (sy_io_push(io->ctx.shared->ios[t], &cmd) != 0)
            (void)sy_io_adopt_fd(io, fd, true); /* the other queue is out of memory or closed: keep it here */
    }
}
