/* net/sy_poll: the poller's contract (net/sy_poll.h), the one every
 * backend passes: epoll here on Linux, kqueue on macOS (the macOS
 * workflow). Level-triggered reads, interest changes, a full send buffer
 * then writable, a peer's hang-up and reset, timeouts, a wake-up from
 * another thread (net/sy_wake), more ready than asked, a listener, a
 * descriptor number reused after the rule for closing (del, then close),
 * and the close that rule is for (a dup of the socket still open). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#if !defined(_WIN32)
#include <unistd.h>
#endif

#include "base/sy_clock.h"
#include "base/sy_thread.h"
#include "check.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"
#include "net/sy_wake.h"

#define MAXEV 64

/* A socket's reads and writes as every system has them (Windows has no
 * read or write on a socket). */
static long rd(int fd, void *buf, size_t n) {
    long r = sy_sock_recv(fd, buf, n, false);
    if (r < 0)
        errno = (int)-r;
    return r < 0 ? -1 : r;
}
static long wr(int fd, const void *buf, size_t n) {
    long r = sy_sock_send(fd, buf, n);
    if (r < 0)
        errno = (int)-r;
    return r < 0 ? -1 : r;
}

/* A second descriptor of fd's socket (dup; on Windows a duplicated
 * SOCKET), or -1. */
static int dup_sock(int fd) {
#if defined(_WIN32)
    WSAPROTOCOL_INFOW info;
    if (WSADuplicateSocketW((SOCKET)fd, GetCurrentProcessId(), &info) != 0)
        return -1;
    SOCKET s = WSASocketW(FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, &info, 0, 0);
    return s == INVALID_SOCKET ? -1 : (int)s;
#else
    return dup(fd);
#endif
}

/* A listening socket on 127.0.0.1, any port. */
static int listener(uint16_t *port) {
    int l = -1;
    if (sy_sock_stream(AF_INET, &l) != 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 64) != 0 ||
        getsockname(l, (struct sockaddr *)&sa, &len) != 0) {
        sy_sock_close(l);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return l;
}

/* A connected TCP pair on loopback, both non-blocking: *a the accepted side
 * (the server's), *b the client. 0 or -1. */
static int tcp_pair(int *a, int *b) {
    uint16_t port = 0;
    int l = listener(&port);
    if (l < 0)
        return -1;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = c >= 0 ? connect(c, (struct sockaddr *)&sa, sizeof(sa)) : -1;
    int s = -1;
    for (int i = 0; rc == 0 && i < 1000 && s < 0; i++) {
        if (sy_sock_accept(l, true, &s) != 0) {
            sy_clock_sleep_ms(1);
        }
    }
    sy_sock_close(l);
    if (rc != 0 || s < 0 || sy_sock_own(c) != 0) {
        if (c >= 0)
            sy_sock_close(c);
        if (s >= 0)
            sy_sock_close(s);
        return -1;
    }
    *a = s;
    *b = c;
    return 0;
}

/* Waits up to timeout_ms for tag; the union of what was reported for it
 * (0: nothing). Other tags' events are ignored. */
static uint32_t wait_tag(sy_poll_t *p, uint64_t tag, int timeout_ms) {
    sy_poll_event_t ev[MAXEV];
    int64_t end = sy_clock_ms() + timeout_ms;
    uint32_t got = 0;
    for (;;) {
        int64_t left = end - sy_clock_ms();
        int n = 0;
        if (sy_poll_wait(p, ev, MAXEV, left > 0 ? (int)left : 0, &n) != 0)
            return 0;
        for (int i = 0; i < n; i++)
            if (ev[i].tag == tag)
                got |= ev[i].events;
        if (got != 0 || left <= 0)
            return got;
    }
}

/* Every tag reported by one wait of timeout_ms, as a bit set of tags 0..63. */
static uint64_t tags_once(sy_poll_t *p, int max, int timeout_ms, int *count) {
    sy_poll_event_t ev[MAXEV];
    int n = 0;
    uint64_t set = 0;
    if (sy_poll_wait(p, ev, max, timeout_ms, &n) != 0)
        n = 0;
    for (int i = 0; i < n; i++)
        if (ev[i].tag < 64)
            set |= 1ull << ev[i].tag;
    if (count != NULL)
        *count = n;
    return set;
}

static size_t drain(int fd) {
    char buf[65536];
    size_t total = 0;
    long r;
    while ((r = rd(fd, buf, sizeof(buf))) > 0)
        total += (size_t)r;
    return total;
}

/* A readable socket stays reported until all of it is read. */
static void test_level_triggered(void) {
    sy_poll_t *p = sy_poll_create();
    int a, b;
    CHECK(p != NULL);
    CHECK_EQ(tcp_pair(&a, &b), 0);
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN, 7), 0);
    CHECK_EQU(wait_tag(p, 7, 0), 0); /* nothing to read yet */
    CHECK_EQ(wr(b, "0123456789", 10), 10);
    CHECK_EQU(wait_tag(p, 7, 1000), SY_POLL_IN);
    CHECK_EQU(wait_tag(p, 7, 0), SY_POLL_IN); /* not read: reported again */
    char buf[5];
    CHECK_EQ(rd(a, buf, 5), 5);
    CHECK_EQU(wait_tag(p, 7, 0), SY_POLL_IN); /* half read: still */
    CHECK_EQ(rd(a, buf, 5), 5);
    CHECK_EQU(wait_tag(p, 7, 50), 0); /* all read: quiet */
    CHECK_EQ(sy_poll_del(p, a), 0);
    sy_sock_close(a);
    sy_sock_close(b);
    sy_poll_destroy(p);
}

/* mod changes what is reported, and the tag it comes with. */
static void test_interest(void) {
    sy_poll_t *p = sy_poll_create();
    int a, b;
    CHECK_EQ(tcp_pair(&a, &b), 0);
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN, 1), 0);
    CHECK_EQ(wr(b, "x", 1), 1);
    CHECK_EQU(wait_tag(p, 1, 1000), SY_POLL_IN); /* readable, and writable unasked */
    CHECK_EQ(sy_poll_mod(p, a, 0, 1), 0);
    CHECK_EQU(wait_tag(p, 1, 50), 0); /* no interest: nothing, data or not */
    CHECK_EQ(sy_poll_mod(p, a, SY_POLL_OUT, 2), 0);
    CHECK_EQU(wait_tag(p, 2, 1000), SY_POLL_OUT); /* writable only */
    CHECK_EQ(sy_poll_mod(p, a, SY_POLL_IN | SY_POLL_OUT, 3), 0);
    int n = 0;
    uint64_t set = tags_once(p, MAXEV, 1000, &n);
    CHECK_EQU(set, 1ull << 3); /* the new tag only */
    CHECK(n == 1 || n == 2);   /* one event, or (kqueue) one per filter */
    CHECK_EQU(wait_tag(p, 3, 0), SY_POLL_IN | SY_POLL_OUT);
    CHECK_EQ(sy_poll_mod(p, a, SY_POLL_IN, 4), 0);
    CHECK_EQU(wait_tag(p, 4, 1000), SY_POLL_IN); /* writability no longer asked */
    CHECK_EQ(sy_poll_del(p, a), 0);
    CHECK_EQU(wait_tag(p, 4, 50), 0); /* gone */
    int rc = sy_poll_del(p, a);
    CHECK(rc == 0 || rc == ENOENT);                /* not registered: either, by backend */
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN, 5), 0); /* and back */
    CHECK_EQU(wait_tag(p, 5, 1000), SY_POLL_IN);
    CHECK_EQ(sy_poll_del(p, a), 0);
    sy_sock_close(a);
    sy_sock_close(b);
    /* A descriptor that is not open. */
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN, 6), EBADF);
    sy_poll_destroy(p);
}

/* A full send buffer is not writable; once the peer reads, it is. */
static void test_full_send_buffer(void) {
    sy_poll_t *p = sy_poll_create();
    int a, b;
    CHECK_EQ(tcp_pair(&a, &b), 0);
    static char chunk[65536];
    memset(chunk, 'z', sizeof(chunk));
    size_t sent = 0;
    for (;;) {
        long w = wr(a, chunk, sizeof(chunk));
        if (w < 0) {
            CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        sent += (size_t)w;
        CHECK(sent < (size_t)1 << 30);
        if (sent >= (size_t)1 << 30)
            break;
    }
    CHECK(sent > 0);
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN | SY_POLL_OUT, 9), 0);
    CHECK_EQU(wait_tag(p, 9, 50), 0); /* full, nothing to read */
    size_t got = 0;
    int64_t end = sy_clock_ms() + 5000;
    uint32_t ev = 0;
    while (ev == 0 && sy_clock_ms() < end) {
        got += drain(b);
        ev = wait_tag(p, 9, 10);
    }
    CHECK_EQU(ev, SY_POLL_OUT);
    CHECK(got > 0);
    CHECK_EQ(sy_poll_del(p, a), 0);
    sy_sock_close(a);
    sy_sock_close(b);
    sy_poll_destroy(p);
}

/* A peer's close and a peer's reset are reported as readable; a read tells
 * which (0, or an error). */
static void test_hang_up(void) {
    sy_poll_t *p = sy_poll_create();
    int a, b;
    CHECK_EQ(tcp_pair(&a, &b), 0);
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN, 11), 0);
    sy_sock_close(b);
    CHECK((wait_tag(p, 11, 1000) & SY_POLL_IN) != 0);
    char c;
    CHECK_EQ(rd(a, &c, 1), 0);
    CHECK((wait_tag(p, 11, 0) & SY_POLL_IN) != 0); /* still: the end stays readable */
    CHECK_EQ(sy_poll_del(p, a), 0);
    sy_sock_close(a);

    CHECK_EQ(tcp_pair(&a, &b), 0);
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN, 12), 0);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    CHECK_EQ(setsockopt(b, SOL_SOCKET, SO_LINGER, (const void *)&lg, sizeof(lg)), 0);
    sy_sock_close(b); /* a reset */
    CHECK((wait_tag(p, 12, 1000) & SY_POLL_IN) != 0);
    long r = rd(a, &c, 1);
    CHECK(r == 0 || (r < 0 && errno == ECONNRESET));
    CHECK_EQ(sy_poll_del(p, a), 0);
    sy_sock_close(a);
    sy_poll_destroy(p);
}

/* A wait with nothing ready lasts its timeout; 0 returns at once. */
static void test_timeouts(void) {
    sy_poll_t *p = sy_poll_create();
    sy_poll_event_t ev[4];
    int n = -1;
    int64_t t0 = sy_clock_ms();
    CHECK_EQ(sy_poll_wait(p, ev, 4, 0, &n), 0);
    CHECK_EQ(n, 0);
    CHECK(sy_clock_ms() - t0 < 50);
    t0 = sy_clock_ms();
    CHECK_EQ(sy_poll_wait(p, ev, 4, 120, &n), 0);
    int64_t took = sy_clock_ms() - t0;
    CHECK_EQ(n, 0);
    CHECK(took >= 100); /* clocks differ by a tick at most */
    CHECK(took < 2000);
    t0 = sy_clock_ms();
    CHECK_EQ(sy_poll_wait(p, ev, 4, 1500, &n), 0); /* seconds and the rest */
    took = sy_clock_ms() - t0;
    CHECK(took >= 1450 && took < 4000);
    sy_poll_destroy(p);
}

struct waker {
    sy_wake_t *w;
    int delay_ms;
    int times;
};

static void *wake_later(void *arg) {
    struct waker *k = arg;
    sy_clock_sleep_ms((uint32_t)k->delay_ms);
    for (int i = 0; i < k->times; i++)
        sy_wake_signal(k->w);
    return NULL;
}

/* Another thread's signal ends a wait that would last forever; a drain
 * takes every pending one, even past what a pipe holds. */
static void test_wake(void) {
    sy_poll_t *p = sy_poll_create();
    sy_wake_t w;
    CHECK_EQ(sy_wake_open(&w), 0);
    CHECK_EQ(sy_poll_add(p, sy_wake_fd(&w), SY_POLL_IN, 21), 0);
    CHECK_EQU(wait_tag(p, 21, 0), 0);
    struct waker k = {&w, 100, 1};
    sy_thread_t th;
    CHECK_EQ(sy_thread_create(&th, wake_later, &k), 0);
    sy_poll_event_t ev[4];
    int n = 0;
    int64_t t0 = sy_clock_ms();
    CHECK_EQ(sy_poll_wait(p, ev, 4, -1, &n), 0);
    int64_t took = sy_clock_ms() - t0;
    CHECK_EQ(sy_thread_join(&th), 0);
    CHECK_EQ(n, 1);
    CHECK_EQU(ev[0].tag, 21);
    CHECK_EQU(ev[0].events, SY_POLL_IN);
    CHECK(took >= 50 && took < 5000);
    CHECK_EQU(wait_tag(p, 21, 0), SY_POLL_IN); /* until drained */
    sy_wake_drain(&w);
    CHECK_EQU(wait_tag(p, 21, 0), 0);
    /* 100,000 signals (a pipe holds 64 KiB of them): one drain takes all. */
    k = (struct waker){&w, 0, 100000};
    CHECK_EQ(sy_thread_create(&th, wake_later, &k), 0);
    CHECK_EQ(sy_thread_join(&th), 0);
    CHECK_EQU(wait_tag(p, 21, 1000), SY_POLL_IN);
    sy_wake_drain(&w);
    CHECK_EQU(wait_tag(p, 21, 0), 0);
    sy_wake_signal(&w); /* and still works after a full one */
    CHECK_EQU(wait_tag(p, 21, 1000), SY_POLL_IN);
    sy_wake_drain(&w);
    sy_poll_destroy(p); /* the poller first (the rule for closing) */
    sy_wake_close(&w);
    sy_wake_close(&w); /* closed twice: harmless */
}

/* More ready than max: at most max come back (nothing written past them),
 * and the rest come with the next waits as the first are handled. */
static void test_more_ready_than_asked(void) {
    enum { N = 10, MAX = 3 };
    sy_poll_t *p = sy_poll_create();
    int a[N], b[N];
    for (int i = 0; i < N; i++) {
        CHECK_EQ(tcp_pair(&a[i], &b[i]), 0);
        CHECK_EQ(sy_poll_add(p, a[i], SY_POLL_IN, (uint64_t)i), 0);
        CHECK_EQ(wr(b[i], "r", 1), 1);
    }
    /* Let every byte arrive. */
    sy_clock_sleep_ms(50);
    uint64_t seen = 0;
    for (int round = 0; round < 20 && seen != (1ull << N) - 1; round++) {
        sy_poll_event_t ev[MAX + 1];
        ev[MAX].tag = 0xdeadbeef;
        int n = 0;
        CHECK_EQ(sy_poll_wait(p, ev, MAX, 1000, &n), 0);
        CHECK(n >= 1 && n <= MAX);
        CHECK_EQU(ev[MAX].tag, 0xdeadbeef);
        for (int i = 0; i < n; i++) {
            CHECK(ev[i].tag < N);
            if (ev[i].tag >= N)
                continue;
            seen |= 1ull << ev[i].tag;
            char c;
            (void)rd(a[ev[i].tag], &c, 1); /* handled: quiet from now on */
        }
    }
    CHECK_EQU(seen, (1ull << N) - 1);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(sy_poll_del(p, a[i]), 0);
        sy_sock_close(a[i]);
        sy_sock_close(b[i]);
    }
    sy_poll_destroy(p);
}

/* A listener is readable while a connection waits to be accepted. */
static void test_listener(void) {
    sy_poll_t *p = sy_poll_create();
    uint16_t port = 0;
    int l = listener(&port);
    CHECK(l >= 0);
    CHECK_EQ(sy_poll_add(p, l, SY_POLL_IN, 31), 0);
    CHECK_EQU(wait_tag(p, 31, 0), 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_EQ(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_EQU(wait_tag(p, 31, 1000), SY_POLL_IN);
    int s = -1;
    CHECK_EQ(sy_sock_accept(l, true, &s), 0);
    CHECK_EQU(wait_tag(p, 31, 50), 0);
    int again = -1;
    int rc = sy_sock_accept(l, true, &again);
    CHECK(rc == EAGAIN || rc == EWOULDBLOCK);
    CHECK_EQ(again, -1);
    CHECK_EQ(sy_poll_del(p, l), 0);
    sy_sock_close(s);
    sy_sock_close(c);
    sy_sock_close(l);
    sy_poll_destroy(p);
}

/* The rule for closing: del, then close; a socket that gets the same
 * number is registered anew and reported only under its own tag. */
static void test_fd_reuse(void) {
    sy_poll_t *p = sy_poll_create();
    int a, b;
    CHECK_EQ(tcp_pair(&a, &b), 0);
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN | SY_POLL_OUT, 41), 0);
    CHECK_EQ(wr(b, "old", 3), 3);
    CHECK((wait_tag(p, 41, 1000) & SY_POLL_IN) != 0); /* ready, not handled */
    int old = a;
    CHECK_EQ(sy_poll_del(p, a), 0);
    sy_sock_close(a);
    sy_sock_close(b);
    /* The lowest free number: the one just closed, in a single-threaded test. */
    int a2, b2;
    CHECK_EQ(tcp_pair(&a2, &b2), 0);
    int reused = a2 == old || b2 == old;
    CHECK(reused);
    int fd = a2 == old ? a2 : b2, peer = a2 == old ? b2 : a2;
    CHECK_EQ(sy_poll_add(p, fd, SY_POLL_IN, 42), 0); /* not "already there" */
    CHECK_EQ(wr(peer, "new", 3), 3);
    int n = 0;
    uint64_t set = 0;
    for (int i = 0; i < 5 && (set & (1ull << 42)) == 0; i++)
        set |= tags_once(p, MAXEV, 200, &n);
    CHECK_EQU(set, 1ull << 42); /* never the old tag */
    CHECK_EQ(sy_poll_del(p, fd), 0);
    sy_sock_close(a2);
    sy_sock_close(b2);
    sy_poll_destroy(p);
}

/* The case the rule is for: a descriptor closed while another descriptor
 * of the same socket stays open (an adopted socket: the owner keeps its
 * own; a fork; a dup). Deleted first, it is never reported again; epoll,
 * closed without the delete, would go on reporting it under its old tag. */
static void test_close_with_a_dup(void) {
    sy_poll_t *p = sy_poll_create();
    int a, b;
    CHECK_EQ(tcp_pair(&a, &b), 0);
    int keep = dup_sock(a);
    CHECK(keep >= 0);
    CHECK_EQ(sy_poll_add(p, a, SY_POLL_IN, 51), 0);
    CHECK_EQ(sy_poll_del(p, a), 0);
    sy_sock_close(a);
    CHECK_EQ(wr(b, "late", 4), 4);
    CHECK_EQU(wait_tag(p, 51, 100), 0);
    sy_sock_close(keep);
    sy_sock_close(b);
    sy_poll_destroy(p);
}

int main(void) {
    CHECK_EQ(sy_sock_startup(), 0);
    test_level_triggered();
    test_interest();
    test_full_send_buffer();
    test_hang_up();
    test_timeouts();
    test_wake();
    test_more_ready_than_asked();
    test_listener();
    test_fd_reuse();
    test_close_with_a_dup();
    return check_report("poll");
}
