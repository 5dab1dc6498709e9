/* sy_since — see sy_since.h. */
#include "proto/sy_since.h"

#include <string.h>

#include "proto/sy_utf8.h"

/* The longest decoded value: epoch, ':', 20 digits, ':', topic. */
#define VALUE_MAX (SY_SINCE_EPOCH_HEX + 1 + 20 + 1 + SY_SINCE_TOPIC_MAX)

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes s[0..n) (percent-encoding, '+' as a space) into out (cap
 * bytes): its length, or -1 for a bad escape, -2 when longer than cap. */
static long decode(const char *s, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (n - i < 3)
                return -1;
            int h = hexval((unsigned char)s[i + 1]), l = hexval((unsigned char)s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (unsigned char)(h * 16 + l);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (o == cap)
            return -2;
        out[o++] = (char)c;
    }
    return (long)o;
}

/* The query of target: after the first '?', up to a '#'; none when the
 * '?' is after a '#' (in the fragment). */
static void query_of(const char *target, size_t len, size_t *start, size_t *end) {
    const char *h = memchr(target, '#', len);
    *end = h != NULL ? (size_t)(h - target) : len;
    const char *q = memchr(target, '?', *end);
    *start = q != NULL ? (size_t)(q - target) + 1 : *end;
}

/* The next sy.since parameter's raw value from *pos (advanced past it):
 * true with value[0..vlen) in target, false at the end. */
static bool next_param(const char *target, size_t len, size_t *pos, const char **value, size_t *vlen) {
    size_t start, end;
    query_of(target, len, &start, &end);
    if (*pos < start)
        *pos = start;
    while (*pos < end) {
        const char *seg = target + *pos;
        const char *amp = memchr(seg, '&', end - *pos);
        size_t slen = amp != NULL ? (size_t)(amp - seg) : end - *pos;
        *pos += slen + (amp != NULL ? 1 : 0);
        const char *eq = memchr(seg, '=', slen);
        size_t nlen = eq != NULL ? (size_t)(eq - seg) : slen;
        char name[sizeof(SY_SINCE_PARAM)];
        long dn = decode(seg, nlen, name, sizeof(name));
        if (dn != (long)sizeof(SY_SINCE_PARAM) - 1 || memcmp(name, SY_SINCE_PARAM, (size_t)dn) != 0)
            continue; /* the application's */
        *value = eq != NULL ? eq + 1 : seg + slen;
        *vlen = eq != NULL ? slen - nlen - 1 : 0;
        return true;
    }
    return false;
}

bool sy_since_epoch(const char *s, size_t len, uint64_t *out) {
    if (len != SY_SINCE_EPOCH_HEX)
        return false;
    uint64_t epoch = 0;
    for (size_t i = 0; i < len; i++) {
        int d = hexval((unsigned char)s[i]);
        if (d < 0)
            return false;
        epoch = epoch << 4 | (uint64_t)d;
    }
    *out = epoch;
    return true;
}

/* Parses one decoded value; NULL or why not. */
static const char *parse_value(const char *v, size_t n, sy_since_t *out) {
    uint64_t epoch = 0;
    if (n < SY_SINCE_EPOCH_HEX + 1 || v[SY_SINCE_EPOCH_HEX] != ':' || !sy_since_epoch(v, SY_SINCE_EPOCH_HEX, &epoch))
        return "sy.since: the epoch must be 16 hexadecimal characters, then ':'";
    size_t i = SY_SINCE_EPOCH_HEX + 1, digits = 0;
    uint64_t off = 0;
    for (; i < n && v[i] != ':'; i++, digits++) {
        if (v[i] < '0' || v[i] > '9' || digits == 20)
            return "sy.since: the offset must be 1 to 20 decimal digits, then ':'";
        uint64_t d = (uint64_t)(v[i] - '0');
        if (off > (UINT64_MAX - d) / 10)
            return "sy.since: the offset is over 18446744073709551615";
        off = off * 10 + d;
    }
    if (digits == 0 || i == n)
        return "sy.since: the offset must be 1 to 20 decimal digits, then ':'";
    i++;
    if (i == n)
        return "sy.since: the topic is empty";
    if (n - i > SY_SINCE_TOPIC_MAX)
        return "sy.since: the topic is over 1024 bytes";
    if (!sy_utf8_is_valid((const uint8_t *)v + i, n - i))
        return "sy.since: the topic is not valid UTF-8";
    out->epoch = epoch;
    out->offset = off;
    out->topic = v + i;
    out->topic_len = n - i;
    return NULL;
}

/* Decodes and parses the value into buf (VALUE_MAX bytes). */
static const char *read_value(const char *raw, size_t rlen, char *buf, sy_since_t *out) {
    long n = decode(raw, rlen, buf, VALUE_MAX);
    if (n == -1)
        return "sy.since: a bad %-escape";
    if (n == -2)
        return "sy.since: a value is too long";
    return parse_value(buf, (size_t)n, out);
}

/* FNV-1a: the duplicate check compares hashes, then the topics. */
static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

const char *sy_since_check(const char *target, size_t len) {
    uint64_t hashes[SY_SINCE_MAX];
    size_t count = 0, pos = 0;
    const char *raw;
    size_t rlen;
    char buf[VALUE_MAX], other[VALUE_MAX];
    while (next_param(target, len, &pos, &raw, &rlen)) {
        if (count == SY_SINCE_MAX)
            return "sy.since: more than 1024 positions";
        sy_since_t s;
        const char *why = read_value(raw, rlen, buf, &s);
        if (why != NULL)
            return why;
        uint64_t h = hash(s.topic, s.topic_len);
        for (size_t j = 0; j < count; j++) {
            if (hashes[j] != h)
                continue;
            /* The same hash: compare the topics themselves. */
            size_t p2 = 0, k = 0;
            const char *r2;
            size_t l2;
            sy_since_t o;
            while (k <= j && next_param(target, len, &p2, &r2, &l2))
                k++;
            if (read_value(r2, l2, other, &o) == NULL && o.topic_len == s.topic_len &&
                memcmp(o.topic, s.topic, s.topic_len) == 0)
                return "sy.since: a topic is given twice";
        }
        hashes[count++] = h;
    }
    return NULL;
}

bool sy_since_next(const char *target, size_t len, sy_since_iter_t *it, sy_since_t *out, char *topic_buf) {
    const char *raw;
    size_t rlen;
    char buf[VALUE_MAX];
    while (next_param(target, len, &it->pos, &raw, &rlen)) {
        if (read_value(raw, rlen, buf, out) != NULL)
            continue; /* malformed: sy_since_check says why */
        memcpy(topic_buf, out->topic, out->topic_len);
        out->topic = topic_buf;
        return true;
    }
    return false;
}

bool sy_since_find(const char *target, size_t len, const char *topic, size_t topic_len, sy_since_t *out,
                   char *topic_buf) {
    sy_since_iter_t it = {0};
    while (sy_since_next(target, len, &it, out, topic_buf))
        if (out->topic_len == topic_len && memcmp(out->topic, topic, topic_len) == 0)
            return true;
    return false;
}
