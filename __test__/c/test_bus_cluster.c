/*
 * test_bus_cluster — the bus' cluster path (the slot map, one connection
 * pair per primary, SPUBLISH/SSUBSCRIBE on each channel's shard) against a
 * real Redis Cluster of 3 primaries made here (redis-server with
 * --cluster-enabled, redis-cli --cluster create), under ASan/UBSan and
 * valgrind like every C test. Slot migrations and failovers are tested
 * from JS (__test__/bus/bus-cluster.test.js).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "base/sy_alloc.h"
#include "bus/sy_bus.h"
#include "bus/sy_redis_alloc.h"
#include "bus/sy_slot.h"
#include "check.h"
#include "io/model/sy_topic.h"
#include "redis_proc.h"

#define PRIMARIES 3
#define TOPICS 12

static pid_t pids[PRIMARIES];
static int ports[PRIMARIES];
static char dir[64];

static bool start_node(int i) {
    char conf[128];
    snprintf(conf, sizeof(conf), "nodes-%d.conf", ports[i]);
    const char *extra[] = {
        "--dir", dir, "--cluster-enabled", "yes", "--cluster-config-file", conf, "--cluster-node-timeout",
        "2000",  NULL};
    pids[i] = redis_spawn(ports[i], NULL, extra);
    return pids[i] > 0;
}

static bool cluster_ok(void) {
    for (int i = 0; i < PRIMARIES; i++) {
        redisReply *r = redis_command(ports[i], "CLUSTER INFO", NULL);
        bool ok = r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
        if (r != NULL)
            freeReplyObject(r);
        if (!ok)
            return false;
    }
    return true;
}

static void stop_nodes(void) {
    for (int i = 0; i < PRIMARIES; i++)
        redis_kill_pid(&pids[i]);
}

static bool start_cluster_once(void) {
    for (int i = 0; i < PRIMARIES; i++) {
        if ((ports[i] = free_port_below(55000)) < 0) {
            fprintf(stderr, "test_bus_cluster: no free port\n");
            return false;
        }
        if (!start_node(i)) {
            fprintf(stderr, "test_bus_cluster: redis-server on port %d did not start\n", ports[i]);
            return false;
        }
    }
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "redis-cli --cluster create 127.0.0.1:%d 127.0.0.1:%d 127.0.0.1:%d --cluster-yes >/dev/null 2>&1",
             ports[0], ports[1], ports[2]);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_bus_cluster: %s failed\n", cmd);
        return false;
    }
    for (int k = 0; k < 800; k++) {
        if (cluster_ok())
            return true;
        sleep_ms(25);
    }
    fprintf(stderr, "test_bus_cluster: the cluster did not reach cluster_state:ok in 20 s\n");
    return false;
}

/* A port taken between free_port and redis-server's bind (its cluster bus
 * port is port + 10000) fails a start: try again with other ports. */
static bool start_cluster(void) {
    snprintf(dir, sizeof(dir), "/tmp/sy-test-cluster-%d", (int)getpid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return false;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (start_cluster_once())
            return true;
        stop_nodes();
    }
    return false;
}

static void stop_cluster(void) {
    stop_nodes();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_bus_cluster: could not remove %s\n", dir);
}

/* ---- a node ---- */

typedef struct node {
    sy_topics_t topics;
    sy_bus_t *bus;
    pthread_mutex_t lock;
    unsigned got[TOPICS];
    unsigned total;
    unsigned xs;          /* control messages "x" received */
    unsigned xs_at_reply; /* xs when the last call's reply came */
    uint8_t reply[64];    /* the last call's reply (sy_bus_call.h), cut to 64 bytes */
    size_t reply_len;
    bool replied;
} node_t;

static void on_ctl(void *ctx, const void *data, size_t len) {
    node_t *n = ctx;
    pthread_mutex_lock(&n->lock);
    n->xs += len == 1 && *(const char *)data == 'x';
    pthread_mutex_unlock(&n->lock);
}

static void on_reply(void *ctx, uint8_t *reply, size_t len) {
    node_t *n = ctx;
    pthread_mutex_lock(&n->lock);
    n->reply_len = len < sizeof(n->reply) ? len : sizeof(n->reply);
    if (reply != NULL)
        memcpy(n->reply, reply, n->reply_len);
    n->xs_at_reply = n->xs;
    n->replied = true;
    pthread_mutex_unlock(&n->lock);
    sy_free(reply);
}

/* Waits for the reply of the call just made on n (false after 3 s). */
static bool wait_reply(node_t *n) {
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&n->lock);
        bool done = n->replied;
        n->replied = false;
        pthread_mutex_unlock(&n->lock);
        if (done)
            return true;
        sleep_ms(10);
    }
    return false;
}

static void on_deliver(void *ctx, const char *topic, size_t topic_len, const void *data, size_t len, unsigned flags) {
    (void)data;
    (void)len;
    (void)flags;
    node_t *n = ctx;
    int i = -1;
    if (topic_len > 1 && sscanf(topic, "t%d", &i) == 1 && i >= 0 && i < TOPICS) {
        pthread_mutex_lock(&n->lock);
        n->got[i]++;
        n->total++;
        pthread_mutex_unlock(&n->lock);
    }
}

static void on_state(void *ctx, sy_bus_state_t state, const char *err) {
    (void)ctx;
    (void)state;
    (void)err;
}

static bool node_init(node_t *n) {
    memset(n, 0, sizeof(*n));
    if (sy_topics_init(&n->topics, 2) != 0 || pthread_mutex_init(&n->lock, NULL) != 0)
        return false;
    /* Two seeds, one of them wrong: the bus moves on to the next. */
    const char *hosts[2] = {"127.0.0.1", "127.0.0.1"};
    uint16_t seed_ports[2] = {1, (uint16_t)ports[1]};
    n->bus = bus_test_start_ctl(
        (sy_bus_opts_t){
            .hosts = hosts, .ports = seed_ports, .nseeds = 2, .cluster = true, .prefix = "c:", .prefix_len = 2},
        &n->topics, on_deliver, on_state, on_ctl, n);
    return n->bus != NULL;
}

static void node_free(node_t *n) {
    bus_test_stop(n->bus);
    sy_topics_destroy(&n->topics);
    pthread_mutex_destroy(&n->lock);
}

static bool wait_up(node_t *n, int ms) { return bus_test_wait_state(n->bus, SY_BUS_UP, ms); }

static uint64_t channels(node_t *n) {
    sy_bus_stats_t st;
    sy_bus_stats(n->bus, &st);
    return st.channels;
}

/* The control channel across the cluster: b's SPUBLISH reaches a, and a's
 * fence (sy_bus_ctl_fence) answers PONG only after what b published there
 * before reached a's ctl fn: the PING went on the subscribing connection
 * of the shard that serves the channel. */
static void test_fence(node_t *a, node_t *b) {
    /* SPUBLISH answers how many subscribe the channel: both nodes, once
     * both have subscribed it. */
    static const uint8_t two[] = {'i', 2, 0, 0, 0, 0, 0, 0, 0};
    bool both = false;
    for (int i = 0; i < 100 && !both; i++) {
        CHECK_EQ(sy_bus_ctl_publish(b->bus, "hello", 5, on_reply, b), 0);
        CHECK(wait_reply(b));
        both = b->reply_len == sizeof(two) && memcmp(b->reply, two, sizeof(two)) == 0;
        if (!both)
            sleep_ms(10);
    }
    CHECK(both);
    static const uint8_t pong[] = {'s', 4, 0, 0, 0, 'P', 'O', 'N', 'G'};
    for (unsigned round = 1; round <= 20; round++) {
        /* Redis took "x" (SPUBLISH answered): it is on its way to a. */
        CHECK_EQ(sy_bus_ctl_publish(b->bus, "x", 1, on_reply, b), 0);
        CHECK(wait_reply(b));
        CHECK_EQ(sy_bus_ctl_fence(a->bus, on_reply, a), 0);
        CHECK(wait_reply(a));
        CHECK(a->reply_len == sizeof(pong) && memcmp(a->reply, pong, sizeof(pong)) == 0);
        CHECK_EQU(a->xs_at_reply, round);
    }
}

int main(void) {
    if (sy_redis_alloc_init() != 0 || !start_cluster()) {
        fprintf(stderr, "test_bus_cluster: cannot start a Redis Cluster (Debian's redis-server and redis-tools)\n");
        stop_cluster();
        return 1;
    }
    node_t a, b;
    CHECK(node_init(&a));
    CHECK(node_init(&b));
    CHECK(wait_up(&a, 10000));
    CHECK(wait_up(&b, 10000));

    /* Topics on every shard (12 names spread over 3 primaries). */
    sy_topic_t *t[TOPICS];
    bool shard_seen[3] = {false, false, false};
    for (int i = 0; i < TOPICS; i++) {
        char name[16], channel[32];
        snprintf(name, sizeof(name), "t%d", i);
        snprintf(channel, sizeof(channel), "c:%s", name);
        unsigned slot = sy_slot_of(channel, strlen(channel));
        shard_seen[slot * 3 / SY_SLOTS] = true; /* redis-cli splits the slots in three */
        t[i] = sy_topic_acquire(&a.topics, name, strlen(name), true);
        if (t[i] != NULL)
            sy_topic_add_interest(&a.topics, t[i], (unsigned)i % 2);
    }
    CHECK(shard_seen[0] && shard_seen[1] && shard_seen[2]);
    for (int i = 0; i < 300 && channels(&a) < TOPICS; i++)
        sleep_ms(10);
    CHECK_EQU(channels(&a), TOPICS);

    for (int i = 0; i < TOPICS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%d", i);
        CHECK_EQ(sy_bus_publish(b.bus, name, strlen(name), "m", 1, 0), 0);
    }
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&a.lock);
        unsigned total = a.total;
        pthread_mutex_unlock(&a.lock);
        if (total >= TOPICS)
            break;
        sleep_ms(10);
    }
    for (int i = 0; i < TOPICS; i++)
        CHECK_EQU(a.got[i], 1);
    /* Redis' acknowledgements reach b after the messages reach a, maybe. */
    sy_bus_stats_t st;
    for (int i = 0; i < 300; i++) {
        sy_bus_stats(b.bus, &st);
        if (st.published == TOPICS)
            break;
        sleep_ms(10);
    }
    CHECK_EQU(st.published, TOPICS);
    CHECK(st.map_refreshes >= 1);
    CHECK_EQU(st.dropped, 0);

    test_fence(&a, &b);

    for (int i = 0; i < TOPICS; i++)
        if (t[i] != NULL)
            sy_topic_drop_interest(&a.topics, t[i], (unsigned)i % 2);
    for (int i = 0; i < 300 && channels(&a) > 0; i++)
        sleep_ms(10);
    CHECK_EQU(channels(&a), 0);

    node_free(&a);
    node_free(&b);
    stop_cluster();
    return check_report("test_bus_cluster");
}
