/* sy_tokens — see sy_tokens.h. */
#include "auth/sy_tokens.h"

#include <string.h>

#include "base/sy_alloc.h"

static atomic_uint_fast64_t serials;

sy_tokens_t *sy_tokens_new(sy_jwt_keys_t *keys, const char *audience, size_t audience_len, const char *issuer,
                           size_t issuer_len, uint32_t leeway_s) {
    sy_tokens_t *t = sy_malloc(sizeof(*t) + audience_len + issuer_len + 2);
    if (t == NULL) {
        sy_jwt_keys_unref(keys);
        return NULL;
    }
    atomic_init(&t->refs, 1);
    t->serial = atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed) + 1;
    t->keys = keys;
    t->policy = (sy_jwt_policy_t){.leeway_s = leeway_s};
    char *p = t->text;
    if (audience != NULL) {
        memcpy(p, audience, audience_len);
        p[audience_len] = '\0';
        t->policy.audience = p;
        t->policy.audience_len = audience_len;
        p += audience_len + 1;
    }
    if (issuer != NULL) {
        memcpy(p, issuer, issuer_len);
        p[issuer_len] = '\0';
        t->policy.issuer = p;
        t->policy.issuer_len = issuer_len;
    }
    return t;
}

void sy_tokens_ref(sy_tokens_t *t) { atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed); }

void sy_tokens_unref(sy_tokens_t *t) {
    if (t == NULL || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    sy_jwt_keys_unref(t->keys);
    sy_free(t);
}
