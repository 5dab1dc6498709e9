/*
 * sy_poll — the readiness poller behind every IO thread and the bus thread.
 * One interface, one backend per system, chosen by the build: epoll on Linux
 * (sy_poll_epoll.c), kqueue on macOS and the BSDs (sy_poll_kqueue.c), AFD
 * polls on a completion port on Windows (sy_poll_afd.c). The loops never
 * know which they have; __test__/c/test_poll.c is the contract all pass.
 *
 * Level-triggered: a descriptor stays reported while it is readable, so the
 * loop may read a bounded amount per connection per turn (one flooding client
 * cannot starve the others) and still come back to it. Writability is asked
 * for only while a connection has bytes it could not write. A hang-up or an
 * error is reported as SY_POLL_IN while SY_POLL_IN is asked for (a read tells
 * which); with no interest (events 0) a descriptor stays registered and may
 * report nothing at all (kqueue, AFD) or its hang-up and errors only (epoll), so
 * the loop must not depend on either.
 *
 * One wait reports a descriptor at most once per kind of readiness; kqueue
 * may report a descriptor both readable and writable as two events of one
 * wait (each with its tag). More ready descriptors than max: the rest are
 * reported by the next waits.
 *
 * The rule for closing: a registered descriptor leaves the poller before it
 * is closed, by sy_poll_del or by sy_poll_destroy of its poller. Closing
 * alone is not enough everywhere: epoll forgets a descriptor only when every
 * descriptor of its open file is closed (a dup, a forked child or a passed
 * descriptor keeps it registered and reported, under a number that may
 * already name another socket), and a backend that keeps its own table of
 * descriptors (poll, event ports) never learns of the close. sy_io deletes
 * a connection's descriptor when the connection dies (sy_io_unwatch), before
 * its stream closes it.
 *
 * Threads: a sy_poll_t belongs to the thread that waits on it. add/mod/del
 * from that thread only, once it runs: the thread that sets it up (the owner,
 * in sy_io_create and sy_bus_create) creates it and adds its first descriptors
 * (the wake-up, the listening socket) before the waiting thread starts, and
 * destroys it after that thread is joined.
 *
 * Ownership: the poller keeps no descriptor: fds stay the caller's, who
 * closes them (sy_poll_destroy closes only the poller's own); tags are
 * values handed back, never followed. out is the caller's array.
 *
 * Errors: sy_poll_create returns NULL and sets errno (the one constructor
 * that does, a named exception of base/sy_errors.h); the others return 0 or
 * an errno value (EBADF: a descriptor that is not open). sy_poll_del of a
 * descriptor that is not registered returns 0 or ENOENT, by backend: the
 * callers ignore its result. Adding a registered descriptor, or changing
 * one that is not registered, is the caller's bug (epoll refuses both,
 * kqueue does them).
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
