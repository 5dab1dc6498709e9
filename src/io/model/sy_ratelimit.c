/* sy_ratelimit — see sy_ratelimit.h. */
#include "io/model/sy_ratelimit.h"

#include "base/sy_alloc.h"
#include "io/model/sy_grow.h"

sy_err_t sy_rate_bounds(uint64_t per_s, uint64_t *burst) {
    if (per_s > SY_RATE_MAX_PER_S)
        return EINVAL;
    if (*burst == 0)
        *burst = per_s;
    /* burst / per_s seconds, at most SY_RATE_BURST_MAX_MS: compared before
     * the product is formed (both are below 2^33). */
    return *burst > per_s * (SY_RATE_BURST_MAX_MS / 1000) ? EINVAL : 0;
}

sy_err_t sy_rate_init(sy_rate_t *r, uint64_t per_s, uint64_t burst) {
    *r = (sy_rate_t){0};
    if (per_s == 0)
        return 0;
    sy_err_t err = sy_rate_bounds(per_s, &burst);
    if (err != 0)
        return err;
    r->per_s = per_s;
    r->limit = (uint32_t)(burst * SY_RATE_TICKS_PER_S / per_s); /* <= 60 s of ticks: fits */
    return 0;
}

uint64_t sy_rate_cost(const sy_rate_t *r, uint64_t n) {
    if (r->per_s == 0)
        return 0;
    /* n * ticks-per-second / per_s, rounded to the nearest tick; n is first
     * capped where the cost would pass the cap anyway, so the product stays
     * below 2^63 (per_s <= 2^32, so n < 2^39, times 2^24). */
    if (n >= r->per_s * 128)
        return SY_RATE_AHEAD_MAX;
    uint64_t cost = (n * SY_RATE_TICKS_PER_S + r->per_s / 2) / r->per_s;
    return cost < SY_RATE_AHEAD_MAX ? cost : SY_RATE_AHEAD_MAX;
}

/* The cost n units need to find in the bucket: theirs, or the whole burst. */
static uint64_t needed(const sy_rate_t *r, uint64_t n) {
    uint64_t cost = sy_rate_cost(r, n);
    return cost < r->limit ? cost : r->limit;
}

bool sy_rate_fits(const sy_rate_t *r, uint32_t tat, uint32_t now, uint64_t n, uint32_t extra) {
    return r->per_s == 0 || (uint64_t)sy_rate_ahead(tat, now) + needed(r, n) <= (uint64_t)r->limit + extra;
}

uint32_t sy_rate_charge(const sy_rate_t *r, uint32_t tat, uint32_t now, uint64_t n) {
    if (r->per_s == 0)
        return tat;
    uint64_t next = sy_rate_ahead(tat, now) + sy_rate_cost(r, n);
    if (next > SY_RATE_AHEAD_MAX)
        next = SY_RATE_AHEAD_MAX;
    return now + (uint32_t)next;
}

uint32_t sy_rate_wait_ms(const sy_rate_t *r, uint32_t tat, uint32_t now, uint64_t n) {
    if (sy_rate_fits(r, tat, now, n, 0))
        return 0;
    /* They fit once ahead <= limit - needed: after this many ticks. */
    uint64_t ticks = sy_rate_ahead(tat, now) - (r->limit - needed(r, n));
    return (uint32_t)((ticks + SY_RATE_TICKS_PER_MS - 1) / SY_RATE_TICKS_PER_MS);
}

/* ---- the waiting connections: a binary min-heap by due time ---------------- */

static void swap(sy_rate_wait_t *a, sy_rate_wait_t *b) {
    sy_rate_wait_t t = *a;
    *a = *b;
    *b = t;
}

sy_err_t sy_rate_waits_push(sy_rate_waits_t *w, uint64_t id, int64_t due_ms) {
    if (w->n == w->cap) {
        sy_rate_wait_t *h = sy_grow(w->heap, &w->cap, sizeof(*h), 16);
        if (h == NULL)
            return ENOMEM;
        w->heap = h;
    }
    uint32_t i = w->n++;
    w->heap[i] = (sy_rate_wait_t){.due_ms = due_ms, .id = id};
    while (i > 0 && w->heap[(i - 1) / 2].due_ms > w->heap[i].due_ms) {
        swap(&w->heap[(i - 1) / 2], &w->heap[i]);
        i = (i - 1) / 2;
    }
    return 0;
}

bool sy_rate_waits_pop_due(sy_rate_waits_t *w, int64_t now_ms, uint64_t *id) {
    if (w->n == 0 || w->heap[0].due_ms > now_ms)
        return false;
    *id = w->heap[0].id;
    w->heap[0] = w->heap[--w->n];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < w->n && w->heap[l].due_ms < w->heap[m].due_ms)
            m = l;
        if (r < w->n && w->heap[r].due_ms < w->heap[m].due_ms)
            m = r;
        if (m == i)
            break;
        swap(&w->heap[i], &w->heap[m]);
        i = m;
    }
    if (w->n == 0 && w->cap > 16)
        sy_rate_waits_free(w); /* memory follows the load; the first 16 stay */
    return true;
}

void sy_rate_waits_free(sy_rate_waits_t *w) {
    sy_free(w->heap);
    *w = (sy_rate_waits_t){0};
}
