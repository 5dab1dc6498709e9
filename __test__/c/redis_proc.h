/*
 * redis_proc.h — real redis-server processes for the bus' C tests
 * (test_bus.c, test_bus_cluster.c, test_bus_sentinel.c): free loopback
 * ports, a server (or a sentinel) started with persistence off and
 * stopped by its PID, a synchronous hiredis connection to it; and a bus
 * started as a node of a test (its topics' edge hook pointed at it),
 * waited for, stopped. Static functions: include it from one test file
 * per program.
 */
#ifndef SY_TEST_REDIS_PROC_H
#define SY_TEST_REDIS_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bus/sy_bus.h"
#include "io/model/sy_topic.h"

#define REDIS_PROC_MAX_ARGS 24

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A free loopback port below max (a cluster node also takes port + 10000),
 * or -1. */
static int free_port_below(int max) {
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        int port = -1;
        if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &len) == 0)
            port = ntohs(a.sin_port);
        if (fd >= 0)
            close(fd);
        if (port > 0 && port < max)
            return port;
    }
    return -1;
}

/* A connection to 127.0.0.1:port, authenticated when pass is set; NULL
 * when it cannot connect. */
static redisContext *redis_connect(int port, const char *pass) {
    struct timeval tv = {.tv_sec = 2};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == NULL || c->err) {
        if (c != NULL)
            redisFree(c);
        return NULL;
    }
    if (pass != NULL) {
        redisReply *rep = redisCommand(c, "AUTH %s", pass);
        if (rep != NULL)
            freeReplyObject(rep);
    }
    return c;
}

/* Runs the NULL-terminated argv (redis-server and its arguments, a
 * sentinel's too), its output to /dev/null, and waits (up to 5 s) for port
 * to answer PING. The child's pid, or -1 (then nothing is left running). */
static pid_t redis_exec(int port, const char *pass, const char *const *argv) {
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        redisContext *c = redis_connect(port, pass);
        if (c != NULL) {
            redisReply *rep = redisCommand(c, "PING");
            bool ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
            if (rep != NULL)
                freeReplyObject(rep);
            redisFree(c);
            if (ok)
                return pid;
        }
        sleep_ms(25);
    }
    kill(pid, SIGKILL);
    (void)waitpid(pid, NULL, 0);
    return -1;
}

/* Starts `redis-server --port PORT --bind 127.0.0.1 --save '' --appendonly
 * no` with the NULL-terminated extra arguments (redis_exec). */
static pid_t redis_spawn(int port, const char *pass, const char *const *extra) {
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    const char *argv[REDIS_PROC_MAX_ARGS] = {"redis-server", "--port", portstr,        "--bind", "127.0.0.1",
                                             "--save",       "",       "--appendonly", "no"};
    int argc = 9;
    for (int i = 0; extra != NULL && extra[i] != NULL && argc < REDIS_PROC_MAX_ARGS - 1; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    return redis_exec(port, pass, argv);
}

/* One command (fmt with at most one %s, arg) on a connection of its own to
 * port, without a password: its reply (freeReplyObject), or NULL. */
static inline redisReply *redis_command(int port, const char *fmt, const char *arg) {
    redisContext *c = redis_connect(port, NULL);
    if (c == NULL)
        return NULL;
    redisReply *r = redisCommand(c, fmt, arg);
    redisFree(c);
    return r;
}

/* SIGKILL and wait; *pid becomes 0. */
static void redis_kill_pid(pid_t *pid) {
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        (void)waitpid(*pid, NULL, 0);
        *pid = 0;
    }
}

/* bus_test_start, with the nodes' control channel handed to ctl (NULL:
 * not subscribed). */
static inline sy_bus_t *bus_test_start_ctl(sy_bus_opts_t o, sy_topics_t *topics, sy_bus_deliver_fn deliver,
                                           sy_bus_state_fn on_state, sy_bus_ctl_fn ctl, void *ctx) {
    if (o.prefix == NULL) {
        o.prefix = "symphony:";
        o.prefix_len = 9;
    }
    o.max_buffer = o.max_buffer ? o.max_buffer : 1 << 20;
    o.max_payload = o.max_payload ? o.max_payload : 1 << 20;
    o.connect_timeout_ms = o.connect_timeout_ms ? o.connect_timeout_ms : 1000;
    o.backoff_min_ms = o.backoff_min_ms ? o.backoff_min_ms : 20;
    o.backoff_max_ms = o.backoff_max_ms ? o.backoff_max_ms : 200;
    char err[256];
    sy_bus_t *b = sy_bus_create(&o, topics, deliver, ctx, on_state, ctx, err, sizeof(err));
    if (b == NULL) {
        fprintf(stderr, "sy_bus_create: %s\n", err);
        return NULL;
    }
    if (ctl != NULL)
        sy_bus_set_ctl(b, ctl, ctx);
    topics->on_edge = sy_bus_edge;
    topics->edge_ctx = b;
    if (sy_bus_start(b) != 0) {
        sy_bus_destroy(b);
        return NULL;
    }
    return b;
}

/* A bus of o (the tests' defaults filled in where o leaves 0: prefix
 * "symphony:", 1 MiB buffers, 1 s connect timeout, 20-200 ms backoff) on
 * topics, started; NULL (said on stderr) when it cannot be. */
static inline sy_bus_t *bus_test_start(sy_bus_opts_t o, sy_topics_t *topics, sy_bus_deliver_fn deliver,
                                       sy_bus_state_fn on_state, void *ctx) {
    return bus_test_start_ctl(o, topics, deliver, on_state, NULL, ctx);
}

/* Stops and frees a bus of bus_test_start (NULL: nothing). */
static inline void bus_test_stop(sy_bus_t *b) {
    if (b == NULL)
        return;
    sy_bus_stop(b, 200);
    sy_bus_destroy(b);
}

/* Waits up to ms for b's state to be want. */
static inline bool bus_test_wait_state(sy_bus_t *b, sy_bus_state_t want, int ms) {
    for (int i = 0; i < ms / 10; i++) {
        sy_bus_stats_t st;
        sy_bus_stats(b, &st);
        if (st.state == want)
            return true;
        sleep_ms(10);
    }
    return false;
}

#endif
