/* sy_v1 — see sy_v1.h. */
#include "proto/sy_v1.h"

#include <stdio.h>
#include <string.h>

#include "proto/sy_utf8.h"
#include "proto/sy_ws_frame.h"

static const char *const REASONS[SY_V1_REASONS] = {
    [SY_V1_RECOVERED] = "",          [SY_V1_EPOCH] = "epoch",
    [SY_V1_TRIMMED] = "trimmed",     [SY_V1_FUTURE] = "future",
    [SY_V1_TOO_LARGE] = "too-large", [SY_V1_NO_HISTORY] = "no-history",
    [SY_V1_MEMORY] = "memory",       [SY_V1_NOT_V1] = "not-symphony.v1",
};

const char *sy_v1_reason_name(sy_v1_reason_t r) { return (unsigned)r < SY_V1_REASONS ? REASONS[r] : "unknown"; }

/* v in decimal at out (at most 20 digits), no NUL; returns the digits'
 * count. A publish's header is made once per publish: no snprintf. */
static size_t put_decimal(char *out, uint64_t v) {
    char d[20];
    size_t n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = d[n - 1 - i];
    return n;
}

size_t sy_v1_publish_header(char out[SY_V1_HEADER_MAX], uint32_t id, bool has_offset, uint64_t offset) {
    size_t n = 0;
    out[n++] = 'p';
    n += put_decimal(out + n, id);
    if (has_offset) {
        out[n++] = ',';
        n += put_decimal(out + n, offset);
    }
    out[n++] = '\n';
    return n; /* at most 1 + 10 + 1 + 20 + 1: SY_V1_HEADER_MAX */
}

/* A decimal of 1 to 20 digits at p[*i..n) (advanced past it) into *v: false
 * when there is none or it overflows. */
static bool get_decimal(const uint8_t *p, size_t n, size_t *i, uint64_t *v) {
    size_t start = *i;
    uint64_t x = 0;
    for (; *i < n && p[*i] >= '0' && p[*i] <= '9'; (*i)++) {
        uint64_t d = (uint64_t)(p[*i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *v = x;
    return *i > start && *i - start <= 20;
}

bool sy_v1_frame_read(const sy_refbuf_t *m, sy_v1_frame_info_t *out) {
    const uint8_t *p = sy_refbuf_payload(m);
    size_t n = sy_refbuf_payload_len(m), i = 1;
    if (m->hlen == 0 || n == 0)
        return false;
    *out = (sy_v1_frame_info_t){.kind = (char)p[0], .binary = (m->data[0] & 0x0fu) == SY_WS_OP_BINARY};
    switch (out->kind) {
    case 'c':
        out->body = 1;
        return true;
    case 'd':
        out->body = 2;
        return n >= 2 && p[1] == '\n';
    case 'p': {
        uint64_t id;
        if (!get_decimal(p, n, &i, &id) || id > UINT32_MAX)
            return false;
        out->id = (uint32_t)id;
        if (i < n && p[i] == ',') {
            i++;
            if (!get_decimal(p, n, &i, &out->offset))
                return false;
            out->has_offset = true;
        }
        if (i == n || p[i] != '\n')
            return false;
        out->body = i + 1;
        return true;
    }
    default:
        return false;
    }
}

/* A frame whose payload is pre[0..plen) then body[0..blen), one copy. */
static sy_refbuf_t *frame2(unsigned opcode, const void *pre, size_t plen, const void *body, size_t blen,
                           bool compressible) {
    if (blen > SIZE_MAX - plen)
        return NULL;
    uint8_t header[10];
    size_t hlen = sy_ws_frame_header(header, 1, opcode, (uint64_t)(plen + blen));
    sy_refbuf_t *m = sy_refbuf_alloc(hlen, plen + blen, compressible ? SY_REFBUF_Z_TODO : SY_REFBUF_Z_NONE);
    if (m == NULL)
        return NULL;
    memcpy(m->data, header, hlen);
    memcpy(m->data + hlen, pre, plen);
    if (blen > 0)
        memcpy(m->data + hlen + plen, body, blen);
    return m;
}

sy_refbuf_t *sy_v1_publish_frame(unsigned opcode, uint32_t id, bool has_offset, uint64_t offset, const void *payload,
                                 size_t len, bool compressible) {
    char h[SY_V1_HEADER_MAX];
    size_t hl = sy_v1_publish_header(h, id, has_offset, offset);
    return frame2(opcode, h, hl, payload, len, compressible);
}

sy_refbuf_t *sy_v1_direct_frame(unsigned opcode, const void *payload, size_t len, bool compressible) {
    return frame2(opcode, "d\n", 2, payload, len, compressible);
}

size_t sy_v1_json_string(char *out, const char *s, size_t n) {
    bool valid = sy_utf8_is_valid((const uint8_t *)s, n);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, 7, "\\u%04x", c);
        } else if (c >= 0x80 && !valid) {
            memcpy(out + o, "\\ufffd", 6);
            o += 6;
        } else {
            out[o++] = (char)c;
        }
    }
    return o;
}

/* The text frame "c" + json[0..n). */
static sy_refbuf_t *notice(const char *json, size_t n) { return frame2(SY_WS_OP_TEXT, "c", 1, json, n, false); }

#define NOTICE_FIXED 256 /* everything but the topic and the owner's members */

sy_refbuf_t *sy_v1_subscribed_frame(const sy_v1_subscribed_t *n) {
    char buf[NOTICE_FIXED + 6 * 1024 + SY_V1_EXTRA_MAX];
    if (n->topic_len > 1024)
        return NULL;
    size_t o = (size_t)snprintf(buf, sizeof(buf), "{\"type\":\"subscribed\",\"topic\":\"");
    o += sy_v1_json_string(buf + o, n->topic, n->topic_len);
    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\",\"id\":%u", (unsigned)n->id);
    if (n->history)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, ",\"epoch\":\"%016llx\",\"offset\":\"%llu\"",
                              (unsigned long long)n->epoch, (unsigned long long)n->offset);
    if (n->resumed) {
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, ",\"since\":\"%llu\",\"recovered\":%s",
                              (unsigned long long)n->since, n->reason == SY_V1_RECOVERED ? "true" : "false");
        if (n->reason != SY_V1_RECOVERED)
            o += (size_t)snprintf(buf + o, sizeof(buf) - o, ",\"reason\":\"%s\"", sy_v1_reason_name(n->reason));
    }
    if (n->extra_len > 0) {
        /* The owner's members (an answer to a client's subscribe): a ','
         * then JSON members, made by JS's JSON.stringify. */
        if (n->extra_len > sizeof(buf) - o - 1)
            return NULL;
        memcpy(buf + o, n->extra, n->extra_len);
        o += n->extra_len;
    }
    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "}");
    return notice(buf, o);
}

sy_refbuf_t *sy_v1_unsubscribed_frame(const char *topic, size_t topic_len, uint32_t id) {
    char buf[NOTICE_FIXED + 6 * 1024];
    if (topic_len > 1024)
        return NULL;
    size_t o = (size_t)snprintf(buf, sizeof(buf), "{\"type\":\"unsubscribed\",\"topic\":\"");
    o += sy_v1_json_string(buf + o, topic, topic_len);
    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\",\"id\":%u}", (unsigned)id);
    return notice(buf, o);
}
