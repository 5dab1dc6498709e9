/*
 * harness.h — what the C tests of the server core share: batches parked by
 * the IO threads for the test's main thread (the owner), the events seen,
 * and a raw loopback client. Static functions: include it from one test
 * file per program.
 */
#ifndef SY_TEST_HARNESS_H
#define SY_TEST_HARNESS_H

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/model/sy_events.h"
#include "sy_server.h"

#define MAX_BATCHES 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sy_batch_t *batches[MAX_BATCHES];
static size_t nbatches;

/* IO threads: park the batch for the main thread (the owner). */
static inline void on_batch(void *ctx, sy_batch_t *b) {
    (void)ctx;
    pthread_mutex_lock(&lock);
    if (nbatches < MAX_BATCHES)
        batches[nbatches++] = b;
    else
        sy_batch_free(b);
    pthread_mutex_unlock(&lock);
}

typedef struct {
    uint8_t type;
    uint8_t flags;
    uint16_t code;
    uint64_t conn;
    char payload[256];
    size_t len;
} seen_t;

#define MAX_SEEN 1024
static seen_t seen[MAX_SEEN];
static size_t nseen;

static inline void drain(sy_server_t *s) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nbatches; i++) {
        size_t pos = 0;
        sy_event_t ev;
        const uint8_t *p;
        while (sy_batch_next(batches[i], &pos, &ev, &p)) {
            if (nseen < MAX_SEEN) {
                seen_t *x = &seen[nseen++];
                x->type = ev.type;
                x->flags = ev.flags;
                x->code = ev.code;
                x->conn = ev.conn;
                x->len = ev.len < sizeof(x->payload) ? ev.len : sizeof(x->payload);
                memcpy(x->payload, p, x->len);
            }
        }
        sy_server_batch_done(s, batches[i]);
    }
    nbatches = 0;
    pthread_mutex_unlock(&lock);
}

static inline const seen_t *wait_event(sy_server_t *s, uint8_t type, size_t from) {
    for (int i = 0; i < 500; i++) {
        drain(s);
        for (size_t k = from; k < nseen; k++)
            if (seen[k].type == type)
                return &seen[k];
        usleep(10000);
    }
    return NULL;
}

static inline int connect_to(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return -1;
    return fd;
}

/* Reads until n bytes or EOF/timeout; returns bytes read. */
static inline size_t read_some(int fd, uint8_t *buf, size_t cap, size_t want) {
    size_t got = 0;
    while (got < want && got < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 3000) <= 0)
            break;
        ssize_t r = read(fd, buf + got, cap - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* Every epoll descriptor of this process, up to max (found through
 * /proc/self/fd, for faults injected from outside the IO threads). */
static inline int epoll_fds(int *out, int max) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL && n < max) {
        char path[300], target[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        if (len > 0) {
            target[len] = 0;
            if (strcmp(target, "anon_inode:[eventpoll]") == 0)
                out[n++] = atoi(e->d_name);
        }
    }
    if (d != NULL)
        closedir(d);
    return n;
}

#endif
