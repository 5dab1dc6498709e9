/* sy_v2 — see sy_v2.h. */
#include "proto/sy_v2.h"

#include <stdio.h>
#include <string.h>

#include <yyjson.h>

#include "base/sy_alloc.h"
#include "base/sy_json.h"
#include "proto/sy_since.h"
#include "proto/sy_utf8.h"
#include "proto/sy_v1.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"

/* A request id: an integer 0 to 2^32-1. */
static bool read_rid(yyjson_val *v, uint32_t *out) {
    if (!yyjson_is_uint(v) && !(yyjson_is_sint(v) && yyjson_get_sint(v) >= 0))
        return false;
    uint64_t n = yyjson_get_uint(v);
    if (n > UINT32_MAX)
        return false;
    *out = (uint32_t)n;
    return true;
}

/* A topic: a string of 1 to SY_V2_TOPIC_MAX bytes (the parser checked its
 * UTF-8). */
static bool read_topic(yyjson_val *v, const char **s, size_t *n) {
    if (!yyjson_is_str(v))
        return false;
    *s = yyjson_get_str(v);
    *n = yyjson_get_len(v);
    return *n > 0 && *n <= SY_V2_TOPIC_MAX;
}

/* An optional token: none (absent or null), or a string of 1 to
 * SY_V2_TOKEN_MAX bytes. False with *why when it is something else. */
static bool read_token(yyjson_val *v, const char **s, size_t *n, const char **why) {
    if (v == NULL || yyjson_is_null(v))
        return true;
    if (!yyjson_is_str(v) || yyjson_get_len(v) == 0 || yyjson_get_len(v) > SY_V2_TOKEN_MAX) {
        *why = "token must be a string of 1 to 8192 bytes";
        return false;
    }
    *s = yyjson_get_str(v);
    *n = yyjson_get_len(v);
    return true;
}

/* "16 hex" -> u64, as in sy.since. */
static bool read_epoch(yyjson_val *v, uint64_t *out) {
    return yyjson_is_str(v) && sy_since_epoch(yyjson_get_str(v), yyjson_get_len(v), out);
}

/* An offset: a decimal string of 1 to 20 digits within u64 (as in sy.since),
 * or a JSON integer >= 0. */
static bool read_offset(yyjson_val *v, uint64_t *out) {
    if (yyjson_is_uint(v) || (yyjson_is_sint(v) && yyjson_get_sint(v) >= 0)) {
        *out = yyjson_get_uint(v);
        return true;
    }
    if (!yyjson_is_str(v))
        return false;
    const char *s = yyjson_get_str(v);
    size_t n = yyjson_get_len(v);
    if (n == 0 || n > 20)
        return false;
    uint64_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (o > (UINT64_MAX - d) / 10)
            return false;
        o = o * 10 + d;
    }
    *out = o;
    return true;
}

/* Checks one subscribe entry; fills what needs no allocation. lax: the
 * frame was read with its strings unchecked (read_lax): a topic or token
 * that is not UTF-8 makes the entry bad. */
static bool check_sub(yyjson_val *e, sy_v2_sub_t *out, const char **why, bool lax) {
    *out = (sy_v2_sub_t){0};
    if (!yyjson_is_obj(e)) {
        *why = "a subscribe entry must be an object";
        return false;
    }
    out->has_rid = read_rid(yyjson_obj_get(e, "rid"), &out->rid);
    bool topic_ok = read_topic(yyjson_obj_get(e, "topic"), &out->topic, &out->topic_len);
    if (!topic_ok && out->topic != NULL && out->topic_len > SY_V2_TOPIC_MAX) {
        out->topic = NULL; /* too long to be named in the answer */
        out->topic_len = 0;
    }
    if (!out->has_rid) {
        *why = "rid must be an integer from 0 to 4294967295";
        return false;
    }
    if (!topic_ok) {
        *why = "topic must be a string of 1 to 1024 bytes";
        return false;
    }
    if (lax && !sy_utf8_is_valid((const uint8_t *)out->topic, out->topic_len)) {
        out->topic = NULL; /* not to be echoed */
        out->topic_len = 0;
        *why = "topic must be UTF-8";
        return false;
    }
    yyjson_val *since = yyjson_obj_get(e, "since");
    if (since != NULL && !yyjson_is_null(since)) {
        if (!yyjson_is_obj(since) || !read_epoch(yyjson_obj_get(since, "epoch"), &out->epoch) ||
            !read_offset(yyjson_obj_get(since, "offset"), &out->offset)) {
            *why = "since must be {\"epoch\": 16 hexadecimal characters, \"offset\": a decimal string}";
            return false;
        }
        out->has_since = true;
    }
    if (!read_token(yyjson_obj_get(e, "token"), &out->token, &out->token_len, why))
        return false;
    if (lax && out->token != NULL && !sy_utf8_is_valid((const uint8_t *)out->token, out->token_len)) {
        *why = "token must be UTF-8";
        return false;
    }
    return true;
}

/* The JSON head p[0..n) as a document whose root is an object. */
static sy_v2_status_t read_head(const uint8_t *p, size_t n, yyjson_doc **doc, const char **why) {
    bool nomem;
    *doc = sy_json_read((const char *)p, n, &nomem);
    if (*doc == NULL) {
        *why = nomem ? "out of memory" : "the head is not valid JSON";
        return nomem ? SY_V2_NOMEM : SY_V2_BAD;
    }
    if (!yyjson_is_obj(yyjson_doc_get_root(*doc))) {
        yyjson_doc_free(*doc);
        *doc = NULL;
        *why = "the head must be a JSON object";
        return SY_V2_BAD;
    }
    return SY_V2_OK;
}

/* Four hex digits at p (p[0..4) readable) -> *v. */
static bool hex4(const uint8_t *p, unsigned *v) {
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return false;
        x = (x << 4) | d;
    }
    *v = x;
    return true;
}

/* A subscribe head whose strict read failed, read again for its entries:
 * strings whose bytes are not UTF-8, or that escape a lone surrogate
 * (\uD800 to \uDFFF outside a pair, which no UTF-8 string holds: each is
 * made six 0xFF bytes in a copy), are kept as they are, for check_sub to
 * refuse the entry that holds one. Anything else wrong is still the
 * strict read's error (*why untouched then). */
static sy_v2_status_t read_lax(const uint8_t *p, size_t n, yyjson_doc **doc) {
    uint8_t *copy = sy_malloc(n > 0 ? n : 1);
    if (copy == NULL)
        return SY_V2_NOMEM;
    memcpy(copy, p, n);
    for (size_t i = 0; i + 1 < n; i++) {
        if (copy[i] != '\\')
            continue;
        unsigned hi, lo;
        if (copy[i + 1] != 'u' || i + 6 > n || !hex4(copy + i + 2, &hi)) {
            i++; /* an escape of one character (or a broken one: the read says so) */
            continue;
        }
        if (hi >= 0xD800 && hi <= 0xDBFF && i + 12 <= n && copy[i + 6] == '\\' && copy[i + 7] == 'u' &&
            hex4(copy + i + 8, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            i += 11; /* a pair */
            continue;
        }
        if (hi >= 0xD800 && hi <= 0xDFFF)
            memset(copy + i, 0xFF, 6);
        i += 5;
    }
    bool nomem;
    *doc = sy_json_read_lax_utf8((const char *)copy, n, &nomem);
    sy_free(copy);
    if (*doc == NULL)
        return nomem ? SY_V2_NOMEM : SY_V2_BAD;
    if (!yyjson_is_obj(yyjson_doc_get_root(*doc))) {
        yyjson_doc_free(*doc);
        *doc = NULL;
        return SY_V2_BAD;
    }
    return SY_V2_OK;
}

sy_v2_status_t sy_v2_parse(const uint8_t *p, size_t n, sy_v2_frame_t *out, const char **why) {
    *out = (sy_v2_frame_t){0};
    if (n == 0) {
        *why = "an empty frame (a symphony.v2 frame starts with its kind)";
        return SY_V2_BAD;
    }
    out->kind = (sy_v2_kind_t)p[0];
    /* Where the head ends: the first '\n' (p, r, d), else the frame's end. */
    const uint8_t *nl = memchr(p + 1, '\n', n - 1);
    size_t head_end = nl != NULL ? (size_t)(nl - p) : n;
    switch (p[0]) {
    case SY_V2_DIRECT:
        if (n < 2 || p[1] != '\n') {
            *why = "an application message is \"d\\n\" then its payload";
            return SY_V2_BAD;
        }
        out->payload = p + 2;
        out->payload_len = n - 2;
        return SY_V2_OK;
    case SY_V2_SUBSCRIBE:
    case SY_V2_UNSUBSCRIBE:
    case SY_V2_PUBLISH:
    case SY_V2_REQUEST:
        break;
    default:
        *why = "unknown kind";
        return SY_V2_UNKNOWN;
    }
    bool payload = p[0] == SY_V2_PUBLISH || p[0] == SY_V2_REQUEST;
    if (payload && nl == NULL) {
        *why = "a publish or a request is its JSON head, \"\\n\", then its payload";
        return SY_V2_BAD;
    }
    if (!payload && nl != NULL) {
        /* Strict: a subscribe's or unsubscribe's head is the whole frame. */
        head_end = n;
    }
    yyjson_doc *doc;
    sy_v2_status_t st = read_head(p + 1, head_end - 1, &doc, why);
    if (st == SY_V2_BAD && p[0] == SY_V2_SUBSCRIBE) {
        /* A string not UTF-8 refuses its entry, not the frame. */
        sy_v2_status_t lax = read_lax(p + 1, head_end - 1, &doc);
        if (lax == SY_V2_NOMEM) {
            *why = "out of memory";
            return SY_V2_NOMEM;
        }
        if (lax == SY_V2_OK) {
            st = SY_V2_OK;
            out->lax = true;
        }
    }
    if (st != SY_V2_OK)
        return st;
    yyjson_val *root = yyjson_doc_get_root(doc);
    out->doc = doc;
    if (p[0] != SY_V2_SUBSCRIBE) {
        out->has_rid = read_rid(yyjson_obj_get(root, "rid"), &out->rid);
        if (!out->has_rid) {
            *why = "rid must be an integer from 0 to 4294967295";
            goto bad;
        }
    }
    if (p[0] == SY_V2_UNSUBSCRIBE || p[0] == SY_V2_PUBLISH) {
        if (!read_topic(yyjson_obj_get(root, "topic"), &out->topic, &out->topic_len)) {
            *why = "topic must be a string of 1 to 1024 bytes";
            goto bad;
        }
    }
    if (p[0] == SY_V2_PUBLISH) {
        if (!read_token(yyjson_obj_get(root, "token"), &out->token, &out->token_len, why))
            goto bad;
    }
    if (payload) {
        out->payload = nl + 1;
        out->payload_len = n - head_end - 1;
        return SY_V2_OK;
    }
    if (p[0] == SY_V2_SUBSCRIBE) {
        yyjson_val *subs = yyjson_obj_get(root, "subs");
        if (!yyjson_is_arr(subs) || yyjson_arr_size(subs) == 0 || yyjson_arr_size(subs) > SY_V2_BATCH_MAX) {
            *why = "subs must be an array of 1 to 1024 entries";
            goto bad;
        }
        yyjson_val *resub = yyjson_obj_get(root, "resub");
        if (resub != NULL && !yyjson_is_bool(resub)) {
            *why = "resub must be a boolean";
            goto bad;
        }
        out->resub = resub != NULL && yyjson_get_bool(resub);
        /* Each entry is checked on its own (sy_v2_sub_at): a bad one is
         * refused alone. */
        out->subs = subs;
        out->nsubs = yyjson_arr_size(subs);
    }
    return SY_V2_OK;
bad:;
    bool has_rid = out->has_rid;
    uint32_t rid = out->rid;
    sy_v2_frame_free(out);
    out->has_rid = has_rid;
    out->rid = rid;
    return SY_V2_BAD;
}

sy_v2_status_t sy_v2_sub_at(sy_v2_frame_t *f, size_t i, sy_v2_sub_t *out, const char **why) {
    yyjson_val *e = yyjson_arr_get((yyjson_val *)f->subs, i);
    if (e == NULL) {
        *out = (sy_v2_sub_t){0};
        *why = "no such entry";
        return SY_V2_BAD; /* i >= nsubs: the caller's mistake */
    }
    if (!check_sub(e, out, why, f->lax))
        return SY_V2_BAD;
    yyjson_val *data = yyjson_obj_get(e, "data");
    if (data == NULL)
        return SY_V2_OK;
    sy_json_free(f->texts);
    size_t len;
    yyjson_write_err err;
    f->texts = yyjson_val_write_opts(data, YYJSON_WRITE_NOFLAG, sy_json_alc(), &len, &err);
    if (f->texts == NULL && err.code != YYJSON_WRITE_ERROR_MEMORY_ALLOCATION) {
        *why = "data must be UTF-8"; /* cannot happen: the writer passes strings as they are */
        return SY_V2_BAD;
    }
    if (f->texts == NULL)
        return SY_V2_NOMEM;
    if (f->lax && !sy_utf8_is_valid((const uint8_t *)f->texts, len)) {
        *why = "data must be UTF-8";
        return SY_V2_BAD;
    }
    out->data = f->texts;
    out->data_len = len;
    return SY_V2_OK;
}

void sy_v2_frame_free(sy_v2_frame_t *f) {
    sy_json_free(f->texts);
    if (f->doc != NULL)
        yyjson_doc_free(f->doc);
    *f = (sy_v2_frame_t){0};
}

/* ---- answers ---------------------------------------------------------- */

#define ANSWER_FIXED 128

/* ,"key":"<s escaped>" into buf (6 bytes per input byte at most). */
static size_t put_str(char *buf, const char *key, const char *s, size_t n) {
    size_t o = (size_t)sprintf(buf, ",\"%s\":\"", key);
    o += sy_v1_json_string(buf + o, s, n);
    buf[o++] = '"';
    return o;
}

/* c{"type":"<type>","rid":<rid>|null[,"topic":...],"code":...,"reason":...} */
static sy_refbuf_t *answer(const char *type, bool has_rid, uint32_t rid, const char *topic, size_t topic_len,
                           const char *code, const char *reason) {
    if (topic != NULL && topic_len > SY_V2_TOPIC_MAX)
        return NULL;
    size_t code_len = code != NULL ? strlen(code) : 0, reason_len = reason != NULL ? strlen(reason) : 0;
    if (code_len > SY_V2_CODE_MAX)
        code_len = SY_V2_CODE_MAX;
    if (reason_len > SY_V2_REASON_MAX)
        reason_len = SY_V2_REASON_MAX;
    char buf[ANSWER_FIXED + 6 * (SY_V2_TOPIC_MAX + SY_V2_CODE_MAX + SY_V2_REASON_MAX)];
    size_t o = (size_t)sprintf(buf, "c{\"type\":\"%s\"", type);
    o += has_rid ? (size_t)sprintf(buf + o, ",\"rid\":%u", (unsigned)rid) : (size_t)sprintf(buf + o, ",\"rid\":null");
    if (topic != NULL)
        o += put_str(buf + o, "topic", topic, topic_len);
    if (code != NULL) {
        o += put_str(buf + o, "code", code, code_len);
        o += put_str(buf + o, "reason", reason, reason_len);
    }
    buf[o++] = '}';
    return sy_ws_msg_z(SY_WS_OP_TEXT, buf, o, false);
}

sy_refbuf_t *sy_v2_error_frame(bool has_rid, uint32_t rid, const char *code, const char *reason) {
    return answer("error", has_rid, rid, NULL, 0, code, reason);
}

sy_refbuf_t *sy_v2_refused_frame(uint32_t rid, const char *topic, size_t topic_len, const char *code,
                                 const char *reason) {
    return answer("refused", true, rid, topic, topic_len, code, reason);
}

sy_refbuf_t *sy_v2_refused_entry_frame(const sy_v2_sub_t *s, const char *reason) {
    return answer("refused", s->has_rid, s->rid, s->topic, s->topic_len, "bad-request", reason);
}

size_t sy_v2_limits_json(char *buf, size_t cap, const sy_v2_limits_t *l) {
    int n = snprintf(buf, cap,
                     "\"limits\":{\"maxPayload\":%llu,\"maxSubscriptions\":%lu,\"maxPending\":%lu,"
                     "\"maxTopicLength\":%d,\"maxEntries\":%d}",
                     (unsigned long long)l->max_payload, (unsigned long)l->max_subscriptions,
                     (unsigned long)l->max_pending, SY_V2_TOPIC_MAX, SY_V2_BATCH_MAX);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

sy_refbuf_t *sy_v2_hello_frame(const sy_v2_limits_t *l) {
    char buf[32 + SY_V2_LIMITS_JSON_MAX];
    size_t o = (size_t)snprintf(buf, sizeof(buf), "c{\"type\":\"hello\",");
    size_t n = sy_v2_limits_json(buf + o, sizeof(buf) - o - 1, l);
    if (n == 0)
        return NULL; /* cannot happen: the buffer holds the longest */
    o += n;
    buf[o++] = '}';
    return sy_ws_msg_z(SY_WS_OP_TEXT, buf, o, false);
}

sy_refbuf_t *sy_v2_pong_frame(void) {
    static const char pong[] = "c{\"type\":\"pong\"}";
    return sy_ws_msg_z(SY_WS_OP_TEXT, pong, sizeof(pong) - 1, false);
}

sy_refbuf_t *sy_v2_unsubscribed_frame(uint32_t rid, const char *topic, size_t topic_len) {
    return answer("unsubscribed", true, rid, topic, topic_len, NULL, NULL);
}
