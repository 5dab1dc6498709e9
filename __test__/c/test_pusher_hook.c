/* sy_pusher_hook: the webhook event a Pusher module posts to JS, written
 * as the JSON object Pusher's webhook body lists: the fields given and no
 * other, each a string (a client event's data, JSON text, as a string
 * that reads back to the same text), quotes, backslashes and control
 * bytes escaped, names of every type; read back with yyjson. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "base/sy_json.h"
#include "check.h"
#include "proto/sy_pusher_hook.h"

/* obj[key] is the string s (NULL: absent). */
static bool field_is(yyjson_val *obj, const char *key, const char *s) {
    yyjson_val *v = yyjson_obj_get(obj, key);
    if (s == NULL)
        return v == NULL;
    return yyjson_is_str(v) && yyjson_get_len(v) == strlen(s) && memcmp(yyjson_get_str(v), s, strlen(s)) == 0;
}

static yyjson_doc *written(const sy_pusher_event_t *ev) {
    size_t len = 0;
    char *text = sy_pusher_hook_json(ev, &len);
    CHECK(text != NULL);
    if (text == NULL)
        return NULL;
    bool nomem = false;
    yyjson_doc *d = sy_json_read(text, len, &nomem);
    CHECK(d != NULL);
    sy_json_free(text);
    return d;
}

static void test_client_event(void) {
    const char data[] = "{\"text\":\"a \\\"quote\\\" \\\\ \\n\"}";
    sy_pusher_event_t ev = {.type = SY_PUSHER_HOOK_CLIENT_EVENT,
                            .channel = "private-a",
                            .channel_len = 9,
                            .event = "client-x",
                            .event_len = 8,
                            .data = data,
                            .data_len = sizeof(data) - 1,
                            .socket_id = "12.34",
                            .socket_id_len = 5};
    yyjson_doc *d = written(&ev);
    yyjson_val *o = d != NULL ? yyjson_doc_get_root(d) : NULL;
    CHECK(yyjson_is_obj(o));
    CHECK_EQ(yyjson_obj_size(o), 5);
    CHECK(field_is(o, "name", "client_event"));
    CHECK(field_is(o, "channel", "private-a"));
    CHECK(field_is(o, "event", "client-x"));
    CHECK(field_is(o, "data", data));
    CHECK(field_is(o, "socket_id", "12.34"));
    CHECK(field_is(o, "user_id", NULL));
    yyjson_doc_free(d);
}

static void test_members_and_names(void) {
    /* A user id with bytes JSON must escape, and a NUL inside. */
    const char id[] = "u\"1\x01\\";
    sy_pusher_event_t ev = {.type = SY_PUSHER_HOOK_MEMBER_REMOVED,
                            .channel = "presence-room",
                            .channel_len = 13,
                            .user_id = id,
                            .user_id_len = sizeof(id) - 1};
    yyjson_doc *d = written(&ev);
    yyjson_val *o = d != NULL ? yyjson_doc_get_root(d) : NULL;
    CHECK_EQ(yyjson_obj_size(o), 3);
    CHECK(field_is(o, "name", "member_removed"));
    CHECK(field_is(o, "user_id", id));
    yyjson_doc_free(d);
    CHECK(strcmp(sy_pusher_hook_name(SY_PUSHER_HOOK_MEMBER_ADDED), "member_added") == 0);
    CHECK(strcmp(sy_pusher_hook_name(SY_PUSHER_HOOK_CACHE_MISS), "cache_miss") == 0);
    CHECK(strcmp(sy_pusher_hook_name(SY_PUSHER_HOOK_SUBSCRIPTION_COUNT), "subscription_count") == 0);
    CHECK(strcmp(sy_pusher_hook_name(SY_PUSHER_HOOKS), "") == 0);
    /* An empty channel is a field, an absent one is not. */
    ev = (sy_pusher_event_t){.type = SY_PUSHER_HOOK_CACHE_MISS, .channel = "", .channel_len = 0};
    d = written(&ev);
    o = d != NULL ? yyjson_doc_get_root(d) : NULL;
    CHECK_EQ(yyjson_obj_size(o), 2);
    CHECK(field_is(o, "channel", ""));
    yyjson_doc_free(d);
}

int main(void) {
    test_client_event();
    test_members_and_names();
    return check_report("test_pusher_hook");
}
