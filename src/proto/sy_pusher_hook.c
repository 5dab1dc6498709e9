/* sy_pusher_hook — see sy_pusher_hook.h. */
#include "proto/sy_pusher_hook.h"

#include <stdbool.h>

#include "base/sy_json.h"

static const char *const NAMES[SY_PUSHER_HOOKS] = {
    [SY_PUSHER_HOOK_CLIENT_EVENT] = "client_event",
    [SY_PUSHER_HOOK_MEMBER_ADDED] = "member_added",
    [SY_PUSHER_HOOK_MEMBER_REMOVED] = "member_removed",
    [SY_PUSHER_HOOK_CACHE_MISS] = "cache_miss",
    [SY_PUSHER_HOOK_SUBSCRIPTION_COUNT] = "subscription_count",
};

const char *sy_pusher_hook_name(sy_pusher_hook_t type) { return (unsigned)type < SY_PUSHER_HOOKS ? NAMES[type] : ""; }

/* obj[key] = s[0..n) as a string, unless s is NULL. */
static bool put(yyjson_mut_doc *d, yyjson_mut_val *obj, const char *key, const char *s, size_t n) {
    return s == NULL || yyjson_mut_obj_add_strncpy(d, obj, key, s, n);
}

char *sy_pusher_hook_json(const sy_pusher_event_t *ev, size_t *len) {
    yyjson_mut_doc *d = yyjson_mut_doc_new(sy_json_alc());
    yyjson_mut_val *obj = d != NULL ? yyjson_mut_obj(d) : NULL;
    char *text = NULL;
    if (obj != NULL) {
        yyjson_mut_doc_set_root(d, obj);
        if (yyjson_mut_obj_add_str(d, obj, "name", sy_pusher_hook_name(ev->type)) &&
            put(d, obj, "channel", ev->channel, ev->channel_len) && put(d, obj, "event", ev->event, ev->event_len) &&
            put(d, obj, "data", ev->data, ev->data_len) && put(d, obj, "socket_id", ev->socket_id, ev->socket_id_len) &&
            put(d, obj, "user_id", ev->user_id, ev->user_id_len))
            text = yyjson_mut_write_opts(d, YYJSON_WRITE_ALLOW_INVALID_UNICODE, sy_json_alc(), len, NULL);
    }
    yyjson_mut_doc_free(d);
    return text;
}
