/* sy_pusher_http: Pusher's HTTP API requests (docs/pusher.md). The
 * requests the real `pusher` SDK 5 signed at test time (vectors/pusher.js:
 * trigger to one and several channels, a batch, the channel queries,
 * terminate_connections) routed and read, each with exactly the string
 * the SDK signed; their bodies parsed into the events to publish; then
 * every failure, one by one: routes and methods, the query string
 * (percent-encoding, '+', a key twice, too many), each auth parameter,
 * the clock's window on both sides, names in the path, and every shape of
 * a bad body, with its status. Inputs placed against a guard page. */
#include "guard.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <yyjson.h>

#include "check.h"
#include "proto/sy_pusher.h"
#include "proto/sy_pusher_http.h"
#include "vectors.h"

#define NOW 1700000000
#define LIT(s) (s), (sizeof(s) - 1)
#define SIGNED "auth_key=k&auth_timestamp=1700000000&auth_version=1.0&auth_signature=abc"

static bool eq(const char *p, size_t n, const char *s) { return p != NULL && n == strlen(s) && memcmp(p, s, n) == 0; }

static sy_pusher_http_err_t req(const char *method, const char *target, size_t body_len, int64_t now,
                                sy_pusher_req_t *r) {
    guard_t g;
    const char *t = guard_place(&g, target, strlen(target));
    sy_pusher_http_err_t e = sy_pusher_http_request(method, strlen(method), t, strlen(target), body_len, now, 200, r);
    guard_release(&g); /* nothing of the target is kept */
    return e;
}

static sy_pusher_http_limits_t LIM = {
    .max_body = 1 << 20,
    .max_event_len = 200,
    .max_channel_len = 200,
    .max_payload = 10240,
    .max_channels = 100,
    .max_batch = 10,
};

static sy_pusher_http_err_t body(sy_pusher_route_t route, const char *s, sy_pusher_events_t *ev) {
    guard_t g;
    const uint8_t *p = guard_place(&g, s, strlen(s));
    sy_pusher_http_err_t e = sy_pusher_http_events(route, p, strlen(s), &LIM, ev);
    guard_release(&g);
    return e;
}

static void test_sdk_requests(yyjson_doc *v) {
    yyjson_val *it;
    size_t i, max, n = 0;
    yyjson_arr_foreach(yyjson_obj_get(yyjson_doc_get_root(v), "requests"), i, max, it) {
        size_t mn, pn, qn, tn, bn, kn;
        const char *method = vec_str(it, "method", &mn), *path = vec_str(it, "path", &pn),
                   *query = vec_str(it, "query", &qn), *to_sign = vec_str(it, "to_sign", &tn),
                   *b = vec_str(it, "body", &bn), *key = vec_str(it, "key", &kn);
        char target[2048];
        snprintf(target, sizeof(target), "%s?%s", path, query);
        sy_pusher_req_t r;
        sy_pusher_http_err_t e = req(method, target, bn, NOW, &r);
        CHECK_EQ(e, SY_PUSHER_HTTP_OK);
        if (e != SY_PUSHER_HTTP_OK) {
            fprintf(stderr, "  %s %s: %s\n", method, target, sy_pusher_http_err_message(e));
            continue;
        }
        n++;
        CHECK(eq(r.to_sign, r.to_sign_len, to_sign));
        CHECK(eq(r.auth_key, r.auth_key_len, key));
        CHECK(eq(r.app_id, r.app_id_len, "123"));
        CHECK_EQ(r.auth_timestamp, NOW);
        CHECK(r.auth_signature_len == 64 && strstr(query, "auth_signature=") != NULL &&
              memcmp(r.auth_signature, strstr(query, "auth_signature=") + 15, 64) == 0);
        CHECK((bn > 0) == (r.body_md5 != NULL));
        if (strstr(path, "/batch_events") != NULL) {
            CHECK_EQ(r.route, SY_PUSHER_API_BATCH_EVENTS);
            sy_pusher_events_t ev;
            CHECK_EQ(body(r.route, b, &ev), SY_PUSHER_HTTP_OK);
            CHECK_EQ(ev.nevents, 2);
            if (ev.nevents == 2) {
                CHECK(eq(ev.events[0].name.s, ev.events[0].name.len, "e1"));
                CHECK(eq(ev.events[0].channels[0].s, ev.events[0].channels[0].len, "a"));
                CHECK(ev.events[0].socket_id.s == NULL && ev.events[0].info.s == NULL);
                CHECK(eq(ev.events[1].data.s, ev.events[1].data.len, "{\"k\":[1]}"));
                CHECK(eq(ev.events[1].socket_id.s, ev.events[1].socket_id.len, "3.4"));
                CHECK(eq(ev.events[1].info.s, ev.events[1].info.len, "user_count,subscription_count"));
            }
            sy_pusher_events_free(&ev);
        } else if (strstr(path, "/events") != NULL) {
            CHECK_EQ(r.route, SY_PUSHER_API_EVENTS);
            sy_pusher_events_t ev;
            CHECK_EQ(body(r.route, b, &ev), SY_PUSHER_HTTP_OK);
            CHECK_EQ(ev.nevents, 1);
            /* The data goes out as the JSON string it came in as. */
            yyjson_doc *d = yyjson_read(b, bn, 0);
            yyjson_val *want = yyjson_obj_get(yyjson_doc_get_root(d), "data");
            sy_refbuf_t *f = sy_pusher_event_frame(
                ev.events[0].name.s, ev.events[0].name.len, ev.events[0].channels[0].s, ev.events[0].channels[0].len,
                ev.events[0].data.s, ev.events[0].data.len, SY_PUSHER_DATA_BYTES, NULL, 0, true);
            yyjson_doc *fd =
                f != NULL ? yyjson_read((const char *)sy_refbuf_payload(f), sy_refbuf_payload_len(f), 0) : NULL;
            CHECK(fd != NULL && yyjson_equals(yyjson_obj_get(yyjson_doc_get_root(fd), "data"), want));
            yyjson_doc_free(fd);
            yyjson_doc_free(d);
            sy_refbuf_release(f);
            sy_pusher_events_free(&ev);
        } else if (strstr(path, "/users/42/terminate_connections") != NULL) {
            CHECK_EQ(r.route, SY_PUSHER_API_TERMINATE);
            CHECK(eq(r.name, r.name_len, "42"));
        } else if (strstr(path, "/users") != NULL) {
            CHECK_EQ(r.route, SY_PUSHER_API_CHANNEL_USERS);
            CHECK(eq(r.name, r.name_len, "presence-room"));
        } else if (strstr(path, "/channels/") != NULL) {
            CHECK_EQ(r.route, SY_PUSHER_API_CHANNEL);
            CHECK(eq(r.info, r.info_len, "user_count,subscription_count"));
        } else {
            CHECK_EQ(r.route, SY_PUSHER_API_CHANNELS);
            if (strstr(query, "filter_by_prefix") != NULL)
                CHECK(eq(r.filter_by_prefix, r.filter_by_prefix_len, "presence-"));
        }
        sy_pusher_req_free(&r);
    }
    CHECK_EQ(n, 8);
}

static void bad_req(const char *method, const char *target, size_t body_len, int64_t now, sy_pusher_http_err_t want) {
    sy_pusher_req_t r;
    sy_pusher_http_err_t e = req(method, target, body_len, now, &r);
    CHECK_EQ(e, want);
    if (e != want)
        fprintf(stderr, "  %s %s: %s\n", method, target, sy_pusher_http_err_message(e));
    CHECK(r.block == NULL && r.to_sign == NULL);
    sy_pusher_req_free(&r);
}

static void test_request_errors(void) {
    /* Routes and methods. */
    bad_req("GET", "/", 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps", 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps/", 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps//channels?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps/1", 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps/1/channels/?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps/1/channels/a/members?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps/1/channels/a/users/x?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("POST", "/apps/1/users/42?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("POST", "/apps/1/users//terminate_connections?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("POST", "/apps/1/events/?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND);
    bad_req("GET", "/apps/1/channels/a%2?" SIGNED, 0, NOW, SY_PUSHER_HTTP_NOT_FOUND); /* bad % in the path */
    bad_req("GET", "/apps/1/events?" SIGNED, 0, NOW, SY_PUSHER_HTTP_METHOD);
    bad_req("PUT", "/apps/1/batch_events?" SIGNED, 0, NOW, SY_PUSHER_HTTP_METHOD);
    bad_req("POST", "/apps/1/channels?" SIGNED, 0, NOW, SY_PUSHER_HTTP_METHOD);
    bad_req("post", "/apps/1/events?" SIGNED, 0, NOW, SY_PUSHER_HTTP_METHOD);
    bad_req("GET", "/apps/1/users/42/terminate_connections?" SIGNED, 0, NOW, SY_PUSHER_HTTP_METHOD);
    /* The query. */
    bad_req("GET", "/apps/1/channels?a=%zz&" SIGNED, 0, NOW, SY_PUSHER_HTTP_QUERY);
    bad_req("GET", "/apps/1/channels?a=%4&" SIGNED, 0, NOW, SY_PUSHER_HTTP_QUERY);
    bad_req("GET", "/apps/1/channels?a%=1&" SIGNED, 0, NOW, SY_PUSHER_HTTP_QUERY);
    bad_req("GET", "/apps/1/channels?info=a&" SIGNED "&info=b", 0, NOW, SY_PUSHER_HTTP_QUERY);
    bad_req("GET", "/apps/1/channels?auth_key=x&" SIGNED, 0, NOW, SY_PUSHER_HTTP_QUERY);
    char many[1024];
    int o = snprintf(many, sizeof(many), "/apps/1/channels?" SIGNED);
    for (int i = 0; i < SY_PUSHER_HTTP_PARAMS_MAX - 3; i++)
        o += snprintf(many + o, sizeof(many) - (size_t)o, "&p%d=1", i);
    bad_req("GET", many, 0, NOW, SY_PUSHER_HTTP_QUERY); /* 4 + 29 = 33 */
    /* Each auth parameter. */
    bad_req("GET", "/apps/1/channels", 0, NOW, SY_PUSHER_HTTP_NO_KEY);
    bad_req("GET", "/apps/1/channels?auth_key=&auth_timestamp=1700000000&auth_version=1.0&auth_signature=a", 0, NOW,
            SY_PUSHER_HTTP_NO_KEY);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_version=1.0&auth_signature=a", 0, NOW,
            SY_PUSHER_HTTP_NO_TIMESTAMP);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_timestamp=17e8&auth_version=1.0&auth_signature=a", 0, NOW,
            SY_PUSHER_HTTP_NO_TIMESTAMP);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_timestamp=-1&auth_version=1.0&auth_signature=a", 0, NOW,
            SY_PUSHER_HTTP_NO_TIMESTAMP);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_timestamp=9999999999999999999&auth_version=1.0&auth_signature=a",
            0, NOW, SY_PUSHER_HTTP_NO_TIMESTAMP);
    bad_req("GET", "/apps/1/channels?" SIGNED, 0, NOW + 601, SY_PUSHER_HTTP_TIMESTAMP);
    bad_req("GET", "/apps/1/channels?" SIGNED, 0, NOW - 601, SY_PUSHER_HTTP_TIMESTAMP);
    sy_pusher_req_t r;
    CHECK_EQ(req("GET", "/apps/1/channels?" SIGNED, 0, NOW + 600, &r), SY_PUSHER_HTTP_OK);
    sy_pusher_req_free(&r);
    CHECK_EQ(req("GET", "/apps/1/channels?" SIGNED, 0, NOW - 600, &r), SY_PUSHER_HTTP_OK);
    sy_pusher_req_free(&r);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_timestamp=1700000000&auth_signature=a", 0, NOW,
            SY_PUSHER_HTTP_VERSION);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_timestamp=1700000000&auth_version=2.0&auth_signature=a", 0, NOW,
            SY_PUSHER_HTTP_VERSION);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_timestamp=1700000000&auth_version=1.0", 0, NOW,
            SY_PUSHER_HTTP_NO_SIGNATURE);
    bad_req("GET", "/apps/1/channels?auth_key=k&auth_timestamp=1700000000&auth_version=1.0&auth_signature=", 0, NOW,
            SY_PUSHER_HTTP_NO_SIGNATURE);
    bad_req("POST", "/apps/1/events?" SIGNED, 10, NOW, SY_PUSHER_HTTP_NO_BODY_MD5);
    /* Names in the path. */
    bad_req("GET", "/apps/1/channels/a%20b?" SIGNED, 0, NOW, SY_PUSHER_HTTP_CHANNEL_NAME);
    bad_req("GET", "/apps/1/channels/private-a/users?" SIGNED, 0, NOW, SY_PUSHER_HTTP_PRESENCE_ONLY);
    bad_req("POST", "/apps/1/users/a%0Ab/terminate_connections?" SIGNED, 0, NOW, SY_PUSHER_HTTP_USER_ID);

    /* What is read and signed: decoded, '+' a space, sorted, no auth_signature. */
    CHECK_EQ(req("GET",
                 "/apps/my-app/channels/presence-a%40b?info=user_count%2Csubscription_count&" SIGNED "&zz=a+b&&flag", 0,
                 NOW, &r),
             SY_PUSHER_HTTP_OK);
    CHECK_EQ(r.route, SY_PUSHER_API_CHANNEL);
    CHECK(eq(r.app_id, r.app_id_len, "my-app"));
    CHECK(eq(r.name, r.name_len, "presence-a@b"));
    CHECK(eq(r.info, r.info_len, "user_count,subscription_count"));
    CHECK(eq(r.to_sign, r.to_sign_len,
             "GET\n/apps/my-app/channels/presence-a%40b\nauth_key=k&auth_timestamp=1700000000&auth_version=1.0&"
             "flag=&info=user_count,subscription_count&zz=a b"));
    char msg[512];
    size_t n = sy_pusher_http_message(msg, sizeof(msg), SY_PUSHER_HTTP_SIGNATURE, &r, NOW);
    CHECK(eq(msg, n,
             "Invalid signature: you should have sent HmacSHA256Hex(\"GET\\n/apps/my-app/channels/presence-a%40b\\n"
             "auth_key=k&auth_timestamp=1700000000&auth_version=1.0&flag=&info=user_count,subscription_count&zz=a "
             "b\", your_secret_key), but you sent \"abc\""));
    n = sy_pusher_http_message(msg, sizeof(msg), SY_PUSHER_HTTP_TIMESTAMP, &r, NOW + 700);
    CHECK(eq(msg, n, "Timestamp expired: Given timestamp (1700000000) not within 600s of server time (1700000700)"));
    n = sy_pusher_http_message(msg, 8, SY_PUSHER_HTTP_SIGNATURE, &r, NOW);
    CHECK(n == 7 && msg[7] == '\0');
    sy_pusher_req_free(&r);
    n = sy_pusher_http_message(msg, sizeof(msg), SY_PUSHER_HTTP_UNKNOWN_APP, NULL, NOW);
    CHECK(eq(msg, n, "Unknown app"));

    /* Every error has Pusher's kind of status and words. */
    for (int e = 1; e < SY_PUSHER_HTTP_ERR_COUNT; e++) {
        unsigned s = sy_pusher_http_status((sy_pusher_http_err_t)e);
        CHECK(s == 400 || s == 401 || s == 404 || s == 405 || s == 413 || s == 500);
        CHECK(sy_pusher_http_err_message((sy_pusher_http_err_t)e)[0] != '\0');
    }
}

static void bad_body(sy_pusher_route_t route, const char *s, sy_pusher_http_err_t want) {
    sy_pusher_events_t ev;
    sy_pusher_http_err_t e = body(route, s, &ev);
    CHECK_EQ(e, want);
    if (e != want)
        fprintf(stderr, "  body %s: %s\n", s, sy_pusher_http_err_message(e));
    CHECK(ev.doc == NULL && ev.events == NULL && ev.channels == NULL);
    sy_pusher_events_free(&ev);
}

static void test_bodies(void) {
    sy_pusher_route_t E = SY_PUSHER_API_EVENTS, B = SY_PUSHER_API_BATCH_EVENTS;
    sy_pusher_events_t ev;
    CHECK_EQ(body(E,
                  "{\"name\":\"e\",\"data\":\"\",\"channels\":[\"a\",\"#server-to-user-7\",\"presence-x\"],"
                  "\"socket_id\":null}",
                  &ev),
             SY_PUSHER_HTTP_OK);
    CHECK_EQ(ev.nevents, 1);
    CHECK_EQ(ev.events[0].nchannels, 3);
    CHECK(eq(ev.events[0].channels[1].s, ev.events[0].channels[1].len, "#server-to-user-7"));
    CHECK(ev.events[0].data.len == 0 && ev.events[0].socket_id.s == NULL);
    sy_pusher_events_free(&ev);

    bad_body(E, "", SY_PUSHER_HTTP_BODY_JSON);
    bad_body(E, "{", SY_PUSHER_HTTP_BODY_JSON);
    bad_body(E, "[]", SY_PUSHER_HTTP_BODY_JSON);
    bad_body(E, "{\"data\":\"x\",\"channel\":\"a\"}", SY_PUSHER_HTTP_EVENT_NAME);
    bad_body(E, "{\"name\":\"\",\"data\":\"x\",\"channel\":\"a\"}", SY_PUSHER_HTTP_EVENT_NAME);
    bad_body(E, "{\"name\":1,\"data\":\"x\",\"channel\":\"a\"}", SY_PUSHER_HTTP_EVENT_NAME);
    bad_body(E, "{\"name\":\"pusher:subscription_succeeded\",\"data\":\"x\",\"channel\":\"a\"}",
             SY_PUSHER_HTTP_EVENT_NAME);
    bad_body(E, "{\"name\":\"pusher_internal:member_added\",\"data\":\"x\",\"channel\":\"a\"}",
             SY_PUSHER_HTTP_EVENT_NAME);
    /* A NUL would end the name in the publish's meta: what follows would be a user_id. */
    bad_body(E, "{\"name\":\"ev\\u0000alice\",\"data\":\"x\",\"channel\":\"presence-a\"}", SY_PUSHER_HTTP_EVENT_NAME);
    char big[512];
    snprintf(big, sizeof(big), "{\"name\":\"%0201d\",\"data\":\"x\",\"channel\":\"a\"}", 0);
    bad_body(E, big, SY_PUSHER_HTTP_EVENT_NAME);
    bad_body(E, "{\"name\":\"e\",\"channel\":\"a\"}", SY_PUSHER_HTTP_EVENT_DATA);
    bad_body(E, "{\"name\":\"e\",\"data\":{\"a\":1},\"channel\":\"a\"}", SY_PUSHER_HTTP_EVENT_DATA);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\"}", SY_PUSHER_HTTP_CHANNELS);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channel\":\"a\",\"channels\":[\"b\"]}", SY_PUSHER_HTTP_CHANNELS);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channels\":[]}", SY_PUSHER_HTTP_CHANNELS);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channels\":\"a\"}", SY_PUSHER_HTTP_CHANNELS);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channel\":[\"a\"]}", SY_PUSHER_HTTP_CHANNELS);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channels\":[\"a\",2]}", SY_PUSHER_HTTP_CHANNELS);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channels\":[\"a b\"]}", SY_PUSHER_HTTP_CHANNEL_NAME);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channels\":[\"private-encrypted-a\",\"b\"]}",
             SY_PUSHER_HTTP_ENCRYPTED_MULTI);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channel\":\"a\",\"socket_id\":\"1\"}", SY_PUSHER_HTTP_SOCKET_ID);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channel\":\"a\",\"socket_id\":1.2}", SY_PUSHER_HTTP_SOCKET_ID);
    bad_body(E, "{\"name\":\"e\",\"data\":\"x\",\"channel\":\"a\",\"info\":[]}", SY_PUSHER_HTTP_INFO);
    /* 101 channels; 11 events; data past the limit; the body past its own. */
    char chans[4096];
    int o = snprintf(chans, sizeof(chans), "{\"name\":\"e\",\"data\":\"x\",\"channels\":[\"c0\"");
    for (int i = 1; i < 101; i++)
        o += snprintf(chans + o, sizeof(chans) - (size_t)o, ",\"c%d\"", i);
    snprintf(chans + o, sizeof(chans) - (size_t)o, "]}");
    bad_body(E, chans, SY_PUSHER_HTTP_CHANNELS);
    char batch[4096];
    o = snprintf(batch, sizeof(batch), "{\"batch\":[");
    for (int i = 0; i < 11; i++)
        o += snprintf(batch + o, sizeof(batch) - (size_t)o, "%s{\"name\":\"e\",\"data\":\"x\",\"channel\":\"a\"}",
                      i ? "," : "");
    snprintf(batch + o, sizeof(batch) - (size_t)o, "]}");
    bad_body(B, batch, SY_PUSHER_HTTP_BATCH);
    LIM.max_batch = 11;
    CHECK_EQ(body(B, batch, &ev), SY_PUSHER_HTTP_OK);
    CHECK_EQ(ev.nevents, 11);
    sy_pusher_events_free(&ev);
    LIM.max_batch = 10;
    bad_body(B, "{\"batch\":[]}", SY_PUSHER_HTTP_BATCH);
    bad_body(B, "{\"batch\":{}}", SY_PUSHER_HTTP_BATCH);
    bad_body(B, "{\"name\":\"e\",\"data\":\"x\",\"channel\":\"a\"}", SY_PUSHER_HTTP_BATCH);
    bad_body(B, "{\"batch\":[1]}", SY_PUSHER_HTTP_BATCH);
    bad_body(B, "{\"batch\":[{\"name\":\"e\",\"data\":\"x\",\"channel\":\"a\"},{\"name\":\"e\",\"channel\":\"a\"}]}",
             SY_PUSHER_HTTP_EVENT_DATA);
    LIM.max_payload = 3;
    bad_body(E, "{\"name\":\"e\",\"data\":\"abcd\",\"channel\":\"a\"}", SY_PUSHER_HTTP_DATA_TOO_LARGE);
    CHECK_EQ(body(E, "{\"name\":\"e\",\"data\":\"a\\\"c\",\"channel\":\"a\"}", &ev),
             SY_PUSHER_HTTP_OK); /* decoded: 3 */
    sy_pusher_events_free(&ev);
    LIM.max_payload = 10240;
    LIM.max_body = 10;
    bad_body(E, "{\"name\":\"e\",\"data\":\"a\",\"channel\":\"a\"}", SY_PUSHER_HTTP_TOO_LARGE);
    LIM.max_body = 1 << 20;
}

/* info=: the attributes asked for, unknown ones ignored (as Pusher). */
static void test_info(void) {
    CHECK(sy_pusher_http_info(NULL, 0) == 0);
    CHECK(sy_pusher_http_info("", 0) == 0);
    CHECK(sy_pusher_http_info(LIT("subscription_count")) == SY_PUSHER_INFO_SUBSCRIPTION_COUNT);
    CHECK(sy_pusher_http_info(LIT("user_count")) == SY_PUSHER_INFO_USER_COUNT);
    CHECK(sy_pusher_http_info(LIT("user_count,subscription_count")) ==
          (SY_PUSHER_INFO_USER_COUNT | SY_PUSHER_INFO_SUBSCRIPTION_COUNT));
    CHECK(sy_pusher_http_info(LIT("occupied,,user_count,")) == SY_PUSHER_INFO_USER_COUNT);
    CHECK(sy_pusher_http_info(LIT("subscription_counts,user_coun")) == 0);
    /* Read within its length: a longer buffer's rest is not looked at. */
    CHECK(sy_pusher_http_info("user_count", 4) == 0);

    /* From a request's query, decoded (%2C is the SDK's comma). */
    sy_pusher_req_t r;
    char target[256];
    snprintf(target, sizeof(target),
             "/apps/1/channels?auth_key=k&auth_timestamp=%lld&auth_version=1.0&filter_by_prefix=presence-&info="
             "user_count%%2Csubscription_count&auth_signature=s",
             (long long)NOW);
    CHECK(sy_pusher_http_request("GET", 3, target, strlen(target), 0, NOW, 200, &r) == SY_PUSHER_HTTP_OK);
    CHECK(r.route == SY_PUSHER_API_CHANNELS);
    CHECK(sy_pusher_http_info(r.info, r.info_len) == (SY_PUSHER_INFO_USER_COUNT | SY_PUSHER_INFO_SUBSCRIPTION_COUNT));
    CHECK(r.filter_by_prefix_len == 9 && memcmp(r.filter_by_prefix, "presence-", 9) == 0);
    sy_pusher_req_free(&r);
    CHECK(sy_pusher_http_status(SY_PUSHER_HTTP_USER_COUNT) == 400);
}

int main(void) {
    test_info();
    test_request_errors();
    test_bodies();
    yyjson_doc *v = vectors_load("pusher");
    if (v != NULL)
        test_sdk_requests(v);
    yyjson_doc_free(v);
    return check_report("test_pusher_http");
}
