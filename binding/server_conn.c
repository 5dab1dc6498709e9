/* server_conn — binding.server*'s calls on one connection, named by its id:
 * adopt, send, subscribe and unsubscribe, answers to a client's asks, end,
 * terminate, an upgrade's accept or refusal, and POSTs. See server.h. */
#include "server.h"

#include <errno.h>
#include <stdio.h>

#include "base/sy_alloc.h"
#include "proto/sy_since.h"
#include "sy_napi.h"

/* serverAdopt(handle, fd, bytes) -> bool: false when the server is not
 * running; throws ERR_SYMPHONY_ADOPT when fd is not a usable socket. */
static napi_value server_adopt(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    int64_t fd;
    sy_bytes_t bytes;
    if (!sy_barg_server(env, info, 3, argv, &b) || !sy_napi_get_int64(env, argv[1], "fd", 0, INT32_MAX, &fd) ||
        !sy_barg_bytes(env, argv[2], "bytes", &bytes))
        return NULL;
    int rc = sy_server_adopt(b->srv, (int)fd, bytes.data, bytes.len);
    sy_free(bytes.owned);
    if (rc == ENOTSOCK || rc == EBADF || rc == EMFILE || rc == ENFILE) {
        char msg[128];
        snprintf(msg, sizeof(msg), "symphony: cannot take over the socket: %s", sy_strerror(rc));
        sy_napi_throw(env, "ERR_SYMPHONY_ADOPT", msg);
        return NULL;
    }
    return sy_bval_result(env, rc);
}

/* serverSend(handle, id, data, flags) -> bool */
static napi_value server_send(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    uint64_t id;
    unsigned flags = 0;
    sy_bytes_t data;
    if (!sy_barg_server(env, info, 4, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_barg_send_flags(env, argv[3], &flags) || !sy_barg_bytes(env, argv[2], "data", &data))
        return NULL;
    int rc = sy_server_send(b->srv, id, data.data, data.len, flags | SY_SEND_LATER);
    sy_free(data.owned);
    return sy_bval_result(env, rc);
}

static napi_value sub_call(napi_env env, napi_callback_info info, bool subscribe) {
    napi_value argv[3];
    sy_bserver_t *b;
    uint64_t id;
    sy_bytes_t topic;
    if (!sy_barg_server(env, info, 3, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_barg_topic(env, argv[2], &topic))
        return NULL;
    int rc = subscribe ? sy_server_subscribe(b->srv, id, topic.data, topic.len)
                       : sy_server_unsubscribe(b->srv, id, topic.data, topic.len);
    sy_free(topic.owned);
    return sy_bval_result(env, rc);
}

/* An epoch as symphony.v1 writes it: 16 hexadecimal characters. */
static bool get_epoch(napi_env env, napi_value v, uint64_t *out) {
    char buf[SY_SINCE_EPOCH_HEX + 2];
    size_t n = 0;
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_string ||
        napi_get_value_string_latin1(env, v, buf, sizeof(buf), &n) != napi_ok || !sy_since_epoch(buf, n, out)) {
        sy_napi_throw_type(env, "since.epoch", "a string of 16 hexadecimal characters");
        return false;
    }
    return true;
}

/* serverSubscribeSince(handle, id, topic, epoch, offset) -> bool: a
 * subscription that resumes from (epoch, offset). */
static napi_value server_subscribe_since(napi_env env, napi_callback_info info) {
    napi_value argv[5];
    sy_bserver_t *b;
    uint64_t id, epoch;
    int64_t offset;
    sy_bytes_t topic;
    if (!sy_barg_server(env, info, 5, argv, &b) || !sy_barg_id(env, argv[1], &id) || !get_epoch(env, argv[3], &epoch) ||
        !sy_napi_get_int64(env, argv[4], "since.offset", 0, ((int64_t)1 << 53) - 1, &offset) ||
        !sy_barg_topic(env, argv[2], &topic))
        return NULL;
    int rc = sy_server_subscribe_since(b->srv, id, topic.data, topic.len, epoch, (uint64_t)offset);
    sy_free(topic.owned);
    return sy_bval_result(env, rc);
}

/* serverAnswerSubscribe(handle, id, rid, topic, epoch | null, offset, extra)
 * -> bool: the owner grants a client's subscribe (sy_server.h). */
static napi_value server_answer_subscribe(napi_env env, napi_callback_info info) {
    napi_value argv[7];
    sy_bserver_t *b;
    uint64_t id, epoch = 0;
    uint32_t rid;
    int64_t offset = 0;
    sy_bytes_t topic, extra;
    napi_valuetype et;
    if (!sy_barg_server(env, info, 7, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_napi_get_uint32(env, argv[2], "rid", &rid) ||
        !sy_napi_ok(env, napi_typeof(env, argv[4], &et), "napi_typeof"))
        return NULL;
    bool resume = et != napi_null && et != napi_undefined;
    if ((resume && (!get_epoch(env, argv[4], &epoch) ||
                    !sy_napi_get_int64(env, argv[5], "since.offset", 0, ((int64_t)1 << 53) - 1, &offset))) ||
        !sy_barg_topic(env, argv[3], &topic))
        return NULL;
    if (!sy_barg_bytes(env, argv[6], "extra", &extra)) {
        sy_free(topic.owned);
        return NULL;
    }
    int rc = sy_server_answer_subscribe(b->srv, id, rid, topic.data, topic.len, resume, epoch, (uint64_t)offset,
                                        extra.data, extra.len);
    sy_free(topic.owned);
    sy_free(extra.owned);
    if (rc == EMSGSIZE) {
        sy_napi_throw_range(env, "extra", "at most 8192 bytes");
        return NULL;
    }
    return sy_bval_result(env, rc);
}

/* serverAnswer(handle, id, rid, frame, binary) -> bool: the owner's answer
 * to a client's ask, a whole symphony.v2 frame (sy_server.h). */
static napi_value server_answer(napi_env env, napi_callback_info info) {
    napi_value argv[5];
    sy_bserver_t *b;
    uint64_t id;
    uint32_t rid;
    bool binary;
    sy_bytes_t frame;
    if (!sy_barg_server(env, info, 5, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_napi_get_uint32(env, argv[2], "rid", &rid) || !sy_napi_get_bool(env, argv[4], "binary", &binary) ||
        !sy_barg_bytes(env, argv[3], "frame", &frame))
        return NULL;
    int rc = sy_server_answer(b->srv, id, rid, frame.data, frame.len, binary);
    sy_free(frame.owned);
    return sy_bval_result(env, rc);
}

static napi_value server_subscribe(napi_env env, napi_callback_info info) { return sub_call(env, info, true); }
static napi_value server_unsubscribe(napi_env env, napi_callback_info info) { return sub_call(env, info, false); }

/* serverEnd(handle, id, code, reason) -> bool. lib/server.js also checks
 * that code is one an endpoint may send (RFC 6455 7.4). */
static napi_value server_end(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    uint64_t id;
    int64_t code;
    sy_bytes_t reason;
    if (!sy_barg_server(env, info, 4, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_napi_get_int64(env, argv[2], "code", SY_CLOSE_CODE_MIN, SY_CLOSE_CODE_MAX, &code) ||
        !sy_barg_bytes(env, argv[3], "reason", &reason))
        return NULL;
    if (reason.len > SY_CLOSE_REASON_MAX_LEN) {
        sy_free(reason.owned);
        char range[48];
        snprintf(range, sizeof(range), "at most %u UTF-8 bytes", (unsigned)SY_CLOSE_REASON_MAX_LEN);
        sy_napi_throw_range(env, "reason", range);
        return NULL;
    }
    int rc = sy_server_end(b->srv, id, (unsigned)code, reason.data, reason.len);
    sy_free(reason.owned);
    return sy_bval_result(env, rc);
}

static napi_value server_terminate(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    uint64_t id;
    if (!sy_barg_server(env, info, 2, argv, &b) || !sy_barg_id(env, argv[1], &id))
        return NULL;
    return sy_bval_result(env, sy_server_terminate(b->srv, id));
}

/* serverAccept(handle, id, protocol, headers, topics[], compress) -> bool */
static napi_value server_accept(napi_env env, napi_callback_info info) {
    napi_value argv[6];
    sy_bserver_t *b;
    uint64_t id;
    uint32_t ntopics = 0;
    bool is_array = false, compress = true;
    if (!sy_barg_server(env, info, 6, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_napi_get_bool(env, argv[5], "compress", &compress) ||
        !sy_napi_ok(env, napi_is_array(env, argv[4], &is_array), "napi_is_array"))
        return NULL;
    if (!is_array) {
        sy_napi_throw_type(env, "topics", "an array of strings");
        return NULL;
    }
    if (!sy_napi_ok(env, napi_get_array_length(env, argv[4], &ntopics), "napi_get_array_length"))
        return NULL;
    sy_bytes_t proto, headers;
    if (!sy_barg_bytes(env, argv[2], "protocol", &proto))
        return NULL;
    if (!sy_barg_bytes(env, argv[3], "headers", &headers)) {
        sy_free(proto.owned);
        return NULL;
    }
    char **names = ntopics ? sy_calloc(ntopics, sizeof(*names)) : NULL;
    size_t *lens = ntopics ? sy_calloc(ntopics, sizeof(*lens)) : NULL;
    bool ok = ntopics == 0 || (names != NULL && lens != NULL);
    if (!ok)
        sy_napi_throw_oom(env, NULL);
    for (uint32_t i = 0; ok && i < ntopics; i++) {
        napi_value t;
        sy_bytes_t tb;
        ok = sy_napi_ok(env, napi_get_element(env, argv[4], i, &t), "napi_get_element") && sy_barg_topic(env, t, &tb);
        if (ok) {
            names[i] = tb.owned ? tb.owned : sy_memdup(tb.data, tb.len);
            lens[i] = tb.len;
            if (names[i] == NULL) {
                ok = false;
                sy_napi_throw_oom(env, NULL);
            }
        }
    }
    int rc = 0;
    if (ok)
        rc = sy_server_accept(b->srv, id, proto.data, proto.len, headers.data, headers.len, (const char *const *)names,
                              lens, ntopics, compress);
    for (uint32_t i = 0; names != NULL && i < ntopics; i++)
        sy_free(names[i]);
    sy_free(names);
    sy_free(lens);
    sy_free(proto.owned);
    sy_free(headers.owned);
    if (!ok)
        return NULL;
    return sy_bval_result(env, rc);
}

/* serverRefuse(handle, id, status, headers) -> bool */
static napi_value server_refuse(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    uint64_t id;
    int64_t status;
    sy_bytes_t headers;
    if (!sy_barg_server(env, info, 4, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_napi_get_int64(env, argv[2], "status", SY_REFUSE_STATUS_MIN, SY_REFUSE_STATUS_MAX, &status) ||
        !sy_barg_bytes(env, argv[3], "headers", &headers))
        return NULL;
    int rc = sy_server_refuse(b->srv, id, (int)status, headers.data, headers.len);
    sy_free(headers.owned);
    return sy_bval_result(env, rc);
}

/* serverPostAnswer(handle, id, status) -> bool: a forwarded POST's answer (202, 404, 503). */
static napi_value server_post_answer(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    uint64_t id;
    int64_t status;
    if (!sy_barg_server(env, info, 3, argv, &b) || !sy_barg_id(env, argv[1], &id) ||
        !sy_napi_get_int64(env, argv[2], "status", 200, 599, &status))
        return NULL;
    return sy_bval_result(env, sy_server_post_answer(b->srv, id, (int)status));
}

/* serverPost(handle, name, data, binary) -> bool: a POST forwarded from another node;
 * false when name is no stream of this node, or the server is not running. */
static napi_value server_post(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    sy_bytes_t name, data;
    bool binary = false;
    if (!sy_barg_server(env, info, 4, argv, &b) || !sy_barg_bytes(env, argv[1], "name", &name))
        return NULL;
    if (!sy_barg_bytes(env, argv[2], "data", &data)) {
        sy_free(name.owned);
        return NULL;
    }
    if (napi_get_value_bool(env, argv[3], &binary) != napi_ok) {
        sy_free(name.owned);
        sy_free(data.owned);
        sy_napi_throw(env, "ERR_INVALID_ARG_TYPE", "binary must be a boolean");
        return NULL;
    }
    int rc = sy_server_post(b->srv, (const char *)name.data, name.len, data.data, data.len, binary);
    sy_free(name.owned);
    sy_free(data.owned);
    return sy_bval_result(env, rc == ENOENT ? ENOTCONN : rc);
}

bool sy_bconn_init(napi_env env, napi_value exports) {
    static const sy_bfunction_t fns[] = {
        {"serverAdopt", server_adopt},
        {"serverSend", server_send},
        {"serverSubscribe", server_subscribe},
        {"serverUnsubscribe", server_unsubscribe},
        {"serverSubscribeSince", server_subscribe_since},
        {"serverAnswerSubscribe", server_answer_subscribe},
        {"serverAnswer", server_answer},
        {"serverEnd", server_end},
        {"serverTerminate", server_terminate},
        {"serverAccept", server_accept},
        {"serverRefuse", server_refuse},
        {"serverPostAnswer", server_post_answer},
        {"serverPost", server_post},
    };
    return sy_bval_functions(env, exports, fns, sizeof(fns) / sizeof(fns[0]));
}
