/*
 * sy_pmd — negotiating permessage-deflate (RFC 7692 section 7) from a
 * request's Sec-WebSocket-Extensions header lines, and the line that
 * answers it.
 *
 * What symphony accepts: every message it sends is compressed on its own
 * (once per publish, shared by every subscriber), so the answer always has
 * server_no_context_takeover; and it asks the client for
 * client_no_context_takeover (RFC 7692 7.1.1.2: a server may add it), so a
 * client message is inflated with no state kept between messages. No
 * compression state exists per connection.
 *
 * The offers are taken in order, over every header line; the first
 * acceptable one wins. An offer is declined (the extension, not the
 * connection: the next offer is tried) when it has an unknown parameter, a
 * parameter twice, a value where none is allowed, a window size outside
 * 8..15 or not a plain decimal, or broken syntax. Parameter values may be
 * tokens or quoted strings (RFC 6455 9.1).
 *
 *   server_max_window_bits=N   accepted, answered with the same N: the
 *                              client inflates with a 2^N window, so only
 *                              messages of at most 2^N bytes are sent
 *                              compressed to it (a match never reaches
 *                              further back than the message's start)
 *   client_max_window_bits[=N] accepted, not answered (inflating uses a
 *                              whole-message buffer: any window is fine)
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept: the request and values are read during the
 * call; the answer goes to the caller's buf.
 *
 * Errors: a declined or missing offer is an answer, not a failure
 * (negotiate returns false); sy_pmd_response returns 0 when cap is too small.
 */
#ifndef SY_PMD_H
#define SY_PMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sy_http.h"

#define SY_PMD_WINDOW_MAX 15
#define SY_PMD_WINDOW_MIN 8
#define SY_PMD_RESPONSE_MAX 160 /* the longest line sy_pmd_response writes */

typedef struct {
    bool server_window_set; /* the offer had server_max_window_bits */
    uint8_t server_window;  /* lg2 of the client's inflate window (15 unless set) */
} sy_pmd_t;

/* Looks at every Sec-WebSocket-Extensions line of req. True, with *out,
 * when a permessage-deflate offer is acceptable; false when there is none. */
bool sy_pmd_negotiate(const sy_http_request_t *req, sy_pmd_t *out);

/* The same over one raw header value (for tests and fuzzing); *scanned
 * (may be NULL) counts the offers looked at. */
bool sy_pmd_negotiate_value(const char *value, size_t len, sy_pmd_t *out, unsigned *scanned);

/* Writes the answer's header line, "Sec-WebSocket-Extensions: permessage-
 * deflate; server_no_context_takeover; client_no_context_takeover[;
 * server_max_window_bits=N]" and CRLF, to buf. Its length, or 0 when cap
 * is too small (SY_PMD_RESPONSE_MAX always suffices). */
size_t sy_pmd_response(const sy_pmd_t *p, char *buf, size_t cap);

#endif
