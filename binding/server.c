/* server — the N-API face of src/sy_server.h (binding.server*). JS thread
 * only, except on_batch, which IO threads call.
 *
 * A server handle is an external owning a sy_bserver_t. It is freed when
 * both the external has been finalized and the thread-safe function (if one
 * was made) has finished; the core server is freed once its threads are
 * joined: when close() completes, or in the environment's cleanup hook. */
#include "addon.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "io/app/sy_ask.h"
#include "io/model/sy_deflate.h"
#include "proto/sy_cidr.h"
#include "proto/sy_since.h"
#include "proto/sy_ws_frame.h"
#include "sy_napi.h"
#include "sy_server.h"
#ifdef SY_WITH_TLS
#include "auth/sy_jwt.h"
#include "auth/sy_tokens.h"
#include "tls/sy_tls.h"
#endif

#define SY_EV_CLOSED 100 /* to JS: every IO thread has stopped */
#define SY_STACK_BYTES 4096
/* A close frame's reason: the control payload less the 2-byte code. */
#define SY_CLOSE_REASON_MAX_LEN (SY_WS_MAX_CONTROL_PAYLOAD - 2)
#define SY_CLOSE_CODE_MIN 1000
#define SY_CLOSE_CODE_MAX 4999
#define SY_REFUSE_STATUS_MIN 400
#define SY_REFUSE_STATUS_MAX 599

/* The numeric options serverCreate takes (and serverClose's deadline), by
 * their names in lib/server.js's options, with the ranges checked here;
 * exported as binding.constants.options, which lib/server.js checks against
 * first for friendlier messages. (slowConsumer, 0 to 2 here, is a string in
 * JS and is not listed.) */
/* clang-format off */
#define SY_OPTION_LIST(X) \
    X(port, 0, 65535) \
    X(threads, 1, SY_SERVER_MAX_THREADS) \
    X(maxPayload, 1, (int64_t)1 << 40) \
    X(maxFragments, 0, UINT32_MAX) \
    X(controlRate, 0, 1000000) \
    X(maxBackpressure, 1, (int64_t)1 << 40) \
    X(idleTimeout, 0, 86400) \
    X(handshakeTimeout, 1, 86400) \
    X(closeTimeout, 1, 3600) \
    X(maxHeaderSize, 256, 1 << 20) \
    X(maxHeaders, 1, 256) \
    X(backlog, 1, 65535) \
    X(maxConnections, 0, UINT32_MAX) \
    X(maxConnectionsPerAddress, 0, UINT32_MAX) \
    X(upgradeRatePerAddress, 0, 1000000) \
    X(addressPrefixV4, 1, 32) \
    X(addressPrefixV6, 1, 64) \
    X(maxMessagesPerSecond, 0, (int64_t)1 << 32) \
    X(messageBurst, 1, (int64_t)1 << 38) \
    X(maxBytesPerSecond, 0, (int64_t)1 << 32) \
    X(byteBurst, 1, (int64_t)1 << 38) \
    X(rateLimitGrace, 0, 60000) \
    X(maxWorkPerSecond, 0, (int64_t)1 << 32) \
    X(workBurst, 1, (int64_t)1 << 38) \
    X(maxEventBytes, 65536, (int64_t)1 << 40) \
    X(compressLevel, SY_DEFLATE_LEVEL_MIN, SY_DEFLATE_LEVEL_MAX) \
    X(compressThreshold, 0, (int64_t)1 << 40) \
    X(closeDeadline, 0, 3600000) \
    X(historySize, 0, 1 << 24) \
    X(historyTtl, 0, 31536000) \
    X(historyMaxBytes, 0, (int64_t)1 << 40) \
    X(maxSubscriptions, 0, 1 << 24) \
    X(maxPending, 1, 65535)
/* clang-format on */

typedef enum {
#define OPTION_ENUM(name, min, max) OPT_##name,
    SY_OPTION_LIST(OPTION_ENUM)
#undef OPTION_ENUM
        OPT_COUNT
} sy_option_t;

static const struct {
    const char *name;
    int64_t min, max;
} OPTIONS[OPT_COUNT] = {
#define OPTION_ENTRY(name, min, max) {#name, min, max},
    SY_OPTION_LIST(OPTION_ENTRY)
#undef OPTION_ENTRY
};

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

/* Frees the core server (its threads joined), then lets go of the bus'
 * thread-safe function, which nothing calls any more. */
static void destroy_server(sy_bserver_t *b) {
    sy_server_destroy(b->srv);
    b->srv = NULL;
    if (b->bus_tsfn != NULL) {
        (void)napi_release_threadsafe_function(b->bus_tsfn, napi_tsfn_abort);
        b->bus_tsfn = NULL;
    }
}

static void bserver_maybe_free(sy_bserver_t *b) {
    if (b->js_gone && !b->tsfn_live && b->topics == 0) {
        destroy_server(b);
        sy_free(b);
    }
}

/* Joins and frees the core server; idempotent. */
static void stop_now(sy_bserver_t *b) {
    if (b->srv == NULL)
        return;
    if (b->listening) {
        sy_server_shutdown(b->srv, 0);
        sy_server_join(b->srv);
    }
    /* Batches still queued in the thread-safe function are freed by
     * call_js with env == NULL, which never looks at the server. */
    destroy_server(b);
}

static void cleanup_hook(void *arg) {
    sy_bserver_t *b = arg;
    b->hook = false;
    stop_now(b);
    if (b->tsfn_live) {
        /* Aborting makes further calls from IO threads fail; they are joined. */
        (void)napi_release_threadsafe_function(b->tsfn, napi_tsfn_abort);
    }
}

static void external_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    sy_bserver_t *b = data;
    b->js_gone = true;
    if (!b->tsfn_live) {
        stop_now(b);
        if (b->hook) {
            (void)napi_remove_env_cleanup_hook(env, cleanup_hook, b);
            b->hook = false;
        }
    }
    bserver_maybe_free(b);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)data;
    sy_bserver_t *b = hint;
    b->tsfn_live = false;
    bserver_maybe_free(b);
}

/* IO thread: hand a batch to the JS thread. */
static void on_batch(void *ctx, sy_batch_t *batch) {
    sy_bserver_t *b = ctx;
    if (napi_call_threadsafe_function(b->tsfn, batch, napi_tsfn_nonblocking) != napi_ok)
        sy_batch_free(batch); /* closing: nobody will read it */
}

static bool get_handle(napi_env env, napi_value v, sy_bserver_t **out) {
    napi_valuetype t;
    void *p = NULL;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t != napi_external) {
        sy_napi_throw_type(env, "handle", "a symphony server handle");
        return false;
    }
    if (!sy_napi_ok(env, napi_get_value_external(env, v, &p), "napi_get_value_external"))
        return false;
    *out = p;
    return true;
}

static bool get_server(napi_env env, napi_value v, sy_bserver_t **out) {
    if (!get_handle(env, v, out))
        return false;
    if ((*out)->srv == NULL) {
        sy_napi_throw(env, "ERR_SYMPHONY_CLOSED", "symphony: the server is closed");
        return false;
    }
    return true;
}

/* The arguments of a call on a running server: exactly n wanted (argv[0]
 * the handle), the server in *b. */
static bool server_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv, sy_bserver_t **b) {
    size_t argc = n;
    return sy_napi_args(env, info, n, &argc, argv, NULL) && get_server(env, argv[0], b);
}

static bool get_id(napi_env env, napi_value v, uint64_t *id) {
    int64_t x = 0;
    if (!sy_napi_get_int64(env, v, "id", 0, ((int64_t)1 << 53) - 1, &x))
        return false;
    *id = (uint64_t)x;
    return true;
}

static napi_value make_int(napi_env env, int64_t n) {
    napi_value v;
    return sy_napi_ok(env, napi_create_int64(env, n, &v), "napi_create_int64") ? v : NULL;
}

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

/* A string's UTF-8 bytes into out. The heap copy, if one is needed, stays in
 * a local until the last call that can fail has succeeded, so that every
 * failure path frees it and out->owned is set only on success. */
static bool get_string_bytes(napi_env env, napi_value v, sy_bytes_t *out) {
    size_t len = 0;
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v, NULL, 0, &len), "napi_get_value_string_utf8"))
        return false;
    char *buf = out->stack, *owned = NULL;
    if (len + 1 > sizeof(out->stack)) {
        buf = owned = sy_malloc(len + 1);
        if (owned == NULL) {
            sy_napi_throw_oom(env, NULL);
            return false;
        }
    }
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v, buf, len + 1, &len), "napi_get_value_string_utf8")) {
        sy_free(owned);
        return false;
    }
    out->data = buf;
    out->len = len;
    out->owned = owned;
    return true;
}

static bool get_bytes(napi_env env, napi_value v, const char *name, sy_bytes_t *out) {
    napi_valuetype t;
    out->owned = NULL;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_string)
        return get_string_bytes(env, v, out);
    bool is = false;
    void *p = NULL;
    size_t len = 0;
    if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
        napi_typedarray_type tt;
        size_t count = 0, offset = 0;
        napi_value ab;
        if (!sy_napi_ok(env, napi_get_typedarray_info(env, v, &tt, &count, &p, &ab, &offset),
                        "napi_get_typedarray_info"))
            return false;
        size_t elem = 1;
        switch (tt) {
        case napi_int16_array:
        case napi_uint16_array:
            elem = 2;
            break;
        case napi_int32_array:
        case napi_uint32_array:
        case napi_float32_array:
            elem = 4;
            break;
        case napi_float64_array:
        case napi_bigint64_array:
        case napi_biguint64_array:
            elem = 8;
            break;
        default:
            elem = 1;
            break;
        }
        len = count * elem;
    } else if (napi_is_dataview(env, v, &is) == napi_ok && is) {
        napi_value ab;
        size_t offset = 0;
        if (!sy_napi_ok(env, napi_get_dataview_info(env, v, &len, &p, &ab, &offset), "napi_get_dataview_info"))
            return false;
    } else if (napi_is_arraybuffer(env, v, &is) == napi_ok && is) {
        if (!sy_napi_ok(env, napi_get_arraybuffer_info(env, v, &p, &len), "napi_get_arraybuffer_info"))
            return false;
    } else {
        sy_napi_throw_type(env, name, "a string, Buffer, TypedArray, DataView or ArrayBuffer");
        return false;
    }
    out->data = p != NULL ? p : "";
    out->len = len;
    return true;
}

static bool get_topic(napi_env env, napi_value v, sy_bytes_t *out) {
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t != napi_string) {
        sy_napi_throw_type(env, "topic", "of type string");
        return false;
    }
    if (!get_bytes(env, v, "topic", out))
        return false;
    if (out->len == 0 || out->len > SY_TOPIC_MAX_LEN) {
        sy_free(out->owned);
        out->owned = NULL;
        char range[64];
        snprintf(range, sizeof(range), "a non-empty string of at most %d UTF-8 bytes", SY_TOPIC_MAX_LEN);
        sy_napi_throw_range(env, "topic", range);
        return false;
    }
    return true;
}

/* ---- events to JS ------------------------------------------------------ */

static bool call_dispatch(napi_env env, napi_value fn, napi_value *argv, size_t argc) {
    napi_value global, result;
    if (napi_get_global(env, &global) != napi_ok)
        return false;
    napi_status st = napi_call_function(env, global, fn, argc, argv, &result);
    if (st == napi_pending_exception) {
        /* A listener threw: report it as an uncaught exception and go on
         * with the rest of the batch. */
        napi_value err;
        if (napi_get_and_clear_last_exception(env, &err) == napi_ok)
            (void)napi_fatal_exception(env, err);
        return true;
    }
    return st == napi_ok;
}

/* An event payload of u32-length strings (sy_batch_add_strings) as an
 * array of strings: latin1 (SY_EV_UPGRADE: the request's bytes as they
 * came) or UTF-8 (SY_EV_ASK); the last one a Buffer when last_bytes (an
 * ask's payload that came in a binary frame). NULL on a napi failure. */
static napi_value strings_payload(napi_env env, const uint8_t *p, size_t len, bool utf8, bool last_bytes) {
    napi_value arr;
    if (napi_create_array(env, &arr) != napi_ok)
        return NULL;
    size_t pos = 0;
    uint32_t i = 0;
    while (pos + sizeof(uint32_t) <= len) {
        uint32_t n;
        memcpy(&n, p + pos, sizeof(n));
        pos += sizeof(n);
        if (n > len - pos)
            break;
        napi_value v;
        napi_status st;
        if (last_bytes && pos + n == len)
            st = napi_create_buffer_copy(env, n, p + pos, NULL, &v);
        else if (utf8)
            st = napi_create_string_utf8(env, (const char *)p + pos, n, &v);
        else
            st = napi_create_string_latin1(env, (const char *)p + pos, n, &v);
        if (st != napi_ok || napi_set_element(env, arr, i++, v) != napi_ok)
            return NULL;
        pos += n;
    }
    return arr;
}

static void call_js(napi_env env, napi_value fn, void *context, void *data) {
    sy_bserver_t *b = context;
    sy_batch_t *batch = data;
    if (env == NULL) {
        sy_batch_free(batch);
        return;
    }
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) {
        /* Its events are lost, but the batch goes back through the server:
         * the IO thread's flow-control count and the connections awaiting
         * the owner (sy_events.h) must see it handled. */
        if (b->srv != NULL)
            sy_server_batch_done(b->srv, batch);
        else
            sy_batch_free(batch);
        return;
    }
    size_t pos = 0;
    sy_event_t ev;
    const uint8_t *payload;
    bool all_stopped = false;
    while (sy_batch_next(batch, &pos, &ev, &payload)) {
        if (ev.type == SY_EV_STOPPED) {
            all_stopped = b->srv != NULL && ++b->stopped == sy_server_threads(b->srv);
            continue;
        }
        napi_handle_scope inner;
        if (napi_open_handle_scope(env, &inner) != napi_ok)
            break;
        napi_value argv[4];
        bool ok = napi_create_uint32(env, ev.type, &argv[0]) == napi_ok &&
                  napi_create_double(env, (double)ev.conn, &argv[1]) == napi_ok;
        switch (ev.type) {
        case SY_EV_MESSAGE:
            ok = ok && napi_create_uint32(env, ev.flags, &argv[2]) == napi_ok &&
                 napi_create_buffer_copy(env, ev.len, payload, NULL, &argv[3]) == napi_ok;
            break;
        case SY_EV_OPEN: /* flags (SY_EV_OPEN_DEFLATE), protocol */
            ok = ok && napi_create_uint32(env, ev.flags, &argv[2]) == napi_ok &&
                 napi_create_string_utf8(env, (const char *)payload, ev.len, &argv[3]) == napi_ok;
            break;
        case SY_EV_UPGRADE: /* flags (SY_EV_UPGRADE_SSE), the request's parts */
            ok = ok && napi_create_uint32(env, ev.flags, &argv[2]) == napi_ok &&
                 (argv[3] = strings_payload(env, payload, ev.len, false, false)) != NULL;
            break;
        case SY_EV_ASK: /* (code << 8) | kind, the ask's parts */
            ok = ok && napi_create_uint32(env, ((uint32_t)ev.code << 8) | ev.flags, &argv[2]) == napi_ok &&
                 (argv[3] = strings_payload(env, payload, ev.len, true,
                                            (ev.code & SY_ASK_BINARY) != 0 && ev.flags != 's' && ev.flags != 'u')) !=
                     NULL;
            break;
        case SY_EV_POST: /* flags (1: binary), [name, body as a Buffer] */
            ok = ok && napi_create_uint32(env, ev.flags, &argv[2]) == napi_ok &&
                 (argv[3] = strings_payload(env, payload, ev.len, true, true)) != NULL;
            break;
        case SY_EV_RECOVERY: /* (reason << 2) | flags (SY_EV_RECOVERED, SY_EV_RECOVERY_AT_OPEN), topic */
            ok = ok && napi_create_uint32(env, ((uint32_t)ev.code << 2) | (ev.flags & 3u), &argv[2]) == napi_ok &&
                 napi_create_string_utf8(env, (const char *)payload, ev.len, &argv[3]) == napi_ok;
            break;
        case SY_EV_TOPIC: /* flags (SY_EV_TOPIC_ON), topic */
            ok = ok && napi_create_uint32(env, ev.flags, &argv[2]) == napi_ok &&
                 napi_create_string_utf8(env, (const char *)payload, ev.len, &argv[3]) == napi_ok;
            break;
        default: /* CLOSE: code, reason; DRAIN */
            ok = ok && napi_create_uint32(env, ev.code, &argv[2]) == napi_ok &&
                 napi_create_string_utf8(env, (const char *)payload, ev.len, &argv[3]) == napi_ok;
            break;
        }
        if (ok)
            call_dispatch(env, fn, argv, 4);
        napi_close_handle_scope(env, inner);
    }
    if (b->srv != NULL)
        sy_server_batch_done(b->srv, batch);
    else
        sy_batch_free(batch);
    if (all_stopped && b->srv != NULL) {
        sy_server_join(b->srv);
        destroy_server(b);
        if (b->hook) {
            (void)napi_remove_env_cleanup_hook(env, cleanup_hook, b);
            b->hook = false;
        }
        napi_value argv[4];
        if (napi_create_uint32(env, SY_EV_CLOSED, &argv[0]) == napi_ok &&
            napi_create_double(env, 0, &argv[1]) == napi_ok && napi_get_undefined(env, &argv[2]) == napi_ok &&
            napi_get_undefined(env, &argv[3]) == napi_ok)
            call_dispatch(env, fn, argv, 4);
        (void)napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
    }
    napi_close_handle_scope(env, scope);
}

/* ---- calls from JS ------------------------------------------------------ */

static bool opt_get(napi_env env, napi_value obj, const char *key, napi_value *out) {
    return sy_napi_ok(env, napi_get_named_property(env, obj, key, out), "napi_get_named_property");
}

/* An optional boolean option: false when absent (undefined). */
static bool opt_flag(napi_env env, napi_value obj, const char *key, bool *out) {
    napi_value v;
    napi_valuetype t;
    *out = false;
    if (!opt_get(env, obj, key, &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    return t == napi_undefined || sy_napi_get_bool(env, v, key, out);
}

/* An integer option within OPTIONS[opt]'s range. */
static bool opt_int(napi_env env, napi_value obj, sy_option_t opt, int64_t *out) {
    napi_value v;
    return opt_get(env, obj, OPTIONS[opt].name, &v) &&
           sy_napi_get_int64(env, v, OPTIONS[opt].name, OPTIONS[opt].min, OPTIONS[opt].max, out);
}

/* opts.proxyProtocol (0 off, 1 required, 2 optional; undefined: off) and
 * opts.proxyProtocolFrom (null or undefined, or an array of at most
 * SY_PROXY_FROM_MAX addresses or CIDR ranges) into o. */
static bool proxy_options(napi_env env, napi_value obj, sy_server_opts_t *o) {
    napi_value v;
    napi_valuetype t;
    int64_t mode = 0;
    if (!opt_get(env, obj, "proxyProtocol", &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t != napi_undefined && !sy_napi_get_int64(env, v, "proxyProtocol", 0, 2, &mode))
        return false;
    o->proxy_protocol = (uint8_t)mode;
    if (!opt_get(env, obj, "proxyProtocolFrom", &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_null || t == napi_undefined)
        return true;
    bool is_array = false;
    uint32_t n = 0;
    if (!sy_napi_ok(env, napi_is_array(env, v, &is_array), "napi_is_array"))
        return false;
    if (!is_array) {
        sy_napi_throw_type(env, "proxyProtocolFrom", "an array of addresses or CIDR ranges, or null");
        return false;
    }
    if (!sy_napi_ok(env, napi_get_array_length(env, v, &n), "napi_get_array_length"))
        return false;
    if (n > SY_PROXY_FROM_MAX) {
        sy_napi_throw_range(env, "proxyProtocolFrom", "at most 64 entries");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        char text[SY_CIDR_TEXT_MAX + 1];
        size_t len = 0;
        if (!sy_napi_ok(env, napi_get_element(env, v, i, &e), "napi_get_element") ||
            !sy_napi_ok(env, napi_typeof(env, e, &t), "napi_typeof"))
            return false;
        if (t != napi_string) {
            sy_napi_throw_type(env, "proxyProtocolFrom", "an array of strings");
            return false;
        }
        if (!sy_napi_ok(env, napi_get_value_string_utf8(env, e, text, sizeof(text), &len),
                        "napi_get_value_string_utf8"))
            return false;
        if (len >= SY_CIDR_TEXT_MAX || sy_cidr_parse(text, len, &o->proxy_from[i]) != 0) {
            sy_napi_throw_range(env, "proxyProtocolFrom", "addresses or CIDR ranges (10.0.0.0/8, 2001:db8::/32)");
            return false;
        }
    }
    o->proxy_from_n = (uint8_t)n;
    return true;
}

/* The limits per address, per connection's inbound rate (rateLimit: 0
 * pause, 1 close) and per connection's work (maxWorkPerSecond, workBurst)
 * into o. The binding's ranges are checked here; how long a burst may last
 * is sy_server_create's to check. */
static bool limit_opts(napi_env env, napi_value obj, sy_server_opts_t *o) {
    int64_t per_addr, upg_rate, v4, v6, msgs, msg_burst, bytes, byte_burst, close, grace, work, work_burst;
    napi_value v;
    if (!opt_int(env, obj, OPT_maxConnectionsPerAddress, &per_addr) ||
        !opt_int(env, obj, OPT_upgradeRatePerAddress, &upg_rate) || !opt_int(env, obj, OPT_addressPrefixV4, &v4) ||
        !opt_int(env, obj, OPT_addressPrefixV6, &v6) || !opt_int(env, obj, OPT_maxMessagesPerSecond, &msgs) ||
        !opt_int(env, obj, OPT_messageBurst, &msg_burst) || !opt_int(env, obj, OPT_maxBytesPerSecond, &bytes) ||
        !opt_int(env, obj, OPT_byteBurst, &byte_burst) || !opt_int(env, obj, OPT_rateLimitGrace, &grace) ||
        !opt_get(env, obj, "rateLimit", &v) || !sy_napi_get_int64(env, v, "rateLimit", 0, 1, &close) ||
        !opt_int(env, obj, OPT_maxWorkPerSecond, &work) || !opt_int(env, obj, OPT_workBurst, &work_burst))
        return false;
    o->max_conns_per_address = (uint32_t)per_addr;
    o->upgrade_rate_per_address = (uint32_t)upg_rate;
    o->address_prefix_v4 = (uint8_t)v4;
    o->address_prefix_v6 = (uint8_t)v6;
    o->max_messages_per_s = (uint64_t)msgs;
    o->message_burst = (uint64_t)msg_burst;
    o->max_bytes_per_s = (uint64_t)bytes;
    o->byte_burst = (uint64_t)byte_burst;
    o->rate_close = close != 0;
    o->rate_grace_ms = (uint32_t)grace;
    o->max_work_per_s = (uint64_t)work;
    o->work_burst = (uint64_t)work_burst;
    return true;
}

/* serverCreate(opts) -> handle. The events' callback is given to
 * serverListen, which keeps it in the thread-safe function. */
static napi_value server_create(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    size_t argc = 1;
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL))
        return NULL;
    int64_t port, threads, max_payload, max_bp, slow, idle, hs, close_to, head, headers, backlog, max_conn, max_ev;
    int64_t z_level, z_threshold, h_size, h_ttl, h_bytes, max_frags, ctl_rate, max_subs, max_pending;
    napi_value v;
    bool upgrade = false, reclaim = true, compression = false, tell_tokens = false;
    if (!opt_int(env, argv[0], OPT_port, &port) || !opt_int(env, argv[0], OPT_threads, &threads) ||
        !opt_int(env, argv[0], OPT_maxPayload, &max_payload) || !opt_int(env, argv[0], OPT_maxBackpressure, &max_bp) ||
        !opt_int(env, argv[0], OPT_maxFragments, &max_frags) || !opt_int(env, argv[0], OPT_controlRate, &ctl_rate) ||
        !opt_get(env, argv[0], "slowConsumer", &v) || !sy_napi_get_int64(env, v, "slowConsumer", 0, 2, &slow) ||
        !opt_int(env, argv[0], OPT_idleTimeout, &idle) || !opt_int(env, argv[0], OPT_handshakeTimeout, &hs) ||
        !opt_int(env, argv[0], OPT_closeTimeout, &close_to) || !opt_int(env, argv[0], OPT_maxHeaderSize, &head) ||
        !opt_int(env, argv[0], OPT_maxHeaders, &headers) || !opt_int(env, argv[0], OPT_backlog, &backlog) ||
        !opt_int(env, argv[0], OPT_maxConnections, &max_conn) || !opt_int(env, argv[0], OPT_maxEventBytes, &max_ev) ||
        !opt_get(env, argv[0], "upgradeHandler", &v) || !sy_napi_get_bool(env, v, "upgradeHandler", &upgrade) ||
        !opt_get(env, argv[0], "reclaim", &v) || !sy_napi_get_bool(env, v, "reclaim", &reclaim) ||
        !opt_flag(env, argv[0], "tellTokenSubscribes", &tell_tokens) || !opt_get(env, argv[0], "compression", &v) ||
        !sy_napi_get_bool(env, v, "compression", &compression) || !opt_int(env, argv[0], OPT_compressLevel, &z_level) ||
        !opt_int(env, argv[0], OPT_compressThreshold, &z_threshold) ||
        !opt_int(env, argv[0], OPT_historySize, &h_size) || !opt_int(env, argv[0], OPT_historyTtl, &h_ttl) ||
        !opt_int(env, argv[0], OPT_historyMaxBytes, &h_bytes) ||
        !opt_int(env, argv[0], OPT_maxSubscriptions, &max_subs) || !opt_int(env, argv[0], OPT_maxPending, &max_pending))
        return NULL;
    char *host = NULL, *path = NULL;
    if (!sy_napi_get_named_string(env, argv[0], "host", &host) ||
        !sy_napi_get_named_string(env, argv[0], "path", &path)) {
        sy_free(host);
        return NULL;
    }
    sy_server_opts_t o = {
        .host = host,
        .port = (uint16_t)port,
        .path = path,
        .threads = (unsigned)threads,
        .max_payload = (size_t)max_payload,
        .max_fragments = (uint32_t)max_frags,
        .control_rate = (uint32_t)ctl_rate,
        .max_backpressure = (size_t)max_bp,
        .slow_consumer = slow == 2   ? SY_SLOW_CONFLATE
                         : slow == 1 ? SY_SLOW_CLOSE
                                     : SY_SLOW_DROP,
        .idle_timeout_s = (unsigned)idle,
        .handshake_timeout_s = (unsigned)hs,
        .close_timeout_s = (unsigned)close_to,
        .max_head_bytes = (size_t)head,
        .max_headers = (unsigned)headers,
        .backlog = (unsigned)backlog,
        .max_connections = (uint32_t)max_conn,
        .max_event_bytes = (size_t)max_ev,
        .upgrade_handler = upgrade,
        .reclaim = reclaim,
        .compression = compression,
        .compress_level = (unsigned)z_level,
        .compress_threshold = (size_t)z_threshold,
        .history_size = (uint32_t)h_size,
        .history_ttl_s = (uint32_t)h_ttl,
        .history_max_bytes = (size_t)h_bytes,
        .max_subscriptions = (uint32_t)max_subs,
        .max_pending = (uint32_t)max_pending,
        .tell_token_subscribes = tell_tokens,
    };
    if (!proxy_options(env, argv[0], &o) || !limit_opts(env, argv[0], &o)) {
        sy_free(host);
        sy_free(path);
        return NULL;
    }
    sy_bserver_t *b = sy_calloc(1, sizeof(*b));
    char err[SY_ERRLEN] = "out of memory";
    if (b != NULL)
        b->srv = sy_server_create(&o, on_batch, b, err, sizeof(err));
    sy_free(host);
    sy_free(path);
    if (b == NULL || b->srv == NULL) {
        sy_free(b);
        sy_napi_throw(env, "ERR_SYMPHONY_SERVER", err);
        return NULL;
    }
    b->env = env;
    napi_value handle;
    if (!sy_napi_ok(env, napi_create_external(env, b, external_finalize, NULL, &handle), "napi_create_external")) {
        sy_server_destroy(b->srv);
        sy_free(b);
        return NULL;
    }
    return handle;
}

/* serverListen(handle, dispatch, bind) -> port: starts the IO threads,
 * with a listening socket when bind is true (else port 0: noServer, the
 * connections come through serverAdopt). */
static napi_value server_listen(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    bool bind = true;
    if (!server_args(env, info, 3, argv, &b) || !sy_napi_get_bool(env, argv[2], "bind", &bind))
        return NULL;
    if (b->listening) {
        sy_napi_throw(env, "ERR_SERVER_ALREADY_LISTEN", "symphony: the server is already listening");
        return NULL;
    }
    napi_value name;
    if (!sy_napi_ok(env, napi_create_string_utf8(env, "symphony", NAPI_AUTO_LENGTH, &name),
                    "napi_create_string_utf8") ||
        !sy_napi_ok(
            env,
            napi_create_threadsafe_function(env, argv[1], NULL, name, 0, 1, NULL, tsfn_finalize, b, call_js, &b->tsfn),
            "napi_create_threadsafe_function"))
        return NULL;
    b->tsfn_live = true;
    uint16_t port = 0;
    char err[SY_ERRLEN] = "";
    int rc = bind ? sy_server_listen(b->srv, &port, err, sizeof(err)) : sy_server_start(b->srv, err, sizeof(err));
    if (rc != 0) {
        (void)napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
        napi_throw_error(env, "ERR_SYMPHONY_LISTEN", err);
        return NULL;
    }
    b->listening = true;
    if (sy_napi_ok(env, napi_add_env_cleanup_hook(env, cleanup_hook, b), "napi_add_env_cleanup_hook"))
        b->hook = true;
    else
        return NULL;
    return make_int(env, port);
}

/* The flags of publish and send (SY_SEND_*). */
static bool get_send_flags(napi_env env, napi_value v, unsigned *out) {
    int64_t f;
    if (!sy_napi_get_int64(env, v, "flags", 0, SY_SEND_BINARY | SY_SEND_COMPRESS | SY_SEND_LOCAL, &f))
        return false;
    *out = (unsigned)f;
    return true;
}

/* serverPublish(handle, topic, data, flags) -> subscribers */
static napi_value server_publish(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    unsigned flags = 0;
    sy_bytes_t topic, data;
    if (!server_args(env, info, 4, argv, &b) || !get_send_flags(env, argv[3], &flags) ||
        !get_topic(env, argv[1], &topic))
        return NULL;
    if (!get_bytes(env, argv[2], "data", &data)) {
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
    return make_int(env, (int64_t)n);
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
    bserver_maybe_free(b);
}

/* serverTopic(handle, topic) -> topic handle */
static napi_value server_topic(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    sy_bytes_t topic;
    if (!server_args(env, info, 2, argv, &b) || !get_topic(env, argv[1], &topic))
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

/* The topic handle (serverTopic) v of server b, or NULL with an error thrown. */
static sy_btopic_t *get_topic_handle(napi_env env, napi_value v, sy_bserver_t *b) {
    void *p = NULL;
    if (!sy_napi_ok(env, napi_get_value_external(env, v, &p), "napi_get_value_external"))
        return NULL;
    sy_btopic_t *h = p;
    if (h == NULL || h->b != b) {
        sy_napi_throw_type(env, "topic", "a topic handle of this server");
        return NULL;
    }
    return h;
}

/* serverPublishTopic(handle, topic handle, data, flags) -> subscribers */
static napi_value server_publish_topic(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    unsigned flags = 0;
    sy_bytes_t data;
    sy_btopic_t *h;
    if (!server_args(env, info, 4, argv, &b) || !get_send_flags(env, argv[3], &flags) ||
        (h = get_topic_handle(env, argv[1], b)) == NULL)
        return NULL;
    if (!get_bytes(env, argv[2], "data", &data))
        return NULL;
    size_t n = 0;
    int rc = sy_server_publish_topic(b->srv, h->t, data.data, data.len, flags | SY_SEND_LATER, &n);
    sy_free(data.owned);
    if (rc != 0) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    return make_int(env, (int64_t)n);
}

/* serverWake(handle): the end of a turn in which publish or send queued
 * messages (SY_SEND_LATER): the IO threads take them now. */
static napi_value server_wake(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    sy_bserver_t *b;
    size_t argc = 1;
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL) || !get_handle(env, argv[0], &b))
        return NULL;
    if (b->srv != NULL)
        sy_server_wake(b->srv);
    return NULL;
}

/* serverRef(handle, ref): whether the server's thread-safe function keeps
 * Node's event loop alive (a noServer server not used yet does not; it is
 * ref'd at its first connection and at close). */
static napi_value server_ref(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    size_t argc = 2;
    bool ref = true;
    if (!sy_napi_args(env, info, 2, &argc, argv, NULL) || !get_handle(env, argv[0], &b) ||
        !sy_napi_get_bool(env, argv[1], "ref", &ref))
        return NULL;
    if (b->tsfn_live) {
        if (ref)
            (void)napi_ref_threadsafe_function(env, b->tsfn);
        else
            (void)napi_unref_threadsafe_function(env, b->tsfn);
    }
    return NULL;
}

/* A queued command: true; an id that names no open connection: false. */
static napi_value result_of(napi_env env, int rc) {
    if (rc != 0 && rc != ENOTCONN) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    return sy_napi_make_bool(env, rc == 0);
}

/* serverAdopt(handle, fd, bytes) -> bool: false when the server is not
 * running; throws ERR_SYMPHONY_ADOPT when fd is not a usable socket. */
static napi_value server_adopt(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    int64_t fd;
    sy_bytes_t bytes;
    if (!server_args(env, info, 3, argv, &b) || !sy_napi_get_int64(env, argv[1], "fd", 0, INT32_MAX, &fd) ||
        !get_bytes(env, argv[2], "bytes", &bytes))
        return NULL;
    int rc = sy_server_adopt(b->srv, (int)fd, bytes.data, bytes.len);
    sy_free(bytes.owned);
    if (rc == ENOTSOCK || rc == EBADF || rc == EMFILE || rc == ENFILE) {
        char msg[128];
        snprintf(msg, sizeof(msg), "symphony: cannot take over the socket: %s", sy_strerror(rc));
        sy_napi_throw(env, "ERR_SYMPHONY_ADOPT", msg);
        return NULL;
    }
    return result_of(env, rc);
}

/* serverSend(handle, id, data, flags) -> bool */
static napi_value server_send(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    uint64_t id;
    unsigned flags = 0;
    sy_bytes_t data;
    if (!server_args(env, info, 4, argv, &b) || !get_id(env, argv[1], &id) || !get_send_flags(env, argv[3], &flags) ||
        !get_bytes(env, argv[2], "data", &data))
        return NULL;
    int rc = sy_server_send(b->srv, id, data.data, data.len, flags | SY_SEND_LATER);
    sy_free(data.owned);
    return result_of(env, rc);
}

static bool set_u64(napi_env env, napi_value obj, const char *key, uint64_t v) {
    return sy_napi_set_double(env, obj, key, (double)v);
}

static napi_value sub_call(napi_env env, napi_callback_info info, bool subscribe) {
    napi_value argv[3];
    sy_bserver_t *b;
    uint64_t id;
    sy_bytes_t topic;
    if (!server_args(env, info, 3, argv, &b) || !get_id(env, argv[1], &id) || !get_topic(env, argv[2], &topic))
        return NULL;
    int rc = subscribe ? sy_server_subscribe(b->srv, id, topic.data, topic.len)
                       : sy_server_unsubscribe(b->srv, id, topic.data, topic.len);
    sy_free(topic.owned);
    return result_of(env, rc);
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
    if (!server_args(env, info, 5, argv, &b) || !get_id(env, argv[1], &id) || !get_epoch(env, argv[3], &epoch) ||
        !sy_napi_get_int64(env, argv[4], "since.offset", 0, ((int64_t)1 << 53) - 1, &offset) ||
        !get_topic(env, argv[2], &topic))
        return NULL;
    int rc = sy_server_subscribe_since(b->srv, id, topic.data, topic.len, epoch, (uint64_t)offset);
    sy_free(topic.owned);
    return result_of(env, rc);
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
    if (!server_args(env, info, 7, argv, &b) || !get_id(env, argv[1], &id) ||
        !sy_napi_get_uint32(env, argv[2], "rid", &rid) ||
        !sy_napi_ok(env, napi_typeof(env, argv[4], &et), "napi_typeof"))
        return NULL;
    bool resume = et != napi_null && et != napi_undefined;
    if ((resume && (!get_epoch(env, argv[4], &epoch) ||
                    !sy_napi_get_int64(env, argv[5], "since.offset", 0, ((int64_t)1 << 53) - 1, &offset))) ||
        !get_topic(env, argv[3], &topic))
        return NULL;
    if (!get_bytes(env, argv[6], "extra", &extra)) {
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
    return result_of(env, rc);
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
    if (!server_args(env, info, 5, argv, &b) || !get_id(env, argv[1], &id) ||
        !sy_napi_get_uint32(env, argv[2], "rid", &rid) || !sy_napi_get_bool(env, argv[4], "binary", &binary) ||
        !get_bytes(env, argv[3], "frame", &frame))
        return NULL;
    int rc = sy_server_answer(b->srv, id, rid, frame.data, frame.len, binary);
    sy_free(frame.owned);
    return result_of(env, rc);
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
    if (!server_args(env, info, 2, argv, &b) || !get_topic(env, argv[1], &topic))
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
        !sy_napi_set_value(env, o, "epoch", e) || !set_u64(env, o, "offset", last) ||
        !set_u64(env, o, "first", first) || !set_u64(env, o, "kept", kept))
        return NULL;
    return o;
}

/* serverTopicHistory(handle, topic handle, size, ttl) */
static napi_value server_topic_history(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    sy_btopic_t *h;
    int64_t size, ttl;
    if (!server_args(env, info, 4, argv, &b) || (h = get_topic_handle(env, argv[1], b)) == NULL ||
        !sy_napi_get_int64(env, argv[2], OPTIONS[OPT_historySize].name, OPTIONS[OPT_historySize].min,
                           OPTIONS[OPT_historySize].max, &size) ||
        !sy_napi_get_int64(env, argv[3], OPTIONS[OPT_historyTtl].name, OPTIONS[OPT_historyTtl].min,
                           OPTIONS[OPT_historyTtl].max, &ttl))
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
    if (!server_args(env, info, 2, argv, &b) || !get_topic(env, argv[1], &topic))
        return NULL;
    unsigned n = sy_server_subscribers(b->srv, topic.data, topic.len);
    sy_free(topic.owned);
    return make_int(env, (int64_t)n);
}

/* serverTopicApplied(handle, topic) -> this node's applied subscriptions of
 * topic (the count SY_EV_TOPIC follows) */
static napi_value server_topic_applied(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    sy_bytes_t topic;
    if (!server_args(env, info, 2, argv, &b) || !get_topic(env, argv[1], &topic))
        return NULL;
    unsigned n = sy_server_topic_applied(b->srv, topic.data, topic.len);
    sy_free(topic.owned);
    return make_int(env, (int64_t)n);
}

/* serverTopicEvents(handle, on) -> with on, the topics that have applied
 * subscriptions now (after the switch: an edge after it is an event) */
static napi_value server_topic_events(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    bool on;
    if (!server_args(env, info, 2, argv, &b) || !sy_napi_get_bool(env, argv[1], "on", &on))
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
    if (!server_args(env, info, 1, argv, &b))
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
             (count = make_int(env, (int64_t)list[i].subscribers)) != NULL &&
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
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL) || !get_string_bytes(env, argv[0], &url))
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
            !sy_napi_set_value(env, o, "epoch", e) || !set_u64(env, o, "offset", s.offset) ||
            !sy_napi_ok(env, napi_set_element(env, out, i++, o), "napi_set_element"))
            out = NULL;
    }
    sy_free(topic_buf);
    sy_free(url.owned);
    return out;
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
    if (!server_args(env, info, 4, argv, &b) || !get_id(env, argv[1], &id) ||
        !sy_napi_get_int64(env, argv[2], "code", SY_CLOSE_CODE_MIN, SY_CLOSE_CODE_MAX, &code) ||
        !get_bytes(env, argv[3], "reason", &reason))
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
    return result_of(env, rc);
}

static napi_value server_terminate(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    uint64_t id;
    if (!server_args(env, info, 2, argv, &b) || !get_id(env, argv[1], &id))
        return NULL;
    return result_of(env, sy_server_terminate(b->srv, id));
}

/* serverAccept(handle, id, protocol, headers, topics[], compress) -> bool */
static napi_value server_accept(napi_env env, napi_callback_info info) {
    napi_value argv[6];
    sy_bserver_t *b;
    uint64_t id;
    uint32_t ntopics = 0;
    bool is_array = false, compress = true;
    if (!server_args(env, info, 6, argv, &b) || !get_id(env, argv[1], &id) ||
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
    if (!get_bytes(env, argv[2], "protocol", &proto))
        return NULL;
    if (!get_bytes(env, argv[3], "headers", &headers)) {
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
        ok = sy_napi_ok(env, napi_get_element(env, argv[4], i, &t), "napi_get_element") && get_topic(env, t, &tb);
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
    return result_of(env, rc);
}

/* serverRefuse(handle, id, status, headers) -> bool */
static napi_value server_refuse(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    uint64_t id;
    int64_t status;
    sy_bytes_t headers;
    if (!server_args(env, info, 4, argv, &b) || !get_id(env, argv[1], &id) ||
        !sy_napi_get_int64(env, argv[2], "status", SY_REFUSE_STATUS_MIN, SY_REFUSE_STATUS_MAX, &status) ||
        !get_bytes(env, argv[3], "headers", &headers))
        return NULL;
    int rc = sy_server_refuse(b->srv, id, (int)status, headers.data, headers.len);
    sy_free(headers.owned);
    return result_of(env, rc);
}

/* serverPostAnswer(handle, id, status) -> bool: a forwarded POST's answer (202, 404, 503). */
static napi_value server_post_answer(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    uint64_t id;
    int64_t status;
    if (!server_args(env, info, 3, argv, &b) || !get_id(env, argv[1], &id) ||
        !sy_napi_get_int64(env, argv[2], "status", 200, 599, &status))
        return NULL;
    return result_of(env, sy_server_post_answer(b->srv, id, (int)status));
}

/* serverPost(handle, name, data, binary) -> bool: a POST forwarded from another node;
 * false when name is no stream of this node, or the server is not running. */
static napi_value server_post(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    sy_bytes_t name, data;
    bool binary = false;
    if (!server_args(env, info, 4, argv, &b) || !get_bytes(env, argv[1], "name", &name))
        return NULL;
    if (!get_bytes(env, argv[2], "data", &data)) {
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
    return result_of(env, rc == ENOENT ? ENOTCONN : rc);
}

/* serverNodeTag(handle) -> string: how this node's streams' names begin. */
static napi_value server_node_tag(napi_env env, napi_callback_info info) {
    napi_value argv[1], out;
    sy_bserver_t *b;
    if (!server_args(env, info, 1, argv, &b))
        return NULL;
    char tag[17];
    sy_server_node_tag(b->srv, tag);
    return napi_create_string_utf8(env, tag, 16, &out) == napi_ok ? out : NULL;
}

/* Every counter of sy_stats_t (all uint64_t), by its JS name, from the one
 * list (src/io/sy_stats.h): for the per-thread objects and the totals (a sum,
 * or for a maximum the largest), and exported as binding.statFields for
 * lib/metrics.js (the Prometheus families) and the tests (lib/index.d.ts). */
static const struct {
    const char *name;
    size_t offset;
    bool max;
    const char *metric, *type;
    double scale;
    const char *help;
} STAT_FIELDS[] = {
#define STAT_FIELD(field, js, agg, metric, type, scale, help) \
    {js, offsetof(sy_stats_t, field), agg == SY_STAT_MAX, metric, type, scale, help},
    SY_STATS_LIST(STAT_FIELD)
#undef STAT_FIELD
};
#define STAT_COUNT (sizeof(STAT_FIELDS) / sizeof(STAT_FIELDS[0]))

static uint64_t *stat_field(sy_stats_t *t, size_t i) { return (uint64_t *)((char *)t + STAT_FIELDS[i].offset); }

static bool thread_stats_object(napi_env env, sy_stats_t *t, napi_value *out) {
    if (!sy_napi_ok(env, napi_create_object(env, out), "napi_create_object"))
        return false;
    for (size_t i = 0; i < STAT_COUNT; i++)
        if (!set_u64(env, *out, STAT_FIELDS[i].name, *stat_field(t, i)))
            return false;
    return true;
}

/* serverStats(handle) -> { total fields..., topics, threads: [...] } */
static napi_value server_stats(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    sy_bserver_t *b;
    if (!server_args(env, info, 1, argv, &b))
        return NULL;
    unsigned n = sy_server_threads(b->srv);
    napi_value arr, total;
    sy_stats_t sum = {0};
    if (!sy_napi_ok(env, napi_create_array_with_length(env, n, &arr), "napi_create_array_with_length"))
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        sy_stats_t t;
        napi_value o;
        sy_server_thread_stats(b->srv, i, &t);
        if (!thread_stats_object(env, &t, &o) || !sy_napi_ok(env, napi_set_element(env, arr, i, o), "napi_set_element"))
            return NULL;
        if (!sy_napi_set_double(env, o, "arena", t.arena) || !sy_napi_set_double(env, o, "connArena", t.conn_arena))
            return NULL;
        for (size_t k = 0; k < STAT_COUNT; k++) {
            uint64_t *f = stat_field(&sum, k), v = *stat_field(&t, k);
            *f = STAT_FIELDS[k].max ? (v > *f ? v : *f) : *f + v;
        }
    }
    size_t h_count = 0, h_bytes = 0;
    sy_server_history_totals(b->srv, &h_count, &h_bytes);
    if (!thread_stats_object(env, &sum, &total) || !set_u64(env, total, "topics", sy_server_topic_count(b->srv)) ||
        !set_u64(env, total, "historyMessages", h_count) || !set_u64(env, total, "historyBytes", h_bytes) ||
        !set_u64(env, total, "addresses", sy_server_address_count(b->srv)) ||
        !sy_napi_set_value(env, total, "threads", arr))
        return NULL;
    return total;
}

#ifdef SY_WITH_TLS
/* One certificate entry of serverSetTls: { cert, key, passphrase?, servername? }. */
typedef struct {
    sy_bytes_t cert, key;
    char *passphrase, *servername;
} cert_in_t;

static void cert_in_free(cert_in_t *c) {
    sy_free(c->cert.owned);
    sy_free(c->key.owned);
    sy_free(c->passphrase);
    sy_free(c->servername);
}

static bool cert_in_get(napi_env env, napi_value obj, cert_in_t *c) {
    napi_value v;
    return opt_get(env, obj, "cert", &v) && get_bytes(env, v, "tls.cert", &c->cert) && opt_get(env, obj, "key", &v) &&
           get_bytes(env, v, "tls.key", &c->key) && sy_napi_get_named_string(env, obj, "passphrase", &c->passphrase) &&
           sy_napi_get_named_string(env, obj, "servername", &c->servername);
}

/* serverSetTls(handle, certs, ca) -> undefined. certs: an array, the default
 * certificate first, then SNI ones (lib/server.js flattens the options);
 * ca: PEM or null. The PEM bytes are read during the call only. Before
 * listen: the server speaks TLS; after: a reload for new handshakes. On any
 * error the server keeps the certificates it had. */
static napi_value server_set_tls(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    uint32_t n = 0;
    bool is_array = false;
    if (!server_args(env, info, 3, argv, &b) ||
        !sy_napi_ok(env, napi_is_array(env, argv[1], &is_array), "napi_is_array"))
        return NULL;
    if (!is_array || !sy_napi_ok(env, napi_get_array_length(env, argv[1], &n), "napi_get_array_length") || n == 0 ||
        n > 1024) {
        sy_napi_throw_type(env, "certs", "a non-empty array of certificates");
        return NULL;
    }
    if (b->listening && !sy_server_tls(b->srv)) {
        sy_napi_throw(env, "ERR_SYMPHONY_TLS", "symphony: setTls: this server was created without tls");
        return NULL;
    }
    cert_in_t *in = sy_calloc(n, sizeof(*in));
    sy_tls_cert_t *certs = sy_calloc(n, sizeof(*certs));
    sy_bytes_t ca = {.data = NULL, .len = 0, .owned = NULL};
    napi_value result = NULL;
    if (in == NULL || certs == NULL) {
        sy_napi_throw_oom(env, NULL);
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        if (!sy_napi_ok(env, napi_get_element(env, argv[1], i, &e), "napi_get_element") || !cert_in_get(env, e, &in[i]))
            goto done;
        certs[i] = (sy_tls_cert_t){.cert_pem = in[i].cert.data,
                                   .cert_len = in[i].cert.len,
                                   .key_pem = in[i].key.data,
                                   .key_len = in[i].key.len,
                                   .passphrase = in[i].passphrase,
                                   .servername = in[i].servername};
    }
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_typeof(env, argv[2], &t), "napi_typeof") ||
        (t != napi_null && t != napi_undefined && !get_bytes(env, argv[2], "tls.ca", &ca)))
        goto done;
    char err[SY_ERRLEN] = "";
    sy_tls_ctx_t *ctx = sy_tls_ctx_new(certs, n, ca.data, ca.len, err, sizeof(err));
    if (ctx == NULL) {
        char msg[SY_ERRLEN + 32];
        snprintf(msg, sizeof(msg), "symphony: tls: %s", err);
        sy_napi_throw(env, "ERR_SYMPHONY_TLS", msg);
        goto done;
    }
    if (sy_server_set_tls(b->srv, ctx) != 0) {
        sy_tls_ctx_unref(ctx);
        sy_napi_throw(env, "ERR_SYMPHONY_TLS", "symphony: setTls: the server cannot take certificates now");
        goto done;
    }
    (void)napi_get_undefined(env, &result);
done:
    for (uint32_t i = 0; in != NULL && i < n; i++)
        cert_in_free(&in[i]);
    sy_free(in);
    sy_free(certs);
    sy_free(ca.owned);
    return result;
}

/* One key of serverSetTokens: [kind ('secret' | 'pem' | 'jwk'), kid or
 * null, alg or null, bytes] into keys; throws ERR_SYMPHONY_TOKENS naming
 * key i when it cannot be used. */
static bool token_key(napi_env env, napi_value e, uint32_t i, sy_jwt_keys_t *keys) {
    napi_value v[4];
    for (uint32_t k = 0; k < 4; k++)
        if (!sy_napi_ok(env, napi_get_element(env, e, k, &v[k]), "napi_get_element"))
            return false;
    char kind[8] = "", alg[8] = "", kid[256] = "";
    size_t kind_len = 0, alg_len = 0, kid_len = 0;
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v[0], kind, sizeof(kind), &kind_len), "key kind") ||
        !sy_napi_ok(env, napi_typeof(env, v[1], &t), "napi_typeof") ||
        (t == napi_string &&
         !sy_napi_ok(env, napi_get_value_string_utf8(env, v[1], kid, sizeof(kid), &kid_len), "key kid")) ||
        !sy_napi_ok(env, napi_typeof(env, v[2], &t), "napi_typeof") ||
        (t == napi_string &&
         !sy_napi_ok(env, napi_get_value_string_utf8(env, v[2], alg, sizeof(alg), &alg_len), "key alg")))
        return false;
    sy_bytes_t data;
    if (!get_bytes(env, v[3], "key", &data))
        return false;
    char err[SY_ERRLEN] = "";
    const char *kid_p = kid_len > 0 ? kid : NULL;
    int rc;
    if (strcmp(kind, "secret") == 0)
        rc = sy_jwt_keys_add_secret(keys, kid_p, kid_len, data.data, data.len, err, sizeof(err));
    else if (strcmp(kind, "pem") == 0)
        rc = sy_jwt_keys_add_pem(keys, kid_p, kid_len, alg, data.data, data.len, err, sizeof(err));
    else
        rc = sy_jwt_keys_add_jwk(keys, data.data, data.len, err, sizeof(err));
    sy_free(data.owned);
    if (rc != 0) {
        char msg[SY_ERRLEN + 64];
        snprintf(msg, sizeof(msg), "symphony: tokens.keys[%u]: %s", (unsigned)i, err[0] ? err : "cannot be used");
        sy_napi_throw(env, "ERR_SYMPHONY_TOKENS", msg);
        return false;
    }
    return true;
}

/* serverSetTokens(handle, keys, audience | null, issuer | null, leeway) ->
 * undefined: what the IO threads check clients' tokens with from now on
 * (keys: lib/tokens.js's tuples; an empty array: tokens are not checked).
 * On any error the server keeps the keys it had. */
static napi_value server_set_tokens(napi_env env, napi_callback_info info) {
    napi_value argv[5];
    sy_bserver_t *b;
    uint32_t n = 0, leeway = 0;
    bool is_array = false;
    if (!server_args(env, info, 5, argv, &b) ||
        !sy_napi_ok(env, napi_is_array(env, argv[1], &is_array), "napi_is_array") ||
        !sy_napi_get_uint32(env, argv[4], "leeway", &leeway))
        return NULL;
    if (!is_array || !sy_napi_ok(env, napi_get_array_length(env, argv[1], &n), "napi_get_array_length")) {
        sy_napi_throw_type(env, "keys", "an array");
        return NULL;
    }
    if (n == 0) {
        (void)sy_server_set_tokens(b->srv, NULL);
        napi_value u;
        (void)napi_get_undefined(env, &u);
        return u;
    }
    char err[SY_ERRLEN] = "";
    if (sy_tls_global_init(err, sizeof(err)) != 0) { /* OpenSSL's memory in sy_alloc first */
        sy_napi_throw(env, "ERR_SYMPHONY_TOKENS", err);
        return NULL;
    }
    sy_bytes_t aud = {.data = NULL, .len = 0, .owned = NULL}, iss = aud;
    napi_valuetype t;
    sy_jwt_keys_t *keys = sy_jwt_keys_new();
    napi_value result = NULL;
    if (keys == NULL) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        if (!sy_napi_ok(env, napi_get_element(env, argv[1], i, &e), "napi_get_element") || !token_key(env, e, i, keys))
            goto done;
    }
    if (!sy_napi_ok(env, napi_typeof(env, argv[2], &t), "napi_typeof") ||
        (t == napi_string && !get_bytes(env, argv[2], "audience", &aud)) ||
        !sy_napi_ok(env, napi_typeof(env, argv[3], &t), "napi_typeof") ||
        (t == napi_string && !get_bytes(env, argv[3], "issuer", &iss)))
        goto done;
    sy_tokens_t *tokens = sy_tokens_new(keys, aud.data, aud.len, iss.data, iss.len, leeway);
    keys = NULL; /* taken, even when that failed */
    if (tokens == NULL) {
        sy_napi_throw_oom(env, NULL);
        goto done;
    }
    (void)sy_server_set_tokens(b->srv, tokens);
    (void)napi_get_undefined(env, &result);
done:
    if (keys != NULL)
        sy_jwt_keys_unref(keys);
    sy_free(aud.owned);
    sy_free(iss.owned);
    return result;
}
#endif

/* serverSetBus(handle, opts, onState) -> undefined: before listen. */
static napi_value server_set_bus(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    if (!server_args(env, info, 3, argv, &b))
        return NULL;
    if (b->listening || b->bus_tsfn != NULL) {
        sy_napi_throw(env, "ERR_SYMPHONY_BUS", "symphony: the bus must be set once, before the server starts");
        return NULL;
    }
    return sy_binding_bus_set(env, b->srv, argv[1], argv[2], &b->bus_tsfn);
}

/* serverSetPusher(handle, pusher) -> node (binding/pusher.c) */
static napi_value server_set_pusher(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    return server_args(env, info, 2, argv, &b) ? sy_binding_pusher_set(env, b->srv, argv[1]) : NULL;
}

/* serverPublishEvent(handle, topic, data, flags, event) -> subscribers (binding/pusher.c) */
static napi_value server_publish_event(napi_env env, napi_callback_info info) {
    napi_value argv[5];
    sy_bserver_t *b;
    return server_args(env, info, 5, argv, &b) ? sy_binding_publish_event(env, b->srv, argv + 1) : NULL;
}

/* serverBusCall(handle, id, route, args) -> boolean (binding/bus.c) */
static napi_value server_bus_call(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    sy_bserver_t *b;
    if (!server_args(env, info, 4, argv, &b))
        return NULL;
    return sy_binding_bus_call(env, b->srv, b->bus_tsfn, argv[1], argv[2], argv[3]);
}

/* serverBusStats(handle) -> { state, counters... } or null */
static napi_value server_bus_stats(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    sy_bserver_t *b;
    if (!server_args(env, info, 1, argv, &b))
        return NULL;
    return sy_binding_bus_stats(env, b->srv);
}

/* serverClose(handle, deadlineMs) -> bool: begins shutdown (false when the
 * server is not running); the events' callback gets EV_CLOSED once every
 * IO thread has stopped. */
static napi_value server_close(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    size_t argc = 2;
    sy_bserver_t *b;
    int64_t deadline;
    if (!sy_napi_args(env, info, 2, &argc, argv, NULL) || !get_handle(env, argv[0], &b) ||
        !sy_napi_get_int64(env, argv[1], "deadlineMs", OPTIONS[OPT_closeDeadline].min, OPTIONS[OPT_closeDeadline].max,
                           &deadline))
        return NULL;
    if (b->srv != NULL && b->listening)
        sy_server_shutdown(b->srv, (unsigned)deadline);
    return sy_napi_make_bool(env, b->srv != NULL && b->listening);
}

/* binding.statFields: [{ name, aggregate: 'sum'|'max', metric, type, scale,
 * help }] in the list's order, frozen. */
static bool export_stat_fields(napi_env env, napi_value exports) {
    napi_value arr;
    if (!sy_napi_ok(env, napi_create_array_with_length(env, STAT_COUNT, &arr), "napi_create_array_with_length"))
        return false;
    for (size_t i = 0; i < STAT_COUNT; i++) {
        napi_value o;
        if (!sy_napi_ok(env, napi_create_object(env, &o), "napi_create_object") ||
            !sy_napi_set_string(env, o, "name", STAT_FIELDS[i].name) ||
            !sy_napi_set_string(env, o, "aggregate", STAT_FIELDS[i].max ? "max" : "sum") ||
            !sy_napi_set_string(env, o, "metric", STAT_FIELDS[i].metric) ||
            !sy_napi_set_string(env, o, "type", STAT_FIELDS[i].type) ||
            !sy_napi_set_double(env, o, "scale", STAT_FIELDS[i].scale) ||
            !sy_napi_set_string(env, o, "help", STAT_FIELDS[i].help) ||
            !sy_napi_ok(env, napi_object_freeze(env, o), "napi_object_freeze") ||
            !sy_napi_ok(env, napi_set_element(env, arr, (uint32_t)i, o), "napi_set_element"))
            return false;
    }
    return sy_napi_ok(env, napi_object_freeze(env, arr), "napi_object_freeze") &&
           sy_napi_set_value(env, exports, "statFields", arr);
}

/* The scalar members of binding.constants, by their JS names (the C name
 * without SY_). */
#define SY_CONSTANT(name) \
    { #name, SY_##name }
static const struct {
    const char *name;
    int64_t value;
} CONSTANTS[] = {
    SY_CONSTANT(TOPIC_MAX_LEN),     SY_CONSTANT(CLOSE_REASON_MAX_LEN),
    SY_CONSTANT(CLOSE_CODE_MIN),    SY_CONSTANT(CLOSE_CODE_MAX),
    SY_CONSTANT(REFUSE_STATUS_MIN), SY_CONSTANT(REFUSE_STATUS_MAX),
    SY_CONSTANT(EV_UPGRADE),        SY_CONSTANT(EV_OPEN),
    SY_CONSTANT(EV_MESSAGE),        SY_CONSTANT(EV_CLOSE),
    SY_CONSTANT(EV_DRAIN),          SY_CONSTANT(EV_FAILED),
    SY_CONSTANT(EV_CLOSED),         SY_CONSTANT(EV_OPEN_DEFLATE),
    SY_CONSTANT(SEND_BINARY),       SY_CONSTANT(SEND_COMPRESS),
    SY_CONSTANT(SEND_LOCAL),        SY_CONSTANT(EV_RECOVERY),
    SY_CONSTANT(EV_TOPIC),          SY_CONSTANT(EV_ASK),
    SY_CONSTANT(EV_OPEN_SSE),       SY_CONSTANT(EV_UPGRADE_SSE),
    SY_CONSTANT(EV_POST),
};
#undef SY_CONSTANT

/* binding.constants, frozen: the limits the calls above check and the event
 * codes the events' callback receives, so that lib/ does not restate them
 * (sodium-native's way). The C checks stay: lib/ checks first only to name
 * the user's option in its messages. */
static bool export_constants(napi_env env, napi_value exports) {
    napi_value c, opts;
    if (!sy_napi_ok(env, napi_create_object(env, &c), "napi_create_object") ||
        !sy_napi_ok(env, napi_create_object(env, &opts), "napi_create_object"))
        return false;
    for (size_t i = 0; i < OPT_COUNT; i++) {
        napi_value r;
        if (!sy_napi_ok(env, napi_create_object(env, &r), "napi_create_object") ||
            !sy_napi_set_int64(env, r, "min", OPTIONS[i].min) || !sy_napi_set_int64(env, r, "max", OPTIONS[i].max) ||
            !sy_napi_ok(env, napi_object_freeze(env, r), "napi_object_freeze") ||
            !sy_napi_set_value(env, opts, OPTIONS[i].name, r))
            return false;
    }
    for (size_t i = 0; i < sizeof(CONSTANTS) / sizeof(CONSTANTS[0]); i++)
        if (!sy_napi_set_int64(env, c, CONSTANTS[i].name, CONSTANTS[i].value))
            return false;
    return sy_napi_ok(env, napi_object_freeze(env, opts), "napi_object_freeze") &&
           sy_napi_set_value(env, c, "options", opts) &&
           sy_napi_ok(env, napi_object_freeze(env, c), "napi_object_freeze") &&
           sy_napi_set_value(env, exports, "constants", c);
}

bool sy_binding_server_init(napi_env env, napi_value exports) {
    return export_stat_fields(env, exports) && export_constants(env, exports) &&
           sy_napi_set_function(env, exports, "serverCreate", server_create, NULL) &&
           sy_napi_set_function(env, exports, "serverListen", server_listen, NULL) &&
           sy_napi_set_function(env, exports, "serverAdopt", server_adopt, NULL) &&
           sy_napi_set_function(env, exports, "serverPublish", server_publish, NULL) &&
           sy_napi_set_function(env, exports, "serverTopic", server_topic, NULL) &&
           sy_napi_set_function(env, exports, "serverPublishTopic", server_publish_topic, NULL) &&
           sy_napi_set_function(env, exports, "serverWake", server_wake, NULL) &&
           sy_napi_set_function(env, exports, "serverRef", server_ref, NULL) &&
           sy_napi_set_function(env, exports, "serverSend", server_send, NULL) &&
           sy_napi_set_function(env, exports, "serverSubscribe", server_subscribe, NULL) &&
           sy_napi_set_function(env, exports, "serverUnsubscribe", server_unsubscribe, NULL) &&
           sy_napi_set_function(env, exports, "serverSubscribeSince", server_subscribe_since, NULL) &&
           sy_napi_set_function(env, exports, "serverAnswerSubscribe", server_answer_subscribe, NULL) &&
           sy_napi_set_function(env, exports, "serverAnswer", server_answer, NULL) &&
           sy_napi_set_function(env, exports, "serverPosition", server_position, NULL) &&
           sy_napi_set_function(env, exports, "serverTopicHistory", server_topic_history, NULL) &&
           sy_napi_set_function(env, exports, "parseSince", parse_since, NULL) &&
           sy_napi_set_function(env, exports, "serverSubscribers", server_subscribers, NULL) &&
           sy_napi_set_function(env, exports, "serverTopics", server_topics, NULL) &&
           sy_napi_set_function(env, exports, "serverTopicApplied", server_topic_applied, NULL) &&
           sy_napi_set_function(env, exports, "serverTopicEvents", server_topic_events, NULL) &&
           sy_napi_set_function(env, exports, "serverEnd", server_end, NULL) &&
           sy_napi_set_function(env, exports, "serverTerminate", server_terminate, NULL) &&
           sy_napi_set_function(env, exports, "serverAccept", server_accept, NULL) &&
           sy_napi_set_function(env, exports, "serverRefuse", server_refuse, NULL) &&
           sy_napi_set_function(env, exports, "serverPostAnswer", server_post_answer, NULL) &&
           sy_napi_set_function(env, exports, "serverPost", server_post, NULL) &&
           sy_napi_set_function(env, exports, "serverNodeTag", server_node_tag, NULL) &&
           sy_napi_set_function(env, exports, "serverStats", server_stats, NULL) &&
           sy_napi_set_function(env, exports, "serverSetBus", server_set_bus, NULL) &&
           sy_napi_set_function(env, exports, "serverSetPusher", server_set_pusher, NULL) &&
           sy_napi_set_function(env, exports, "serverPublishEvent", server_publish_event, NULL) &&
           sy_napi_set_function(env, exports, "serverBusStats", server_bus_stats, NULL) &&
           sy_napi_set_function(env, exports, "serverBusCall", server_bus_call, NULL) &&
#ifdef SY_WITH_TLS
           sy_napi_set_function(env, exports, "serverSetTls", server_set_tls, NULL) &&
           sy_napi_set_function(env, exports, "serverSetTokens", server_set_tokens, NULL) &&
#endif
           sy_napi_set_function(env, exports, "serverClose", server_close, NULL);
}
