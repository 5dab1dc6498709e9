/* Fuzz target: the whole server path for one connection. A real sy_server
 * (2 IO threads) listens on loopback; each input is sent over a fresh TCP
 * connection, either as the raw request (first byte's low bits 00; with
 * bit 2, after a request the server answers keeping the connection open,
 * an event stream's preflight, so that the input is a kept connection's
 * next request, or several pipelined), as
 * frames after a valid upgrade request (low bit 1), or (low bits 10) as
 * the body of a POST to an event stream's real name (bit 2: a stream that
 * has closed, 410; else an open one, 202; bit 3: bytes, else text), sent
 * in segments of 1 to 16 bytes (bits 4-7): the body over many reads;
 * then the client shuts down its side and the server must close the
 * connection (within 30 s, allowing for sanitizer pauses; it normally
 * takes well under a ms).
 * Finds: memory errors anywhere on the connection path (ASan/UBSan), and a
 * connection the server never closes (trap). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sy_server.h"

static sy_server_t *server;
static uint16_t port;
/* The names of an open event stream and of one that has closed (sy.open). */
static char names[2][128];
static int stream_fd = -1;

static void on_batch(void *ctx, sy_batch_t *b) {
    (void)ctx;
    sy_server_batch_done(server, b);
}

static int connect_server(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Opens an event stream (no upgrade handler: opened at once) and reads its
 * name from sy.open into name (NUL-terminated): its socket, or -1. */
static int open_stream(char name[128]) {
    static const char get[] = "GET / HTTP/1.1\r\nHost: f\r\nAccept: text/event-stream\r\n\r\n";
    int fd = connect_server();
    if (fd < 0 || send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(get) - 1))
        return -1;
    char buf[4096];
    size_t len = 0;
    const char *at = NULL;
    while ((at = memmem(buf, len, "\"stream\":\"", 10)) == NULL ||
           memchr(at + 10, '"', len - (size_t)(at + 10 - buf)) == NULL) {
        ssize_t n = len < sizeof(buf) - 1 ? recv(fd, buf + len, sizeof(buf) - 1 - len, 0) : 0;
        if (n <= 0)
            return -1;
        len += (size_t)n;
    }
    const char *end = memchr(at + 10, '"', len - (size_t)(at + 10 - buf));
    size_t n = (size_t)(end - (at + 10));
    if (n >= 128)
        return -1;
    memcpy(name, at + 10, n);
    name[n] = 0;
    return fd;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    sy_server_opts_t o = {
        .host = "127.0.0.1",
        .threads = 2,
        .max_payload = 4096,
        .max_backpressure = 1 << 16,
        .handshake_timeout_s = 2,
        .close_timeout_s = 1,
        .max_head_bytes = 2048,
        .max_headers = 32,
        .backlog = 128,
        .compression = true,
        .compress_level = 6,
        .compress_threshold = 16,
    };
    char err[SY_ERRLEN];
    server = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    if (server == NULL || sy_server_listen(server, &port, err, sizeof(err)) != 0)
        __builtin_trap();
    for (int i = 0; i < 2; i++) {
        int fd = open_stream(names[i]);
        if (fd < 0)
            __builtin_trap();
        if (i == 0)
            stream_fd = fd; /* open for the run */
        else
            close(fd); /* names[1] names a stream that has closed */
    }
    return 0;
}

/* With permessage-deflate offered (and the server accepting it), so that
 * compressed frames (RSV1) and their inflation are on the fuzzed path. */
static const char UPGRADE[] = "GET / HTTP/1.1\r\nHost: f\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                              "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n";

/* Answered 204 with the connection kept open (HTTP/1.1 keep-alive). */
static const char PREFLIGHT[] = "OPTIONS /?sy.stream=x HTTP/1.1\r\nHost: f\r\n\r\n";

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void send_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the server may close first: that is an answer */
        p += w;
        n -= (size_t)w;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    int fd = connect_server();
    if (fd < 0)
        return 0; /* out of local ports, say: not the server's fault */
    if ((data[0] & 3) == 2) {
        /* A POST to a stream's real name: the input is its body (text, or
         * bytes with bit 3), in small segments. */
        char head[256];
        int hn = snprintf(
            head, sizeof(head), "POST /?sy.stream=%s HTTP/1.1\r\nHost: f\r\n%sContent-Length: %zu\r\n\r\n",
            names[(data[0] >> 2) & 1], data[0] & 8 ? "Content-Type: application/octet-stream\r\n" : "", size - 1);
        send_all(fd, (const uint8_t *)head, (size_t)hn);
        size_t seg = 1 + (data[0] >> 4);
        for (size_t at = 1; at < size; at += seg)
            send_all(fd, data + at, at + seg <= size ? seg : size - at);
    } else {
        if (data[0] & 1)
            send_all(fd, (const uint8_t *)UPGRADE, sizeof(UPGRADE) - 1);
        else if (data[0] & 4)
            send_all(fd, (const uint8_t *)PREFLIGHT, sizeof(PREFLIGHT) - 1);
        send_all(fd, data + 1, size - 1);
    }
    shutdown(fd, SHUT_WR);
    /* Read until the server closes: it must, since we sent EOF. */
    uint8_t buf[4096];
    size_t total = 0;
    /* Generous: LeakSanitizer stops every thread to scan the heap after
     * some inputs, which can take seconds on a loaded machine. (Below the
     * Makefile's -timeout for this target, so that this report comes first.) */
    const int64_t deadline = now_ms() + 30000;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        /* libFuzzer's SIGALRM (every -timeout/2+1 s, to this thread)
         * interrupts poll: not an answer, wait on. */
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            for (unsigned t = 0; t < 2; t++) {
                sy_stats_t st;
                sy_server_thread_stats(server, t, &st);
                fprintf(stderr, "thread %u: open %llu opened %llu closed %llu rejects %llu errors %llu\n", t,
                        (unsigned long long)st.connections, (unsigned long long)st.opened,
                        (unsigned long long)st.closed, (unsigned long long)st.handshake_rejects,
                        (unsigned long long)st.protocol_errors);
            }
            fprintf(stderr, "received %zu bytes: %.*s\n", total, (int)(total < 200 ? total : 200), buf);
            if (getenv("FUZZ_HANG_WAIT") != NULL) {
                fprintf(stderr, "hang: pid %d, waiting for a debugger\n", (int)getpid());
                /* Neither libFuzzer's SIGALRM (it would end the wait, or
                 * the process at -timeout) nor a signal cuts it short. */
                sigset_t alrm;
                sigemptyset(&alrm);
                sigaddset(&alrm, SIGALRM);
                pthread_sigmask(SIG_BLOCK, &alrm, NULL);
                for (int64_t end = now_ms() + 600000; now_ms() < end;)
                    sleep(1);
            }
            __builtin_trap(); /* the server kept a finished connection open */
        }
        ssize_t n = recv(fd, buf + (total < 2048 ? total : 0), 2048, 0);
        if (n <= 0)
            break;
        total += (size_t)n;
    }
    if (getenv("FUZZ_VERBOSE") != NULL) { /* what the server answered: its first line */
        size_t shown = total < 2048 ? total : 2048;
        const uint8_t *cr = memchr(buf, '\r', shown);
        fprintf(stderr, "answer: %.*s\n", (int)(cr != NULL ? (size_t)(cr - buf) : shown), buf);
    }
    /* Close with a reset: no TIME_WAIT on the client side, so a long run
     * does not use up the loopback's ephemeral ports. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
    return 0;
}
