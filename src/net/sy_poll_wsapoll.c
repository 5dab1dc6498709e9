/* sy_poll on Windows: WSAPoll; see sy_poll.h. Built on Windows only
 * (scripts/windows-gate.js, binding.gyp's OS=="win"); docs/builds.md says
 * why WSAPoll and what it costs.
 *
 * WSAPoll has no registration: each wait hands it an array of the sockets
 * with interest. The poller keeps every registered socket in a dense table
 * (fd, interest, tag), finds one by fd through an open-addressing index
 * (linear probing, deletion by backward shift: no tombstones), and builds
 * the wait's array from the entries with interest, so a socket with none
 * (a paused connection) is not reported at all, its hang-up included. A
 * wait costs O(registered sockets), in the kernel and here. Reports start
 * at a rotating place, so that with more ready sockets than max every one
 * is reported in turn. */
#include "net/sy_poll.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "net/sy_sock.h"

typedef struct entry {
    int fd;
    uint32_t events; /* SY_POLL_* */
    uint64_t tag;
} entry_t;

struct sy_poll {
    entry_t *e;      /* the registered sockets, dense */
    WSAPOLLFD *wait; /* the wait's array (the entries with interest) */
    uint32_t *which; /* wait[i] is e[which[i]] */
    uint32_t n, cap; /* entries of e (and room in wait and which) */
    uint32_t *index; /* fd -> 1 + its place in e; 0: empty */
    int *keys;       /* the fd of each index slot */
    uint32_t icap;   /* slots of index (a power of two, >= 2 * cap) */
    uint32_t rotate; /* where the next wait starts reporting */
};

static uint32_t slot_of(const sy_poll_t *p, int fd) { return ((uint32_t)fd * 2654435761u) & (p->icap - 1); }

/* The index slot of fd, or of the empty slot where it would go. */
static uint32_t find(const sy_poll_t *p, int fd) {
    uint32_t i = slot_of(p, fd);
    while (p->index[i] != 0 && p->keys[i] != fd)
        i = (i + 1) & (p->icap - 1);
    return i;
}

static void index_remove(sy_poll_t *p, uint32_t i) {
    /* Backward shift: later members of the run move up into the hole when
     * their home slot is not between the hole and them. */
    uint32_t mask = p->icap - 1, j = i;
    p->index[i] = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (p->index[j] == 0)
            return;
        uint32_t home = slot_of(p, p->keys[j]);
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays)
            continue;
        p->index[i] = p->index[j];
        p->keys[i] = p->keys[j];
        p->index[j] = 0;
        i = j;
    }
}

/* Room for one more entry: 0 or ENOMEM. */
static sy_err_t grow(sy_poll_t *p) {
    if (p->n < p->cap)
        return 0;
    uint32_t cap = p->cap ? p->cap * 2 : 64;
    entry_t *e = sy_realloc(p->e, (size_t)cap * sizeof(*e));
    if (e == NULL)
        return ENOMEM;
    p->e = e;
    WSAPOLLFD *w = sy_realloc(p->wait, (size_t)cap * sizeof(*w));
    if (w == NULL)
        return ENOMEM;
    p->wait = w;
    uint32_t *which = sy_realloc(p->which, (size_t)cap * sizeof(*which));
    if (which == NULL)
        return ENOMEM;
    p->which = which;
    /* The index at twice the entries or more: rebuilt. */
    uint32_t icap = p->icap ? p->icap : 128;
    while (icap < 2 * cap)
        icap *= 2;
    if (icap != p->icap) {
        uint32_t *index = sy_calloc(icap, sizeof(*index));
        int *keys = sy_malloc((size_t)icap * sizeof(*keys));
        if (index == NULL || keys == NULL) {
            sy_free(index);
            sy_free(keys);
            return ENOMEM;
        }
        sy_free(p->index);
        sy_free(p->keys);
        p->index = index;
        p->keys = keys;
        p->icap = icap;
        for (uint32_t k = 0; k < p->n; k++) {
            uint32_t i = find(p, p->e[k].fd);
            p->index[i] = k + 1;
            p->keys[i] = p->e[k].fd;
        }
    }
    p->cap = cap;
    return 0;
}

sy_poll_t *sy_poll_create(void) {
    sy_poll_t *p = sy_calloc(1, sizeof(*p));
    if (p == NULL || grow(p) != 0) {
        sy_poll_destroy(p);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

void sy_poll_destroy(sy_poll_t *p) {
    if (p == NULL)
        return;
    sy_free(p->e);
    sy_free(p->wait);
    sy_free(p->which);
    sy_free(p->index);
    sy_free(p->keys);
    sy_free(p);
}

sy_err_t sy_poll_add(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) {
    /* WSAPoll would tell a closed socket only at the wait (POLLNVAL): the
     * contract's EBADF comes from asking now, once per socket. */
    int type = 0, len = sizeof(type);
    if (fd < 0 || getsockopt((SOCKET)fd, SOL_SOCKET, SO_TYPE, (char *)&type, &len) != 0)
        return EBADF;
    if (p->index[find(p, fd)] != 0)
        return EEXIST;
    if (grow(p) != 0)
        return ENOMEM;
    uint32_t i = find(p, fd); /* again: grow may have rebuilt the index */
    p->e[p->n] = (entry_t){.fd = fd, .events = events, .tag = tag};
    p->index[i] = ++p->n;
    p->keys[i] = fd;
    return 0;
}

sy_err_t sy_poll_mod(sy_poll_t *p, int fd, uint32_t events, uint64_t tag) {
    uint32_t i = find(p, fd);
    if (fd < 0 || p->index[i] == 0)
        return ENOENT;
    entry_t *e = &p->e[p->index[i] - 1];
    e->events = events;
    e->tag = tag;
    return 0;
}

sy_err_t sy_poll_del(sy_poll_t *p, int fd) {
    uint32_t i = find(p, fd);
    if (fd < 0 || p->index[i] == 0)
        return ENOENT;
    uint32_t k = p->index[i] - 1, last = p->n - 1;
    index_remove(p, i);
    if (k != last) {
        /* The last entry takes the hole. */
        p->e[k] = p->e[last];
        p->index[find(p, p->e[k].fd)] = k + 1;
    }
    p->n--;
    return 0;
}

sy_err_t sy_poll_wait(sy_poll_t *p, sy_poll_event_t *out, int max, int timeout_ms, int *count) {
    *count = 0;
    uint32_t m = 0;
    for (uint32_t k = 0; k < p->n; k++) {
        const entry_t *e = &p->e[k];
        if (e->events == 0)
            continue;
        p->wait[m] = (WSAPOLLFD){.fd = (SOCKET)e->fd,
                                 .events = (SHORT)(((e->events & SY_POLL_IN) ? POLLRDNORM : 0) |
                                                   ((e->events & SY_POLL_OUT) ? POLLWRNORM : 0))};
        p->which[m++] = k;
    }
    if (m == 0) {
        /* WSAPoll refuses an empty array: the wait is a sleep. */
        Sleep(timeout_ms < 0 ? INFINITE : (DWORD)timeout_ms);
        return 0;
    }
    int r = WSAPoll(p->wait, m, timeout_ms);
    if (r < 0)
        return sy_sock_error() == EINTR ? 0 : sy_sock_error();
    if (r == 0)
        return 0;
    uint32_t start = p->rotate % m;
    int n = 0;
    for (uint32_t j = 0; j < m && n < max; j++) {
        uint32_t i = (start + j) % m;
        SHORT re = p->wait[i].revents;
        if (re == 0)
            continue;
        uint32_t ev = 0;
        if (re & (POLLRDNORM | POLLHUP | POLLERR | POLLNVAL))
            ev |= SY_POLL_IN;
        if (re & POLLWRNORM)
            ev |= SY_POLL_OUT;
        if (ev == 0)
            continue;
        out[n].tag = p->e[p->which[i]].tag;
        out[n++].events = ev;
    }
    p->rotate = start + 1;
    *count = n;
    return 0;
}
