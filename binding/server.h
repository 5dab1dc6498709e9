/*
 * server — what binding/server*.c share: the server handle (sy_bserver_t),
 * the topic handle, the readers of the calls' arguments and the parts of
 * binding.server* each file registers. JS thread only, except
 * sy_bserver_on_batch, which IO threads call.
 *
 * The files, by concern:
 *   server.c         the handle's lifecycle: create, listen, close, ref,
 *                    wake, the bus' calls, and the registration of the rest
 *   server_args.c    the arguments: handles, ids, bytes, topics, results
 *   server_opts.c    serverCreate's options, decoded from the one list
 *                    (src/io/model/sy_io_opts.h), and binding.optionSchema
 *   server_events.c  the event batches to JS, one table row per event
 *   server_conn.c    the calls on one connection (send, end, accept...)
 *   server_topics.c  publish and the calls on topics, parseSince
 *   server_stats.c   serverStats, binding.statFields and binding.constants
 *   server_tls.c     serverSetTls and serverSetTokens (SY_WITH_TLS builds)
 *
 * Convention (sy_napi.h's): a function returning bool returns true on
 * success; on failure a JS exception is pending and nothing is held.
 */
#ifndef SY_BINDING_SERVER_H
#define SY_BINDING_SERVER_H

#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_alloc.h"
#include "base/sy_port.h"
#include "proto/sy_ws_frame.h"
#include "sy_napi.h"
#include "sy_server.h"

#define SY_EV_CLOSED 100 /* to JS: every IO thread has stopped */
#define SY_STACK_BYTES 4096
/* The limits of the calls, exported in binding.constants. A close frame's
 * reason: the control payload less the 2-byte code. */
#define SY_CLOSE_REASON_MAX_LEN (SY_WS_MAX_CONTROL_PAYLOAD - 2)
#define SY_CLOSE_CODE_MIN 1000
#define SY_CLOSE_CODE_MAX 4999
#define SY_REFUSE_STATUS_MIN 400
#define SY_REFUSE_STATUS_MAX 599

/* A server handle: an external owning a sy_bserver_t. It is freed when both
 * the external has been finalized and the thread-safe function (if one was
 * made) has finished; the core server is freed once its threads are joined:
 * when close() completes, or in the environment's cleanup hook. */
typedef struct sy_bserver {
    napi_env env;
    sy_server_t *srv;
    napi_threadsafe_function tsfn;
    napi_threadsafe_function bus_tsfn; /* the bus' state changes (binding/bus.c); NULL: no bus */
    unsigned stopped;                  /* IO threads that sent SY_EV_STOPPED */
    bool listening;
    bool hook;      /* env cleanup hook registered */
    bool js_gone;   /* external finalized */
    bool tsfn_live; /* thread-safe function not yet finalized */
    size_t topics;  /* topic handles (serverTopic) not yet finalized */
} sy_bserver_t;

/* A topic handle: an external owning a reference to a core topic. */
typedef struct sy_btopic {
    sy_bserver_t *b;
    sy_topic_t *t;
} sy_btopic_t;

/* Bytes of a JS value (string as UTF-8, Buffer, TypedArray, DataView,
 * ArrayBuffer), valid during the call only. A string is copied into stack,
 * or when longer into owned, which the caller frees with sy_free (sy_free
 * of NULL does nothing). On failure nothing is held: owned is NULL. */
typedef struct {
    const char *data;
    size_t len;
    char *owned;
    char stack[SY_STACK_BYTES];
} sy_bytes_t;

/* A call's arguments as sy_bcall reads them (argv[0] the server handle). */
#define SY_BCALL_MAX_ARGS 8
#define SY_BCALL_MAX_BYTES 3
typedef struct {
    napi_value argv[SY_BCALL_MAX_ARGS];
    sy_bserver_t *b;
    uint64_t id;
    unsigned flags;
    sy_btopic_t *topic;
    uint32_t u32;
    bool flag;
    int64_t ints[2];
    size_t nbytes, nints;
    sy_bytes_t bytes[SY_BCALL_MAX_BYTES]; /* topics and b: arguments, in order */
} sy_bcall_t;
/* One argument of a call as sy_bcall reads it: SY_BA_* below, a list
 * known when the binding is compiled (no format read per call: a publish
 * is on the JS thread's hot path). */
typedef enum {
    SY_BARG_SKIP,  /* read by the caller from c->argv */
    SY_BARG_ID,    /* a connection id: c->id */
    SY_BARG_TOPIC, /* a topic's name: the next of c->bytes */
    SY_BARG_TH,    /* a topic handle (serverTopic): c->topic */
    SY_BARG_BYTES, /* bytes (name in errors): the next of c->bytes */
    SY_BARG_FLAGS, /* SY_SEND_*: c->flags */
    SY_BARG_U32,   /* c->u32 */
    SY_BARG_BOOL,  /* c->flag */
    SY_BARG_INT,   /* the next of c->ints, within [min, max] */
} sy_barg_kind_t;
typedef struct {
    sy_barg_kind_t kind;
    const char *name; /* in errors (BYTES, U32, BOOL, INT) */
    int64_t min, max; /* INT's range */
} sy_barg_t;
#define SY_BA_SKIP \
    { SY_BARG_SKIP, NULL, 0, 0 }
#define SY_BA_ID \
    { SY_BARG_ID, NULL, 0, 0 }
#define SY_BA_TOPIC \
    { SY_BARG_TOPIC, NULL, 0, 0 }
#define SY_BA_TH \
    { SY_BARG_TH, NULL, 0, 0 }
#define SY_BA_FLAGS \
    { SY_BARG_FLAGS, NULL, 0, 0 }
#define SY_BA_BYTES(name) \
    { SY_BARG_BYTES, name, 0, 0 }
#define SY_BA_U32(name) \
    { SY_BARG_U32, name, 0, 0 }
#define SY_BA_BOOL(name) \
    { SY_BARG_BOOL, name, 0, 0 }
#define SY_BA_INT(name, min, max) \
    { SY_BARG_INT, name, (int64_t)(min), (int64_t)(max) }
/* The ranges of a close's code and a refusal's status, as the binding
 * checks them (lib/ checks first, only to name the user's argument). */
#define SY_BA_CLOSE_CODE SY_BA_INT("code", SY_CLOSE_CODE_MIN, SY_CLOSE_CODE_MAX)
#define SY_BA_REFUSE_STATUS SY_BA_INT("status", SY_REFUSE_STATUS_MIN, SY_REFUSE_STATUS_MAX)
/* sy_bcall with the arguments after the handle listed: SY_BCALL(env, info,
 * &c, SY_BA_ID, SY_BA_BYTES("data"), SY_BA_FLAGS). */
#define SY_BCALL(env, info, c, ...)                                \
    sy_bcall((env), (info), (c), (const sy_barg_t[]){__VA_ARGS__}, \
             sizeof((const sy_barg_t[]){__VA_ARGS__}) / sizeof(sy_barg_t))

/* One function of binding.server*: its JS name and its callback. */
typedef struct {
    const char *name;
    napi_callback fn;
} sy_bfunction_t;

/* ---- server.c: the handle's lifecycle ---- */

/* Frees the core server (its threads joined) and lets go of the bus'
 * thread-safe function. */
void sy_bserver_destroy(sy_bserver_t *b);
/* Frees b once nothing refers to it any more (external, tsfn, topics). */
void sy_bserver_maybe_free(sy_bserver_t *b);
/* The environment's cleanup hook (removed when close completes). */
void sy_bserver_cleanup_hook(void *arg);

/* ---- server_args.c ---- */

/* The server handle v (it may be closed: (*out)->srv NULL). */
bool sy_barg_handle(napi_env env, napi_value v, sy_bserver_t **out);
/* The arguments of a call on a running server: exactly n wanted (argv[0]
 * the handle), the server in *b; ERR_SYMPHONY_CLOSED when it is closed. */
bool sy_barg_server(napi_env env, napi_callback_info info, size_t n, napi_value *argv, sy_bserver_t **b);
/* The flags of publish and send (SY_SEND_BINARY, _COMPRESS, _LOCAL). */
bool sy_barg_send_flags(napi_env env, napi_value v, unsigned *out);
/* A connection id: a safe non-negative integer. */
bool sy_barg_id(napi_env env, napi_value v, uint64_t *id);
/* A string's UTF-8 bytes. */
bool sy_barg_string_bytes(napi_env env, napi_value v, sy_bytes_t *out);
/* A string's, Buffer's, TypedArray's, DataView's or ArrayBuffer's bytes. */
bool sy_barg_bytes(napi_env env, napi_value v, const char *name, sy_bytes_t *out);
/* A topic: a string of 1 to SY_TOPIC_MAX_LEN UTF-8 bytes. */
bool sy_barg_topic(napi_env env, napi_value v, sy_bytes_t *out);
/* The topic handle (serverTopic) v of server b, or NULL with an error thrown. */
sy_btopic_t *sy_barg_topic_handle(napi_env env, napi_value v, sy_bserver_t *b);

/* sy_bcall and its arguments, inlined wherever they are called: a
 * publish's list then costs the direct calls it names. */
#define SY_BCALL_INLINE static SY_ALWAYS_INLINE

/* One argument a of the call into c (inline, as sy_bcall: with SY_BCALL's
 * list known where it is called, the compiler reads it then, and the call
 * is the direct calls it lists). */
SY_BCALL_INLINE bool sy_bcall_arg(napi_env env, sy_bcall_t *c, const sy_barg_t *a, napi_value v) {
    switch (a->kind) {
    case SY_BARG_SKIP:
        return true;
    case SY_BARG_ID:
        return sy_barg_id(env, v, &c->id);
    case SY_BARG_FLAGS:
        return sy_barg_send_flags(env, v, &c->flags);
    case SY_BARG_TH:
        return (c->topic = sy_barg_topic_handle(env, v, c->b)) != NULL;
    case SY_BARG_U32:
        return sy_napi_get_uint32(env, v, a->name, &c->u32);
    case SY_BARG_BOOL:
        return sy_napi_get_bool(env, v, a->name, &c->flag);
    case SY_BARG_INT:
        if (c->nints < 2)
            return sy_napi_get_int64(env, v, a->name, a->min, a->max, &c->ints[c->nints++]);
        break;
    case SY_BARG_TOPIC:
    case SY_BARG_BYTES:
        if (c->nbytes < SY_BCALL_MAX_BYTES) {
            sy_bytes_t *out = &c->bytes[c->nbytes];
            if (!(a->kind == SY_BARG_TOPIC ? sy_barg_topic(env, v, out) : sy_barg_bytes(env, v, a->name, out)))
                return false;
            c->nbytes++;
            return true;
        }
        break;
    }
    sy_napi_throw(env, "ERR_SYMPHONY_NAPI", "symphony: sy_bcall: an argument list the binding cannot read");
    return false;
}

/* Frees what c's arguments hold (bytes copied off the stack: rare) and
 * returns result. */
SY_BCALL_INLINE napi_value sy_bcall_done(sy_bcall_t *c, napi_value result) {
    for (size_t i = 0; i < c->nbytes; i++)
        if (c->bytes[i].owned != NULL)
            sy_free(c->bytes[i].owned);
    c->nbytes = 0;
    return result;
}

/* The arguments of a call on a running server: the handle, then the n of
 * args (SY_BCALL lists them). On failure nothing is held; on success the
 * caller ends with sy_bcall_done. */
SY_BCALL_INLINE bool sy_bcall(napi_env env, napi_callback_info info, sy_bcall_t *c, const sy_barg_t *args, size_t n) {
    c->nbytes = c->nints = 0;
    if (n + 1 > SY_BCALL_MAX_ARGS) {
        sy_napi_throw(env, "ERR_SYMPHONY_NAPI", "symphony: sy_bcall: too many arguments");
        return false;
    }
    if (!sy_barg_server(env, info, n + 1, c->argv, &c->b))
        return false;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        ok = sy_bcall_arg(env, c, &args[i], c->argv[i + 1]);
    if (!ok)
        sy_bcall_done(c, NULL);
    return ok;
}

/* obj[key] into *out. */
bool sy_barg_get(napi_env env, napi_value obj, const char *key, napi_value *out);

/* A JS integer, or NULL with an exception pending. */
napi_value sy_bval_int(napi_env env, int64_t n);
/* A queued command: true; ENOTCONN (an id that names no open connection):
 * false; anything else: the out-of-memory error. */
napi_value sy_bval_result(napi_env env, int rc);
/* obj[key] = v as a JS number. */
bool sy_bval_set_u64(napi_env env, napi_value obj, const char *key, uint64_t v);
/* Sets every function of the table on exports. */
bool sy_bval_functions(napi_env env, napi_value exports, const sy_bfunction_t *fns, size_t n);

/* ---- the parts, each registering its functions on exports ---- */

/* serverCreate's options (server_opts.c): o from the JS object opts (host
 * and path sy_malloc'ed copies the caller frees, even on failure). */
bool sy_bopts_decode(napi_env env, napi_value opts, sy_server_opts_t *o);
/* v: an integer within the range of the option named `option` (its JS
 * name: historySize, closeDeadline...), named `name` in errors. */
bool sy_bopts_int(napi_env env, napi_value v, const char *option, const char *name, int64_t *out);
/* binding.optionSchema and binding.constants.options. */
bool sy_bopts_init(napi_env env, napi_value exports, napi_value constants);

/* The event batches (server_events.c): the thread-safe function's call_js
 * and the IO threads' on_batch. */
void sy_bevents_call_js(napi_env env, napi_value fn, void *context, void *data);
void sy_bevents_on_batch(void *ctx, sy_batch_t *batch);

/* binding.statFields and binding.constants (with options from sy_bopts_init). */
bool sy_bstats_init(napi_env env, napi_value exports);

/* The functions of binding.server*, once: X(JS name, C function), each
 * defined in the part named; server.c registers them all. */
/* clang-format off */
#define SY_BSERVER_FUNCTIONS(X) \
    /* server.c */ \
    X(serverCreate, server_create) X(serverListen, server_listen) X(serverWake, server_wake) \
    X(serverRef, server_ref) X(serverSetBus, server_set_bus) X(serverBusStats, server_bus_stats) \
    X(serverBusCall, server_bus_call) X(serverClose, server_close) \
    X(serverSetPusher, server_set_pusher) X(serverPublishEvent, server_publish_event) \
    /* server_conn.c */ \
    X(serverAdopt, server_adopt) X(serverSend, server_send) X(serverSubscribe, server_subscribe) \
    X(serverUnsubscribe, server_unsubscribe) X(serverSubscribeSince, server_subscribe_since) \
    X(serverAnswerSubscribe, server_answer_subscribe) X(serverAnswer, server_answer) X(serverEnd, server_end) \
    X(serverTerminate, server_terminate) X(serverAccept, server_accept) X(serverRefuse, server_refuse) \
    X(serverPostAnswer, server_post_answer) X(serverPost, server_post) X(serverReply, server_reply) \
    /* server_topics.c */ \
    X(serverPublish, server_publish) X(serverTopic, server_topic) X(serverPublishTopic, server_publish_topic) \
    X(serverPosition, server_position) X(serverTopicHistory, server_topic_history) X(parseSince, parse_since) \
    X(serverSubscribers, server_subscribers) X(serverTopics, server_topics) \
    X(serverTopicApplied, server_topic_applied) X(serverTopicEvents, server_topic_events) \
    X(serverNodeTag, server_node_tag) \
    /* server_stats.c */ \
    X(serverStats, server_stats)
/* server_tls.c, SY_WITH_TLS builds only. */
#define SY_BSERVER_TLS_FUNCTIONS(X) \
    X(serverSetTls, server_set_tls) X(serverSetTokens, server_set_tokens)
/* clang-format on */
#define SY_BFUNCTION_DECL(js, c) napi_value c(napi_env env, napi_callback_info info);
SY_BSERVER_FUNCTIONS(SY_BFUNCTION_DECL)
SY_BSERVER_TLS_FUNCTIONS(SY_BFUNCTION_DECL)
#undef SY_BFUNCTION_DECL

#endif
