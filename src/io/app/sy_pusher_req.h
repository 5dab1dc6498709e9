/*
 * sy_pusher_req — Pusher's HTTP API requests, read, authorized and
 * answered on the IO thread (sy_pusher_request, the protocol table's
 * request hook; docs/pusher.md, "The HTTP API in the server"); and what
 * they share with the connections' module (io/app/sy_pusher_conn.c, which
 * registers the hook): the server's Pusher state and its apps, and a
 * channel's topic name.
 *
 * Threads: the state is made and freed on the owner's thread
 * (sy_pusher_srv_new/_free) and only read by the IO threads, but for each
 * app's connection count (atomic).
 *
 * Ownership: the state owns its apps' table reference and its per-thread
 * tables (sy_pusher_conn.c).
 *
 * Errors: sy_pusher_topic_name returns 0 when the name does not fit;
 * sy_pusher_request answers the client itself (sy_pusher_conn.h).
 */
#ifndef SY_PUSHER_REQ_H
#define SY_PUSHER_REQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "auth/sy_pusher_auth.h"
#include "io/conn/sy_conn.h"
#include "io/loop/sy_loop.h"
#include "proto/sy_http.h"

/* One app of the server, as its connections and requests see it. */
typedef struct papp {
    const sy_pusher_app_t *app;
    char prefix[SY_PUSHER_ID_MAX + 2]; /* "<id>:" (the first app's: "") */
    size_t prefix_len;
    bool enabled;
    bool user_auth; /* enableUserAuthentication: sign in within the timeout */
    uint32_t index; /* in the owner's list (SY_EV_PUSHER's code) */
    uint32_t hooks; /* the webhook events its webhooks want (sy_pusher_event.h) */
    atomic_uint conns;
} papp_t;

struct sy_pusher_srv {
    sy_pusher_apps_t *apps; /* one reference */
    papp_t *app;
    size_t napps;
    uint64_t node;
    unsigned activity_s;
    int64_t user_timeout_ms;
    uint32_t cache_ttl_s; /* how long a cache channel keeps its last event (0: no limit) */
    size_t prefix_len;
    char *prefix;
    unsigned nthreads;
    struct pthr *threads; /* one per IO thread: its connections' Pusher state (sy_pusher_conn.c) */
};

/* The server's Pusher state, from any of its IO threads. */
static inline struct sy_pusher_srv *sy_pusher_srv_of(const sy_io_t *io) {
    return (struct sy_pusher_srv *)sy_io_ctx(io)->shared->proto_state;
}

/* The topic of app's channel: "<prefix><channel>" in buf (cap bytes). */
static inline size_t sy_pusher_topic_name(const papp_t *a, const char *ch, size_t len, char *buf, size_t cap) {
    if (a->prefix_len + len > cap)
        return 0;
    memcpy(buf, a->prefix, a->prefix_len);
    memcpy(buf + a->prefix_len, ch, len);
    return a->prefix_len + len;
}

/* The protocol table's request hook: a request at <pathPrefix>/apps/...
 * (Pusher's HTTP API), read, authorized and answered on the IO thread
 * (docs/pusher.md, "The HTTP API in the server"); false when the path is
 * not the API's (the request is someone else's). */
bool sy_pusher_request(sy_io_t *io, sy_conn_t *c, const sy_http_request_t *req, size_t head);

#endif
