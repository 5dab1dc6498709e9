/* Unit test: io/app/sy_pusher_api — the HTTP API's answers that read the
 * channels (GET /channels, /channels/<name>, an events request's info),
 * from a topic registry with subscribers counted as the IO threads count
 * them (sy_topic_count_sub): one app's channels only (its topics' prefix),
 * occupied ones only, filter_by_prefix, info's attributes, user_count
 * refused where Pusher refuses it; a good request asking user_count, or any
 * with a bus (scope.cluster), left to the owner (no answer, no error). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yyjson.h>

#include "check.h"
#include "io/app/sy_pusher_api.h"
#include "io/model/sy_topic.h"
#include "proto/sy_pusher_http.h"

#define NOW 1700000000

/* The body of HTTP response m (after its head), or NULL. */
static const char *body_of(const sy_refbuf_t *m, size_t *len) {
    for (size_t i = 0; m != NULL && i + 4 <= m->len; i++)
        if (memcmp(m->data + i, "\r\n\r\n", 4) == 0) {
            *len = m->len - i - 4;
            return (const char *)m->data + i + 4;
        }
    return NULL;
}

static sy_topic_t *topic(sy_topics_t *r, const char *name, unsigned subs) {
    sy_topic_t *t = sy_topic_acquire(r, name, strlen(name), true);
    CHECK(t != NULL);
    for (unsigned i = 0; t != NULL && i < subs; i++)
        (void)sy_topic_count_sub(t, true);
    return t;
}

/* sy_pusher_api_get's result for GET path_query (signed), *out its answer. */
static sy_pusher_http_err_t get(const sy_pusher_api_scope_t *s, const char *path_query, sy_refbuf_t **out) {
    char target[512];
    snprintf(target, sizeof(target), "%s%cauth_key=k&auth_timestamp=%d&auth_version=1.0&auth_signature=s", path_query,
             strchr(path_query, '?') != NULL ? '&' : '?', NOW);
    sy_pusher_req_t r;
    *out = NULL;
    sy_pusher_http_err_t e = sy_pusher_http_request("GET", 3, target, strlen(target), 0, NOW, 200, &r);
    CHECK_EQ(e, SY_PUSHER_HTTP_OK);
    if (e != SY_PUSHER_HTTP_OK)
        return e;
    e = sy_pusher_api_get(s, &r, out);
    sy_pusher_req_free(&r);
    return e;
}

/* The answer's JSON body (the caller frees it with yyjson_doc_free), or
 * NULL; *e the result. */
static yyjson_doc *ask(const sy_pusher_api_scope_t *s, const char *path_query, sy_pusher_http_err_t *e) {
    sy_refbuf_t *out = NULL;
    *e = get(s, path_query, &out);
    if (*e != SY_PUSHER_HTTP_OK) {
        CHECK(out == NULL);
        return NULL;
    }
    CHECK(out != NULL);
    if (out == NULL)
        return NULL;
    static const char HEAD[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ";
    CHECK(out->len > sizeof(HEAD) && memcmp(out->data, HEAD, sizeof(HEAD) - 1) == 0);
    size_t blen = 0;
    const char *body = body_of(out, &blen);
    CHECK(body != NULL);
    yyjson_doc *d = NULL;
    if (body != NULL) {
        CHECK_EQU(strtoul((const char *)out->data + sizeof(HEAD) - 1, NULL, 10), blen);
        d = yyjson_read((char *)(uintptr_t)body, blen, 0);
        CHECK(d != NULL);
    }
    sy_refbuf_release(out);
    return d;
}

/* Whether s leaves path_query (good) to the owner: no answer, no error. */
static bool owner(const sy_pusher_api_scope_t *s, const char *path_query) {
    sy_refbuf_t *out = NULL;
    sy_pusher_http_err_t e = get(s, path_query, &out);
    if (out != NULL)
        sy_refbuf_release(out);
    return e == SY_PUSHER_HTTP_OK && out == NULL;
}

/* The value at "/a/b" (object keys only), or NULL. */
static yyjson_val *at(yyjson_doc *d, const char *path) {
    yyjson_val *v = d != NULL ? yyjson_doc_get_root(d) : NULL;
    char key[64];
    while (v != NULL && *path == '/') {
        const char *end = strchr(path + 1, '/');
        size_t n = end != NULL ? (size_t)(end - path - 1) : strlen(path + 1);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, path + 1, n);
        key[n] = '\0';
        v = yyjson_obj_get(v, key);
        path += 1 + n;
    }
    return v;
}

static void test_get(void) {
    sy_topics_t r;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    sy_topic_t *ts[] = {topic(&r, "room-a", 2),    topic(&r, "room-b", 1),      topic(&r, "private-c", 1),
                        topic(&r, "idle", 0),      topic(&r, "app2:room-a", 3), topic(&r, "not a channel", 1),
                        topic(&r, "presence-p", 2)};
    sy_pusher_api_scope_t one = {.topics = &r, .prefix = "", .prefix_len = 0, .max_channel_len = 200};
    sy_pusher_api_scope_t two = {.topics = &r, .prefix = "app2:", .prefix_len = 5, .max_channel_len = 200};
    sy_pusher_http_err_t e;

    /* Every occupied channel of app one, {} each. */
    yyjson_doc *d = ask(&one, "/apps/1/channels", &e);
    yyjson_val *chans = at(d, "/channels");
    CHECK(yyjson_is_obj(chans) && yyjson_obj_size(chans) == 4);
    CHECK(yyjson_is_obj(at(d, "/channels/room-a")) && yyjson_obj_size(at(d, "/channels/room-a")) == 0);
    CHECK(at(d, "/channels/private-c") != NULL && at(d, "/channels/presence-p") != NULL);
    CHECK(at(d, "/channels/idle") == NULL); /* no subscriber: not occupied */
    yyjson_doc_free(d);

    /* filter_by_prefix and subscription_count. */
    d = ask(&one, "/apps/1/channels?filter_by_prefix=room-&info=subscription_count", &e);
    CHECK(yyjson_obj_size(at(d, "/channels")) == 2);
    CHECK_EQU(yyjson_get_uint(at(d, "/channels/room-a/subscription_count")), 2);
    CHECK_EQU(yyjson_get_uint(at(d, "/channels/room-b/subscription_count")), 1);
    yyjson_doc_free(d);

    /* App two sees its own topic of the same channel name, and nothing of app one's. */
    d = ask(&two, "/apps/2/channels?info=subscription_count", &e);
    CHECK(yyjson_obj_size(at(d, "/channels")) == 1);
    CHECK_EQU(yyjson_get_uint(at(d, "/channels/room-a/subscription_count")), 3);
    yyjson_doc_free(d);

    /* user_count: only with filter_by_prefix=presence-; then the owner answers. */
    CHECK(ask(&one, "/apps/1/channels?info=user_count", &e) == NULL);
    CHECK_EQ(e, SY_PUSHER_HTTP_USER_COUNT);
    CHECK(owner(&one, "/apps/1/channels?filter_by_prefix=presence-&info=user_count"));
    CHECK(!owner(&one, "/apps/1/channels?filter_by_prefix=presence-&info=subscription_count"));

    /* One channel: occupied, its count with info. */
    d = ask(&one, "/apps/1/channels/room-a?info=subscription_count", &e);
    CHECK(yyjson_get_bool(at(d, "/occupied")) && yyjson_get_uint(at(d, "/subscription_count")) == 2);
    CHECK(yyjson_obj_size(yyjson_doc_get_root(d)) == 2);
    yyjson_doc_free(d);
    d = ask(&one, "/apps/1/channels/idle", &e);
    CHECK(yyjson_is_false(at(d, "/occupied")) && yyjson_obj_size(yyjson_doc_get_root(d)) == 1);
    yyjson_doc_free(d);
    d = ask(&one, "/apps/1/channels/never-made?info=subscription_count", &e);
    CHECK(yyjson_is_false(at(d, "/occupied")) && yyjson_get_uint(at(d, "/subscription_count")) == 0);
    yyjson_doc_free(d);
    d = ask(&two, "/apps/2/channels/room-b", &e); /* app one's channel, not two's */
    CHECK(yyjson_is_false(at(d, "/occupied")));
    yyjson_doc_free(d);
    CHECK(ask(&one, "/apps/1/channels/room-a?info=user_count", &e) == NULL);
    CHECK_EQ(e, SY_PUSHER_HTTP_USER_COUNT);
    CHECK(owner(&one, "/apps/1/channels/presence-p?info=user_count,subscription_count"));
    CHECK(!owner(&one, "/apps/1/channels/presence-p?info=subscription_count"));

    /* With a bus every good GET is the owner's; a bad one is still refused here. */
    sy_pusher_api_scope_t bus = one;
    bus.cluster = true;
    CHECK(owner(&bus, "/apps/1/channels"));
    CHECK(owner(&bus, "/apps/1/channels/room-a?info=subscription_count"));
    CHECK(ask(&bus, "/apps/1/channels/room-a?info=user_count", &e) == NULL);
    CHECK_EQ(e, SY_PUSHER_HTTP_USER_COUNT);
    CHECK(ask(&bus, "/apps/1/channels?info=user_count", &e) == NULL);
    CHECK_EQ(e, SY_PUSHER_HTTP_USER_COUNT);

    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        while (ts[i] != NULL && sy_topic_subscribers(ts[i]) > 0)
            (void)sy_topic_count_sub(ts[i], false);
        sy_topic_release(&r, ts[i]);
    }
    CHECK_EQU(sy_topics_count(&r), 0); /* every reference the listing took was given back */
    sy_topics_destroy(&r);
}

/* The answer of scope s to the events body of route: want. */
static void check_trigger(const sy_pusher_api_scope_t *s, sy_pusher_route_t route, const char *body, const char *want) {
    sy_pusher_http_limits_t lim = {4096, 200, 200, 1024, 100, 10}; /* body, event, channel, payload, channels, batch */
    sy_pusher_events_t ev;
    CHECK_EQ(sy_pusher_http_events(route, (const uint8_t *)body, strlen(body), &lim, &ev), SY_PUSHER_HTTP_OK);
    sy_refbuf_t *out = NULL;
    CHECK_EQ(sy_pusher_api_trigger_answer(s, route, &ev, &out), SY_PUSHER_HTTP_OK);
    size_t blen = 0;
    const char *got = body_of(out, &blen);
    CHECK(got != NULL);
    if (got != NULL)
        CHECK_MEMSTR(got, blen, want);
    sy_refbuf_release(out);
    sy_pusher_events_free(&ev);
}

static void test_trigger_answer(void) {
    sy_topics_t r;
    CHECK_EQ(sy_topics_init(&r, 1), 0);
    sy_topic_t *t = topic(&r, "counted", 2);
    sy_pusher_api_scope_t one = {.topics = &r, .prefix = "", .prefix_len = 0, .max_channel_len = 200};
    check_trigger(
        &one, SY_PUSHER_API_EVENTS,
        "{\"name\":\"e\",\"data\":\"{}\",\"channels\":[\"counted\",\"nobody\"],\"info\":\"subscription_count\"}",
        "{\"channels\":{\"counted\":{\"subscription_count\":2},\"nobody\":{\"subscription_count\":0}}}");
    check_trigger(&one, SY_PUSHER_API_EVENTS, "{\"name\":\"e\",\"data\":\"{}\",\"channel\":\"counted\"}", "{}");
    /* A batch: each event's attributes in order, {} for one without info. */
    check_trigger(&one, SY_PUSHER_API_BATCH_EVENTS,
                  "{\"batch\":[{\"name\":\"e\",\"data\":\"1\",\"channel\":\"counted\",\"info\":\"subscription_count\"},"
                  "{\"name\":\"e\",\"data\":\"2\",\"channel\":\"counted\"},"
                  "{\"name\":\"e\",\"data\":\"3\",\"channel\":\"x\",\"info\":\"subscription_count\"}]}",
                  "{\"batch\":[{\"subscription_count\":2},{},{\"subscription_count\":0}]}");
    check_trigger(&one, SY_PUSHER_API_BATCH_EVENTS,
                  "{\"batch\":[{\"name\":\"e\",\"data\":\"1\",\"channel\":\"counted\"}]}", "{}");
    (void)sy_topic_count_sub(t, false);
    (void)sy_topic_count_sub(t, false);
    sy_topic_release(&r, t);
    sy_topics_destroy(&r);
}

int main(void) {
    test_get();
    test_trigger_answer();
    return check_report("test_pusher_api");
}
