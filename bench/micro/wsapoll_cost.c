/* What one WSAPoll costs with n idle sockets (nothing ready, timeout 0): the
 * figure behind the Windows poller's choice (docs/builds.md, "Windows").
 * A Windows program; bench/windows.js builds it with mingw-w64 and runs it
 * under Wine for n = 100, 1,000 and 4,000 (n loopback pairs: 2n sockets in
 * the process).
 *
 *   wsapoll_cost.exe N     prints {"sockets":N,"ms_per_wait":M}
 */
#include <winsock2.h> /* before windows.h, which would bring Winsock 1 */

#include <stdio.h>
#include <stdlib.h>
#include <windows.h>
#include <ws2tcpip.h>
static int fail(const char *what) {
    fprintf(stderr, "wsapoll_cost: %s failed: %d\n", what, WSAGetLastError());
    return 1;
}

int main(int argc, char **argv) {
    WSADATA d;
    int n = argc == 2 ? atoi(argv[1]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: wsapoll_cost.exe N\n");
        return 2;
    }
    if (WSAStartup(MAKEWORD(2, 2), &d) != 0)
        return fail("WSAStartup");
    SOCKET l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int len = sizeof(a);
    if (l == INVALID_SOCKET || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 4096) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        return fail("listen");
    WSAPOLLFD *p = calloc((size_t)n, sizeof(*p));
    if (p == NULL)
        return fail("calloc");
    for (int i = 0; i < n; i++) {
        SOCKET c = socket(AF_INET, SOCK_STREAM, 0);
        if (c == INVALID_SOCKET || connect(c, (struct sockaddr *)&a, sizeof(a)) != 0)
            return fail("connect");
        p[i].fd = accept(l, NULL, NULL);
        if (p[i].fd == INVALID_SOCKET)
            return fail("accept");
        p[i].events = POLLRDNORM;
    }
    LARGE_INTEGER f, t0, t1;
    QueryPerformanceFrequency(&f);
    enum { REPS = 20 };
    QueryPerformanceCounter(&t0);
    for (int r = 0; r < REPS; r++)
        if (WSAPoll(p, (ULONG)n, 0) < 0)
            return fail("WSAPoll");
    QueryPerformanceCounter(&t1);
    printf("{\"sockets\":%d,\"ms_per_wait\":%.3f}\n", n,
           (double)(t1.QuadPart - t0.QuadPart) * 1000.0 / (double)f.QuadPart / REPS);
    return 0; /* the sockets close with the process */
}
