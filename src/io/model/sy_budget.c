/* sy_budget — see sy_budget.h. */
#include "io/model/sy_budget.h"

#define NS_PER_S INT64_C(1000000000)

sy_err_t sy_budget_init(sy_budget_t *b, uint64_t per_s, uint64_t burst) {
    *b = (sy_budget_t){0};
    if (per_s == 0)
        return 0;
    sy_err_t err = sy_rate_bounds(per_s, &burst); /* a rate's bounds */
    if (err != 0)
        return err;
    b->per_s = per_s;
    /* burst / per_s seconds (at most 60), in two parts: whole seconds, then
     * the rest (below per_s <= 2^32, so times 1e9 fits). */
    b->limit_ns = (int64_t)(burst / per_s) * NS_PER_S + (int64_t)((burst % per_s) * (uint64_t)NS_PER_S / per_s);
    if (b->limit_ns < 1)
        b->limit_ns = 1;
    b->grace_ns = b->limit_ns;
    return 0;
}

int64_t sy_budget_cost(const sy_budget_t *b, uint64_t n) {
    if (b->per_s == 0)
        return 0;
    int64_t cap = b->limit_ns + b->grace_ns; /* <= 120 s of ns */
    /* n * 1e9 / per_s; an n whose cost is past the cap anyway is not
     * multiplied (n < 2^33 keeps the product below 2^63). */
    if (n >= (UINT64_C(1) << 33) || n * (uint64_t)NS_PER_S / b->per_s >= (uint64_t)cap)
        return cap;
    int64_t c = (int64_t)(n * (uint64_t)NS_PER_S / b->per_s);
    return c > 0 || n == 0 ? c : 1; /* no unit is free */
}

/* tat after cost more, from now when it is past, at most limit + grace ahead. */
static int64_t moved(const sy_budget_t *b, int64_t tat, int64_t now_ns, int64_t cost) {
    int64_t ahead = sy_budget_ahead(tat, now_ns) + cost, cap = b->limit_ns + b->grace_ns;
    return now_ns + (ahead < cap ? ahead : cap);
}

sy_budget_verdict_t sy_budget_take(const sy_budget_t *b, int64_t *tat, int64_t now_ns, uint64_t units) {
    if (b->per_s == 0)
        return SY_BUDGET_OK;
    int64_t ahead = sy_budget_ahead(*tat, now_ns), cost = sy_budget_cost(b, units);
    /* An entry costing more than the whole burst gets in when it is full. */
    int64_t need = cost < b->limit_ns ? cost : b->limit_ns;
    if (ahead + need <= b->limit_ns) {
        *tat = moved(b, *tat, now_ns, cost);
        return SY_BUDGET_OK;
    }
    int64_t refusal = sy_budget_cost(b, SY_WORK_REFUSAL);
    if (ahead + refusal > b->limit_ns + b->grace_ns)
        return SY_BUDGET_CLOSE;
    *tat = moved(b, *tat, now_ns, refusal);
    return SY_BUDGET_REFUSED;
}

void sy_budget_charge(const sy_budget_t *b, int64_t *tat, int64_t now_ns, uint64_t units) {
    if (b->per_s == 0 || units == 0)
        return;
    *tat = moved(b, *tat, now_ns, sy_budget_cost(b, units));
}
