/* sy_server_start and sy_server_adopt (noServer + handleUpgrade): a server
 * with no listener of its own takes over sockets another server accepted
 * and read the upgrade request from. The request and a frame sent with it
 * are handled as if read from the socket; the caller closes its own
 * descriptor at once; the connection lives on the duplicate; descriptors
 * are back to where they were after shutdown (nothing leaked or closed
 * twice, which valgrind and the sanitizers also watch). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "sy_server.h"

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* The "other server": a listening socket of the test's own. */
static int listen_any(uint16_t *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 16) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &l) == 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static const char REQ[] = "GET /shared HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
/* A masked text frame "hi" (key 0). */
static const uint8_t FRAME[] = {0x81, 0x82, 0, 0, 0, 0, 'h', 'i'};

int main(void) {
    int fds_start = count_fds();
    sy_server_opts_t o = {
        .host = "127.0.0.1", .threads = 2, .max_payload = 1 << 16, .max_backpressure = 1 << 20,
        .handshake_timeout_s = 5, .close_timeout_s = 2, .max_head_bytes = 8192, .max_headers = 64, .backlog = 16,
    };
    char err[SY_ERRLEN];
    sy_server_t *s = sy_server_create(&o, on_batch, NULL, err, sizeof(err));
    CHECK(s != NULL);
    CHECK_EQ(sy_server_adopt(s, 0, REQ, sizeof(REQ) - 1), ENOTCONN); /* not started */
    CHECK_EQ(sy_server_start(s, err, sizeof(err)), 0);
    CHECK_EQ(sy_server_start(s, err, sizeof(err)), EALREADY);

    /* Not sockets: refused, nothing taken. */
    int pipefd[2];
    CHECK_EQ(pipe(pipefd), 0);
    CHECK_EQ(sy_server_adopt(s, pipefd[0], REQ, sizeof(REQ) - 1), ENOTSOCK);
    close(pipefd[0]);
    close(pipefd[1]);
    CHECK_EQ(sy_server_adopt(s, 1000, REQ, sizeof(REQ) - 1), EBADF);

    uint16_t port;
    int lfd = listen_any(&port);
    for (int round = 0; round < 4; round++) {
        int cfd = connect_to(port);
        int afd = accept(lfd, NULL, NULL);
        CHECK(cfd >= 0 && afd >= 0);
        /* The other server read the request and the frame after it. */
        CHECK_EQ(write(cfd, REQ, sizeof(REQ) - 1), (long long)sizeof(REQ) - 1);
        CHECK_EQ(write(cfd, FRAME, sizeof(FRAME)), (long long)sizeof(FRAME));
        uint8_t got[512];
        size_t have = read_some(afd, got, sizeof(got), sizeof(REQ) - 1 + sizeof(FRAME));
        CHECK_EQU(have, sizeof(REQ) - 1 + sizeof(FRAME));
        size_t mark = nseen;
        CHECK_EQ(sy_server_adopt(s, afd, got, have), 0);
        close(afd); /* the caller lets go of its own descriptor at once */
        uint8_t buf[512];
        size_t n = read_some(cfd, buf, sizeof(buf) - 1, 129);
        buf[n] = 0;
        CHECK(strstr((char *)buf, "HTTP/1.1 101") == (char *)buf);
        const seen_t *op = wait_event(s, SY_EV_OPEN, mark);
        const seen_t *msg = wait_event(s, SY_EV_MESSAGE, mark);
        CHECK(op != NULL && msg != NULL && msg->len == 2 && memcmp(msg->payload, "hi", 2) == 0);
        uint64_t id = op ? op->conn : 0;
        CHECK_EQ(sy_server_subscribe(s, id, "t", 1), 0);
        size_t subs = 0;
        CHECK_EQ(sy_server_publish(s, "t", 1, "yo", 2, 0, &subs), 0);
        n = read_some(cfd, buf, sizeof(buf), 4);
        CHECK(n == 4 && buf[0] == 0x81 && memcmp(buf + 2, "yo", 2) == 0);
        if (round % 2 == 0) {
            /* A bad upgrade through the same path: the listener's answer. */
            int c2 = connect_to(port), a2 = accept(lfd, NULL, NULL);
            static const char BAD[] = "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                      "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
            CHECK_EQ(sy_server_adopt(s, a2, BAD, sizeof(BAD) - 1), 0);
            close(a2);
            n = read_some(c2, buf, sizeof(buf) - 1, 12);
            buf[n] = 0;
            CHECK(strstr((char *)buf, "HTTP/1.1 426") == (char *)buf);
            close(c2);
        }
        close(cfd);
        CHECK(wait_event(s, SY_EV_CLOSE, mark) != NULL);
    }
    close(lfd);
    sy_server_shutdown(s, 0);
    for (int i = 0; i < 100; i++) {
        drain(s);
        usleep(10000);
    }
    sy_server_join(s);
    drain(s);
    sy_server_destroy(s);
    CHECK_EQ(count_fds(), fds_start);
    return check_report("adopt");
}
