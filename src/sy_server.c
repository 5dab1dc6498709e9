/* sy_server — see sy_server.h. */
#define _GNU_SOURCE
#include "sy_server_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "base/sy_refbuf.h"
#include "bus/sy_bus.h"
#include "bus/sy_bus_env.h"
#include "io/app/sy_park.h"
#include "io/app/sy_pusher_conn.h"
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
#ifdef SY_WITH_TLS
#include "auth/sy_tokens.h"
#include "tls/sy_stream_tls.h"
#endif

/* The limits per address and per connection's inbound rate, from the
 * options: 0, or EINVAL/ENOMEM with a message in err. */
static int limits_init(sy_io_shared_t *sh, char *err, size_t errlen) {
    const sy_io_opts_t *o = &sh->opts;
    if (sy_rate_init(&sh->in_msgs, o->max_messages_per_s, o->message_burst) != 0 ||
        sy_rate_init(&sh->in_bytes, o->max_bytes_per_s, o->byte_burst) != 0 ||
        o->rate_grace_ms > SY_RATE_BURST_MAX_MS) {
        snprintf(err, errlen, "a burst or grace of the inbound rate lasts more than %u s, or a rate is out of range",
                 SY_RATE_BURST_MAX_MS / 1000);
        return EINVAL;
    }
    if (sy_budget_init(&sh->work, o->max_work_per_s, o->work_burst) != 0) {
        snprintf(err, errlen, "maxWorkPerSecond is over %llu, or workBurst lasts more than %u s of it",
                 (unsigned long long)SY_WORK_MAX_PER_S, SY_WORK_BURST_MAX_S);
        return EINVAL;
    }
    sh->rate_on = sh->in_msgs.per_s > 0 || sh->in_bytes.per_s > 0;
    sh->rate_grace = o->rate_grace_ms * SY_RATE_TICKS_PER_MS;
    if (o->max_conns_per_address == 0 && o->upgrade_rate_per_address == 0)
        return 0;
    sy_addrlimit_conf_t c = {.max_conns = o->max_conns_per_address,
                             .rate = o->upgrade_rate_per_address,
                             .v4_prefix = o->address_prefix_v4 ? o->address_prefix_v4 : 32,
                             .v6_prefix = o->address_prefix_v6 ? o->address_prefix_v6 : 64};
    if (c.v4_prefix > 32 || c.v6_prefix > 64) {
        snprintf(err, errlen, "address prefixes are 1..32 (IPv4) and 1..64 (IPv6)");
        return EINVAL;
    }
    if ((sh->addrs = sy_addrlimit_create(&c)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    return 0;
}

sy_server_t *sy_server_create(const sy_server_opts_t *opts, sy_batch_fn on_batch, void *ctx, char *err, size_t errlen) {
    if (opts->threads < 1 || opts->threads > SY_SERVER_MAX_THREADS) {
        snprintf(err, errlen, "threads must be 1..%d", SY_SERVER_MAX_THREADS);
        return NULL;
    }
    if (sy_sock_startup() != 0) {
        snprintf(err, errlen, "cannot start the socket library (WSAStartup)");
        return NULL;
    }
    sy_server_t *s = sy_calloc(1, sizeof(*s) + opts->threads * sizeof(sy_io_t *));
    if (s == NULL) {
        sy_sock_cleanup();
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->shared.nthreads = opts->threads;
    s->shared.transport = &sy_stream_plain_ops;
    s->shared.try_uring = sy_uring_env_allows(); /* the owner's thread: no race with setenv */
    s->shared.opts = *opts;
    if (s->shared.opts.max_event_bytes == 0)
        s->shared.opts.max_event_bytes = (size_t)64 << 20;
    s->shared.on_batch = on_batch;
    s->shared.ctx = ctx;
    s->shared.tokens_lock = (sy_mutex_t)SY_MUTEX_INIT;
    s->host = sy_memdup(opts->host ? opts->host : "", strlen(opts->host ? opts->host : "") + 1);
    s->path = opts->path ? sy_memdup(opts->path, strlen(opts->path) + 1) : NULL;
    int rc = sy_topics_init(&s->shared.topics, opts->threads);
    s->shared.topics.free_hist = sy_history_free; /* topics keep history (io/model/sy_history.h) */
    if (s->host == NULL || (opts->path && s->path == NULL) || rc != 0) {
        if (rc == 0)
            sy_topics_destroy(&s->shared.topics);
        sy_free(s->host);
        sy_free(s->path);
        sy_free(s);
        sy_sock_cleanup();
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sy_hist_conf_t hc = {
        .size = opts->history_size, .ttl_s = opts->history_ttl_s, .max_bytes = opts->history_max_bytes};
    bool once = false;
    if ((rc = sy_deflate_once_init(&s->shared.deflate_once)) != 0 ||
        (once = true, rc = sy_hist_init(&s->shared.hist, &hc)) != 0) {
        if (once)
            sy_deflate_once_destroy(&s->shared.deflate_once);
        sy_topics_destroy(&s->shared.topics);
        sy_free(s->host);
        sy_free(s->path);
        sy_free(s);
        sy_sock_cleanup();
        snprintf(err, errlen, "cannot make a lock: error %d", rc);
        return NULL;
    }
    s->shared.opts.host = s->host;
    s->shared.opts.path = s->path;
    s->shared.path_len = s->path ? strlen(s->path) : 0;
    sy_post_key_init(s->shared.stream_key, &s->shared.node_tag);
    sy_io_protocols(&s->shared); /* the protocols' tables and hooks (io/conn/sy_wire.h) */
    if (limits_init(&s->shared, err, errlen) != 0) {
        sy_server_destroy(s);
        return NULL;
    }
    return s;
}

static int bind_one(const struct addrinfo *ai, uint16_t port, unsigned backlog, int *out) {
    int fd;
    int rc = sy_sock_stream(ai->ai_family, &fd);
    if (rc != 0)
        return rc;
    struct sockaddr_storage ss;
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    if (ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
    if ((rc = sy_sock_reuse_addr(fd)) != 0 || bind(fd, (struct sockaddr *)&ss, (socklen_t)ai->ai_addrlen) != 0 ||
        listen(fd, (int)backlog) != 0) {
        int e = rc != 0 ? rc : sy_sock_error();
        sy_sock_close(fd);
        return e;
    }
    *out = fd;
    return 0;
}

static uint16_t bound_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* Starts the IO threads, thread 0 with the listening socket fd (-1: none;
 * taken over either way: sy_io_create adopts it, sy_io_destroy closes it). */
static int start_threads(sy_server_t *s, int fd, char *err, size_t errlen) {
    unsigned made = 0, started = 0;
    int rc = 0;
    s->shared.ios = s->io;
    atomic_store_explicit(&s->shared.posts_forwarded, s->bus != NULL, memory_order_relaxed);
    for (unsigned i = 0; i < s->shared.nthreads; i++) {
        if ((s->io[i] = sy_io_create(&s->shared, i, i == 0 ? fd : -1, &rc)) == NULL) {
            snprintf(err, errlen, "cannot start IO thread %u: %s", i, sy_strerror(rc));
            break;
        }
        made++;
    }
    for (unsigned i = 0; rc == 0 && i < s->shared.nthreads; i++) {
        if ((rc = sy_io_start(s->io[i])) != 0)
            snprintf(err, errlen, "cannot start IO thread %u: %s", i, sy_strerror(rc));
        else
            started++;
    }
    if (rc != 0) {
        /* Stop what started, free what was made. */
        for (unsigned i = 0; i < started; i++) {
            sy_cmd_t cmd = {.type = SY_CMD_STOP, .arg.deadline_ms = 0};
            (void)sy_io_push(s->io[i], &cmd); /* a running thread's queue is open */
        }
        for (unsigned i = 0; i < made; i++) {
            sy_io_join(s->io[i]);
            sy_io_destroy(s->io[i]);
            s->io[i] = NULL;
        }
        return rc;
    }
    if (s->bus != NULL && (rc = sy_bus_start(s->bus)) != 0) {
        /* The IO threads run; the caller's shutdown and join stop them. */
        s->listening = true;
        snprintf(err, errlen, "cannot start the bus thread: %s", sy_strerror(rc));
        return rc;
    }
    s->listening = true;
    return 0;
}

sy_err_t sy_server_listen(sy_server_t *s, uint16_t *port, char *err, size_t errlen) {
    if (s->listening) {
        snprintf(err, errlen, "the server is already listening");
        return EALREADY;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(s->host[0] ? s->host : NULL, "0", &hints, &ai);
    if (gai != 0 || ai == NULL) {
        snprintf(err, errlen, "cannot resolve host '%s': %s", s->host, gai_strerror(gai));
        return EINVAL;
    }
    uint16_t p = s->shared.opts.port;
    int fd = -1;
    int rc = bind_one(ai, p, s->shared.opts.backlog, &fd);
    freeaddrinfo(ai);
    if (rc != 0) {
        snprintf(err, errlen, "cannot listen on %s:%u: %s", s->host, (unsigned)p, sy_strerror(rc));
        return rc;
    }
    if (p == 0)
        p = bound_port(fd);
    if ((rc = start_threads(s, fd, err, errlen)) != 0)
        return rc;
    *port = p;
    return 0;
}

sy_err_t sy_server_start(sy_server_t *s, char *err, size_t errlen) {
    if (s->listening) {
        snprintf(err, errlen, "the server is already running");
        return EALREADY;
    }
    return start_threads(s, -1, err, errlen);
}

sy_err_t sy_server_adopt(sy_server_t *s, int fd, const void *bytes, size_t len) {
    if (!s->listening || s->shutting_down)
        return ENOTCONN;
    sy_err_t e = sy_sock_check_stream(fd);
    if (e != 0)
        return e;
    sy_refbuf_t *pre = sy_refbuf_raw(bytes, len);
    if (pre == NULL)
        return ENOMEM;
    int own = -1;
    if ((e = sy_sock_dup(fd, &own)) != 0 || (e = sy_sock_own(own)) != 0) { /* close-on-exec, non-blocking */
        if (own >= 0)
            sy_sock_close(own);
        sy_refbuf_release(pre);
        return e;
    }
    sy_sock_nodelay(own);
    atomic_fetch_add_explicit(&s->shared.connections, 1, memory_order_relaxed);
    sy_io_t *io = s->io[s->next_adopt++ % s->shared.nthreads];
    sy_cmd_t cmd = {.type = SY_CMD_ADOPT, .arg.fd = own, .buf = pre};
    int rc = sy_io_push(io, &cmd);
    if (rc != 0) {
        sy_sock_close(own);
        atomic_fetch_sub_explicit(&s->shared.connections, 1, memory_order_relaxed);
        sy_refbuf_release(pre);
        return rc == EPIPE ? ENOTCONN : rc;
    }
    return 0;
}

static sy_io_t *io_of(sy_server_t *s, uint64_t id) {
    unsigned t = sy_id_thread(id);
    if (!s->listening || t >= s->shared.nthreads)
        return NULL;
    return s->io[t];
}

bool sy_server_is_open(sy_server_t *s, uint64_t id) {
    sy_io_t *io = io_of(s, id);
    return io != NULL && !s->shutting_down && sy_io_is_open(io, id);
}

/* The frame of a message (sy_server_publish, sy_server_send): compressible
 * when asked, the server negotiates compression, and it is not too small. */
static int push_to(sy_server_t *s, sy_cmd_t *cmd, unsigned flags) {
    int rc = sy_server_push_io(io_of(s, cmd->conn), cmd, flags);
    return rc == EPIPE ? ENOTCONN : rc;
}

sy_err_t sy_server_send(sy_server_t *s, uint64_t id, const void *data, size_t len, unsigned flags) {
    if (!sy_server_is_open(s, id))
        return ENOTCONN;
    sy_cmd_t cmd = {.type = SY_CMD_SEND, .conn = id};
    if ((cmd.buf = sy_server_message_frame(s, data, len, flags)) == NULL)
        return ENOMEM;
    int rc = push_to(s, &cmd, flags);
    if (rc != 0)
        sy_refbuf_release(cmd.buf);
    return rc;
}

/* A subscription to t (held, one reference) on io where the subscriber
 * must learn its position (t has history, or the caller gave since):
 * io/sy_park.h's sy_park_subscribe. */
static int subscribe_at(sy_server_t *s, sy_io_t *io, uint64_t id, sy_topic_t *t, const sy_sub_pos_t *since,
                        const char *extra, size_t extra_len) {
    int rc = sy_park_subscribe(&s->shared.hist, &s->shared.topics, io, id, t, since, extra, extra_len, sy_clock_ms());
    return rc == EPIPE ? ENOTCONN : rc;
}

static int sub_cmd(sy_server_t *s, uint64_t id, const char *topic, size_t topic_len, uint8_t type,
                   const sy_sub_pos_t *since) {
    if (!sy_server_is_open(s, id))
        return ENOTCONN;
    sy_io_t *io = io_of(s, id);
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, topic_len, type == SY_CMD_SUBSCRIBE);
    if (t == NULL)
        return type == SY_CMD_SUBSCRIBE ? ENOMEM : 0; /* no such topic: nothing to leave */
    if (type == SY_CMD_SUBSCRIBE && (since != NULL || sy_server_with_history(s, t)))
        return subscribe_at(s, io, id, t, since, NULL, 0);
    /* Counted now, so that a publish right after this call sees it. */
    if (type == SY_CMD_SUBSCRIBE)
        sy_topic_add_interest(&s->shared.topics, t, sy_io_index(io));
    sy_cmd_t cmd = {.type = type, .conn = id, .topic = t};
    int rc = push_to(s, &cmd, 0);
    if (rc != 0) {
        if (type == SY_CMD_SUBSCRIBE)
            sy_topic_drop_interest(&s->shared.topics, t, sy_io_index(io));
        else
            sy_topic_release(&s->shared.topics, t);
    }
    return rc;
}

sy_err_t sy_server_subscribe(sy_server_t *s, uint64_t id, const char *topic, size_t topic_len) {
    return sub_cmd(s, id, topic, topic_len, SY_CMD_SUBSCRIBE, NULL);
}

sy_err_t sy_server_subscribe_since(sy_server_t *s, uint64_t id, const char *topic, size_t topic_len, uint64_t epoch,
                                   uint64_t since) {
    sy_sub_pos_t pos = {.resume = true, .epoch = epoch, .since = since};
    return sub_cmd(s, id, topic, topic_len, SY_CMD_SUBSCRIBE, &pos);
}

sy_err_t sy_server_answer_subscribe(sy_server_t *s, uint64_t id, uint32_t rid, const char *topic, size_t topic_len,
                                    bool resume, uint64_t epoch, uint64_t since, const char *extra, size_t extra_len) {
    if (extra_len > SY_V1_EXTRA_MAX)
        return EMSGSIZE;
    if (!sy_server_is_open(s, id))
        return ENOTCONN;
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, topic_len, true);
    if (t == NULL)
        return ENOMEM;
    sy_sub_pos_t pos = {.resume = resume, .epoch = epoch, .since = since, .asked = true, .rid = rid};
    return subscribe_at(s, io_of(s, id), id, t, &pos, extra, extra_len);
}

sy_err_t sy_server_answer(sy_server_t *s, uint64_t id, uint32_t rid, const void *data, size_t len, bool binary) {
    if (!sy_server_is_open(s, id))
        return ENOTCONN;
    sy_cmd_t cmd = {.type = SY_CMD_ANSWER, .conn = id, .arg.rid = rid};
    if ((cmd.buf = sy_ws_msg_z(binary ? SY_WS_OP_BINARY : SY_WS_OP_TEXT, data, len, false)) == NULL)
        return ENOMEM;
    int rc = push_to(s, &cmd, SY_SEND_LATER);
    if (rc != 0)
        sy_refbuf_release(cmd.buf);
    return rc;
}

bool sy_server_position(sy_server_t *s, const char *topic, size_t topic_len, uint64_t *epoch, uint64_t *last,
                        uint64_t *first, size_t *kept) {
    sy_topic_t *t = sy_server_hist_topic(s, topic, topic_len);
    if (t == NULL)
        return false;
    sy_history_t *h = sy_hist_of(&s->shared.hist, t, false);
    bool ok = h != NULL && h->size > 0;
    if (ok) {
        *epoch = h->epoch;
        *last = h->last;
        *first = h->first;
        *kept = h->count;
    }
    sy_server_hist_done(s, t);
    return ok;
}

sy_topic_t *sy_server_hist_topic(sy_server_t *s, const char *topic, size_t len) {
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, len, false);
    if (t != NULL)
        sy_hist_lock(&s->shared.hist);
    return t;
}

void sy_server_hist_done(sy_server_t *s, sy_topic_t *t) {
    sy_hist_unlock(&s->shared.hist);
    sy_topic_release(&s->shared.topics, t);
}

sy_err_t sy_server_topic_history(sy_server_t *s, sy_topic_t *t, uint32_t size, uint32_t ttl_s) {
    sy_hist_t *g = &s->shared.hist;
    sy_hist_lock(g);
    sy_err_t rc = sy_hist_configure(g, t, size, ttl_s, sy_clock_ms());
    sy_hist_unlock(g);
    atomic_store(&s->shared.history_used, true);
    /* With a bus, a topic subscribed already syncs now (its subscriptions
     * would wait for a sync that its subscription's confirmation did not
     * start: it had no history then). */
    if (rc == 0 && size > 0 && s->bus != NULL)
        sy_bus_edge(s->bus, t);
    return rc;
}

void sy_server_history_totals(sy_server_t *s, size_t *count, size_t *bytes) {
    sy_hist_totals(&s->shared.hist, count, bytes);
}

sy_err_t sy_server_unsubscribe(sy_server_t *s, uint64_t id, const char *topic, size_t topic_len) {
    return sub_cmd(s, id, topic, topic_len, SY_CMD_UNSUBSCRIBE, NULL);
}

sy_err_t sy_server_end(sy_server_t *s, uint64_t id, unsigned code, const char *reason, size_t reason_len) {
    if (!sy_server_is_open(s, id))
        return ENOTCONN;
    sy_cmd_t cmd = {.type = SY_CMD_END, .conn = id, .arg.close_code = (uint16_t)code};
    if ((cmd.buf = sy_ws_msg_close(code, reason, reason_len)) == NULL)
        return ENOMEM;
    int rc = push_to(s, &cmd, 0);
    if (rc != 0)
        sy_refbuf_release(cmd.buf);
    return rc;
}

sy_err_t sy_server_terminate(sy_server_t *s, uint64_t id) {
    if (!sy_server_is_open(s, id))
        return ENOTCONN;
    sy_cmd_t cmd = {.type = SY_CMD_TERMINATE, .conn = id};
    return push_to(s, &cmd, 0);
}

sy_err_t sy_server_accept(sy_server_t *s, uint64_t id, const char *protocol, size_t protocol_len, const char *headers,
                          size_t headers_len, const char *const *topics, const size_t *topic_lens, size_t ntopics,
                          bool compress) {
    sy_io_t *io = io_of(s, id);
    if (io == NULL || s->shutting_down)
        return ENOTCONN;
    sy_accept_t *a = sy_calloc(1, sizeof(*a) + protocol_len + 1);
    sy_topic_t **ts = ntopics ? sy_calloc(ntopics, sizeof(*ts)) : NULL;
    sy_refbuf_t *extra = headers_len ? sy_refbuf_raw(headers, headers_len) : NULL;
    if (a == NULL || (ntopics && ts == NULL) || (headers_len && extra == NULL)) {
        sy_free(a);
        sy_free(ts);
        sy_refbuf_release(extra);
        return ENOMEM;
    }
    memcpy(a->protocol, protocol, protocol_len);
    a->protocol_len = protocol_len;
    a->no_compress = !compress;
    a->topics = ts;
    bool history = false;
    for (size_t i = 0; i < ntopics; i++) {
        sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topics[i], topic_lens[i], true);
        if (t == NULL)
            continue;
        history = history || sy_server_with_history(s, t);
        ts[a->ntopics++] = t;
    }
    /* With history: the heads read, the interest counted and the command
     * queued under the history lock (io/sy_history.h). */
    sy_hist_t *g = &s->shared.hist;
    bool locked = history && (a->heads = sy_calloc(a->ntopics, sizeof(*a->heads))) != NULL;
    if (locked)
        sy_hist_lock(g);
    for (size_t i = 0; i < a->ntopics; i++) {
        if (locked)
            (void)sy_hist_of(g, ts[i], true);
        sy_topic_add_interest(&s->shared.topics, ts[i], sy_io_index(io));
    }
    sy_cmd_t cmd = {.type = SY_CMD_ACCEPT, .conn = id, .accept = a, .buf = extra};
    /* With history: the heads read and the command queued now, or once
     * every topic is synced with Redis (io/sy_park.h). */
    int rc = locked ? sy_park_or_push(g, io, &cmd, sy_clock_ms()) : sy_io_push(io, &cmd);
    /* Not a->heads: once queued, a is the IO thread's (it may be freed already). */
    if (locked)
        sy_hist_unlock(g);
    if (rc != 0) {
        sy_accept_free(&s->shared.topics, sy_io_index(io), a);
        sy_refbuf_release(extra);
        return rc == EPIPE ? ENOTCONN : rc;
    }
    return 0;
}

/* Queues an answer command that owns cmd->buf: on failure the buffer is
 * given back, and a thread that has stopped is ENOTCONN. */
static sy_err_t push_answer(sy_io_t *io, const sy_cmd_t *cmd) {
    int rc = sy_io_push(io, cmd);
    if (rc != 0)
        sy_refbuf_release(cmd->buf);
    return rc == EPIPE ? ENOTCONN : rc;
}

sy_err_t sy_server_refuse(sy_server_t *s, uint64_t id, int status, const char *headers, size_t headers_len) {
    sy_io_t *io = io_of(s, id);
    if (io == NULL || s->shutting_down)
        return ENOTCONN;
    char small[1024];
    size_t cap = headers_len + 512;
    char *buf = cap <= sizeof(small) ? small : sy_malloc(cap);
    if (buf == NULL)
        return ENOMEM;
    size_t n = sy_http_error_response(buf, cap, status, headers, headers_len);
    sy_cmd_t cmd = {.type = SY_CMD_REFUSE, .conn = id, .buf = n > 0 ? sy_refbuf_raw(buf, n) : NULL};
    if (buf != small)
        sy_free(buf);
    if (cmd.buf == NULL)
        return ENOMEM;
    return push_answer(io, &cmd);
}

/* A whole response (buf, owned; NULL: out of memory) to the request id the
 * owner was given to answer, then the close. */
static sy_err_t answer_request(sy_server_t *s, uint64_t id, sy_refbuf_t *buf) {
    sy_io_t *io = io_of(s, id);
    if (io == NULL || s->shutting_down) {
        sy_refbuf_release(buf);
        return ENOTCONN;
    }
    if (buf == NULL)
        return ENOMEM;
    sy_cmd_t cmd = {.type = SY_CMD_REFUSE, .conn = id, .buf = buf};
    return push_answer(io, &cmd);
}

sy_err_t sy_server_post_answer(sy_server_t *s, uint64_t id, int status) {
    /* As the stream's thread answers one (sy_post_answered): a 202 keeps
     * the connection when its client allows it. */
    sy_io_t *io = io_of(s, id);
    if (io == NULL || s->shutting_down)
        return ENOTCONN;
    sy_cmd_t cmd = {.type = SY_CMD_POST_ANSWER, .conn = id, .arg.status = status};
    return push_answer(io, &cmd);
}

sy_err_t sy_server_reply(sy_server_t *s, uint64_t id, const void *response, size_t len) {
    return answer_request(s, id, sy_refbuf_raw(response, len));
}

sy_err_t sy_server_post(sy_server_t *s, const char *name, size_t name_len, const void *data, size_t len, bool binary,
                        uint64_t answer) {
    uint64_t id, serial;
    if (!s->listening || s->shutting_down)
        return ENOTCONN;
    if (!sy_post_name_stream(&s->shared, name, name_len, &id, &serial))
        return ENOENT;
    sy_refbuf_t *m = sy_refbuf_raw(data, len);
    if (m == NULL)
        return ENOMEM;
    /* The POST the stream's thread answers once it delivered (offset; 0:
     * none here, the forwarding node answered). */
    sy_cmd_t cmd = {
        .type = SY_CMD_POSTED, .conn = id, .buf = m, .arg.binary = binary, .epoch = serial, .offset = answer};
    int rc = sy_io_push(s->io[sy_id_thread(id)], &cmd);
    if (rc != 0) {
        sy_refbuf_release(m);
        return rc == EPIPE ? ENOTCONN : rc;
    }
    return 0;
}

#ifdef SY_TESTING
void sy_server_stream_name(sy_server_t *s, uint64_t id, uint64_t serial, char *out) {
    sy_post_name(&s->shared, id, serial, out);
}
#endif

void sy_server_node_tag(const sy_server_t *s, char out[17]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++)
        out[i] = hex[(s->shared.node_tag >> (60 - 4 * i)) & 15];
    out[16] = '\0';
}

void sy_server_thread_stats(sy_server_t *s, unsigned i, sy_stats_t *out) {
    memset(out, 0, sizeof(*out));
    out->arena = out->conn_arena = -1;
    if (i >= s->shared.nthreads || !s->listening)
        return;
    sy_io_stats_snapshot(s->io[i], out);
}

unsigned sy_server_threads(sy_server_t *s) { return s->shared.nthreads; }

size_t sy_server_topic_count(sy_server_t *s) { return sy_topics_count(&s->shared.topics); }

size_t sy_server_address_count(sy_server_t *s) { return sy_addrlimit_count(s->shared.addrs); }

/* count(topic) of an existing topic, or 0 when it does not exist. */
static unsigned topic_number(sy_server_t *s, const char *topic, size_t topic_len,
                             unsigned (*count)(const sy_topic_t *)) {
    sy_topic_t *t = sy_topic_acquire(&s->shared.topics, topic, topic_len, false);
    if (t == NULL)
        return 0;
    unsigned n = count(t);
    sy_topic_release(&s->shared.topics, t);
    return n;
}

unsigned sy_server_subscribers(sy_server_t *s, const char *topic, size_t topic_len) {
    return topic_number(s, topic, topic_len, sy_topic_total_interest);
}

unsigned sy_server_topic_applied(sy_server_t *s, const char *topic, size_t topic_len) {
    return topic_number(s, topic, topic_len, sy_topic_subscribers);
}

void sy_server_topic_events(sy_server_t *s, bool on) {
    atomic_store_explicit(&s->shared.topic_events, on, memory_order_seq_cst);
}

/* sy_server_topic_list's walk: sizes first, then the copy. */
typedef struct topic_list {
    sy_topic_count_t *items;
    char *names;
    size_t n, cap, name_bytes, name_cap;
    bool sizing;
} topic_list_t;

static void list_topic(void *ctx, sy_topic_t *t) {
    topic_list_t *l = ctx;
    if (l->sizing) {
        l->n++;
        l->name_bytes += t->name_len;
        return;
    }
    if (l->n == l->cap || l->name_bytes + t->name_len > l->name_cap)
        return; /* made since the sizing pass: left out */
    memcpy(l->names + l->name_bytes, t->name, t->name_len);
    l->items[l->n++] = (sy_topic_count_t){.name = l->names + l->name_bytes,
                                          .len = t->name_len,
                                          .subscribers = sy_topic_total_interest(t),
                                          .applied = sy_topic_subscribers(t)};
    l->name_bytes += t->name_len;
}

sy_err_t sy_server_topic_list(sy_server_t *s, sy_topic_count_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    /* Sized under the lock, then copied under it again (topics made in
     * between beyond the room are left out: a list is a moment anyway). */
    topic_list_t l = {.sizing = true};
    sy_topics_each(&s->shared.topics, list_topic, &l);
    if (l.n == 0)
        return 0;
    size_t cap = l.n + 16, name_cap = l.name_bytes + 16 * SY_TOPIC_MAX_LEN;
    sy_topic_count_t *items = sy_malloc(cap * sizeof(*items) + name_cap);
    if (items == NULL)
        return ENOMEM;
    l = (topic_list_t){.items = items, .names = (char *)(items + cap), .cap = cap, .name_cap = name_cap};
    sy_topics_each(&s->shared.topics, list_topic, &l);
    *out = items;
    *n = l.n;
    return 0;
}

sy_err_t sy_server_set_tls(sy_server_t *s, struct sy_tls_ctx *ctx) {
#ifdef SY_WITH_TLS
    bool tls = sy_server_tls(s);
    if (ctx == NULL || (s->listening && !tls))
        return EINVAL;
    if (!tls) {
        /* Only before listen: the IO threads read the transport unlocked. */
        int rc = sy_tls_source_init(&s->tls);
        if (rc != 0)
            return rc;
        s->shared.transport = &sy_stream_tls_ops;
        s->shared.transport_arg = &s->tls;
    }
    sy_tls_source_set(&s->tls, ctx);
    return 0;
#else
    (void)s;
    (void)ctx;
    return ENOTSUP;
#endif
}

sy_err_t sy_server_set_tokens(sy_server_t *s, struct sy_tokens *tokens) {
#ifdef SY_WITH_TLS
    sy_mutex_lock(&s->shared.tokens_lock);
    sy_tokens_t *old = s->shared.tokens;
    s->shared.tokens = tokens;
    sy_mutex_unlock(&s->shared.tokens_lock);
    sy_tokens_unref(old); /* a thread checking a token with it holds its own reference */
    return 0;
#else
    (void)s;
    (void)tokens;
    return ENOTSUP;
#endif
}

sy_err_t sy_server_add_protocol(sy_server_t *s, const struct sy_wire *wire, const struct sy_msgproto *proto) {
    if (s->listening)
        return EBUSY;
    return sy_io_add_protocol(&s->shared, wire, proto);
}

/* shared.publish: an IO thread's publish (Pusher's HTTP API, client
 * events), as the owner's: the topic registry, the history lock, the IO
 * threads' queues (sy_io_push, not _later) and the bus' queue are safe
 * from any thread. */
static int publish_from_io(void *ctx, const char *topic, size_t topic_len, const void *data, size_t len,
                           const void *meta, size_t meta_len, uint64_t exclude, uint64_t exclude_node) {
    size_t n = 0;
    sy_pub_extra_t x = {.meta = meta, .meta_len = meta_len, .exclude = exclude, .exclude_node = exclude_node};
    return sy_server_publish_x(ctx, topic, topic_len, data, len, SY_SEND_COMPRESS, &x, &n);
}

sy_err_t sy_server_set_pusher(sy_server_t *s, struct sy_pusher_apps *apps, const sy_pusher_cfg_t *cfg, uint64_t *node,
                              char *err, size_t errlen) {
    if (s->listening || s->shared.proto_state != NULL) {
        snprintf(err, errlen, "pusher: set once, before the server listens");
        return EBUSY;
    }
    sy_pusher_srv_t *p = NULL;
    sy_err_t rc = sy_pusher_srv_new(apps, cfg, s->shared.nthreads, &p, err, errlen);
    if (rc != 0)
        return rc;
    rc = sy_io_add_protocol(&s->shared, NULL, &sy_pusher_proto);
    if (rc != 0) {
        snprintf(err, errlen, "pusher: no room for one more message protocol");
        sy_pusher_srv_free(p);
        return rc;
    }
    s->shared.proto_state = p;
    s->shared.publish = publish_from_io;
    s->shared.publish_ctx = s;
    *node = sy_pusher_srv_node(p);
    return 0;
}

uint64_t sy_server_pusher_node(const sy_server_t *s) {
    return s->shared.proto_state != NULL ? sy_pusher_srv_node(s->shared.proto_state) : 0;
}

bool sy_server_tls(sy_server_t *s) { return s->shared.transport != &sy_stream_plain_ops; }

void sy_server_batch_done(sy_server_t *s, sy_batch_t *batch) {
    size_t bytes = sy_batch_bytes(batch);
    unsigned t = batch->thread;
    uint32_t seq = batch->seq;
    sy_batch_free(batch);
    if (s != NULL && s->listening && t < s->shared.nthreads)
        sy_io_batch_done(s->io[t], bytes, seq);
}

/* The bus has stopped: no sync comes any more, so subscriptions waiting
 * for one go to their threads now (which close them with the rest, or,
 * ended already, give their references back). */
static void unpark_all(sy_server_t *s) {
    atomic_store(&s->shared.hist.bus_up, false);
    sy_park_expire(&s->shared.hist, INT64_MAX);
}

void sy_server_shutdown(sy_server_t *s, unsigned deadline_ms) {
    if (!s->listening)
        return;
    if (s->shutting_down && deadline_ms > 0)
        return;
    /* The bus first: nothing arrives from Redis once the IO threads stop,
     * and what was published before this is sent (briefly waited for). */
    if (s->bus != NULL) {
        sy_bus_stop(s->bus, SY_SERVER_BUS_FLUSH_MS);
        unpark_all(s);
    }
    s->shutting_down = true;
    for (unsigned i = 0; i < s->shared.nthreads; i++) {
        sy_cmd_t cmd = {.type = SY_CMD_STOP, .arg.deadline_ms = deadline_ms};
        /* Out of memory here: the thread still stops at the next forced
         * shutdown (deadline 0), which the caller sends before joining. */
        (void)sy_io_push(s->io[i], &cmd);
    }
}

void sy_server_join(sy_server_t *s) {
    for (unsigned i = 0; s->listening && i < s->shared.nthreads; i++)
        sy_io_join(s->io[i]);
}

void sy_server_destroy(sy_server_t *s) {
    if (s == NULL)
        return;
    if (s->bus != NULL) {
        sy_bus_stop(s->bus, 0);
        unpark_all(s);
        s->shared.topics.on_edge = NULL;
    }
    if (s->listening)
        for (unsigned i = 0; i < s->shared.nthreads; i++)
            sy_io_destroy(s->io[i]);
    /* After the IO threads (their connections' interest went to the bus'
     * queue), before the topics (that queue holds references). */
    sy_bus_destroy(s->bus);
    sy_topics_destroy(&s->shared.topics); /* and their history */
    sy_hist_destroy(&s->shared.hist);
    sy_deflate_once_destroy(&s->shared.deflate_once);
    sy_addrlimit_destroy(s->shared.addrs);
    sy_pusher_srv_free(s->shared.proto_state); /* after the IO threads: their connections' state */
#ifdef SY_WITH_TLS
    if (sy_server_tls(s))
        sy_tls_source_destroy(&s->tls);
    sy_tokens_unref(s->shared.tokens);
#endif
    sy_mutex_destroy(&s->shared.tokens_lock);
    sy_free(s->host);
    sy_free(s->path);
    sy_free(s);
    sy_sock_cleanup(); /* sy_server_create's startup */
}
