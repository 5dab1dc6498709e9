/* server_topics — binding.server*'s publish and calls on topics: topic
 * handles, positions and history, subscriber counts, the topics' list and
 * their 0 <-> 1 edges, and parseSince. See server.h. */
#include "server.h"

#include <stdio.h>

#include "base/sy_alloc.h"
#include "proto/sy_since.h"
#include "sy_napi.h"

/* The subscribers a publish reached, or the out-of-memory error. */
static napi_value published(napi_env env, int rc, size_t n) {
    if (rc != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    return sy_bval_int(env, (int64_t)n);
}

/* serverPublish(handle, topic, data, flags) -> subscribers */
napi_value server_publish(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    size_t n = 0;
    if (!SY_BCALL(env, info, &c, SY_BA_TOPIC, SY_BA_BYTES("data"), SY_BA_FLAGS))
        return NULL;
    const sy_bytes_t *t = &c.bytes[0], *d = &c.bytes[1];
    int rc = sy_server_publish(c.b->srv, t->data, t->len, d->data, d->len, c.flags | SY_SEND_LATER, &n);
    return sy_bcall_done(&c, published(env, rc, n));
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
napi_value server_topic(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_TOPIC))
        return NULL;
    sy_bserver_t *b = c.b;
    sy_btopic_t *h = sy_malloc(sizeof(*h));
    sy_topic_t *t = h != NULL ? sy_server_topic(b->srv, c.bytes[0].data, c.bytes[0].len) : NULL;
    sy_bcall_done(&c, NULL);
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
napi_value server_publish_topic(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    size_t n = 0;
    if (!SY_BCALL(env, info, &c, SY_BA_TH, SY_BA_BYTES("data"), SY_BA_FLAGS))
        return NULL;
    const sy_bytes_t *d = &c.bytes[0];
    int rc = sy_server_publish_topic(c.b->srv, c.topic->t, d->data, d->len, c.flags | SY_SEND_LATER, &n);
    return sy_bcall_done(&c, published(env, rc, n));
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
napi_value server_position(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    uint64_t epoch = 0, last = 0, first = 0;
    size_t kept = 0;
    if (!SY_BCALL(env, info, &c, SY_BA_TOPIC))
        return NULL;
    bool ok = sy_server_position(c.b->srv, c.bytes[0].data, c.bytes[0].len, &epoch, &last, &first, &kept);
    sy_bcall_done(&c, NULL);
    napi_value o, e;
    if (!ok)
        return sy_napi_ok(env, napi_get_null(env, &o), "napi_get_null") ? o : NULL;
    if (!sy_napi_ok(env, napi_create_object(env, &o), "napi_create_object") || (e = epoch_string(env, epoch)) == NULL ||
        !sy_napi_set_value(env, o, "epoch", e) || !sy_bval_set_u64(env, o, "offset", last) ||
        !sy_bval_set_u64(env, o, "first", first) || !sy_bval_set_u64(env, o, "kept", kept))
        return NULL;
    return o;
}

/* serverTopicHistory(handle, topic handle, size, ttl) */
napi_value server_topic_history(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    int64_t size, ttl;
    if (!SY_BCALL(env, info, &c, SY_BA_TH, SY_BA_SKIP, SY_BA_SKIP) ||
        !sy_bopts_int(env, c.argv[2], "historySize", "historySize", &size) ||
        !sy_bopts_int(env, c.argv[3], "historyTtl", "historyTtl", &ttl))
        return NULL;
    if (sy_server_topic_history(c.b->srv, c.topic->t, (uint32_t)size, (uint32_t)ttl) != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    napi_value u;
    return sy_napi_ok(env, napi_get_undefined(env, &u), "napi_get_undefined") ? u : NULL;
}

/* serverSubscribers(handle, topic) -> this node's subscribers of topic;
 * serverTopicApplied(handle, topic) -> its applied subscriptions of topic
 * (the count SY_EV_TOPIC follows). */
static napi_value count_call(napi_env env, napi_callback_info info, bool applied) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_TOPIC))
        return NULL;
    const sy_bytes_t *t = &c.bytes[0];
    unsigned n =
        applied ? sy_server_topic_applied(c.b->srv, t->data, t->len) : sy_server_subscribers(c.b->srv, t->data, t->len);
    return sy_bcall_done(&c, sy_bval_int(env, (int64_t)n));
}

napi_value server_subscribers(napi_env env, napi_callback_info info) { return count_call(env, info, false); }
napi_value server_topic_applied(napi_env env, napi_callback_info info) { return count_call(env, info, true); }

/* The topics of the server: [name, subscribers, ...], or with applied
 * only those that have applied subscriptions, [name, ...]. */
static napi_value topic_list(napi_env env, sy_bserver_t *b, bool applied) {
    sy_topic_count_t *list;
    size_t n;
    if (sy_server_topic_list(b->srv, &list, &n) != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    napi_value arr = NULL;
    bool ok = sy_napi_ok(env, napi_create_array(env, &arr), "napi_create_array");
    uint32_t k = 0;
    for (size_t i = 0; ok && i < n; i++) {
        napi_value name, count;
        if (applied && list[i].applied == 0)
            continue;
        ok = sy_napi_ok(env, napi_create_string_utf8(env, list[i].name, list[i].len, &name),
                        "napi_create_string_utf8") &&
             sy_napi_ok(env, napi_set_element(env, arr, k++, name), "napi_set_element") &&
             (applied || ((count = sy_bval_int(env, (int64_t)list[i].subscribers)) != NULL &&
                          sy_napi_ok(env, napi_set_element(env, arr, k++, count), "napi_set_element")));
    }
    sy_free(list);
    return ok ? arr : NULL;
}

/* serverTopicEvents(handle, on) -> with on, the topics that have applied
 * subscriptions now (after the switch: an edge after it is an event) */
napi_value server_topic_events(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    napi_value arr;
    if (!SY_BCALL(env, info, &c, SY_BA_BOOL("on")))
        return NULL;
    sy_server_topic_events(c.b->srv, c.flag);
    if (!c.flag)
        return sy_napi_ok(env, napi_create_array(env, &arr), "napi_create_array") ? arr : NULL;
    return topic_list(env, c.b, true);
}

/* serverTopics(handle) -> [name, subscribers, name, subscribers, ...] */
napi_value server_topics(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    return sy_bcall(env, info, &c, NULL, 0) ? topic_list(env, c.b, false) : NULL;
}

/* parseSince(url) -> [{ topic, epoch, offset }] (proto/sy_since.h), or a
 * string: why the positions are malformed. */
napi_value parse_since(napi_env env, napi_callback_info info) {
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
napi_value server_node_tag(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    napi_value out;
    char tag[17];
    if (!sy_bcall(env, info, &c, NULL, 0))
        return NULL;
    sy_server_node_tag(c.b->srv, tag);
    return sy_napi_ok(env, napi_create_string_utf8(env, tag, 16, &out), "napi_create_string_utf8") ? out : NULL;
}
