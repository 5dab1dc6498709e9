/*
 * redis_proc.h — real redis-server processes for the bus' C tests
 * (test_bus.c, test_bus_cluster.c): free loopback ports, a server started
 * with persistence off and stopped by its PID, a synchronous hiredis
 * connection to it. Static functions: include it from one test file per
 * program.
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

/* Starts `redis-server --port PORT --bind 127.0.0.1 --save '' --appendonly
 * no` with the NULL-terminated extra arguments, its output to /dev/null,
 * and waits (up to 5 s) for it to answer PING. The child's pid, or -1
 * (then nothing is left running). */
static pid_t redis_spawn(int port, const char *pass, const char *const *extra) {
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    const char *argv[REDIS_PROC_MAX_ARGS] = {"redis-server", "--port", portstr, "--bind", "127.0.0.1",
                                             "--save", "", "--appendonly", "no"};
    int argc = 9;
    for (int i = 0; extra != NULL && extra[i] != NULL && argc < REDIS_PROC_MAX_ARGS - 1; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        execvp("redis-server", (char *const *)argv);
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

/* SIGKILL and wait; *pid becomes 0. */
static void redis_kill_pid(pid_t *pid) {
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        (void)waitpid(*pid, NULL, 0);
        *pid = 0;
    }
}

#endif
