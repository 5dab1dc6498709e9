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
napi_value server_adopt(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_INT("fd", 0, INT32_MAX), SY_BA_BYTES("bytes")))
        return NULL;
    int rc = sy_server_adopt(c.b->srv, (int)c.ints[0], c.bytes[0].data, c.bytes[0].len);
    bool unusable = rc == ENOTSOCK || rc == EBADF || rc == EMFILE || rc == ENFILE;
    if (unusable) {
        char msg[128];
        snprintf(msg, sizeof(msg), "symphony: cannot take over the socket: %s", sy_strerror(rc));
        sy_napi_throw(env, "ERR_SYMPHONY_ADOPT", msg);
    }
    return sy_bcall_done(&c, unusable ? NULL : sy_bval_result(env, rc));
}

/* serverSend(handle, id, data, flags) -> bool */
napi_value server_send(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_BYTES("data"), SY_BA_FLAGS))
        return NULL;
    const sy_bytes_t *d = &c.bytes[0];
    return sy_bcall_done(&c,
                         sy_bval_result(env, sy_server_send(c.b->srv, c.id, d->data, d->len, c.flags | SY_SEND_LATER)));
}

/* serverSubscribe / serverUnsubscribe(handle, id, topic) -> bool */
static napi_value sub_call(napi_env env, napi_callback_info info, bool subscribe) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_TOPIC))
        return NULL;
    const sy_bytes_t *t = &c.bytes[0];
    int rc = subscribe ? sy_server_subscribe(c.b->srv, c.id, t->data, t->len)
                       : sy_server_unsubscribe(c.b->srv, c.id, t->data, t->len);
    return sy_bcall_done(&c, sy_bval_result(env, rc));
}

/* A position to resume from: an epoch as symphony.v1 writes it (16
 * hexadecimal characters) and an offset. */
static bool get_since(napi_env env, napi_value epoch, napi_value offset, uint64_t *e, uint64_t *o) {
    char buf[SY_SINCE_EPOCH_HEX + 2];
    size_t n = 0;
    napi_valuetype t;
    int64_t x = 0;
    if (napi_typeof(env, epoch, &t) != napi_ok || t != napi_string ||
        napi_get_value_string_latin1(env, epoch, buf, sizeof(buf), &n) != napi_ok || !sy_since_epoch(buf, n, e)) {
        sy_napi_throw_type(env, "since.epoch", "a string of 16 hexadecimal characters");
        return false;
    }
    if (!sy_napi_get_int64(env, offset, "since.offset", 0, ((int64_t)1 << 53) - 1, &x))
        return false;
    *o = (uint64_t)x;
    return true;
}

/* serverSubscribeSince(handle, id, topic, epoch, offset) -> bool: a
 * subscription that resumes from (epoch, offset). */
napi_value server_subscribe_since(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    uint64_t epoch, offset;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_TOPIC, SY_BA_SKIP, SY_BA_SKIP))
        return NULL;
    if (!get_since(env, c.argv[3], c.argv[4], &epoch, &offset))
        return sy_bcall_done(&c, NULL);
    const sy_bytes_t *t = &c.bytes[0];
    return sy_bcall_done(
        &c, sy_bval_result(env, sy_server_subscribe_since(c.b->srv, c.id, t->data, t->len, epoch, offset)));
}

/* serverAnswerSubscribe(handle, id, rid, topic, epoch | null, offset, extra)
 * -> bool: the owner grants a client's subscribe (sy_server.h). */
napi_value server_answer_subscribe(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    uint64_t epoch = 0, offset = 0;
    napi_valuetype et;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_U32("rid"), SY_BA_TOPIC, SY_BA_SKIP, SY_BA_SKIP, SY_BA_BYTES("extra")))
        return NULL;
    if (!sy_napi_ok(env, napi_typeof(env, c.argv[4], &et), "napi_typeof"))
        return sy_bcall_done(&c, NULL);
    bool resume = et != napi_null && et != napi_undefined;
    if (resume && !get_since(env, c.argv[4], c.argv[5], &epoch, &offset))
        return sy_bcall_done(&c, NULL);
    const sy_bytes_t *t = &c.bytes[0], *x = &c.bytes[1];
    int rc = sy_server_answer_subscribe(c.b->srv, c.id, c.u32, t->data, t->len, resume, epoch, offset, x->data, x->len);
    if (rc == EMSGSIZE)
        sy_napi_throw_range(env, "extra", "at most 8192 bytes");
    return sy_bcall_done(&c, rc == EMSGSIZE ? NULL : sy_bval_result(env, rc));
}

/* serverAnswer(handle, id, rid, frame, binary) -> bool: the owner's answer
 * to a client's ask, a whole symphony.v2 frame (sy_server.h). */
napi_value server_answer(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_U32("rid"), SY_BA_BYTES("frame"), SY_BA_BOOL("binary")))
        return NULL;
    const sy_bytes_t *f = &c.bytes[0];
    return sy_bcall_done(&c, sy_bval_result(env, sy_server_answer(c.b->srv, c.id, c.u32, f->data, f->len, c.flag)));
}

napi_value server_subscribe(napi_env env, napi_callback_info info) { return sub_call(env, info, true); }
napi_value server_unsubscribe(napi_env env, napi_callback_info info) { return sub_call(env, info, false); }

/* serverEnd(handle, id, code, reason) -> bool. lib/server.js also checks
 * that code is one an endpoint may send (RFC 6455 7.4). */
napi_value server_end(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_CLOSE_CODE, SY_BA_BYTES("reason")))
        return NULL;
    const sy_bytes_t *r = &c.bytes[0];
    if (r->len > SY_CLOSE_REASON_MAX_LEN) {
        char range[48];
        snprintf(range, sizeof(range), "at most %u UTF-8 bytes", (unsigned)SY_CLOSE_REASON_MAX_LEN);
        sy_napi_throw_range(env, "reason", range);
        return sy_bcall_done(&c, NULL);
    }
    return sy_bcall_done(&c, sy_bval_result(env, sy_server_end(c.b->srv, c.id, (unsigned)c.ints[0], r->data, r->len)));
}

/* serverTerminate(handle, id) -> bool */
napi_value server_terminate(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID))
        return NULL;
    return sy_bval_result(env, sy_server_terminate(c.b->srv, c.id));
}

/* serverAccept(handle, id, protocol, headers, topics[], compress) -> bool */
napi_value server_accept(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    uint32_t ntopics = 0;
    bool is_array = false;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_BYTES("protocol"), SY_BA_BYTES("headers"), SY_BA_SKIP,
                  SY_BA_BOOL("compress")))
        return NULL;
    if (!sy_napi_ok(env, napi_is_array(env, c.argv[4], &is_array), "napi_is_array"))
        return sy_bcall_done(&c, NULL);
    if (!is_array || !sy_napi_ok(env, napi_get_array_length(env, c.argv[4], &ntopics), "napi_get_array_length")) {
        sy_napi_throw_type(env, "topics", "an array of strings");
        return sy_bcall_done(&c, NULL);
    }
    char **names = ntopics ? sy_calloc(ntopics, sizeof(*names)) : NULL;
    size_t *lens = ntopics ? sy_calloc(ntopics, sizeof(*lens)) : NULL;
    bool ok = ntopics == 0 || (names != NULL && lens != NULL);
    if (!ok)
        sy_napi_throw_oom(env, NULL);
    for (uint32_t i = 0; ok && i < ntopics; i++) {
        napi_value t;
        sy_bytes_t tb;
        ok = sy_napi_ok(env, napi_get_element(env, c.argv[4], i, &t), "napi_get_element") && sy_barg_topic(env, t, &tb);
        if (ok) {
            names[i] = tb.owned ? tb.owned : sy_memdup(tb.data, tb.len);
            lens[i] = tb.len;
            if (names[i] == NULL) {
                ok = false;
                sy_napi_throw_oom(env, NULL);
            }
        }
    }
    const sy_bytes_t *p = &c.bytes[0], *h = &c.bytes[1];
    int rc = ok ? sy_server_accept(c.b->srv, c.id, p->data, p->len, h->data, h->len, (const char *const *)names, lens,
                                   ntopics, c.flag)
                : 0;
    for (uint32_t i = 0; names != NULL && i < ntopics; i++)
        sy_free(names[i]);
    sy_free(names);
    sy_free(lens);
    sy_bcall_done(&c, NULL);
    return ok ? sy_bval_result(env, rc) : NULL;
}

/* serverRefuse(handle, id, status, headers) -> bool */
napi_value server_refuse(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_REFUSE_STATUS, SY_BA_BYTES("headers")))
        return NULL;
    const sy_bytes_t *h = &c.bytes[0];
    return sy_bcall_done(&c, sy_bval_result(env, sy_server_refuse(c.b->srv, c.id, (int)c.ints[0], h->data, h->len)));
}

/* serverPostAnswer(handle, id, status) -> bool: a forwarded POST's answer (202, 404, 503). */
napi_value server_post_answer(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_INT("status", 200, 599)))
        return NULL;
    return sy_bval_result(env, sy_server_post_answer(c.b->srv, c.id, (int)c.ints[0]));
}

/* serverReply(handle, id, response) -> bool: a whole HTTP response to a
 * request the owner was given to answer (SY_EV_PUSHER 'u'). */
napi_value server_reply(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_ID, SY_BA_BYTES("response")))
        return NULL;
    const sy_bytes_t *r = &c.bytes[0];
    return sy_bcall_done(&c, sy_bval_result(env, sy_server_reply(c.b->srv, c.id, r->data, r->len)));
}

/* serverPost(handle, name, data, binary, answer) -> bool: a POST to deliver, forwarded from
 * another node (answer 0), or this node's POST connection answer (EV_POST flag 2), which the
 * stream's thread answers; false when name is no stream of this node, or the server is not
 * running. */
napi_value server_post(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_BYTES("name"), SY_BA_BYTES("data"), SY_BA_BOOL("binary"), SY_BA_ID))
        return NULL;
    const sy_bytes_t *n = &c.bytes[0], *d = &c.bytes[1];
    int rc = sy_server_post(c.b->srv, n->data, n->len, d->data, d->len, c.flag, c.id);
    return sy_bcall_done(&c, sy_bval_result(env, rc == ENOENT ? ENOTCONN : rc));
}
