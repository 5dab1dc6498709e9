/* server_stats — serverStats, and what binding/ exports as data:
 * binding.statFields (from src/io/model/sy_stats.h's one list) and
 * binding.constants (the calls' limits, the event codes, and the options'
 * ranges from server_opts.c). See server.h. */
#include "server.h"

#include "sy_napi.h"

/* Every counter of sy_stats_t (all uint64_t), by its JS name, from the one
 * list (src/io/model/sy_stats.h): for the per-thread objects and the totals (a sum,
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
        if (!sy_bval_set_u64(env, *out, STAT_FIELDS[i].name, *stat_field(t, i)))
            return false;
    return true;
}

/* serverStats(handle) -> { total fields..., topics, threads: [...] } */
napi_value server_stats(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!sy_bcall(env, info, &c, NULL, 0))
        return NULL;
    sy_bserver_t *b = c.b;
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
    if (!thread_stats_object(env, &sum, &total) ||
        !sy_bval_set_u64(env, total, "topics", sy_server_topic_count(b->srv)) ||
        !sy_bval_set_u64(env, total, "historyMessages", h_count) ||
        !sy_bval_set_u64(env, total, "historyBytes", h_bytes) ||
        !sy_bval_set_u64(env, total, "addresses", sy_server_address_count(b->srv)) ||
        !sy_napi_set_value(env, total, "threads", arr))
        return NULL;
    return total;
}

/* binding.statFields: [{ name, aggregate: 'sum'|'max', metric, type, scale,
 * help }] in the list's order, frozen. */
static bool stat_field_row(napi_env env, const void *ctx, size_t i, napi_value o) {
    (void)ctx;
    return sy_napi_set_string(env, o, "name", STAT_FIELDS[i].name) &&
           sy_napi_set_string(env, o, "aggregate", STAT_FIELDS[i].max ? "max" : "sum") &&
           sy_napi_set_string(env, o, "metric", STAT_FIELDS[i].metric) &&
           sy_napi_set_string(env, o, "type", STAT_FIELDS[i].type) &&
           sy_napi_set_double(env, o, "scale", STAT_FIELDS[i].scale) &&
           sy_napi_set_string(env, o, "help", STAT_FIELDS[i].help);
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
    SY_CONSTANT(EV_POST),           SY_CONSTANT(EV_PUSHER),
    SY_CONSTANT(EV_PUSHER_HOOK),    SY_CONSTANT(EV_TOPIC_ON),
};
#undef SY_CONSTANT

/* binding.constants, frozen: the limits the calls above check and the event
 * codes the events' callback receives, so that lib/ does not restate them
 * (sodium-native's way). The C checks stay: lib/ checks first only to name
 * the user's option in its messages. */
static bool export_constants(napi_env env, napi_value exports) {
    napi_value c;
    if (!sy_napi_ok(env, napi_create_object(env, &c), "napi_create_object"))
        return false;
    for (size_t i = 0; i < sizeof(CONSTANTS) / sizeof(CONSTANTS[0]); i++)
        if (!sy_napi_set_int64(env, c, CONSTANTS[i].name, CONSTANTS[i].value))
            return false;
    return sy_bopts_init(env, exports, c) && sy_napi_ok(env, napi_object_freeze(env, c), "napi_object_freeze") &&
           sy_napi_set_value(env, exports, "constants", c);
}

bool sy_bstats_init(napi_env env, napi_value exports) {
    return sy_napi_set_rows(env, exports, "statFields", STAT_COUNT, stat_field_row, NULL) &&
           export_constants(env, exports) && sy_napi_set_function(env, exports, "serverStats", server_stats, NULL);
}
