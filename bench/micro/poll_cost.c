/* What symphony's Windows poller costs with n idle sockets registered: one
 * wait with nothing ready (timeout 0), and one socket made ready, reported
 * and read while the other n - 1 stay idle. Built against the poller of the
 * build (src/net/sy_poll_afd.c) by bench/windows.js with mingw-w64 and run
 * under Wine for n = 100, 1,000 and 4,000 (n loopback pairs: 2n sockets in
 * the process); wsapoll_cost.c measures WSAPoll itself the same way.
 *
 *   poll_cost.exe N     prints {"sockets":N,"ms_per_idle_wait":M,"ms_per_ready":R}
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/sy_clock.h"
#include "net/sy_poll.h"
#include "net/sy_sock.h"

static int fail(const char *what, int err) {
    fprintf(stderr, "poll_cost: %s failed: %d\n", what, err);
    return 1;
}

static double ms_since(LARGE_INTEGER t0) {
    LARGE_INTEGER f, t1;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t1);
    return (double)(t1.QuadPart - t0.QuadPart) * 1000.0 / (double)f.QuadPart;
}

int main(int argc, char **argv) {
    int n = argc == 2 ? atoi(argv[1]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: poll_cost.exe N\n");
        return 2;
    }
    if (sy_sock_startup() != 0)
        return fail("WSAStartup", 0);
    SOCKET l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int len = sizeof(a);
    if (l == INVALID_SOCKET || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 4096) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        return fail("listen", sy_sock_error());
    sy_poll_t *p = sy_poll_create();
    int *peer = calloc((size_t)n, sizeof(*peer));
    int *fd = calloc((size_t)n, sizeof(*fd));
    if (p == NULL || peer == NULL || fd == NULL)
        return fail("setup", 0);
    for (int i = 0; i < n; i++) {
        SOCKET c = socket(AF_INET, SOCK_STREAM, 0);
        if (c == INVALID_SOCKET || connect(c, (struct sockaddr *)&a, sizeof(a)) != 0)
            return fail("connect", sy_sock_error());
        peer[i] = (int)c;
        SOCKET s = accept(l, NULL, NULL);
        if (s == INVALID_SOCKET)
            return fail("accept", sy_sock_error());
        fd[i] = (int)s;
        u_long on = 1;
        ioctlsocket(s, FIONBIO, &on);
        int rc = sy_poll_add(p, fd[i], SY_POLL_IN, (uint64_t)i);
        if (rc != 0)
            return fail("sy_poll_add", rc);
    }
    sy_poll_event_t ev[64];
    int got = 0;
    if (sy_poll_wait(p, ev, 64, 0, &got) != 0) /* the first wait makes the requests */
        return fail("sy_poll_wait", 0);
    enum { REPS = 20 };
    LARGE_INTEGER t0;
    QueryPerformanceCounter(&t0);
    for (int r = 0; r < REPS; r++)
        if (sy_poll_wait(p, ev, 64, 0, &got) != 0 || got != 0)
            return fail("idle wait", got);
    double idle = ms_since(t0) / REPS;
    QueryPerformanceCounter(&t0);
    for (int r = 0; r < REPS; r++) {
        int i = (r * 7919) % n;
        char c = 'r';
        if (send((SOCKET)peer[i], &c, 1, 0) != 1)
            return fail("send", sy_sock_error());
        int seen = 0;
        for (int tries = 0; tries < 1000 && !seen; tries++) {
            if (sy_poll_wait(p, ev, 64, 1000, &got) != 0)
                return fail("ready wait", 0);
            for (int k = 0; k < got; k++)
                seen |= ev[k].tag == (uint64_t)i;
        }
        if (!seen || recv((SOCKET)fd[i], &c, 1, 0) != 1)
            return fail("ready", i);
    }
    double ready = ms_since(t0) / REPS;
    printf("{\"sockets\":%d,\"ms_per_idle_wait\":%.3f,\"ms_per_ready\":%.3f}\n", n, idle, ready);
    return 0; /* the sockets close with the process */
}
