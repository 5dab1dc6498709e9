/*
 * sy_poll — the readiness poller behind every IO thread. One interface; the
 * Linux backend is epoll (sy_poll_epoll.c). A kqueue backend could sit
 * beside it without the loop knowing.
 *
 * Level-triggered: a descriptor stays reported while it is readable, so the
 * loop may read a bounded amount per connection per turn (one flooding client
 * cannot starve the others) and still come back to it. Writability is asked
 * for only while a connection has bytes it could not write.
 *
 * Threads: a sy_poll_t belongs to the thread that waits on it. add/mod/del
 * from that thread only, once it runs: the thread that sets it up (the owner,
 * in sy_io_create and sy_bus_create) creates it and adds its first descriptors
 * (the wake-up eventfd, the listening socket) before the waiting thread
 * starts, and destroys it after that thread is joined.
 *
 * Ownership: the poller keeps no descriptor: fds stay the caller's, who
 * closes them (sy_poll_destroy closes only the poller's own); tags are
 * values handed back, never followed. out is the caller's array.
 *
 * Errors: sy_poll_create returns NULL and sets errno (the one constructor
 * that does, a named exception of base/sy_errors.h); the others return 0 or
 * an errno value.
 */
#ifndef SY_POLL_H
#define SY_POLL_H

#include <stdint.h>

#include "base/sy_errors.h"

#define SY_POLL_IN 1u  /* readable, or an error or hang-up (a read tells which) */
#define SY_POLL_OUT 2u /* writable */

typedef struct sy_poll sy_poll_t;

typedef struct sy_poll_event {
    uint64_t tag;    /* what was given to sy_poll_add / sy_poll_mod */
    uint32_t events; /* SY_POLL_* */
} sy_poll_event_t;

/* NULL on failure (errno set: the one constructor that reports why). */
sy_poll_t *sy_poll_create(void);
void sy_poll_destroy(sy_poll_t *p);
/* 0 or an errno value. tag: the caller's name for fd, handed back with its
 * events. */
sy_err_t sy_poll_add(sy_poll_t *p, int fd, uint32_t events, uint64_t tag);
sy_err_t sy_poll_mod(sy_poll_t *p, int fd, uint32_t events, uint64_t tag);
sy_err_t sy_poll_del(sy_poll_t *p, int fd);
/* Waits up to timeout_ms (-1: forever) and writes up to max events to out,
 * their number to *n. 0 or an errno value (an interrupted wait is 0 with
 * *n = 0). */
sy_err_t sy_poll_wait(sy_poll_t *p, sy_poll_event_t *out, int max, int timeout_ms, int *n);

#endif
