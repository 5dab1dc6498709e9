/* sy_poll on Linux epoll; see sy_poll.h. Built on Linux only (binding.gyp,
 * __test__/c/Makefile); sy_poll_kqueue.c elsewhere. */
#define _GNU_SOURCE
#include "net/sy_poll.h"

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/sy_alloc.h"

#define SY_POLL_BATCH 256

struct sy_poll {
    int epfd;
    struct epoll_event events[SY_POLL_BATCH];
};

sy_poll_t *sy_poll_create(void) {
    sy_poll_t *p = sy_malloc(sizeof(*p));
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (p->epfd < 0) {
        int e = errno;
        sy_free(p);
        errno = e;
        return NULL;
    }
    return p;
}

void sy_poll_destroy(sy_poll_t *p) {
    if (p == NULL)
        return;
    close(p->epfd);
    sy_free(p);
}

static uint32_t to_epoll(uint32_t events) {
    uint32_t e = 0;
    if (events & SY_POLL_IN)
        e |= EPOLLIN | EPOLLRDHUP;
    if (events & SY_POLL_OUT)
        e |= EPOLLOUT;
    return e;
}

static int ctl(sy_poll_t *p, int op, int fd, uint32_t events, uint64_t tag) {
    struct epoll_event ev = {.events = to_epoll(events), .data.u64 = tag};
    return epoll_ctl(p->epfd, op, fd, &ev) == 0 ? 0 : errno;
}

sy_err_t sy_poll_add(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) {
    return ctl(p, EPOLL_CTL_ADD, fd, events, tag);
}

sy_err_t sy_poll_mod(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) {
    return ctl(p, EPOLL_CTL_MOD, fd, events, tag);
}

sy_err_t sy_poll_del(sy_poll_t *p, int fd) { return epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL) == 0 ? 0 : errno; }

sy_err_t sy_poll_wait(sy_poll_t *p, sy_poll_event_t *out, int max, int timeout_ms, int *count) {
    *count = 0;
    if (max > SY_POLL_BATCH)
        max = SY_POLL_BATCH;
    int n = epoll_wait(p->epfd, p->events, max, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : errno;
    for (int i = 0; i < n; i++) {
        uint32_t e = p->events[i].events, r = 0;
        if (e & (EPOLLIN | EPOLLRDHUP))
            r |= SY_POLL_IN;
        if (e & EPOLLOUT)
            r |= SY_POLL_OUT;
        if (e & (EPOLLERR | EPOLLHUP))
            r |= SY_POLL_IN;
        out[i].tag = p->events[i].data.u64;
        out[i].events = r;
    }
    *count = n;
    return 0;
}
