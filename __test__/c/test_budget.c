/* The work budget's arithmetic (io/sy_budget.h), without sockets:
 * - a burst lets exactly `burst` units in at once, then the rate;
 * - an entry costing more than the burst gets in when the bucket is full,
 *   and the wait after it pays it back;
 * - past the burst, entries are refused, each refusal charged, and once
 *   they have cost a second burst's worth the verdict is CLOSE;
 * - a client that backs off drains its bucket and is never closed;
 * - work charged after the fact (a token's checks) moves the bucket, at
 *   most to the limit plus the grace;
 * - no budget (0) always says OK and charges nothing; out-of-range
 *   options are refused; a time days later needs no sweep. */
#include <stdint.h>

#include "check.h"
#include "io/model/sy_budget.h"

#define MS INT64_C(1000000)

static void test_burst_then_rate(void) {
    sy_budget_t b;
    CHECK_EQ(sy_budget_init(&b, 1000, 100), 0); /* 1,000 units/s, bursts of 100: a unit is 1 ms */
    CHECK_EQ(b.limit_ns, 100 * MS);
    CHECK_EQ(b.grace_ns, 100 * MS);
    CHECK_EQ(sy_budget_cost(&b, 1), 1 * MS);
    int64_t now = sy_budget_now(5000), tat = 0;
    int in = 0;
    while (sy_budget_take(&b, &tat, now, 1) == SY_BUDGET_OK && in < 1000)
        in++;
    CHECK_EQ(in, 100); /* the burst, then the first refusal */
    /* 10 ms later: 10 units back (one was the refusal's). */
    now += 10 * MS;
    in = 0;
    while (sy_budget_take(&b, &tat, now, 1) == SY_BUDGET_OK && in < 1000)
        in++;
    CHECK_EQ(in, 9);
}

static void test_refusals_then_close(void) {
    sy_budget_t b;
    CHECK_EQ(sy_budget_init(&b, 1000, 100), 0);
    int64_t now = sy_budget_now(1), tat = 0;
    for (int i = 0; i < 100; i++)
        CHECK_EQ(sy_budget_take(&b, &tat, now, 1), SY_BUDGET_OK);
    /* Refused: 100 refusals (a second burst) fit the grace, then CLOSE. */
    int refused = 0;
    sy_budget_verdict_t v;
    while ((v = sy_budget_take(&b, &tat, now, 1)) == SY_BUDGET_REFUSED && refused < 1000)
        refused++;
    CHECK_EQ(refused, 100);
    CHECK_EQ(v, SY_BUDGET_CLOSE);
    CHECK_EQ(sy_budget_ahead(tat, now), 200 * MS); /* the limit plus the grace, no more */
    /* CLOSE charges nothing: asked again, the same answer. */
    CHECK_EQ(sy_budget_take(&b, &tat, now, 1), SY_BUDGET_CLOSE);
}

static void test_backing_off(void) {
    /* A client refused 50 times, then waiting as long as its refusals
     * cost plus one unit per try, again and again: never closed, and its
     * entries go in at the rate. */
    sy_budget_t b;
    CHECK_EQ(sy_budget_init(&b, 1000, 100), 0);
    int64_t now = sy_budget_now(1), tat = 0;
    int ok = 0, closes = 0;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 150; i++) {
            sy_budget_verdict_t v = sy_budget_take(&b, &tat, now, 1);
            ok += v == SY_BUDGET_OK;
            closes += v == SY_BUDGET_CLOSE;
        }
        now += 200 * MS; /* backs off */
    }
    CHECK_EQ(closes, 0);
    CHECK(ok >= 50 * 100); /* at least the rate's worth went in */
}

static void test_big_entry(void) {
    sy_budget_t b;
    CHECK_EQ(sy_budget_init(&b, 1000, 100), 0);
    int64_t now = sy_budget_now(1), tat = 0;
    /* 150 units at once: in when full; then the bucket is 150 ms ahead. */
    CHECK_EQ(sy_budget_take(&b, &tat, now, 150), SY_BUDGET_OK);
    CHECK_EQ(sy_budget_ahead(tat, now), 150 * MS);
    CHECK_EQ(sy_budget_take(&b, &tat, now, 1), SY_BUDGET_REFUSED);
    /* Full again only once it has paid them back. */
    now += 150 * MS;
    CHECK_EQ(sy_budget_take(&b, &tat, now, 150), SY_BUDGET_REFUSED); /* the refusal: 1 ms */
    now += 2 * MS;
    CHECK_EQ(sy_budget_take(&b, &tat, now, 150), SY_BUDGET_OK);
}

static void test_charge(void) {
    sy_budget_t b;
    CHECK_EQ(sy_budget_init(&b, 1000, 100), 0);
    int64_t now = sy_budget_now(1), tat = 0;
    CHECK_EQ(sy_budget_take(&b, &tat, now, 1), SY_BUDGET_OK);
    sy_budget_charge(&b, &tat, now, 40); /* a token's checks, after the fact */
    CHECK_EQ(sy_budget_ahead(tat, now), 41 * MS);
    sy_budget_charge(&b, &tat, now, 1000000); /* capped: the limit plus the grace */
    CHECK_EQ(sy_budget_ahead(tat, now), 200 * MS);
    CHECK_EQ(sy_budget_take(&b, &tat, now, 1), SY_BUDGET_CLOSE);
    sy_budget_charge(&b, &tat, now, 0); /* nothing */
    CHECK_EQ(sy_budget_ahead(tat, now), 200 * MS);
}

static void test_off_and_ranges(void) {
    sy_budget_t b;
    CHECK_EQ(sy_budget_init(&b, 0, 0), 0);
    int64_t tat = 7;
    for (int i = 0; i < 10000; i++)
        CHECK_EQ(sy_budget_take(&b, &tat, 1, 1000), SY_BUDGET_OK);
    sy_budget_charge(&b, &tat, 1, 1000);
    CHECK_EQ(tat, 7);
    CHECK_EQ(sy_budget_init(&b, SY_WORK_MAX_PER_S + 1, 0), EINVAL);
    CHECK_EQ(sy_budget_init(&b, 10, 10 * SY_WORK_BURST_MAX_S + 1), EINVAL);
    CHECK_EQ(sy_budget_init(&b, 10, 10 * SY_WORK_BURST_MAX_S), 0);
    CHECK_EQ(b.limit_ns, (int64_t)SY_WORK_BURST_MAX_S * 1000 * MS);
    /* The largest rate and burst: no overflow, a minute of ns. */
    CHECK_EQ(sy_budget_init(&b, SY_WORK_MAX_PER_S, SY_WORK_MAX_PER_S * SY_WORK_BURST_MAX_S), 0);
    CHECK_EQ(b.limit_ns, (int64_t)SY_WORK_BURST_MAX_S * 1000 * MS);
    CHECK(sy_budget_cost(&b, 1) >= 1); /* no unit is free */
    CHECK_EQ(sy_budget_cost(&b, UINT64_MAX), b.limit_ns + b.grace_ns);
    /* The default: a second's worth of burst. */
    CHECK_EQ(sy_budget_init(&b, SY_WORK_DEFAULT_PER_S, 0), 0);
    CHECK_EQ(b.limit_ns, 1000 * MS);
}

static void test_days_later(void) {
    /* 64-bit time: a connection idle for days finds its bucket full, with
     * no sweep to bring its time up. */
    sy_budget_t b;
    CHECK_EQ(sy_budget_init(&b, 1000, 100), 0);
    int64_t now = sy_budget_now(1), tat = 0;
    for (int i = 0; i < 100; i++)
        CHECK_EQ(sy_budget_take(&b, &tat, now, 1), SY_BUDGET_OK);
    now += 3 * 86400 * 1000 * MS;
    int in = 0;
    while (sy_budget_take(&b, &tat, now, 1) == SY_BUDGET_OK && in < 1000)
        in++;
    CHECK_EQ(in, 100);
}

int main(void) {
    test_burst_then_rate();
    test_refusals_then_close();
    test_backing_off();
    test_big_entry();
    test_charge();
    test_off_and_ranges();
    test_days_later();
    return check_report("test_budget");
}
