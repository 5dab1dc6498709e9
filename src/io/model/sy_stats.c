/* sy_stats — see sy_stats.h. */
#include "io/model/sy_stats.h"

void sy_stats_live_init(sy_stats_live_t *s) {
#define SY_STAT_INIT(field, js, agg, metric, type, scale, help) atomic_init(&s->field, 0);
    SY_STATS_LIST(SY_STAT_INIT)
#undef SY_STAT_INIT
    atomic_init(&s->arena, -1);
    atomic_init(&s->conn_arena, -1);
}

void sy_stats_snapshot(const sy_stats_live_t *s, sy_stats_t *out) {
#define SY_STAT_LOAD(field, js, agg, metric, type, scale, help) \
    out->field = atomic_load_explicit(&s->field, memory_order_relaxed);
    SY_STATS_LIST(SY_STAT_LOAD)
#undef SY_STAT_LOAD
    out->arena = atomic_load_explicit(&s->arena, memory_order_relaxed);
    out->conn_arena = atomic_load_explicit(&s->conn_arena, memory_order_relaxed);
}
