#define _GNU_SOURCE
#include "bus/sy_bus_link.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "base/sy_clock.h"
#include "base/sy_inet.h" /* struct timeval, hiredis' timeouts */

/* xorshift32: the backoff's jitter (no need for more). */
static uint32_t next_rand(sy_bus_link_t *l) {
    uint32_t x = l->rng ? l->rng : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    l->rng = x;
    return x;
}

static void set_err(sy_bus_link_t *l, const char *why) {
    snprintf(l->err, sizeof(l->err), "%s", why != NULL && why[0] ? why : "connection closed");
}

/* Waits out the next backoff delay, then connects again. */
static void went_down(sy_bus_link_t *l, const char *why) {
    set_err(l, why);
    l->ac = NULL;
    l->registered = false;
    l->events = 0;
    l->timer_ms = 0;
    l->state = SY_LINK_WAIT;
    unsigned d = l->delay_ms;
    unsigned jitter = d / 5;
    unsigned actual = jitter ? d - jitter + next_rand(l) % (2 * jitter + 1) : d;
    l->retry_ms = sy_clock_ms() + actual;
    unsigned max = l->conf->backoff_max_ms;
    l->delay_ms = d >= max / 2 ? max : d * 2;
    l->ops->down(l->ctx, l, l->err);
}

/* Why an I/O error happened: OpenSSL's reason over TLS, else hiredis'. */
static const char *io_error(const sy_bus_link_t *l, const char *hiredis_says, char *buf, size_t len) {
    const char *tls = l->conf->tls_error != NULL ? l->conf->tls_error(buf, len) : NULL;
    return tls != NULL ? tls : hiredis_says;
}

/* hiredis' adapter hooks: what it wants from the poller. */
static void sync_poll(sy_bus_link_t *l) {
    if (l->ac == NULL)
        return;
    int rc;
    if (!l->registered) {
        l->fd = (int)l->ac->c.fd; /* a SOCKET on Windows: net/sy_sock.h says why it fits */
        rc = sy_poll_add(l->poll, l->fd, l->events, (uint64_t)(uintptr_t)l);
        l->registered = rc == 0;
    } else {
        rc = sy_poll_mod(l->poll, l->fd, l->events, (uint64_t)(uintptr_t)l);
    }
    if (rc != 0)
        sy_bus_link_fail(l, "the bus poller refused the connection", false);
}

/* hiredis asks for one kind of readiness (on) or drops it: the poller is
 * told when the interest changes. */
static void want(void *d, uint32_t event, bool on) {
    sy_bus_link_t *l = d;
    uint32_t events = on ? l->events | event : l->events & ~event;
    if (events != l->events) {
        l->events = events;
        sync_poll(l);
    }
}

static void ev_add_read(void *d) { want(d, SY_POLL_IN, true); }
static void ev_del_read(void *d) { want(d, SY_POLL_IN, false); }
static void ev_add_write(void *d) { want(d, SY_POLL_OUT, true); }
static void ev_del_write(void *d) { want(d, SY_POLL_OUT, false); }

static void ev_cleanup(void *d) {
    sy_bus_link_t *l = d;
    if (l->registered)
        (void)sy_poll_del(l->poll, l->fd);
    l->registered = false;
    l->events = 0;
    l->timer_ms = 0;
}

static void ev_timer(void *d, struct timeval tv) {
    sy_bus_link_t *l = d;
    int64_t ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    l->timer_ms = sy_clock_ms() + (ms > 0 ? ms : 1);
}

/* Callbacks of a context the link has let go of (closed or failed) are
 * not ours any more: ac->data stays the link (reply callbacks of pending
 * commands need it), l->ac tells. */
static sy_bus_link_t *link_of(const redisAsyncContext *ac) {
    sy_bus_link_t *l = ac->data;
    return l != NULL && l->ac == ac ? l : NULL;
}

static void on_push(redisAsyncContext *ac, void *r) {
    sy_bus_link_t *l = link_of(ac);
    if (l != NULL && l->state == SY_LINK_UP)
        l->ops->push(l->ctx, l, r);
}

static void on_hello(redisAsyncContext *ac, void *r, void *priv) {
    (void)priv;
    sy_bus_link_t *l = link_of(ac);
    redisReply *reply = r;
    if (reply == NULL || l == NULL || l->state != SY_LINK_HELLO)
        return; /* the connection is going away; its disconnect says why */
    if (reply->type == REDIS_REPLY_ERROR) {
        /* Wrong password, no HELLO (Redis < 6)...: Redis' own words. */
        sy_bus_link_fail(l, reply->str, false);
        return;
    }
    l->state = SY_LINK_UP;
    l->attempts = 0;
    l->delay_ms = l->conf->backoff_min_ms;
    l->err[0] = '\0';
    l->ops->up(l->ctx, l);
}

static void on_connect(const redisAsyncContext *cac, int status) {
    redisAsyncContext *ac = (redisAsyncContext *)cac;
    sy_bus_link_t *l = link_of(ac);
    if (l == NULL)
        return;
    if (status != REDIS_OK) {
        /* hiredis frees ac when this returns (no disconnect callback). */
        char buf[SY_BUS_ERRLEN];
        went_down(l, io_error(l, ac->errstr, buf, sizeof(buf)));
        return;
    }
    if (l->conf->tls_attach != NULL) {
        char why[SY_BUS_ERRLEN];
        if (l->conf->tls_attach(l->conf->tls, &ac->c, l->host, why, sizeof(why)) != 0) {
            sy_bus_link_fail(l, why, false);
            return;
        }
    }
    const char *argv[7];
    size_t lens[7];
    int argc = 0;
    argv[argc++] = "HELLO";
    argv[argc++] = "3";
    if (l->conf->pass != NULL) {
        argv[argc++] = "AUTH";
        argv[argc++] = l->conf->user != NULL ? l->conf->user : "default";
        argv[argc++] = l->conf->pass;
    }
    argv[argc++] = "SETNAME";
    argv[argc++] = l->conf->name;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    l->state = SY_LINK_HELLO;
    if (redisAsyncCommandArgv(ac, on_hello, NULL, argc, argv, lens) != REDIS_OK)
        sy_bus_link_fail(l, "out of memory", false);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    sy_bus_link_t *l = link_of(ac);
    if (l == NULL)
        return; /* let go of on purpose (sy_bus_link_close, sy_bus_link_fail) */
    char buf[SY_BUS_ERRLEN];
    const char *why =
        status != REDIS_OK && ac->errstr[0] ? io_error(l, ac->errstr, buf, sizeof(buf)) : "connection closed by Redis";
    went_down(l, why);
}

void sy_bus_link_init(sy_bus_link_t *l, const sy_bus_link_env_t *env, const char *host, uint16_t port, uint32_t seed) {
    memset(l, 0, sizeof(*l));
    l->ops = env->ops;
    l->ctx = env->ctx;
    l->conf = env->lconf;
    l->poll = env->poll;
    l->fd = -1;
    l->state = SY_LINK_IDLE;
    l->delay_ms = env->lconf->backoff_min_ms;
    l->rng = seed | 1u;
    snprintf(l->host, sizeof(l->host), "%s", host);
    l->port = port;
}

void sy_bus_link_connect(sy_bus_link_t *l) {
    if (l->state != SY_LINK_IDLE && l->state != SY_LINK_WAIT)
        return;
    l->attempts++;
    l->err[0] = '\0';
    redisOptions o = {0};
    REDIS_OPTIONS_SET_TCP(&o, l->host, l->port);
    struct timeval tv = {.tv_sec = l->conf->connect_timeout_ms / 1000,
                         .tv_usec = (l->conf->connect_timeout_ms % 1000) * 1000};
    o.connect_timeout = &tv;
    o.async_push_cb = on_push;
    redisAsyncContext *ac = redisAsyncConnectWithOptions(&o);
    if (ac == NULL) {
        went_down(l, "out of memory");
        return;
    }
    if (ac->err) {
        char why[SY_BUS_ERRLEN];
        snprintf(why, sizeof(why), "%s", ac->errstr);
        redisAsyncFree(ac);
        went_down(l, why);
        return;
    }
    if (ac->c.reader != NULL)
        ac->c.reader->maxelements = SY_BUS_READER_MAX_ELEMENTS;
    l->ac = ac;
    l->state = SY_LINK_CONNECTING;
    ac->data = l;
    ac->ev.data = l;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    ac->ev.scheduleTimer = ev_timer;
    (void)redisAsyncSetDisconnectCallback(ac, on_disconnect);
    /* Asks for the first write event (how a connect completes), which
     * also arms the connect timeout. */
    (void)redisAsyncSetConnectCallback(ac, on_connect);
}

/* Lets go of the link's context: its fd leaves the poller now (the next
 * connection may reuse the number), hiredis' hooks are unhooked, and
 * l->ac no longer names it, so none of the link's callbacks runs for it.
 * Freed now, or when hiredis returns from the callback we may be in. */
static void let_go(sy_bus_link_t *l) {
    redisAsyncContext *ac = l->ac;
    l->ac = NULL;
    ev_cleanup(l);
    if (ac == NULL)
        return;
    ac->ev.addRead = ac->ev.delRead = ac->ev.addWrite = ac->ev.delWrite = NULL;
    ac->ev.cleanup = NULL;
    ac->ev.scheduleTimer = NULL;
    redisAsyncFree(ac);
}

void sy_bus_link_close(sy_bus_link_t *l) {
    let_go(l);
    l->state = SY_LINK_IDLE;
}

void sy_bus_link_fail(sy_bus_link_t *l, const char *err, bool reset) {
    if (reset)
        l->delay_ms = l->conf->backoff_min_ms;
    if (l->ac == NULL)
        return;
    char why[SY_BUS_ERRLEN];
    snprintf(why, sizeof(why), "%s", err); /* err may live in a reply freed with ac */
    let_go(l);
    went_down(l, why);
}

void sy_bus_link_ready(sy_bus_link_t *l, uint32_t events) {
    redisAsyncContext *ac = l->ac;
    if (ac == NULL)
        return;
    if (events & SY_POLL_OUT) {
        redisAsyncHandleWrite(ac);
        if (l->ac != ac)
            return; /* it failed, and is gone */
    }
    if (events & SY_POLL_IN)
        redisAsyncHandleRead(ac);
}

int64_t sy_bus_link_tick(sy_bus_link_t *l, int64_t now_ms) {
    if (l->state == SY_LINK_WAIT && now_ms >= l->retry_ms)
        sy_bus_link_connect(l);
    if (l->ac != NULL && l->timer_ms != 0 && now_ms >= l->timer_ms) {
        l->timer_ms = 0;
        /* Only the connect timeout is armed (no command timeout). */
        if (l->state == SY_LINK_CONNECTING || l->state == SY_LINK_HELLO)
            redisAsyncHandleTimeout(l->ac);
    }
    int64_t next = INT64_MAX;
    if (l->state == SY_LINK_WAIT)
        next = l->retry_ms;
    if (l->ac != NULL && l->timer_ms != 0 && l->timer_ms < next)
        next = l->timer_ms;
    return next;
}

redisAsyncContext *sy_bus_link_ac(sy_bus_link_t *l) { return l->state == SY_LINK_UP ? l->ac : NULL; }

sy_err_t sy_bus_link_append(sy_bus_link_t *l, int argc, const char **argv, const size_t *lens) {
    if (l->state != SY_LINK_UP || l->ac == NULL)
        return ENOTCONN;
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0)
        return ENOMEM;
    int rc = redisAppendFormattedCommand(&l->ac->c, cmd, (size_t)len);
    redisFreeCommand(cmd);
    if (rc != REDIS_OK)
        return ENOMEM;
    ev_add_write(l);
    return 0;
}
