/*
 * sy_pusher_presence — the IO thread's part of Pusher's presence channels
 * (docs/pusher.md, "Presence channels"). The IO thread checks a presence
 * subscribe (its channel_data read and its auth checked by the caller,
 * io/app/sy_pusher_conn) and hands it to the owner, which decides the
 * membership (lib/pusher/presence.js: the members of a channel on every
 * node, the limit, member_added / member_removed once per user) and
 * subscribes the connection itself. What stays here: the user id each
 * connection subscribed with, per channel (a client event on a presence
 * channel carries it), and the events to the owner.
 *
 * SY_EV_PUSHER (io/model/sy_events.h): flags = the kind, code = the app's
 * index in the server's apps; payload: u32-length strings (UTF-8):
 *   'j' (a presence subscribe, auth good): topic, channel, user id, user_info (JSON, "" for none)
 *   'l' (a pusher:unsubscribe of a presence channel, done here already): topic, channel
 *   'u' (GET /apps/<id>/channels/<presence channel>/users, authorized): topic, channel;
 *       the connection waits (UPGRADING) for the owner's answer, a whole HTTP
 *       response (sy_server_reply)
 *   'c' (GET /apps/<id>/channels, authorized and checked, the owner answers:
 *       io/app/sy_pusher_api.h): filter_by_prefix, info ("" for none); waits as 'u'
 *   'n' (GET /apps/<id>/channels/<name>, the same): topic, channel, info; waits as 'u'
 * A connection's close is the owner's SY_EV_CLOSE: it leaves every channel.
 *
 * A client event's publish carries the sender's user id in its meta, after
 * the event name and a NUL, so that every node's frame has it (proto/sy_pusher.h: sy_pusher_meta_join / _split).
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: a connection's list (sy_pusher_pres_t) belongs to its Pusher
 * state, which frees it with sy_pusher_pres_free.
 *
 * Errors: sy_pusher_pres_set returns false out of memory (the caller
 * closes the connection 1011); an event lost out of memory is counted by
 * sy_io_emit, as every event is.
 */
#ifndef SY_PUSHER_PRESENCE_H
#define SY_PUSHER_PRESENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/conn/sy_conn.h"
#include "io/loop/sy_loop.h"
#include "proto/sy_pusher_http.h"

/* A connection's presence channels and the user id of each. */
typedef struct sy_pusher_pres sy_pusher_pres_t;

/* Records id as the user of channel ch (replacing the one recorded). */
bool sy_pusher_pres_set(sy_pusher_pres_t **l, const char *ch, size_t len, const char *id, size_t id_len);
/* The user id recorded for ch, or NULL. */
const char *sy_pusher_pres_user(const sy_pusher_pres_t *l, const char *ch, size_t len, size_t *id_len);
/* Forgets ch: true when it was recorded. */
bool sy_pusher_pres_drop(sy_pusher_pres_t **l, const char *ch, size_t len);
void sy_pusher_pres_free(sy_pusher_pres_t **l);

/* The events above, to the owner, for connection c. */
void sy_pusher_presence_join(sy_io_t *io, sy_conn_t *c, unsigned app, const char *topic, size_t topic_len,
                             const char *ch, size_t ch_len, const char *id, size_t id_len, const char *info,
                             size_t info_len);
void sy_pusher_presence_leave(sy_io_t *io, sy_conn_t *c, unsigned app, const char *topic, size_t topic_len,
                              const char *ch, size_t ch_len);
/* These two also move c (an HTTP request) to UPGRADING, to wait for the answer. */
void sy_pusher_presence_users(sy_io_t *io, sy_conn_t *c, unsigned app, const char *topic, size_t topic_len,
                              const char *ch, size_t ch_len);
/* 'c' or 'n' for request r (route CHANNELS or CHANNEL) of app (topics'
 * prefix: prefix): SY_PUSHER_HTTP_OK, or SY_PUSHER_HTTP_CHANNEL_NAME (nothing
 * sent, c not moved) when the topic's name is too long. */
sy_pusher_http_err_t sy_pusher_presence_channels(sy_io_t *io, sy_conn_t *c, unsigned app, const char *prefix,
                                                 size_t prefix_len, const sy_pusher_req_t *r);

#endif
