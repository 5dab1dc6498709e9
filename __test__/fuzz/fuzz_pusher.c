/* libFuzzer target: sy_pusher_parse over a Pusher client's text frame (the
 * whole input), then what the server does with what it read: a presence
 * member's or a signed-in user's data parsed, the answers built; and the
 * input as a channel name, a socket id and a published event's data.
 *
 * Aborts when a contract does not hold:
 *  - the result is an error of the list (never NOMEM here: the system
 *    allocator does not fail); on an error nothing is held, but a
 *    channel's refusal keeps its channel name;
 *  - on OK: the event is 1 byte or more; a subscribe's channel passes
 *    sy_pusher_channel_check and has its auth when its type needs one; a
 *    client event is "client-", on a private or presence channel, with
 *    data (if any) that is JSON within the limit;
 *  - every frame built (the error's answer, subscription_succeeded for a
 *    member, member_added, the event envelope of any bytes) is one text
 *    frame of JSON that yyjson reads back, with its JSON-in-a-string data
 *    read back too;
 *  - a channel name accepted holds only the allowed bytes (or is a
 *    #server-to-user- one); a socket id accepted is digits '.' digits;
 *  - the input as a publish's meta ("<event>\0<user id>") splits at its
 *    first NUL and joins back to the same bytes;
 *  - the webhook event of a client event or a member (sy_pusher_hook) is
 *    a JSON object that reads back with each field as it was given. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yyjson.h>

#include "base/sy_json.h"

#include "base/sy_refbuf.h"
#include "proto/sy_pusher.h"
#include "proto/sy_pusher_hook.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

/* A frame of JSON whose "data", when a string, is JSON too (or, for an
 * event's bytes, any string). */
static void frame_ok(sy_refbuf_t *m, bool data_is_json) {
    REQUIRE(m != NULL && m->data[0] == 0x81);
    yyjson_doc *d = yyjson_read((const char *)sy_refbuf_payload(m), sy_refbuf_payload_len(m), 0);
    REQUIRE(d != NULL);
    yyjson_val *data = yyjson_obj_get(yyjson_doc_get_root(d), "data");
    if (data_is_json && yyjson_is_str(data)) {
        yyjson_doc *inner = yyjson_read(yyjson_get_str(data), yyjson_get_len(data), 0);
        REQUIRE(inner != NULL);
        yyjson_doc_free(inner);
    }
    yyjson_doc_free(d);
    sy_refbuf_release(m);
}

/* obj[key] is s[0..n) (s NULL: absent). */
static bool field_is(yyjson_val *obj, const char *key, const char *s, size_t n) {
    yyjson_val *v = yyjson_obj_get(obj, key);
    if (s == NULL)
        return v == NULL;
    return yyjson_is_str(v) && yyjson_get_len(v) == n && memcmp(yyjson_get_str(v), s, n) == 0;
}

/* A webhook event's JSON: an object of exactly the fields given. */
static void hook_ok(const sy_pusher_event_t *ev) {
    size_t len = 0;
    char *text = sy_pusher_hook_json(ev, &len);
    REQUIRE(text != NULL);
    yyjson_doc *d = yyjson_read(text, len, 0);
    REQUIRE(d != NULL);
    yyjson_val *o = yyjson_doc_get_root(d);
    const char *name = sy_pusher_hook_name(ev->type);
    REQUIRE(yyjson_is_obj(o) && field_is(o, "name", name, strlen(name)));
    REQUIRE(field_is(o, "channel", ev->channel, ev->channel_len) && field_is(o, "event", ev->event, ev->event_len));
    REQUIRE(field_is(o, "data", ev->data, ev->data_len) && field_is(o, "user_id", ev->user_id, ev->user_id_len));
    REQUIRE(field_is(o, "socket_id", ev->socket_id, ev->socket_id_len));
    REQUIRE(yyjson_obj_size(o) == 1 + (ev->channel != NULL) + (ev->event != NULL) + (ev->data != NULL) +
                                      (ev->user_id != NULL) + (ev->socket_id != NULL));
    yyjson_doc_free(d);
    sy_json_free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* On the heap at its exact size: ASan sees a read past it. */
    uint8_t *in = malloc(size ? size : 1);
    REQUIRE(in != NULL);
    if (size > 0)
        memcpy(in, data, size);
    sy_pusher_limits_t lim;
    sy_pusher_limits_default(&lim);
    lim.max_data_len = 256;
    sy_pusher_msg_t m;
    sy_pusher_err_t e = sy_pusher_parse(in, size, &lim, &m);
    REQUIRE((unsigned)e < SY_PUSHER_ERR_COUNT && e != SY_PUSHER_NOMEM);
    if (e != SY_PUSHER_OK) {
        REQUIRE(m.text == NULL);
        if (m.channel != NULL)
            REQUIRE(sy_pusher_err_scope(e) == SY_PUSHER_TO_CHANNEL && m.doc != NULL);
        else
            REQUIRE(m.doc == NULL);
        frame_ok(sy_pusher_err_frame(e, m.channel, m.channel_len), false);
        sy_pusher_msg_free(&m);
    } else {
        REQUIRE(m.event != NULL && m.event_len > 0);
        sy_pusher_chan_t c;
        switch (m.kind) {
        case SY_PUSHER_MSG_SUBSCRIBE:
            REQUIRE(sy_pusher_channel_check(m.channel, m.channel_len, lim.max_channel_len, &c) == SY_PUSHER_OK);
            REQUIRE(c.type == m.chan.type && c.cache == m.chan.cache);
            REQUIRE(!sy_pusher_needs_auth(c.type) || (m.auth != NULL && m.auth_len > 0));
            frame_ok(sy_pusher_subscribed_frame(m.channel, m.channel_len), true);
            if (m.channel_data != NULL) {
                sy_pusher_user_t u;
                sy_pusher_err_t ue = sy_pusher_member_parse(m.channel_data, m.channel_data_len, 1024, &u);
                REQUIRE(ue == SY_PUSHER_OK || ue == SY_PUSHER_MEMBER_DATA || ue == SY_PUSHER_MEMBER_LONG);
                if (ue == SY_PUSHER_OK) {
                    REQUIRE(u.id_len >= 1 && u.id_len <= SY_PUSHER_USER_ID_MAX && u.info_len <= 1024);
                    sy_pusher_member_t mb = {u.id, u.id_len, u.info, u.info_len};
                    frame_ok(sy_pusher_presence_subscribed_frame(m.channel, m.channel_len, &mb, 1), true);
                    frame_ok(sy_pusher_member_added_frame(m.channel, m.channel_len, &mb), true);
                    frame_ok(sy_pusher_member_removed_frame(m.channel, m.channel_len, u.id, u.id_len), true);
                    hook_ok(&(sy_pusher_event_t){.type = SY_PUSHER_HOOK_MEMBER_ADDED,
                                                 .channel = m.channel,
                                                 .channel_len = m.channel_len,
                                                 .user_id = u.id,
                                                 .user_id_len = u.id_len});
                }
                sy_pusher_user_free(&u);
            }
            break;
        case SY_PUSHER_MSG_SIGNIN: {
            REQUIRE(m.auth != NULL && m.user_data != NULL);
            sy_pusher_user_t u;
            sy_pusher_err_t ue = sy_pusher_user_parse(m.user_data, m.user_data_len, &u);
            REQUIRE(ue == SY_PUSHER_OK || ue == SY_PUSHER_USER_DATA);
            if (ue == SY_PUSHER_OK)
                frame_ok(sy_pusher_signin_success_frame(u.info, u.info_len), true);
            sy_pusher_user_free(&u);
            break;
        }
        case SY_PUSHER_MSG_CLIENT_EVENT:
            REQUIRE(sy_pusher_is_client_event(m.event, m.event_len) && m.event_len <= lim.max_event_len);
            REQUIRE(m.chan.type == SY_PUSHER_PRIVATE || m.chan.type == SY_PUSHER_PRESENCE);
            if (m.data != NULL) {
                REQUIRE(m.data_len <= lim.max_data_len);
                yyjson_doc *d = yyjson_read(m.data, m.data_len, 0);
                REQUIRE(d != NULL);
                yyjson_doc_free(d);
            }
            frame_ok(sy_pusher_event_frame(m.event, m.event_len, m.channel, m.channel_len, m.data ? m.data : "null",
                                           m.data ? m.data_len : 4, SY_PUSHER_DATA_JSON, "u", 1, true),
                     false);
            hook_ok(&(sy_pusher_event_t){.type = SY_PUSHER_HOOK_CLIENT_EVENT,
                                         .channel = m.channel,
                                         .channel_len = m.channel_len,
                                         .event = m.event,
                                         .event_len = m.event_len,
                                         .data = m.data,
                                         .data_len = m.data_len,
                                         .socket_id = "1.2",
                                         .socket_id_len = 3});
            break;
        case SY_PUSHER_MSG_UNSUBSCRIBE:
            REQUIRE(m.channel != NULL && m.channel_len > 0);
            break;
        default:
            break;
        }
        sy_pusher_msg_free(&m);
    }
    /* The input as a channel name, a socket id, and an event's bytes. */
    sy_pusher_chan_t c;
    if (sy_pusher_channel_check((const char *)in, size, 200, &c) == SY_PUSHER_OK && c.type != SY_PUSHER_SERVER_TO_USER)
        for (size_t i = 0; i < size; i++)
            REQUIRE(strchr("_-=@,.;", in[i]) != NULL || (in[i] >= '0' && in[i] <= '9') ||
                    ((in[i] | 0x20) >= 'a' && (in[i] | 0x20) <= 'z'));
    if (sy_pusher_socket_id_valid((const char *)in, size))
        REQUIRE(size >= 3 && memchr(in, '.', size) != NULL);
    frame_ok(sy_pusher_event_frame("e", 1, "c", 1, in, size, SY_PUSHER_DATA_BYTES, NULL, 0, false), false);
    frame_ok(sy_pusher_error_frame(4200, (const char *)in, size), false);
    /* The input as a publish's meta: split, joined back the same (when it
     * fits), and the frame it makes (a user id of any bytes) is JSON. */
    size_t ev_len, id_len;
    const char *id;
    sy_pusher_meta_split((const char *)in, size, &ev_len, &id, &id_len);
    REQUIRE(ev_len <= size && memchr(in, 0, ev_len) == NULL);
    REQUIRE(id == NULL ? ev_len == size && id_len == 0 : ev_len + 1 + id_len == size);
    if (id != NULL) {
        char back[256];
        size_t n = sy_pusher_meta_join(back, sizeof(back), (const char *)in, ev_len, id, id_len);
        REQUIRE(n == (size <= sizeof(back) ? size : 0) && (n == 0 || memcmp(back, in, n) == 0));
        frame_ok(sy_pusher_event_frame((const char *)in, ev_len ? ev_len : 0, "c", 1, "1", 1, SY_PUSHER_DATA_JSON, id,
                                       id_len, false),
                 false);
    }
    free(in);
    return 0;
}
