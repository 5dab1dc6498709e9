/* sy_park — see sy_park.h. */
#include "io/app/sy_park.h"

#include "io/loop/sy_queue.h"

#include <errno.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "io/model/sy_topic.h"

struct sy_park {
    struct sy_park *next;
    sy_topic_t *on; /* the topic whose sync it waits for */
    int64_t at_ms;  /* when it began to wait */
    sy_io_t *io;
    sy_cmd_t cmd;
};

/* The first topic of cmd that needs a sync, or NULL. */
static sy_topic_t *waits_for(const sy_hist_t *g, const sy_cmd_t *cmd) {
    if (cmd->type == SY_CMD_SUBSCRIBE)
        return sy_hist_needs_sync(g, atomic_load_explicit(&cmd->topic->hist, memory_order_relaxed)) ? cmd->topic : NULL;
    for (size_t i = 0; i < cmd->accept->ntopics; i++) {
        sy_topic_t *t = cmd->accept->topics[i];
        if (sy_hist_needs_sync(g, atomic_load_explicit(&t->hist, memory_order_relaxed)))
            return t;
    }
    return NULL;
}

static uint64_t head_of(sy_hist_t *g, sy_topic_t *t) {
    sy_history_t *h = sy_hist_of(g, t, true);
    return h != NULL && h->size > 0 ? h->last : 0;
}

/* Reads cmd's heads now and queues it. */
static sy_err_t push(sy_hist_t *g, sy_io_t *io, sy_cmd_t *cmd) {
    if (cmd->type == SY_CMD_SUBSCRIBE) {
        cmd->pos->head = head_of(g, cmd->topic);
    } else if (cmd->accept->heads != NULL) {
        for (size_t i = 0; i < cmd->accept->ntopics; i++)
            cmd->accept->heads[i] = head_of(g, cmd->accept->topics[i]);
    }
    return sy_io_push(io, cmd);
}

sy_err_t sy_park_or_push(sy_hist_t *g, sy_io_t *io, sy_cmd_t *cmd, int64_t now_ms) {
    sy_topic_t *t = waits_for(g, cmd);
    if (t == NULL)
        return push(g, io, cmd);
    sy_park_t *p = sy_malloc(sizeof(*p));
    if (p == NULL)
        return push(g, io, cmd); /* served now, from what this node has */
    *p = (sy_park_t){.next = g->parked, .on = t, .at_ms = now_ms, .io = io, .cmd = *cmd};
    g->parked = p;
    return 0;
}

sy_park_t *sy_park_settle(sy_hist_t *g, sy_topic_t *t, int64_t until_ms) {
    sy_park_t *failed = NULL, **pp = &g->parked;
    /* Taken off the list first: a command may park again (on another topic). */
    sy_park_t *done = NULL;
    while (*pp != NULL) {
        sy_park_t *p = *pp;
        if (t != NULL ? p->on == t : p->at_ms <= until_ms) {
            *pp = p->next;
            p->next = done;
            done = p;
        } else {
            pp = &p->next;
        }
    }
    /* Oldest first (the list was newest first, and reversed once above). */
    while (done != NULL) {
        sy_park_t *p = done;
        done = p->next;
        sy_topic_t *next = t == NULL ? NULL : waits_for(g, &p->cmd);
        if (next != NULL) {
            p->on = next;
            p->next = g->parked;
            g->parked = p;
            continue;
        }
        if (push(g, p->io, &p->cmd) == 0) {
            sy_free(p);
            continue;
        }
        p->next = failed;
        failed = p;
    }
    return failed;
}

void sy_park_expire(sy_hist_t *g, int64_t until_ms) {
    sy_hist_lock(g);
    sy_park_t *failed = sy_park_settle(g, NULL, until_ms);
    sy_hist_unlock(g);
    sy_park_discard(failed);
}

void sy_park_discard(sy_park_t *list) {
    while (list != NULL) {
        sy_park_t *p = list;
        list = p->next;
        sy_io_cmd_discard(p->io, &p->cmd);
        sy_free(p);
    }
}

sy_err_t sy_park_subscribe(sy_hist_t *g, sy_topics_t *topics, sy_io_t *io, uint64_t id, sy_topic_t *t,
                           const sy_sub_pos_t *since, const char *extra, size_t extra_len, int64_t now_ms) {
    sy_sub_pos_t *pos = sy_malloc(sizeof(*pos) + extra_len);
    if (pos == NULL) {
        sy_topic_release(topics, t);
        return ENOMEM;
    }
    *pos = since != NULL ? *since : (sy_sub_pos_t){0};
    pos->extra_len = (uint32_t)extra_len;
    if (extra_len > 0)
        memcpy(pos->extra, extra, extra_len);
    sy_hist_lock(g);
    (void)sy_hist_of(g, t, true);
    sy_topic_add_interest(topics, t, sy_io_index(io));
    sy_cmd_t cmd = {.type = SY_CMD_SUBSCRIBE, .conn = id, .topic = t, .pos = pos};
    /* Queued now with its head, or once its topic is synced with Redis. */
    sy_err_t rc = sy_park_or_push(g, io, &cmd, now_ms);
    sy_hist_unlock(g);
    if (rc != 0) {
        sy_free(pos);
        sy_topic_drop_interest(topics, t, sy_io_index(io)); /* outside the lock: it may free t */
    }
    return rc;
}
