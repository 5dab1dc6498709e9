/* sy_bus_seq — see sy_bus_seq.h. */
#include "bus/sy_bus_seq.h"

#include <string.h>

#include <hiredis/hiredis.h>

#include "base/sy_alloc.h"
#include "proto/sy_since.h"

/* clang-format off */
const char sy_bus_seq_publish_lua[] =
    "local m = redis.call('HMGET', KEYS[2], 'e', 'o')\n"
    "local e, o = m[1], string.format('%d', (tonumber(m[2]) or 0) + 1)\n"
    "local added = false\n"
    "if e then\n"
    "  added = type(redis.pcall('XADD', KEYS[1], 'MAXLEN', ARGV[3], o .. '-0', 'm', ARGV[2])) == 'string'\n"
    "end\n"
    "if not added then\n"
    "  e = ARGV[5]\n"
    "  redis.call('DEL', KEYS[1])\n"
    "  redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], o .. '-0', 'm', ARGV[2])\n"
    "end\n"
    "redis.call('HSET', KEYS[2], 'e', e, 'o', o)\n"
    "if ARGV[4] ~= '0' then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
    "  redis.call('PEXPIRE', KEYS[2], ARGV[4])\n"
    "end\n"
    "redis.call('SPUBLISH', ARGV[1], '\\246' .. e .. o .. ':' .. ARGV[2])\n"
    "return {e, o}\n";

const char sy_bus_seq_sync_lua[] =
    "local m = redis.call('HMGET', KEYS[2], 'e', 'o')\n"
    "if not m[1] then return {'', '0', {}} end\n"
    "local after = ARGV[1]\n"
    "if m[1] ~= ARGV[3] then after = '0' end\n"
    "local r = redis.call('XRANGE', KEYS[1], '(' .. after .. '-0', '+', 'COUNT', ARGV[2])\n"
    "return {m[1], m[2] or '0', r}\n";
const char sy_bus_seq_renew_lua[] =
    "if redis.call('HGET', KEYS[2], 'e') ~= ARGV[1] then return 0 end\n"
    "redis.call('HSET', KEYS[2], 'e', ARGV[2])\n"
    "redis.call('DEL', KEYS[1])\n"
    "return 1\n";
/* clang-format on */

void sy_bus_script_init(sy_bus_script_t *s, const char *body) {
    static const char hex[] = "0123456789abcdef";
    uint8_t d[SY_SHA1_DIGEST_LEN];
    sy_sha1(body, strlen(body), d);
    for (size_t i = 0; i < SY_SHA1_DIGEST_LEN; i++) {
        s->sha[2 * i] = hex[d[i] >> 4];
        s->sha[2 * i + 1] = hex[d[i] & 15];
    }
    s->sha[2 * SY_SHA1_DIGEST_LEN] = '\0';
    s->body = body;
}

/* True when Redis hashes channel[0..len) by a hash tag (a '{', then a
 * '}' later with something between). */
static bool has_tag(const char *channel, size_t len) {
    const char *open = memchr(channel, '{', len);
    if (open == NULL)
        return false;
    size_t rest = len - (size_t)(open + 1 - channel);
    const char *close = memchr(open + 1, '}', rest);
    return close != NULL && close > open + 1;
}

bool sy_bus_seq_wrap(const char *channel, size_t len) {
    return !has_tag(channel, len) && memchr(channel, '}', len) == NULL;
}

char *sy_bus_seq_keys(const char *channel, size_t len, char **stream, size_t *stream_len, char **meta,
                      size_t *meta_len) {
    static const char s_suffix[] = ":stream", m_suffix[] = ":meta";
    bool wrap = sy_bus_seq_wrap(channel, len);
    size_t base = len + (wrap ? 2 : 0);
    *stream_len = base + sizeof(s_suffix) - 1;
    *meta_len = base + sizeof(m_suffix) - 1;
    char *p = sy_malloc(*stream_len + *meta_len);
    if (p == NULL)
        return NULL;
    char *q = p;
    for (int k = 0; k < 2; k++) {
        if (wrap)
            *q++ = '{';
        memcpy(q, channel, len);
        q += len;
        if (wrap)
            *q++ = '}';
        const char *suffix = k == 0 ? s_suffix : m_suffix;
        size_t n = k == 0 ? sizeof(s_suffix) - 1 : sizeof(m_suffix) - 1;
        memcpy(q, suffix, n);
        q += n;
    }
    *stream = p;
    *meta = p + *stream_len;
    return p;
}

bool sy_bus_seq_epoch(const char *s, size_t len, uint64_t *epoch) {
    return sy_since_epoch(s, len, epoch) && *epoch != 0;
}

/* A decimal u64 of 1 to 20 digits, > 0, ending at a byte not a digit (or
 * at len): its value and where it ended. */
static bool offset_at(const char *s, size_t len, uint64_t *out, size_t *used) {
    uint64_t v = 0;
    size_t i = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (i == 20 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (i == 0 || v == 0)
        return false;
    *out = v;
    *used = i;
    return true;
}

bool sy_bus_seq_read(const uint8_t *p, size_t len, uint64_t *epoch, uint64_t *offset, const uint8_t **body,
                     size_t *body_len) {
    if (len < 1 + 16 + 2 || p[0] != SY_BUS_SEQ_MAGIC || !sy_bus_seq_epoch((const char *)p + 1, 16, epoch))
        return false;
    size_t used;
    if (!offset_at((const char *)p + 17, len - 17, offset, &used) || 17 + used >= len || p[17 + used] != ':')
        return false;
    *body = p + 17 + used + 1;
    *body_len = len - (17 + used + 1);
    return true;
}

bool sy_bus_seq_wait(sy_bus_seq_chan_t *c, uint64_t epoch, uint64_t offset, const uint8_t *body, size_t len,
                     size_t max_bytes) {
    size_t size = sizeof(sy_bus_seq_msg_t) + len;
    if (c->bytes + size > max_bytes)
        return false;
    sy_bus_seq_msg_t *m = sy_malloc(size);
    if (m == NULL)
        return false;
    m->next = NULL;
    m->epoch = epoch;
    m->offset = offset;
    m->len = len;
    if (len > 0)
        memcpy(m->body, body, len);
    if (c->tail != NULL)
        c->tail->next = m;
    else
        c->head = m;
    c->tail = m;
    c->bytes += size;
    return true;
}

sy_bus_seq_msg_t *sy_bus_seq_take(sy_bus_seq_chan_t *c) {
    sy_bus_seq_msg_t *m = c->head;
    c->head = c->tail = NULL;
    c->bytes = 0;
    return m;
}

void sy_bus_seq_chan_clear(sy_bus_seq_chan_t *c) {
    sy_bus_seq_msg_t *m = sy_bus_seq_take(c);
    while (m != NULL) {
        sy_bus_seq_msg_t *next = m->next;
        sy_free(m);
        m = next;
    }
}

bool sy_bus_seq_sync_reply(const redisReply *r, uint64_t *epoch, uint64_t *last, const redisReply **entries) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return false;
    const redisReply *e = r->element[0], *o = r->element[1], *a = r->element[2];
    if (e->type != REDIS_REPLY_STRING || o->type != REDIS_REPLY_STRING || a->type != REDIS_REPLY_ARRAY)
        return false;
    *entries = a;
    if (e->len == 0) {
        *epoch = 0;
        *last = 0;
        return true;
    }
    size_t used;
    if (!sy_bus_seq_epoch(e->str, e->len, epoch))
        return false;
    if (o->len == 1 && o->str[0] == '0') {
        *last = 0;
        return true;
    }
    return offset_at(o->str, o->len, last, &used) && used == o->len;
}

bool sy_bus_seq_entry(const redisReply *entries, size_t i, uint64_t *offset, const uint8_t **body, size_t *len) {
    if (i >= entries->elements)
        return false;
    const redisReply *e = entries->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[0]->type != REDIS_REPLY_STRING)
        return false;
    const redisReply *id = e->element[0], *f = e->element[1];
    size_t used;
    if (!offset_at(id->str, id->len, offset, &used) || id->len != used + 2 || id->str[used] != '-' ||
        id->str[used + 1] != '0')
        return false;
    if (f->type != REDIS_REPLY_ARRAY || f->elements != 2 || f->element[1]->type != REDIS_REPLY_STRING)
        return false;
    *body = (const uint8_t *)f->element[1]->str;
    *len = f->element[1]->len;
    return true;
}
