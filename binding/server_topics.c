/* server_topics — binding.server*'s publish and calls on topics: topic
 * handles, positions and history, subscriber counts, the topics' list and
 * their 0 <-> 1 edges, and parseSince. See server.h. */
#include "server.h"

#include <stdio.h>

#include "base/sy_alloc.h"
#include "proto/sy_since.h"
#include "sy_napi.h"

/* serverPublish(handle, topic, data, flags) -> subscribers */
static napi_value server_publish(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    unsigned flags = 0;
    sy_bytes_t topic, data;
    if (!sy_barg_server(env, info, 4, argv, &b) || !sy_barg_send_flags(env, argv[3], &flags) ||
        !sy_barg_topic(env, argv[1], &topic))
        return NULL;
    if (!sy_barg_bytes(env, argv[2], "data", &data)) {
        sy_free(topic.owned);
        return NULL;
    }
    size_t n = 0;
    int rc = sy_server_publish(b->srv, topic.data, topic.len, data.data, data.len, flags | SY_SEND_LATER, &n);
    sy_free(topic.owned);
    sy_free(data.owned);
    if (rc != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    return sy_bval_int(env, (int64_t)n);
}

static void topic_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    sy_btopic_t *h = data;
    sy_bserver_t *b = h->b;
    if (b->srv != NULL) /* else the registry went with the server */
        sy_server_topic_release(b->srv, h->t);
    sy_free(h);
    b->topics--;
    sy_bserver_maybe_free(b);
}

/* serverTopic(handle, topic) -> topic handle */
static napi_value server_topic(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    sy_bytes_t topic;
    if (!sy_barg_server(env, info, 2, argv, &b) || !sy_barg_topic(env, argv[1], &topic))
        return NULL;
    sy_btopic_t *h = sy_malloc(sizeof(*h));
    sy_topic_t *t = h != NULL ? sy_server_topic(b->srv, topic.data, topic.len) : NULL;
    sy_free(topic.owned);
    if (t == NULL) {
        sy_free(h);
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    h->b = b;
    h->t = t;
    napi_value v;
    if (!sy_napi_ok(env, napi_create_external(env, h, topic_finalize, NULL, &v), "napi_create_external")) {
        sy_server_topic_release(b->srv, t);
        sy_free(h);
        return NULL;
    }
    b->topics++;
    return v;
}

/* serverPublishTopic(handle, topic handle, data, flags) -> subscribers */
static napi_value server_publish_topic(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    unsigned flags = 0;
    sy_bytes_t data;
    sy_btopic_t *h;
    if (!sy_barg_server(env, info, 4, argv, &b) || !sy_barg_send_flags(env, argv[3], &flags) ||
        (h = sy_barg_topic_handle(env, argv[1], b)) == NULL)
        return NULL;
    if (!sy_barg_bytes(env, argv[2], "data", &data))
        return NULL;
    size_t n = 0;
    int rc = sy_server_publish_topic(b->srv, h->t, data.data, data.len, flags | SY_SEND_LATER, &n);
    sy_free(data.owned);
    if (rc != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    return sy_bval_int(env, (int64_t)n);
}

/* The epoch as its 16 hexadecimal characters. */
static napi_value epoch_string(napi_env env, uint64_t e) {
    char buf[SY_SINCE_EPOCH_HEX + 1];
    snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)e);
    napi_value v;
    return sy_napi_ok(env, napi_create_string_latin1(env, buf, SY_SINCE_EPOCH_HEX, &v), "napi_create_string_latin1")
               ? v
               : NULL;
}

/* serverPosition(handle, topic) -> { epoch, offset, first, kept } or null */
static napi_value server_position(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    sy_bytes_t topic;
    if (!sy_barg_server(env, info, 2, argv, &b) || !sy_barg_topic(env, argv[1], &topic))
        return NULL;
    uint64_t epoch = 0, last = 0, first = 0;
    size_t kept = 0;
    bool ok = sy_server_position(b->srv, topic.data, topic.len, &epoch, &last, &first, &kept);
    sy_free(topic.owned);
    napi_value o, e;
    if (!ok) {
        napi_get_null(env, &o);
        return o;
    }
    if (!sy_napi_ok(env, napi_create_object(env, &o), "napi_create_object") || (e = epoch_string(env, epoch)) == NULL ||
        !sy_napi_set_value(env, o, "epoch", e) || !sy_bval_set_u64(env, o, "offset", last) ||
        !sy_bval_set_u64(env, o, "first", first) || !sy_bval_set_u64(env, o, "kept", kept))
        return NULL;
    return o;
}

/* serverTopicHistory(handle, topic handle, size, ttl) */
static napi_value server_topic_history(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    sy_btopic_t *h;
    int64_t size, ttl;
    if (!sy_barg_server(env, info, 4, argv, &b) || (h = sy_barg_topic_handle(env, argv[1], b)) == NULL ||
        !sy_bopts_int(env, argv[2], "historySize", "historySize", &size) ||
        !sy_bopts_int(env, argv[3], "historyTtl", "historyTtl", &ttl))
        return NULL;
    if (sy_server_topic_history(b->srv, h->t, (uint32_t)size, (uint32_t)ttl) != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    napi_value u;
    napi_get_undefined(env, &u);
    return u;
}

/* serverSubscribers(handle, topic) -> this node's subscribers of topic */
static napi_value server_subscribers(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    sy_bytes_t topic;
    if (!sy_barg_server(env, info, 2, argv, &b) || !sy_barg_topic(env, argv[1], &topic))
        return NULL;
    unsigned n = sy_server_subscribers(b->srv, topic.data, topic.len);
    sy_free(topic.owned);
    return sy_bval_int(env, (int64_t)n);
}

/* serverTopicApplied(handle, topic) -> this node's applied subscriptions of
 * topic (the count SY_EV_TOPIC follows) */
static napi_value server_topic_applied(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    sy_bytes_t topic;
    if (!sy_barg_server(env, info, 2, argv, &b) || !sy_barg_topic(env, argv[1], &topic))
        return NULL;
    unsigned n = sy_server_topic_applied(b->srv, topic.data, topic.len);
    sy_free(topic.owned);
    return sy_bval_int(env, (int64_t)n);
}

/* serverTopicEvents(handle, on) -> with on, the topics that have applied
 * subscriptions now (after the switch: an edge after it is an event) */
static napi_value server_topic_events(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    bool on;
    if (!sy_barg_server(env, info, 2, argv, &b) || !sy_napi_get_bool(env, argv[1], "on", &on))
        return NULL;
    sy_server_topic_events(b->srv, on);
    napi_value arr = NULL;
    if (!sy_napi_ok(env, napi_create_array(env, &arr), "napi_create_array"))
        return NULL;
    if (!on)
        return arr;
    sy_topic_count_t *list;
    size_t n;
    if (sy_server_topic_list(b->srv, &list, &n) != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    bool ok = true;
    uint32_t k = 0;
    for (size_t i = 0; ok && i < n; i++) {
        napi_value name;
        if (list[i].applied == 0)
            continue;
        ok = sy_napi_ok(env, napi_create_string_utf8(env, list[i].name, list[i].len, &name),
                        "napi_create_string_utf8") &&
             sy_napi_ok(env, napi_set_element(env, arr, k++, name), "napi_set_element");
    }
    sy_free(list);
    return ok ? arr : NULL;
}

/* serverTopics(handle) -> [name, subscribers, name, subscribers, ...] */
static napi_value server_topics(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    sy_bserver_t *b;
    if (!sy_barg_server(env, info, 1, argv, &b))
        return NULL;
    sy_topic_count_t *list;
    size_t n;
    if (sy_server_topic_list(b->srv, &list, &n) != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    napi_value arr = NULL;
    bool ok = sy_napi_ok(env, napi_create_array_with_length(env, 2 * n, &arr), "napi_create_array_with_length");
    for (size_t i = 0; ok && i < n; i++) {
        napi_value name, count;
        ok = sy_napi_ok(env, napi_create_string_utf8(env, list[i].name, list[i].len, &name),
                        "napi_create_string_utf8") &&
             (count = sy_bval_int(env, (int64_t)list[i].subscribers)) != NULL &&
             sy_napi_ok(env, napi_set_element(env, arr, (uint32_t)(2 * i), name), "napi_set_element") &&
             sy_napi_ok(env, napi_set_element(env, arr, (uint32_t)(2 * i + 1), count), "napi_set_element");
    }
    sy_free(list);
    return ok ? arr : NULL;
}

/* parseSince(url) -> [{ topic, epoch, offset }] (proto/sy_since.h), or a
 * string: why the positions are malformed. */
static napi_value parse_since(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    size_t argc = 1;
    sy_bytes_t url;
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL) || !sy_barg_string_bytes(env, argv[0], &url))
        return NULL;
    napi_value out = NULL;
    const char *why = sy_since_check(url.data, url.len);
    if (why != NULL) {
        if (!sy_napi_ok(env, napi_create_string_utf8(env, why, NAPI_AUTO_LENGTH, &out), "napi_create_string_utf8"))
            out = NULL;
        sy_free(url.owned);
        return out;
    }
    char *topic_buf = sy_malloc(SY_SINCE_TOPIC_MAX);
    if (topic_buf == NULL || !sy_napi_ok(env, napi_create_array(env, &out), "napi_create_array")) {
        sy_free(topic_buf);
        sy_free(url.owned);
        if (topic_buf == NULL)
            sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    sy_since_iter_t it = {0};
    sy_since_t s;
    uint32_t i = 0;
    while (out != NULL && sy_since_next(url.data, url.len, &it, &s, topic_buf)) {
        napi_value o, t, e;
        if (!sy_napi_ok(env, napi_create_object(env, &o), "napi_create_object") ||
            !sy_napi_ok(env, napi_create_string_utf8(env, s.topic, s.topic_len, &t), "napi_create_string_utf8") ||
            (e = epoch_string(env, s.epoch)) == NULL || !sy_napi_set_value(env, o, "topic", t) ||
            !sy_napi_set_value(env, o, "epoch", e) || !sy_bval_set_u64(env, o, "offset", s.offset) ||
            !sy_napi_ok(env, napi_set_element(env, out, i++, o), "napi_set_element"))
            out = NULL;
    }
    sy_free(topic_buf);
    sy_free(url.owned);
    return out;
}

/* serverNodeTag(handle) -> string: how this node's streams' names begin. */
static napi_value server_node_tag(napi_env env, napi_callback_info info) {
    napi_value argv[1], out;
    sy_bserver_t *b;
    if (!sy_barg_server(env, info, 1, argv, &b))
        return NULL;
    char tag[17];
    sy_server_node_tag(b->srv, tag);
    return napi_create_string_utf8(env, tag, 16, &out) == napi_ok ? out : NULL;
}

bool sy_btopics_init(napi_env env, napi_value exports) {
    static const sy_bfunction_t fns[] = {
        {"serverPublish", server_publish},
        {"serverTopic", server_topic},
        {"serverPublishTopic", server_publish_topic},
        {"serverPosition", server_position},
        {"serverTopicHistory", server_topic_history},
        {"parseSince", parse_since},
        {"serverSubscribers", server_subscribers},
        {"serverTopics", server_topics},
        {"serverTopicApplied", server_topic_applied},
        {"serverTopicEvents", server_topic_events},
        {"serverNodeTag", server_node_tag},
    };
    return sy_bval_functions(env, exports, fns, sizeof(fns) / sizeof(fns[0]));
}
