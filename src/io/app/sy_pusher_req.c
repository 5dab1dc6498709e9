/* sy_pusher_req — Pusher's HTTP API requests on the IO thread (see
 * sy_pusher_req.h and docs/pusher.md, "The HTTP API in the server"). */
#include "io/app/sy_pusher_req.h"

#ifdef SY_WITH_TLS
#include <stdio.h>
#include <time.h>

#include "io/app/sy_pusher_api.h"
#include "io/app/sy_pusher_presence.h"
#include "io/app/sy_pusher_user.h"
#include "io/conn/sy_conn.h"
#include "io/wire/sy_reply.h"
#include "proto/sy_pusher.h"
#include "proto/sy_pusher_http.h"

/* ---- the HTTP API ------------------------------------------------------------------ */

/* Reads "<node>.<conn id>" (checked with sy_pusher_socket_id_valid). */
static void socket_id_split(const char *s, size_t n, uint64_t *node, uint64_t *conn) {
    uint64_t a = 0, b = 0;
    size_t i = 0;
    for (; i < n && s[i] != '.'; i++)
        a = a * 10 + (uint64_t)(s[i] - '0');
    for (i++; i < n; i++)
        b = b * 10 + (uint64_t)(s[i] - '0');
    *node = a;
    *conn = b;
}

static void api_error(sy_io_t *io, sy_conn_t *c, sy_pusher_http_err_t e, const sy_pusher_req_t *r,
                      const sy_pusher_app_opts_t *o) {
    char why[1024];
    size_t n = sy_pusher_http_message(why, sizeof(why), e, r, (int64_t)time(NULL));
    if (o != NULL && (e == SY_PUSHER_HTTP_CHANNELS || e == SY_PUSHER_HTTP_BATCH)) /* the app's limit, by number */
        snprintf(why + n, sizeof(why) - n, " (this app's limit: %u)",
                 (unsigned)(e == SY_PUSHER_HTTP_CHANNELS ? o->max_channels_per_event : o->max_batch));
    sy_reply_error(io, c, (int)sy_pusher_http_status(e), why);
}

static sy_pusher_api_scope_t api_scope(sy_io_t *io, const papp_t *a) {
    return (sy_pusher_api_scope_t){.topics = &sy_io_ctx(io)->shared->topics,
                                   .prefix = a->prefix,
                                   .prefix_len = a->prefix_len,
                                   .max_channel_len = sy_pusher_app_opts(a->app)->max_channel_len};
}

/* The events of an authorized EVENTS or BATCH_EVENTS request, published
 * from here: each event to each of its channels, with its name as the
 * publish's meta and its socket_id left out. */
static sy_pusher_http_err_t api_publish(sy_io_t *io, const papp_t *a, const uint8_t *body, size_t len,
                                        sy_pusher_route_t route, sy_refbuf_t **answer) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    const sy_pusher_app_opts_t *o = sy_pusher_app_opts(a->app);
    sy_pusher_http_limits_t lim = {.max_body = (size_t)o->max_payload * o->max_batch + 65536,
                                   .max_event_len = o->max_event_len,
                                   .max_channel_len = o->max_channel_len,
                                   .max_payload = o->max_payload,
                                   .max_channels = o->max_channels_per_event,
                                   .max_batch = o->max_batch};
    sy_pusher_events_t ev;
    sy_pusher_http_err_t e = sy_pusher_http_events(route, body, len, &lim, &ev);
    if (e != SY_PUSHER_HTTP_OK)
        return e;
    char name[SY_PUSHER_ID_MAX + 2 + 1024];
    for (size_t i = 0; i < ev.nevents && e == SY_PUSHER_HTTP_OK; i++) {
        const sy_pusher_api_event_t *x = &ev.events[i];
        uint64_t node = 0, conn = 0;
        if (x->socket_id.s != NULL)
            socket_id_split(x->socket_id.s, x->socket_id.len, &node, &conn);
        for (size_t k = 0; k < x->nchannels && e == SY_PUSHER_HTTP_OK; k++) {
            size_t n = sy_pusher_topic_name(a, x->channels[k].s, x->channels[k].len, name, sizeof(name));
            if (n == 0 ||
                sh->publish(sh->publish_ctx, name, n, x->data.s, x->data.len, x->name.s, x->name.len, conn, node) != 0)
                e = n == 0 ? SY_PUSHER_HTTP_CHANNEL_NAME : SY_PUSHER_HTTP_NOMEM;
        }
    }
    if (e == SY_PUSHER_HTTP_OK) {
        sy_pusher_api_scope_t sc = api_scope(io, a);
        e = sy_pusher_api_trigger_answer(&sc, route, &ev, answer);
    }
    sy_pusher_events_free(&ev);
    return e;
}

/* terminate_connections: a publish to the user's topic that closes its
 * connections on every node (sy_pusher_user.h). */
static sy_pusher_http_err_t api_terminate(sy_io_t *io, const papp_t *a, const char *id, size_t id_len) {
    const sy_io_shared_t *sh = sy_io_ctx(io)->shared;
    char name[SY_PUSHER_ID_MAX + 2 + sizeof(SY_PUSHER_USER_CHANNEL) + SY_PUSHER_USER_ID_MAX];
    size_t pl = sizeof(SY_PUSHER_USER_CHANNEL) - 1;
    if (id_len == 0 || id_len > SY_PUSHER_USER_ID_MAX)
        return SY_PUSHER_HTTP_USER_ID;
    memcpy(name, a->prefix, a->prefix_len);
    memcpy(name + a->prefix_len, SY_PUSHER_USER_CHANNEL, pl);
    memcpy(name + a->prefix_len + pl, id, id_len);
    return sh->publish(sh->publish_ctx, name, a->prefix_len + pl + id_len, "{}", 2, SY_PUSHER_TERMINATE_META,
                       sizeof(SY_PUSHER_TERMINATE_META) - 1, 0, 0) != 0
               ? SY_PUSHER_HTTP_NOMEM
               : SY_PUSHER_HTTP_OK;
}

/* POST <prefix>/apps/<id>/events and /batch_events: read, authorized and
 * published here; GET /channels and /channels/<name> answered here
 * (sy_pusher_api); /users and terminate_connections are not wired yet
 * (501, after the authorization, so that a bad request gets Pusher's
 * 401 or 404 first). */
bool sy_pusher_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, size_t head) {
    struct sy_pusher_srv *p = sy_pusher_srv_of(io);
    if (req->target_len < p->prefix_len + 6 || memcmp(req->target, p->prefix, p->prefix_len) != 0 ||
        memcmp(req->target + p->prefix_len, "/apps/", 6) != 0)
        return false;
    const char *target = req->target + p->prefix_len;
    size_t target_len = req->target_len - p->prefix_len;
    size_t body_len = 0;
    const sy_http_header_t *cl = sy_http_find_header(req, SY_HTTP_LIT("Content-Length"), NULL);
    for (size_t i = 0; cl != NULL && i < cl->value_len; i++) {
        if (cl->value[i] < '0' || cl->value[i] > '9' || body_len > (64u << 20)) {
            sy_reply_error(io, c, 400, "Invalid Content-Length");
            return true;
        }
        body_len = body_len * 10 + (size_t)(cl->value[i] - '0');
    }
    int64_t now = (int64_t)time(NULL);
    sy_pusher_req_t r;
    sy_pusher_http_err_t e = sy_pusher_http_request(req->method, req->method_len, target, target_len, body_len, now,
                                                    SY_PUSHER_CHANNEL_MAX_DEFAULT * 5, &r);
    if (e != SY_PUSHER_HTTP_OK) {
        api_error(io, c, e, NULL, NULL);
        sy_pusher_req_free(&r);
        return true;
    }
    const sy_pusher_app_t *app = sy_pusher_apps_by_id(p->apps, r.app_id, r.app_id_len);
    const papp_t *a = NULL;
    for (size_t i = 0; app != NULL && i < p->napps; i++)
        if (p->app[i].app == app)
            a = &p->app[i];
    const sy_pusher_app_opts_t *o = a != NULL ? sy_pusher_app_opts(app) : NULL;
    if (a == NULL)
        e = SY_PUSHER_HTTP_UNKNOWN_APP;
    else if (body_len > (size_t)o->max_payload * o->max_batch + 65536)
        e = SY_PUSHER_HTTP_TOO_LARGE;
    if (e != SY_PUSHER_HTTP_OK) {
        api_error(io, c, e, &r, o);
        sy_pusher_req_free(&r);
        return true;
    }
    if (c->rlen < head + body_len) { /* the body is still coming: the head is read again with it */
        sy_pusher_req_free(&r);
        return true;
    }
    const uint8_t *body = c->rbuf + head;
    sy_pusher_auth_t ar = sy_pusher_auth_request(p->apps, app, r.auth_key, r.auth_key_len, r.to_sign, r.to_sign_len,
                                                 r.auth_signature, r.auth_signature_len);
    if (ar == SY_PUSHER_AUTH_KEY)
        e = SY_PUSHER_HTTP_UNKNOWN_KEY;
    else if (ar != SY_PUSHER_AUTH_OK)
        e = ar == SY_PUSHER_AUTH_NOMEM ? SY_PUSHER_HTTP_NOMEM : SY_PUSHER_HTTP_SIGNATURE;
    else if (body_len > 0 && !sy_pusher_body_md5_ok(p->apps, body, body_len, r.body_md5, r.body_md5_len))
        e = SY_PUSHER_HTTP_BODY_MD5;
    else if (!a->enabled)
        e = SY_PUSHER_HTTP_UNKNOWN_APP;
    sy_refbuf_t *answer = NULL;
    if (e == SY_PUSHER_HTTP_OK) {
        sy_pusher_api_scope_t sc = api_scope(io, a);
        static const char ok[] =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        switch (r.route) {
        case SY_PUSHER_API_EVENTS:
        case SY_PUSHER_API_BATCH_EVENTS:
            e = api_publish(io, a, body, body_len, r.route, &answer);
            break;
        case SY_PUSHER_API_CHANNELS:
        case SY_PUSHER_API_CHANNEL:
            sc.cluster = atomic_load(&sy_io_ctx(io)->shared->posts_forwarded); /* a bus */
            e = sy_pusher_api_get(&sc, &r, &answer);
            if (e == SY_PUSHER_HTTP_OK && answer == NULL && /* the owner answers (lib/pusher/channels.js) */
                (e = sy_pusher_presence_channels(io, c, (unsigned)(a - p->app), a->prefix, a->prefix_len, &r)) ==
                    SY_PUSHER_HTTP_OK) {
                sy_pusher_req_free(&r);
                return true;
            }
            break;
        case SY_PUSHER_API_CHANNEL_USERS: { /* the owner answers (lib/pusher/presence.js) */
            char name[SY_PUSHER_ID_MAX + 2 + 1024];
            size_t n = sy_pusher_topic_name(a, r.name, r.name_len, name, sizeof(name));
            if (n > 0)
                sy_pusher_presence_users(io, c, (unsigned)(a - p->app), name, n, r.name, r.name_len);
            else
                api_error(io, c, SY_PUSHER_HTTP_CHANNEL_NAME, &r, o);
            sy_pusher_req_free(&r);
            return true;
        }
        case SY_PUSHER_API_TERMINATE:
            if ((e = api_terminate(io, a, r.name, r.name_len)) == SY_PUSHER_HTTP_OK)
                answer = sy_refbuf_raw(ok, sizeof(ok) - 1);
            break;
        default:
            sy_reply_error(io, c, 501, "This endpoint of the HTTP API is not supported yet");
            sy_pusher_req_free(&r);
            return true;
        }
    }
    if (e != SY_PUSHER_HTTP_OK)
        api_error(io, c, e, &r, o);
    else /* kept alive when the client allows it: its next request on the same socket */
        sy_reply_request(io, c, req, head + body_len, answer);
    sy_pusher_req_free(&r);
    return true;
}

#endif
