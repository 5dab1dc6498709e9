/*
 * sy_pusher_conn — the Pusher Channels protocol (docs/pusher.md) as a
 * registered message protocol (io/conn/sy_wire.h) on the WebSocket wire:
 * a WebSocket upgrade at <pathPrefix>/app/<key> is claimed by it
 * (sy_msgproto_t's claim), its messages are answered on the IO thread
 * (pusher:ping, subscribe and unsubscribe with private channels' auth
 * checked here, errors), the server's idle ping is a pusher:ping, and a
 * publish reaches its connections as Pusher's event envelope, made once per
 * publish and IO thread (publish_frame).
 *
 * A channel is a topic: for the server's first app the topic's name is the
 * channel's; for any other app it is "<app id>:<channel>" (a channel name
 * never holds ':', so the two never meet).
 *
 * A connection's Pusher state (its app, socket id, idle ping) is kept
 * beside it, in a table per IO thread indexed by its slot (a slot does not
 * change while the connection lives: reclaim moves its memory, not its
 * slot), so sy_conn_t does not grow.
 *
 * Threads: sy_pusher_srv_new and sy_pusher_srv_free on the owner's thread
 * (before the IO threads start, after they are joined); the protocol's
 * operations on the connection's IO thread; the server's state is read
 * only by them once made, but for each app's connection count (atomic).
 *
 * Ownership: sy_pusher_srv_new takes a reference to apps and copies cfg;
 * sy_pusher_srv_free gives it back, with every connection's state left.
 *
 * Errors: sy_pusher_srv_new returns 0, ENOMEM, EINVAL (an app id the table
 * does not hold, into err) or ENOTSUP (a build without OpenSSL); the
 * protocol's operations answer the client (pusher:error,
 * pusher:subscription_error, a close with Pusher's code) and close it
 * only where Pusher does (4001, 4003, 4004, 4007, 4201; 1011 out of memory).
 */
#ifndef SY_PUSHER_CONN_H
#define SY_PUSHER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "io/conn/sy_wire.h"

struct sy_pusher_apps;

/* The protocol's settings for one server. */
typedef struct sy_pusher_cfg {
    const char *path_prefix; /* "" or "/pusher": requests at <path_prefix>/app/<key> */
    size_t path_prefix_len;
    unsigned activity_timeout_s; /* what connection_established says; the server's ping after as long silent */
    unsigned cache_ttl_s;        /* seconds a cache channel keeps its last event (0: no limit) */
    /* The apps in the owner's order (the first one's channels are its
     * topics' names) and whether each is enabled (4003 when not). */
    const char *const *app_ids;
    const size_t *app_id_lens;
    const bool *enabled;
    const bool *user_auth; /* enableUserAuthentication of each (NULL: none) */
    const uint32_t *hooks; /* the webhook events each app's webhooks want (io/app/sy_pusher_event.h; NULL: none) */
    size_t napps;
    unsigned user_auth_timeout_ms; /* userAuthenticationTimeout (0: 30 s) */
} sy_pusher_cfg_t;

typedef struct sy_pusher_srv sy_pusher_srv_t;

sy_err_t sy_pusher_srv_new(struct sy_pusher_apps *apps, const sy_pusher_cfg_t *cfg, unsigned nthreads,
                           sy_pusher_srv_t **out, char *err, size_t errlen);
void sy_pusher_srv_free(sy_pusher_srv_t *p);
/* The process' random part of this server's socket ids ("<node>.<conn id>"). */
uint64_t sy_pusher_srv_node(const sy_pusher_srv_t *p);

/* The table to register (sy_io_add_protocol, with no wire of its own). */
extern const sy_msgproto_t sy_pusher_proto;

#endif
