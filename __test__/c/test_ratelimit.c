/* The limits' arithmetic and tables, without sockets:
 * - sy_rate (io/sy_ratelimit): a burst lets exactly `burst` units in at
 *   once, then one per period; units costing more than the burst get in
 *   when the bucket is full and the wait after them pays them back; the
 *   wait in milliseconds is the first one they fit in; a clock that wraps its 32 bits changes nothing;
 *   bursts over a minute are refused; the cap on how far a bucket runs ahead.
 * - sy_rate_waits: due times come out in order, only when due; the array
 *   goes back once a large list is empty.
 * - sy_addr_key_make: IPv4, IPv4-mapped IPv6 and IPv6 keys by prefix.
 * - sy_addrlimit: the count per address, the rate of new connections (a
 *   refusal is not charged; Retry-After), one address not charging another,
 *   10,000 addresses entered and every entry freed again (at the last
 *   close, or by the sweep once the rate is idle).
 * The sanitizers and valgrind see a leak or a use after free. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "io/model/sy_addrlimit.h"
#include "io/model/sy_ratelimit.h"

#define MS SY_RATE_TICKS_PER_MS

static void test_rate_burst(void) {
    sy_rate_t r;
    CHECK_EQ(sy_rate_init(&r, 100, 10), 0); /* 100/s, bursts of 10: a unit is 10 ms */
    CHECK_EQU(r.limit, 100u * MS);
    uint32_t now = 12345u * MS, tat = now;
    int in = 0;
    while (sy_rate_fits(&r, tat, now, 1, 0) && in < 100) {
        tat = sy_rate_charge(&r, tat, now, 1);
        in++;
    }
    CHECK_EQ(in, 10);
    CHECK_EQU(sy_rate_wait_ms(&r, tat, now, 1), 10); /* a token back: one period */
    now += 10 * MS;                                  /* one period: one more */
    CHECK(sy_rate_fits(&r, tat, now, 1, 0));
    tat = sy_rate_charge(&r, tat, now, 1);
    CHECK(!sy_rate_fits(&r, tat, now, 1, 0));
    /* The grace: 50 ms more let in 5 more. */
    in = 0;
    while (sy_rate_fits(&r, tat, now, 1, 50 * MS) && in < 100) {
        tat = sy_rate_charge(&r, tat, now, 1);
        in++;
    }
    CHECK_EQ(in, 5);
    /* Idle for a second: full again, no more than the burst. */
    now += 1000 * MS;
    tat = sy_rate_current(tat, now);
    CHECK_EQU(tat, now);
    /* Unlimited: always room, never charged. */
    sy_rate_t off;
    CHECK_EQ(sy_rate_init(&off, 0, 0), 0);
    CHECK(sy_rate_fits(&off, now + 5000u * MS, now, 1, 0));
    CHECK_EQU(sy_rate_charge(&off, 7, now, 1000), 7);
}

static void test_rate_bytes(void) {
    sy_rate_t r;
    CHECK_EQ(sy_rate_init(&r, 1000, 0), 0); /* 1,000 bytes/s, a second's worth of burst */
    CHECK_EQU(r.limit, 1000u * MS);
    uint32_t now = 0, tat = now;
    /* A 5,000-byte message gets in with room, and pays 4 s of waiting. */
    CHECK(sy_rate_fits(&r, tat, now, 5000, 0)); /* more than the burst: a full bucket lets it in */
    tat = sy_rate_charge(&r, tat, now, 5000);
    CHECK_EQU(sy_rate_ahead(tat, now), 5000u * MS);
    CHECK(!sy_rate_fits(&r, tat, now, 1, 0));
    uint32_t wait = sy_rate_wait_ms(&r, tat, now, 1);
    CHECK_EQU(wait, 4001);                                /* the first whole millisecond with a byte's room */
    CHECK_EQU(sy_rate_wait_ms(&r, tat, now, 5000), 5000); /* another large one: a full bucket */
    CHECK(!sy_rate_fits(&r, tat, now + (wait - 1) * MS, 1, 0));
    CHECK(sy_rate_fits(&r, tat, now + wait * MS, 1, 0));
    /* A fraction of a tick per byte at high rates: rounded, not lost. */
    sy_rate_t fast;
    CHECK_EQ(sy_rate_init(&fast, (uint64_t)1 << 32, 0), 0);
    uint32_t t2 = sy_rate_charge(&fast, 0, 0, 1000000); /* 1 MB at 4 GiB/s: 3,725 ticks */
    CHECK_EQU(t2, 3725);
    /* How far ahead a bucket may run: capped, whatever the message. */
    uint32_t t3 = sy_rate_charge(&r, 0, 0, (uint64_t)1 << 40);
    CHECK_EQU(sy_rate_ahead(t3, 0), SY_RATE_AHEAD_MAX);
    /* Bursts over a minute, rates out of range: refused. */
    CHECK_EQ(sy_rate_init(&r, 10, 601), EINVAL);
    CHECK_EQ(sy_rate_init(&r, 10, 600), 0);
    CHECK_EQ(sy_rate_init(&r, ((uint64_t)1 << 32) + 1, 0), EINVAL);
}

static void test_rate_wrap(void) {
    /* The same sequence across the 32-bit wrap of the ticks. */
    sy_rate_t r;
    CHECK_EQ(sy_rate_init(&r, 10, 3), 0);
    uint32_t now = UINT32_MAX - 50 * MS, tat = now;
    int in = 0;
    for (int step = 0; step < 40; step++, now += 25 * MS) { /* 40 steps of 25 ms: through the wrap */
        tat = sy_rate_current(tat, now);
        while (sy_rate_fits(&r, tat, now, 1, 0)) {
            tat = sy_rate_charge(&r, tat, now, 1);
            in++;
        }
    }
    /* 3 at once, then one per 100 ms over 975 ms. */
    CHECK_EQ(in, 12);
}

static void test_waits(void) {
    sy_rate_waits_t w = {0};
    int64_t due[] = {50, 10, 40, 10, 30, 20, 60};
    for (uint64_t i = 0; i < 7; i++)
        CHECK_EQ(sy_rate_waits_push(&w, i, due[i]), 0);
    CHECK_EQ(sy_rate_waits_next(&w), 10);
    uint64_t id;
    CHECK(!sy_rate_waits_pop_due(&w, 9, &id));
    int64_t last = 0;
    int popped = 0;
    while (sy_rate_waits_pop_due(&w, 45, &id)) {
        CHECK(due[id] >= last && due[id] <= 45);
        last = due[id];
        popped++;
    }
    CHECK_EQ(popped, 5);
    CHECK_EQ(sy_rate_waits_next(&w), 50);
    sy_rate_waits_free(&w);
    CHECK_EQ(sy_rate_waits_next(&w), INT64_MAX);
    /* A large list gives its array back when empty. */
    for (uint64_t i = 0; i < 1000; i++)
        CHECK_EQ(sy_rate_waits_push(&w, i, (int64_t)(i * 7919 % 1000)), 0);
    last = -1;
    popped = 0;
    while (sy_rate_waits_pop_due(&w, 1000, &id)) {
        CHECK((int64_t)(id * 7919 % 1000) >= last);
        last = (int64_t)(id * 7919 % 1000);
        popped++;
    }
    CHECK_EQ(popped, 1000);
    CHECK(w.heap == NULL && w.cap == 0);
}

static struct sockaddr_in v4(const char *s) {
    struct sockaddr_in a = {.sin_family = AF_INET};
    CHECK_EQ(inet_pton(AF_INET, s, &a.sin_addr), 1);
    return a;
}

static struct sockaddr_in6 v6(const char *s) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    CHECK_EQ(inet_pton(AF_INET6, s, &a.sin6_addr), 1);
    return a;
}

static void test_keys(void) {
    sy_addr_key_t k, m;
    struct sockaddr_in a = v4("10.1.2.3");
    CHECK(sy_addr_key_make((struct sockaddr *)&a, sizeof(a), 32, 64, &k));
    CHECK(!k.v6);
    CHECK_EQU(k.bits, 0x0a010203);
    CHECK(sy_addr_key_make((struct sockaddr *)&a, sizeof(a), 24, 64, &k));
    CHECK_EQU(k.bits, 0x0a010200);
    /* The IPv4-mapped form is the IPv4 address. */
    struct sockaddr_in6 b = v6("::ffff:10.1.2.3");
    CHECK(sy_addr_key_make((struct sockaddr *)&b, sizeof(b), 32, 64, &m));
    CHECK(!m.v6);
    CHECK_EQU(m.bits, 0x0a010203);
    /* IPv6: the /64 (or a shorter prefix); the interface id does not count. */
    struct sockaddr_in6 c = v6("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), d = v6("2001:db8:1:2::1");
    CHECK(sy_addr_key_make((struct sockaddr *)&c, sizeof(c), 32, 64, &k));
    CHECK(sy_addr_key_make((struct sockaddr *)&d, sizeof(d), 32, 64, &m));
    CHECK(k.v6 && m.v6);
    CHECK_EQU(k.bits, UINT64_C(0x20010db800010002));
    CHECK_EQU(k.bits, m.bits);
    CHECK(sy_addr_key_make((struct sockaddr *)&c, sizeof(c), 32, 48, &k));
    CHECK_EQU(k.bits, UINT64_C(0x20010db800010000));
    CHECK(sy_addr_key_make((struct sockaddr *)&c, sizeof(c), 32, 1, &k));
    CHECK_EQU(k.bits, 0);
    /* Neither IPv4 nor IPv6, or too short: no key. */
    struct sockaddr u = {.sa_family = AF_UNIX};
    CHECK(!sy_addr_key_make(&u, sizeof(u), 32, 64, &k));
    CHECK(!sy_addr_key_make((struct sockaddr *)&a, 4, 32, 64, &k));
}

static sy_addr_key_t key4(uint32_t bits) { return (sy_addr_key_t){.bits = bits, .v6 = false}; }

static void test_table(void) {
    const int64_t S = 1000000000; /* a second in ns */
    sy_addrlimit_conf_t conf = {.max_conns = 2, .rate = 4, .v4_prefix = 32, .v6_prefix = 64};
    sy_addrlimit_t *t = sy_addrlimit_create(&conf);
    CHECK(t != NULL);
    if (t == NULL)
        return;
    sy_addr_key_t a = key4(1), b = key4(2);
    /* An IPv6 key with the same bits is another address. */
    sy_addr_key_t a6 = {.bits = 1, .v6 = true};
    uint32_t retry = 0;
    int64_t now = 100 * S;
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_OK);
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_OK);
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_TOO_MANY); /* attempts all the same: charged */
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_TOO_MANY);
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_TOO_FAST); /* the burst of 4 is spent */
    CHECK_EQU(retry, 1);
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_TOO_FAST); /* a refusal is not charged */
    CHECK_EQ(sy_addrlimit_admit(t, &a6, now, &retry), SY_ADDR_OK);
    CHECK_EQ(sy_addrlimit_admit(t, &b, now, &retry), SY_ADDR_OK);
    CHECK_EQU(sy_addrlimit_count(t), 3);
    /* A quarter of a second later: one attempt's worth back, and a slot. */
    sy_addrlimit_release(t, &a, now);
    CHECK_EQU(sy_addrlimit_count(t), 3);
    now += S / 4;
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_OK);
    CHECK_EQ(sy_addrlimit_admit(t, &a, now, &retry), SY_ADDR_TOO_FAST);
    /* Every connection closed: a6's and b's rates are idle by now (one
     * attempt each, a quarter of a second ago): freed at once; a's lingers
     * until the sweep after its rate is idle. */
    sy_addrlimit_release(t, &a, now);
    sy_addrlimit_release(t, &a, now);
    sy_addrlimit_release(t, &a6, now);
    sy_addrlimit_release(t, &b, now);
    sy_addrlimit_release(t, &b, now); /* one too many: ignored */
    CHECK_EQU(sy_addrlimit_count(t), 1);
    sy_addrlimit_sweep(t, now);
    CHECK_EQU(sy_addrlimit_count(t), 1);
    now += 2 * S;
    sy_addrlimit_sweep(t, now);
    CHECK_EQU(sy_addrlimit_count(t), 0);
    sy_addrlimit_destroy(t);

    /* Without a rate, an entry goes at its last close; 10,000 addresses
     * (the buckets grow and shrink back) and every one freed. */
    sy_addrlimit_conf_t c2 = {.max_conns = 1, .rate = 0, .v4_prefix = 32, .v6_prefix = 64};
    t = sy_addrlimit_create(&c2);
    CHECK(t != NULL);
    if (t == NULL)
        return;
    int ok = 0, refused = 0;
    for (uint32_t i = 0; i < 10000; i++) {
        sy_addr_key_t k = key4(0x7f000000u + i);
        ok += sy_addrlimit_admit(t, &k, now, &retry) == SY_ADDR_OK;
        refused += sy_addrlimit_admit(t, &k, now, &retry) == SY_ADDR_TOO_MANY;
    }
    CHECK_EQ(ok, 10000);
    CHECK_EQ(refused, 10000);
    CHECK_EQU(sy_addrlimit_count(t), 10000);
    for (uint32_t i = 0; i < 10000; i += 2) {
        sy_addr_key_t k = key4(0x7f000000u + i);
        sy_addrlimit_release(t, &k, now);
    }
    CHECK_EQU(sy_addrlimit_count(t), 5000);
    for (uint32_t i = 1; i < 10000; i += 2) {
        sy_addr_key_t k = key4(0x7f000000u + i);
        sy_addrlimit_release(t, &k, now);
    }
    CHECK_EQU(sy_addrlimit_count(t), 0);
    /* Empty again, and usable. */
    sy_addr_key_t k = key4(42);
    CHECK_EQ(sy_addrlimit_admit(t, &k, now, &retry), SY_ADDR_OK);
    sy_addrlimit_destroy(t); /* with an entry in it: freed too */
}

int main(void) {
    test_rate_burst();
    test_rate_bytes();
    test_rate_wrap();
    test_waits();
    test_keys();
    test_table();
    return check_report("test_ratelimit");
}
