/*
 * sy_pusher_hook — one of Pusher's webhook events as the JSON object its
 * webhook body lists ({"name":...,"channel":...,"event":...,"data":...,
 * "socket_id":...,"user_id":...}: the fields given, each a string), for
 * the events the IO threads decide (a client event, a presence member
 * added or removed, a cache miss, a channel's subscribers changed): what io/app/sy_pusher_event hands to
 * JavaScript.
 *
 * Threads: pure functions of their arguments, any thread.
 *
 * Ownership: the event's strings are the caller's, read during the call;
 * sy_pusher_hook_json returns text the caller frees with sy_json_free.
 *
 * Errors: sy_pusher_hook_json returns NULL out of memory.
 */
#ifndef SY_PUSHER_HOOK_H
#define SY_PUSHER_HOOK_H

#include <stddef.h>

/* The webhook events the IO threads decide: an app's mask of the ones its
 * webhooks want has bit (1u << type) (lib/pusher/hooks.js' HOOK_BITS, in
 * this order). */
typedef enum sy_pusher_hook {
    SY_PUSHER_HOOK_CLIENT_EVENT = 0,
    SY_PUSHER_HOOK_MEMBER_ADDED = 1,
    SY_PUSHER_HOOK_MEMBER_REMOVED = 2,
    SY_PUSHER_HOOK_CACHE_MISS = 3,
    /* A connection's subscription of channel began or ended on this node:
     * no count (the owner reads it, for its subscription_count webhook). */
    SY_PUSHER_HOOK_SUBSCRIPTION_COUNT = 4,
    SY_PUSHER_HOOKS
} sy_pusher_hook_t;

/* One event; a NULL string is a field left out. */
typedef struct sy_pusher_event {
    sy_pusher_hook_t type; /* its "name" */
    const char *channel;   /* the channel's name (without its app's topic prefix) */
    size_t channel_len;
    const char *event; /* client_event: the event's name */
    size_t event_len;
    const char *data; /* client_event: its data (JSON text), written as a JSON string */
    size_t data_len;
    const char *socket_id; /* client_event: the sender's */
    size_t socket_id_len;
    const char *user_id; /* member_added/removed; client_event on a presence channel */
    size_t user_id_len;
} sy_pusher_event_t;

/* Pusher's name of a type ("client_event"; "" for none). */
const char *sy_pusher_hook_name(sy_pusher_hook_t type);

/* The event's JSON object, *len its length (bytes that are not UTF-8
 * written as they are: the caller's text was checked). */
char *sy_pusher_hook_json(const sy_pusher_event_t *ev, size_t *len);

#endif
