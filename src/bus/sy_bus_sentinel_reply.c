/* sy_bus_sentinel_reply — see sy_bus_sentinel_reply.h. */
#include "bus/sy_bus_sentinel_reply.h"

#include <string.h>

#include <hiredis/hiredis.h>

#include "base/sy_port.h"

/* A port as decimal digits only, 1..65535. */
static bool read_port(const char *s, size_t len, uint16_t *port) {
    if (len == 0 || len > 5)
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    *port = (uint16_t)v;
    return true;
}

/* A host: 1..SY_BUS_HOST_MAX-1 bytes, none of them NUL, a space or a
 * control character (it goes into error texts and connects). */
static bool read_host(const char *s, size_t len, sy_bus_sentinel_addr_t *out) {
    if (len == 0 || len >= sizeof(out->host))
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] == 0x7f)
            return false;
    memcpy(out->host, s, len);
    out->host[len] = '\0';
    return true;
}

static bool is_string(const redisReply *r) {
    return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

sy_bus_sentinel_answer_t sy_bus_sentinel_read_addr(const redisReply *r, sy_bus_sentinel_addr_t *out) {
    if (r == NULL)
        return SY_SENTINEL_MALFORMED;
    if (r->type == REDIS_REPLY_NIL)
        return SY_SENTINEL_UNKNOWN;
    if (r->type == REDIS_REPLY_ERROR)
        return SY_SENTINEL_ERROR;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !is_string(r->element[0]) || !is_string(r->element[1]))
        return SY_SENTINEL_MALFORMED;
    sy_bus_sentinel_addr_t a;
    if (!read_host(r->element[0]->str, r->element[0]->len, &a) ||
        !read_port(r->element[1]->str, r->element[1]->len, &a.port))
        return SY_SENTINEL_MALFORMED;
    *out = a;
    return SY_SENTINEL_ADDR;
}

sy_bus_sentinel_role_t sy_bus_sentinel_read_role(const redisReply *r) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 1 || !is_string(r->element[0]))
        return SY_ROLE_MALFORMED;
    const redisReply *role = r->element[0];
    return role->len == 6 && sy_strncasecmp(role->str, "master", 6) == 0 ? SY_ROLE_PRIMARY : SY_ROLE_OTHER;
}

/* The next space-separated word of msg[*at..len): its start and length;
 * false when none is left. */
static bool next_word(const char *msg, size_t len, size_t *at, const char **word, size_t *wlen) {
    size_t i = *at;
    while (i < len && msg[i] == ' ')
        i++;
    if (i == len)
        return false;
    size_t start = i;
    while (i < len && msg[i] != ' ')
        i++;
    *word = msg + start;
    *wlen = i - start;
    *at = i;
    return true;
}

bool sy_bus_sentinel_read_switch(const char *msg, size_t len, const char *name, size_t name_len,
                                 sy_bus_sentinel_addr_t *out) {
    const char *w[5];
    size_t wl[5], at = 0;
    for (int i = 0; i < 5; i++)
        if (!next_word(msg, len, &at, &w[i], &wl[i]))
            return false;
    const char *extra;
    size_t extra_len;
    if (next_word(msg, len, &at, &extra, &extra_len))
        return false; /* more than five words */
    if (wl[0] != name_len || memcmp(w[0], name, name_len) != 0)
        return false;
    sy_bus_sentinel_addr_t old, a;
    if (!read_host(w[1], wl[1], &old) || !read_port(w[2], wl[2], &old.port) || !read_host(w[3], wl[3], &a) ||
        !read_port(w[4], wl[4], &a.port))
        return false;
    *out = a;
    return true;
}

bool sy_bus_sentinel_read_event(const redisReply *r, const char *name, size_t name_len, sy_bus_sentinel_addr_t *out) {
    static const char channel[] = "+switch-master";
    if (r == NULL || (r->type != REDIS_REPLY_ARRAY && r->type != REDIS_REPLY_PUSH) || r->elements != 3)
        return false;
    const redisReply *kind = r->element[0], *ch = r->element[1], *msg = r->element[2];
    if (!is_string(kind) || !is_string(ch) || !is_string(msg) || kind->len != 7 ||
        sy_strncasecmp(kind->str, "message", 7) != 0 || ch->len != sizeof(channel) - 1 ||
        memcmp(ch->str, channel, ch->len) != 0)
        return false;
    return sy_bus_sentinel_read_switch(msg->str, msg->len, name, name_len, out);
}
