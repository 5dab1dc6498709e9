/* sy_pusher_http — see sy_pusher_http.h. */
#include "proto/sy_pusher_http.h"

#include <stdio.h>
#include <string.h>

#include <yyjson.h>

#include "base/sy_alloc.h"
#include "base/sy_json.h"
#include "proto/sy_pusher.h"

typedef struct err_info {
    unsigned status;
    const char *message;
} err_info_t;

static const err_info_t ERRORS[SY_PUSHER_HTTP_ERR_COUNT] = {
#define SY_PUSHER_HTTP_ROW(name, status, msg) [SY_PUSHER_HTTP_##name] = {status, msg},
    SY_PUSHER_HTTP_ERRORS_LIST(SY_PUSHER_HTTP_ROW)
#undef SY_PUSHER_HTTP_ROW
};

static const err_info_t *err_info(sy_pusher_http_err_t e) {
    return (unsigned)e < SY_PUSHER_HTTP_ERR_COUNT ? &ERRORS[e] : &ERRORS[SY_PUSHER_HTTP_NOMEM];
}

unsigned sy_pusher_http_status(sy_pusher_http_err_t e) { return err_info(e)->status; }
const char *sy_pusher_http_err_message(sy_pusher_http_err_t e) { return err_info(e)->message; }

/* ---- the request ----------------------------------------------------------- */

static bool is(const char *s, size_t n, const char *lit) { return n == strlen(lit) && memcmp(s, lit, n) == 0; }

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes s[0..n) to out ('+' as a space when plus); its length,
 * or -1 for a '%' not followed by two hex digits. */
static long decode(const char *s, size_t n, char *out, bool plus) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
            int lo = hi >= 0 ? hexval((unsigned char)s[i + 2]) : -1;
            if (lo < 0)
                return -1;
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[o++] = plus && c == '+' ? ' ' : c;
        }
    }
    return (long)o;
}

typedef struct param {
    const char *k, *v;
    size_t klen, vlen;
} param_t;

static int key_cmp(const param_t *a, const param_t *b) {
    int c = memcmp(a->k, b->k, a->klen < b->klen ? a->klen : b->klen);
    return c != 0 ? c : (a->klen > b->klen) - (a->klen < b->klen);
}

/* The segment of p[0..n) from *at to the next '/' (or the end). */
static bool segment(const char *p, size_t n, size_t *at, const char **s, size_t *len) {
    size_t i = *at;
    while (i < n && p[i] != '/')
        i++;
    *s = p + *at;
    *len = i - *at;
    *at = i;
    return *len > 0;
}

/* The route of path p[0..n); SY_PUSHER_HTTP_NOT_FOUND when none. The
 * name segment (raw) in *name. */
static sy_pusher_http_err_t route_of(const char *p, size_t n, sy_pusher_req_t *r, const char **name, size_t *name_len) {
    static const char APPS[] = "/apps/";
    if (n < sizeof(APPS) || memcmp(p, APPS, sizeof(APPS) - 1) != 0)
        return SY_PUSHER_HTTP_NOT_FOUND;
    size_t at = sizeof(APPS) - 1;
    if (!segment(p, n, &at, &r->app_id, &r->app_id_len))
        return SY_PUSHER_HTTP_NOT_FOUND;
    const char *rest = p + at;
    size_t rest_len = n - at;
    if (is(rest, rest_len, "/events")) {
        r->route = SY_PUSHER_API_EVENTS;
        return SY_PUSHER_HTTP_OK;
    }
    if (is(rest, rest_len, "/batch_events")) {
        r->route = SY_PUSHER_API_BATCH_EVENTS;
        return SY_PUSHER_HTTP_OK;
    }
    if (is(rest, rest_len, "/channels")) {
        r->route = SY_PUSHER_API_CHANNELS;
        return SY_PUSHER_HTTP_OK;
    }
    const char *tail;
    size_t tail_len;
    if (rest_len > 10 && memcmp(rest, "/channels/", 10) == 0) {
        at += 10;
        if (!segment(p, n, &at, name, name_len))
            return SY_PUSHER_HTTP_NOT_FOUND;
        tail = p + at;
        tail_len = n - at;
        if (tail_len == 0)
            r->route = SY_PUSHER_API_CHANNEL;
        else if (is(tail, tail_len, "/users"))
            r->route = SY_PUSHER_API_CHANNEL_USERS;
        else
            return SY_PUSHER_HTTP_NOT_FOUND;
        return SY_PUSHER_HTTP_OK;
    }
    if (rest_len > 7 && memcmp(rest, "/users/", 7) == 0) {
        at += 7;
        if (!segment(p, n, &at, name, name_len))
            return SY_PUSHER_HTTP_NOT_FOUND;
        if (!is(p + at, n - at, "/terminate_connections"))
            return SY_PUSHER_HTTP_NOT_FOUND;
        r->route = SY_PUSHER_API_TERMINATE;
        return SY_PUSHER_HTTP_OK;
    }
    return SY_PUSHER_HTTP_NOT_FOUND;
}

/* A decimal of 1 to 18 digits. */
static bool read_int(const char *s, size_t n, int64_t *out) {
    if (n == 0 || n > 18)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Reads the query q[0..n) into params (decoded into *w), sorted by key. */
static sy_pusher_http_err_t read_query(const char *q, size_t n, char **w, param_t *params, size_t *count) {
    size_t np = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && q[j] != '&')
            j++;
        if (j > i) {
            if (np == SY_PUSHER_HTTP_PARAMS_MAX)
                return SY_PUSHER_HTTP_QUERY;
            const char *eq = memchr(q + i, '=', j - i);
            size_t klen = eq != NULL ? (size_t)(eq - (q + i)) : j - i;
            long k = decode(q + i, klen, *w, true);
            if (k < 0)
                return SY_PUSHER_HTTP_QUERY;
            param_t p = {.k = *w, .klen = (size_t)k};
            *w += k;
            long v = eq != NULL ? decode(eq + 1, (size_t)(q + j - eq - 1), *w, true) : 0;
            if (v < 0)
                return SY_PUSHER_HTTP_QUERY;
            p.v = *w;
            p.vlen = (size_t)v;
            *w += v;
            /* Sorted as it goes in; a key twice is refused. */
            size_t at = np;
            while (at > 0 && key_cmp(&params[at - 1], &p) > 0)
                at--;
            if (at > 0 && key_cmp(&params[at - 1], &p) == 0)
                return SY_PUSHER_HTTP_QUERY;
            memmove(params + at + 1, params + at, (np - at) * sizeof(param_t));
            params[at] = p;
            np++;
        }
        i = j + 1;
    }
    *count = np;
    return SY_PUSHER_HTTP_OK;
}

static const param_t *get(const param_t *params, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (is(params[i].k, params[i].klen, key))
            return &params[i];
    return NULL;
}

/* The request's name segment, decoded and checked for its route. */
static sy_pusher_http_err_t check_name(sy_pusher_req_t *r, size_t max_channel_len) {
    if (r->route == SY_PUSHER_API_TERMINATE) {
        if (r->name_len == 0 || r->name_len > SY_PUSHER_USER_ID_MAX)
            return SY_PUSHER_HTTP_USER_ID;
        for (size_t i = 0; i < r->name_len; i++)
            if ((unsigned char)r->name[i] < 0x20 || r->name[i] == 0x7f)
                return SY_PUSHER_HTTP_USER_ID;
        return SY_PUSHER_HTTP_OK;
    }
    if (r->route != SY_PUSHER_API_CHANNEL && r->route != SY_PUSHER_API_CHANNEL_USERS)
        return SY_PUSHER_HTTP_OK;
    sy_pusher_chan_t c;
    if (sy_pusher_channel_check(r->name, r->name_len, max_channel_len, &c) != SY_PUSHER_OK)
        return SY_PUSHER_HTTP_CHANNEL_NAME;
    if (r->route == SY_PUSHER_API_CHANNEL_USERS && c.type != SY_PUSHER_PRESENCE)
        return SY_PUSHER_HTTP_PRESENCE_ONLY;
    return SY_PUSHER_HTTP_OK;
}

static void put(char **w, const void *p, size_t n) {
    if (n > 0)
        memcpy(*w, p, n);
    *w += n;
}

static sy_pusher_http_err_t request(const char *method, size_t method_len, const char *target, size_t target_len,
                                    size_t body_len, int64_t now, size_t max_channel_len, sy_pusher_req_t *r) {
    const char *qm = memchr(target, '?', target_len);
    size_t path_len = qm != NULL ? (size_t)(qm - target) : target_len;
    const char *name_raw = NULL;
    size_t name_raw_len = 0;
    sy_pusher_http_err_t e = route_of(target, path_len, r, &name_raw, &name_raw_len);
    if (e != SY_PUSHER_HTTP_OK)
        return e;
    bool get_route = r->route == SY_PUSHER_API_CHANNELS || r->route == SY_PUSHER_API_CHANNEL ||
                     r->route == SY_PUSHER_API_CHANNEL_USERS;
    if (!is(method, method_len, get_route ? "GET" : "POST"))
        return SY_PUSHER_HTTP_METHOD;
    /* One block: the app id, the decoded name and parameters (no longer
     * than the target together), then the string to sign (method, path,
     * query, 2 '\n', and an '=' for each parameter sent without one). */
    r->block = sy_malloc(2 * target_len + method_len + 2 + SY_PUSHER_HTTP_PARAMS_MAX);
    if (r->block == NULL)
        return SY_PUSHER_HTTP_NOMEM;
    char *w = r->block;
    put(&w, r->app_id, r->app_id_len); /* in the block: nothing points into the target */
    r->app_id = w - r->app_id_len;
    if (name_raw != NULL) {
        long k = decode(name_raw, name_raw_len, w, false);
        if (k < 0)
            return SY_PUSHER_HTTP_NOT_FOUND;
        r->name = w;
        r->name_len = (size_t)k;
        w += k;
    }
    param_t params[SY_PUSHER_HTTP_PARAMS_MAX];
    size_t np = 0;
    if (qm != NULL && (e = read_query(qm + 1, target_len - path_len - 1, &w, params, &np)) != SY_PUSHER_HTTP_OK)
        return e;
    const param_t *key = get(params, np, "auth_key"), *ts = get(params, np, "auth_timestamp"),
                  *ver = get(params, np, "auth_version"), *sig = get(params, np, "auth_signature"),
                  *md5 = get(params, np, "body_md5"), *info = get(params, np, "info"),
                  *prefix = get(params, np, "filter_by_prefix");
    if (key == NULL || key->vlen == 0)
        return SY_PUSHER_HTTP_NO_KEY;
    if (ts == NULL || !read_int(ts->v, ts->vlen, &r->auth_timestamp))
        return SY_PUSHER_HTTP_NO_TIMESTAMP;
    if (r->auth_timestamp > now + SY_PUSHER_HTTP_SKEW || r->auth_timestamp < now - SY_PUSHER_HTTP_SKEW)
        return SY_PUSHER_HTTP_TIMESTAMP;
    if (ver == NULL || !is(ver->v, ver->vlen, "1.0"))
        return SY_PUSHER_HTTP_VERSION;
    if (sig == NULL || sig->vlen == 0)
        return SY_PUSHER_HTTP_NO_SIGNATURE;
    if (body_len > 0 && md5 == NULL)
        return SY_PUSHER_HTTP_NO_BODY_MD5;
    if ((e = check_name(r, max_channel_len)) != SY_PUSHER_HTTP_OK)
        return e;
    r->auth_key = key->v;
    r->auth_key_len = key->vlen;
    r->auth_signature = sig->v;
    r->auth_signature_len = sig->vlen;
    if (md5 != NULL) {
        r->body_md5 = md5->v;
        r->body_md5_len = md5->vlen;
    }
    if (info != NULL) {
        r->info = info->v;
        r->info_len = info->vlen;
    }
    if (prefix != NULL) {
        r->filter_by_prefix = prefix->v;
        r->filter_by_prefix_len = prefix->vlen;
    }
    /* METHOD "\n" PATH "\n" k=v&k=v (sorted, without auth_signature) */
    r->to_sign = w;
    put(&w, method, method_len);
    put(&w, "\n", 1);
    put(&w, target, path_len);
    put(&w, "\n", 1);
    bool first = true;
    for (size_t i = 0; i < np; i++) {
        if (&params[i] == sig)
            continue;
        if (!first)
            put(&w, "&", 1);
        first = false;
        put(&w, params[i].k, params[i].klen);
        put(&w, "=", 1);
        put(&w, params[i].v, params[i].vlen);
    }
    r->to_sign_len = (size_t)(w - r->to_sign);
    return SY_PUSHER_HTTP_OK;
}

sy_pusher_http_err_t sy_pusher_http_request(const char *method, size_t method_len, const char *target,
                                            size_t target_len, size_t body_len, int64_t now, size_t max_channel_len,
                                            sy_pusher_req_t *out) {
    *out = (sy_pusher_req_t){0};
    sy_pusher_http_err_t e = request(method, method_len, target, target_len, body_len, now, max_channel_len, out);
    if (e != SY_PUSHER_HTTP_OK)
        sy_pusher_req_free(out);
    return e;
}

void sy_pusher_req_free(sy_pusher_req_t *r) {
    sy_free(r->block);
    *r = (sy_pusher_req_t){0};
}

/* Appends s[0..n) to buf[*o..cap) as far as it fits; with quoted, '"',
 * '\\' and '\n' escaped and other control bytes as '?'. */
static void append(char *buf, size_t cap, size_t *o, const char *s, size_t n, bool quoted) {
    for (size_t i = 0; i < n && *o < cap; i++) {
        char c = s[i];
        const char *esc = !quoted ? NULL : c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : NULL;
        if (esc != NULL) {
            if (*o + 2 > cap)
                return;
            buf[(*o)++] = esc[0];
            buf[(*o)++] = esc[1];
        } else {
            buf[(*o)++] = quoted && (unsigned char)c < 0x20 ? '?' : c;
        }
    }
}

static void append_z(char *buf, size_t cap, size_t *o, const char *s) { append(buf, cap, o, s, strlen(s), false); }

size_t sy_pusher_http_message(char *buf, size_t cap, sy_pusher_http_err_t e, const sy_pusher_req_t *r, int64_t now) {
    if (cap == 0)
        return 0;
    size_t o = 0, limit = cap - 1;
    if (e == SY_PUSHER_HTTP_TIMESTAMP && r != NULL) {
        char num[96];
        snprintf(num, sizeof(num), " (%lld) not within %ds of server time (%lld)", (long long)r->auth_timestamp,
                 SY_PUSHER_HTTP_SKEW, (long long)now);
        append_z(buf, limit, &o, "Timestamp expired: Given timestamp");
        append_z(buf, limit, &o, num);
    } else if (e == SY_PUSHER_HTTP_SIGNATURE && r != NULL && r->to_sign != NULL) {
        append_z(buf, limit, &o, "Invalid signature: you should have sent HmacSHA256Hex(\"");
        append(buf, limit, &o, r->to_sign, r->to_sign_len, true);
        append_z(buf, limit, &o, "\", your_secret_key), but you sent \"");
        append(buf, limit, &o, r->auth_signature, r->auth_signature_len, true);
        append_z(buf, limit, &o, "\"");
    } else {
        append_z(buf, limit, &o, sy_pusher_http_err_message(e));
    }
    buf[o] = '\0';
    return o;
}

unsigned sy_pusher_http_info(const char *info, size_t len) {
    unsigned bits = 0;
    size_t i = 0;
    while (info != NULL && i < len) {
        size_t j = i;
        while (j < len && info[j] != ',')
            j++;
        if (is(info + i, j - i, "subscription_count"))
            bits |= SY_PUSHER_INFO_SUBSCRIPTION_COUNT;
        else if (is(info + i, j - i, "user_count"))
            bits |= SY_PUSHER_INFO_USER_COUNT;
        i = j + 1;
    }
    return bits;
}

/* ---- the events body --------------------------------------------------------- */

static bool str_of(yyjson_val *v, sy_pusher_name_t *out) {
    if (!yyjson_is_str(v))
        return false;
    out->s = yyjson_get_str(v);
    out->len = yyjson_get_len(v);
    return true;
}

static bool has_prefix(const sy_pusher_name_t *n, const char *p) {
    size_t k = strlen(p);
    return n->len >= k && memcmp(n->s, p, k) == 0;
}

/* The channels of event object o: "channels" (an array) or "channel" (a
 * string), not both. Their count, or an error. */
static sy_pusher_http_err_t count_channels(yyjson_val *o, const sy_pusher_http_limits_t *lim, size_t *n) {
    yyjson_val *many = yyjson_obj_get(o, "channels"), *one = yyjson_obj_get(o, "channel");
    if ((many == NULL) == (one == NULL))
        return SY_PUSHER_HTTP_CHANNELS;
    if (one != NULL) {
        *n = 1;
        return yyjson_is_str(one) ? SY_PUSHER_HTTP_OK : SY_PUSHER_HTTP_CHANNELS;
    }
    *n = yyjson_arr_size(many);
    return yyjson_is_arr(many) && *n >= 1 && *n <= lim->max_channels ? SY_PUSHER_HTTP_OK : SY_PUSHER_HTTP_CHANNELS;
}

/* Event object o into ev, its channels written at chans. */
static sy_pusher_http_err_t read_event(yyjson_val *o, const sy_pusher_http_limits_t *lim, sy_pusher_api_event_t *ev,
                                       sy_pusher_name_t *chans) {
    /* pusher: and pusher_internal: names are the protocol's own: a
     * published one would pass for the server's (pusher-js handles
     * pusher_internal:member_added as a member joining). A NUL would end
     * the name in the publish's meta (sy_pusher_meta_split). */
    if (!str_of(yyjson_obj_get(o, "name"), &ev->name) || ev->name.len == 0 || ev->name.len > lim->max_event_len ||
        has_prefix(&ev->name, "pusher:") || has_prefix(&ev->name, "pusher_internal:") ||
        memchr(ev->name.s, 0, ev->name.len) != NULL)
        return SY_PUSHER_HTTP_EVENT_NAME;
    if (!str_of(yyjson_obj_get(o, "data"), &ev->data))
        return SY_PUSHER_HTTP_EVENT_DATA;
    if (ev->data.len > lim->max_payload)
        return SY_PUSHER_HTTP_DATA_TOO_LARGE;
    yyjson_val *one = yyjson_obj_get(o, "channel");
    yyjson_val *arr = one != NULL ? NULL : yyjson_obj_get(o, "channels");
    size_t n = one != NULL ? 1 : yyjson_arr_size(arr);
    for (size_t i = 0; i < n; i++) {
        yyjson_val *c = one != NULL ? one : yyjson_arr_get(arr, i);
        if (!str_of(c, &chans[i]))
            return SY_PUSHER_HTTP_CHANNELS;
        sy_pusher_chan_t t;
        if (sy_pusher_channel_check(chans[i].s, chans[i].len, lim->max_channel_len, &t) != SY_PUSHER_OK)
            return SY_PUSHER_HTTP_CHANNEL_NAME;
        if (t.type == SY_PUSHER_ENCRYPTED && n > 1)
            return SY_PUSHER_HTTP_ENCRYPTED_MULTI;
    }
    ev->channels = chans;
    ev->nchannels = n;
    yyjson_val *sock = yyjson_obj_get(o, "socket_id");
    if (sock != NULL && !yyjson_is_null(sock) &&
        (!str_of(sock, &ev->socket_id) || !sy_pusher_socket_id_valid(ev->socket_id.s, ev->socket_id.len)))
        return SY_PUSHER_HTTP_SOCKET_ID;
    yyjson_val *info = yyjson_obj_get(o, "info");
    if (info != NULL && !yyjson_is_null(info) && !str_of(info, &ev->info))
        return SY_PUSHER_HTTP_INFO;
    return SY_PUSHER_HTTP_OK;
}

static sy_pusher_http_err_t events(sy_pusher_route_t route, const uint8_t *body, size_t len,
                                   const sy_pusher_http_limits_t *lim, sy_pusher_events_t *out) {
    if (len > lim->max_body)
        return SY_PUSHER_HTTP_TOO_LARGE;
    bool nomem;
    yyjson_doc *doc = sy_json_read((const char *)body, len, &nomem);
    if (doc == NULL)
        return nomem ? SY_PUSHER_HTTP_NOMEM : SY_PUSHER_HTTP_BODY_JSON;
    out->doc = doc;
    yyjson_val *root = yyjson_doc_get_root(doc), *items = NULL;
    if (!yyjson_is_obj(root))
        return SY_PUSHER_HTTP_BODY_JSON;
    size_t nev = 1;
    if (route == SY_PUSHER_API_BATCH_EVENTS) {
        items = yyjson_obj_get(root, "batch");
        nev = yyjson_arr_size(items);
        if (!yyjson_is_arr(items) || nev == 0 || nev > lim->max_batch)
            return SY_PUSHER_HTTP_BATCH;
    }
    /* Counted first, so that two allocations hold every event and channel. */
    size_t total = 0;
    for (size_t i = 0; i < nev; i++) {
        yyjson_val *o = items != NULL ? yyjson_arr_get(items, i) : root;
        size_t n = 0;
        if (!yyjson_is_obj(o))
            return SY_PUSHER_HTTP_BATCH;
        sy_pusher_http_err_t e = count_channels(o, lim, &n);
        if (e != SY_PUSHER_HTTP_OK)
            return e;
        total += n;
    }
    out->events = sy_calloc(nev, sizeof(*out->events));
    out->channels = sy_calloc(total, sizeof(*out->channels));
    if (out->events == NULL || out->channels == NULL)
        return SY_PUSHER_HTTP_NOMEM;
    size_t at = 0;
    for (size_t i = 0; i < nev; i++) {
        yyjson_val *o = items != NULL ? yyjson_arr_get(items, i) : root;
        sy_pusher_http_err_t e = read_event(o, lim, &out->events[i], out->channels + at);
        if (e != SY_PUSHER_HTTP_OK)
            return e;
        at += out->events[i].nchannels;
    }
    out->nevents = nev;
    return SY_PUSHER_HTTP_OK;
}

sy_pusher_http_err_t sy_pusher_http_events(sy_pusher_route_t route, const uint8_t *body, size_t len,
                                           const sy_pusher_http_limits_t *lim, sy_pusher_events_t *out) {
    *out = (sy_pusher_events_t){0};
    sy_pusher_http_err_t e = events(route, body, len, lim, out);
    if (e != SY_PUSHER_HTTP_OK)
        sy_pusher_events_free(out);
    return e;
}

void sy_pusher_events_free(sy_pusher_events_t *e) {
    sy_free(e->events);
    sy_free(e->channels);
    if (e->doc != NULL)
        yyjson_doc_free(e->doc);
    *e = (sy_pusher_events_t){0};
}
