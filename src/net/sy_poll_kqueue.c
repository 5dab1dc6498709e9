/* sy_poll on kqueue (macOS, the BSDs); see sy_poll.h. Level-triggered as
 * epoll is here: EVFILT_READ and EVFILT_WRITE without EV_CLEAR. A
 * descriptor's interest is its two filters: each added (EV_ADD, which also
 * updates the tag) while asked for, deleted while not. */
#include "net/sy_poll.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/event.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/sy_alloc.h"

#define SY_POLL_BATCH 256

/* A tag travels in udata: pointers are 64 bits on every kqueue system built. */
_Static_assert(sizeof(void *) >= sizeof(uint64_t), "kqueue's udata must hold a 64-bit tag");

struct sy_poll {
    int kq;
    struct kevent events[SY_POLL_BATCH];
};

sy_poll_t *sy_poll_create(void) {
    sy_poll_t *p = sy_malloc(sizeof(*p));
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    p->kq = kqueue();
    if (p->kq < 0 || fcntl(p->kq, F_SETFD, FD_CLOEXEC) != 0) {
        int e = errno;
        if (p->kq >= 0)
            (void)close(p->kq);
        sy_free(p);
        errno = e;
        return NULL;
    }
    return p;
}

void sy_poll_destroy(sy_poll_t *p) {
    if (p == NULL)
        return;
    (void)close(p->kq);
    sy_free(p);
}

/* Applies n changes (at most 2); a delete of a filter that is not there
 * (ENOENT) is what was wanted. 0 or an errno value. */
static sy_err_t apply(sy_poll_t *p, struct kevent *ch, int n) {
#ifdef EV_RECEIPT
    /* One call, one receipt per change (EV_ERROR, data: 0 or the errno),
     * and no pending event taken. */
    struct kevent rc[2];
    const struct timespec now = {0, 0};
    for (int i = 0; i < n; i++)
        ch[i].flags |= EV_RECEIPT;
    int got = kevent(p->kq, ch, n, rc, n, &now);
    if (got < 0)
        return errno;
    for (int i = 0; i < got; i++) {
        if (!(rc[i].flags & EV_ERROR) || rc[i].data == 0)
            continue;
        /* A receipt names its filter; was that filter's change a delete? */
        bool del = false;
        for (int j = 0; j < n; j++)
            del |= ch[j].filter == rc[i].filter && (ch[j].flags & EV_DELETE);
        if (!(rc[i].data == ENOENT && del))
            return (sy_err_t)rc[i].data;
    }
    return 0;
#else
    for (int i = 0; i < n; i++) {
        if (kevent(p->kq, &ch[i], 1, NULL, 0, NULL) < 0 && !(errno == ENOENT && (ch[i].flags & EV_DELETE)))
            return errno;
    }
    return 0;
#endif
}

static sy_err_t change(sy_poll_t *p, int fd, uint32_t events, uint64_t tag, bool del_unwanted) {
    struct kevent ch[2];
    int n = 0;
    void *udata = (void *)(uintptr_t)tag;
    if (events & SY_POLL_IN)
        EV_SET(&ch[n++], (uintptr_t)fd, EVFILT_READ, EV_ADD, 0, 0, udata);
    else if (del_unwanted)
        EV_SET(&ch[n++], (uintptr_t)fd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
    if (events & SY_POLL_OUT)
        EV_SET(&ch[n++], (uintptr_t)fd, EVFILT_WRITE, EV_ADD, 0, 0, udata);
    else if (del_unwanted)
        EV_SET(&ch[n++], (uintptr_t)fd, EVFILT_WRITE, EV_DELETE, 0, 0, NULL);
    if (n == 0)
        return fcntl(fd, F_GETFD) < 0 ? errno : 0; /* nothing to watch; EBADF as epoll tells it */
    return apply(p, ch, n);
}

sy_err_t sy_poll_add(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) { return change(p, fd, events, tag, false); }

sy_err_t sy_poll_mod(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) { return change(p, fd, events, tag, true); }

sy_err_t sy_poll_del(sy_poll_t *p, int fd) { return change(p, fd, 0, 0, true); }

sy_err_t sy_poll_wait(sy_poll_t *p, sy_poll_event_t *out, int max, int timeout_ms, int *count) {
    *count = 0;
    if (max > SY_POLL_BATCH)
        max = SY_POLL_BATCH;
    struct timespec ts, *tsp = NULL;
    if (timeout_ms >= 0) {
        ts.tv_sec = timeout_ms / 1000;
        ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
        tsp = &ts;
    }
    int n = kevent(p->kq, NULL, 0, p->events, max, tsp);
    if (n < 0)
        return errno == EINTR ? 0 : errno;
    for (int i = 0; i < n; i++) {
        const struct kevent *e = &p->events[i];
        /* EV_EOF (a hang-up) and EV_ERROR come with their filter: a read
         * or a write tells the loop what happened. */
        out[i].tag = (uint64_t)(uintptr_t)e->udata;
        out[i].events = e->filter == EVFILT_WRITE && !(e->flags & EV_ERROR) ? SY_POLL_OUT : SY_POLL_IN;
    }
    *count = n;
    return 0;
}
