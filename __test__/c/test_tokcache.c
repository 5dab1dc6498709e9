/* The cache of refused tokens (auth/sy_tokcache.h), without OpenSSL:
 * - SipHash-2-4: the paper's vectors (key 00..0f; inputs of 0 and 15
 *   bytes), and every length 0..63 differing from its neighbours;
 * - a refusal found again by its token's hash; a token not refused, or
 *   refused in a way not kept (not yet valid, out of memory), not found;
 * - another key set's serial empties it; two caches hash apart (their
 *   keys are random);
 * - bounded: thousands of tokens never hold more than SY_TOKCACHE_ENTRIES,
 *   and the least recently used entry of a full set goes first.
 * The sanitizers see a leak or an overrun. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "auth/sy_tokcache.h"
#include "check.h"

static void test_siphash(void) {
    uint8_t key[16], in[64];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        in[i] = (uint8_t)i;
    CHECK_EQU(sy_siphash24(key, in, 0), UINT64_C(0x726fdb47dd0e0e31));
    CHECK_EQU(sy_siphash24(key, in, 15), UINT64_C(0xa129ca6149be45e5));
    CHECK_EQU(sy_siphash24(key, in, 1), UINT64_C(0x74f839c593dc67fd));
    CHECK_EQU(sy_siphash24(key, in, 8), UINT64_C(0x93f5f5799a932462));
    for (size_t n = 1; n < 64; n++)
        CHECK(sy_siphash24(key, in, n) != sy_siphash24(key, in, n - 1));
}

static void tok(char *buf, size_t cap, int i) { snprintf(buf, cap, "eyJhbGciOiJFZERTQSJ9.e30.sig%d", i); }

static void test_find_add(void) {
    sy_tokcache_t *c = sy_tokcache_new();
    CHECK(c != NULL);
    char t[64];
    tok(t, sizeof(t), 1);
    uint64_t h = sy_tokcache_hash(c, t, strlen(t));
    CHECK_EQ(sy_tokcache_find(c, 1, h), SY_JWT_OK);
    sy_tokcache_add(c, 1, h, SY_JWT_SIGNATURE);
    CHECK_EQ(sy_tokcache_find(c, 1, h), SY_JWT_SIGNATURE);
    CHECK_EQU(sy_tokcache_count(c), 1);
    /* The same bytes again: the same hash; others not. */
    CHECK_EQU(sy_tokcache_hash(c, t, strlen(t)), h);
    char u[64];
    tok(u, sizeof(u), 2);
    uint64_t hu = sy_tokcache_hash(c, u, strlen(u));
    CHECK(hu != h);
    CHECK_EQ(sy_tokcache_find(c, 1, hu), SY_JWT_OK);
    /* Not kept: valid later, or not the token's fault. */
    CHECK(!sy_tokcache_keeps(SY_JWT_OK));
    CHECK(!sy_tokcache_keeps(SY_JWT_NOT_YET));
    CHECK(!sy_tokcache_keeps(SY_JWT_MEMORY));
    sy_tokcache_add(c, 1, hu, SY_JWT_NOT_YET);
    CHECK_EQ(sy_tokcache_find(c, 1, hu), SY_JWT_OK);
    sy_tokcache_add(c, 1, hu, SY_JWT_EXPIRED);
    CHECK_EQ(sy_tokcache_find(c, 1, hu), SY_JWT_EXPIRED);
    /* Another key set: everything forgotten. */
    CHECK_EQ(sy_tokcache_find(c, 2, h), SY_JWT_OK);
    CHECK_EQU(sy_tokcache_count(c), 0);
    CHECK_EQ(sy_tokcache_find(c, 1, h), SY_JWT_OK);
    /* Another cache, another key. */
    sy_tokcache_t *d = sy_tokcache_new();
    CHECK(d != NULL);
    CHECK(sy_tokcache_hash(d, t, strlen(t)) != h);
    sy_tokcache_free(d);
    sy_tokcache_free(c);
    sy_tokcache_free(NULL);
}

static void test_bounded_lru(void) {
    sy_tokcache_t *c = sy_tokcache_new();
    CHECK(c != NULL);
    char t[64];
    for (int i = 0; i < 5000; i++) {
        tok(t, sizeof(t), i);
        sy_tokcache_add(c, 9, sy_tokcache_hash(c, t, strlen(t)), SY_JWT_SIGNATURE);
        CHECK(sy_tokcache_count(c) <= SY_TOKCACHE_ENTRIES);
    }
    CHECK_EQU(sy_tokcache_count(c), SY_TOKCACHE_ENTRIES);
    /* The newest ones are there: each of the last 64 is found exactly when
     * fewer than SY_TOKCACHE_WAYS later ones fell in its set (the key is
     * random, so how many share a set is not fixed; what LRU keeps is). */
    uint64_t last[64];
    for (int i = 0; i < 64; i++) {
        tok(t, sizeof(t), 5000 - 64 + i);
        last[i] = sy_tokcache_hash(c, t, strlen(t));
    }
    int found = 0, kept = 0;
    for (int i = 0; i < 64; i++) {
        int later = 0;
        for (int j = i + 1; j < 64; j++)
            later += last[j] % SY_TOKCACHE_SETS == last[i] % SY_TOKCACHE_SETS;
        bool there = sy_tokcache_find(c, 9, last[i]) == SY_JWT_SIGNATURE;
        CHECK(there == (later < SY_TOKCACHE_WAYS));
        found += there;
        kept += later < SY_TOKCACHE_WAYS;
    }
    CHECK_EQ(found, kept);
    CHECK(found >= SY_TOKCACHE_WAYS); /* the last four, at least, whatever their sets */
    /* One set, by hand: ways + 1 hashes of the same set; the one used
     * last stays, the least recently used goes. */
    sy_tokcache_t *e = sy_tokcache_new();
    CHECK(e != NULL);
    uint64_t hs[SY_TOKCACHE_WAYS + 1];
    for (int i = 0; i <= SY_TOKCACHE_WAYS; i++)
        hs[i] = (uint64_t)(i + 1) * SY_TOKCACHE_SETS + 3; /* all in set 3 */
    for (int i = 0; i < SY_TOKCACHE_WAYS; i++)
        sy_tokcache_add(e, 1, hs[i], SY_JWT_KEY);
    CHECK_EQ(sy_tokcache_find(e, 1, hs[0]), SY_JWT_KEY); /* hs[0] used: hs[1] is the oldest now */
    sy_tokcache_add(e, 1, hs[SY_TOKCACHE_WAYS], SY_JWT_ALG);
    CHECK_EQ(sy_tokcache_find(e, 1, hs[0]), SY_JWT_KEY);
    CHECK_EQ(sy_tokcache_find(e, 1, hs[1]), SY_JWT_OK);
    CHECK_EQ(sy_tokcache_find(e, 1, hs[SY_TOKCACHE_WAYS]), SY_JWT_ALG);
    CHECK_EQU(sy_tokcache_count(e), SY_TOKCACHE_WAYS);
    /* Added again: updated in place, not twice. */
    sy_tokcache_add(e, 1, hs[0], SY_JWT_CLAIMS);
    CHECK_EQ(sy_tokcache_find(e, 1, hs[0]), SY_JWT_CLAIMS);
    CHECK_EQU(sy_tokcache_count(e), SY_TOKCACHE_WAYS);
    sy_tokcache_free(e);
    sy_tokcache_free(c);
}

int main(void) {
    test_siphash();
    test_find_add();
    test_bounded_lru();
    return check_report("test_tokcache");
}
