/* sy_io_cmd — the commands an IO thread runs (sy_io.h's sy_cmd_t), taken
 * from its queue once per turn. */
#define _GNU_SOURCE
#include "io/sy_io_cmd.h"

#include "base/sy_alloc.h"
#include "io/loop/sy_io_struct.h"
#include "io/loop/sy_queue.h"
#include "io/sy_accept.h"

#include "io/app/sy_answer.h"
#include "io/app/sy_ask.h"
#include "io/app/sy_fanout.h"
#include "io/app/sy_resume.h"
#include "io/app/sy_subs.h"
#include "io/conn/sy_conn.h"
#include "io/wire/sy_post.h"
#include "io/wire/sy_sse_out.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"
#include "net/sy_wake.h"
#include "proto/sy_v1.h"

static void do_command(sy_io_t *io, sy_cmd_t *cmd) {
    sy_conn_t *c = cmd->conn != 0 ? sy_io_conn_live(io, sy_id_slot(cmd->conn), sy_id_gen(cmd->conn)) : NULL;
    switch (cmd->type) {
    case SY_CMD_PUBLISH:
        sy_fanout_publish(io, cmd);
        break;
    case SY_CMD_NOTICE:
        sy_fanout_notice(io, cmd);
        break;
    case SY_CMD_SEND:
        if (c != NULL && sy_conn_sse(c)) {
            /* An event stream's direct message: a "message" event, no id. */
            sy_refbuf_t *d = sy_v1_direct_frame(cmd->buf->data[0] & 0x0fu, sy_refbuf_payload(cmd->buf),
                                                sy_refbuf_payload_len(cmd->buf), false);
            if (d == NULL)
                sy_conn_fail_oom(io, c);
            else
                (void)sy_sse_out_push(io, c, d, true);
            sy_refbuf_release(d);
            break;
        }
        if (c != NULL && sy_conn_proto(io, c)->direct_frame != NULL) {
            /* Its message protocol's frame (symphony.v1's "d" header). */
            sy_refbuf_t *d = sy_conn_proto(io, c)->direct_frame(cmd->buf);
            if (d == NULL) {
                sy_conn_fail_oom(io, c);
                break;
            }
            sy_refbuf_release(cmd->buf);
            cmd->buf = d;
        }
        if (c != NULL) {
            sy_refbuf_t *m = sy_conn_frame_for(io, c, cmd->buf);
            if (sy_conn_push(io, c, m, false)) {
                if (m == cmd->buf)
                    cmd->buf = NULL; /* the queue has its reference */
                else
                    sy_refbuf_ref(m, 1); /* the twin's; cmd->buf (its owner) goes */
            }
        }
        break;
    case SY_CMD_SUBSCRIBE:
        /* A client's ask the owner granted: only while it is pending (the
         * client may have unsubscribed meanwhile). */
        if (c != NULL &&
            (cmd->pos == NULL || !cmd->pos->asked || (sy_conn_v2(c) && sy_ask_settle(io, c, cmd->pos->rid)))) {
            sy_topic_t *t = cmd->topic;
            /* One held already (server.subscribe() came first): answered
             * with its place; cmd_release gives t back. */
            if (cmd->pos != NULL && cmd->pos->asked && sy_ask_answer_held(io, c, t, cmd->pos)) {
                sy_ask_drain(io, c); /* room for the asks that wait */
                break;
            }
            cmd->topic = NULL;
            if (sy_conn_subscribe(io, c, t)) { /* takes the reference and the interest */
                size_t budget = sy_resume_budget(io, c);
                sy_resume_item_t it;
                sy_resume_prepare(io, c, t, cmd->pos, &budget, &it);
                sy_resume_deliver(io, c, &it);
                const sy_msgproto_t *mp = sy_conn_proto(io, c);
                if (mp->subscribed != NULL && c->state == SY_CONN_OPEN)
                    mp->subscribed(io, c, t);
            }
            if (cmd->pos != NULL && cmd->pos->asked)
                sy_ask_drain(io, c); /* room for the asks that wait */
        }
        break;
    case SY_CMD_POSTED:
        sy_post_deliver(io, c, cmd);
        break;
    case SY_CMD_POST_ANSWER:
        if (c != NULL)
            sy_post_answered(io, c, cmd->arg.status);
        break;
    case SY_CMD_ANSWER:
        if (c != NULL && sy_conn_v2(c) && sy_ask_settle(io, c, cmd->arg.rid)) {
            if (sy_conn_sse(c))
                (void)sy_sse_out_push(io, c, cmd->buf, true); /* its event; cmd->buf goes with the command */
            else if (sy_conn_notice(io, c, cmd->buf))
                cmd->buf = NULL; /* the queue has its reference */
            sy_ask_drain(io, c); /* room for the asks that wait */
        }
        break;
    case SY_CMD_UNSUBSCRIBE:
        if (c != NULL)
            (void)sy_conn_unsubscribe(io, c, cmd->topic);
        break;
    case SY_CMD_END:
        if (c != NULL) {
            /* The frame's payload is the code, then the reason. */
            size_t n = sy_refbuf_payload_len(cmd->buf);
            const char *reason = n > 2 ? (const char *)sy_refbuf_payload(cmd->buf) + 2 : NULL;
            (void)sy_conn_end(io, c, cmd->arg.close_code, reason, n > 2 ? n - 2 : 0);
        }
        break;
    case SY_CMD_TERMINATE:
        if (c != NULL)
            sy_conn_destroy(io, c, 1006);
        break;
    case SY_CMD_ACCEPT:
        if (c != NULL) {
            sy_answer_accept(io, c, cmd->accept, cmd->buf);
            cmd->accept = NULL;
            cmd->buf = NULL;
        }
        break;
    case SY_CMD_REFUSE:
        if (c != NULL) {
            sy_answer_refuse(io, c, cmd->buf);
            cmd->buf = NULL;
        }
        break;
    case SY_CMD_STOP:
        sy_io_begin_stop(io, cmd->arg.deadline_ms);
        break;
    case SY_CMD_ADOPT: {
        sy_conn_t *k = sy_io_adopt_fd(io, cmd->arg.fd, cmd->buf == NULL); /* no bytes: the listener's */
        cmd->arg.fd = -1;                                                 /* adopted (or closed): nothing to release */
        if (k != NULL && cmd->buf != NULL)
            sy_conn_feed(io, k, cmd->buf->data, cmd->buf->len);
        break;
    }
    case SY_CMD_OWNER_DONE:
        if ((int32_t)(cmd->arg.seq - io->owner_applied) > 0)
            io->owner_applied = cmd->arg.seq;
        sy_io_settle_awaiting(io);
        break;
    case SY_CMD_RESUME:
        if (io->ctx.reads_paused && atomic_load_explicit(&io->event_bytes, memory_order_relaxed) < SY_EVENTS_LOW(io)) {
            io->ctx.reads_paused = false;
            while (io->paused != NULL) {
                sy_conn_t *k = io->paused;
                io->paused = k->next_paused;
                k->next_paused = NULL;
                k->paused = false;
                sy_io_update_poll(io, k);
            }
        }
        break;
    default:
        break;
    }
    sy_io_cmd_discard(io, cmd);
}

void sy_io_run_commands(sy_io_t *io) {
    sy_wake_drain(&io->wake);
    sy_mutex_lock(&io->qlock);
    sy_cmd_t *work = io->queue;
    size_t n = io->qlen, cap = io->qcap;
    io->queue = io->work;
    io->qcap = io->wcap;
    io->qlen = 0;
    io->wake_owed = false; /* taken, every one */
    sy_mutex_unlock(&io->qlock);
    io->work = work;
    io->wcap = cap;
    if (n > 0)
        sy_stat_inc(&io->ctx.stats.command_runs);
    for (size_t i = 0; i < n; i++)
        do_command(io, &work[i]);
}

/* Begins this thread's stop: no more accepting, a close handshake (1001) to
 * every open connection with deadline_ms > 0, or every connection closed
 * now. */
void sy_io_begin_stop(sy_io_t *io, uint32_t deadline_ms) {
    if (io->stopping) {
        if (deadline_ms == 0)
            io->stop_deadline_ms = io->ctx.now_ms; /* a forced stop after a graceful one */
        return;
    }
    io->stopping = true;
    io->stop_deadline_ms = io->ctx.now_ms + deadline_ms;
    if (io->listen_fd >= 0) {
        if (!io->listen_paused)
            (void)sy_poll_del(io->poll, io->listen_fd);
        sy_sock_close(io->listen_fd);
        io->listen_fd = -1;
    }
    for (uint32_t i = 0; i < io->slots.n; i++) {
        sy_conn_t *k = io->slots.conns[i];
        if (k == NULL)
            continue;
        if (k->state == SY_CONN_OPEN && deadline_ms > 0) {
            if (!sy_conn_end(io, k, 1001, "server shutting down", 20))
                sy_conn_destroy(io, k, 1001);
        } else if (sy_conn_before_open((sy_conn_state_t)k->state) || deadline_ms == 0) {
            sy_conn_destroy(io, k, 1001);
        }
    }
}

/* The connections awaiting the owner: those it has caught up with (or all,
 * at their deadline: the sweep) close; the list keeps the others. */
void sy_io_settle_awaiting(sy_io_t *io) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < io->nawaiting; i++) {
        uint64_t id = io->awaiting[i];
        sy_conn_t *c = sy_io_conn_live(io, sy_id_slot(id), sy_id_gen(id));
        if (c == NULL || c->state != SY_CONN_AWAIT_OWNER)
            continue;
        if (!sy_conn_owner_behind(io, c) || io->ctx.now_ms >= c->deadline_ms)
            sy_conn_owner_caught_up(io, c);
        else
            io->awaiting[kept++] = id;
    }
    io->nawaiting = kept;
    atomic_store(&io->owner_waiters, kept);
    if (kept == 0 && io->awaiting_cap > 64) {
        sy_free(io->awaiting);
        io->awaiting = NULL;
        io->awaiting_cap = 0;
    }
}
