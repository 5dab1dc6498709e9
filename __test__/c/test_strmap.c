/* sy_strmap: the intrusive string-keyed hash table under the topic registry
 * and the bus' channel table: insert, find, remove, growth (every entry
 * still found after the buckets doubled, several times), collisions (equal
 * hashes and equal buckets: the keys decide), keys with NUL bytes and the
 * empty key, and walks (every entry once; the entry just returned may be
 * removed and freed). Entries are freed by the test: the sanitizers and
 * valgrind see a leak or a use after free. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_strmap.h"
#include "check.h"

typedef struct entry {
    int value;
    sy_strmap_node_t node; /* not first: SY_STRMAP_ENTRY must subtract the offset */
    size_t len;
    char key[];
} entry_t;

static const char *entry_key(const sy_strmap_node_t *n, size_t *len) {
    const entry_t *e = SY_STRMAP_ENTRY(n, entry_t, node);
    *len = e->len;
    return e->key;
}

static entry_t *entry_new(const char *key, size_t len, int value) {
    entry_t *e = sy_calloc(1, sizeof(*e) + len);
    if (e != NULL) {
        e->value = value;
        e->len = len;
        memcpy(e->key, key, len);
    }
    return e;
}

static entry_t *find(const sy_strmap_t *m, const char *key, size_t len) {
    sy_strmap_node_t *n = sy_strmap_find(m, key, len, sy_strmap_hash(key, len));
    return n != NULL ? SY_STRMAP_ENTRY(n, entry_t, node) : NULL;
}

static void insert(sy_strmap_t *m, entry_t *e) { sy_strmap_insert(m, &e->node, sy_strmap_hash(e->key, e->len)); }

static void free_all(sy_strmap_t *m) {
    sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
    sy_strmap_node_t *n;
    while ((n = sy_strmap_next(m, &it)) != NULL)
        sy_free(SY_STRMAP_ENTRY(n, entry_t, node));
    sy_strmap_destroy(m);
}

static void test_hash(void) {
    /* FNV-1a's steps from the basis the registry always used (not FNV's
     * published one, whose last digit it lacks): fixed values, so that a
     * change of the function is a decision, not an accident. */
    CHECK_EQU(sy_strmap_hash("", 0), 1469598103934665603ull);
    CHECK_EQU(sy_strmap_hash("a", 1), (1469598103934665603ull ^ 'a') * 1099511628211ull);
    CHECK_EQU(sy_strmap_hash("foobar", 6), 9870438755804841970ull);
    CHECK(sy_strmap_hash("ab", 2) != sy_strmap_hash("ba", 2));
}

static void test_basic(void) {
    sy_strmap_t m;
    CHECK_EQ(sy_strmap_init(&m, 4, entry_key), 0);
    CHECK(find(&m, "a", 1) == NULL);
    entry_t *a = entry_new("a", 1, 1), *ab = entry_new("ab", 2, 2), *empty = entry_new("", 0, 3);
    entry_t *nul = entry_new("a\0b", 3, 4);
    CHECK(a != NULL && ab != NULL && empty != NULL && nul != NULL);
    if (a == NULL || ab == NULL || empty == NULL || nul == NULL)
        return;
    insert(&m, a);
    insert(&m, ab);
    insert(&m, empty);
    insert(&m, nul);
    CHECK_EQU(m.count, 4);
    CHECK(find(&m, "a", 1) == a);
    CHECK(find(&m, "ab", 2) == ab);
    CHECK(find(&m, "", 0) == empty);
    CHECK(find(&m, "a\0b", 3) == nul);
    CHECK(find(&m, "a\0c", 3) == NULL);
    CHECK(find(&m, "b", 1) == NULL);
    CHECK(find(&m, "ab", 1) == a); /* the length is the key's */
    CHECK(sy_strmap_remove(&m, &ab->node));
    CHECK(!sy_strmap_remove(&m, &ab->node)); /* not there any more */
    CHECK_EQU(m.count, 3);
    CHECK(find(&m, "ab", 2) == NULL);
    CHECK(find(&m, "a", 1) == a);
    sy_free(ab);
    free_all(&m);
    CHECK(m.buckets == NULL && m.count == 0);
}

/* Equal hashes (a caller's choice here) and equal buckets: chains hold
 * several entries and the key decides. */
static void test_collisions(void) {
    sy_strmap_t m;
    CHECK_EQ(sy_strmap_init(&m, 8, entry_key), 0);
    entry_t *e[6];
    const char *keys[6] = {"k0", "k1", "k2", "k3", "k4", "k5"};
    for (int i = 0; i < 6; i++) {
        e[i] = entry_new(keys[i], 2, i);
        CHECK(e[i] != NULL);
        if (e[i] == NULL)
            return;
        /* 0..2: one hash; 3..5: other hashes, the same bucket (mod 8). */
        sy_strmap_insert(&m, &e[i]->node, i < 3 ? 42u : 42u + 8u * (uint64_t)i);
    }
    CHECK_EQU(m.count, 6);
    for (int i = 0; i < 6; i++) {
        sy_strmap_node_t *n = sy_strmap_find(&m, keys[i], 2, i < 3 ? 42u : 42u + 8u * (uint64_t)i);
        CHECK(n == &e[i]->node);
    }
    CHECK(sy_strmap_find(&m, "k9", 2, 42u) == NULL);
    CHECK(sy_strmap_find(&m, "k0", 2, 42u + 8u) == NULL); /* right key, wrong hash */
    /* Out of the middle of a chain, then its head and tail. */
    CHECK(sy_strmap_remove(&m, &e[1]->node));
    CHECK(sy_strmap_find(&m, "k0", 2, 42u) == &e[0]->node);
    CHECK(sy_strmap_find(&m, "k2", 2, 42u) == &e[2]->node);
    CHECK(sy_strmap_remove(&m, &e[2]->node));
    CHECK(sy_strmap_remove(&m, &e[0]->node));
    CHECK(sy_strmap_find(&m, "k0", 2, 42u) == NULL);
    CHECK_EQU(m.count, 3);
    for (int i = 0; i < 3; i++)
        sy_free(e[i]);
    free_all(&m);
}

/* Past one entry per bucket the buckets double; every entry stays found. */
static void test_growth(void) {
    enum { N = 5000 };
    sy_strmap_t m;
    CHECK_EQ(sy_strmap_init(&m, 4, entry_key), 0);
    char key[32];
    for (int i = 0; i < N; i++) {
        int len = snprintf(key, sizeof(key), "topic-%d", i);
        entry_t *e = entry_new(key, (size_t)len, i);
        CHECK(e != NULL);
        if (e == NULL)
            break;
        insert(&m, e);
        CHECK(m.count <= m.nbuckets || m.nbuckets < 4); /* grown as it went */
    }
    CHECK_EQU(m.count, N);
    CHECK_EQU(m.nbuckets, 8192);
    CHECK((m.nbuckets & (m.nbuckets - 1)) == 0);
    int found = 0;
    for (int i = 0; i < N; i++) {
        int len = snprintf(key, sizeof(key), "topic-%d", i);
        entry_t *e = find(&m, key, (size_t)len);
        found += e != NULL && e->value == i;
    }
    CHECK_EQ(found, N);
    /* Removing every other one leaves the rest. */
    for (int i = 0; i < N; i += 2) {
        int len = snprintf(key, sizeof(key), "topic-%d", i);
        entry_t *e = find(&m, key, (size_t)len);
        CHECK(e != NULL);
        if (e != NULL) {
            CHECK(sy_strmap_remove(&m, &e->node));
            sy_free(e);
        }
    }
    CHECK_EQU(m.count, N / 2);
    found = 0;
    for (int i = 0; i < N; i++) {
        int len = snprintf(key, sizeof(key), "topic-%d", i);
        found += (find(&m, key, (size_t)len) != NULL) == (i % 2 == 1);
    }
    CHECK_EQ(found, N);
    free_all(&m);
}

/* A walk sees every entry once, and survives the removal of the entry it
 * just returned. */
static void test_walk(void) {
    enum { N = 300 };
    sy_strmap_t m;
    CHECK_EQ(sy_strmap_init(&m, 64, entry_key), 0);
    char key[32];
    for (int i = 0; i < N; i++) {
        int len = snprintf(key, sizeof(key), "w%d", i);
        entry_t *e = entry_new(key, (size_t)len, i);
        CHECK(e != NULL);
        if (e == NULL)
            return;
        insert(&m, e);
    }
    static unsigned char seen[N];
    memset(seen, 0, sizeof(seen));
    sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
    sy_strmap_node_t *n;
    size_t walked = 0;
    while ((n = sy_strmap_next(&m, &it)) != NULL) {
        entry_t *e = SY_STRMAP_ENTRY(n, entry_t, node);
        seen[e->value]++;
        walked++;
        if (e->value % 3 == 0) { /* removed and freed mid-walk */
            CHECK(sy_strmap_remove(&m, n));
            sy_free(e);
        }
    }
    CHECK_EQU(walked, N);
    int once = 0;
    for (int i = 0; i < N; i++)
        once += seen[i] == 1;
    CHECK_EQ(once, N);
    CHECK_EQU(m.count, N - (N + 2) / 3);
    /* An empty map's walk ends at once. */
    sy_strmap_t empty;
    CHECK_EQ(sy_strmap_init(&empty, 4, entry_key), 0);
    sy_strmap_iter_t it2 = SY_STRMAP_ITER_INIT;
    CHECK(sy_strmap_next(&empty, &it2) == NULL);
    sy_strmap_destroy(&empty);
    free_all(&m);
}

int main(void) {
    test_hash();
    test_basic();
    test_collisions();
    test_growth();
    test_walk();
    return check_report("test_strmap");
}
