/* sy_uring — see sy_uring.h. */
#define _GNU_SOURCE
#include "net/sy_uring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<linux/io_uring.h>)
#define SY_HAVE_URING 1
#endif
#endif

bool sy_uring_env_allows(void) {
    const char *v = getenv("SYMPHONY_IO_URING");
    return v == NULL || strcmp(v, "0") != 0;
}

#ifndef SY_HAVE_URING

/* Headers without io_uring (an old sysroot, some musl ones): the callers
 * send with send()/sendmsg(). */
sy_err_t sy_uring_open(unsigned entries, sy_uring_t **out) {
    (void)entries;
    *out = NULL;
    return ENOSYS;
}
unsigned sy_uring_capacity(const sy_uring_t *u) {
    (void)u;
    return 0;
}
sy_err_t sy_uring_send(sy_uring_t *u, sy_uring_send_t *s, unsigned n) {
    (void)u;
    (void)s;
    (void)n;
    return ENOSYS;
}
void sy_uring_close(sy_uring_t *u) { (void)u; }

#else

#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/sy_alloc.h"

/* The same numbers on every architecture (the unified syscall table). */
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427
#endif
/* Flags newer than some build hosts' headers; an older kernel refuses
 * them with EINVAL and the next, smaller set is tried. */
#ifndef IORING_SETUP_SUBMIT_ALL
#define IORING_SETUP_SUBMIT_ALL (1U << 7)
#endif
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

#define SY_URING_SEND_FLAGS (MSG_NOSIGNAL | MSG_DONTWAIT)
#define SY_URING_PROBE_OPS 256
#define SY_URING_RETRIES 1000 /* io_uring_enter failing with EINTR/EAGAIN/EBUSY in one batch */

/* One side of the rings as mapped: where the kernel's head, tail and mask
 * live. */
typedef struct ring_side {
    unsigned *head, *tail;
    unsigned mask, entries;
} ring_side_t;

struct sy_uring {
    int fd;
    unsigned capacity;
    void *sq_map, *cq_map; /* the same mapping with IORING_FEAT_SINGLE_MMAP */
    size_t sq_map_len, cq_map_len;
    struct io_uring_sqe *sqes;
    size_t sqes_len;
    ring_side_t sq, cq;
    struct io_uring_cqe *cqes;
    struct msghdr *msgs; /* one per entry, for IORING_OP_SENDMSG */
};

static int sys_setup(unsigned entries, struct io_uring_params *p) {
    return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags) {
    return (int)syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, NULL, (size_t)0);
}

static int sys_register(int fd, unsigned op, void *arg, unsigned nr) {
    return (int)syscall(__NR_io_uring_register, fd, op, arg, nr);
}

/* The ring's descriptor with the richest flags this kernel takes; -1 and
 * errno when none. */
static int setup_ring(unsigned entries, struct io_uring_params *p) {
    static const unsigned flag_sets[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL,
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL,
        IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL,
        0,
    };
    for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
        memset(p, 0, sizeof(*p));
        p->flags = flag_sets[i];
        int fd = sys_setup(entries, p);
        if (fd >= 0 || errno != EINVAL)
            return fd;
    }
    return -1;
}

/* 0 when the kernel supports the two operations used here, else an errno
 * value (a kernel before 5.6 has neither IORING_OP_SEND nor the probe). */
static int probe_ops(int fd) {
    size_t len = sizeof(struct io_uring_probe) + SY_URING_PROBE_OPS * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *probe = sy_calloc(1, len);
    if (probe == NULL)
        return ENOMEM;
    int rc = 0;
    if (sys_register(fd, IORING_REGISTER_PROBE, probe, SY_URING_PROBE_OPS) < 0)
        rc = errno;
    else if (probe->last_op < IORING_OP_SEND || !(probe->ops[IORING_OP_SEND].flags & IO_URING_OP_SUPPORTED) ||
             !(probe->ops[IORING_OP_SENDMSG].flags & IO_URING_OP_SUPPORTED))
        rc = EOPNOTSUPP;
    sy_free(probe);
    return rc;
}

static void *map_ring(int fd, size_t len, off_t what) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, what);
    return p == MAP_FAILED ? NULL : p;
}

static void side_at(ring_side_t *side, void *base, unsigned head, unsigned tail, unsigned mask, unsigned entries) {
    side->head = (unsigned *)((char *)base + head);
    side->tail = (unsigned *)((char *)base + tail);
    side->mask = *(unsigned *)((char *)base + mask);
    side->entries = *(unsigned *)((char *)base + entries);
}

/* Maps the rings of u->fd as p describes. 0 or an errno value. */
static int map_rings(sy_uring_t *u, const struct io_uring_params *p) {
    u->sq_map_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
    u->cq_map_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
    bool single = (p->features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && u->cq_map_len > u->sq_map_len)
        u->sq_map_len = u->cq_map_len;
    if ((u->sq_map = map_ring(u->fd, u->sq_map_len, IORING_OFF_SQ_RING)) == NULL)
        return errno;
    u->cq_map = single ? u->sq_map : map_ring(u->fd, u->cq_map_len, IORING_OFF_CQ_RING);
    if (u->cq_map == NULL)
        return errno;
    u->sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
    if ((u->sqes = map_ring(u->fd, u->sqes_len, IORING_OFF_SQES)) == NULL)
        return errno;
    side_at(&u->sq, u->sq_map, p->sq_off.head, p->sq_off.tail, p->sq_off.ring_mask, p->sq_off.ring_entries);
    side_at(&u->cq, u->cq_map, p->cq_off.head, p->cq_off.tail, p->cq_off.ring_mask, p->cq_off.ring_entries);
    u->cqes = (struct io_uring_cqe *)((char *)u->cq_map + p->cq_off.cqes);
    /* The index array maps SQ slot i to SQE i, once for all. */
    unsigned *array = (unsigned *)((char *)u->sq_map + p->sq_off.array);
    for (unsigned i = 0; i < p->sq_entries; i++)
        array[i] = i;
    return 0;
}

void sy_uring_close(sy_uring_t *u) {
    if (u == NULL)
        return;
    /* munmap of a mapping we made cannot fail; close of the ring neither
     * matters: nothing is in flight between calls. */
    if (u->sqes != NULL)
        (void)munmap(u->sqes, u->sqes_len);
    if (u->cq_map != NULL && u->cq_map != u->sq_map)
        (void)munmap(u->cq_map, u->cq_map_len);
    if (u->sq_map != NULL)
        (void)munmap(u->sq_map, u->sq_map_len);
    if (u->fd >= 0)
        (void)close(u->fd);
    sy_free(u->msgs);
    sy_free(u);
}

sy_err_t sy_uring_open(unsigned entries, sy_uring_t **out) {
    *out = NULL;
    sy_uring_t *u = sy_calloc(1, sizeof(*u));
    if (u == NULL)
        return ENOMEM;
    struct io_uring_params p;
    u->fd = setup_ring(entries, &p);
    int rc = u->fd < 0 ? errno : probe_ops(u->fd);
    if (rc == 0)
        rc = map_rings(u, &p);
    if (rc == 0) {
        /* The completion ring holds at least twice the submissions: one
         * batch never overflows it. */
        u->capacity = u->sq.entries < u->cq.entries ? u->sq.entries : u->cq.entries;
        u->msgs = sy_calloc(u->capacity, sizeof(*u->msgs));
        if (u->msgs == NULL)
            rc = ENOMEM;
    }
    if (rc != 0) {
        sy_uring_close(u);
        return rc;
    }
    *out = u;
    return 0;
}

unsigned sy_uring_capacity(const sy_uring_t *u) { return u->capacity; }

/* Fills the SQE for send i of the batch. */
static void prep_send(sy_uring_t *u, struct io_uring_sqe *sqe, sy_uring_send_t *s, unsigned i) {
    memset(sqe, 0, sizeof(*sqe));
    sqe->fd = s->fd;
    sqe->msg_flags = SY_URING_SEND_FLAGS;
    sqe->user_data = i;
    if (s->iovcnt == 1) {
        size_t len = s->iov[0].iov_len;
        sqe->opcode = IORING_OP_SEND;
        sqe->addr = (uint64_t)(uintptr_t)s->iov[0].iov_base;
        sqe->len = len > INT32_MAX ? INT32_MAX : (uint32_t)len; /* a short write, resumed later */
    } else {
        struct msghdr *mh = &u->msgs[i];
        memset(mh, 0, sizeof(*mh));
        mh->msg_iov = (struct iovec *)s->iov;
        mh->msg_iovlen = (size_t)s->iovcnt;
        sqe->opcode = IORING_OP_SENDMSG;
        sqe->addr = (uint64_t)(uintptr_t)mh;
        sqe->len = 1;
    }
}

/* Queues the n sends in the submission ring (the caller has checked that
 * n fits: the ring is empty between calls). */
static void queue_sends(sy_uring_t *u, sy_uring_send_t *s, unsigned n) {
    unsigned tail = *u->sq.tail; /* only this thread writes it */
    for (unsigned i = 0; i < n; i++) {
        s[i].res = SY_URING_NOT_SENT;
        prep_send(u, &u->sqes[tail & u->sq.mask], &s[i], i);
        tail++;
    }
    __atomic_store_n(u->sq.tail, tail, __ATOMIC_RELEASE);
}

/* Takes every completion there is; returns how many. */
static unsigned reap(sy_uring_t *u, sy_uring_send_t *s, unsigned n) {
    unsigned head = *u->cq.head, tail = __atomic_load_n(u->cq.tail, __ATOMIC_ACQUIRE), got = 0;
    for (; head != tail; head++, got++) {
        const struct io_uring_cqe *cqe = &u->cqes[head & u->cq.mask];
        if (cqe->user_data < n)
            s[cqe->user_data].res = cqe->res;
    }
    __atomic_store_n(u->cq.head, head, __ATOMIC_RELEASE);
    return got;
}

/* The ring failed after `submitted` sends went to the kernel: those whose
 * completion was not seen get -EIO, the others keep SY_URING_NOT_SENT. */
static void mark_unknown(sy_uring_send_t *s, unsigned n, unsigned submitted) {
    for (unsigned i = 0; i < n && i < submitted; i++)
        if (s[i].res == SY_URING_NOT_SENT)
            s[i].res = -EIO;
}

sy_err_t sy_uring_send(sy_uring_t *u, sy_uring_send_t *s, unsigned n) {
    if (n == 0 || n > u->capacity)
        return EINVAL;
    queue_sends(u, s, n);
    unsigned submitted = 0, completed = 0, retries = 0;
    while (completed < n) {
        int r = sys_enter(u->fd, n - submitted, n - completed, IORING_ENTER_GETEVENTS);
        if (r < 0) {
            int err = errno;
            /* A signal, or the kernel short of memory for a moment: again,
             * but not forever. */
            if ((err == EINTR || err == EAGAIN || err == EBUSY) && ++retries < SY_URING_RETRIES) {
                completed += reap(u, s, n);
                continue;
            }
            completed += reap(u, s, n);
            mark_unknown(s, n, submitted);
            return err;
        }
        submitted += (unsigned)r;
        completed += reap(u, s, n);
        if (submitted < n && r == 0) {
            /* The kernel took none and said nothing (it cannot, with the
             * ring empty): do not spin. */
            mark_unknown(s, n, submitted);
            return EIO;
        }
    }
    return 0;
}

#endif
