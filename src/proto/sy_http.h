/*
 * sy_http — HTTP/1.1 request head parser (RFC 9112), picohttpparser-style:
 * stateless and non-allocating. The caller passes everything received so far
 * plus an array for the headers; the parser answers "complete, n bytes",
 * "partial, read more" or a specific error. Call it again with the longer
 * buffer after each read (it re-parses from the start; a head is small).
 *
 * Strictness (every violation is an error, see SY_HTTP_E_*):
 *  - request-line = method SP request-target SP HTTP-version CRLF, single
 *    spaces; method is a token; the target is 1+ visible ASCII characters or
 *    bytes >= 0x80 (no controls, no spaces, no DEL).
 *  - Version: "HTTP/1.1" and "HTTP/1.0" are parsed (minor_version 1 or 0) so
 *    the server can answer them properly; any other well-formed "HTTP/d.d"
 *    is SY_HTTP_E_VERSION (505). A WebSocket handshake additionally requires
 *    1.1 (sy_handshake_check answers 505 to 1.0).
 *  - Every line ends with CRLF. A bare LF or a CR not followed by LF is an
 *    error (SY_HTTP_E_LINE_ENDING); so is NUL or any other control character
 *    except HTAB inside a value (SY_HTTP_E_HEADER_VALUE).
 *  - Empty lines (CRLF) before the request line are skipped (RFC 9112 2.2);
 *    they count towards max_head_bytes.
 *  - field-name is a token directly followed by ':' (whitespace before the
 *    colon is an error, RFC 9112 5.1). A line starting with SP or HTAB
 *    (obs-fold, line folding) is SY_HTTP_E_OBS_FOLD.
 *  - Values are stripped of leading and trailing SP/HTAB; they may contain
 *    visible ASCII, SP, HTAB and bytes >= 0x80 (obs-text). Empty values are
 *    allowed. Duplicate names are kept, in order.
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept. Every pointer the parser returns points into
 * the caller's buffer; the headers array is the caller's; the error texts and
 * reason phrases are static.
 *
 * Errors: sy_http_parse_request returns a long (base/sy_errors.h rule 5):
 * the head's length, SY_HTTP_PARTIAL, or a negative SY_HTTP_E_*;
 * sy_http_error_status maps one to the HTTP status (a named exception:
 * 0 or the status); the rest are questions (bool) or lookups (NULL: none).
 */
#ifndef SY_HTTP_H
#define SY_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* Results of sy_http_parse_request(). */
#define SY_HTTP_PARTIAL 0 /* complete head not received yet */
/* The errors: name, value, the HTTP status to answer, and the text
 * sy_http_error_str gives (one list for the values, statuses and texts). */
#define SY_HTTP_ERRORS_LIST(X)                                                                                       \
    X(SY_HTTP_E_METHOD, -1, 400, "invalid method")                          /* not a token, or not followed by SP */ \
    X(SY_HTTP_E_TARGET, -2, 400, "invalid request target")                  /* empty or invalid */                   \
    X(SY_HTTP_E_VERSION_SYNTAX, -3, 400, "invalid HTTP version")            /* not "HTTP/" DIGIT "." DIGIT */        \
    X(SY_HTTP_E_LINE_ENDING, -4, 400, "line not ended by CRLF")             /* a bare CR or a bare LF */             \
    X(SY_HTTP_E_HEADER_NAME, -5, 400, "invalid header name")                /* empty or invalid, or no ':' */        \
    X(SY_HTTP_E_HEADER_VALUE, -6, 400, "invalid character in header value") /* a control character */                \
    X(SY_HTTP_E_OBS_FOLD, -7, 400, "obsolete line folding")                                                          \
    X(SY_HTTP_E_LINE_TOO_LONG, -8, 414, "request line too long")      /* over max_line_bytes */                      \
    X(SY_HTTP_E_HEAD_TOO_LARGE, -9, 431, "request header too large")  /* over max_head_bytes */                      \
    X(SY_HTTP_E_TOO_MANY_HEADERS, -10, 431, "too many header fields") /* more than allowed */                        \
    X(SY_HTTP_E_VERSION, -11, 505, "HTTP version not supported")      /* other than 1.0 and 1.1 */

enum {
#define SY_HTTP_E_ENUM_(e, v, status, text) e = (v),
    SY_HTTP_ERRORS_LIST(SY_HTTP_E_ENUM_)
#undef SY_HTTP_E_ENUM_
};

#define SY_HTTP_DEFAULT_MAX_HEAD_BYTES 8192u
#define SY_HTTP_DEFAULT_MAX_LINE_BYTES 8192u
#define SY_HTTP_DEFAULT_MAX_HEADERS 64u

/* Expands to a string literal and its length, for the name/token arguments
 * below: sy_http_find_header(req, SY_HTTP_LIT("Host"), NULL). */
#define SY_HTTP_LIT(s) (s), (sizeof(s) - 1)

typedef struct {
    const char *name;
    size_t name_len;
    const char *value; /* trimmed of SP/HTAB at both ends */
    size_t value_len;  /* may be 0 */
} sy_http_header_t;

/* A field set to 0 takes its default. */
typedef struct {
    size_t max_head_bytes; /* whole head from buf[0] to the final CRLFCRLF
                              inclusive; default 8192 */
    size_t max_line_bytes; /* request line including its CRLF; default 8192 */
    size_t max_headers;    /* default 64; also bounded by the caller's array */
} sy_http_limits_t;

typedef struct {
    const char *method;
    size_t method_len;
    const char *target;
    size_t target_len;
    int minor_version;         /* 0 or 1 (HTTP/1.0 or HTTP/1.1) */
    sy_http_header_t *headers; /* in: caller's array; out: unchanged */
    size_t num_headers;        /* in: capacity of headers; out: count */
} sy_http_request_t;

/* Parses the request head at buf[0..len).
 * In: req->headers points at an array of req->num_headers entries (it may be
 * NULL when num_headers is 0). limits may be NULL (all defaults).
 * Returns:
 *  > 0  the head is complete; the value is its length in bytes, including
 *       the final CRLFCRLF (and any skipped leading CRLFs). Bytes after it
 *       (e.g. a first WebSocket frame) are not looked at. *req is filled in:
 *       num_headers becomes the number of headers stored.
 *  SY_HTTP_PARTIAL (0): valid so far; read more and call again with the
 *       whole buffer. Never returned once len >= limits->max_head_bytes:
 *       the head is then too large instead, so the caller never needs to
 *       buffer more than max_head_bytes.
 *  < 0  an SY_HTTP_E_* error; map it with sy_http_error_status().
 *       Errors are reported as soon as the offending bytes are present,
 *       even before the head is complete.
 * On anything but success *req is left untouched (so num_headers still holds
 * the capacity for the next call), though entries of the headers array may
 * have been written. Never reads buf past len. */
long sy_http_parse_request(const char *buf, size_t len, const sy_http_limits_t *limits, sy_http_request_t *req);

/* The HTTP status to answer for a parse error: 400, 414, 431 or 505 as
 * SY_HTTP_ERRORS_LIST gives; 400 for an unknown negative value; 0 for a
 * value >= 0 (not an error). */
int sy_http_error_status(long err);

/* A short, static, one-line description of an SY_HTTP_E_* error (for a
 * response body or a log); "unknown error" for any other value. */
const char *sy_http_error_str(long err);

/* The standard reason phrase for status ("Bad Request" for 400), or NULL if
 * the status is not one this module knows. */
const char *sy_http_reason_phrase(int status);

/* True if a[0..alen) and b[0..blen) are equal ignoring ASCII case. */
bool sy_http_case_eq(const char *a, size_t alen, const char *b, size_t blen);

/* True if s[0..len) is a non-empty token (RFC 9110 5.6.2 tchar*). */
bool sy_http_is_token(const char *s, size_t len);

/* The next header named name (case-insensitive) after the entry `after`
 * (NULL: search from the first header); NULL when there is none. `after`
 * must be NULL or point into req->headers[0..req->num_headers). */
const sy_http_header_t *sy_http_find_header(const sy_http_request_t *req, const char *name, size_t name_len,
                                            const sy_http_header_t *after);

/* How many headers are named name (case-insensitive). */
size_t sy_http_count_headers(const sy_http_request_t *req, const char *name, size_t name_len);

/* Iterates the elements of a comma-separated list value (RFC 9110 5.6.1)
 * value[0..len). *pos is the cursor: set it to 0 before the first call.
 * Returns true and sets *item and *item_len to the next element, trimmed of
 * SP/HTAB; false when there are no more. Empty elements ("a, ,b") are skipped.
 * Quoted strings are not interpreted: use it for lists of tokens. */
bool sy_http_list_next(const char *value, size_t len, size_t *pos, const char **item, size_t *item_len);

/* True if the comma-separated list value[0..len) has an element equal to
 * token (case-insensitive). E.g. "keep-alive, Upgrade" contains
 * "upgrade". */
bool sy_http_list_contains(const char *value, size_t len, const char *token, size_t token_len);

/* Iterates the values of query parameter name (raw: not percent-decoded;
 * "name=value", "name" alone has the empty value) in target[0..len)'s
 * query, after '?' and up to a '#'. *pos is the cursor: 0 before the first
 * call. True with *value, *value_len set; false when there are no more. */
bool sy_http_query_next(const char *target, size_t len, const char *name, size_t name_len, size_t *pos,
                        const char **value, size_t *value_len);

/* True if any header named name has token in its comma-separated value (a
 * list may be split over several header lines). */
bool sy_http_header_has_token(const sy_http_request_t *req, const char *name, size_t name_len, const char *token,
                              size_t token_len);

#endif
