/*
 * sy_sse — Server-Sent Events (the WHATWG HTML "server-sent events"
 * format, text/event-stream) for the connections that cannot upgrade
 * (docs/sse.md): which request asks for a stream, the response head, and
 * the events. Pure builders and parsers: fuzzed (__test__/fuzz/fuzz_sse.c).
 *
 * An event is lines of "field: value\n" and an empty line. A publish is
 *
 *   id: sy.since=<epoch>:<offset>:<topic>[&sy.since=...]   (topics with history)
 *   event: <topic>
 *   data: <a line of the payload>                         (one per line)
 *   enc: base64                                           (binary payloads only)
 *
 * The id is the connection's positions in the form of its URL's `sy.since`
 * parameters (proto/sy_since.h), the event's own topic first: the browser
 * sends it back as Last-Event-ID when it reconnects, and the server reads
 * it with sy_since exactly as it reads a URL's. One topic's id is one
 * entry, the same for every subscriber of the topic that has only it, or
 * that keeps its positions itself (a symphony.v2 stream: its ids are its
 * event's entry only; io/sy_sse_out.h): the frame is made once per
 * publish. A symphony.v1 connection with more topics gets its own id line,
 * about 40 bytes per topic with history.
 *
 * Payload lines: SSE ends a line at LF, CR or CRLF and the browser joins
 * data lines with LF, so a text payload arrives with each CR or CRLF
 * made an LF (docs/sse.md). A binary payload is base64 on one data line,
 * with the field "enc: base64" that EventSource ignores and the client
 * library reads.
 *
 * Threads: pure functions, any thread.
 *
 * Ownership: builders return a new buffer with one reference, the
 * caller's (sy_refbuf.h), or write into the caller's.
 *
 * Errors: the refbuf builders return NULL when out of memory; the
 * writers return 0 when the output does not fit; sy_sse_last_event_id
 * returns NULL when the header is well formed, else why not.
 */
#ifndef SY_SSE_H
#define SY_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_refbuf.h"
#include "proto/sy_http.h"

/* The longest id entry: "sy.since=", epoch, ':', 20 digits, ':', a topic
 * of 1024 bytes percent-encoded, '&'. */
#define SY_SSE_ENTRY_MAX (9 + 16 + 1 + 20 + 1 + 3 * 1024 + 1)
/* The longest Last-Event-ID a server reads (browsers send it whole). */
#define SY_SSE_LAST_ID_MAX 65536

/* True when req asks for an event stream instead of a WebSocket: a GET
 * with no Upgrade header whose Accept names text/event-stream. */
bool sy_sse_requested(const sy_http_request_t *req);

/* The 200 response head of a stream, with extra header lines (each ending
 * CRLF; may be NULL) and the first event ("retry"): its length, 0 when it
 * does not fit in cap. */
size_t sy_sse_response_head(char *out, size_t cap, const char *extra, size_t extra_len, uint32_t retry_ms);

/* One position in an id: "sy.since=<epoch>:<offset>:<topic percent-encoded>"
 * into out (SY_SSE_ENTRY_MAX bytes), its length. */
size_t sy_sse_id_entry(char *out, uint64_t epoch, uint64_t offset, const char *topic, size_t topic_len);

/* The length sy_sse_id_entry gives for these (0 for a topic it refuses):
 * to size an id before it is written. */
size_t sy_sse_id_entry_len(uint64_t offset, const char *topic, size_t topic_len);

/* An event: "id: " id "\n" when id_len > 0, "event: " name "\n" when
 * name_len > 0 (a name with CR, LF or NUL is left out: the event is a
 * "message"), the payload's data lines (binary: base64 and "enc: base64"),
 * then the empty line. */
sy_refbuf_t *sy_sse_event(const char *id, size_t id_len, const char *name, size_t name_len, const void *payload,
                          size_t len, bool binary);

/* The bytes sy_sse_event makes of these (an id of id_len, a name of
 * name_len that is kept): for a budget before they are made. */
size_t sy_sse_event_len(size_t id_len, size_t name_len, const void *payload, size_t len, bool binary);

/* An "id: " id "\n" line alone (the positions of a connection with more
 * than one topic, queued before the shared rest of its event). */
sy_refbuf_t *sy_sse_id_line(const char *id, size_t id_len);

/* A comment line and its empty line (": " text "\n\n"): a heartbeat. */
sy_refbuf_t *sy_sse_comment(const char *text, size_t len);

/* Checks a Last-Event-ID value (1 to SY_SSE_LAST_ID_MAX bytes of
 * "sy.since=..." entries joined by '&', as sy_sse_id_entry writes them)
 * and copies it after a '?' into query (len + 2 bytes): a request target
 * for sy_since. NULL when well formed, else why not (sy_since's reasons,
 * or that it is too long or not ours). */
const char *sy_sse_last_event_id(const char *value, size_t len, char *query);

#endif
