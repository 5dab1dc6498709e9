/* sy_jwt — a token's way through: the compact form split and decoded, the
 * header read, the key chosen, the signature checked (sy_jwt_sig.c), then
 * the claims (sy_jwt_claims.c). See sy_jwt.h. */
#include "auth/sy_jwt_int.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_json.h"

static const char *const RESULT_NAMES[] = {
#define SY_JWT_NAME_(e, name, reason) name,
    SY_JWT_RESULTS_LIST(SY_JWT_NAME_)
#undef SY_JWT_NAME_
};

static const char *const RESULT_REASONS[] = {
#define SY_JWT_REASON_(e, name, reason) reason,
    SY_JWT_RESULTS_LIST(SY_JWT_REASON_)
#undef SY_JWT_REASON_
};

const char *sy_jwt_result_name(sy_jwt_result_t r) {
    return (unsigned)r < (unsigned)SY_JWT_RESULTS ? RESULT_NAMES[r] : "unknown";
}

const char *sy_jwt_result_reason(sy_jwt_result_t r) {
    return (unsigned)r < (unsigned)SY_JWT_RESULTS ? RESULT_REASONS[r] : "the token was refused";
}

/* The three parts of a compact JWS. */
typedef struct jws {
    const char *part[3];
    size_t len[3];
} jws_t;

/* Exactly two dots, every other byte base64url. */
static bool split(const char *token, size_t len, jws_t *j) {
    const char *p = token, *end = token + len;
    for (int i = 0; i < 3; i++) {
        const char *dot = i < 2 ? memchr(p, '.', (size_t)(end - p)) : end;
        if (dot == NULL)
            return false;
        j->part[i] = p;
        j->len[i] = (size_t)(dot - p);
        if (!sy_jwt_b64url_alphabet(p, j->len[i]))
            return false; /* a third dot, '=', whitespace, '+', '/' ... */
        p = dot + (i < 2);
    }
    return j->len[0] > 0 && j->len[1] > 0;
}

static bool is_none(const char *s, size_t len) {
    static const char none[] = "none";
    if (len != 4)
        return false;
    for (size_t i = 0; i < 4; i++)
        if ((s[i] | 0x20) != none[i])
            return false;
    return true;
}

/* The header's alg and kid (pointing into doc): SY_JWT_OK, MALFORMED or ALG. */
static sy_jwt_result_t read_header(yyjson_doc *doc, sy_jwt_alg_t *alg, const char **kid, size_t *kid_len) {
    yyjson_val *root = yyjson_doc_get_root(doc), *key, *val;
    yyjson_val *alg_v = NULL, *kid_v = NULL, *typ_v = NULL;
    if (!yyjson_is_obj(root))
        return SY_JWT_MALFORMED;
    size_t i, max;
    yyjson_obj_foreach(root, i, max, key, val) {
        yyjson_val **slot = yyjson_equals_str(key, "alg")   ? &alg_v
                            : yyjson_equals_str(key, "kid") ? &kid_v
                            : yyjson_equals_str(key, "typ") ? &typ_v
                                                            : NULL;
        if (yyjson_equals_str(key, "crit"))
            return SY_JWT_MALFORMED; /* no extension is understood here */
        if (slot == NULL)
            continue;
        if (*slot != NULL || !yyjson_is_str(val))
            return SY_JWT_MALFORMED; /* named twice, or not a string */
        *slot = val;
    }
    if (alg_v == NULL)
        return SY_JWT_MALFORMED;
    const char *a = yyjson_get_str(alg_v);
    size_t a_len = yyjson_get_len(alg_v);
    if (is_none(a, a_len) || !sy_jwt_alg_parse(a, a_len, alg))
        return SY_JWT_ALG;
    *kid = kid_v != NULL && yyjson_get_len(kid_v) > 0 ? yyjson_get_str(kid_v) : NULL;
    *kid_len = *kid != NULL ? yyjson_get_len(kid_v) : 0;
    return SY_JWT_OK;
}

static bool kid_is(const sy_jwt_key_t *key, const char *kid, size_t len) {
    return key->kid != NULL && key->kid_len == len && memcmp(key->kid, kid, len) == 0;
}

/* The work of checking a signature with key (sy_jwt.h's weights; an RSA
 * key's grows with the square of its size). */
static uint32_t key_work(const sy_jwt_key_t *key) {
    switch (key->alg) {
    case SY_JWT_HS256:
        return SY_JWT_WORK_HS256;
    case SY_JWT_ES256:
        return SY_JWT_WORK_ES256;
    case SY_JWT_EDDSA:
        return SY_JWT_WORK_EDDSA;
    default: {
        int bits = EVP_PKEY_get_bits(key->pkey);
        uint32_t k = bits > 2048 ? (uint32_t)(bits + 2047) / 2048 : 1; /* <= 8 (16,384 bits) */
        return SY_JWT_WORK_RS256 * k * k;
    }
    }
}

/* sy_jwt_sig_verify, counted in *work. */
static sy_jwt_result_t checked(const sy_jwt_key_t *key, const uint8_t *input, size_t len, const uint8_t *sig,
                               size_t sig_len, sy_jwt_work_t *work) {
    work->checks++;
    work->units += key_work(key);
    return sy_jwt_sig_verify(key, input, len, sig, sig_len);
}

/* The key rules of sy_jwt.h, and the signature checked with the key (or
 * keys) they choose; *work counts the checks made. */
static sy_jwt_result_t check_with_keys(const sy_jwt_keys_t *k, sy_jwt_alg_t alg, const char *kid, size_t kid_len,
                                       const uint8_t *input, size_t len, const uint8_t *sig, size_t sig_len,
                                       sy_jwt_work_t *work) {
    bool kid_other_alg = false;
    if (kid != NULL) {
        for (size_t i = 0; i < k->n; i++) {
            if (!kid_is(&k->v[i], kid, kid_len))
                continue;
            if (k->v[i].alg == alg)
                return checked(&k->v[i], input, len, sig, sig_len, work);
            kid_other_alg = true;
        }
        if (kid_other_alg)
            return SY_JWT_ALG;
    }
    size_t of_alg = 0, kidless = 0;
    const sy_jwt_key_t *only = NULL;
    for (size_t i = 0; i < k->n; i++) {
        if (k->v[i].alg != alg)
            continue;
        of_alg++;
        kidless += k->v[i].kid == NULL;
        only = &k->v[i];
    }
    if (of_alg == 0)
        return k->n == 0 ? SY_JWT_KEY : SY_JWT_ALG;
    if (kid != NULL)
        return of_alg == 1 && only->kid == NULL ? checked(only, input, len, sig, sig_len, work) : SY_JWT_KEY;
    if (kidless == 0)
        return of_alg == 1 ? checked(only, input, len, sig, sig_len, work) : SY_JWT_KEY;
    sy_jwt_result_t r = SY_JWT_SIGNATURE;
    for (size_t i = 0; i < k->n && r == SY_JWT_SIGNATURE; i++)
        if (k->v[i].alg == alg && k->v[i].kid == NULL)
            r = checked(&k->v[i], input, len, sig, sig_len, work);
    return r;
}

/* The JWS layer. On SY_JWT_OK with payload != NULL, *payload is the decoded
 * payload at the start of a block the caller frees (sy_free). */
static sy_jwt_result_t check_jws(const sy_jwt_keys_t *k, const char *token, size_t len, uint8_t **payload,
                                 size_t *payload_len, sy_jwt_work_t *work) {
    jws_t j;
    if (token == NULL || len == 0 || len > SY_JWT_MAX_LEN || !split(token, len, &j))
        return SY_JWT_MALFORMED;
    size_t cap[3];
    for (int i = 0; i < 3; i++)
        cap[i] = SY_JWT_B64_DECODED_MAX(j.len[i]);
    /* One block: the header's bytes, then the signature's; the payload
     * goes over the header's once that is read. */
    size_t head_cap = cap[0] > cap[1] ? cap[0] : cap[1];
    uint8_t *buf = sy_malloc(head_cap + cap[2]), *sig = buf + head_cap;
    if (buf == NULL)
        return SY_JWT_MEMORY;
    size_t head_len = 0, sig_len = 0, body_len = 0;
    sy_jwt_result_t r = SY_JWT_MALFORMED;
    if (!sy_jwt_b64url_decode(j.part[0], j.len[0], buf, &head_len) ||
        !sy_jwt_b64url_decode(j.part[2], j.len[2], sig, &sig_len))
        goto done;
    bool nomem = false;
    yyjson_doc *doc = sy_json_read((const char *)buf, head_len, &nomem);
    if (doc == NULL) {
        r = nomem ? SY_JWT_MEMORY : SY_JWT_MALFORMED;
        goto done;
    }
    sy_jwt_alg_t alg;
    const char *kid = NULL;
    size_t kid_len = 0;
    r = read_header(doc, &alg, &kid, &kid_len);
    if (r == SY_JWT_OK)
        r = check_with_keys(k, alg, kid, kid_len, (const uint8_t *)token, j.len[0] + 1 + j.len[1], sig, sig_len, work);
    yyjson_doc_free(doc);
    if (r == SY_JWT_OK && !sy_jwt_b64url_decode(j.part[1], j.len[1], buf, &body_len))
        r = SY_JWT_MALFORMED;
done:
    if (r == SY_JWT_OK && payload != NULL) {
        *payload = buf;
        *payload_len = body_len;
    } else {
        sy_free(buf);
    }
    return r;
}

sy_jwt_result_t sy_jwt_verify_signature(const sy_jwt_keys_t *k, const char *token, size_t len) {
    sy_jwt_work_t work = {0};
    return check_jws(k, token, len, NULL, NULL, &work);
}

sy_jwt_result_t sy_jwt_verify(const sy_jwt_keys_t *k, const sy_jwt_policy_t *p, const char *token, size_t len,
                              int64_t now_s, sy_jwt_grant_t **out) {
    sy_jwt_work_t work = {0};
    return sy_jwt_verify_work(k, p, token, len, now_s, out, &work);
}

sy_jwt_result_t sy_jwt_verify_work(const sy_jwt_keys_t *k, const sy_jwt_policy_t *p, const char *token, size_t len,
                                   int64_t now_s, sy_jwt_grant_t **out, sy_jwt_work_t *work) {
    uint8_t *payload = NULL;
    size_t payload_len = 0;
    *out = NULL;
    sy_jwt_result_t r = check_jws(k, token, len, &payload, &payload_len, work);
    if (r != SY_JWT_OK)
        return r;
    r = sy_jwt_claims_grant(payload, payload_len, p, now_s, out);
    sy_free(payload);
    return r;
}
