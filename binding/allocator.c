/* allocator — exports.allocator: src/base/sy_alloc.h seen from JS. JS thread only.
 * Argument shapes are checked again in lib/allocator.js, which gives the
 * friendlier API; these checks keep the native side safe on its own. */
#include "addon.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "bus/sy_redis_alloc.h"
#include "io/model/sy_deflate.h"
#include "sy_napi.h"
#ifdef SY_WITH_TLS
#include "tls/sy_tls.h"
#endif

/* setDecay's range, exported as binding.allocator.DECAY_MS_MIN/MAX: jemalloc
 * takes -1 (never) up to SSIZE_MAX; a day is plenty. */
#define SY_DECAY_MS_MIN (-1)
#define SY_DECAY_MS_MAX 86400000

static napi_value make_null(napi_env env) {
    napi_value v;
    if (!sy_napi_ok(env, napi_get_null(env, &v), "napi_get_null"))
        return NULL;
    return v;
}

/* Throws for an errno from sy_alloc; returns false so callers can chain. */
static bool alloc_ok(napi_env env, int rc, const char *what) {
    if (rc == 0)
        return true;
    char msg[160];
    snprintf(msg, sizeof(msg), "symphony: allocator %s failed: %s", what, sy_strerror(rc));
    sy_napi_throw(env, rc == ENOTSUP ? "ERR_SYMPHONY_NOT_SUPPORTED" : "ERR_SYMPHONY_ALLOCATOR", msg);
    return false;
}

/* rc checked as alloc_ok does, then a new object into *obj. */
static bool alloc_object(napi_env env, int rc, const char *what, napi_value *obj) {
    return alloc_ok(env, rc, what) && sy_napi_ok(env, napi_create_object(env, obj), "napi_create_object");
}

static napi_value stats(napi_env env, napi_callback_info info) {
    (void)info;
    sy_alloc_stats_t s;
    napi_value obj;
    if (!alloc_object(env, sy_alloc_stats(&s), "stats", &obj) ||
        !sy_napi_set_stat(env, obj, "allocated", s.allocated) || !sy_napi_set_stat(env, obj, "active", s.active) ||
        !sy_napi_set_stat(env, obj, "resident", s.resident) || !sy_napi_set_stat(env, obj, "mapped", s.mapped) ||
        !sy_napi_set_stat(env, obj, "retained", s.retained) || !sy_napi_set_stat(env, obj, "metadata", s.metadata) ||
        !sy_napi_set_stat(env, obj, "cached", s.cached))
        return NULL;
    return obj;
}

/* arenaStats() -> [{ arena, active, dirty, muzzy, resident }] for every arena
 * that exists, or null in the system build. */
static napi_value arena_stats(napi_env env, napi_callback_info info) {
    (void)info;
    sy_alloc_config_t c;
    sy_alloc_stats_t total;
    napi_value arr;
    if (sy_alloc_config(&c) != 0)
        return make_null(env);
    if (!alloc_ok(env, sy_alloc_stats(&total), "stats") || /* advances the epoch once */
        !sy_napi_ok(env, napi_create_array(env, &arr), "napi_create_array"))
        return NULL;
    uint32_t n = 0;
    for (unsigned i = 0; i < c.arenas; i++) {
        sy_alloc_arena_stats_t a;
        napi_value o;
        if (sy_alloc_arena_stats(i, false, &a) != 0)
            continue; /* an arena index never initialized */
        if (!sy_napi_ok(env, napi_create_object(env, &o), "napi_create_object") ||
            !sy_napi_set_stat(env, o, "arena", i) || !sy_napi_set_stat(env, o, "active", a.active) ||
            !sy_napi_set_stat(env, o, "dirty", a.dirty) || !sy_napi_set_stat(env, o, "muzzy", a.muzzy) ||
            !sy_napi_set_stat(env, o, "resident", a.resident) ||
            !sy_napi_ok(env, napi_set_element(env, arr, n++, o), "napi_set_element"))
            return NULL;
    }
    return arr;
}

typedef struct report_buf {
    char *data;
    size_t len, cap;
    bool oom;
} report_buf_t;

static void report_write(void *ctx, const char *chunk) {
    report_buf_t *b = ctx;
    size_t n = strlen(chunk);
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = sy_realloc(b->data, cap);
        if (d == NULL) {
            b->oom = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, chunk, n + 1);
    b->len += n;
}

/* report(json, opts) -> string (jemalloc's malloc_stats_print), or null in
 * the system build. */
static napi_value report(napi_env env, napi_callback_info info) {
    napi_value argv[2], out;
    size_t argc = 2;
    bool json = false;
    char opts[16] = "";
    size_t olen = 0;
    if (!sy_napi_args(env, info, 2, &argc, argv, NULL) || !sy_napi_get_bool(env, argv[0], "json", &json) ||
        !sy_napi_ok(env, napi_get_value_string_utf8(env, argv[1], opts, sizeof(opts), &olen),
                    "napi_get_value_string_utf8"))
        return NULL;
    report_buf_t b = {0};
    int rc = sy_alloc_report(report_write, &b, json, opts);
    if (rc == ENOTSUP) {
        sy_free(b.data);
        return make_null(env);
    }
    if (b.oom)
        rc = ENOMEM;
    bool ok = alloc_ok(env, rc, "report") &&
              sy_napi_ok(env, napi_create_string_utf8(env, b.data != NULL ? b.data : "", b.len, &out),
                         "napi_create_string_utf8");
    sy_free(b.data);
    return ok ? out : NULL;
}

/* config() -> object, or null in the system build. */
static napi_value config(napi_env env, napi_callback_info info) {
    (void)info;
    sy_alloc_config_t c;
    int rc = sy_alloc_config(&c);
    if (rc == ENOTSUP)
        return make_null(env);
    napi_value obj;
    if (!alloc_object(env, rc, "config", &obj))
        return NULL;
    if (!sy_napi_set_int64(env, obj, "pageSize", (int64_t)c.page_size) ||
        !sy_napi_set_int64(env, obj, "narenas", (int64_t)c.narenas) ||
        !sy_napi_set_int64(env, obj, "arenas", (int64_t)c.arenas) ||
        !sy_napi_set_int64(env, obj, "createdArenas", (int64_t)c.created_arenas) ||
        !sy_napi_set_int64(env, obj, "dirtyDecayMs", c.dirty_decay_ms) ||
        !sy_napi_set_int64(env, obj, "muzzyDecayMs", c.muzzy_decay_ms) ||
        !sy_napi_set_bool(env, obj, "backgroundThread", c.background_thread) ||
        !sy_napi_set_string(env, obj, "thp", c.thp) ||
        !sy_napi_set_string(env, obj, "metadataThp", c.metadata_thp_known ? c.metadata_thp : NULL) ||
        !sy_napi_set_string(env, obj, "builtinConf", c.builtin_conf) ||
        !sy_napi_set_string(env, obj, "envConf", c.env_conf))
        return NULL;
    return obj;
}

#ifdef SY_WITH_TLS
/* OpenSSL initialised (once per process, its memory routed to sy_alloc);
 * false with a JS error thrown. */
static bool tls_ready(napi_env env) {
    char err[160] = "";
    if (sy_tls_global_init(err, sizeof(err)) == 0)
        return true;
    sy_napi_throw(env, "ERR_SYMPHONY_TLS", err);
    return false;
}
#endif

/* A library's memory must come through sy_alloc: an object it makes (by
 * make, freed by drop) is owned by our jemalloc, or (system build) counted
 * by sy_alloc. Sets obj.<lib>Routed and obj.<lib>IsJemalloc. */
static bool routed_probe(napi_env env, napi_value obj, void *(*make)(void), void (*drop)(void *), const char *lib) {
    sy_alloc_stats_t s0, s1;
    bool counted = sy_alloc_stats(&s0) == 0;
    void *p = make();
    if (p == NULL) {
        char what[32];
        snprintf(what, sizeof(what), "%s probe", strcmp(lib, "redis") == 0 ? "hiredis" : lib);
        sy_napi_throw_oom(env, what);
        return false;
    }
    counted = counted && sy_alloc_stats(&s1) == 0 && s1.allocated > s0.allocated;
    unsigned arena = 0;
    bool owned = sy_alloc_owner(p, &arena) == 0;
    drop(p);
#ifdef SY_USE_JEMALLOC
    bool routed = owned;
#else
    bool routed = counted;
#endif
    char routed_key[32], owned_key[32];
    snprintf(routed_key, sizeof(routed_key), "%sRouted", lib);
    snprintf(owned_key, sizeof(owned_key), "%sIsJemalloc", lib);
    return sy_napi_set_bool(env, obj, routed_key, routed) && sy_napi_set_bool(env, obj, owned_key, owned);
}

static napi_value self_check(napi_env env, napi_callback_info info) {
    (void)info;
    sy_alloc_check_t c;
    napi_value obj;
    if (!alloc_object(env, sy_alloc_self_check(&c), "self-check", &obj) ||
        !sy_napi_set_bool(env, obj, "jemallocLinked", c.jemalloc_linked) ||
        !sy_napi_set_bool(env, obj, "oursIsJemalloc", c.ours_is_jemalloc) ||
        !sy_napi_set_stat(env, obj, "oursArena", c.ours_is_jemalloc ? (int64_t)c.ours_arena : -1) ||
        !sy_napi_set_bool(env, obj, "libcIsJemalloc", c.libc_is_jemalloc) ||
        !sy_napi_set_int64(env, obj, "probeSize", (int64_t)c.probe_size))
        return NULL;
#ifdef SY_WITH_TLS
    /* OpenSSL's memory: an object OpenSSL allocates must come through
     * sy_alloc (its counter moves) and, in the jemalloc build, be owned by
     * our jemalloc (arenas.lookup). */
    if (!tls_ready(env))
        return NULL;
    uint64_t before = sy_tls_allocations();
    void *probe = sy_tls_probe_new();
    if (probe == NULL) {
        sy_napi_throw_oom(env, "TLS probe");
        return NULL;
    }
    bool routed = sy_tls_allocations() > before;
    unsigned arena = 0;
    bool owned = sy_alloc_owner(probe, &arena) == 0;
    sy_tls_probe_free(probe);
    if (!sy_napi_set_bool(env, obj, "tlsLinked", true) || !sy_napi_set_bool(env, obj, "tlsRouted", routed) ||
        !sy_napi_set_bool(env, obj, "tlsIsJemalloc", owned) ||
        !sy_napi_set_stat(env, obj, "tlsArena", owned ? (int64_t)arena : -1))
        return NULL;
#else
    if (!sy_napi_set_bool(env, obj, "tlsLinked", false))
        return NULL;
#endif
    /* libdeflate's memory (permessage-deflate): a decompressor made as the
     * IO threads make theirs; hiredis' (the Redis bus): a reply reader made
     * by hiredis, as each bus connection makes one
     * (hiredisSetAllocators, set when the addon loaded). */
    if (!routed_probe(env, obj, sy_deflate_probe_new, sy_deflate_probe_free, "deflate") ||
        !routed_probe(env, obj, sy_redis_alloc_probe_new, sy_redis_alloc_probe_free, "redis"))
        return NULL;
    return obj;
}

/* tlsInfo() -> { version, allocated, allocations } or null (no TLS built in):
 * OpenSSL's version, and the bytes it holds and allocations it made through
 * symphony's allocator. */
static napi_value tls_info(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value obj;
#ifdef SY_WITH_TLS
    if (!tls_ready(env))
        return NULL;
    if (!sy_napi_ok(env, napi_create_object(env, &obj), "napi_create_object") ||
        !sy_napi_set_string(env, obj, "version", sy_tls_version()) ||
        !sy_napi_set_int64(env, obj, "allocated", sy_tls_allocated()) ||
        !sy_napi_set_int64(env, obj, "allocations", (int64_t)sy_tls_allocations()))
        return NULL;
#else
    if (!sy_napi_ok(env, napi_get_null(env, &obj), "napi_get_null"))
        return NULL;
#endif
    return obj;
}

/* The answer of a tuning call: true done, false not supported by this
 * build (the system allocator), or a thrown error. */
static napi_value supported(napi_env env, int rc, const char *what) {
    if (rc == ENOTSUP)
        return sy_napi_make_bool(env, false);
    if (!alloc_ok(env, rc, what))
        return NULL;
    return sy_napi_make_bool(env, true);
}

/* purge() -> true, or false when the allocator cannot purge (system). */
static napi_value purge(napi_env env, napi_callback_info info) {
    (void)info;
    return supported(env, sy_alloc_purge(), "purge");
}

/* setDecay(dirtyMs, muzzyMs) -> true, or false in the system build. */
static napi_value set_decay(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    size_t argc = 2;
    int64_t dirty = 0, muzzy = 0;
    if (!sy_napi_args(env, info, 2, &argc, argv, NULL) ||
        !sy_napi_get_int64(env, argv[0], "dirtyMs", SY_DECAY_MS_MIN, SY_DECAY_MS_MAX, &dirty) ||
        !sy_napi_get_int64(env, argv[1], "muzzyMs", SY_DECAY_MS_MIN, SY_DECAY_MS_MAX, &muzzy))
        return NULL;
    return supported(env, sy_alloc_set_decay(dirty, muzzy), "setDecay");
}

/* backgroundThread(on) -> true, or false in the system build. */
static napi_value background_thread(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    size_t argc = 1;
    bool on = false;
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL) || !sy_napi_get_bool(env, argv[0], "enabled", &on))
        return NULL;
    return supported(env, sy_alloc_background_thread(on), "backgroundThread");
}

bool sy_binding_allocator_init(napi_env env, napi_value exports) {
    napi_value obj;
    if (!sy_napi_ok(env, napi_create_object(env, &obj), "napi_create_object"))
        return false;
    sy_alloc_config_t c;
    int64_t page = sy_alloc_config(&c) == 0 ? (int64_t)c.page_size : -1;
    return sy_napi_set_string(env, obj, "name", sy_alloc_name()) &&
           sy_napi_set_string(env, obj, "version", sy_alloc_version()) &&
           sy_napi_set_string(env, obj, "build", sy_alloc_build()) && sy_napi_set_stat(env, obj, "pageSize", page) &&
           sy_napi_set_int64(env, obj, "DECAY_MS_MIN", SY_DECAY_MS_MIN) &&
           sy_napi_set_int64(env, obj, "DECAY_MS_MAX", SY_DECAY_MS_MAX) &&
           sy_napi_set_function(env, obj, "stats", stats, NULL) &&
           sy_napi_set_function(env, obj, "arenaStats", arena_stats, NULL) &&
           sy_napi_set_function(env, obj, "report", report, NULL) &&
           sy_napi_set_function(env, obj, "config", config, NULL) &&
           sy_napi_set_function(env, obj, "selfCheck", self_check, NULL) &&
           sy_napi_set_function(env, obj, "tlsInfo", tls_info, NULL) &&
           sy_napi_set_function(env, obj, "purge", purge, NULL) &&
           sy_napi_set_function(env, obj, "setDecay", set_decay, NULL) &&
           sy_napi_set_function(env, obj, "backgroundThread", background_thread, NULL) &&
           sy_napi_set_value(env, exports, "allocator", obj);
}
