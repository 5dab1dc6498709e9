/*
 * sy_pusher_user — Pusher's user authentication on the IO thread
 * (docs/pusher.md, "Users"): pusher:signin checked (auth =
 * key:hex(HMAC-SHA256(secret, socket_id::user::user_data)) with every
 * secret of the key, user_data a JSON object with a string id), answered
 * pusher:signin_success, and the connection subscribed to its user's
 * channel, #server-to-user-<id> (the topic "<app prefix>#server-to-user-<id>"),
 * where the HTTP API's events to a user (the SDK's sendToUser) reach every
 * connection of that user on every node; a bad sign-in is a pusher:error
 * 4009 and a close 4009.
 *
 * Terminating a user's connections (POST /apps/<id>/users/<id>/
 * terminate_connections) is a publish to that topic with the meta
 * SY_PUSHER_TERMINATE_META: it reaches every node and IO thread holding a
 * connection of the user (the bus follows the topic's interest), and each
 * thread's frame of it (sy_pusher_user_publish_frame, called once per
 * publish and thread) is a pusher:error 4009 and records the termination
 * in a small process-wide list keyed by the topic (a topic is one
 * server's); each signed-in connection looks at the list only when it
 * changed (one atomic load a second otherwise), in its idle check, and
 * closes 4009 when it signed in before the termination (a sign-in after it
 * stays). So a connection closes within a second of its node hearing the
 * publish. The list keeps the last SY_PUSHER_TERMINATE_KEEP terminations
 * for a few seconds: more terminations than that within a second may miss
 * a connection.
 *
 * An app with enableUserAuthentication closes (4009) a connection that has
 * not signed in within its timeout (sy_pusher_signin_idle).
 *
 * Threads: every function on the connection's IO thread, but
 * sy_pusher_user_publish_frame (any IO thread; the list is under a mutex,
 * its generation atomic).
 *
 * Ownership: sy_pusher_signin returns the connection's sign-in (the
 * caller keeps it beside the connection), holding one reference to the
 * user's topic besides the connection's subscription; sy_pusher_signin_free
 * gives both back (the subscription goes with the connection's own).
 *
 * Errors: sy_pusher_signin answers the client itself (pusher:error 4009
 * and a close 4009 for a bad sign-in, 1011 out of memory) and returns NULL
 * then; sy_pusher_join returns NULL out of memory (the caller fails c);
 * the builders return NULL out of memory.
 */
#ifndef SY_PUSHER_USER_H
#define SY_PUSHER_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_refbuf.h"
#include "io/conn/sy_conn.h"
#include "io/model/sy_topic.h"

struct sy_pusher_apps;
struct sy_pusher_app;
struct sy_pusher_msg;

/* The meta of a termination's publish: an event name no publisher may
 * give (the HTTP API and publish() refuse pusher_internal: names, client
 * events are client-). */
#define SY_PUSHER_TERMINATE_META "pusher_internal:terminate"
#define SY_PUSHER_TERMINATE_KEEP 64
#define SY_PUSHER_USER_CHANNEL "#server-to-user-"

/* A connection's sign-in. */
typedef struct sy_pusher_signin {
    sy_topic_t *topic; /* the user's topic (a reference) */
    uint64_t seq;      /* when it signed in, on the terminations' clock */
    uint64_t seen;     /* the terminations' generation last looked at */
    uint8_t id_len;
    char id[]; /* the user's id */
} sy_pusher_signin_t;

/* What sy_pusher_signin needs of the connection. */
typedef struct sy_pusher_signin_ctx {
    const struct sy_pusher_apps *apps;
    const struct sy_pusher_app *app;
    const char *socket_id;
    size_t socket_id_len;
    const char *prefix; /* the app's topics' prefix ("" or "<id>:") */
    size_t prefix_len;
} sy_pusher_signin_ctx_t;

/* c (open, not signed in) signs in with m (SY_PUSHER_MSG_SIGNIN): checked,
 * answered, subscribed to its user's topic. NULL: refused (answered and
 * closing) or out of memory (failed). */
sy_pusher_signin_t *sy_pusher_signin(sy_io_t *io, sy_conn_t *c, const sy_pusher_signin_ctx_t *x,
                                     const struct sy_pusher_msg *m);
/* NULL is a no-op. */
void sy_pusher_signin_free(sy_io_t *io, sy_pusher_signin_t *u);

/* Subscribes c to the topic name[0..n) unless it holds it: the topic
 * (the connection's reference), or NULL out of memory. */
sy_topic_t *sy_pusher_join(sy_io_t *io, sy_conn_t *c, const char *name, size_t n);

/* The connection's idle check of its sign-in: a signed-in one (u) closed
 * 4009 when its user was terminated since; one not signed in (u NULL)
 * closed 4009 when required and timeout_ms passed since opened_ms. False
 * when it closed c. */
bool sy_pusher_signin_idle(sy_io_t *io, sy_conn_t *c, sy_pusher_signin_t *u, bool required, int64_t opened_ms,
                           int64_t timeout_ms, int64_t now_ms);

/* The frame of a termination's publish to topic t (meta
 * SY_PUSHER_TERMINATE_META): a pusher:error 4009; the termination is
 * recorded for the connections' idle checks. */
sy_refbuf_t *sy_pusher_user_publish_frame(const sy_topic_t *t);
/* Whether meta[0..len) is SY_PUSHER_TERMINATE_META. */
bool sy_pusher_is_terminate(const void *meta, size_t len);

#endif
