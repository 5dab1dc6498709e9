/*
 * sy_wake — a thread's wake-up: a descriptor its poller watches for
 * SY_POLL_IN, made readable by any other thread. An eventfd on Linux (one
 * descriptor, a counter); a non-blocking pipe elsewhere (macOS, the BSDs);
 * on Windows, whose pollers watch sockets only, a UDP socket on 127.0.0.1
 * connected to itself (one descriptor; a datagram per signal).
 * The IO threads (io/sy_io.c) and the bus thread (bus/sy_bus.c) each have
 * one; this is the one place that knows which kind.
 *
 * Threads: sy_wake_signal from any thread; sy_wake_drain from the thread
 * that polls sy_wake_fd; open and close by the owner, before that thread
 * starts and after it is joined.
 *
 * Ownership: the descriptors are the sy_wake_t's, closed by sy_wake_close
 * (after sy_poll_del, or after the poller is destroyed: net/sy_poll.h's
 * rule for closing).
 *
 * Errors: sy_wake_open returns 0 or an errno value and leaves the wake-up
 * closed (safe to sy_wake_close) on failure. A signal cannot fail in a way
 * that matters: a full eventfd counter or pipe means a wake-up is already
 * pending.
 */
#ifndef SY_WAKE_H
#define SY_WAKE_H

#include "base/sy_errors.h"

typedef struct sy_wake {
    int rfd; /* polled and drained */
    int wfd; /* written; the same as rfd for an eventfd */
} sy_wake_t;

/* Marks w closed without opening it (so that sy_wake_close is safe). */
void sy_wake_init(sy_wake_t *w);
sy_err_t sy_wake_open(sy_wake_t *w);
void sy_wake_close(sy_wake_t *w);
/* The descriptor to watch for SY_POLL_IN. */
static inline int sy_wake_fd(const sy_wake_t *w) { return w->rfd; }
/* Makes sy_wake_fd readable (until drained). */
void sy_wake_signal(sy_wake_t *w);
/* Takes every pending wake-up: sy_wake_fd is not readable after it until
 * the next signal. */
void sy_wake_drain(sy_wake_t *w);

#endif
