/* libFuzzer target: a connection's work budget (io/sy_budget.h) and an IO
 * thread's cache of refused tokens (auth/sy_tokcache.h), driven by a script.
 *
 * The input: 16 bytes of options (the rate and the burst: sy_budget_init
 * with any values), then steps of 4 bytes each: an operation and its
 * argument. Operations: take n units, charge n units (a token's checks),
 * let time pass, add a refused token to the cache, look one up, change the
 * key set.
 *
 * Aborts when a contract does not hold:
 *  - sy_budget_init answers 0 or EINVAL, and on 0 the burst lasts 1 ns to
 *    SY_WORK_BURST_MAX_S seconds;
 *  - a bucket is never more than its limit plus its grace ahead of now;
 *  - a take is OK exactly when the entry's cost (at most the whole burst)
 *    fits the limit, then moves the time by the cost (capped); REFUSED
 *    moves it by a refusal's cost and only when that fits the grace; CLOSE
 *    moves nothing; no budget always says OK and moves nothing;
 *  - a charge moves the time forward, capped;
 *  - the cache never holds more than SY_TOKCACHE_ENTRIES; a refusal it
 *    keeps is found right after it is added, with the same code; nothing
 *    is found under another key set's serial. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/sy_tokcache.h"
#include "io/model/sy_budget.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 16)
        return 0;
    /* Rates of any size, often small enough to be reached. */
    uint64_t per_s = le(data, 8), burst = le(data + 8, 8);
    if (data[0] & 1) {
        per_s %= 100000;
        burst %= 1000000;
    }
    sy_budget_t b;
    sy_err_t rc = sy_budget_init(&b, per_s, burst);
    REQUIRE(rc == 0 || rc == EINVAL);
    if (rc != 0)
        return 0;
    sy_tokcache_t *cache = sy_tokcache_new(); /* one per input: its key sets start anew */
    if (cache == NULL)
        abort();
    if (per_s != 0) {
        REQUIRE(b.limit_ns >= 1 && b.limit_ns <= (int64_t)SY_WORK_BURST_MAX_S * 1000000000);
        REQUIRE(b.grace_ns == b.limit_ns);
    }
    const int64_t cap = b.limit_ns + b.grace_ns;
    int64_t now = sy_budget_now(1000), tat = 0;
    uint64_t serial = 1;
    for (size_t i = 16; i + 4 <= size; i += 4) {
        uint8_t op = data[i] % 6;
        uint32_t arg = (uint32_t)le(data + i + 1, 3);
        int64_t ahead = sy_budget_ahead(tat, now), before = tat;
        switch (op) {
        case 0: { /* take */
            uint64_t units = arg % 5000;
            sy_budget_verdict_t v = sy_budget_take(&b, &tat, now, units);
            if (per_s == 0) {
                REQUIRE(v == SY_BUDGET_OK && tat == before);
                break;
            }
            int64_t cost = sy_budget_cost(&b, units), need = cost < b.limit_ns ? cost : b.limit_ns;
            int64_t refusal = sy_budget_cost(&b, SY_WORK_REFUSAL);
            if (ahead + need <= b.limit_ns) {
                REQUIRE(v == SY_BUDGET_OK);
                REQUIRE(sy_budget_ahead(tat, now) == (ahead + cost < cap ? ahead + cost : cap));
            } else if (ahead + refusal <= cap) {
                REQUIRE(v == SY_BUDGET_REFUSED);
                REQUIRE(sy_budget_ahead(tat, now) == ahead + refusal);
            } else {
                REQUIRE(v == SY_BUDGET_CLOSE && tat == before);
            }
            break;
        }
        case 1: /* charge (a token's checks) */
            sy_budget_charge(&b, &tat, now, arg % 100000);
            REQUIRE(per_s != 0 || tat == before);
            REQUIRE(sy_budget_ahead(tat, now) >= (arg % 100000 == 0 || per_s == 0 ? 0 : ahead));
            break;
        case 2: /* time passes: up to ~16 s in ms */
            now = sy_budget_now(now / 1000000 + (arg & 0x3fff));
            break;
        case 3: { /* a refused token into the cache */
            sy_jwt_result_t r = (sy_jwt_result_t)(arg % (SY_JWT_RESULTS + 1));
            uint64_t h = sy_tokcache_hash(cache, (const char *)data + 16, (i - 16) % 64);
            sy_tokcache_add(cache, serial, h, r);
            sy_jwt_result_t got = sy_tokcache_find(cache, serial, h);
            REQUIRE(sy_tokcache_keeps(r) ? got == r : true);
            REQUIRE(got == SY_JWT_OK || sy_tokcache_keeps(got));
            break;
        }
        case 4: { /* a lookup */
            uint64_t h = sy_tokcache_hash(cache, (const char *)data + 16, arg % 64 < size - 16 ? arg % 64 : 0);
            sy_jwt_result_t got = sy_tokcache_find(cache, serial, h);
            REQUIRE(got == SY_JWT_OK || sy_tokcache_keeps(got));
            break;
        }
        default: /* another key set: nothing found under it */
            serial += 1 + arg % 3;
            REQUIRE(sy_tokcache_find(cache, serial, sy_tokcache_hash(cache, "x", 1)) == SY_JWT_OK);
            REQUIRE(sy_tokcache_count(cache) == 0);
            break;
        }
        REQUIRE(sy_tokcache_count(cache) <= SY_TOKCACHE_ENTRIES);
        REQUIRE(sy_budget_ahead(tat, now) <= (per_s == 0 ? INT64_MAX : cap));
    }
    sy_tokcache_free(cache);
    return 0;
}
