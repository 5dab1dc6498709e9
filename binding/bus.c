/* bus — the bus' part of the binding (src/bus/sy_bus.h); see addon.h. */
#include <stdio.h>
#include <string.h>

#include "addon.h"
#include "base/sy_alloc.h"
#include "bus/sy_bus.h"
#include "bus/sy_bus_seq.h"
#include "sy_napi.h"
#include "sy_server.h"
#ifdef SY_WITH_TLS
#include "tls/sy_bus_tls.h"
#endif

static const char *const STATE_NAMES[] = {"connecting", "up", "down"};

/* What crosses from the bus thread to JS: a state change, a message on
 * the nodes' control channel, or a call's reply (sy_bus_call.h). */
typedef enum { NOTE_STATE, NOTE_CTL, NOTE_REPLY } note_kind_t;

typedef struct bus_note {
    note_kind_t kind;
    sy_bus_state_t state; /* NOTE_STATE */
    double id;            /* NOTE_REPLY: the call's */
    size_t len;           /* bytes (NOTE_STATE: the reason, NUL-terminated) */
    uint8_t bytes[];
} bus_note_t;

static void post(napi_threadsafe_function tsfn, note_kind_t kind, sy_bus_state_t state, double id, const void *p,
                 size_t len) {
    bus_note_t *n = sy_malloc(sizeof(*n) + len + 1);
    if (n == NULL)
        return; /* a state is still in stats().bus; a reply is lost (the call's promise has its deadline in JS) */
    *n = (bus_note_t){.kind = kind, .state = state, .id = id, .len = len};
    if (len > 0)
        memcpy(n->bytes, p, len);
    n->bytes[len] = 0;
    if (napi_call_threadsafe_function(tsfn, n, napi_tsfn_nonblocking) != napi_ok)
        sy_free(n);
}

static void on_state(void *ctx, sy_bus_state_t state, const char *err) {
    post(ctx, NOTE_STATE, state, 0, err, strlen(err));
}

static void on_ctl(void *ctx, const void *data, size_t len) { post(ctx, NOTE_CTL, 0, 0, data, len); }

/* A call's context: where its reply goes. */
typedef struct bus_call_ctx {
    napi_threadsafe_function tsfn;
    double id;
} bus_call_ctx_t;

static void on_reply(void *ctx, uint8_t *reply, size_t len) {
    bus_call_ctx_t *c = ctx;
    post(c->tsfn, NOTE_REPLY, 0, c->id, reply, len);
    sy_free(reply);
    sy_free(c);
}

/* onState(kind, a, b): ('state', name, reason), ('ctl', Buffer), ('reply', id, Buffer). */
static void call_js(napi_env env, napi_value fn, void *context, void *data) {
    (void)context;
    bus_note_t *n = data;
    if (env != NULL) {
        napi_value argv[3], undefined;
        static const char *const KINDS[] = {"state", "ctl", "reply"};
        bool ok = napi_create_string_utf8(env, KINDS[n->kind], NAPI_AUTO_LENGTH, &argv[0]) == napi_ok &&
                  napi_get_undefined(env, &undefined) == napi_ok;
        size_t argc = 3;
        if (ok && n->kind == NOTE_STATE)
            ok = napi_create_string_utf8(env, STATE_NAMES[n->state], NAPI_AUTO_LENGTH, &argv[1]) == napi_ok &&
                 napi_create_string_utf8(env, (const char *)n->bytes, n->len, &argv[2]) == napi_ok;
        else if (ok && n->kind == NOTE_CTL) {
            ok = napi_create_buffer_copy(env, n->len, n->bytes, NULL, &argv[1]) == napi_ok;
            argc = 2;
        } else if (ok)
            ok = napi_create_double(env, n->id, &argv[1]) == napi_ok &&
                 napi_create_buffer_copy(env, n->len, n->bytes, NULL, &argv[2]) == napi_ok;
        if (ok)
            (void)napi_call_function(env, undefined, fn, argc, argv, NULL);
    }
    sy_free(n);
}

napi_value sy_binding_bus_call(napi_env env, sy_server_t *srv, napi_threadsafe_function tsfn, napi_value id_v,
                               napi_value route_v, napi_value args_v) {
    sy_bus_t *bus = sy_server_bus(srv);
    double id = 0;
    uint32_t n = 0;
    bool is = false;
    napi_value result = NULL;
    char *route = NULL, *argv[SY_BUS_CALL_ARGS_MAX] = {0};
    size_t route_len = 0, lens[SY_BUS_CALL_ARGS_MAX];
    /* route null: the control channel: args [message] publishes there
     * (sy_bus_ctl_publish), args [] is its fence (sy_bus_ctl_fence) */
    if (!sy_napi_ok(env, napi_get_value_double(env, id_v, &id), "napi_get_value_double") ||
        !sy_napi_get_string_len(env, route_v, "route", &route, &route_len) ||
        !sy_napi_ok(env, napi_is_array(env, args_v, &is), "napi_is_array") ||
        !sy_napi_ok(env, napi_get_array_length(env, args_v, &n), "napi_get_array_length"))
        goto done;
    if (!is || (n == 0 && route != NULL) || n > SY_BUS_CALL_ARGS_MAX) {
        sy_napi_throw_type(env, "args", "an array of 1 to 64 strings");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        if (!sy_napi_ok(env, napi_get_element(env, args_v, i, &v), "napi_get_element") ||
            !sy_napi_get_string_len(env, v, "args", &argv[i], &lens[i]))
            goto done;
        if (argv[i] == NULL) {
            sy_napi_throw_type(env, "args", "an array of 1 to 64 strings");
            goto done;
        }
    }
    bool queued = false;
    bus_call_ctx_t *c = bus != NULL && tsfn != NULL ? sy_malloc(sizeof(*c)) : NULL;
    if (c != NULL) {
        *c = (bus_call_ctx_t){.tsfn = tsfn, .id = id};
        if (route == NULL)
            queued = (n == 0 ? sy_bus_ctl_fence(bus, on_reply, c)
                             : sy_bus_ctl_publish(bus, argv[0], lens[0], on_reply, c)) == 0;
        else
            queued = sy_bus_call(bus, route, route_len, n, (const char *const *)argv, lens, on_reply, c) == 0;
        if (!queued)
            sy_free(c);
    }
    result = sy_napi_make_bool(env, queued);
done:
    for (uint32_t i = 0; i < n && i < SY_BUS_CALL_ARGS_MAX; i++)
        sy_free(argv[i]);
    sy_free(route);
    return result;
}

/* An array of strings or numbers of length n into out (strings: sy_malloc'ed). */
static bool get_array(napi_env env, napi_value obj, const char *key, uint32_t *n, napi_value *arr) {
    bool is = false;
    return sy_napi_ok(env, napi_get_named_property(env, obj, key, arr), "napi_get_named_property") &&
           sy_napi_ok(env, napi_is_array(env, *arr, &is), "napi_is_array") &&
           (is || (sy_napi_throw_type(env, key, "an array"), false)) &&
           sy_napi_ok(env, napi_get_array_length(env, *arr, n), "napi_get_array_length");
}

/* opts[hkey] and opts[pkey], two arrays of n hosts and ports (0..64), into
 * *hosts (sy_malloc'ed strings, n + 1 slots) and *ports. false: thrown
 * (what was copied is the caller's to free, *n kept). */
static bool get_addrs(napi_env env, napi_value opts, const char *hkey, const char *pkey, const char *name, uint32_t *n,
                      char ***hosts, uint16_t **ports) {
    napi_value hosts_v, ports_v, v;
    uint32_t nh = 0, np = 0;
    *n = 0;
    if (!get_array(env, opts, hkey, &nh, &hosts_v) || !get_array(env, opts, pkey, &np, &ports_v))
        return false;
    if (nh != np || nh > SY_BUS_MAX_SEEDS) {
        sy_napi_throw_type(env, name, "0 to 64 Redis addresses");
        return false;
    }
    *hosts = sy_calloc(nh + 1, sizeof(**hosts));
    *ports = sy_calloc(nh + 1, sizeof(**ports));
    if (*hosts == NULL || *ports == NULL) {
        sy_napi_throw_oom(env, NULL);
        return false;
    }
    *n = nh;
    for (uint32_t i = 0; i < nh; i++) {
        int64_t p;
        if (!sy_napi_ok(env, napi_get_element(env, hosts_v, i, &v), "napi_get_element") ||
            !sy_napi_get_string(env, v, name, &(*hosts)[i]) ||
            !sy_napi_ok(env, napi_get_element(env, ports_v, i, &v), "napi_get_element") ||
            !sy_napi_get_int64(env, v, name, 1, 65535, &p))
            return false;
        if ((*hosts)[i] == NULL) {
            sy_napi_throw_type(env, name, "a host");
            return false;
        }
        (*ports)[i] = (uint16_t)p;
    }
    return true;
}

static void free_addrs(char **hosts, uint16_t *ports, uint32_t n) {
    for (uint32_t i = 0; hosts != NULL && i < n; i++)
        sy_free(hosts[i]);
    sy_free(hosts);
    sy_free(ports);
}

static bool get_named_int(napi_env env, napi_value obj, const char *key, int64_t min, int64_t max, int64_t *out) {
    napi_value v;
    return sy_napi_ok(env, napi_get_named_property(env, obj, key, &v), "napi_get_named_property") &&
           sy_napi_get_int64(env, v, key, min, max, out);
}

/* opts.tls (lib/bus.js normalizes it: { ca, cert, key, passphrase,
 * servername: strings or null, rejectUnauthorized }) as a sy_bus_tls_t in
 * o, or nothing when it is null. False with an exception pending. */
static bool get_tls(napi_env env, napi_value opts, sy_bus_opts_t *o) {
    napi_value v;
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_get_named_property(env, opts, "tls", &v), "napi_get_named_property") ||
        !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_null || t == napi_undefined)
        return true;
#ifdef SY_WITH_TLS
    char *ca = NULL, *cert = NULL, *key = NULL, *pass = NULL, *servername = NULL;
    bool verify = true, ok = false;
    napi_value rv;
    if (sy_napi_get_named_string(env, v, "ca", &ca) && sy_napi_get_named_string(env, v, "cert", &cert) &&
        sy_napi_get_named_string(env, v, "key", &key) && sy_napi_get_named_string(env, v, "passphrase", &pass) &&
        sy_napi_get_named_string(env, v, "servername", &servername) &&
        sy_napi_ok(env, napi_get_named_property(env, v, "rejectUnauthorized", &rv), "napi_get_named_property") &&
        sy_napi_get_bool(env, rv, "bus.tls.rejectUnauthorized", &verify)) {
        sy_tls_cert_t c = {.cert_pem = cert,
                           .cert_len = cert ? strlen(cert) : 0,
                           .key_pem = key,
                           .key_len = key ? strlen(key) : 0,
                           .passphrase = pass};
        char err[SY_ERRLEN] = "";
        sy_bus_tls_t *tls =
            sy_bus_tls_new(ca, ca ? strlen(ca) : 0, cert != NULL ? &c : NULL, servername, verify, err, sizeof(err));
        if (tls == NULL) {
            char msg[SY_ERRLEN + 32];
            snprintf(msg, sizeof(msg), "symphony: bus.tls: %s", err);
            sy_napi_throw(env, "ERR_SYMPHONY_TLS", msg);
        } else {
            o->tls = tls;
            o->tls_attach = sy_bus_tls_attach;
            o->tls_free = sy_bus_tls_free;
            o->tls_error = sy_bus_tls_error;
            ok = true;
        }
    }
    sy_free(ca);
    sy_free(cert);
    sy_free(key);
    sy_free(pass);
    sy_free(servername);
    return ok;
#else
    (void)o;
    sy_napi_throw(env, "ERR_SYMPHONY_TLS", "symphony: bus.tls: this build has no TLS");
    return false;
#endif
}

napi_value sy_binding_bus_set(napi_env env, sy_server_t *srv, napi_value opts, napi_value fn,
                              napi_threadsafe_function *tsfn) {
    napi_value v, name, result = NULL;
    uint32_t nh = 0, ns = 0;
    int64_t max_buffer, connect_timeout, bmin, bmax;
    bool cluster = false;
    char *prefix = NULL, *user = NULL, *pass = NULL, *sname = NULL, *suser = NULL, *spass = NULL;
    char **hosts = NULL, **shosts = NULL;
    uint16_t *ports = NULL, *sports = NULL;
    if (!get_addrs(env, opts, "hosts", "ports", "bus.url", &nh, &hosts, &ports) ||
        !get_addrs(env, opts, "sentinelHosts", "sentinelPorts", "bus.sentinels", &ns, &shosts, &sports))
        goto done;
    if ((nh == 0) == (ns == 0)) {
        sy_napi_throw_type(env, "bus.url", "1 to 64 Redis addresses, or sentinels");
        goto done;
    }
    if (!sy_napi_get_named_string(env, opts, "sentinelName", &sname) ||
        !sy_napi_get_named_string(env, opts, "sentinelUser", &suser) ||
        !sy_napi_get_named_string(env, opts, "sentinelPass", &spass))
        goto done;
    if (!sy_napi_ok(env, napi_get_named_property(env, opts, "cluster", &v), "napi_get_named_property") ||
        !sy_napi_get_bool(env, v, "bus.cluster", &cluster) || !sy_napi_get_named_string(env, opts, "prefix", &prefix) ||
        !sy_napi_get_named_string(env, opts, "user", &user) || !sy_napi_get_named_string(env, opts, "pass", &pass) ||
        !get_named_int(env, opts, "maxBuffer", 1, (int64_t)1 << 40, &max_buffer) ||
        !get_named_int(env, opts, "connectTimeout", 1, 3600000, &connect_timeout) ||
        !get_named_int(env, opts, "backoffMin", 1, 3600000, &bmin) ||
        !get_named_int(env, opts, "backoffMax", 1, 3600000, &bmax))
        goto done;
    if (prefix == NULL) {
        sy_napi_throw_type(env, "bus.prefix", "a string");
        goto done;
    }
    sy_bus_opts_t o = {.hosts = (const char *const *)hosts,
                       .ports = ports,
                       .nseeds = nh,
                       .sentinel_hosts = (const char *const *)shosts,
                       .sentinel_ports = sports,
                       .nsentinels = ns,
                       .sentinel_name = sname,
                       .sentinel_user = suser,
                       .sentinel_pass = spass,
                       .cluster = cluster,
                       .user = user,
                       .pass = pass,
                       .prefix = prefix,
                       .prefix_len = strlen(prefix),
                       .max_buffer = (size_t)max_buffer,
                       .connect_timeout_ms = (unsigned)connect_timeout,
                       .backoff_min_ms = (unsigned)bmin,
                       .backoff_max_ms = (unsigned)bmax};
    if (!get_tls(env, opts, &o))
        goto done;
    if (!sy_napi_ok(env, napi_create_string_utf8(env, "symphony-bus", NAPI_AUTO_LENGTH, &name),
                    "napi_create_string_utf8") ||
        !sy_napi_ok(env, napi_create_threadsafe_function(env, fn, NULL, name, 0, 1, NULL, NULL, NULL, call_js, tsfn),
                    "napi_create_threadsafe_function")) {
        if (o.tls != NULL)
            o.tls_free(o.tls);
        goto done;
    }
    /* The bus never keeps the process alive by itself (the server does). */
    (void)napi_unref_threadsafe_function(env, *tsfn);
    char err[SY_ERRLEN] = "";
    if (sy_server_set_bus(srv, &o, on_state, *tsfn, err, sizeof(err)) == 0)
        sy_bus_set_ctl(sy_server_bus(srv), on_ctl, *tsfn);
    else {
        (void)napi_release_threadsafe_function(*tsfn, napi_tsfn_abort);
        *tsfn = NULL;
        char msg[SY_ERRLEN + 32];
        snprintf(msg, sizeof(msg), "symphony: bus: %s", err);
        sy_napi_throw(env, "ERR_SYMPHONY_BUS", msg);
        goto done;
    }
    (void)napi_get_undefined(env, &result);
done:
    free_addrs(hosts, ports, nh);
    free_addrs(shosts, sports, ns);
    sy_free(sname);
    sy_free(suser);
    sy_free(spass);
    sy_free(prefix);
    sy_free(user);
    sy_free(pass);
    return result;
}

napi_value sy_binding_bus_stats(napi_env env, sy_server_t *srv) {
    sy_bus_stats_t st;
    napi_value o;
    if (!sy_server_bus_stats(srv, &st)) {
        (void)napi_get_null(env, &o);
        return o;
    }
    if (!sy_napi_ok(env, napi_create_object(env, &o), "napi_create_object") ||
        !sy_napi_set_string(env, o, "state", STATE_NAMES[st.state]))
        return NULL;
#define BUS_SET(field, js, metric, type, help)             \
    if (!sy_napi_set_double(env, o, js, (double)st.field)) \
        return NULL;
    SY_BUS_STATS_LIST(BUS_SET)
#undef BUS_SET
    return o;
}

/* busKeyBase(channel) -> the base of the keys beside channel in Redis
 * ('{channel}' or 'channel', sy_bus_seq_wrap): presence's keys share the
 * rule, and the slot, of history's. */
static napi_value bus_key_base(napi_env env, napi_callback_info info) {
    napi_value argv[1], out = NULL;
    size_t argc = 1, len = 0;
    char *channel = NULL;
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL) ||
        !sy_napi_get_string_len(env, argv[0], "channel", &channel, &len))
        return NULL;
    if (channel == NULL) {
        sy_napi_throw_type(env, "channel", "a string");
        return NULL;
    }
    bool wrap = sy_bus_seq_wrap(channel, len);
    char *base = sy_malloc(len + 2);
    if (base == NULL)
        sy_napi_throw_oom(env, NULL);
    else {
        size_t n = 0;
        if (wrap)
            base[n++] = '{';
        memcpy(base + n, channel, len);
        n += len;
        if (wrap)
            base[n++] = '}';
        if (!sy_napi_ok(env, napi_create_string_utf8(env, base, n, &out), "napi_create_string_utf8"))
            out = NULL;
    }
    sy_free(base);
    sy_free(channel);
    return out;
}

/* The bus' counters, by their JS names, from the one list (src/bus/sy_bus.h). */
static const struct {
    const char *name, *metric, *type, *help;
} BUS_FIELDS[] = {
#define BUS_FIELD(field, js, metric, type, help) {js, metric, type, help},
    SY_BUS_STATS_LIST(BUS_FIELD)
#undef BUS_FIELD
};

static bool bus_field_row(napi_env env, const void *ctx, size_t i, napi_value o) {
    (void)ctx;
    return sy_napi_set_string(env, o, "name", BUS_FIELDS[i].name) &&
           sy_napi_set_string(env, o, "metric", BUS_FIELDS[i].metric) &&
           sy_napi_set_string(env, o, "type", BUS_FIELDS[i].type) &&
           sy_napi_set_string(env, o, "help", BUS_FIELDS[i].help);
}

bool sy_binding_bus_init(napi_env env, napi_value exports) {
    return sy_napi_set_rows(env, exports, "busStatFields", sizeof(BUS_FIELDS) / sizeof(BUS_FIELDS[0]), bus_field_row,
                            NULL) &&
           sy_napi_set_function(env, exports, "busKeyBase", bus_key_base, NULL);
}
