/* HTTP/1.1 request head parser. See sy_http.h. */
#include "proto/sy_http.h"

#include <limits.h>
#include <string.h>

/* Internal "ran out of bytes" result, resolved by the caller of the step
 * that ran out into PARTIAL or a size error. Distinct from every SY_HTTP_*
 * value. */
#define NEED_MORE 1L

static int is_tchar(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
        return 1;
    default:
        return 0;
    }
}

/* Visible ASCII or obs-text: allowed in a request-target and a value. */
static int is_vchar_or_obs(unsigned char c) { return (c >= 0x21 && c <= 0x7E) || c >= 0x80; }

static int is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

static unsigned char ascii_lower(unsigned char c) {
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* One digit of the HTTP version at *p: 0 and the digit in *out, NEED_MORE,
 * or SY_HTTP_E_VERSION_SYNTAX. */
static long version_digit(const unsigned char *b, size_t *p, size_t end, unsigned *out) {
    if (*p == end)
        return NEED_MORE;
    if (b[*p] < '0' || b[*p] > '9')
        return SY_HTTP_E_VERSION_SYNTAX;
    *out = (unsigned)(b[(*p)++] - '0');
    return 0;
}

/* The LF that must follow the CR at b[*p]: 0 with *p just past it,
 * NEED_MORE, or SY_HTTP_E_LINE_ENDING (a bare CR). */
static long after_cr(const unsigned char *b, size_t end, size_t *p) {
    size_t q = *p + 1;
    if (q == end)
        return NEED_MORE;
    if (b[q] != '\n')
        return SY_HTTP_E_LINE_ENDING;
    *p = q + 1;
    return 0;
}

/* Parses the request line starting at *pos, reading no byte at or past
 * end. On success advances *pos past its CRLF and returns 0; returns
 * NEED_MORE or an SY_HTTP_E_* error otherwise. */
static long parse_request_line(const unsigned char *b, size_t end, size_t *pos, sy_http_request_t *out) {
    static const char proto[] = "HTTP/";
    size_t p = *pos, m0 = p, t0;
    unsigned major, minor;

    while (p < end && is_tchar(b[p]))
        p++;
    if (p == end)
        return NEED_MORE;
    if (b[p] == '\n')
        return SY_HTTP_E_LINE_ENDING;
    if (p == m0 || b[p] != ' ')
        return SY_HTTP_E_METHOD;
    out->method = (const char *)b + m0;
    out->method_len = p - m0;
    p++;

    t0 = p;
    while (p < end && is_vchar_or_obs(b[p]))
        p++;
    if (p == end)
        return NEED_MORE;
    if (p == t0 || b[p] != ' ')
        return SY_HTTP_E_TARGET;
    out->target = (const char *)b + t0;
    out->target_len = p - t0;
    p++;

    for (size_t k = 0; k < sizeof(proto) - 1; k++, p++) {
        if (p == end)
            return NEED_MORE;
        if (b[p] != (unsigned char)proto[k])
            return SY_HTTP_E_VERSION_SYNTAX;
    }
    long rc = version_digit(b, &p, end, &major);
    if (rc != 0)
        return rc;
    if (p == end)
        return NEED_MORE;
    if (b[p++] != '.')
        return SY_HTTP_E_VERSION_SYNTAX;
    if ((rc = version_digit(b, &p, end, &minor)) != 0)
        return rc;
    if (major != 1 || minor > 1)
        return SY_HTTP_E_VERSION;
    out->minor_version = (int)minor;

    if (p == end)
        return NEED_MORE;
    if (b[p] == '\n')
        return SY_HTTP_E_LINE_ENDING;
    if (b[p] != '\r')
        return SY_HTTP_E_VERSION_SYNTAX;
    if ((rc = after_cr(b, end, &p)) != 0)
        return rc;
    *pos = p;
    return 0;
}

/* Parses header lines from *pos through the empty line that ends the head.
 * Stores at most cap headers in hdrs and their count in *count.
 * On success sets *pos just past the final CRLF and returns 0; otherwise
 * returns NEED_MORE or an SY_HTTP_E_* error. */
static long parse_headers(const unsigned char *b, size_t end, size_t *pos, sy_http_header_t *hdrs, size_t cap,
                          size_t *count) {
    size_t p = *pos, n = 0;

    for (;;) {
        size_t n0, nend, v0, vend;

        if (p == end)
            return NEED_MORE;
        if (b[p] == '\r') {
            long rc = after_cr(b, end, &p);
            if (rc == 0) {
                *pos = p;
                *count = n;
            }
            return rc;
        }
        if (b[p] == '\n')
            return SY_HTTP_E_LINE_ENDING;
        if (is_ows(b[p]))
            return SY_HTTP_E_OBS_FOLD;
        if (n == cap)
            return SY_HTTP_E_TOO_MANY_HEADERS;

        n0 = p;
        while (p < end && is_tchar(b[p]))
            p++;
        if (p == end)
            return NEED_MORE;
        if (p == n0 || b[p] != ':')
            return (b[p] == '\n') ? SY_HTTP_E_LINE_ENDING : SY_HTTP_E_HEADER_NAME;
        nend = p;
        p++;

        while (p < end && is_ows(b[p]))
            p++;
        v0 = vend = p;
        while (p < end) {
            unsigned char c = b[p];
            if (is_vchar_or_obs(c)) {
                p++;
                vend = p;
            } else if (is_ows(c)) {
                p++;
            } else if (c == '\r') {
                break;
            } else if (c == '\n') {
                return SY_HTTP_E_LINE_ENDING;
            } else {
                return SY_HTTP_E_HEADER_VALUE;
            }
        }
        if (p == end)
            return NEED_MORE;
        long rc = after_cr(b, end, &p);
        if (rc != 0)
            return rc;
        hdrs[n].name = (const char *)b + n0;
        hdrs[n].name_len = nend - n0;
        hdrs[n].value = (const char *)b + v0;
        hdrs[n].value_len = vend - v0;
        n++;
    }
}

long sy_http_parse_request(const char *buf, size_t len, const sy_http_limits_t *limits, sy_http_request_t *req) {
    const unsigned char *b = (const unsigned char *)buf;
    size_t max_head = SY_HTTP_DEFAULT_MAX_HEAD_BYTES;
    size_t max_line = SY_HTTP_DEFAULT_MAX_LINE_BYTES;
    size_t max_hdrs = SY_HTTP_DEFAULT_MAX_HEADERS;
    size_t end, line_end, line0, pos = 0, count = 0;
    sy_http_request_t r;
    long rc;

    if (limits != NULL) {
        if (limits->max_head_bytes != 0)
            max_head = limits->max_head_bytes;
        if (limits->max_line_bytes != 0)
            max_line = limits->max_line_bytes;
        if (limits->max_headers != 0)
            max_hdrs = limits->max_headers;
    }
    if (max_head > (size_t)LONG_MAX)
        max_head = (size_t)LONG_MAX; /* the result must fit in a long */
    if (max_hdrs > req->num_headers)
        max_hdrs = req->num_headers;
    end = (len < max_head) ? len : max_head;

    /* Leading empty lines. */
    while (pos < end && b[pos] == '\r') {
        rc = after_cr(b, end, &pos);
        if (rc == NEED_MORE)
            return (end == max_head) ? SY_HTTP_E_HEAD_TOO_LARGE : SY_HTTP_PARTIAL;
        if (rc != 0)
            return rc;
    }

    memset(&r, 0, sizeof(r));
    line0 = pos;
    line_end = (end - line0 > max_line) ? line0 + max_line : end;
    rc = parse_request_line(b, line_end, &pos, &r);
    if (rc == NEED_MORE) {
        if (line_end - line0 >= max_line)
            return SY_HTTP_E_LINE_TOO_LONG;
        return (end == max_head) ? SY_HTTP_E_HEAD_TOO_LARGE : SY_HTTP_PARTIAL;
    }
    if (rc != 0)
        return rc;

    rc = parse_headers(b, end, &pos, req->headers, max_hdrs, &count);
    if (rc == NEED_MORE)
        return (end == max_head) ? SY_HTTP_E_HEAD_TOO_LARGE : SY_HTTP_PARTIAL;
    if (rc != 0)
        return rc;

    r.headers = req->headers;
    r.num_headers = count;
    *req = r;
    return (long)pos;
}

static const struct {
    int status;
    const char *text;
} ERRORS[] = {
#define SY_HTTP_E_ROW_(e, v, status, text) [-(v)] = {status, text},
    SY_HTTP_ERRORS_LIST(SY_HTTP_E_ROW_)
#undef SY_HTTP_E_ROW_
};

/* err's row, or NULL for a value not in the list. */
static const char *text_of(long err, int *status) {
    long n = (long)(sizeof(ERRORS) / sizeof(ERRORS[0]));
    if (err >= 0 || err <= -n || ERRORS[-err].text == NULL)
        return NULL;
    *status = ERRORS[-err].status;
    return ERRORS[-err].text;
}

int sy_http_error_status(long err) {
    int status = err < 0 ? 400 : 0;
    (void)text_of(err, &status);
    return status;
}

const char *sy_http_error_str(long err) {
    int status;
    const char *text = text_of(err, &status);
    return text != NULL ? text : "unknown error";
}

const char *sy_http_reason_phrase(int status) {
    switch (status) {
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 204:
        return "No Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 426:
        return "Upgrade Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return NULL;
    }
}

bool sy_http_case_eq(const char *a, size_t alen, const char *b, size_t blen) {
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++) {
        if (ascii_lower((unsigned char)a[i]) != ascii_lower((unsigned char)b[i]))
            return false;
    }
    return true;
}

bool sy_http_is_token(const char *s, size_t len) {
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!is_tchar((unsigned char)s[i]))
            return false;
    }
    return true;
}

const sy_http_header_t *sy_http_find_header(const sy_http_request_t *req, const char *name, size_t name_len,
                                            const sy_http_header_t *after) {
    size_t i = (after == NULL) ? 0 : (size_t)(after - req->headers) + 1;

    for (; i < req->num_headers; i++) {
        const sy_http_header_t *h = &req->headers[i];
        if (sy_http_case_eq(h->name, h->name_len, name, name_len))
            return h;
    }
    return NULL;
}

size_t sy_http_count_headers(const sy_http_request_t *req, const char *name, size_t name_len) {
    size_t n = 0;

    for (size_t i = 0; i < req->num_headers; i++) {
        const sy_http_header_t *h = &req->headers[i];
        if (sy_http_case_eq(h->name, h->name_len, name, name_len))
            n++;
    }
    return n;
}

bool sy_http_list_next(const char *value, size_t len, size_t *pos, const char **item, size_t *item_len) {
    size_t p = *pos;

    while (p < len) {
        size_t s, e;

        while (p < len && is_ows((unsigned char)value[p]))
            p++;
        s = p;
        while (p < len && value[p] != ',')
            p++;
        e = p;
        while (e > s && is_ows((unsigned char)value[e - 1]))
            e--;
        if (p < len)
            p++; /* the comma */
        if (e > s) {
            *item = value + s;
            *item_len = e - s;
            *pos = p;
            return true;
        }
    }
    *pos = p;
    return false;
}

bool sy_http_list_contains(const char *value, size_t len, const char *token, size_t token_len) {
    size_t pos = 0, ilen;
    const char *it;

    while (sy_http_list_next(value, len, &pos, &it, &ilen)) {
        if (sy_http_case_eq(it, ilen, token, token_len))
            return true;
    }
    return false;
}

bool sy_http_header_has_token(const sy_http_request_t *req, const char *name, size_t name_len, const char *token,
                              size_t token_len) {
    const sy_http_header_t *h = NULL;

    while ((h = sy_http_find_header(req, name, name_len, h)) != NULL) {
        if (sy_http_list_contains(h->value, h->value_len, token, token_len))
            return true;
    }
    return false;
}

bool sy_http_query_next(const char *target, size_t len, const char *name, size_t name_len, size_t *pos,
                        const char **value, size_t *value_len) {
    const char *hash = memchr(target, '#', len);
    size_t end = hash != NULL ? (size_t)(hash - target) : len;
    if (*pos == 0) {
        const char *q = memchr(target, '?', end);
        if (q == NULL)
            return false;
        *pos = (size_t)(q - target) + 1;
    }
    while (*pos < end) {
        const char *s = target + *pos;
        const char *amp = memchr(s, '&', end - *pos);
        size_t n = amp != NULL ? (size_t)(amp - s) : end - *pos;
        *pos += n + 1;
        if (n >= name_len && memcmp(s, name, name_len) == 0 && (n == name_len || s[name_len] == '=')) {
            *value = n == name_len ? s + n : s + name_len + 1;
            *value_len = n == name_len ? 0 : n - name_len - 1;
            return true;
        }
    }
    return false;
}
