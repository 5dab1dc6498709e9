/*
 * test_bus — the bus (sy_bus.c, sy_bus_link.c, sy_bus_env.c, sy_slot.c)
 * against a real Redis: redis-server (Debian's package) started here on a
 * free loopback port, persistence off, stopped by its PID.
 *
 * Two buses in one process stand for two nodes: what A publishes reaches
 * B's deliveries and not A's own; another program's SPUBLISH reaches both;
 * subscriptions follow interest (PUBSUB SHARDNUMSUB); Redis killed and
 * started again: publishes dropped and counted while down, subscribed
 * again after; a wrong password: down with Redis' own words; a full
 * buffer toward a paused Redis: dropped, bounded. Under ASan/UBSan and
 * valgrind like every C test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "base/sy_alloc.h"
#include "bus/sy_bus.h"
#include "bus/sy_bus_env.h"
#include "bus/sy_bus_order.h"
#include "bus/sy_redis_alloc.h"
#include "bus/sy_slot.h"
#include "check.h"
#include "io/model/sy_topic.h"
#include "redis_proc.h"

/* ---- a real redis-server ---------------------------------------------- */

typedef struct redis {
    pid_t pid;
    int port;
    const char *pass;
} redis_t;

static redisContext *cli(const redis_t *r) { return redis_connect(r->port, r->pass); }

static bool redis_start(redis_t *r) {
    const char *extra[] = {"--dir", "/tmp", r->pass != NULL ? "--requirepass" : NULL, r->pass, NULL};
    r->pid = redis_spawn(r->port, r->pass, extra);
    return r->pid > 0;
}

static void redis_kill(redis_t *r) { redis_kill_pid(&r->pid); }

static long long command_int(const redis_t *r, const char *fmt, const char *arg) {
    redisContext *c = cli(r);
    if (c == NULL)
        return -1;
    redisReply *rep = redisCommand(c, fmt, arg);
    long long v = -1;
    if (rep != NULL && rep->type == REDIS_REPLY_INTEGER)
        v = rep->integer;
    else if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
             rep->element[1]->type == REDIS_REPLY_INTEGER)
        v = rep->element[1]->integer; /* PUBSUB SHARDNUMSUB: [channel, n] */
    if (rep != NULL)
        freeReplyObject(rep);
    redisFree(c);
    return v;
}

/* SPUBLISH channel <bytes>: the receiver count. */
static long long spublish_bytes(const redis_t *r, const char *channel, const void *data, size_t len) {
    redisContext *c = cli(r);
    if (c == NULL)
        return -1;
    redisReply *rep = redisCommand(c, "SPUBLISH %s %b", channel, data, len);
    long long v = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep != NULL)
        freeReplyObject(rep);
    redisFree(c);
    return v;
}

static long long shard_numsub(const redis_t *r, const char *channel) {
    return command_int(r, "PUBSUB SHARDNUMSUB %s", channel);
}

/* ---- a node: a topics registry and its bus ------------------------------ */

#define MAX_GOT 64

typedef struct node {
    sy_topics_t topics;
    sy_bus_t *bus;
    pthread_mutex_t lock;
    char got[MAX_GOT][64];
    unsigned got_flags[MAX_GOT];
    unsigned ngot;
    sy_bus_state_t state;
    char err[512];
} node_t;

static void on_deliver(void *ctx, const char *topic, size_t topic_len, const void *data, size_t len, unsigned flags) {
    node_t *n = ctx;
    pthread_mutex_lock(&n->lock);
    if (n->ngot < MAX_GOT) {
        snprintf(n->got[n->ngot], sizeof(n->got[0]), "%.*s=%.*s", (int)topic_len, topic, (int)len, (const char *)data);
        n->got_flags[n->ngot] = flags;
        n->ngot++;
    }
    pthread_mutex_unlock(&n->lock);
}

static void on_state(void *ctx, sy_bus_state_t state, const char *err) {
    node_t *n = ctx;
    pthread_mutex_lock(&n->lock);
    n->state = state;
    snprintf(n->err, sizeof(n->err), "%s", err);
    pthread_mutex_unlock(&n->lock);
}

static bool node_init(node_t *n, const redis_t *r, const char *pass, size_t max_buffer) {
    memset(n, 0, sizeof(*n));
    if (sy_topics_init(&n->topics, 1) != 0 || pthread_mutex_init(&n->lock, NULL) != 0)
        return false;
    const char *host = "127.0.0.1";
    uint16_t port = (uint16_t)r->port;
    n->bus = bus_test_start(
        (sy_bus_opts_t){.hosts = &host, .ports = &port, .nseeds = 1, .pass = pass, .max_buffer = max_buffer},
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
    unsigned k = n->ngot;
    pthread_mutex_unlock(&n->lock);
    return k;
}

static bool wait_got(node_t *n, unsigned k, int ms) {
    for (int i = 0; i < ms / 10 && got(n) < k; i++)
        sleep_ms(10);
    return got(n) >= k;
}

static bool wait_numsub(const redis_t *r, const char *ch, long long want, int ms) {
    for (int i = 0; i < ms / 10; i++) {
        if (shard_numsub(r, ch) == want)
            return true;
        sleep_ms(10);
    }
    return false;
}

/* One local subscriber of name on the node's only thread (a reference with it). */
static sy_topic_t *interest(node_t *n, const char *name) {
    sy_topic_t *t = sy_topic_acquire(&n->topics, name, strlen(name), true);
    if (t != NULL)
        sy_topic_add_interest(&n->topics, t, 0);
    return t;
}

/* ---- the pure parts ------------------------------------------------------ */

static void test_slots(void) {
    CHECK_EQU(sy_slot_crc16("123456789", 9), 0x31C3u); /* the XMODEM check value */
    CHECK_EQU(sy_slot_of("foo", 3), 12182u);           /* CLUSTER KEYSLOT foo */
    CHECK_EQU(sy_slot_of("{user1000}.following", 20), sy_slot_of("user1000", 8));
    CHECK_EQU(sy_slot_of("foo{}{bar}", 10), sy_slot_crc16("foo{}{bar}", 10) & 16383u); /* empty tag: all */
    CHECK_EQU(sy_slot_of("foo{{bar}}zap", 13), sy_slot_of("{bar", 4));
    CHECK_EQU(sy_slot_of("foo{bar}{zap}", 13), sy_slot_of("bar", 3));
    CHECK_EQU(sy_slot_of("{", 1), sy_slot_crc16("{", 1) & 16383u);
}

static void test_envelope(void) {
    uint8_t buf[SY_BUS_ENV_LEN + 3];
    sy_bus_env_write(buf, 0x1122334455667788ull, 42, SY_BUS_ENV_BINARY);
    memcpy(buf + SY_BUS_ENV_LEN, "abc", 3);
    sy_bus_env_msg_t m;
    CHECK_EQ(sy_bus_env_read(buf, sizeof(buf), 0x1122334455667788ull, &m), SY_BUS_ENV_OWN);
    CHECK_EQ(sy_bus_env_read(buf, sizeof(buf), 7, &m), SY_BUS_ENV_DELIVER);
    CHECK_EQU(m.len, 3);
    CHECK_EQU(m.flags, SY_BUS_ENV_BINARY);
    CHECK_EQU(m.from, 0x1122334455667788ull);
    CHECK_EQU(m.seq, 42);
    CHECK(memcmp(m.payload, "abc", 3) == 0);
    CHECK_EQ(sy_bus_env_read(buf, SY_BUS_ENV_LEN - 1, 7, &m), SY_BUS_ENV_BAD); /* cut short */
    buf[1] = 0x80;
    CHECK_EQ(sy_bus_env_read(buf, sizeof(buf), 7, &m), SY_BUS_ENV_BAD); /* unknown flags */
    sy_bus_env_write(buf, 5, 0, 0);
    CHECK_EQ(sy_bus_env_read(buf, sizeof(buf), 7, &m), SY_BUS_ENV_BAD); /* no sequence number */
    /* Another program's message: text when valid UTF-8, else binary. */
    CHECK_EQ(sy_bus_env_read((const uint8_t *)"h\xc3\xa9", 3, 7, &m), SY_BUS_ENV_DELIVER);
    CHECK_EQU(m.flags, SY_BUS_ENV_COMPRESS);
    CHECK_EQU(m.seq, 0);
    CHECK_EQ(sy_bus_env_read((const uint8_t *)"\xff\x01", 2, 7, &m), SY_BUS_ENV_DELIVER);
    CHECK_EQU(m.flags, SY_BUS_ENV_COMPRESS | SY_BUS_ENV_BINARY);
    CHECK_EQ(sy_bus_env_read((const uint8_t *)"", 0, 7, &m), SY_BUS_ENV_DELIVER);
    CHECK_EQU(m.len, 0);
}

/* sy_bus_order alone: each publisher's order; the publisher heard from
 * least recently makes room for a new one. */
static void test_order_table(void) {
    sy_bus_order_t o;
    memset(&o, 0, sizeof(o));
    CHECK(sy_bus_order_check(&o, 1, 5));
    CHECK(sy_bus_order_check(&o, 1, 6));
    CHECK(!sy_bus_order_check(&o, 1, 6)); /* again */
    CHECK(!sy_bus_order_check(&o, 1, 4)); /* late */
    CHECK(sy_bus_order_check(&o, 2, 1));  /* another publisher's own order */
    CHECK(sy_bus_order_check(&o, 1, 9));  /* a gap is fine */
    /* Publishers 3..9 fill the table; 2 is now the least recent and goes. */
    for (uint64_t p = 3; p <= 9; p++)
        CHECK(sy_bus_order_check(&o, p, 100));
    CHECK(!sy_bus_order_check(&o, 1, 9)); /* 1 stayed */
    CHECK(sy_bus_order_check(&o, 2, 1));  /* 2 was forgotten: taken as new */
    CHECK(!sy_bus_order_check(&o, 9, 100));
}

/* A message Redis brings after a newer one of the same publisher and
 * channel is dropped (late); another publisher's is not. Played with
 * SPUBLISH of hand-made envelopes, as a failover would reorder them. */
static void test_order(redis_t *r) {
    node_t n;
    CHECK(node_init(&n, r, NULL, 1 << 20));
    CHECK(wait_state(&n, SY_BUS_UP, 3000));
    sy_topic_t *t = interest(&n, "ord");
    CHECK(wait_numsub(r, "symphony:ord", 1, 3000));
    static const struct {
        uint64_t node, seq;
        char body;
    } seqs[] = {{1, 1, 'a'}, {1, 3, 'b'}, {1, 2, 'c'}, {2, 1, 'd'}, {1, 3, 'e'}, {1, 4, 'f'}, {2, 2, 'g'}};
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        uint8_t msg[SY_BUS_ENV_LEN + 1];
        sy_bus_env_write(msg, seqs[i].node, seqs[i].seq, 0);
        msg[SY_BUS_ENV_LEN] = (uint8_t)seqs[i].body;
        CHECK_EQ(spublish_bytes(r, "symphony:ord", msg, sizeof(msg)), 1);
    }
    CHECK(wait_got(&n, 5, 3000));
    sleep_ms(100);
    CHECK_EQU(got(&n), 5);
    const char *want[] = {"ord=a", "ord=b", "ord=d", "ord=f", "ord=g"};
    for (int i = 0; i < 5; i++)
        CHECK(strcmp(n.got[i], want[i]) == 0);
    sy_bus_stats_t st;
    sy_bus_stats(n.bus, &st);
    CHECK_EQU(st.late, 2);
    if (t != NULL)
        sy_topic_drop_interest(&n.topics, t, 0);
    node_free(&n);
}

/* ---- against Redis --------------------------------------------------------- */

static void test_two_nodes(redis_t *r) {
    node_t a, b;
    CHECK(node_init(&a, r, NULL, 1 << 20));
    CHECK(node_init(&b, r, NULL, 1 << 20));
    CHECK(wait_state(&a, SY_BUS_UP, 3000));
    CHECK(wait_state(&b, SY_BUS_UP, 3000));

    /* Interest on both nodes: one subscription each. */
    sy_topic_t *ta = interest(&a, "news");
    sy_topic_t *tb = interest(&b, "news");
    CHECK(ta != NULL && tb != NULL);
    CHECK(wait_numsub(r, "symphony:news", 2, 3000));

    /* A's publish reaches B, not A (A delivered it locally already). */
    CHECK_EQ(sy_bus_publish(a.bus, "news", 4, "one", 3, SY_BUS_ENV_COMPRESS), 0);
    CHECK_EQ(sy_bus_publish(a.bus, "news", 4, "\x01\x02", 2, SY_BUS_ENV_BINARY), 0);
    CHECK(wait_got(&b, 2, 3000));
    sleep_ms(100);
    CHECK_EQU(got(&a), 0);
    CHECK_EQU(got(&b), 2);
    CHECK(strcmp(b.got[0], "news=one") == 0);
    CHECK_EQU(b.got_flags[0], SY_BUS_ENV_COMPRESS);
    CHECK_EQU(b.got_flags[1], SY_BUS_ENV_BINARY);

    /* Another program's SPUBLISH reaches both. */
    CHECK_EQ(command_int(r, "SPUBLISH symphony:news %s", "plain"), 2);
    CHECK(wait_got(&a, 1, 3000));
    CHECK(wait_got(&b, 3, 3000));
    CHECK(strcmp(a.got[0], "news=plain") == 0);

    /* Outside the prefix, or a broken envelope: ignored and counted. */
    CHECK_EQ(spublish_bytes(r, "symphony:news", "\xf5\x01", 2), 2);
    CHECK(wait_got(&a, 1, 200) && got(&a) == 1);
    sy_bus_stats_t st;
    for (int i = 0; i < 100; i++) {
        sy_bus_stats(a.bus, &st);
        if (st.ignored == 1)
            break;
        sleep_ms(10);
    }
    CHECK_EQU(st.ignored, 1);
    CHECK_EQU(st.channels, 1);
    for (int i = 0; i < 300; i++) { /* the acknowledgements may come after b got the messages */
        sy_bus_stats(a.bus, &st);
        if (st.published == 2)
            break;
        sleep_ms(10);
    }
    CHECK(st.published == 2 && st.dropped == 0 && st.buffered_bytes == 0);

    /* The last local subscriber leaves: unsubscribed. */
    sy_topic_drop_interest(&a.topics, ta, 0);
    CHECK(wait_numsub(r, "symphony:news", 1, 3000));
    sy_topic_drop_interest(&b.topics, tb, 0);
    CHECK(wait_numsub(r, "symphony:news", 0, 3000));

    /* Many topics in one turn: a few commands, not one each. */
    sy_bus_stats(a.bus, &st);
    uint64_t before = st.subscribe_commands;
    sy_topic_t *many[300];
    char name[32];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "t%d", i);
        many[i] = interest(&a, name);
    }
    CHECK(wait_numsub(r, "symphony:t299", 1, 3000));
    CHECK(wait_numsub(r, "symphony:t0", 1, 3000));
    sy_bus_stats(a.bus, &st);
    CHECK(st.subscribe_commands - before <= 10);
    for (int i = 0; i < 300; i++)
        if (many[i] != NULL)
            sy_topic_drop_interest(&a.topics, many[i], 0);
    CHECK(wait_numsub(r, "symphony:t150", 0, 3000));

    /* Redis gone: down, publishes dropped and counted; back: up and
     * subscribed again. */
    ta = interest(&a, "news");
    CHECK(wait_numsub(r, "symphony:news", 1, 3000));
    redis_kill(r);
    CHECK(wait_state(&a, SY_BUS_DOWN, 3000));
    pthread_mutex_lock(&a.lock);
    CHECK(a.err[0] != '\0');
    pthread_mutex_unlock(&a.lock);
    sy_bus_stats(a.bus, &st);
    uint64_t dropped = st.dropped;
    CHECK_EQ(sy_bus_publish(a.bus, "news", 4, "lost", 4, 0), EAGAIN);
    sy_bus_stats(a.bus, &st);
    CHECK_EQU(st.dropped, dropped + 1);
    CHECK(redis_start(r));
    CHECK(wait_state(&a, SY_BUS_UP, 3000));
    CHECK(wait_numsub(r, "symphony:news", 1, 3000));
    sy_bus_stats(a.bus, &st);
    CHECK(st.reconnects >= 1);
    sy_topic_drop_interest(&a.topics, ta, 0);

    node_free(&a);
    node_free(&b);
}

static void test_wrong_password(void) {
    redis_t r = {.port = free_port_below(65536), .pass = "right horse"};
    CHECK(redis_start(&r));
    node_t n;
    CHECK(node_init(&n, &r, "battery staple", 1 << 20));
    CHECK(wait_state(&n, SY_BUS_DOWN, 3000));
    pthread_mutex_lock(&n.lock);
    CHECK(strstr(n.err, "WRONGPASS") != NULL);
    pthread_mutex_unlock(&n.lock);
    node_free(&n);
    redis_kill(&r);
}

static void test_paused_redis(void) {
    redis_t r = {.port = free_port_below(65536)};
    CHECK(redis_start(&r));
    node_t n;
    size_t cap = 64 * 1024;
    CHECK(node_init(&n, &r, NULL, cap));
    CHECK(wait_state(&n, SY_BUS_UP, 3000));
    CHECK_EQ(command_int(&r, "CLIENT PAUSE %s ALL", "2000") == -1, 1); /* +OK: not an integer */
    static char payload[1000];
    memset(payload, 'x', sizeof(payload));
    unsigned ok = 0, dropped = 0;
    for (int i = 0; i < 1000; i++) {
        int rc = sy_bus_publish(n.bus, "p", 1, payload, sizeof(payload), 0);
        if (rc == 0)
            ok++;
        else if (rc == EAGAIN)
            dropped++;
    }
    sy_bus_stats_t st;
    sy_bus_stats(n.bus, &st);
    CHECK(dropped > 0);
    CHECK(ok < 1000);
    CHECK(st.buffered_bytes <= cap);
    /* After the pause every accepted publish is acknowledged. */
    for (int i = 0; i < 400; i++) {
        sy_bus_stats(n.bus, &st);
        if (st.published == ok)
            break;
        sleep_ms(10);
    }
    CHECK_EQU(st.published, ok);
    CHECK_EQU(st.buffered_bytes, 0);
    node_free(&n);
    redis_kill(&r);
}

int main(void) {
    sy_redis_alloc_init();
    test_slots();
    test_envelope();
    test_order_table();
    redis_t r = {.port = free_port_below(65536)};
    if (!redis_start(&r)) {
        fprintf(stderr, "test_bus: cannot start redis-server (Debian's redis-server package)\n");
        return 1;
    }
    test_two_nodes(&r);
    test_order(&r);
    redis_kill(&r);
    test_wrong_password();
    test_paused_redis();
    return check_report("test_bus");
}
