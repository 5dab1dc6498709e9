/* sy_pusher_api — see sy_pusher_api.h. */
#include "io/app/sy_pusher_api.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "auth/sy_pusher_auth.h"
#include "base/sy_alloc.h"
#include "base/sy_buf.h"
#include "proto/sy_pusher.h"

long sy_pusher_api_user_count(const sy_pusher_api_scope_t *s, sy_topic_t *t) {
    /* The members are the owner's (lib/pusher/presence.js): an events
     * request's answer leaves user_count out. */
    (void)s;
    (void)t;
    return SY_PUSHER_API_NO_COUNT;
}

/* ---- the JSON body -------------------------------------------------------------- */

typedef struct body {
    uint8_t *data;
    size_t len, cap;
    bool nomem;
} body_t;

static void put(body_t *b, const char *s, size_t n) {
    if (!b->nomem && sy_buf_append(&b->data, &b->len, &b->cap, s, n, 256) != 0)
        b->nomem = true;
}

static void put_z(body_t *b, const char *s) { put(b, s, strlen(s)); }

static void put_u(body_t *b, unsigned long v) {
    char num[24];
    int n = snprintf(num, sizeof(num), "%lu", v);
    put(b, num, (size_t)n);
}

/* A channel's name as a JSON string: its bytes never need escaping
 * (sy_pusher_channel_check's alphabet). */
static void put_name(body_t *b, const char *s, size_t n) {
    put(b, "\"", 1);
    put(b, s, n);
    put(b, "\"", 1);
}

/* The 200 with b as its body; b is freed. */
static sy_pusher_http_err_t answer(body_t *b, sy_refbuf_t **out) {
    *out = NULL;
    if (!b->nomem) {
        char head[160];
        int h = snprintf(head, sizeof(head),
                         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: "
                         "close\r\n\r\n",
                         b->len);
        sy_refbuf_t *m = sy_refbuf_alloc(0, (size_t)h + b->len, SY_REFBUF_Z_NONE);
        if (m != NULL) {
            memcpy(m->data, head, (size_t)h);
            if (b->len > 0)
                memcpy(m->data + h, b->data, b->len);
            *out = m;
        }
    }
    sy_free(b->data);
    return *out != NULL ? SY_PUSHER_HTTP_OK : SY_PUSHER_HTTP_NOMEM;
}

/* The channel of topic name n (len) in scope s, or NULL when the topic is
 * not one of the app's channels. */
static const char *channel_of(const sy_pusher_api_scope_t *s, const char *n, size_t len, size_t *ch_len,
                              sy_pusher_chan_t *chan) {
    if (len <= s->prefix_len || memcmp(n, s->prefix, s->prefix_len) != 0)
        return NULL;
    *ch_len = len - s->prefix_len;
    if (sy_pusher_channel_check(n + s->prefix_len, *ch_len, s->max_channel_len, chan) != SY_PUSHER_OK)
        return NULL;
    return n + s->prefix_len;
}

/* ---- GET /channels ------------------------------------------------------------ */

typedef struct listing {
    const sy_pusher_api_scope_t *s;
    const char *filter;
    size_t filter_len;
    sy_topic_t **t;
    size_t n, cap;
    bool nomem;
} listing_t;

/* Under the registry's lock: the app's occupied channels that match the
 * filter, each with a reference (safe here: a topic's last reference is
 * given back under this lock). */
static void list_one(void *ctx, sy_topic_t *t) {
    listing_t *l = ctx;
    size_t len;
    sy_pusher_chan_t chan;
    const char *ch = channel_of(l->s, t->name, t->name_len, &len, &chan);
    if (ch == NULL || l->nomem || sy_topic_subscribers(t) == 0 || len < l->filter_len ||
        (l->filter_len > 0 && memcmp(ch, l->filter, l->filter_len) != 0))
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        sy_topic_t **a = sy_realloc(l->t, cap * sizeof(*a));
        if (a == NULL) {
            l->nomem = true;
            return;
        }
        l->t = a;
        l->cap = cap;
    }
    sy_topic_ref(t);
    l->t[l->n++] = t;
}

static sy_pusher_http_err_t get_channels(const sy_pusher_api_scope_t *s, const sy_pusher_req_t *r, unsigned info,
                                         sy_refbuf_t **out) {
    static const char PRESENCE[] = "presence-";
    if ((info & SY_PUSHER_INFO_USER_COUNT) && (r->filter_by_prefix_len < sizeof(PRESENCE) - 1 ||
                                               memcmp(r->filter_by_prefix, PRESENCE, sizeof(PRESENCE) - 1) != 0))
        return SY_PUSHER_HTTP_USER_COUNT; /* Pusher: user_count only with filter_by_prefix=presence- */
    if ((info & SY_PUSHER_INFO_USER_COUNT) || s->cluster)
        return SY_PUSHER_HTTP_OK; /* the owner answers */
    listing_t l = {.s = s, .filter = r->filter_by_prefix, .filter_len = r->filter_by_prefix_len};
    sy_topics_each(s->topics, list_one, &l);
    body_t b = {.nomem = l.nomem};
    put_z(&b, "{\"channels\":{");
    for (size_t i = 0; i < l.n; i++) {
        sy_topic_t *t = l.t[i];
        if (i > 0)
            put(&b, ",", 1);
        put_name(&b, t->name + s->prefix_len, t->name_len - s->prefix_len);
        put(&b, ":{", 2);
        if (info & SY_PUSHER_INFO_SUBSCRIPTION_COUNT) {
            put_z(&b, "\"subscription_count\":");
            put_u(&b, sy_topic_subscribers(t));
        }
        put(&b, "}", 1);
    }
    put_z(&b, "}}");
    for (size_t i = 0; i < l.n; i++)
        sy_topic_release(s->topics, l.t[i]);
    sy_free(l.t);
    return answer(&b, out);
}

/* ---- GET /channels/<name> ----------------------------------------------------- */

static sy_pusher_http_err_t get_channel(const sy_pusher_api_scope_t *s, const sy_pusher_req_t *r, unsigned info,
                                        sy_refbuf_t **out) {
    sy_pusher_chan_t chan;
    if (sy_pusher_channel_check(r->name, r->name_len, s->max_channel_len, &chan) != SY_PUSHER_OK)
        return SY_PUSHER_HTTP_CHANNEL_NAME;
    if ((info & SY_PUSHER_INFO_USER_COUNT) && chan.type != SY_PUSHER_PRESENCE)
        return SY_PUSHER_HTTP_USER_COUNT;
    if ((info & SY_PUSHER_INFO_USER_COUNT) || s->cluster)
        return SY_PUSHER_HTTP_OK; /* the owner answers */
    char name[SY_PUSHER_ID_MAX + 2 + 1024];
    if (s->prefix_len + r->name_len > sizeof(name))
        return SY_PUSHER_HTTP_CHANNEL_NAME;
    memcpy(name, s->prefix, s->prefix_len);
    memcpy(name + s->prefix_len, r->name, r->name_len);
    sy_topic_t *t = sy_topic_acquire(s->topics, name, s->prefix_len + r->name_len, false);
    unsigned subs = t != NULL ? sy_topic_subscribers(t) : 0;
    if (t != NULL)
        sy_topic_release(s->topics, t);
    body_t b = {0};
    put_z(&b, subs > 0 ? "{\"occupied\":true" : "{\"occupied\":false");
    if (info & SY_PUSHER_INFO_SUBSCRIPTION_COUNT) {
        put_z(&b, ",\"subscription_count\":");
        put_u(&b, subs);
    }
    put(&b, "}", 1);
    return answer(&b, out);
}

sy_pusher_http_err_t sy_pusher_api_get(const sy_pusher_api_scope_t *s, const sy_pusher_req_t *r, sy_refbuf_t **out) {
    *out = NULL;
    unsigned info = sy_pusher_http_info(r->info, r->info_len);
    if (r->route == SY_PUSHER_API_CHANNELS)
        return get_channels(s, r, info, out);
    return get_channel(s, r, info, out);
}

/* ---- an events request's answer ------------------------------------------------- */

/* {"subscription_count":n,"user_count":m} of channel c, as info asks. */
static void put_attrs(const sy_pusher_api_scope_t *s, body_t *b, const sy_pusher_name_t *c, unsigned info) {
    char name[SY_PUSHER_ID_MAX + 2 + 1024];
    sy_topic_t *t = NULL;
    if (s->prefix_len + c->len <= sizeof(name)) {
        memcpy(name, s->prefix, s->prefix_len);
        memcpy(name + s->prefix_len, c->s, c->len);
        t = sy_topic_acquire(s->topics, name, s->prefix_len + c->len, false);
    }
    unsigned subs = t != NULL ? sy_topic_subscribers(t) : 0;
    sy_pusher_chan_t chan;
    bool presence =
        sy_pusher_channel_check(c->s, c->len, SIZE_MAX, &chan) == SY_PUSHER_OK && chan.type == SY_PUSHER_PRESENCE;
    long users = t != NULL && presence && (info & SY_PUSHER_INFO_USER_COUNT) ? sy_pusher_api_user_count(s, t)
                                                                             : SY_PUSHER_API_NO_COUNT;
    if (t != NULL)
        sy_topic_release(s->topics, t);
    put(b, "{", 1);
    const char *sep = "";
    if (info & SY_PUSHER_INFO_SUBSCRIPTION_COUNT) {
        put_z(b, "\"subscription_count\":");
        put_u(b, subs);
        sep = ",";
    }
    if (users >= 0) {
        put_z(b, sep);
        put_z(b, "\"user_count\":");
        put_u(b, (unsigned long)users);
    }
    put(b, "}", 1);
}

sy_pusher_http_err_t sy_pusher_api_trigger_answer(const sy_pusher_api_scope_t *s, sy_pusher_route_t route,
                                                  const sy_pusher_events_t *ev, sy_refbuf_t **out) {
    body_t b = {0};
    bool asked = false;
    for (size_t i = 0; i < ev->nevents; i++)
        asked = asked || sy_pusher_http_info(ev->events[i].info.s, ev->events[i].info.len) != 0;
    if (!asked) {
        put_z(&b, "{}");
    } else if (route == SY_PUSHER_API_BATCH_EVENTS) {
        /* {"batch":[attrs of each event's channel, or {}]}, in the batch's order */
        put_z(&b, "{\"batch\":[");
        for (size_t i = 0; i < ev->nevents; i++) {
            const sy_pusher_api_event_t *e = &ev->events[i];
            if (i > 0)
                put(&b, ",", 1);
            put_attrs(s, &b, &e->channels[0], sy_pusher_http_info(e->info.s, e->info.len));
        }
        put_z(&b, "]}");
    } else {
        /* {"channels":{"<name>":attrs, ...}} */
        const sy_pusher_api_event_t *e = &ev->events[0];
        unsigned info = sy_pusher_http_info(e->info.s, e->info.len);
        put_z(&b, "{\"channels\":{");
        for (size_t k = 0; k < e->nchannels; k++) {
            if (k > 0)
                put(&b, ",", 1);
            put_name(&b, e->channels[k].s, e->channels[k].len);
            put(&b, ":", 1);
            put_attrs(s, &b, &e->channels[k], info);
        }
        put_z(&b, "}}");
    }
    return answer(&b, out);
}
