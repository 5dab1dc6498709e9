/* sy_pusher_conn — see sy_pusher_conn.h. */
#include "io/app/sy_pusher_conn.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"

#ifdef SY_WITH_TLS
#include "auth/sy_pusher_auth.h"
#include "io/app/sy_park.h"
#include "io/app/sy_pusher_api.h"
#include "io/app/sy_pusher_cache.h"
#include "io/app/sy_pusher_event.h"
#include "io/app/sy_pusher_presence.h"
#include "io/app/sy_pusher_req.h"
#include "io/app/sy_pusher_user.h"
#include "io/app/sy_subs.h"
#include "io/conn/sy_conn.h"
#include "io/model/sy_topic.h"
#include "io/wire/sy_reply.h"
#include "proto/sy_http.h"
#include "proto/sy_pusher.h"
#include "proto/sy_pusher_http.h"

#include <time.h>

#define PONG_TIMEOUT_S 30 /* pusher-js' pongTimeout: how long the server waits for its ping's answer */

/* A connection's Pusher state, beside it (by slot). */
typedef struct pconn {
    papp_t *app;   /* NULL: refused at open (code) */
    uint16_t code; /* the close code of a refusal at open (4001, 4003, 4004, 4007, 4008) */
    bool counted;  /* in app->conns */
    bool ping_out; /* a pusher:ping is out, sent at ping_ms */
    int64_t ping_ms;
    int64_t ev_tat_us; /* client events' rate (GCRA): their theoretical arrival time */
    int64_t opened_ms;
    sy_pusher_signin_t *user; /* signed in (sy_pusher_user.h), or NULL */
    uint8_t sid_len;
    char sid[SY_PUSHER_SOCKET_ID_MAX];
    sy_pusher_pres_t *pres;        /* its presence channels' user ids (io/app/sy_pusher_presence.h) */
    sy_pusher_cache_waits_t waits; /* cache subscriptions to answer (io/app/sy_pusher_cache.h) */
} pconn_t;

struct pthr {
    pconn_t **by_slot;
    uint32_t cap;
};
typedef struct pthr pthr_t;

sy_err_t sy_pusher_srv_new(sy_pusher_apps_t *apps, const sy_pusher_cfg_t *cfg, unsigned nthreads, sy_pusher_srv_t **out,
                           char *err, size_t errlen) {
    sy_pusher_srv_t *p = sy_calloc(1, sizeof(*p));
    if (p == NULL)
        return ENOMEM;
    p->app = sy_calloc(cfg->napps ? cfg->napps : 1, sizeof(*p->app));
    p->threads = sy_calloc(nthreads, sizeof(*p->threads));
    p->prefix = sy_malloc(cfg->path_prefix_len + 1);
    if (p->app == NULL || p->threads == NULL || p->prefix == NULL) {
        sy_pusher_srv_free(p);
        return ENOMEM;
    }
    memcpy(p->prefix, cfg->path_prefix, cfg->path_prefix_len);
    p->prefix[cfg->path_prefix_len] = 0;
    p->prefix_len = cfg->path_prefix_len;
    p->nthreads = nthreads;
    p->napps = cfg->napps;
    for (size_t i = 0; i < cfg->napps; i++) {
        papp_t *a = &p->app[i];
        a->app = sy_pusher_apps_by_id(apps, cfg->app_ids[i], cfg->app_id_lens[i]);
        if (a->app == NULL || cfg->app_id_lens[i] > SY_PUSHER_ID_MAX) {
            snprintf(err, errlen, "pusher: no app with id '%.*s' in the table", (int)cfg->app_id_lens[i],
                     cfg->app_ids[i]);
            sy_pusher_srv_free(p);
            return EINVAL;
        }
        if (i > 0) {
            memcpy(a->prefix, cfg->app_ids[i], cfg->app_id_lens[i]);
            a->prefix[cfg->app_id_lens[i]] = ':';
            a->prefix_len = cfg->app_id_lens[i] + 1;
        }
        a->enabled = cfg->enabled[i];
        a->user_auth = cfg->user_auth != NULL && cfg->user_auth[i];
        a->index = (uint32_t)i;
        a->hooks = cfg->hooks != NULL ? cfg->hooks[i] : 0;
        atomic_init(&a->conns, 0);
    }
    sy_pusher_apps_ref(apps);
    p->apps = apps;
    p->node = sy_pusher_socket_node();
    p->activity_s = cfg->activity_timeout_s ? cfg->activity_timeout_s : SY_PUSHER_ACTIVITY_TIMEOUT;
    p->user_timeout_ms = cfg->user_auth_timeout_ms ? cfg->user_auth_timeout_ms : 30000;
    p->cache_ttl_s = cfg->cache_ttl_s;
    *out = p;
    return 0;
}

void sy_pusher_srv_free(sy_pusher_srv_t *p) {
    if (p == NULL)
        return;
    for (unsigned i = 0; p->threads != NULL && i < p->nthreads; i++) {
        for (uint32_t k = 0; k < p->threads[i].cap; k++) {
            if (p->threads[i].by_slot[k] != NULL)
                sy_pusher_pres_free(&p->threads[i].by_slot[k]->pres);
            sy_free(p->threads[i].by_slot[k]);
        }
        sy_free(p->threads[i].by_slot);
    }
    sy_free(p->threads);
    sy_free(p->app);
    sy_free(p->prefix);
    if (p->apps != NULL)
        sy_pusher_apps_unref(p->apps);
    sy_free(p);
}

uint64_t sy_pusher_srv_node(const sy_pusher_srv_t *p) { return p->node; }

/* Whether topic[0..len) is a cache channel of one of p's apps, with the
 * apps' cacheTtl in *ttl_s. Any thread. */
static bool cache_topic(const sy_pusher_srv_t *p, const char *topic, size_t len, uint32_t *ttl_s) {
    const char *colon = memchr(topic, ':', len);
    const char *ch = topic;
    size_t ch_len = len;
    if (colon != NULL) { /* "<id>:<channel>": an app of this server's other than the first */
        size_t pl = (size_t)(colon - topic) + 1;
        bool ours = false;
        for (size_t i = 1; i < p->napps && !ours; i++)
            ours = p->app[i].prefix_len == pl && memcmp(p->app[i].prefix, topic, pl) == 0;
        if (!ours)
            return false;
        ch += pl;
        ch_len -= pl;
    }
    sy_pusher_chan_t chan;
    static const char *const CACHE[] = {"cache-", "private-cache-", "private-encrypted-cache-", "presence-cache-"};
    bool prefixed = false; /* the common case (not one) decided by its first bytes */
    for (size_t i = 0; i < sizeof(CACHE) / sizeof(CACHE[0]) && !prefixed; i++)
        prefixed = ch_len > strlen(CACHE[i]) && memcmp(ch, CACHE[i], strlen(CACHE[i])) == 0;
    if (!prefixed || sy_pusher_channel_check(ch, ch_len, ch_len, &chan) != SY_PUSHER_OK || !chan.cache)
        return false;
    *ttl_s = p->cache_ttl_s;
    return true;
}

/* The table's keeps: a cache channel's topic keeps its last event, but for
 * the pusher_internal: events published to it (a presence-cache channel's
 * members), which are delivered, not kept; every node decides the same
 * (the meta travels with the publish). */
static sy_keep_t pusher_keeps(const void *state, const char *topic, size_t len, const void *meta, size_t meta_len,
                              uint32_t *ttl_s) {
    if (!cache_topic(state, topic, len, ttl_s))
        return SY_KEEP_DEFAULT;
    return sy_pusher_cache_unkept(meta, meta_len) ? SY_KEEP_NOT : SY_KEEP_LAST;
}

/* c's cell in its thread's table (made when make: NULL out of memory). */
static pconn_t **cell(sy_io_t *io, const sy_conn_t *c, bool make) {
    pthr_t *t = &sy_pusher_srv_of(io)->threads[sy_io_ctx(io)->index];
    if (c->slot >= t->cap) {
        if (!make)
            return NULL;
        uint32_t cap = t->cap ? t->cap : 64;
        while (cap <= c->slot)
            cap *= 2;
        pconn_t **a = sy_realloc(t->by_slot, (size_t)cap * sizeof(*a));
        if (a == NULL)
            return NULL;
        memset(a + t->cap, 0, (size_t)(cap - t->cap) * sizeof(*a));
        t->by_slot = a;
        t->cap = cap;
    }
    return &t->by_slot[c->slot];
}

static pconn_t *state_of(sy_io_t *io, const sy_conn_t *c) {
    pconn_t **r = cell(io, c, false);
    return r != NULL ? *r : NULL;
}

/* Queues a frame made for c, in order, never dropped (NULL: out of memory,
 * c fails 1011). */
static void say(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m) {
    if (m == NULL) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (!sy_conn_notice(io, c, m))
        sy_refbuf_release(m);
}

/* ---- the upgrade and the open ---------------------------------------------------- */

/* <prefix>/app/<key>[?query]: claimed, with the app the key names (or the
 * refusal to tell at open). */
static bool pusher_claim(sy_io_t *io, sy_conn_t *c, const char *target, size_t len) {
    sy_pusher_srv_t *p = sy_pusher_srv_of(io);
    size_t path_len = 0;
    while (path_len < len && target[path_len] != '?' && target[path_len] != '#')
        path_len++;
    if (path_len < p->prefix_len + 5 || memcmp(target, p->prefix, p->prefix_len) != 0 ||
        memcmp(target + p->prefix_len, "/app/", 5) != 0)
        return false;
    const char *key = target + p->prefix_len + 5;
    size_t key_len = path_len - p->prefix_len - 5;
    if (key_len == 0 || memchr(key, '/', key_len) != NULL)
        return false;
    pconn_t **r = cell(io, c, true);
    pconn_t *s = r != NULL ? sy_calloc(1, sizeof(*s)) : NULL;
    if (s == NULL)
        return false; /* answered as any other request: no Pusher state to keep */
    *r = s;
    const sy_pusher_app_t *app = sy_pusher_apps_by_key(p->apps, key, key_len);
    for (size_t i = 0; app != NULL && i < p->napps; i++)
        if (p->app[i].app == app)
            s->app = &p->app[i];
    size_t pos = 0, vlen = 0;
    const char *v = NULL;
    unsigned version = 0;
    bool has_version = sy_http_query_next(target, len, SY_HTTP_LIT("protocol"), &pos, &v, &vlen) && vlen > 0;
    for (size_t i = 0; has_version && i < vlen && i < 4 && v[i] >= '0' && v[i] <= '9'; i++)
        version = version * 10 + (unsigned)(v[i] - '0');
    if (s->app == NULL)
        s->code = 4001;
    else if (!s->app->enabled)
        s->code = 4003;
    else if (!has_version)
        s->code = 4008; /* Pusher: no protocol version given */
    else if (version != SY_PUSHER_PROTOCOL)
        s->code = 4007; /* Pusher: a version it does not speak (7 is the only one) */
    return true;
}

static const char *refusal(uint16_t code) {
    switch (code) {
    case 4001:
        return "App key not in this server";
    case 4003:
        return "App is disabled";
    case 4004:
        return "App is over its connection quota";
    case 4008:
        return "No protocol version supplied: protocol=7 expected";
    default:
        return "Unsupported protocol version: 7 expected";
    }
}

static void pusher_opened(sy_io_t *io, sy_conn_t *c) {
    sy_pusher_srv_t *p = sy_pusher_srv_of(io);
    pconn_t *s = state_of(io, c);
    if (s == NULL) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (s->code == 0) {
        uint32_t max = sy_pusher_app_opts(s->app->app)->max_connections;
        unsigned n = atomic_fetch_add_explicit(&s->app->conns, 1, memory_order_relaxed) + 1;
        s->counted = true;
        if (max > 0 && n > max)
            s->code = 4004;
    }
    if (s->code != 0) {
        /* What pusher-js reads during its handshake: the error, then the close
         * with the same code (4000-4099: it does not reconnect). */
        const char *why = refusal(s->code);
        say(io, c, sy_pusher_error_frame(s->code, why, strlen(why)));
        if (c->state == SY_CONN_OPEN)
            sy_conn_fail_after(io, c, s->code, why);
        return;
    }
    s->opened_ms = sy_io_ctx(io)->now_ms;
    s->sid_len = (uint8_t)sy_pusher_socket_id(s->sid, p->node, sy_conn_id(io, c));
    say(io, c, sy_pusher_established_frame(s->sid, s->sid_len, p->activity_s));
}

/* A subscription of app a's channel began or ended here: the owner reads
 * its count again, when a's webhooks want subscription_count. */
static void count_changed(sy_io_t *io, const papp_t *a, const char *ch, size_t len) {
    (void)sy_pusher_event_post(
        io, a->index, a->hooks,
        &(sy_pusher_event_t){.type = SY_PUSHER_HOOK_SUBSCRIPTION_COUNT, .channel = ch, .channel_len = len});
}

/* What a cache channel's new subscriber gets after its
 * subscription_succeeded: the last event of t, or pusher:cache_miss and
 * the cache_miss webhook (when the app's webhooks want it). */
static void cache_reply(sy_io_t *io, sy_conn_t *c, const papp_t *a, sy_topic_t *t, const char *ch, size_t len) {
    bool miss = false;
    if (c->state == SY_CONN_OPEN)
        say(io, c, sy_pusher_cache_answer(sy_io_ctx(io)->shared, t, ch, len, &miss));
    if (miss)
        (void)sy_pusher_event_post(
            io, a->index, a->hooks,
            &(sy_pusher_event_t){.type = SY_PUSHER_HOOK_CACHE_MISS, .channel = ch, .channel_len = len});
}

static void pusher_closing(sy_io_t *io, sy_conn_t *c) {
    pconn_t **r = cell(io, c, false);
    pconn_t *s = r != NULL ? *r : NULL;
    if (s == NULL)
        return;
    if (s->counted)
        atomic_fetch_sub_explicit(&s->app->conns, 1, memory_order_relaxed);
    /* Its subscriptions end after this: their counts change. */
    bool counts = s->app != NULL && (s->app->hooks & (1u << SY_PUSHER_HOOK_SUBSCRIPTION_COUNT)) != 0;
    for (uint32_t i = 0; counts && i < c->nsubs; i++)
        count_changed(io, s->app, c->subs[i].topic->name + s->app->prefix_len,
                      c->subs[i].topic->name_len - s->app->prefix_len);
    sy_pusher_cache_waits_free(&s->waits, &sy_io_ctx(io)->shared->topics);
    sy_pusher_pres_free(&s->pres);
    sy_pusher_signin_free(io, s->user);
    sy_free(s);
    *r = NULL;
}

/* The server's ping after activity_timeout of silence (any byte read is
 * activity), the close 4201 when nothing came back within pusher-js' pong
 * timeout (30 s, or the activity timeout when shorter). */
static bool pusher_idle(sy_io_t *io, sy_conn_t *c, int64_t now) {
    pconn_t *s = state_of(io, c);
    if (s == NULL || c->state != SY_CONN_OPEN || s->code != 0)
        return true;
    if (!sy_pusher_signin_idle(io, c, s->user, s->app->user_auth, s->opened_ms, sy_pusher_srv_of(io)->user_timeout_ms,
                               now))
        return false;
    unsigned act = sy_pusher_srv_of(io)->activity_s, pong = act < PONG_TIMEOUT_S ? act : PONG_TIMEOUT_S;
    if (s->ping_out && c->last_rx_ms > s->ping_ms)
        s->ping_out = false;
    if (s->ping_out) {
        if (now - s->ping_ms >= (int64_t)pong * 1000) {
            sy_stat_inc(&sy_io_ctx(io)->stats.timeouts);
            sy_conn_fail(io, c, 4201, "Pong reply not received");
            return false;
        }
    } else if (now - c->last_rx_ms >= (int64_t)act * 1000) {
        s->ping_out = true;
        s->ping_ms = now;
        say(io, c, sy_pusher_ping_frame());
    }
    return c->state == SY_CONN_OPEN;
}

/* ---- a client's messages ------------------------------------------------------------ */

static sy_sub_t *held(sy_conn_t *c, const char *name, size_t len) {
    for (uint32_t i = 0; i < c->nsubs; i++)
        if (c->subs[i].topic->name_len == len && memcmp(c->subs[i].topic->name, name, len) == 0)
            return &c->subs[i];
    return NULL;
}

/* A private or encrypted channel's auth: true when good, else refused. */
static bool auth_ok(sy_io_t *io, sy_conn_t *c, pconn_t *s, const sy_pusher_msg_t *m) {
    sy_pusher_srv_t *p = sy_pusher_srv_of(io);
    sy_pusher_auth_t r = sy_pusher_auth_channel(p->apps, s->app->app, s->sid, s->sid_len, m->channel, m->channel_len,
                                                m->channel_data, m->channel_data_len, m->auth, m->auth_len);
    if (r == SY_PUSHER_AUTH_OK)
        return true;
    if (r == SY_PUSHER_AUTH_NOMEM) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    char signed_str[SY_PUSHER_SOCKET_ID_MAX + 1024], why[2048];
    size_t sl = sy_pusher_auth_string(signed_str, sizeof(signed_str), false, s->sid, s->sid_len, m->channel,
                                      m->channel_len, m->channel_data, m->channel_data_len);
    size_t wl = sy_pusher_auth_message(why, sizeof(why), r, m->auth, m->auth_len, signed_str, sl);
    say(io, c, sy_pusher_subscription_error_frame(m->channel, m->channel_len, "AuthError", why, wl, 401));
    return false;
}

/* A presence subscribe, its auth good: its member read from channel_data
 * (as signed) and handed to the owner, which decides and subscribes
 * (io/app/sy_pusher_presence.h). */
static void presence_subscribe(sy_io_t *io, sy_conn_t *c, pconn_t *s, const sy_pusher_msg_t *m, const char *topic,
                               size_t topic_len) {
    sy_pusher_user_t u;
    sy_pusher_err_t e = m->channel_data != NULL
                            ? sy_pusher_member_parse(m->channel_data, m->channel_data_len,
                                                     sy_pusher_app_opts(s->app->app)->max_member_info, &u)
                            : SY_PUSHER_CHANNEL_DATA;
    if (e == SY_PUSHER_NOMEM) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (e != SY_PUSHER_OK) {
        say(io, c, sy_pusher_err_frame(e, m->channel, m->channel_len));
        return;
    }
    if (!sy_pusher_pres_set(&s->pres, m->channel, m->channel_len, u.id, u.id_len)) {
        sy_pusher_user_free(&u);
        sy_conn_fail_oom(io, c);
        return;
    }
    sy_pusher_presence_join(io, c, (unsigned)(s->app - sy_pusher_srv_of(io)->app), topic, topic_len, m->channel,
                            m->channel_len, u.id, u.id_len, u.info, u.info_len);
    sy_pusher_user_free(&u);
}

/* A presence-cache subscribe (neither held nor waiting), before the owner
 * decides its member: the topic keeps its last event from now (before the
 * owner's subscribe adds its interest, so that with a bus its history
 * syncs), and the subscription waits on c's list (s->waits); once the
 * owner's subscribe lands (after its subscription_succeeded),
 * pusher_subscribed sends the cache answer. False: out of memory (c
 * fails). */
static bool presence_cache_wait(sy_io_t *io, sy_conn_t *c, pconn_t *s, const char *name, size_t n) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    sy_topic_t *t = sy_topic_acquire(&x->shared->topics, name, n, true);
    bool ok = t != NULL && sy_pusher_cache_keep(x->shared, t, sy_pusher_srv_of(io)->cache_ttl_s) == 0 &&
              sy_pusher_cache_wait_add(&s->waits, t, true);
    if (t != NULL)
        sy_topic_release(&x->shared->topics, t); /* the wait holds its own */
    if (!ok)
        sy_conn_fail_oom(io, c);
    return ok;
}

static void subscribe(sy_io_t *io, sy_conn_t *c, pconn_t *s, const sy_pusher_msg_t *m) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    if (m->chan.type == SY_PUSHER_SERVER_TO_USER) { /* joined at the sign-in: only that user's */
        size_t id_len = 0;
        const char *id = sy_pusher_server_to_user_id(m->channel, m->channel_len, &id_len);
        if (s->user == NULL || id_len != s->user->id_len || memcmp(id, s->user->id, id_len) != 0)
            say(io, c, sy_pusher_err_frame(SY_PUSHER_CHANNEL_RESERVED, m->channel, m->channel_len));
        else
            say(io, c, sy_pusher_subscribed_frame(m->channel, m->channel_len));
        return;
    }
    if (sy_pusher_needs_auth(m->chan.type) && !auth_ok(io, c, s, m))
        return;
    char name[SY_PUSHER_ID_MAX + 2 + 1024];
    size_t n = sy_pusher_topic_name(s->app, m->channel, m->channel_len, name, sizeof(name));
    if (n == 0) {
        say(io, c, sy_pusher_err_frame(SY_PUSHER_CHANNEL_LONG, m->channel, m->channel_len));
        return;
    }
    sy_sub_t *sub = held(c, name, n);
    sy_topic_t *t = sub != NULL ? sub->topic : NULL;
    sy_pusher_cache_wait_t *w = t == NULL ? sy_pusher_cache_wait_of(&s->waits, name, n) : NULL;
    if (w != NULL) /* asked again before the first landed: answered once, then */
        w->cancelled = false;
    if (m->chan.type == SY_PUSHER_PRESENCE) { /* held already: no second cache answer */
        if (!m->chan.cache || t != NULL || w != NULL || presence_cache_wait(io, c, s, name, n))
            presence_subscribe(io, c, s, m, name, n);
        return;
    }
    if (w != NULL)
        return;
    if (t == NULL) {
        if ((t = sy_topic_acquire(&x->shared->topics, name, n, true)) == NULL) {
            sy_conn_fail_oom(io, c);
            return;
        }
        /* A cache channel keeps its last event: set before the interest, so
         * that with a bus the topic's subscription syncs its history. */
        if (m->chan.cache && sy_pusher_cache_keep(x->shared, t, sy_pusher_srv_of(io)->cache_ttl_s) != 0) {
            sy_topic_release(&x->shared->topics, t);
            sy_conn_fail_oom(io, c);
            return;
        }
        /* With a bus, its last event may be only in Redis yet: the
         * subscription waits for the topic's sync (sy_park), and
         * pusher_subscribed answers it once it is c's. */
        if (m->chan.cache && x->shared->hist.sequenced) {
            if (!sy_pusher_cache_wait_add(&s->waits, t, false)) {
                sy_topic_release(&x->shared->topics, t);
                sy_conn_fail_oom(io, c);
            } else if (sy_park_subscribe(&x->shared->hist, &x->shared->topics, io, sy_conn_id(io, c), t, NULL, NULL, 0,
                                         x->now_ms) != 0) {
                (void)sy_pusher_cache_wait_take(&s->waits, &x->shared->topics, t, NULL); /* the one just added */
                sy_conn_fail_oom(io, c);                                                 /* t given back */
            }
            return;
        }
        sy_topic_add_interest(&x->shared->topics, t, x->index);
        if (!sy_conn_subscribe(io, c, t)) { /* takes the reference and the interest either way */
            sy_conn_fail_oom(io, c);
            return;
        }
        count_changed(io, s->app, m->channel, m->channel_len);
    }
    say(io, c, sy_pusher_subscribed_frame(m->channel, m->channel_len));
    if (m->chan.cache)
        cache_reply(io, c, s->app, t, m->channel, m->channel_len);
}

static void unsubscribe(sy_io_t *io, sy_conn_t *c, pconn_t *s, const sy_pusher_msg_t *m) {
    size_t ul = sizeof(SY_PUSHER_USER_CHANNEL) - 1;
    if (m->channel_len >= ul && memcmp(m->channel, SY_PUSHER_USER_CHANNEL, ul) == 0)
        return; /* the user's channel is the sign-in's: held while it lives (terminate_connections finds it) */
    char name[SY_PUSHER_ID_MAX + 2 + 1024];
    size_t n = sy_pusher_topic_name(s->app, m->channel, m->channel_len, name, sizeof(name));
    sy_sub_t *sub = n > 0 ? held(c, name, n) : NULL;
    /* Pusher answers nothing. A presence channel's leave is the owner's to
     * decide (a member goes with its user's last connection). */
    sy_pusher_cache_wait_t *w = n > 0 && sub == NULL ? sy_pusher_cache_wait_of(&s->waits, name, n) : NULL;
    if (sub != NULL && sy_conn_unsubscribe(io, c, sub->topic))
        count_changed(io, s->app, m->channel, m->channel_len);
    else if (w != NULL)
        w->cancelled = true; /* undone once it is c's (pusher_subscribed) */
    if (n > 0 && sy_pusher_pres_drop(&s->pres, m->channel, m->channel_len))
        sy_pusher_presence_leave(io, c, (unsigned)(s->app - sy_pusher_srv_of(io)->app), name, n, m->channel,
                                 m->channel_len);
}

/* A client event (client-* on a private channel the connection holds, the
 * app's enableClientMessages on, under maxClientEventsPerSecond): published
 * from here to the channel's other subscribers, on every node; its data
 * (JSON as the client sent it) is the publish's payload, its name the
 * meta. */
static void client_event(sy_io_t *io, sy_conn_t *c, pconn_t *s, const sy_pusher_msg_t *m) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    const sy_pusher_app_opts_t *o = sy_pusher_app_opts(s->app->app);
    const char *why = NULL;
    char name[SY_PUSHER_ID_MAX + 2 + 1024];
    size_t n = sy_pusher_topic_name(s->app, m->channel, m->channel_len, name, sizeof(name));
    if (!o->client_events)
        why = "Client events are not enabled for this app (enableClientMessages)";
    else if (n == 0 || held(c, name, n) == NULL)
        why = "Client event rejected: not subscribed to the channel";
    else if (memchr(m->event, 0, m->event_len) != NULL) /* a NUL ends the name in a publish's meta */
        why = "Client event rejected: a NUL in its name";
    if (why == NULL && o->client_events_per_sec > 0) {
        /* A burst of a second's worth, refilled evenly (GCRA in µs). */
        int64_t now = sy_io_ctx(io)->now_ms * 1000, interval = 1000000 / (int64_t)o->client_events_per_sec;
        int64_t t = s->ev_tat_us < now ? now : s->ev_tat_us;
        if (t - now + interval > 1000000)
            why = "Client event rejected: rate limit (maxClientEventsPerSecond)";
        else
            s->ev_tat_us = t + interval;
    }
    if (why != NULL) {
        say(io, c, sy_pusher_error_frame(4301, why, strlen(why)));
        return;
    }
    const char *data = m->data != NULL ? m->data : "null";
    size_t len = m->data != NULL ? m->data_len : 4;
    /* On a presence channel the meta carries the sender's user id after the
     * event's name (proto/sy_pusher.h: sy_pusher_meta_join). */
    char meta[1024]; /* SY_PUB_META_MAX */
    size_t uid_len = 0, meta_len = 0;
    const char *uid =
        m->chan.type == SY_PUSHER_PRESENCE ? sy_pusher_pres_user(s->pres, m->channel, m->channel_len, &uid_len) : NULL;
    if (uid != NULL)
        meta_len = sy_pusher_meta_join(meta, sizeof(meta), m->event, m->event_len, uid, uid_len);
    const char *ev = meta_len > 0 ? meta : m->event;
    size_t ev_len = meta_len > 0 ? meta_len : m->event_len;
    if (sh->publish(sh->publish_ctx, name, n, data, len, ev, ev_len, sy_conn_id(io, c), 0) != 0) {
        sy_conn_fail_oom(io, c);
        return;
    }
    (void)sy_pusher_event_post(io, s->app->index, s->app->hooks,
                               &(sy_pusher_event_t){.type = SY_PUSHER_HOOK_CLIENT_EVENT,
                                                    .channel = m->channel,
                                                    .channel_len = m->channel_len,
                                                    .event = m->event,
                                                    .event_len = m->event_len,
                                                    .data = data,
                                                    .data_len = len,
                                                    .user_id = uid,
                                                    .user_id_len = uid_len,
                                                    .socket_id = s->sid,
                                                    .socket_id_len = s->sid_len});
}

static void signin(sy_io_t *io, sy_conn_t *c, pconn_t *s, const sy_pusher_msg_t *m) {
    static const char twice[] = "Already signed in";
    if (s->user != NULL) {
        say(io, c, sy_pusher_error_frame(4009, twice, sizeof(twice) - 1));
        return;
    }
    sy_pusher_signin_ctx_t x = {.apps = sy_pusher_srv_of(io)->apps,
                                .app = s->app->app,
                                .socket_id = s->sid,
                                .socket_id_len = s->sid_len,
                                .prefix = s->app->prefix,
                                .prefix_len = s->app->prefix_len};
    s->user = sy_pusher_signin(io, c, &x, m);
}

static void pusher_message(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n) {
    pconn_t *s = state_of(io, c);
    if (s == NULL || s->app == NULL || s->code != 0)
        return;   /* refused at open: closing */
    (void)opcode; /* a binary frame is read as text would be: JSON or not */
    const sy_pusher_app_opts_t *o = sy_pusher_app_opts(s->app->app);
    sy_pusher_limits_t lim = {
        .max_channel_len = o->max_channel_len, .max_event_len = o->max_event_len, .max_data_len = o->max_payload};
    sy_pusher_msg_t m = {0};
    sy_pusher_err_t e = sy_pusher_parse(p, n, &lim, &m);
    if (e != SY_PUSHER_OK) {
        say(io, c, sy_pusher_err_frame(e, m.channel, m.channel_len));
        sy_pusher_msg_free(&m);
        return;
    }
    switch (m.kind) {
    case SY_PUSHER_MSG_PING:
        say(io, c, sy_pusher_pong_frame());
        break;
    case SY_PUSHER_MSG_PONG:
        s->ping_out = false;
        break;
    case SY_PUSHER_MSG_SUBSCRIBE:
        subscribe(io, c, s, &m);
        break;
    case SY_PUSHER_MSG_UNSUBSCRIBE:
        unsubscribe(io, c, s, &m);
        break;
    case SY_PUSHER_MSG_SIGNIN:
        signin(io, c, s, &m);
        break;
    case SY_PUSHER_MSG_CLIENT_EVENT:
        client_event(io, c, s, &m);
        break;
    default: /* ignored, as Pusher does */
        break;
    }
    sy_pusher_msg_free(&m);
}

/* A cache channel's subscription that waited for its topic's sync is c's:
 * its subscription_succeeded (a presence-cache channel's was the owner's,
 * sent before its subscribe), then its last event or cache_miss; or, when
 * c unsubscribed meanwhile, its end. A subscription c did not ask for
 * (server.subscribe()) gets no Pusher answer. */
static void pusher_subscribed(sy_io_t *io, sy_conn_t *c, sy_topic_t *t) {
    pconn_t *s = state_of(io, c);
    sy_pusher_cache_wait_t w; /* its reference given back: c holds t now */
    if (s == NULL || !sy_pusher_cache_wait_take(&s->waits, &sy_io_ctx(io)->shared->topics, t, &w))
        return;
    if (w.cancelled) {
        (void)sy_conn_unsubscribe(io, c, t);
        return;
    }
    const char *ch = t->name + s->app->prefix_len;
    size_t len = t->name_len - s->app->prefix_len;
    if (!w.presence)
        say(io, c, sy_pusher_subscribed_frame(ch, len));
    cache_reply(io, c, s->app, t, ch, len);
}

/* ---- publishes -------------------------------------------------------------------- */

/* The event name of a publish that names none (server.publish(topic,
 * data) without { event }): docs/pusher.md. A publish's meta is its event
 * name. */
#define DEFAULT_EVENT "message"

/* {"event":E,"channel":C,"data":D} once per publish and IO thread: C is the
 * topic's name without its app's "<id>:". */
static sy_refbuf_t *pusher_publish_frame(const sy_topic_t *t, const sy_refbuf_t *plain, const sy_refbuf_t *v1,
                                         const sy_refbuf_t *meta) {
    (void)v1;
    if (meta != NULL && sy_pusher_is_terminate(meta->data, meta->len))
        return sy_pusher_user_publish_frame(t); /* a user's connections terminated */
    if (plain == NULL)
        return NULL;
    const char *ch = t->name;
    size_t len = t->name_len;
    const char *colon = memchr(ch, ':', len);
    if (colon != NULL) {
        len -= (size_t)(colon + 1 - ch);
        ch = colon + 1;
    }
    bool z = atomic_load_explicit(&plain->deflate, memory_order_relaxed) != SY_REFBUF_Z_NONE;
    const char *ev = meta != NULL ? (const char *)meta->data : DEFAULT_EVENT;
    size_t ev_len = meta != NULL ? meta->len : sizeof(DEFAULT_EVENT) - 1, uid_len = 0;
    const char *uid = NULL; /* a client event's on a presence channel: "<event>\0<user id>" */
    if (meta != NULL)
        sy_pusher_meta_split(ev, meta->len, &ev_len, &uid, &uid_len);
    return sy_pusher_event_frame(ev, ev_len, ch, len, sy_refbuf_payload(plain), sy_refbuf_payload_len(plain),
                                 SY_PUSHER_DATA_BYTES, uid, uid_len, z);
}

const sy_msgproto_t sy_pusher_proto = {
    .name = NULL,
    .message = pusher_message,
    .publish_frame = pusher_publish_frame,
    .claim = pusher_claim,
    .request = sy_pusher_request,
    .opened = pusher_opened,
    .idle = pusher_idle,
    .closing = pusher_closing,
    .subscribed = pusher_subscribed,
    .keeps = pusher_keeps,
    .tag = "pusher",
};

#else /* a build without OpenSSL: no app table, no Pusher */

struct sy_pusher_srv {
    int unused;
};

sy_err_t sy_pusher_srv_new(struct sy_pusher_apps *apps, const sy_pusher_cfg_t *cfg, unsigned nthreads,
                           sy_pusher_srv_t **out, char *err, size_t errlen) {
    (void)apps;
    (void)cfg;
    (void)nthreads;
    *out = NULL;
    snprintf(err, errlen, "pusher: this build has no OpenSSL");
    return ENOTSUP;
}

void sy_pusher_srv_free(sy_pusher_srv_t *p) { sy_free(p); }

uint64_t sy_pusher_srv_node(const sy_pusher_srv_t *p) {
    (void)p;
    return 0;
}

const sy_msgproto_t sy_pusher_proto = {.name = NULL};

#endif
