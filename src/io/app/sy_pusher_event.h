/*
 * sy_pusher_event — one way for Pusher's webhook events that the IO
 * threads decide (a client event, a presence member added or removed, a
 * cache miss) to reach JavaScript: the event is written as the JSON object
 * Pusher's webhook body lists ({"name":...,"channel":...,"event":...,
 * "data":...,"socket_id":...,"user_id":...}, the fields given;
 * proto/sy_pusher_hook) and handed to the owner as SY_EV_PUSHER_HOOK (io/model/sy_events.h), with the app's
 * index in pusher.apps as its code; lib/server.js gives it to
 * lib/pusher/events.js' reportPusherEvent, which hands it to that app's
 * webhooks (docs/pusher.md, "Webhooks"). Occupancy (channel_occupied,
 * channel_vacated, subscription_count) is decided in JS from the server's
 * topic edges, not here.
 *
 * An app's webhooks say which types they want (a mask of
 * SY_PUSHER_HOOK_* bits, set with the app, lib/pusher/hooks.js' HOOK_BITS
 * in the same order; in pusher_conn.c, s->app->index and s->app->hooks):
 * an event of a type no webhook wants costs one test
 * of the mask and nothing else.
 *
 * The call, from any of the protocol's code on the IO thread:
 *
 *   sy_pusher_event_post(io, app_index, app_hooks,
 *       &(sy_pusher_event_t){.type = SY_PUSHER_HOOK_MEMBER_ADDED,
 *                            .channel = ch, .channel_len = ch_len,
 *                            .user_id = id, .user_id_len = id_len});
 *
 * Threads: the IO thread the event happened on.
 *
 * Ownership: the event's strings are the caller's, read during the call
 * (copied into the thread's event batch).
 *
 * Errors: sy_pusher_event_post returns 0, or ENOMEM when the event could
 * not be written (it is lost: a webhook is at most once); the caller goes
 * on either way.
 */
#ifndef SY_PUSHER_EVENT_H
#define SY_PUSHER_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "io/conn/sy_conn.h"
#include "proto/sy_pusher_hook.h"

/* Hands ev to the owner as SY_EV_PUSHER_HOOK for the app app_index, when its
 * webhooks want the type (hooks: the app's mask); nothing otherwise. */
sy_err_t sy_pusher_event_post(sy_io_t *io, uint32_t app_index, uint32_t hooks, const sy_pusher_event_t *ev);

#endif
