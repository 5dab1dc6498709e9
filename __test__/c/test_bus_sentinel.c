/* The bus behind Redis Sentinel (docs/bus.md, "Redis Sentinel").
 *
 * The pure part, sy_bus_sentinel_reply: the answer to SENTINEL
 * get-master-addr-by-name (an address, a null, an error, every malformed
 * form refused), ROLE's first element, and the +switch-master event, as
 * text and as the pub/sub message hiredis hands a subscription (RESP2 and
 * RESP3). Replies come from RESP bytes through hiredis' reader, as on a
 * connection; event texts are copied to the heap at their exact length:
 * ASan sees a read past the end.
 *
 * The live part, sy_bus_sentinel and the bus thread with it: a primary, a
 * replica and one sentinel (redis-server --sentinel, quorum 1) started
 * here on free loopback ports. A bus given a dead sentinel first and the
 * live one second finds the primary and delivers from it; SENTINEL
 * FAILOVER moves it to the replica, delivering again; a name no sentinel
 * knows and a list of dead sentinels are down with Sentinel's reason.
 * Under ASan/UBSan and valgrind like every C test: nothing leaks across
 * the moves and the stops. (The JS suite __test__/bus/bus-sentinel.test.js
 * runs three sentinels, history across a failover, and kill -9.) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "bus/sy_bus.h"
#include "bus/sy_bus_sentinel_reply.h"
#include "bus/sy_redis_alloc.h"
#include "bus_test.h"
#include "check.h"
#include "io/model/sy_topic.h"
#include "redis_proc.h"

static sy_bus_sentinel_answer_t addr_of(const char *resp, sy_bus_sentinel_addr_t *a) {
    redisReply *r = resp_reply_str(resp);
    CHECK(r != NULL);
    memset(a, 0x5a, sizeof(*a));
    sy_bus_sentinel_answer_t k = sy_bus_sentinel_read_addr(r, a);
    freeReplyObject(r);
    return k;
}

static void test_addr(void) {
    sy_bus_sentinel_addr_t a;
    CHECK_EQ(addr_of("*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n", &a), SY_SENTINEL_ADDR);
    CHECK(strcmp(a.host, "127.0.0.1") == 0 && a.port == 6380);
    CHECK_EQ(addr_of("*2\r\n$3\r\n::1\r\n$5\r\n65535\r\n", &a), SY_SENTINEL_ADDR);
    CHECK(strcmp(a.host, "::1") == 0 && a.port == 65535);
    /* A null (RESP2 and RESP3): no primary of that name. */
    CHECK_EQ(addr_of("*-1\r\n", &a), SY_SENTINEL_UNKNOWN);
    CHECK_EQ(addr_of("_\r\n", &a), SY_SENTINEL_UNKNOWN);
    CHECK_EQ(addr_of("$-1\r\n", &a), SY_SENTINEL_UNKNOWN);
    CHECK_EQ(addr_of("-NOAUTH Authentication required.\r\n", &a), SY_SENTINEL_ERROR);
    CHECK_EQ(addr_of("-IDONTKNOW No good slave\r\n", &a), SY_SENTINEL_ERROR);
    const char *bad[] = {
        "*1\r\n$9\r\n127.0.0.1\r\n",               /* one element */
        "*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\n2\r\n", /* three */
        "*2\r\n$0\r\n\r\n$4\r\n6380\r\n",          /* empty host */
        "*2\r\n$3\r\na b\r\n$4\r\n6380\r\n",       /* a space in the host */
        "*2\r\n$3\r\na\x01"
        "b\r\n$4\r\n6380\r\n",                       /* a control character */
        "*2\r\n$9\r\n127.0.0.1\r\n$1\r\n0\r\n",      /* port 0 */
        "*2\r\n$9\r\n127.0.0.1\r\n$5\r\n65536\r\n",  /* port too large */
        "*2\r\n$9\r\n127.0.0.1\r\n$6\r\n000080\r\n", /* six digits */
        "*2\r\n$9\r\n127.0.0.1\r\n$3\r\n-80\r\n",    /* a sign */
        "*2\r\n$9\r\n127.0.0.1\r\n$0\r\n\r\n",       /* no port */
        "*2\r\n$9\r\n127.0.0.1\r\n:6380\r\n",        /* an integer */
        "*2\r\n*0\r\n$4\r\n6380\r\n",                /* an array for a host */
        "+OK\r\n",
        ":1\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sy_bus_sentinel_answer_t k = addr_of(bad[i], &a);
        CHECK_EQ(k, SY_SENTINEL_MALFORMED);
        if (k != SY_SENTINEL_MALFORMED)
            fprintf(stderr, "  (bad answer %zu)\n", i);
    }
    /* The longest host fits; one byte more does not. */
    char resp[2 * SY_BUS_HOST_MAX + 64], host[SY_BUS_HOST_MAX + 1];
    memset(host, 'h', sizeof(host));
    host[SY_BUS_HOST_MAX - 1] = '\0';
    snprintf(resp, sizeof(resp), "*2\r\n$%d\r\n%s\r\n$2\r\n80\r\n", SY_BUS_HOST_MAX - 1, host);
    CHECK_EQ(addr_of(resp, &a), SY_SENTINEL_ADDR);
    CHECK_EQ(strlen(a.host), SY_BUS_HOST_MAX - 1);
    host[SY_BUS_HOST_MAX - 1] = 'h';
    host[SY_BUS_HOST_MAX] = '\0';
    snprintf(resp, sizeof(resp), "*2\r\n$%d\r\n%s\r\n$2\r\n80\r\n", SY_BUS_HOST_MAX, host);
    CHECK_EQ(addr_of(resp, &a), SY_SENTINEL_MALFORMED);
    CHECK_EQ(sy_bus_sentinel_read_addr(NULL, &a), SY_SENTINEL_MALFORMED);
}

static sy_bus_sentinel_role_t role_of(const char *resp) {
    redisReply *r = resp_reply_str(resp);
    CHECK(r != NULL);
    sy_bus_sentinel_role_t k = sy_bus_sentinel_read_role(r);
    freeReplyObject(r);
    return k;
}

static void test_role(void) {
    CHECK_EQ(role_of("*3\r\n$6\r\nmaster\r\n:3129659\r\n*0\r\n"), SY_ROLE_PRIMARY);
    CHECK_EQ(role_of("*3\r\n$6\r\nMASTER\r\n:1\r\n*0\r\n"), SY_ROLE_PRIMARY);
    CHECK_EQ(role_of("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:9000\r\n$9\r\nconnected\r\n:3167038\r\n"),
             SY_ROLE_OTHER);
    CHECK_EQ(role_of("*2\r\n$8\r\nsentinel\r\n*0\r\n"), SY_ROLE_OTHER);
    CHECK_EQ(role_of("*1\r\n$7\r\nmasterx\r\n"), SY_ROLE_OTHER);
    CHECK_EQ(role_of("-NOPERM no\r\n"), SY_ROLE_MALFORMED);
    CHECK_EQ(role_of("*0\r\n"), SY_ROLE_MALFORMED);
    CHECK_EQ(role_of("*1\r\n:1\r\n"), SY_ROLE_MALFORMED);
    CHECK_EQ(role_of("$6\r\nmaster\r\n"), SY_ROLE_MALFORMED);
    CHECK_EQ(sy_bus_sentinel_read_role(NULL), SY_ROLE_MALFORMED);
}

static bool switch_of(const char *text, const char *name, sy_bus_sentinel_addr_t *a) {
    size_t n = strlen(text);
    char *h = malloc(n ? n : 1);
    if (h == NULL)
        abort();
    memcpy(h, text, n);
    bool ok = sy_bus_sentinel_read_switch(h, n, name, strlen(name), a);
    free(h);
    return ok;
}

static void test_switch(void) {
    sy_bus_sentinel_addr_t a;
    CHECK(switch_of("mymaster 127.0.0.1 6379 127.0.0.1 6380", "mymaster", &a));
    CHECK(strcmp(a.host, "127.0.0.1") == 0 && a.port == 6380);
    CHECK(switch_of("m ::1 1 10.0.0.2 65535", "m", &a) && strcmp(a.host, "10.0.0.2") == 0 && a.port == 65535);
    /* Another primary's, or a name that only starts the same. */
    CHECK(!switch_of("other 127.0.0.1 6379 127.0.0.1 6380", "mymaster", &a));
    CHECK(!switch_of("mymaster2 127.0.0.1 6379 127.0.0.1 6380", "mymaster", &a));
    CHECK(!switch_of("mymaste 127.0.0.1 6379 127.0.0.1 6380", "mymaster", &a));
    const char *bad[] = {
        "",
        "mymaster",
        "mymaster 127.0.0.1 6379 127.0.0.1",        /* four words */
        "mymaster 127.0.0.1 6379 127.0.0.1 6380 x", /* six */
        "mymaster 127.0.0.1 6379 127.0.0.1 0",
        "mymaster 127.0.0.1 6379 127.0.0.1 65536",
        "mymaster 127.0.0.1 6379 127.0.0.1 63a0",
        "mymaster 127.0.0.1 x 127.0.0.1 6380", /* the old port too */
        "mymaster 127.0.0.1 6379 127.0.0.1 6380\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bool ok = switch_of(bad[i], "mymaster", &a);
        CHECK(!ok);
        if (ok)
            fprintf(stderr, "  (bad event %zu)\n", i);
    }
    /* Extra spaces between words are no harm. */
    CHECK(switch_of("  mymaster  127.0.0.1 6379 127.0.0.1   6380 ", "mymaster", &a) && a.port == 6380);
}

static bool event_of(const char *resp, sy_bus_sentinel_addr_t *a) {
    redisReply *r = resp_reply_str(resp);
    CHECK(r != NULL);
    bool ok = sy_bus_sentinel_read_event(r, "mymaster", 8, a);
    freeReplyObject(r);
    return ok;
}

static void test_event(void) {
    sy_bus_sentinel_addr_t a;
    static const char text[] = "$38\r\nmymaster 127.0.0.1 6379 127.0.0.1 6380\r\n";
    char resp[256];
    snprintf(resp, sizeof(resp), ">3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n%s", text);
    CHECK(event_of(resp, &a) && a.port == 6380);
    snprintf(resp, sizeof(resp), "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n%s", text);
    CHECK(event_of(resp, &a) && a.port == 6380);
    /* The subscription's confirmation, another channel, another kind. */
    CHECK(!event_of(">3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n", &a));
    snprintf(resp, sizeof(resp), ">3\r\n$7\r\nmessage\r\n$14\r\n+switch-mastex\r\n%s", text);
    CHECK(!event_of(resp, &a));
    snprintf(resp, sizeof(resp), ">3\r\n$8\r\nsmessage\r\n$14\r\n+switch-master\r\n%s", text);
    CHECK(!event_of(resp, &a));
    snprintf(resp, sizeof(resp), ">4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$14\r\n+switch-master\r\n%s", text);
    CHECK(!event_of(resp, &a));
    CHECK(!event_of(">3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n:1\r\n", &a));
    CHECK(!sy_bus_sentinel_read_event(NULL, "mymaster", 8, &a));
}

/* ---- live ------------------------------------------------------------- */

static char dir[64];

static bool reply_has(int port, const char *fmt, const char *arg, const char *needle) {
    redisReply *r = redis_command(port, fmt, arg);
    bool yes = r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_VERB) && strstr(r->str, needle);
    if (r != NULL)
        freeReplyObject(r);
    return yes;
}

static long long numsub(int port, const char *channel) {
    redisReply *r = redis_command(port, "PUBSUB SHARDNUMSUB %s", channel);
    long long n =
        r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_INTEGER
            ? r->element[1]->integer
            : -1;
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* `redis-server <conf> --sentinel`, watching the primary on port as
 * "mymaster" (quorum 1: this one sentinel may fail over alone). */
static pid_t sentinel_spawn(int port, int primary) {
    char conf[128];
    snprintf(conf, sizeof(conf), "%s/sentinel-%d.conf", dir, port);
    FILE *f = fopen(conf, "w");
    if (f == NULL)
        return -1;
    fprintf(f,
            "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nsentinel monitor mymaster 127.0.0.1 %d 1\n"
            "sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n",
            port, dir, primary);
    fclose(f);
    const char *argv[] = {"redis-server", conf, "--sentinel", NULL};
    return redis_exec(port, NULL, argv);
}

typedef struct node {
    sy_topics_t topics;
    sy_bus_t *bus;
    pthread_mutex_t lock;
    unsigned got;
    char err[512];
} node_t;

static void on_deliver(void *ctx, const char *topic, size_t topic_len, const void *data, size_t len, unsigned flags) {
    (void)topic, (void)topic_len, (void)data, (void)len, (void)flags;
    node_t *n = ctx;
    pthread_mutex_lock(&n->lock);
    n->got++;
    pthread_mutex_unlock(&n->lock);
}

static void on_state(void *ctx, sy_bus_state_t state, const char *err) {
    node_t *n = ctx;
    pthread_mutex_lock(&n->lock);
    if (state == SY_BUS_DOWN)
        snprintf(n->err, sizeof(n->err), "%s", err);
    pthread_mutex_unlock(&n->lock);
}

static bool node_init(node_t *n, const int *sentinels, unsigned count, const char *name) {
    memset(n, 0, sizeof(*n));
    if (sy_topics_init(&n->topics, 1) != 0 || pthread_mutex_init(&n->lock, NULL) != 0)
        return false;
    const char *hosts[4];
    uint16_t ports[4];
    for (unsigned i = 0; i < count && i < 4; i++) {
        hosts[i] = "127.0.0.1";
        ports[i] = (uint16_t)sentinels[i];
    }
    n->bus = bus_test_start(
        (sy_bus_opts_t){.sentinel_hosts = hosts, .sentinel_ports = ports, .nsentinels = count, .sentinel_name = name},
        &n->topics, on_deliver, on_state, n);
    return n->bus != NULL;
}

static void node_free(node_t *n) {
    bus_test_stop(n->bus);
    sy_topics_destroy(&n->topics);
    pthread_mutex_destroy(&n->lock);
}

static bool wait_state(node_t *n, sy_bus_state_t want, int ms) { return bus_test_wait_state(n->bus, want, ms); }

static unsigned got(node_t *n) {
    pthread_mutex_lock(&n->lock);
    unsigned k = n->got;
    pthread_mutex_unlock(&n->lock);
    return k;
}

static bool wait_got(node_t *n, unsigned k, int ms) {
    for (int i = 0; i < ms / 10 && got(n) < k; i++)
        sleep_ms(10);
    return got(n) >= k;
}

static bool wait_numsub(int port, const char *ch, long long want, int ms) {
    for (int i = 0; i < ms / 10; i++) {
        if (numsub(port, ch) == want)
            return true;
        sleep_ms(10);
    }
    return false;
}

static bool wait_reply_has(int port, const char *fmt, const char *arg, const char *needle, int ms) {
    for (int i = 0; i < ms / 20; i++) {
        if (reply_has(port, fmt, arg, needle))
            return true;
        sleep_ms(20);
    }
    return false;
}

static bool err_has(node_t *n, const char *needle) {
    pthread_mutex_lock(&n->lock);
    bool yes = strstr(n->err, needle) != NULL;
    if (!yes)
        fprintf(stderr, "  (down reason: \"%s\", wanted \"%s\")\n", n->err, needle);
    pthread_mutex_unlock(&n->lock);
    return yes;
}

static void test_live(void) {
    int primary = free_port_below(65536), replica = free_port_below(65536);
    int sentinel = free_port_below(65536), dead = free_port_below(65536);
    if (primary < 0 || replica < 0 || sentinel < 0 || dead < 0 || primary == replica || sentinel == dead ||
        sentinel == primary || sentinel == replica) {
        CHECK(!"free ports");
        return;
    }
    char pport[16];
    snprintf(pport, sizeof(pport), "%d", primary);
    const char *pextra[] = {"--dir", dir, "--repl-diskless-sync-delay", "0", NULL};
    const char *rextra[] = {"--dir", dir, "--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", pport, NULL};
    pid_t ppid = redis_spawn(primary, NULL, pextra), rpid = redis_spawn(replica, NULL, rextra), spid = -1;
    bool ok = ppid > 0 && rpid > 0 && wait_reply_has(replica, "INFO %s", "replication", "master_link_status:up", 15000);
    CHECK(ok);
    if (ok)
        spid = sentinel_spawn(sentinel, primary);
    CHECK(spid > 0);
    /* The sentinel learns the replica from the primary's INFO. */
    for (int i = 0; spid > 0 && i < 500; i++) {
        redisReply *r = redis_command(sentinel, "SENTINEL replicas %s", "mymaster");
        bool known = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1;
        if (r != NULL)
            freeReplyObject(r);
        if (known)
            break;
        sleep_ms(20);
    }
    if (spid > 0) {
        /* A dead sentinel first: the bus goes on to the next. */
        node_t n;
        int list[] = {dead, sentinel};
        CHECK(node_init(&n, list, 2, "mymaster"));
        CHECK(wait_state(&n, SY_BUS_UP, 15000));
        sy_topic_t *t = sy_topic_acquire(&n.topics, "news", 4, true);
        CHECK(t != NULL);
        if (t != NULL)
            sy_topic_add_interest(&n.topics, t, 0);
        CHECK(wait_numsub(primary, "symphony:news", 1, 10000));
        redisReply *r = redis_command(primary, "SPUBLISH symphony:news %s", "one");
        if (r != NULL)
            freeReplyObject(r);
        CHECK(wait_got(&n, 1, 10000));
        /* A failover: the bus moves to the replica Sentinel promotes. A
         * sentinel that has not yet read the replica's own INFO answers
         * NOGOODSLAVE: asked again until it takes the failover. */
        bool started = false;
        for (int i = 0; !started && i < 300; i++) {
            r = redis_command(sentinel, "SENTINEL FAILOVER %s", "mymaster");
            started = r != NULL && r->type == REDIS_REPLY_STATUS;
            bool again = r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOGOODSLAVE", 11) == 0;
            if (r != NULL)
                freeReplyObject(r);
            if (!again)
                break;
            sleep_ms(50);
        }
        CHECK(started);
        CHECK(wait_numsub(replica, "symphony:news", 1, 30000));
        CHECK(wait_state(&n, SY_BUS_UP, 10000));
        r = redis_command(replica, "SPUBLISH symphony:news %s", "two");
        if (r != NULL)
            freeReplyObject(r);
        CHECK(wait_got(&n, 2, 10000));
        CHECK_EQ(sy_bus_publish(n.bus, "news", 4, "three", 5, 0), 0);
        if (t != NULL)
            sy_topic_drop_interest(&n.topics, t, 0);
        node_free(&n);

        /* A sentinel that names a replica (its view stale): ROLE says so,
         * the bus stays down and asks again; named right, it is up. */
        /* (Once Sentinel has made the old primary a replica: it closes that
         * node's client connections as it does.) */
        CHECK(wait_reply_has(primary, "INFO %s", "replication", "master_link_status:up", 30000));
        char cmd[160];
        snprintf(cmd, sizeof(cmd), "SENTINEL MONITOR stale 127.0.0.1 %d 1", primary); /* a replica now */
        r = redis_command(sentinel, cmd, NULL);
        CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
        if (r != NULL)
            freeReplyObject(r);
        node_t st;
        CHECK(node_init(&st, &sentinel, 1, "stale"));
        CHECK(wait_state(&st, SY_BUS_DOWN, 10000));
        CHECK(err_has(&st, "not the primary (ROLE: slave); asking Sentinel again"));
        r = redis_command(sentinel, "SENTINEL REMOVE %s", "stale");
        if (r != NULL)
            freeReplyObject(r);
        snprintf(cmd, sizeof(cmd), "SENTINEL MONITOR stale 127.0.0.1 %d 1", replica); /* the primary */
        r = redis_command(sentinel, cmd, NULL);
        if (r != NULL)
            freeReplyObject(r);
        CHECK(wait_state(&st, SY_BUS_UP, 10000));
        node_free(&st);

        /* A name the sentinel does not know. */
        node_t u;
        CHECK(node_init(&u, &sentinel, 1, "nosuch"));
        CHECK(wait_state(&u, SY_BUS_DOWN, 10000));
        CHECK(err_has(&u, "Sentinel: no sentinel (of 1) gives the address of primary 'nosuch'"));
        CHECK(err_has(&u, "monitors no primary named 'nosuch'"));
        node_free(&u);
    }
    /* No sentinel answers. */
    node_t d;
    CHECK(node_init(&d, &dead, 1, "mymaster"));
    CHECK(wait_state(&d, SY_BUS_DOWN, 10000));
    CHECK(err_has(&d, "Sentinel: no sentinel (of 1) gives the address of primary 'mymaster'"));
    node_free(&d);
    redis_kill_pid(&spid);
    redis_kill_pid(&rpid);
    redis_kill_pid(&ppid);
}

int main(void) {
    if (sy_redis_alloc_init() != 0)
        return 1;
    test_addr();
    test_role();
    test_switch();
    test_event();
    snprintf(dir, sizeof(dir), "/tmp/sy-sentinel-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_live();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_bus_sentinel: could not remove %s\n", dir);
    return check_report("test_bus_sentinel");
}
