/* sy_bus_sentinel — see sy_bus_sentinel.h. */
#include "bus/sy_bus_sentinel.h"

#include <stdio.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#define SENTINEL_ASK_UP_MS 5000
#define SENTINEL_ASK_DOWN_MS 500

void sy_bus_sentinel_init(sy_bus_sentinel_t *st, const sy_bus_sentinel_conf_t *conf) {
    memset(st, 0, sizeof(*st));
    st->conf = *conf;
    st->name_len = strlen(conf->name);
}

/* Both links aim at sentinel st->at (the ask link's next connect goes
 * there after its backoff; the watch link moves now). */
static void aim(sy_bus_sentinel_t *st) {
    const sy_bus_sentinel_conf_t *c = &st->conf;
    snprintf(st->ask.host, sizeof(st->ask.host), "%s", c->hosts[st->at]);
    st->ask.port = c->ports[st->at];
    if (st->watch.port == c->ports[st->at] && strcmp(st->watch.host, c->hosts[st->at]) == 0)
        return;
    sy_bus_link_close(&st->watch);
    snprintf(st->watch.host, sizeof(st->watch.host), "%s", c->hosts[st->at]);
    st->watch.port = c->ports[st->at];
    sy_bus_link_connect(&st->watch);
}

void sy_bus_sentinel_start(sy_bus_sentinel_t *st) {
    const sy_bus_sentinel_conf_t *c = &st->conf;
    sy_bus_link_init(&st->ask, &c->links, c->hosts[0], c->ports[0], c->seed);
    sy_bus_link_init(&st->watch, &c->links, c->hosts[0], c->ports[0], c->seed + 1);
    st->ask.owner = st->watch.owner = st;
    st->ask.role = SY_BUS_ROLE_SENTINEL;
    st->watch.role = SY_BUS_ROLE_WATCH;
    st->wanted = true;
    sy_bus_link_connect(&st->ask);
    sy_bus_link_connect(&st->watch);
}

void sy_bus_sentinel_close(sy_bus_sentinel_t *st) {
    sy_bus_link_close(&st->ask);
    sy_bus_link_close(&st->watch);
    st->pending = false;
}

int64_t sy_bus_sentinel_tick(sy_bus_sentinel_t *st, int64_t now) {
    int64_t next = sy_bus_link_tick(&st->ask, now), t = sy_bus_link_tick(&st->watch, now);
    if (t < next)
        next = t;
    if (st->ask.state == SY_LINK_UP && !st->pending && st->due_ms < next)
        next = st->due_ms;
    return next;
}

void sy_bus_sentinel_want(sy_bus_sentinel_t *st) { st->wanted = true; }

void sy_bus_sentinel_ask(sy_bus_sentinel_t *st, int64_t now, bool up,
                         void (*done)(struct redisAsyncContext *ac, void *reply, void *priv)) {
    if (st->pending)
        return;
    if (now >= st->due_ms)
        st->wanted = true;
    redisAsyncContext *ac = st->wanted ? sy_bus_link_ac(&st->ask) : NULL;
    if (ac == NULL)
        return; /* not wanted, or the link is connecting: asked once it is up */
    const char *argv[] = {"SENTINEL", "get-master-addr-by-name", st->conf.name};
    size_t lens[] = {8, 23, st->name_len};
    if (redisAsyncCommandArgv(ac, done, NULL, 3, argv, lens) != REDIS_OK)
        return; /* out of memory: tried again at the next turn */
    st->wanted = false;
    st->pending = true;
    st->due_ms = now + (up ? SENTINEL_ASK_UP_MS : SENTINEL_ASK_DOWN_MS);
}

/* Records why the sentinel at st->at failed. */
static void failed(sy_bus_sentinel_t *st, const char *host, uint16_t port, const char *err) {
    snprintf(st->why, sizeof(st->why),
             "Sentinel: no sentinel (of %u) gives the address of primary '%s'; last: %s:%u: %s", st->conf.n,
             st->conf.name, host, (unsigned)port, err);
}

bool sy_bus_sentinel_answered(sy_bus_sentinel_t *st, void *reply, sy_bus_sentinel_addr_t *out) {
    st->pending = false;
    if (reply == NULL)
        return false; /* the link went; its down callback says why */
    const redisReply *r = reply;
    char err[SY_BUS_ERRLEN];
    switch (sy_bus_sentinel_read_addr(r, out)) {
    case SY_SENTINEL_ADDR:
        st->failed = 0;
        st->why[0] = '\0';
        return true;
    case SY_SENTINEL_UNKNOWN:
        snprintf(err, sizeof(err), "monitors no primary named '%s'", st->conf.name);
        break;
    case SY_SENTINEL_ERROR:
        snprintf(err, sizeof(err), "%s", r->str);
        break;
    case SY_SENTINEL_MALFORMED:
        snprintf(err, sizeof(err), "answered SENTINEL get-master-addr-by-name with no address");
        break;
    }
    /* The next sentinel may know: the ask link goes down (counted there,
     * and moved) and connects to it after its backoff delay. */
    sy_bus_link_fail(&st->ask, err, false);
    return false;
}

/* The watch link's subscription: a +switch-master about our primary wants
 * its address at once (the answer moves the data links). NULL: the link
 * went. */
static void on_event(redisAsyncContext *ac, void *reply, void *priv) {
    (void)priv;
    sy_bus_link_t *l = ac->data;
    sy_bus_sentinel_t *st = l != NULL ? l->owner : NULL;
    sy_bus_sentinel_addr_t a;
    if (st != NULL && reply != NULL && sy_bus_sentinel_read_event(reply, st->conf.name, st->name_len, &a))
        st->wanted = true;
}

void sy_bus_sentinel_up(sy_bus_sentinel_t *st, sy_bus_link_t *l) {
    if (l != &st->watch) {
        st->wanted = true; /* a sentinel we had not asked yet */
        return;
    }
    redisAsyncContext *ac = sy_bus_link_ac(l);
    if (ac != NULL && redisAsyncCommand(ac, on_event, NULL, "SUBSCRIBE +switch-master") != REDIS_OK)
        sy_bus_link_fail(l, "out of memory", false);
}

void sy_bus_sentinel_down(sy_bus_sentinel_t *st, sy_bus_link_t *l, const char *err) {
    if (l != &st->ask)
        return; /* the watch link retries by itself, where the ask link is */
    st->pending = false;
    failed(st, l->host, l->port, err);
    if (st->failed < st->conf.n)
        st->failed++;
    st->at = (st->at + 1) % st->conf.n;
    aim(st);
}

unsigned sy_bus_sentinel_role_delay(sy_bus_sentinel_t *st) {
    const sy_bus_link_conf_t *lc = st->conf.links.lconf;
    unsigned d = st->role_delay ? st->role_delay : lc->backoff_min_ms;
    st->role_delay = d >= lc->backoff_max_ms / 2 ? lc->backoff_max_ms : d * 2;
    return d;
}

const char *sy_bus_sentinel_why(const sy_bus_sentinel_t *st) {
    return st->failed >= st->conf.n && st->why[0] != '\0' ? st->why : NULL;
}
