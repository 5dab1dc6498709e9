/*
 * sy_pusher_api — the answers of Pusher's HTTP API that read the server's
 * channels (docs/pusher.md, "The HTTP API in the server"), made on the IO
 * thread that read the request, from the topic registry:
 *
 *   GET /apps/<id>/channels          {"channels":{"<name>":{...}}}: occupied channels only,
 *                                    filter_by_prefix, info=subscription_count|user_count
 *   GET /apps/<id>/channels/<name>   {"occupied":b[,"subscription_count":n][,"user_count":n]}
 *   POST /apps/<id>/events, info=    {"channels":{"<name>":{"subscription_count":n}}} (else {})
 *   POST /apps/<id>/batch_events     {"batch":[{"subscription_count":n}, {}, ...]} (else {})
 *
 * An app's channels are the topics named "<prefix><channel>" (the app's
 * prefix: "" for the server's first app, "<id>:" for the others; a channel
 * name never holds ':'). A count is this node's subscribers of the topic
 * (sy_topic_subscribers: Pusher's and symphony's own clients of it).
 *
 * GET /channels and /channels/<name> are answered here only in the common
 * case: no bus (s->cluster false) and no user_count asked. Otherwise the
 * request is checked here (the same 400s) and answered by the owner
 * (sy_pusher_presence_channels; lib/pusher/channels.js): presence members
 * are the owner's, and with a bus the counts and the list are every
 * node's, which an IO thread cannot wait for.
 *
 * An events request's user_count comes from sy_pusher_api_user_count,
 * which answers "none" (user_count left out there).
 *
 * Threads: an IO thread (or any thread: the registry has its own lock,
 * counts are atomic reads).
 *
 * Ownership: *out is a whole HTTP response (200, JSON, Connection: close)
 * with one reference, the caller's. Nothing is kept.
 *
 * Errors: SY_PUSHER_HTTP_OK with *out, or the error to answer
 * (SY_PUSHER_HTTP_USER_COUNT, SY_PUSHER_HTTP_CHANNEL_NAME,
 * SY_PUSHER_HTTP_NOMEM) and *out NULL; sy_pusher_api_get's
 * SY_PUSHER_HTTP_OK with *out NULL: the request is good, the owner answers.
 */
#ifndef SY_PUSHER_API_H
#define SY_PUSHER_API_H

#include <stdbool.h>
#include <stddef.h>

#include "base/sy_refbuf.h"
#include "io/model/sy_topic.h"
#include "proto/sy_pusher_http.h"

typedef struct sy_pusher_api_scope {
    sy_topics_t *topics;
    const char *prefix; /* the app's topics' prefix: "" or "<id>:" */
    size_t prefix_len;
    size_t max_channel_len;
    bool cluster; /* a bus: GET's counts and list are every node's (the owner answers) */
} sy_pusher_api_scope_t;

/* The answer to an authorized GET /channels or /channels/<name> (r); *out
 * NULL (and SY_PUSHER_HTTP_OK) when the owner answers it: info asks
 * user_count, or s->cluster. */
sy_pusher_http_err_t sy_pusher_api_get(const sy_pusher_api_scope_t *s, const sy_pusher_req_t *r, sy_refbuf_t **out);

/* The answer to the published events ev of one request (route EVENTS or
 * BATCH_EVENTS): {} when no event has an info; else, for EVENTS, the
 * attributes info asks for of each channel ({"channels":{...}}), for
 * BATCH_EVENTS those of each event's channel in order ({"batch":[...]},
 * {} for an event without info), as Pusher answers. */
sy_pusher_http_err_t sy_pusher_api_trigger_answer(const sy_pusher_api_scope_t *s, sy_pusher_route_t route,
                                                  const sy_pusher_events_t *ev, sy_refbuf_t **out);

#define SY_PUSHER_API_NO_COUNT (-1L)

/* The distinct users of presence channel t (its topic), for an events
 * request's info: SY_PUSHER_API_NO_COUNT (the members are the owner's; a
 * GET asking user_count goes to it instead). */
long sy_pusher_api_user_count(const sy_pusher_api_scope_t *s, sy_topic_t *t);

#endif
