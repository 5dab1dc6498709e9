/* sy_pusher: the Pusher Channels protocol's messages (docs/pusher.md).
 * Client messages as pusher-js 8 writes them (JSON.stringify of {event,
 * data[, channel]}), placed against a guard page, each kind read; every
 * malformed shape its own error, with its code and where it goes; channel
 * names (characters, prefixes, length limit, #server-to-user-), socket
 * ids; presence members and signed-in users; and every server frame read
 * back the way pusher-js reads it (JSON.parse, then "data" parsed again
 * when it is a string), JSON inside strings included. Leaks: LeakSanitizer
 * (make test) and valgrind. */
#include "guard.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <yyjson.h>

#include "check.h"
#include "proto/sy_pusher.h"
#include "vectors.h"

static sy_pusher_limits_t LIM;

static sy_pusher_err_t parse(const char *s, sy_pusher_msg_t *m) {
    guard_t g;
    const uint8_t *p = guard_place(&g, s, strlen(s));
    sy_pusher_err_t e = sy_pusher_parse(p, strlen(s), &LIM, m);
    /* Nothing the message keeps points into the input: release it now. */
    guard_release(&g);
    return e;
}

static bool eq(const char *p, size_t n, const char *s) { return p != NULL && n == strlen(s) && memcmp(p, s, n) == 0; }

/* ---- a frame read as pusher-js reads it ---------------------------------- */

typedef struct {
    yyjson_doc *doc, *data_doc;
    yyjson_val *root, *data; /* data: parsed again when a string that is JSON */
} read_t;

static bool read_frame(const sy_refbuf_t *m, read_t *r) {
    *r = (read_t){0};
    if (m == NULL)
        return false;
    /* A text frame, FIN, its length right. */
    CHECK_EQU(m->data[0], 0x81);
    r->doc = yyjson_read((const char *)sy_refbuf_payload(m), sy_refbuf_payload_len(m), 0);
    if (r->doc == NULL)
        return false;
    r->root = yyjson_doc_get_root(r->doc);
    r->data = yyjson_obj_get(r->root, "data");
    if (yyjson_is_str(r->data)) {
        r->data_doc = yyjson_read(yyjson_get_str(r->data), yyjson_get_len(r->data), 0);
        if (r->data_doc != NULL)
            r->data = yyjson_doc_get_root(r->data_doc);
    }
    return true;
}

static void read_free(read_t *r) {
    yyjson_doc_free(r->doc);
    yyjson_doc_free(r->data_doc);
}

static bool str_is(yyjson_val *v, const char *s) {
    return yyjson_is_str(v) && eq(yyjson_get_str(v), yyjson_get_len(v), s);
}

static bool payload_is(const sy_refbuf_t *m, const char *want) {
    return m != NULL && sy_refbuf_payload_len(m) == strlen(want) &&
           memcmp(sy_refbuf_payload(m), want, strlen(want)) == 0;
}

/* ---- client messages ------------------------------------------------------ */

static void test_subscribe(void) {
    sy_pusher_msg_t m;
    CHECK_EQ(parse("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"my-channel\"}}", &m), SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_SUBSCRIBE);
    CHECK(eq(m.channel, m.channel_len, "my-channel"));
    CHECK_EQ(m.chan.type, SY_PUSHER_PUBLIC);
    CHECK(!m.chan.cache);
    CHECK(m.auth == NULL);
    sy_pusher_msg_free(&m);

    /* A public channel's auth is ignored, as Pusher does. */
    CHECK_EQ(parse("{\"event\":\"pusher:subscribe\",\"data\":{\"auth\":7,\"channel\":\"cache-x\"}}", &m), SY_PUSHER_OK);
    CHECK(m.chan.cache && m.chan.type == SY_PUSHER_PUBLIC);
    sy_pusher_msg_free(&m);

    CHECK_EQ(parse("{\"event\":\"pusher:subscribe\",\"data\":{\"auth\":\"k:abc\",\"channel\":\"private-a\"}}", &m),
             SY_PUSHER_OK);
    CHECK_EQ(m.chan.type, SY_PUSHER_PRIVATE);
    CHECK(eq(m.auth, m.auth_len, "k:abc"));
    CHECK(m.channel_data == NULL);
    sy_pusher_msg_free(&m);

    const char *presence = "{\"event\":\"pusher:subscribe\",\"data\":{\"auth\":\"k:ff\",\"channel_data\":"
                           "\"{\\\"user_id\\\":\\\"1\\\",\\\"user_info\\\":{\\\"n\\\":\\\"é\\\"}}\","
                           "\"channel\":\"presence-cache-room\"}}";
    CHECK_EQ(parse(presence, &m), SY_PUSHER_OK);
    CHECK(m.chan.type == SY_PUSHER_PRESENCE && m.chan.cache);
    CHECK(eq(m.channel_data, m.channel_data_len, "{\"user_id\":\"1\",\"user_info\":{\"n\":\"é\"}}"));
    sy_pusher_msg_free(&m);

    /* Presence without channel_data: a signed-in user's (pusher-js). */
    CHECK_EQ(parse("{\"event\":\"pusher:subscribe\",\"data\":{\"auth\":\"k:ff\",\"channel\":\"presence-r\"}}", &m),
             SY_PUSHER_OK);
    CHECK(m.channel_data == NULL);
    sy_pusher_msg_free(&m);

    CHECK_EQ(parse("{\"event\":\"pusher:subscribe\",\"data\":{\"auth\":\"k:ff\",\"channel\":"
                   "\"private-encrypted-cache-x\"}}",
                   &m),
             SY_PUSHER_OK);
    CHECK(m.chan.type == SY_PUSHER_ENCRYPTED && m.chan.cache);
    sy_pusher_msg_free(&m);
}

/* The error, its scope, and for a channel's error the channel named. */
static void bad(const char *s, sy_pusher_err_t want, const char *channel) {
    sy_pusher_msg_t m;
    sy_pusher_err_t e = parse(s, &m);
    CHECK_EQ(e, want);
    if (e != want)
        fprintf(stderr, "  input: %s\n", s);
    if (channel != NULL) {
        CHECK_EQ(sy_pusher_err_scope(e), SY_PUSHER_TO_CHANNEL);
        CHECK(eq(m.channel, m.channel_len, channel));
        sy_refbuf_t *f = sy_pusher_err_frame(e, m.channel, m.channel_len);
        read_t r;
        CHECK(read_frame(f, &r));
        CHECK(str_is(yyjson_obj_get(r.root, "event"), "pusher:subscription_error"));
        CHECK(str_is(yyjson_obj_get(r.root, "channel"), channel));
        CHECK(str_is(yyjson_obj_get(r.data, "type"), sy_pusher_err_type(e)));
        CHECK(str_is(yyjson_obj_get(r.data, "error"), sy_pusher_err_message(e)));
        CHECK_EQ(yyjson_get_uint(yyjson_obj_get(r.data, "status")), sy_pusher_err_code(e));
        read_free(&r);
        sy_refbuf_release(f);
    } else {
        CHECK(m.doc == NULL && m.text == NULL && m.channel == NULL);
        sy_refbuf_t *f = sy_pusher_err_frame(e, NULL, 0);
        read_t r;
        CHECK(read_frame(f, &r));
        CHECK(str_is(yyjson_obj_get(r.root, "event"), "pusher:error"));
        unsigned code = sy_pusher_err_scope(e) == SY_PUSHER_TO_CONN ? sy_pusher_err_code(e) : 4200;
        CHECK_EQ(yyjson_get_uint(yyjson_obj_get(r.data, "code")), code);
        CHECK(str_is(yyjson_obj_get(r.data, "message"), sy_pusher_err_message(e)));
        read_free(&r);
        sy_refbuf_release(f);
    }
    sy_pusher_msg_free(&m);
}

static void test_malformed(void) {
    bad("", SY_PUSHER_JSON, NULL);
    bad("{\"event\":", SY_PUSHER_JSON, NULL);
    bad("{\"event\":\"pusher:ping\",}", SY_PUSHER_JSON, NULL); /* strict: no trailing comma */
    bad("[\"pusher:ping\"]", SY_PUSHER_NOT_OBJECT, NULL);
    bad("\"pusher:ping\"", SY_PUSHER_NOT_OBJECT, NULL);
    bad("{}", SY_PUSHER_NO_EVENT, NULL);
    bad("{\"event\":\"\"}", SY_PUSHER_NO_EVENT, NULL);
    bad("{\"event\":42}", SY_PUSHER_NO_EVENT, NULL);
    bad("{\"event\":\"pusher:subscribe\"}", SY_PUSHER_DATA, NULL);
    bad("{\"event\":\"pusher:subscribe\",\"data\":\"{\\\"channel\\\":\\\"a\\\"}\"}", SY_PUSHER_DATA, NULL);
    bad("{\"event\":\"pusher:subscribe\",\"data\":{}}", SY_PUSHER_NO_CHANNEL, NULL);
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"\"}}", SY_PUSHER_NO_CHANNEL, NULL);
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":[\"a\"]}}", SY_PUSHER_NO_CHANNEL, NULL);
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"a b\"}}", SY_PUSHER_CHANNEL_NAME, "a b");
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"caf\\u00e9\"}}", SY_PUSHER_CHANNEL_NAME, "café");
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"a\\\"b\"}}", SY_PUSHER_CHANNEL_NAME, "a\"b");
    char longc[400];
    snprintf(longc, sizeof(longc), "{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"%0201d\"}}", 0);
    char name201[202];
    memset(name201, '0', 201);
    name201[201] = '\0';
    bad(longc, SY_PUSHER_CHANNEL_LONG, name201);
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"private-a\"}}", SY_PUSHER_AUTH_MISSING, "private-a");
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"presence-a\",\"auth\":\"\"}}", SY_PUSHER_AUTH_MISSING,
        "presence-a");
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"private-encrypted-a\",\"auth\":1}}",
        SY_PUSHER_AUTH_MISSING, "private-encrypted-a");
    bad("{\"event\":\"pusher:subscribe\",\"data\":{\"channel\":\"presence-a\",\"auth\":\"k:s\",\"channel_data\":{}}}",
        SY_PUSHER_CHANNEL_DATA, "presence-a");
    bad("{\"event\":\"pusher:unsubscribe\",\"data\":[]}", SY_PUSHER_DATA, NULL);
    bad("{\"event\":\"pusher:unsubscribe\",\"data\":{\"channel\":null}}", SY_PUSHER_NO_CHANNEL, NULL);
    bad("{\"event\":\"pusher:signin\",\"data\":null}", SY_PUSHER_DATA, NULL);
    bad("{\"event\":\"pusher:signin\",\"data\":{\"auth\":\"k:s\"}}", SY_PUSHER_SIGNIN, NULL);
    bad("{\"event\":\"pusher:signin\",\"data\":{\"user_data\":\"{}\",\"auth\":5}}", SY_PUSHER_SIGNIN, NULL);
    bad("{\"event\":\"client-x\",\"data\":{}}", SY_PUSHER_CLIENT_CHANNEL, NULL);
    bad("{\"event\":\"client-x\",\"channel\":\"private-a b\",\"data\":{}}", SY_PUSHER_CLIENT_CHANNEL, NULL);
    bad("{\"event\":\"client-x\",\"channel\":\"public\",\"data\":{}}", SY_PUSHER_CLIENT_PUBLIC, NULL);
    bad("{\"event\":\"client-x\",\"channel\":\"cache-public\",\"data\":{}}", SY_PUSHER_CLIENT_PUBLIC, NULL);
    bad("{\"event\":\"client-x\",\"channel\":\"private-encrypted-a\",\"data\":{}}", SY_PUSHER_CLIENT_PUBLIC, NULL);
    char ev[400];
    snprintf(ev, sizeof(ev), "{\"event\":\"client-%0194d\",\"channel\":\"private-a\"}", 0);
    bad(ev, SY_PUSHER_CLIENT_EVENT_LONG, NULL); /* 7 + 194 = 201 bytes */
    snprintf(ev, sizeof(ev), "{\"event\":\"client-%0193d\",\"channel\":\"private-a\"}", 0);
    sy_pusher_msg_t m;
    CHECK_EQ(parse(ev, &m), SY_PUSHER_OK); /* 200: the limit itself */
    sy_pusher_msg_free(&m);

    /* Data past the limit, counted as the JSON text relayed. */
    sy_pusher_limits_t saved = LIM;
    LIM.max_data_len = 12;
    bad("{\"event\":\"client-x\",\"channel\":\"private-a\",\"data\":\"0123456789a\"}", SY_PUSHER_CLIENT_DATA_LONG,
        NULL);
    CHECK_EQ(parse("{\"event\":\"client-x\",\"channel\":\"private-a\",\"data\":\"0123456789\"}", &m), SY_PUSHER_OK);
    CHECK(eq(m.data, m.data_len, "\"0123456789\""));
    sy_pusher_msg_free(&m);
    LIM = saved;

    /* Every error has a message, and a code in Pusher's ranges. */
    for (int e = 1; e < SY_PUSHER_ERR_COUNT; e++) {
        unsigned c = sy_pusher_err_code((sy_pusher_err_t)e);
        CHECK(sy_pusher_err_message((sy_pusher_err_t)e)[0] != '\0');
        if (sy_pusher_err_scope((sy_pusher_err_t)e) == SY_PUSHER_TO_CONN)
            CHECK(c >= 4000 && c <= 4399);
        else
            CHECK(c >= 400 && c <= 499 && sy_pusher_err_type((sy_pusher_err_t)e)[0] != '\0');
    }
}

static void test_other_kinds(void) {
    sy_pusher_msg_t m;
    CHECK_EQ(parse("{\"event\":\"pusher:ping\",\"data\":{}}", &m), SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_PING);
    sy_pusher_msg_free(&m);
    CHECK_EQ(parse("{\"event\":\"pusher:pong\"}", &m), SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_PONG);
    sy_pusher_msg_free(&m);
    CHECK_EQ(parse("{\"event\":\"pusher:unsubscribe\",\"data\":{\"channel\":\"any thing\"}}", &m), SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_UNSUBSCRIBE);
    CHECK(eq(m.channel, m.channel_len, "any thing")); /* not checked: unsubscribing what is not held is nothing */
    sy_pusher_msg_free(&m);
    CHECK_EQ(
        parse("{\"event\":\"pusher:signin\",\"data\":{\"user_data\":\"{\\\"id\\\":\\\"7\\\"}\",\"auth\":\"k:s\"}}", &m),
        SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_SIGNIN);
    CHECK(eq(m.user_data, m.user_data_len, "{\"id\":\"7\"}"));
    CHECK(eq(m.auth, m.auth_len, "k:s"));
    sy_pusher_msg_free(&m);
    CHECK_EQ(parse("{\"event\":\"client-typing\",\"data\":{\"who\":\"a\",\"n\":[1,2]},\"channel\":\"presence-x\"}", &m),
             SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_CLIENT_EVENT);
    CHECK(eq(m.event, m.event_len, "client-typing"));
    CHECK(eq(m.data, m.data_len, "{\"who\":\"a\",\"n\":[1,2]}"));
    CHECK_EQ(m.chan.type, SY_PUSHER_PRESENCE);
    sy_pusher_msg_free(&m);
    CHECK_EQ(parse("{\"event\":\"client-x\",\"channel\":\"private-x\"}", &m), SY_PUSHER_OK);
    CHECK(m.data == NULL);
    sy_pusher_msg_free(&m);
    /* Anything else: ignored, as Pusher and Soketi do. */
    CHECK_EQ(parse("{\"event\":\"pusher:whatever\",\"data\":1}", &m), SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_OTHER);
    CHECK(eq(m.event, m.event_len, "pusher:whatever"));
    sy_pusher_msg_free(&m);
    CHECK_EQ(parse("{\"event\":\"my-event\"}", &m), SY_PUSHER_OK);
    CHECK_EQ(m.kind, SY_PUSHER_MSG_OTHER);
    sy_pusher_msg_free(&m);
}

/* ---- names and ids --------------------------------------------------------- */

static void test_channels(void) {
    sy_pusher_chan_t c;
    const char *ok = "AZaz09_-=@,.;";
    CHECK_EQ(sy_pusher_channel_check(ok, strlen(ok), 200, &c), SY_PUSHER_OK);
    struct {
        const char *name;
        sy_pusher_ctype_t type;
        bool cache;
    } kinds[] = {
        {"x", SY_PUSHER_PUBLIC, false},
        {"cache-x", SY_PUSHER_PUBLIC, true},
        {"private-x", SY_PUSHER_PRIVATE, false},
        {"private-cache-x", SY_PUSHER_PRIVATE, true},
        {"presence-x", SY_PUSHER_PRESENCE, false},
        {"presence-cache-x", SY_PUSHER_PRESENCE, true},
        {"private-encrypted-x", SY_PUSHER_ENCRYPTED, false},
        {"private-encrypted-cache-x", SY_PUSHER_ENCRYPTED, true},
        {"privatex", SY_PUSHER_PUBLIC, false},
        {"Private-x", SY_PUSHER_PUBLIC, false},
        {"private-", SY_PUSHER_PRIVATE, false},
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        CHECK_EQ(sy_pusher_channel_check(kinds[i].name, strlen(kinds[i].name), 200, &c), SY_PUSHER_OK);
        CHECK_EQ(c.type, kinds[i].type);
        CHECK_EQ(c.cache, kinds[i].cache);
    }
    const char *bads[] = {"a b", "a/b", "a:b", "a#b", "a\x01", "a*", "é", "a+b", "a%20"};
    for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++)
        CHECK_EQ(sy_pusher_channel_check(bads[i], strlen(bads[i]), 200, &c), SY_PUSHER_CHANNEL_NAME);
    CHECK_EQ(sy_pusher_channel_check("a\0b", 3, 200, &c), SY_PUSHER_CHANNEL_NAME);
    CHECK_EQ(sy_pusher_channel_check("", 0, 200, &c), SY_PUSHER_CHANNEL_NAME);
    CHECK_EQ(sy_pusher_channel_check("abcd", 4, 4, &c), SY_PUSHER_OK);
    CHECK_EQ(sy_pusher_channel_check("abcde", 5, 4, &c), SY_PUSHER_CHANNEL_LONG);
    /* #server-to-user-<id>: a signed-in user's own. */
    CHECK_EQ(sy_pusher_channel_check("#server-to-user-42", 18, 200, &c), SY_PUSHER_OK);
    CHECK_EQ(c.type, SY_PUSHER_SERVER_TO_USER);
    size_t id_len;
    const char *id = sy_pusher_server_to_user_id("#server-to-user-42", 18, &id_len);
    CHECK(eq(id, id_len, "42"));
    CHECK(!sy_pusher_needs_auth(c.type));
    CHECK_EQ(sy_pusher_channel_check("#server-to-user-", 16, 200, &c), SY_PUSHER_CHANNEL_NAME);
    CHECK_EQ(sy_pusher_channel_check("#server-to-user-a\nb", 19, 200, &c), SY_PUSHER_CHANNEL_NAME);
    CHECK_EQ(sy_pusher_channel_check("#other", 6, 200, &c), SY_PUSHER_CHANNEL_NAME);
    char s2u[200];
    snprintf(s2u, sizeof(s2u), "#server-to-user-%0129d", 0);
    CHECK_EQ(sy_pusher_channel_check(s2u, strlen(s2u), 200, &c), SY_PUSHER_CHANNEL_NAME); /* id past 128 */

    CHECK(sy_pusher_is_client_event("client-a", 8));
    CHECK(sy_pusher_is_client_event("client-", 7));
    CHECK(!sy_pusher_is_client_event("client", 6));
    CHECK(!sy_pusher_is_client_event("Client-a", 8));
    CHECK(sy_pusher_event_ok(200, 200) && !sy_pusher_event_ok(201, 200) && !sy_pusher_event_ok(0, 200));
}

static void test_socket_ids(void) {
    char id[SY_PUSHER_SOCKET_ID_MAX];
    size_t n = sy_pusher_socket_id(id, 123, 456);
    CHECK(eq(id, n, "123.456"));
    CHECK(sy_pusher_socket_id_valid(id, n));
    n = sy_pusher_socket_id(id, UINT64_MAX, UINT64_MAX);
    CHECK(eq(id, n, "18446744073709551615.18446744073709551615"));
    CHECK(sy_pusher_socket_id_valid(id, n));
    for (int i = 0; i < 100; i++) {
        uint64_t node = sy_pusher_socket_node();
        CHECK(node >= 1 && node < (UINT64_C(1) << 53));
    }
    CHECK(sy_pusher_socket_node() != sy_pusher_socket_node()); /* 2^-53 of a false failure */
    const char *good[] = {"1.2", "0.0", "151004717.3505838415"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK(sy_pusher_socket_id_valid(good[i], strlen(good[i])));
    const char *badi[] = {
        "",     ".", "1.", ".1", "1", "1.2.3", "a.1", "1.a", "1.2 ", " 1.2", "-1.2", "1..2", "123456789012345678901.1",
        "1.2\n"};
    for (size_t i = 0; i < sizeof(badi) / sizeof(badi[0]); i++)
        CHECK(!sy_pusher_socket_id_valid(badi[i], strlen(badi[i])));
    CHECK(!sy_pusher_socket_id_valid("1.2\0", 4));
}

static void test_users(void) {
    sy_pusher_user_t u;
    const char *cd = "{\"user_id\":\"u1\",\"user_info\":{\"name\":\"Ann\",\"tags\":[1,true,null]}}";
    CHECK_EQ(sy_pusher_member_parse(cd, strlen(cd), 1024, &u), SY_PUSHER_OK);
    CHECK(eq(u.id, u.id_len, "u1"));
    CHECK(eq(u.info, u.info_len, "{\"name\":\"Ann\",\"tags\":[1,true,null]}"));
    sy_pusher_user_free(&u);
    CHECK_EQ(sy_pusher_member_parse(cd, strlen(cd), 10, &u), SY_PUSHER_MEMBER_LONG);
    CHECK(u.block == NULL);
    cd = "{\"user_id\":1265}";
    CHECK_EQ(sy_pusher_member_parse(cd, strlen(cd), 1024, &u), SY_PUSHER_OK);
    CHECK(eq(u.id, u.id_len, "1265"));
    CHECK(u.info == NULL);
    sy_pusher_user_free(&u);
    cd = "{\"user_id\":-3,\"user_info\":null}";
    CHECK_EQ(sy_pusher_member_parse(cd, strlen(cd), 1024, &u), SY_PUSHER_OK);
    CHECK(eq(u.id, u.id_len, "-3"));
    CHECK(eq(u.info, u.info_len, "null"));
    sy_pusher_user_free(&u);
    const char *bad_members[] = {"",
                                 "[]",
                                 "{}",
                                 "{\"user_id\":\"\"}",
                                 "{\"user_id\":1.5}",
                                 "{\"user_id\":{}}",
                                 "{\"user_id\":\"a\"",
                                 "{\"user_id\":true}"};
    for (size_t i = 0; i < sizeof(bad_members) / sizeof(bad_members[0]); i++) {
        CHECK_EQ(sy_pusher_member_parse(bad_members[i], strlen(bad_members[i]), 1024, &u), SY_PUSHER_MEMBER_DATA);
        CHECK(u.block == NULL);
    }
    char big[200];
    snprintf(big, sizeof(big), "{\"user_id\":\"%0129d\"}", 0);
    CHECK_EQ(sy_pusher_member_parse(big, strlen(big), 1024, &u), SY_PUSHER_MEMBER_DATA);

    const char *ud = "{\"id\":\"42\",\"name\":\"Bo\",\"watchlist\":[\"1\"]}";
    CHECK_EQ(sy_pusher_user_parse(ud, strlen(ud), &u), SY_PUSHER_OK);
    CHECK(eq(u.id, u.id_len, "42"));
    CHECK(eq(u.info, u.info_len, ud));
    sy_pusher_user_free(&u);
    const char *bad_users[] = {"x", "{}", "{\"id\":42}", "{\"id\":\"\"}", "\"42\""};
    for (size_t i = 0; i < sizeof(bad_users) / sizeof(bad_users[0]); i++)
        CHECK_EQ(sy_pusher_user_parse(bad_users[i], strlen(bad_users[i]), &u), SY_PUSHER_USER_DATA);
}

/* ---- the server's frames --------------------------------------------------- */

static void test_frames(void) {
    read_t r;
    sy_refbuf_t *f = sy_pusher_established_frame("123.456", 7, 120);
    CHECK(payload_is(
        f, "{\"event\":\"pusher:connection_established\",\"data\":\"{\\\"socket_id\\\":\\\"123.456\\\",\\\"activity_"
           "timeout\\\":120}\"}"));
    CHECK(read_frame(f, &r));
    CHECK(str_is(yyjson_obj_get(r.data, "socket_id"), "123.456"));
    CHECK_EQ(yyjson_get_uint(yyjson_obj_get(r.data, "activity_timeout")), 120);
    read_free(&r);
    sy_refbuf_release(f);

    f = sy_pusher_pong_frame();
    CHECK(payload_is(f, "{\"event\":\"pusher:pong\",\"data\":{}}"));
    sy_refbuf_release(f);
    f = sy_pusher_ping_frame();
    CHECK(payload_is(f, "{\"event\":\"pusher:ping\",\"data\":{}}"));
    sy_refbuf_release(f);
    f = sy_pusher_error_frame(0, "Invalid signature: \"x\"", 22);
    CHECK(payload_is(f, "{\"event\":\"pusher:error\",\"data\":{\"code\":null,\"message\":\"Invalid signature: "
                        "\\\"x\\\"\"}}"));
    sy_refbuf_release(f);
    f = sy_pusher_error_frame(4301, "slow down", 9);
    CHECK(payload_is(f, "{\"event\":\"pusher:error\",\"data\":{\"code\":4301,\"message\":\"slow down\"}}"));
    sy_refbuf_release(f);

    f = sy_pusher_subscribed_frame("my-channel", 10);
    CHECK(payload_is(f, "{\"event\":\"pusher_internal:subscription_succeeded\",\"channel\":\"my-channel\",\"data\":"
                        "\"{}\"}"));
    sy_refbuf_release(f);

    /* Presence: JSON with strings that need escaping, inside a string. */
    sy_pusher_member_t ms[3] = {
        {"1", 1, "{\"name\":\"A \\\"q\\\" \\\\ \\n é\"}", strlen("{\"name\":\"A \\\"q\\\" \\\\ \\n é\"}")},
        {"two\"2", 5, NULL, 0},
        {"3", 1, "[1,2]", 5},
    };
    f = sy_pusher_presence_subscribed_frame("presence-r", 10, ms, 3);
    CHECK(read_frame(f, &r));
    CHECK(str_is(yyjson_obj_get(r.root, "event"), "pusher_internal:subscription_succeeded"));
    CHECK(str_is(yyjson_obj_get(r.root, "channel"), "presence-r"));
    yyjson_val *pr = yyjson_obj_get(r.data, "presence");
    yyjson_val *ids = yyjson_obj_get(pr, "ids"), *hash = yyjson_obj_get(pr, "hash");
    CHECK_EQ(yyjson_arr_size(ids), 3);
    CHECK(str_is(yyjson_arr_get(ids, 1), "two\"2"));
    CHECK_EQ(yyjson_get_uint(yyjson_obj_get(pr, "count")), 3);
    CHECK(str_is(yyjson_obj_get(yyjson_obj_get(hash, "1"), "name"), "A \"q\" \\ \n é"));
    CHECK(yyjson_is_null(yyjson_obj_get(hash, "two\"2")));
    CHECK_EQ(yyjson_arr_size(yyjson_obj_get(hash, "3")), 2);
    read_free(&r);
    sy_refbuf_release(f);
    f = sy_pusher_presence_subscribed_frame("presence-r", 10, NULL, 0);
    CHECK(payload_is(f, "{\"event\":\"pusher_internal:subscription_succeeded\",\"channel\":\"presence-r\",\"data\":"
                        "\"{\\\"presence\\\":{\\\"ids\\\":[],\\\"hash\\\":{},\\\"count\\\":0}}\"}"));
    sy_refbuf_release(f);

    f = sy_pusher_member_added_frame("presence-r", 10, &ms[0]);
    CHECK(read_frame(f, &r));
    CHECK(str_is(yyjson_obj_get(r.root, "event"), "pusher_internal:member_added"));
    CHECK(str_is(yyjson_obj_get(r.data, "user_id"), "1"));
    CHECK(str_is(yyjson_obj_get(yyjson_obj_get(r.data, "user_info"), "name"), "A \"q\" \\ \n é"));
    read_free(&r);
    sy_refbuf_release(f);
    f = sy_pusher_member_removed_frame("presence-r", 10, "1", 1);
    CHECK(payload_is(f, "{\"event\":\"pusher_internal:member_removed\",\"channel\":\"presence-r\",\"data\":"
                        "\"{\\\"user_id\\\":\\\"1\\\"}\"}"));
    sy_refbuf_release(f);
    f = sy_pusher_subscription_count_frame("c", 1, 42);
    CHECK(payload_is(f, "{\"event\":\"pusher_internal:subscription_count\",\"channel\":\"c\",\"data\":"
                        "\"{\\\"subscription_count\\\":42}\"}"));
    sy_refbuf_release(f);
    f = sy_pusher_cache_miss_frame("cache-c", 7);
    CHECK(payload_is(f, "{\"event\":\"pusher:cache_miss\",\"channel\":\"cache-c\"}"));
    sy_refbuf_release(f);
    f = sy_pusher_signin_success_frame("{\"id\":\"42\"}", 11);
    CHECK(payload_is(f, "{\"event\":\"pusher:signin_success\",\"data\":{\"user_data\":\"{\\\"id\\\":\\\"42\\\"}\"}}"));
    sy_refbuf_release(f);
    f = sy_pusher_subscription_error_frame("private-x", 9, "AuthError", "no", 2, 401);
    CHECK(payload_is(f, "{\"event\":\"pusher:subscription_error\",\"channel\":\"private-x\",\"data\":{\"type\":"
                        "\"AuthError\",\"error\":\"no\",\"status\":401}}"));
    sy_refbuf_release(f);
}

static void test_event_frames(void) {
    /* Bytes: a JSON string whatever they hold. */
    sy_refbuf_t *f =
        sy_pusher_event_frame("my-event", 8, "my-channel", 10, "{\"a\":1}", 7, SY_PUSHER_DATA_BYTES, NULL, 0, true);
    CHECK(payload_is(f, "{\"event\":\"my-event\",\"channel\":\"my-channel\",\"data\":\"{\\\"a\\\":1}\"}"));
    CHECK_EQ(f->deflate, SY_REFBUF_Z_TODO);
    read_t r;
    CHECK(read_frame(f, &r)); /* pusher-js: a string that is JSON reaches the handler parsed */
    CHECK_EQ(yyjson_get_uint(yyjson_obj_get(r.data, "a")), 1);
    read_free(&r);
    sy_refbuf_release(f);
    f = sy_pusher_event_frame("e", 1, "c", 1, "hi\t\x01\"\\", 6, SY_PUSHER_DATA_BYTES, NULL, 0, false);
    CHECK(payload_is(f, "{\"event\":\"e\",\"channel\":\"c\",\"data\":\"hi\\u0009\\u0001\\\"\\\\\"}"));
    CHECK_EQ(f->deflate, SY_REFBUF_Z_NONE);
    sy_refbuf_release(f);
    f = sy_pusher_event_frame("e", 1, "c", 1,
                              "a\xff"
                              "b",
                              3, SY_PUSHER_DATA_BYTES, NULL, 0, false);
    CHECK(payload_is(f, "{\"event\":\"e\",\"channel\":\"c\",\"data\":\"a\\ufffdb\"}"));
    sy_refbuf_release(f);
    f = sy_pusher_event_frame("e", 1, "c", 1, NULL, 0, SY_PUSHER_DATA_BYTES, NULL, 0, false);
    CHECK(payload_is(f, "{\"event\":\"e\",\"channel\":\"c\",\"data\":\"\"}"));
    sy_refbuf_release(f);
    /* JSON: as given; a client event on a presence channel names its user. */
    f = sy_pusher_event_frame("client-t", 8, "presence-r", 10, "{\"x\":[1]}", 9, SY_PUSHER_DATA_JSON, "u\"1", 3, true);
    CHECK(payload_is(f, "{\"event\":\"client-t\",\"channel\":\"presence-r\",\"data\":{\"x\":[1]},\"user_id\":"
                        "\"u\\\"1\"}"));
    sy_refbuf_release(f);
    /* Sizes across the WebSocket header's forms (7-bit, 16-bit, 64-bit). */
    size_t sizes[] = {50, 126, 65536, 70000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char *d = malloc(sizes[i]);
        CHECK(d != NULL);
        memset(d, 'x', sizes[i]);
        f = sy_pusher_event_frame("e", 1, "c", 1, d, sizes[i], SY_PUSHER_DATA_BYTES, NULL, 0, false);
        CHECK(f != NULL && read_frame(f, &r));
        CHECK_EQU(yyjson_get_len(yyjson_obj_get(r.root, "data")), sizes[i]);
        read_free(&r);
        sy_refbuf_release(f);
        free(d);
    }
}

/* ---- what the real clients send (vectors/pusher.js) ------------------------ */

static void test_real_clients(yyjson_doc *v) {
    yyjson_val *root = yyjson_doc_get_root(v);
    yyjson_val *msgs = yyjson_obj_get(root, "client_messages"), *it;
    size_t i, max, kinds[SY_PUSHER_MSG_OTHER + 1] = {0};
    bool server_to_user = false, presence = false;
    yyjson_arr_foreach(msgs, i, max, it) {
        sy_pusher_msg_t m;
        sy_pusher_err_t e = parse(yyjson_get_str(it), &m);
        CHECK_EQ(e, SY_PUSHER_OK);
        if (e != SY_PUSHER_OK) {
            fprintf(stderr, "  pusher-js sent: %s\n", yyjson_get_str(it));
            continue;
        }
        kinds[m.kind]++;
        /* What pusher-js meant, read with yyjson. */
        yyjson_doc *d = yyjson_read(yyjson_get_str(it), yyjson_get_len(it), 0);
        yyjson_val *msg = yyjson_doc_get_root(d), *data = yyjson_obj_get(msg, "data");
        size_t n;
        const char *s;
        switch (m.kind) {
        case SY_PUSHER_MSG_SUBSCRIBE:
            s = vec_str(data, "channel", &n);
            CHECK(eq(m.channel, m.channel_len, s));
            if (sy_pusher_needs_auth(m.chan.type)) {
                s = vec_str(data, "auth", &n);
                CHECK(eq(m.auth, m.auth_len, s));
            }
            if (m.chan.type == SY_PUSHER_PRESENCE) {
                presence = true;
                s = vec_str(data, "channel_data", &n);
                CHECK(eq(m.channel_data, m.channel_data_len, s));
                sy_pusher_user_t u;
                CHECK_EQ(sy_pusher_member_parse(m.channel_data, m.channel_data_len, 1024, &u), SY_PUSHER_OK);
                CHECK(eq(u.id, u.id_len, "u-1"));
                sy_pusher_user_free(&u);
            }
            if (m.chan.type == SY_PUSHER_SERVER_TO_USER) {
                /* After pusher:signin, with an empty auth. */
                server_to_user = true;
                size_t id_len;
                const char *id = sy_pusher_server_to_user_id(m.channel, m.channel_len, &id_len);
                CHECK(eq(id, id_len, "42"));
            }
            break;
        case SY_PUSHER_MSG_SIGNIN: {
            s = vec_str(data, "user_data", &n);
            CHECK(eq(m.user_data, m.user_data_len, s));
            s = vec_str(data, "auth", &n);
            CHECK(eq(m.auth, m.auth_len, s));
            sy_pusher_user_t u;
            CHECK_EQ(sy_pusher_user_parse(m.user_data, m.user_data_len, &u), SY_PUSHER_OK);
            CHECK(eq(u.id, u.id_len, "42"));
            sy_pusher_user_free(&u);
            break;
        }
        case SY_PUSHER_MSG_CLIENT_EVENT: {
            CHECK_EQ(m.chan.type, SY_PUSHER_PRIVATE);
            size_t len;
            char *want = yyjson_val_write(data, 0, &len); /* JSON.stringify's form, for these values */
            CHECK(want != NULL && eq(m.data, m.data_len, want));
            free(want);
            break;
        }
        case SY_PUSHER_MSG_UNSUBSCRIBE:
            CHECK(eq(m.channel, m.channel_len, "my-channel"));
            break;
        default:
            break;
        }
        yyjson_doc_free(d);
        sy_pusher_msg_free(&m);
    }
    /* public, cache, private, Echo's private, Echo's presence, #server-to-user-42 */
    CHECK_EQ(kinds[SY_PUSHER_MSG_SUBSCRIBE], 6);
    CHECK_EQ(kinds[SY_PUSHER_MSG_SIGNIN], 1);
    CHECK_EQ(kinds[SY_PUSHER_MSG_CLIENT_EVENT], 2); /* trigger and Echo's whisper */
    CHECK_EQ(kinds[SY_PUSHER_MSG_UNSUBSCRIBE], 1);
    CHECK_EQ(kinds[SY_PUSHER_MSG_PING], 1);
    CHECK(server_to_user && presence);

    /* Channel names: what the SDK signs for is what this accepts (its
     * #server-to-user- refusal: no auth is ever made for one). */
    yyjson_arr_foreach(yyjson_obj_get(root, "channels"), i, max, it) {
        size_t n;
        const char *name = vec_str(it, "name", &n);
        bool sdk_ok = yyjson_get_bool(yyjson_obj_get(it, "valid"));
        sy_pusher_chan_t c;
        sy_pusher_err_t e = sy_pusher_channel_check(name, n, SY_PUSHER_CHANNEL_MAX_DEFAULT, &c);
        bool ours = e == SY_PUSHER_OK && c.type != SY_PUSHER_SERVER_TO_USER;
        CHECK_EQ(ours, sdk_ok);
        if (ours != sdk_ok)
            fprintf(stderr, "  channel %.40s: SDK %d, here %d\n", name, sdk_ok, ours);
    }
    yyjson_arr_foreach(yyjson_obj_get(root, "socket_ids"), i, max, it) {
        size_t n;
        const char *id = vec_str(it, "id", &n);
        bool sdk_ok = yyjson_get_bool(yyjson_obj_get(it, "valid"));
        CHECK_EQ(sy_pusher_socket_id_valid(id, n), sdk_ok);
    }
}

int main(void) {
    sy_pusher_limits_default(&LIM);
    test_subscribe();
    test_malformed();
    test_other_kinds();
    test_channels();
    test_socket_ids();
    test_users();
    test_frames();
    test_event_frames();
    yyjson_doc *v = vectors_load("pusher");
    if (v != NULL)
        test_real_clients(v);
    yyjson_doc_free(v);
    return check_report("test_pusher");
}
