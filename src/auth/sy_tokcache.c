/* sy_tokcache — see sy_tokcache.h. SipHash-2-4 as its paper defines it
 * (Aumasson and Bernstein, 2012). */
#include "auth/sy_tokcache.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_random.h"

typedef struct entry {
    uint64_t hash; /* 0: empty */
    uint32_t used; /* the cache's clock at its last use */
    uint8_t result;
} entry_t;

struct sy_tokcache {
    uint8_t key[16];
    uint64_t serial; /* the key set the entries belong to */
    uint32_t clock;
    size_t count;
    entry_t e[SY_TOKCACHE_SETS][SY_TOKCACHE_WAYS];
};

static uint64_t rotl(uint64_t x, unsigned b) { return (x << b) | (x >> (64 - b)); }

static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* One SipRound over the state v[0..3]. */
static void sipround(uint64_t v[4]) {
    v[0] += v[1];
    v[1] = rotl(v[1], 13) ^ v[0];
    v[0] = rotl(v[0], 32);
    v[2] += v[3];
    v[3] = rotl(v[3], 16) ^ v[2];
    v[0] += v[3];
    v[3] = rotl(v[3], 21) ^ v[0];
    v[2] += v[1];
    v[1] = rotl(v[1], 17) ^ v[2];
    v[2] = rotl(v[2], 32);
}

uint64_t sy_siphash24(const uint8_t key[16], const void *in, size_t len) {
    const uint8_t *p = in;
    uint64_t k0 = le64(key), k1 = le64(key + 8);
    uint64_t v[4] = {k0 ^ UINT64_C(0x736f6d6570736575), k1 ^ UINT64_C(0x646f72616e646f6d),
                     k0 ^ UINT64_C(0x6c7967656e657261), k1 ^ UINT64_C(0x7465646279746573)};
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = le64(p + i);
        v[3] ^= m;
        sipround(v);
        sipround(v);
        v[0] ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; i++)
        b |= (uint64_t)p[whole + i] << (8 * i);
    v[3] ^= b;
    sipround(v);
    sipround(v);
    v[0] ^= b;
    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++)
        sipround(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

sy_tokcache_t *sy_tokcache_new(void) {
    sy_tokcache_t *c = sy_calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    uint64_t a = sy_random_u64(), b = sy_random_u64();
    memcpy(c->key, &a, 8);
    memcpy(c->key + 8, &b, 8);
    return c;
}

void sy_tokcache_free(sy_tokcache_t *c) { sy_free(c); }

bool sy_tokcache_keeps(sy_jwt_result_t r) {
    switch (r) {
    case SY_JWT_MALFORMED:
    case SY_JWT_ALG:
    case SY_JWT_KEY:
    case SY_JWT_SIGNATURE:
    case SY_JWT_EXPIRED:
    case SY_JWT_AUDIENCE:
    case SY_JWT_ISSUER:
    case SY_JWT_CLAIMS:
        return true;
    default:
        return false;
    }
}

uint64_t sy_tokcache_hash(const sy_tokcache_t *c, const char *token, size_t len) {
    uint64_t h = sy_siphash24(c->key, token, len);
    return h != 0 ? h : 1; /* 0 marks an empty entry */
}

/* Empties c when its entries belong to another key set than serial. */
static void same_set(sy_tokcache_t *c, uint64_t serial) {
    if (c->serial == serial)
        return;
    memset(c->e, 0, sizeof(c->e));
    c->count = 0;
    c->serial = serial;
}

static entry_t *set_of(sy_tokcache_t *c, uint64_t hash) { return c->e[hash % SY_TOKCACHE_SETS]; }

sy_jwt_result_t sy_tokcache_find(sy_tokcache_t *c, uint64_t serial, uint64_t hash) {
    same_set(c, serial);
    entry_t *s = set_of(c, hash);
    for (int i = 0; i < SY_TOKCACHE_WAYS; i++) {
        if (s[i].hash == hash) {
            s[i].used = ++c->clock;
            return (sy_jwt_result_t)s[i].result;
        }
    }
    return SY_JWT_OK;
}

void sy_tokcache_add(sy_tokcache_t *c, uint64_t serial, uint64_t hash, sy_jwt_result_t r) {
    if (!sy_tokcache_keeps(r))
        return;
    same_set(c, serial);
    entry_t *s = set_of(c, hash), *victim = &s[0];
    for (int i = 0; i < SY_TOKCACHE_WAYS; i++) {
        if (s[i].hash == hash || s[i].hash == 0) {
            victim = &s[i];
            break;
        }
        /* The least recently used, by the difference from now (the clock
         * may wrap: a difference does not mind). */
        if (c->clock - s[i].used > c->clock - victim->used)
            victim = &s[i];
    }
    if (victim->hash == 0)
        c->count++;
    *victim = (entry_t){.hash = hash, .used = ++c->clock, .result = (uint8_t)r};
}

size_t sy_tokcache_count(const sy_tokcache_t *c) { return c->count; }
