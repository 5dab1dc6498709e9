/* server_opts — serverCreate's options into sy_server_opts_t, and their
 * ranges as binding.constants.options. See server.h. */
#include "server.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "io/sy_deflate.h"
#include "proto/sy_cidr.h"
#include "sy_napi.h"

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

/* An optional boolean option: false when absent (undefined). */
static bool opt_flag(napi_env env, napi_value obj, const char *key, bool *out) {
    napi_value v;
    napi_valuetype t;
    *out = false;
    if (!sy_barg_get(env, obj, key, &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    return t == napi_undefined || sy_napi_get_bool(env, v, key, out);
}

/* An integer option within OPTIONS[opt]'s range. */
static bool opt_int(napi_env env, napi_value obj, sy_option_t opt, int64_t *out) {
    napi_value v;
    return sy_barg_get(env, obj, OPTIONS[opt].name, &v) &&
           sy_napi_get_int64(env, v, OPTIONS[opt].name, OPTIONS[opt].min, OPTIONS[opt].max, out);
}

/* opts.proxyProtocol (0 off, 1 required, 2 optional; undefined: off) and
 * opts.proxyProtocolFrom (null or undefined, or an array of at most
 * SY_PROXY_FROM_MAX addresses or CIDR ranges) into o. */
static bool proxy_options(napi_env env, napi_value obj, sy_server_opts_t *o) {
    napi_value v;
    napi_valuetype t;
    int64_t mode = 0;
    if (!sy_barg_get(env, obj, "proxyProtocol", &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t != napi_undefined && !sy_napi_get_int64(env, v, "proxyProtocol", 0, 2, &mode))
        return false;
    o->proxy_protocol = (uint8_t)mode;
    if (!sy_barg_get(env, obj, "proxyProtocolFrom", &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
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
        !sy_barg_get(env, obj, "rateLimit", &v) || !sy_napi_get_int64(env, v, "rateLimit", 0, 1, &close) ||
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

bool sy_bopts_decode(napi_env env, napi_value obj, sy_server_opts_t *o) {
    memset(o, 0, sizeof(*o));
    int64_t port, threads, max_payload, max_bp, slow, idle, hs, close_to, head, headers, backlog, max_conn, max_ev;
    int64_t z_level, z_threshold, h_size, h_ttl, h_bytes, max_frags, ctl_rate, max_subs, max_pending;
    napi_value v;
    bool upgrade = false, reclaim = true, compression = false, tell_tokens = false;
    if (!opt_int(env, obj, OPT_port, &port) || !opt_int(env, obj, OPT_threads, &threads) ||
        !opt_int(env, obj, OPT_maxPayload, &max_payload) || !opt_int(env, obj, OPT_maxBackpressure, &max_bp) ||
        !opt_int(env, obj, OPT_maxFragments, &max_frags) || !opt_int(env, obj, OPT_controlRate, &ctl_rate) ||
        !sy_barg_get(env, obj, "slowConsumer", &v) || !sy_napi_get_int64(env, v, "slowConsumer", 0, 2, &slow) ||
        !opt_int(env, obj, OPT_idleTimeout, &idle) || !opt_int(env, obj, OPT_handshakeTimeout, &hs) ||
        !opt_int(env, obj, OPT_closeTimeout, &close_to) || !opt_int(env, obj, OPT_maxHeaderSize, &head) ||
        !opt_int(env, obj, OPT_maxHeaders, &headers) || !opt_int(env, obj, OPT_backlog, &backlog) ||
        !opt_int(env, obj, OPT_maxConnections, &max_conn) || !opt_int(env, obj, OPT_maxEventBytes, &max_ev) ||
        !sy_barg_get(env, obj, "upgradeHandler", &v) || !sy_napi_get_bool(env, v, "upgradeHandler", &upgrade) ||
        !sy_barg_get(env, obj, "reclaim", &v) || !sy_napi_get_bool(env, v, "reclaim", &reclaim) ||
        !opt_flag(env, obj, "tellTokenSubscribes", &tell_tokens) || !sy_barg_get(env, obj, "compression", &v) ||
        !sy_napi_get_bool(env, v, "compression", &compression) || !opt_int(env, obj, OPT_compressLevel, &z_level) ||
        !opt_int(env, obj, OPT_compressThreshold, &z_threshold) || !opt_int(env, obj, OPT_historySize, &h_size) ||
        !opt_int(env, obj, OPT_historyTtl, &h_ttl) || !opt_int(env, obj, OPT_historyMaxBytes, &h_bytes) ||
        !opt_int(env, obj, OPT_maxSubscriptions, &max_subs) || !opt_int(env, obj, OPT_maxPending, &max_pending))
        return false;
    char *host = NULL, *path = NULL;
    if (!sy_napi_get_named_string(env, obj, "host", &host) || !sy_napi_get_named_string(env, obj, "path", &path)) {
        sy_free(host);
        return false;
    }
    *o = (sy_server_opts_t){
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
    return proxy_options(env, obj, o) && limit_opts(env, obj, o);
}

bool sy_bopts_int(napi_env env, napi_value v, const char *option, const char *name, int64_t *out) {
    for (size_t i = 0; i < OPT_COUNT; i++)
        if (strcmp(OPTIONS[i].name, option) == 0)
            return sy_napi_get_int64(env, v, name, OPTIONS[i].min, OPTIONS[i].max, out);
    sy_napi_throw(env, "ERR_SYMPHONY_NAPI", "symphony: no such option");
    return false;
}

bool sy_bopts_init(napi_env env, napi_value exports, napi_value constants) {
    (void)exports;
    napi_value opts;
    if (!sy_napi_ok(env, napi_create_object(env, &opts), "napi_create_object"))
        return false;
    for (size_t i = 0; i < OPT_COUNT; i++) {
        napi_value r;
        if (!sy_napi_ok(env, napi_create_object(env, &r), "napi_create_object") ||
            !sy_napi_set_int64(env, r, "min", OPTIONS[i].min) || !sy_napi_set_int64(env, r, "max", OPTIONS[i].max) ||
            !sy_napi_ok(env, napi_object_freeze(env, r), "napi_object_freeze") ||
            !sy_napi_set_value(env, opts, OPTIONS[i].name, r))
            return false;
    }
    return sy_napi_ok(env, napi_object_freeze(env, opts), "napi_object_freeze") &&
           sy_napi_set_value(env, constants, "options", opts);
}
