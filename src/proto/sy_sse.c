/* sy_sse — see sy_sse.h. */
#include "proto/sy_sse.h"

#include <stdio.h>
#include <string.h>

#include "proto/sy_base64.h"
#include "proto/sy_since.h"

#define EVENT_STREAM "text/event-stream"

bool sy_sse_requested(const sy_http_request_t *req) {
    if (!sy_http_case_eq(req->method, req->method_len, SY_HTTP_LIT("GET")) ||
        sy_http_find_header(req, SY_HTTP_LIT("Upgrade"), NULL) != NULL)
        return false;
    /* Accept is a list of media ranges with parameters ("text/event-stream;
     * q=1"): the type is what comes before a ';'. */
    for (const sy_http_header_t *h = NULL; (h = sy_http_find_header(req, SY_HTTP_LIT("Accept"), h)) != NULL;) {
        size_t pos = 0, n;
        const char *item;
        while (sy_http_list_next(h->value, h->value_len, &pos, &item, &n)) {
            const char *semi = memchr(item, ';', n);
            size_t tl = semi != NULL ? (size_t)(semi - item) : n;
            while (tl > 0 && (item[tl - 1] == ' ' || item[tl - 1] == '\t'))
                tl--;
            if (sy_http_case_eq(item, tl, SY_HTTP_LIT(EVENT_STREAM)))
                return true;
        }
    }
    return false;
}

size_t sy_sse_response_head(char *out, size_t cap, const char *extra, size_t extra_len, uint32_t retry_ms) {
    static const char head[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/event-stream; charset=utf-8\r\n"
                               "Cache-Control: no-cache, no-transform\r\n"
                               "X-Accel-Buffering: no\r\n"
                               "Connection: close\r\n";
    char tail[64];
    int tl = snprintf(tail, sizeof(tail), "\r\nretry: %u\n\n", (unsigned)retry_ms);
    if (tl < 0 || (size_t)tl >= sizeof(tail))
        return 0;
    size_t n = sizeof(head) - 1 + extra_len + (size_t)tl;
    if (n > cap)
        return 0;
    memcpy(out, head, sizeof(head) - 1);
    if (extra_len > 0)
        memcpy(out + sizeof(head) - 1, extra, extra_len);
    memcpy(out + sizeof(head) - 1 + extra_len, tail, (size_t)tl);
    return n;
}

/* Characters a topic keeps in an id (RFC 3986 unreserved): the rest is %XX. */
static bool unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

size_t sy_sse_id_entry(char *out, uint64_t epoch, uint64_t offset, const char *topic, size_t topic_len) {
    /* Written by hand, not by snprintf: a symphony.v1 stream with many
     * topics writes one entry per topic per event (io/sy_sse_out.h). */
    static const char hex[] = "0123456789ABCDEF", lower[] = "0123456789abcdef";
    if (topic_len > SY_SINCE_TOPIC_MAX)
        return 0;
    static const char param[] = SY_SINCE_PARAM "=";
    memcpy(out, param, sizeof(param) - 1);
    size_t o = sizeof(param) - 1;
    for (int i = 0; i < 16; i++)
        out[o++] = lower[(epoch >> (60 - 4 * i)) & 15];
    out[o++] = ':';
    char digits[20];
    size_t nd = 0;
    do {
        digits[nd++] = (char)('0' + offset % 10);
        offset /= 10;
    } while (offset > 0);
    while (nd > 0)
        out[o++] = digits[--nd];
    out[o++] = ':';
    for (size_t i = 0; i < topic_len; i++) {
        unsigned char c = (unsigned char)topic[i];
        if (unreserved(c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    return o;
}

size_t sy_sse_id_entry_len(uint64_t offset, const char *topic, size_t topic_len) {
    if (topic_len > SY_SINCE_TOPIC_MAX)
        return 0;
    size_t n = sizeof(SY_SINCE_PARAM "=") - 1 + 16 + 1 + 1 + 1; /* "sy.since=", epoch, ':', a digit, ':' */
    for (; offset >= 10; offset /= 10)
        n++;
    for (size_t i = 0; i < topic_len; i++)
        n += unreserved((unsigned char)topic[i]) ? 1 : 3;
    return n;
}

/* The "data: " lines of payload[0..len), split where SSE splits (LF, CR
 * or CRLF; the last line may be empty), written to out unless it is NULL:
 * their length. */
static size_t data_lines(const uint8_t *p, size_t len, char *out) {
    size_t o = 0, start = 0;
    for (size_t i = 0;; i++) {
        bool end = i == len || p[i] == '\n' || p[i] == '\r';
        if (!end)
            continue;
        size_t n = i - start;
        if (out != NULL) {
            memcpy(out + o, "data: ", 6);
            if (n > 0)
                memcpy(out + o + 6, p + start, n);
            out[o + 6 + n] = '\n';
        }
        o += 7 + n;
        if (i == len)
            break;
        if (p[i] == '\r' && i + 1 < len && p[i + 1] == '\n')
            i++;
        start = i + 1;
    }
    return o;
}

static bool name_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' || s[i] == '\r' || s[i] == '\0')
            return false;
    return true;
}

/* Appends "<field>: " v "\n". */
static size_t put_field(char *out, const char *field, size_t flen, const char *v, size_t vlen) {
    memcpy(out, field, flen);
    memcpy(out + flen, ": ", 2);
    if (vlen > 0)
        memcpy(out + flen + 2, v, vlen);
    out[flen + 2 + vlen] = '\n';
    return flen + 3 + vlen;
}

sy_refbuf_t *sy_sse_event(const char *id, size_t id_len, const char *name, size_t name_len, const void *payload,
                          size_t len, bool binary) {
    if (name_len > 0 && !name_ok(name, name_len))
        name_len = 0;
    size_t b64 = binary ? SY_BASE64_ENCODED_LEN(len) : 0;
    size_t total = sy_sse_event_len(id_len, name_len, payload, len, binary);
    sy_refbuf_t *m = sy_refbuf_alloc(0, total, 0);
    if (m == NULL)
        return NULL;
    char *o = (char *)m->data;
    size_t at = 0;
    if (id_len > 0)
        at += put_field(o + at, "id", 2, id, id_len);
    if (name_len > 0)
        at += put_field(o + at, "event", 5, name, name_len);
    if (binary) {
        memcpy(o + at, "data: ", 6);
        if (len > 0)
            (void)sy_base64_encode(payload, len, o + at + 6, b64);
        o[at + 6 + b64] = '\n';
        at += 7 + b64;
        memcpy(o + at, "enc: base64\n", 12);
        at += 12;
    } else {
        at += data_lines(payload, len, o + at);
    }
    o[at] = '\n';
    return m;
}

size_t sy_sse_event_len(size_t id_len, size_t name_len, const void *payload, size_t len, bool binary) {
    size_t body =
        binary ? 7 + SY_BASE64_ENCODED_LEN(len) + sizeof("enc: base64\n") - 1 : data_lines(payload, len, NULL);
    return (id_len > 0 ? 5 + id_len : 0) + (name_len > 0 ? 8 + name_len : 0) + body + 1;
}

sy_refbuf_t *sy_sse_id_line(const char *id, size_t id_len) {
    sy_refbuf_t *m = sy_refbuf_alloc(0, 5 + id_len, 0);
    if (m != NULL)
        (void)put_field((char *)m->data, "id", 2, id, id_len);
    return m;
}

sy_refbuf_t *sy_sse_comment(const char *text, size_t len) {
    sy_refbuf_t *m = sy_refbuf_alloc(0, 4 + len, 0);
    if (m == NULL)
        return NULL;
    char *o = (char *)m->data;
    o[0] = ':';
    o[1] = ' ';
    if (len > 0)
        memcpy(o + 2, text, len);
    o[2 + len] = '\n';
    o[3 + len] = '\n';
    return m;
}

const char *sy_sse_last_event_id(const char *value, size_t len, char *query) {
    if (len == 0 || len > SY_SSE_LAST_ID_MAX)
        return "Last-Event-ID: 1 to 65536 bytes of sy.since positions";
    if (memchr(value, '#', len) != NULL || memchr(value, '?', len) != NULL)
        return "Last-Event-ID: not positions this server wrote (sy.since=...)";
    query[0] = '?';
    memcpy(query + 1, value, len);
    query[len + 1] = '\0';
    const char *bad = sy_since_check(query, len + 1);
    if (bad != NULL)
        return bad;
    sy_since_iter_t it = {0};
    sy_since_t one;
    char topic[SY_SINCE_TOPIC_MAX];
    if (!sy_since_next(query, len + 1, &it, &one, topic))
        return "Last-Event-ID: not positions this server wrote (sy.since=...)";
    return NULL;
}
