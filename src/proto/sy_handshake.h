/*
 * sy_handshake — the server side of the RFC 6455 opening handshake (section
 * 4.2) on top of a request head parsed by sy_http, and the bytes of the
 * answers: the 101 response and short error responses.
 *
 * Policy of sy_handshake_check(), first failing rule wins:
 *   505  not HTTP/1.1 (HTTP/1.0 is parsed by sy_http but cannot upgrade)
 *   405  method is not GET (case-sensitive, as methods are)
 *   400  Host missing or repeated (RFC 9112 3.2)
 *   426  no Upgrade header with the token "websocket" (any case): a plain
 *        HTTP request to a WebSocket-only endpoint
 *   400  no Connection header with the token "upgrade" (any case)
 *   400  Sec-WebSocket-Version missing, repeated or empty
 *   426  Sec-WebSocket-Version present but not "13"
 *   400  Sec-WebSocket-Key missing, repeated, or not the base64 (canonical,
 *        padded, see sy_base64_decode) of exactly 16 bytes
 *   400  Origin repeated
 *   400  a Sec-WebSocket-Protocol element that is not a token
 * Headers may be split over several lines: Upgrade and Connection match if
 * any line holds the token.
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept. sy_handshake_t's pointers point into the
 * request's buffer (the caller's); the answers are written to the caller's
 * buf; problem is a static text.
 *
 * Errors: sy_handshake_check returns 0 or the HTTP status to answer (a
 * named exception of base/sy_errors.h); the response writers return the
 * length written, 0 when it does not fit (or, for the error responses, the
 * status is out of range); sy_http_keep_alive_response 0 when the
 * response cannot be kept (io/wire/sy_reply.h then closes after it).
 */
#ifndef SY_HANDSHAKE_H
#define SY_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/sy_http.h"

#define SY_WS_ACCEPT_LEN 28 /* base64 of a SHA-1 digest */
#define SY_WS_KEY_LEN 24    /* base64 of 16 bytes */

/* What sy_handshake_check() found. Every pointer points into the request
 * buffer (or is NULL with length 0 when the header is absent); the first
 * header line is taken when a header is repeated. */
typedef struct {
    const char *key; /* Sec-WebSocket-Key */
    size_t key_len;
    const char *version; /* Sec-WebSocket-Version */
    size_t version_len;
    const char *host; /* Host */
    size_t host_len;
    const char *origin; /* Origin */
    size_t origin_len;
    const char *protocols; /* first Sec-WebSocket-Protocol line, raw */
    size_t protocols_len;
    size_t num_protocols;   /* subprotocols offered over all lines; iterate
                                 them with sy_handshake_next_protocol() */
    const char *extensions; /* first Sec-WebSocket-Extensions line, raw;
                                 none is negotiated. More lines:
                                 sy_http_find_header(). */
    size_t extensions_len;
    const char *problem; /* static, one line: why the check failed;
                                 NULL when it passed */
} sy_handshake_t;

/* Cursor over the offered subprotocols; zero it before the first call. */
typedef struct {
    size_t header_index;
    size_t pos;
} sy_handshake_iter_t;

/* Checks that req (a request sy_http_parse_request() accepted) is a valid
 * WebSocket upgrade, by the policy at the top of this file, and fills *out
 * (always, as far as the headers are present). Returns 0 when the handshake
 * is acceptable, else the HTTP status to answer: 400, 405, 426 or 505; the
 * reason is in out->problem. */
int sy_handshake_check(const sy_http_request_t *req, sy_handshake_t *out);

/* The next subprotocol offered in the Sec-WebSocket-Protocol header lines of
 * req, in order. Returns true and sets *proto and *proto_len, or false when
 * there is no more. After a successful sy_handshake_check() each one is a token. */
bool sy_handshake_next_protocol(const sy_http_request_t *req, sy_handshake_iter_t *it, const char **proto,
                                size_t *proto_len);

/* out = base64(SHA-1(key || "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")): the
 * Sec-WebSocket-Accept value for key[0..key_len). Writes exactly 28
 * characters, no NUL. */
void sy_ws_accept_key(const char *key, size_t key_len, char out[SY_WS_ACCEPT_LEN]);

/* Writes the complete 101 response head to buf:
 *   HTTP/1.1 101 Switching Protocols, Upgrade: websocket,
 *   Connection: Upgrade, Sec-WebSocket-Accept: <accept28>,
 *   Sec-WebSocket-Protocol: <protocol> (only if protocol_len > 0),
 *   the extra header lines, then the empty line.
 * accept28 is 28 characters (from sy_ws_accept_key). extra_headers is zero
 * or more complete header lines, each ending in CRLF, already validated by
 * the caller; it is copied verbatim (it may be NULL when extra_len is 0).
 * protocol must be one the client offered. No NUL is written.
 * Returns the length written, or 0 if it does not fit in cap (buf may then
 * hold partial output). */
size_t sy_handshake_response(char *buf, size_t cap, const char *accept28, const char *protocol, size_t protocol_len,
                             const char *extra_headers, size_t extra_len);

/* Writes a complete short response for a refused request to buf:
 *   HTTP/1.1 <status> <reason phrase>
 *   Connection: close           (426: "Connection: close, Upgrade", since
 *                                RFC 9110 7.8 wants the Upgrade option
 *                                next to an Upgrade header)
 *   (426 only) Upgrade: websocket and Sec-WebSocket-Version: 13
 *   (405 only) Allow: GET
 *   Content-Type: text/plain; charset=utf-8
 *   Content-Length: <n>
 *   the extra header lines (as for sy_handshake_response)
 *   empty line, then the body: the reason phrase and a LF.
 * status must be 200..599; for 204 and 304 there is no body and no
 * Content-Length. Unknown statuses get a generic reason phrase ("Client
 * Error" for 4xx...). The caller must not pass headers the function writes
 * itself in extra_headers. Returns the length written, or 0 if status is
 * out of range or the response does not fit in cap. */
size_t sy_http_error_response(char *buf, size_t cap, int status, const char *extra_headers, size_t extra_len);

/* Same, with msg[0..msg_len) as the body text instead of the reason phrase
 * (a LF is appended), e.g. out->problem from sy_handshake_check(). msg is
 * copied verbatim; it may be NULL when msg_len is 0, which means the reason
 * phrase. */
size_t sy_http_error_response_msg(char *buf, size_t cap, int status, const char *msg, size_t msg_len,
                                  const char *extra_headers, size_t extra_len);

/* HTTP/1.1 keep-alive (RFC 9112 9.3): true when the client of req lets its
 * connection stay open after the answer: HTTP/1.1 without the
 * "close" connection option, or HTTP/1.0 with "keep-alive"; and its body's
 * end is certain (no Transfer-Encoding, at most one Content-Length: a
 * request whose framing two readers could see differently is never kept). */
bool sy_http_request_keeps_alive(const sy_http_request_t *req);

/* The keep-alive form of a response written to close (a head with the
 * line "Connection: close", as the writers above and the IO threads'
 * answers write it, exactly): that line dropped, or for an HTTP/1.0 client
 * (http10) made "Connection: keep-alive" (5 bytes more). in[0..len) is
 * written to out[0..cap), which is in itself or a buffer that does not
 * overlap it. The length written, or 0 when it cannot be kept: no such
 * line, no complete head, no Content-Length where a body may follow (a
 * status other than 1xx, 204, 304), a Transfer-Encoding, or cap too small. */
size_t sy_http_keep_alive_response(const char *in, size_t len, bool http10, char *out, size_t cap);

#endif
