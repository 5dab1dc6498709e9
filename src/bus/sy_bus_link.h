/*
 * sy_bus_link — one connection to one Redis server, for the bus (sy_bus.h):
 * a hiredis async context driven by the bus thread's poller through
 * hiredis' adapter hooks (addRead/delRead/addWrite/delWrite/cleanup/
 * scheduleTimer), so that hiredis parses every reply (RESP) and our loop
 * does every wait.
 *
 * A link connects, says `HELLO 3` (RESP3, with AUTH when there is a
 * password, and SETNAME), and is then up. Sharded pub/sub messages
 * (smessage, ssubscribe, sunsubscribe) arrive as RESP3 pushes and go to
 * ops->push. When the connection fails or is lost, ops->down is told why
 * (Redis' own error text, or the socket's) and the link connects again
 * after a delay that doubles from backoff_min_ms up to backoff_max_ms
 * (+-20% jitter), reset once a link is up again.
 *
 * Threads: the bus thread only.
 *
 * Ownership: the link is the caller's memory (embedded in a shard); it
 * owns its hiredis context. ops, ctx, conf and poll are the caller's and
 * must outlive the link; the host is copied.
 *
 * Errors: a failed connect or a lost connection is no error of a call:
 * it goes to ops->down and the link retries by itself. sy_bus_link_append
 * returns 0, ENOTCONN or ENOMEM; sy_bus_link_ac NULL when not up.
 */
#ifndef SY_BUS_LINK_H
#define SY_BUS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "net/sy_poll.h"

#define SY_BUS_HOST_MAX 256
/* The most elements a reply's array may announce (hiredis allocates them
 * before they arrive; its own limit is 2^32 - 1). A CLUSTER SLOTS reply of
 * the largest cluster has 16384 ranges; a push, 3. */
#define SY_BUS_READER_MAX_ELEMENTS (1 << 20)
#define SY_BUS_ERRLEN 256

struct redisAsyncContext;
struct redisReply;
typedef struct sy_bus_link sy_bus_link_t;

typedef struct sy_bus_link_ops {
    void (*up)(void *ctx, sy_bus_link_t *l);
    /* The link is down (err: why); it will connect again by itself. */
    void (*down)(void *ctx, sy_bus_link_t *l, const char *err);
    /* A RESP3 push on the link (the reply is freed after the call). */
    void (*push)(void *ctx, sy_bus_link_t *l, struct redisReply *reply);
} sy_bus_link_ops_t;

/* Starts TLS on a connected hiredis context (a redisContext *) to host:
 * 0, or -1 with a message in err (src/tls/sy_bus_tls.h; a build without
 * TLS has none). */
typedef int (*sy_bus_tls_attach_fn)(void *tls, void *redis_context, const char *host, char *err, size_t errlen);

typedef struct sy_bus_link_conf {
    const char *user; /* NULL: the default user */
    const char *pass; /* NULL: no AUTH */
    const char *name; /* CLIENT SETNAME */
    unsigned connect_timeout_ms;
    unsigned backoff_min_ms, backoff_max_ms;
    sy_bus_tls_attach_fn tls_attach; /* NULL: plain TCP */
    void *tls;
    /* Why the last TLS operation of this thread failed (OpenSSL's error
     * queue, which hiredis does not read), or NULL: a lost connection says
     * "certificate verify failed" rather than errno's "Success". */
    const char *(*tls_error)(char *buf, size_t len);
} sy_bus_link_conf_t;

typedef enum sy_bus_link_state {
    SY_LINK_IDLE = 0,   /* not connecting (stopped, or before the first connect) */
    SY_LINK_WAIT,       /* waiting out a backoff delay before connecting again */
    SY_LINK_CONNECTING, /* TCP connect under way */
    SY_LINK_HELLO,      /* HELLO sent, not answered yet */
    SY_LINK_UP,
} sy_bus_link_state_t;

struct sy_bus_link {
    const sy_bus_link_ops_t *ops;
    void *ctx;
    void *owner;   /* the caller's, untouched here */
    unsigned role; /* the caller's, untouched here */
    const sy_bus_link_conf_t *conf;
    sy_poll_t *poll;
    struct redisAsyncContext *ac;
    sy_bus_link_state_t state;
    bool registered; /* ac's fd is in the poller */
    uint32_t events; /* SY_POLL_* hiredis asked for */
    int fd;
    int64_t timer_ms;  /* hiredis' timer (the connect timeout); 0: none */
    int64_t retry_ms;  /* SY_LINK_WAIT: when to connect again */
    unsigned delay_ms; /* the next backoff delay */
    unsigned attempts; /* connects since the link was last up */
    uint32_t rng;
    char host[SY_BUS_HOST_MAX];
    uint16_t port;
    char err[SY_BUS_ERRLEN]; /* why the link last went down */
};

/* What an owner's links (the sentinels', the shards') are all made with:
 * the callbacks and their context, the credentials and TLS, the poller. */
typedef struct sy_bus_link_env {
    const sy_bus_link_ops_t *ops;
    void *ctx;
    const sy_bus_link_conf_t *lconf;
    sy_poll_t *poll;
} sy_bus_link_env_t;

/* Sets up a link to host:port (copied; too long a host is cut, and fails
 * to connect) in env (the pointers are kept). Connects at the first
 * sy_bus_link_tick. */
void sy_bus_link_init(sy_bus_link_t *l, const sy_bus_link_env_t *env, const char *host, uint16_t port, uint32_t seed);
/* Connects now when idle or waiting. */
void sy_bus_link_connect(sy_bus_link_t *l);
/* Closes the connection and leaves the link idle: no callback of ops
 * runs, but the reply callbacks of pending commands run with a NULL reply
 * (ac->data is the link). Not from a callback of this link's own context. */
void sy_bus_link_close(sy_bus_link_t *l);
/* Drops the connection as if it had failed with err: down, then a retry
 * after the backoff delay (a fresh delay: min, when reset is set). May be
 * called from the link's own callbacks (hiredis frees the context when it
 * returns). */
void sy_bus_link_fail(sy_bus_link_t *l, const char *err, bool reset);
/* The poller reported events (SY_POLL_*) for this link. */
void sy_bus_link_ready(sy_bus_link_t *l, uint32_t events);
/* Runs due timers (the connect timeout, the backoff); returns the next
 * deadline (ms, sy_clock_ms) or INT64_MAX. */
int64_t sy_bus_link_tick(sy_bus_link_t *l, int64_t now_ms);
/* The context when up, else NULL. */
struct redisAsyncContext *sy_bus_link_ac(sy_bus_link_t *l);
/* Appends a command (argv) to the output buffer without a reply callback:
 * for the sharded (un)subscribe commands, whose confirmations come as
 * pushes. 0, ENOTCONN (not up), ENOMEM. */
sy_err_t sy_bus_link_append(sy_bus_link_t *l, int argc, const char **argv, const size_t *lens);

#endif
