/*
 * sy_outq — a connection's send queue: a ring of refcounted buffers
 * (sy_refbuf_t), how much of the head is already written, and the bytes
 * still to write.
 *
 * Knows nothing of sockets or TLS: a transport asks it for iovecs
 * (sy_outq_iov) or a gathered copy (sy_outq_copy) and tells it what was
 * written (sy_outq_consume). Pinned head entries (the 101 response) survive
 * sy_outq_clear(keep_head): a close frame without the response before it is
 * no WebSocket. The ring's memory exists only while it is used
 * (sy_outq_shrink gives back an empty ring's array).
 *
 * Own entries (sy_outq_push_own): buffers made for this queue alone, such
 * as a connection's control replies. Shared buffers cost the queue their
 * bytes; an own one costs what it holds: its allocation and a ring slot,
 * counted in sy_outq_own_bytes while it is queued, so that a caller can
 * charge many small frames what they cost rather than their few wire
 * bytes. One own entry at a time may be replaceable: the next push_own
 * with replace takes its place (releasing it) while none of it is written.
 *
 * Ids (sy_outq_last_id): every entry has a 32-bit id, its number in push
 * order, good while it is queued, so that a caller can name one entry
 * later (sy_outq_replace: the conflate policy keeps a topic's newest
 * message that way). Ids go on from the head: those of entries dropped by
 * sy_outq_clear are given again to the next pushes.
 *
 * Zero-initialised is an empty queue.
 *
 * Threads: the owner of the queue only (the IO thread that owns its
 * connection). The buffers it references are sy_refbuf's, shared with
 * other queues on other threads; their counts are atomic.
 *
 * Ownership: each entry holds one reference: sy_outq_push takes over the
 * caller's (only on success); consume, clear and free release the entries
 * they drop. The iovecs of sy_outq_iov and the pointer of sy_outq_head point
 * into the queued buffers and are good until the next consume, clear or
 * free; sy_outq_copy copies into the caller's dst.
 *
 * Errors: sy_outq_push returns 0 or ENOMEM; sy_outq_replace answers whether
 * it replaced; sy_outq_iov returns the count it
 * filled, an int (a named exception of base/sy_errors.h); the rest cannot
 * fail.
 */
#ifndef SY_OUTQ_H
#define SY_OUTQ_H

#include "base/sy_errors.h"
#include "base/sy_refbuf.h"
#include "net/sy_sock.h" /* struct iovec */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sy_outq {
    sy_refbuf_t **ring; /* each entry holds one reference */
    uint32_t head, len;
    uint32_t seq;    /* the id of the head entry (ids number the entries in push order) */
    uint16_t pinned; /* head entries sy_outq_clear(keep_head) keeps */
    uint8_t lgcap;   /* the ring holds 1 << lgcap entries; 0: no ring */
    size_t off;      /* bytes of the head entry already written */
    size_t bytes;    /* bytes queued and not yet written */
    uint32_t own;    /* memory of the own entries queued (sy_outq_push_own): a few
                                control frames */
    uint32_t repl;   /* 1 + the replaceable entry's index; 0: none */
} sy_outq_t;

static inline bool sy_outq_empty(const sy_outq_t *q) { return q->len == 0; }
static inline size_t sy_outq_bytes(const sy_outq_t *q) { return q->bytes; }
/* The memory the own entries still queued hold (0: none is queued). */
static inline size_t sy_outq_own_bytes(const sy_outq_t *q) { return q->own; }

/* Appends b, taking over the caller's reference. 0 or ENOMEM (the caller
 * keeps its reference). */
sy_err_t sy_outq_push(sy_outq_t *q, sy_refbuf_t *b);
/* The id of the newest entry (the queue must not be empty). */
static inline uint32_t sy_outq_last_id(const sy_outq_t *q) { return q->seq + q->len - 1; }
/* Entry id when sy_outq_replace could replace it now (NULL: it could not). */
const sy_refbuf_t *sy_outq_replaceable(const sy_outq_t *q, uint32_t id);
/* Puts b, a shared buffer, in the place of entry id, taking over the
 * caller's reference, when that entry is still queued, is shared (not own
 * or pinned) and none of it is written; the old buffer is released. True
 * when replaced; false: nothing changed (the caller keeps its reference). */
bool sy_outq_replace(sy_outq_t *q, uint32_t id, sy_refbuf_t *b);
/* Appends b as an own entry (see above), taking over the caller's
 * reference. With replace, b takes the place of the replaceable entry
 * instead when it is still queued and none of it is written (that one is
 * released; *replaced is set), and b becomes the replaceable entry. 0 or
 * ENOMEM (the caller keeps its reference). */
sy_err_t sy_outq_push_own(sy_outq_t *q, sy_refbuf_t *b, bool replace, bool *replaced);
/* Pins every entry queued now (see above). */
void sy_outq_pin(sy_outq_t *q);
/* Drops queued entries. With keep_head, a partly written head entry and
 * the pinned ones stay. */
void sy_outq_clear(sy_outq_t *q, bool keep_head);
/* Fills up to max iovecs with the unwritten bytes, in order. Returns the
 * number filled; *total: their bytes. */
int sy_outq_iov(const sy_outq_t *q, struct iovec *iov, int max, size_t *total);
/* Copies up to max unwritten bytes, in order, into dst; returns how many. */
size_t sy_outq_copy(const sy_outq_t *q, uint8_t *dst, size_t max);
/* The unwritten bytes of the head entry (NULL, 0 when empty). */
const uint8_t *sy_outq_head(const sy_outq_t *q, size_t *len);
/* n bytes were written (n <= sy_outq_bytes): releases the entries done. */
void sy_outq_consume(sy_outq_t *q, size_t n);
/* Gives back the ring's array when the queue is empty. */
void sy_outq_shrink(sy_outq_t *q);
/* Releases every entry and the array. */
void sy_outq_free(sy_outq_t *q);

#endif
