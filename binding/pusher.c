/*
 * pusher — serverSetPusher's work (binding/addon.h): the `pusher` option,
 * checked and filled by lib/pusher/config.js, made into the native table of
 * apps (auth/sy_pusher_auth.h) and the protocol's settings
 * (io/app/sy_pusher_conn.h), set on the server before it starts. JS thread.
 */
#include <errno.h>
#include <string.h>

#include "addon.h"
#include "base/sy_alloc.h"
#include "sy_napi.h"
#include "sy_server.h"

#ifdef SY_WITH_TLS
#include "auth/sy_pusher_auth.h"
#include "io/app/sy_pusher_conn.h"

static bool get_prop(napi_env env, napi_value obj, const char *key, napi_value *out) {
    return sy_napi_ok(env, napi_get_named_property(env, obj, key, out), "napi_get_named_property");
}

/* obj[key], an integer within [min, max] (undefined: dflt). */
static bool get_int(napi_env env, napi_value obj, const char *key, int64_t min, int64_t max, int64_t dflt,
                    int64_t *out) {
    napi_value v;
    napi_valuetype t;
    if (!get_prop(env, obj, key, &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_undefined || t == napi_null) {
        *out = dflt;
        return true;
    }
    return sy_napi_get_int64(env, v, key, min, max, out);
}

static bool get_flag(napi_env env, napi_value obj, const char *key, bool dflt, bool *out) {
    napi_value v;
    napi_valuetype t;
    if (!get_prop(env, obj, key, &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_undefined) {
        *out = dflt;
        return true;
    }
    return sy_napi_get_bool(env, v, key, out);
}

/* One app of opts.apps into t: its limits from the app and opts. */
static bool app_in(napi_env env, napi_value opts, napi_value a, sy_pusher_apps_t *t, char **id, size_t *id_len,
                   bool *enabled, bool *user_auth, uint32_t *hooks) {
    sy_pusher_app_opts_t o;
    sy_pusher_app_opts_default(&o);
    int64_t max_conns, per_sec, chan, ev, bytes, per_event, batch, members, member_bytes, hook_bits;
    bool client;
    if (!get_int(env, a, "maxConnections", 0, UINT32_MAX, 0, &max_conns) ||
        !get_int(env, a, "maxClientEventsPerSecond", 0, UINT32_MAX, 10, &per_sec) ||
        !get_flag(env, a, "enableClientMessages", false, &client) || !get_flag(env, a, "enabled", true, enabled) ||
        !get_flag(env, a, "enableUserAuthentication", false, user_auth) ||
        !get_int(env, a, "hookEvents", 0, UINT32_MAX, 0, &hook_bits) ||
        !get_int(env, opts, "maxChannelNameLength", 1, 1024, 200, &chan) ||
        !get_int(env, opts, "maxEventNameLength", 1, 1024, 200, &ev) ||
        !get_int(env, opts, "maxEventBytes", 1, 64 << 20, 10240, &bytes) ||
        !get_int(env, opts, "maxChannelsPerEvent", 1, 1000, 100, &per_event) ||
        !get_int(env, opts, "maxBatchSize", 1, 1000, 10, &batch) ||
        !get_int(env, opts, "maxPresenceMembers", 1, 1 << 20, 100, &members) ||
        !get_int(env, opts, "maxPresenceMemberBytes", 1, 1 << 20, 1024, &member_bytes))
        return false;
    *hooks = (uint32_t)hook_bits;
    o.max_connections = (uint32_t)max_conns;
    o.client_events = client;
    o.client_events_per_sec = (uint32_t)per_sec;
    o.max_channel_len = (uint32_t)chan;
    o.max_event_len = (uint32_t)ev;
    o.max_payload = (uint32_t)bytes;
    o.max_channels_per_event = (uint32_t)per_event;
    o.max_batch = (uint32_t)batch;
    o.max_presence_members = (uint32_t)members;
    o.max_member_info = (uint32_t)member_bytes;
    napi_value v, secrets;
    char *key = NULL, err[SY_ERRLEN] = "";
    size_t key_len = 0;
    uint32_t nsecrets = 0;
    sy_pusher_app_t *app = NULL;
    bool ok = get_prop(env, a, "id", &v) && sy_napi_get_string_len(env, v, "id", id, id_len) && *id != NULL &&
              get_prop(env, a, "key", &v) && sy_napi_get_string_len(env, v, "key", &key, &key_len) && key != NULL &&
              get_prop(env, a, "secrets", &secrets) &&
              sy_napi_ok(env, napi_get_array_length(env, secrets, &nsecrets), "napi_get_array_length");
    if (ok && sy_pusher_apps_add(t, *id, *id_len, &o, &app, err, sizeof(err)) != 0) {
        sy_napi_throw(env, "ERR_SYMPHONY_PUSHER", err);
        ok = false;
    }
    for (uint32_t i = 0; ok && i < nsecrets; i++) {
        char *secret = NULL;
        size_t secret_len = 0;
        ok = sy_napi_ok(env, napi_get_element(env, secrets, i, &v), "napi_get_element") &&
             sy_napi_get_string_len(env, v, "secret", &secret, &secret_len) && secret != NULL;
        if (ok && sy_pusher_app_add_key(t, app, key, key_len, secret, secret_len, err, sizeof(err)) != 0) {
            sy_napi_throw(env, "ERR_SYMPHONY_PUSHER", err);
            ok = false;
        }
        sy_free(secret);
    }
    sy_free(key);
    return ok;
}

napi_value sy_binding_pusher_set(napi_env env, struct sy_server *srv, napi_value opts) {
    napi_value apps_v, v, result = NULL;
    uint32_t napps = 0;
    int64_t activity, user_timeout, cache_ttl;
    char *prefix = NULL;
    size_t prefix_len = 0;
    if (!get_prop(env, opts, "apps", &apps_v) ||
        !sy_napi_ok(env, napi_get_array_length(env, apps_v, &napps), "napi_get_array_length") ||
        !get_int(env, opts, "activityTimeout", 1, 3600, 120, &activity) ||
        !get_int(env, opts, "userAuthenticationTimeout", 0, 86400000, 30000, &user_timeout) ||
        !get_int(env, opts, "cacheTtl", 0, 31 * 86400, 1800, &cache_ttl) || !get_prop(env, opts, "pathPrefix", &v) ||
        !sy_napi_get_string_len(env, v, "pathPrefix", &prefix, &prefix_len))
        return NULL;
    if (napps == 0 || napps > 1024) {
        sy_free(prefix);
        sy_napi_throw_type(env, "pusher.apps", "an array of 1 to 1024 apps");
        return NULL;
    }
    sy_pusher_apps_t *t = sy_pusher_apps_new();
    char **ids = sy_calloc(napps, sizeof(*ids));
    size_t *id_lens = sy_calloc(napps, sizeof(*id_lens));
    bool *enabled = sy_calloc(napps, sizeof(*enabled));
    bool *user_auth = sy_calloc(napps, sizeof(*user_auth));
    uint32_t *hooks = sy_calloc(napps, sizeof(*hooks));
    if (t == NULL || ids == NULL || id_lens == NULL || enabled == NULL || user_auth == NULL || hooks == NULL) {
        sy_napi_throw_oom(env, "pusher");
        goto done;
    }
    for (uint32_t i = 0; i < napps; i++)
        if (!sy_napi_ok(env, napi_get_element(env, apps_v, i, &v), "napi_get_element") ||
            !app_in(env, opts, v, t, &ids[i], &id_lens[i], &enabled[i], &user_auth[i], &hooks[i]))
            goto done;
    sy_pusher_cfg_t cfg = {.path_prefix = prefix != NULL ? prefix : "",
                           .path_prefix_len = prefix_len,
                           .activity_timeout_s = (unsigned)activity,
                           .cache_ttl_s = (unsigned)cache_ttl,
                           .app_ids = (const char *const *)ids,
                           .app_id_lens = id_lens,
                           .enabled = enabled,
                           .user_auth = user_auth,
                           .hooks = hooks,
                           .napps = napps,
                           .user_auth_timeout_ms = (unsigned)user_timeout};
    uint64_t node = 0;
    char err[SY_ERRLEN] = "";
    if (sy_server_set_pusher(srv, t, &cfg, &node, err, sizeof(err)) != 0) {
        sy_napi_throw(env, "ERR_SYMPHONY_PUSHER", err);
        goto done;
    }
    /* The node is below 2^53: a JS number holds it exactly. */
    (void)sy_napi_ok(env, napi_create_int64(env, (int64_t)node, &result), "napi_create_int64");
done:
    for (uint32_t i = 0; ids != NULL && i < napps; i++)
        sy_free(ids[i]);
    sy_free(ids);
    sy_free(id_lens);
    sy_free(enabled);
    sy_free(user_auth);
    sy_free(hooks);
    sy_free(prefix);
    if (t != NULL)
        sy_pusher_apps_unref(t); /* the server holds its own reference */
    return result;
}

#endif

/* Bytes of a string or a Buffer / TypedArray (lib/pusher/server.js gives
 * nothing else), valid during the call: a string copied into *owned. */
static bool bytes_of(napi_env env, napi_value v, const char *name, const void **p, size_t *len, char **owned) {
    bool is_buf = false;
    *owned = NULL;
    if (!sy_napi_ok(env, napi_is_buffer(env, v, &is_buf), "napi_is_buffer"))
        return false;
    if (is_buf) {
        void *d = NULL;
        if (!sy_napi_ok(env, napi_get_buffer_info(env, v, &d, len), "napi_get_buffer_info"))
            return false;
        *p = d;
        return true;
    }
    if (!sy_napi_get_string_len(env, v, name, owned, len))
        return false;
    *p = *owned != NULL ? *owned : "";
    return true;
}

napi_value sy_binding_publish_event(napi_env env, struct sy_server *srv, napi_value *argv) {
    const void *topic, *data, *event;
    size_t topic_len, len, event_len, n = 0;
    char *o1 = NULL, *o2 = NULL, *o3 = NULL;
    int64_t flags;
    napi_value result = NULL;
    if (bytes_of(env, argv[0], "topic", &topic, &topic_len, &o1) && bytes_of(env, argv[1], "data", &data, &len, &o2) &&
        sy_napi_get_int64(env, argv[2], "flags", 0, SY_SEND_BINARY | SY_SEND_COMPRESS | SY_SEND_LOCAL, &flags) &&
        bytes_of(env, argv[3], "event", &event, &event_len, &o3)) {
        sy_pub_extra_t x = {.meta = event, .meta_len = event_len};
        sy_err_t rc = sy_server_publish_x(srv, topic, topic_len, data, len, (unsigned)flags | SY_SEND_LATER, &x, &n);
        if (rc == EINVAL)
            sy_napi_throw_range(env, "options.event", "1 to 1024 bytes");
        else if (rc != 0)
            sy_napi_throw_oom(env, NULL);
        else
            (void)sy_napi_ok(env, napi_create_int64(env, (int64_t)n, &result), "napi_create_int64");
    }
    sy_free(o1);
    sy_free(o2);
    sy_free(o3);
    return result;
}

#ifndef SY_WITH_TLS

napi_value sy_binding_pusher_set(napi_env env, struct sy_server *srv, napi_value opts) {
    (void)srv;
    (void)opts;
    sy_napi_throw(env, "ERR_SYMPHONY_PUSHER", "symphony: pusher needs a build with OpenSSL");
    return NULL;
}

#endif
