/* sy_jwt_claims — a verified token's claims (RFC 7519 section 4.1, and
 * symphony's "topics") checked against the policy, and the grant they make:
 * one block holding the sub and the topic patterns. See sy_jwt.h. */
#include "auth/sy_jwt_int.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_json.h"

typedef struct pattern {
    const char *s;
    size_t len;
    bool prefix; /* s was followed by '*' */
} pattern_t;

struct sy_jwt_grant {
    int64_t exp;
    const char *sub; /* NULL: none */
    size_t sub_len;
    pattern_t *pat[2]; /* by sy_jwt_action_t */
    size_t n[2];
};

/* The claims read here, each the one member of its name. */
enum { C_EXP, C_NBF, C_AUD, C_ISS, C_SUB, C_TOPICS, C_COUNT };
static const char *const CLAIM_NAMES[C_COUNT] = {"exp", "nbf", "aud", "iss", "sub", "topics"};
static const char *const ACTION_NAMES[2] = {"subscribe", "publish"};

static bool str_eq(yyjson_val *v, const char *s, size_t len) {
    return yyjson_is_str(v) && yyjson_get_len(v) == len && memcmp(yyjson_get_str(v), s, len) == 0;
}

static bool aud_ok(yyjson_val *aud) {
    if (aud == NULL || yyjson_is_str(aud))
        return true;
    if (!yyjson_is_arr(aud))
        return false;
    size_t i, max;
    yyjson_val *v;
    yyjson_arr_foreach(aud, i, max, v) {
        if (!yyjson_is_str(v))
            return false;
    }
    return true;
}

static bool aud_names(yyjson_val *aud, const char *s, size_t len) {
    if (yyjson_is_str(aud))
        return str_eq(aud, s, len);
    size_t i, max;
    yyjson_val *v;
    yyjson_arr_foreach(aud, i, max, v) {
        if (str_eq(v, s, len))
            return true;
    }
    return false;
}

/* "topics": lists[a] is the action's array or NULL; false when the claim
 * is not {"subscribe": [strings], "publish": [strings]} with valid entries
 * (other members are left for later versions). */
static bool topics_ok(yyjson_val *topics, yyjson_val *lists[2], size_t *bytes) {
    lists[0] = lists[1] = NULL;
    *bytes = 0;
    if (topics == NULL)
        return true;
    if (!yyjson_is_obj(topics))
        return false;
    size_t i, max;
    yyjson_val *key, *val;
    yyjson_obj_foreach(topics, i, max, key, val) {
        for (int a = 0; a < 2; a++) {
            if (!yyjson_equals_str(key, ACTION_NAMES[a]))
                continue;
            if (lists[a] != NULL || !yyjson_is_arr(val))
                return false;
            lists[a] = val;
        }
    }
    for (int a = 0; a < 2; a++) {
        size_t j, jmax;
        yyjson_val *v;
        yyjson_arr_foreach(lists[a], j, jmax, v) {
            const char *s = yyjson_get_str(v);
            size_t len = yyjson_get_len(v);
            if (s == NULL || len == 0 || memchr(s, '*', len - 1) != NULL)
                return false; /* not a string, empty, or '*' before the end */
            *bytes += len;
        }
    }
    return true;
}

/* exp rounded up into int64 (the token is valid while now < exp). */
static int64_t exp_seconds(double exp) {
    if (exp >= 9.2e18)
        return INT64_MAX;
    if (exp <= 1)
        return 1;
    int64_t t = (int64_t)exp;
    return (double)t < exp ? t + 1 : t;
}

static sy_jwt_result_t make_grant(yyjson_val *c[C_COUNT], yyjson_val *lists[2], size_t bytes, sy_jwt_grant_t **out) {
    size_t n[2] = {yyjson_arr_size(lists[0]), yyjson_arr_size(lists[1])};
    size_t sub_len = yyjson_get_len(c[C_SUB]);
    sy_jwt_grant_t *g = sy_malloc(sizeof(*g) + (n[0] + n[1]) * sizeof(pattern_t) + sub_len + bytes + 1);
    if (g == NULL)
        return SY_JWT_MEMORY;
    pattern_t *pat = (pattern_t *)(g + 1);
    char *text = (char *)(pat + n[0] + n[1]);
    g->exp = c[C_EXP] != NULL ? exp_seconds(yyjson_get_num(c[C_EXP])) : 0;
    g->sub = NULL;
    g->sub_len = 0;
    if (c[C_SUB] != NULL) {
        memcpy(text, yyjson_get_str(c[C_SUB]), sub_len);
        g->sub = text;
        g->sub_len = sub_len;
        text += sub_len;
    }
    for (int a = 0; a < 2; a++) {
        g->pat[a] = pat;
        g->n[a] = n[a];
        size_t j, jmax;
        yyjson_val *v;
        yyjson_arr_foreach(lists[a], j, jmax, v) {
            size_t len = yyjson_get_len(v);
            bool prefix = yyjson_get_str(v)[len - 1] == '*';
            memcpy(text, yyjson_get_str(v), len - prefix);
            *pat++ = (pattern_t){.s = text, .len = len - prefix, .prefix = prefix};
            text += len - prefix;
        }
    }
    *out = g;
    return SY_JWT_OK;
}

sy_jwt_result_t sy_jwt_claims_grant(const uint8_t *json, size_t len, const sy_jwt_policy_t *p, int64_t now_s,
                                    sy_jwt_grant_t **out) {
    bool nomem = false;
    yyjson_doc *doc = sy_json_read((const char *)json, len, &nomem);
    if (doc == NULL)
        return nomem ? SY_JWT_MEMORY : SY_JWT_MALFORMED;
    yyjson_val *root = yyjson_doc_get_root(doc), *key, *val;
    yyjson_val *c[C_COUNT] = {NULL};
    sy_jwt_result_t r = SY_JWT_MALFORMED;
    if (!yyjson_is_obj(root))
        goto done;
    size_t i, max;
    yyjson_obj_foreach(root, i, max, key, val) {
        for (int n = 0; n < C_COUNT; n++) {
            if (!yyjson_equals_str(key, CLAIM_NAMES[n]))
                continue;
            if (c[n] != NULL)
                goto done; /* a claim named twice */
            c[n] = val;
        }
    }
    if ((c[C_EXP] != NULL && !yyjson_is_num(c[C_EXP])) || (c[C_NBF] != NULL && !yyjson_is_num(c[C_NBF])) ||
        !aud_ok(c[C_AUD]) || (c[C_ISS] != NULL && !yyjson_is_str(c[C_ISS])) ||
        (c[C_SUB] != NULL && !yyjson_is_str(c[C_SUB])))
        goto done;
    double now = (double)now_s, leeway = (double)(p != NULL ? p->leeway_s : 0);
    yyjson_val *lists[2];
    size_t bytes = 0;
    if (c[C_EXP] != NULL && now - leeway >= yyjson_get_num(c[C_EXP]))
        r = SY_JWT_EXPIRED;
    else if (c[C_NBF] != NULL && now + leeway < yyjson_get_num(c[C_NBF]))
        r = SY_JWT_NOT_YET;
    else if (p != NULL && p->issuer != NULL && !str_eq(c[C_ISS], p->issuer, p->issuer_len))
        r = SY_JWT_ISSUER;
    else if (p != NULL && p->audience != NULL &&
             (c[C_AUD] == NULL || !aud_names(c[C_AUD], p->audience, p->audience_len)))
        r = SY_JWT_AUDIENCE;
    else if (!topics_ok(c[C_TOPICS], lists, &bytes))
        r = SY_JWT_CLAIMS;
    else
        r = make_grant(c, lists, bytes, out);
done:
    yyjson_doc_free(doc);
    return r;
}

bool sy_jwt_allows(const sy_jwt_grant_t *g, sy_jwt_action_t a, const char *topic, size_t len) {
    if (g == NULL || (a != SY_JWT_SUBSCRIBE && a != SY_JWT_PUBLISH))
        return false;
    for (size_t i = 0; i < g->n[a]; i++) {
        const pattern_t *p = &g->pat[a][i];
        if (p->prefix ? p->len == 0 || (len >= p->len && memcmp(topic, p->s, p->len) == 0)
                      : len == p->len && memcmp(topic, p->s, len) == 0)
            return true;
    }
    return false;
}

const char *sy_jwt_grant_sub(const sy_jwt_grant_t *g, size_t *len) {
    *len = g != NULL ? g->sub_len : 0;
    return g != NULL ? g->sub : NULL;
}

int64_t sy_jwt_grant_exp(const sy_jwt_grant_t *g) { return g != NULL ? g->exp : 0; }

void sy_jwt_grant_free(sy_jwt_grant_t *g) { sy_free(g); }
