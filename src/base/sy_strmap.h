/*
 * sy_strmap — a small intrusive hash table keyed by byte strings: the topic
 * registry (io/sy_topic.h) and the bus' channel table (bus/sy_bus_chan.h).
 *
 * An entry embeds a sy_strmap_node_t (the chain's next pointer and the
 * key's hash) and keeps its own key; the map reads an entry's key through
 * the key function given to sy_strmap_init, and only when the hashes are
 * equal. Chains hang off a power-of-two array of buckets that doubles
 * when the map holds more entries than buckets. The map allocates only
 * its buckets (sy_alloc); entries are the caller's, made and freed by it.
 * Hash: sy_strmap_hash, FNV-1a's 64-bit steps (xor a byte, multiply by
 * the FNV prime) from the basis 1469598103934665603, the one the topic
 * registry and the bus always used (FNV's published basis has one more
 * digit, 14695981039346656037); any fixed basis hashes as well.
 *
 * Threads: none of its own; the caller serialises every call on one map
 * (the topics' mutex, or the bus thread alone). sy_strmap_hash is a pure
 * function, for any thread.
 *
 * Ownership: the map owns its buckets only (sy_strmap_destroy frees them);
 * entries and their keys stay the caller's, linked in, never copied nor
 * freed by the map.
 *
 * Errors: sy_strmap_init returns 0 or ENOMEM. A failure to grow is not one:
 * the chains get longer and every operation stays correct.
 */
#ifndef SY_STRMAP_H
#define SY_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

typedef struct sy_strmap_node {
    struct sy_strmap_node *next; /* the bucket's chain */
    uint64_t hash;               /* sy_strmap_hash of the entry's key */
} sy_strmap_node_t;

/* The key of the entry that embeds n: its bytes, and their count in *len. */
typedef const char *(*sy_strmap_key_fn)(const sy_strmap_node_t *n, size_t *len);

typedef struct sy_strmap {
    sy_strmap_node_t **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;    /* entries in the map */
    sy_strmap_key_fn key;
} sy_strmap_t;

/* The entry of type `type` whose member `member` is the node n. */
#define SY_STRMAP_ENTRY(n, type, member) ((type *)(void *)((char *)(n)-offsetof(type, member)))

/* An empty map with min_buckets buckets (a power of two). 0 or ENOMEM. */
sy_err_t sy_strmap_init(sy_strmap_t *m, size_t min_buckets, sy_strmap_key_fn key);
/* Frees the buckets. The entries are the caller's: walk them first
 * (sy_strmap_next) to free them. */
void sy_strmap_destroy(sy_strmap_t *m);

/* The hash of s[0..len) (see above). */
uint64_t sy_strmap_hash(const char *s, size_t len);

/* The node whose key is s[0..len) (hash: sy_strmap_hash of it), or NULL. */
sy_strmap_node_t *sy_strmap_find(const sy_strmap_t *m, const char *s, size_t len, uint64_t hash);
/* Adds n with its key's hash (set in n->hash); no entry with that key may
 * be in the map. Doubles the buckets past one entry per bucket. */
void sy_strmap_insert(sy_strmap_t *m, sy_strmap_node_t *n, uint64_t hash);
/* Takes n out of the map; false when it was not in it. */
bool sy_strmap_remove(sy_strmap_t *m, sy_strmap_node_t *n);

/* A walk over every node, in no particular order. */
typedef struct sy_strmap_iter {
    size_t bucket;          /* the next bucket to read */
    sy_strmap_node_t *next; /* the next node of the current chain */
} sy_strmap_iter_t;

#define SY_STRMAP_ITER_INIT \
    { 0, NULL }

/* The walk's next node, or NULL at the end. The walk survives the removal
 * (or freeing) of the node it just returned, and of no other; an insert
 * during a walk may grow the map and spoil it. */
sy_strmap_node_t *sy_strmap_next(const sy_strmap_t *m, sy_strmap_iter_t *it);

#endif
