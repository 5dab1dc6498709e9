/* sy_strmap — see sy_strmap.h. */
#include "base/sy_strmap.h"

#include <string.h>

#include "base/sy_alloc.h"

sy_err_t sy_strmap_init(sy_strmap_t *m, size_t min_buckets, sy_strmap_key_fn key) {
    memset(m, 0, sizeof(*m));
    m->buckets = sy_calloc(min_buckets, sizeof(*m->buckets));
    if (m->buckets == NULL)
        return ENOMEM;
    m->nbuckets = min_buckets;
    m->key = key;
    return 0;
}

void sy_strmap_destroy(sy_strmap_t *m) {
    sy_free(m->buckets);
    memset(m, 0, sizeof(*m));
}

uint64_t sy_strmap_hash(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ULL; /* see sy_strmap.h */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

sy_strmap_node_t *sy_strmap_find(const sy_strmap_t *m, const char *s, size_t len, uint64_t hash) {
    for (sy_strmap_node_t *n = m->buckets[hash & (m->nbuckets - 1)]; n != NULL; n = n->next) {
        if (n->hash != hash)
            continue;
        size_t klen;
        const char *k = m->key(n, &klen);
        if (klen == len && memcmp(k, s, len) == 0)
            return n;
    }
    return NULL;
}

/* Doubles the buckets. Failure is harmless: the chains get longer. */
static void grow(sy_strmap_t *m) {
    size_t n = m->nbuckets * 2;
    sy_strmap_node_t **b = sy_calloc(n, sizeof(*b));
    if (b == NULL)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        sy_strmap_node_t *e = m->buckets[i];
        while (e != NULL) {
            sy_strmap_node_t *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    sy_free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

void sy_strmap_insert(sy_strmap_t *m, sy_strmap_node_t *n, uint64_t hash) {
    size_t i = hash & (m->nbuckets - 1);
    n->hash = hash;
    n->next = m->buckets[i];
    m->buckets[i] = n;
    if (++m->count > m->nbuckets)
        grow(m);
}

bool sy_strmap_remove(sy_strmap_t *m, sy_strmap_node_t *n) {
    sy_strmap_node_t **p = &m->buckets[n->hash & (m->nbuckets - 1)];
    while (*p != NULL && *p != n)
        p = &(*p)->next;
    if (*p == NULL)
        return false;
    *p = n->next;
    m->count--;
    return true;
}

sy_strmap_node_t *sy_strmap_next(const sy_strmap_t *m, sy_strmap_iter_t *it) {
    while (it->next == NULL) {
        if (it->bucket >= m->nbuckets)
            return NULL;
        it->next = m->buckets[it->bucket++];
    }
    sy_strmap_node_t *n = it->next;
    it->next = n->next;
    return n;
}
