/* sy_bus_shard — see sy_bus_shard.h. */
#include "bus/sy_bus_shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>

#include "base/sy_alloc.h"
#include "bus/sy_bus_map.h"
#include "bus/sy_slot.h"

#define BUS_REFRESH_UP_MS 5000
#define BUS_REFRESH_DOWN_MS 500

static void shard_free(sy_bus_shard_t *s) {
    sy_bus_link_close(&s->pub);
    sy_bus_link_close(&s->sub);
    sy_free(s);
}

static sy_bus_shard_t *shard_new(sy_bus_shards_t *sh, const char *host, uint16_t port) {
    const sy_bus_shards_conf_t *c = &sh->conf;
    sy_bus_shard_t *s = sy_calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    sy_bus_link_init(&s->pub, &c->links, host, port, sh->rng++);
    sy_bus_link_init(&s->sub, &c->links, host, port, sh->rng++);
    s->pub.owner = s->sub.owner = s;
    s->pub.role = SY_BUS_ROLE_PUB;
    s->sub.role = SY_BUS_ROLE_SUB;
    sy_bus_link_connect(&s->pub);
    sy_bus_link_connect(&s->sub);
    return s;
}

void sy_bus_shards_init(sy_bus_shards_t *sh, const sy_bus_shards_conf_t *conf) {
    memset(sh, 0, sizeof(*sh));
    sh->conf = *conf;
    sh->rng = conf->seed;
}

sy_err_t sy_bus_shards_start(sy_bus_shards_t *sh) {
    const sy_bus_shards_conf_t *c = &sh->conf;
    if (c->sentinel)
        return 0; /* sy_bus_shards_place, at Sentinel's first answer */
    if (!c->cluster) {
        sy_bus_shard_t **one = sy_calloc(1, sizeof(*one));
        if (one == NULL || (one[0] = shard_new(sh, c->hosts[0], c->ports[0])) == NULL) {
            sy_free(one);
            return ENOMEM;
        }
        sh->set = (sy_bus_shard_set_t){.shards = one, .n = 1, .complete = true};
        return 0;
    }
    sy_bus_link_init(&sh->cfg, &c->links, c->hosts[0], c->ports[0], sh->rng++);
    sh->cfg.role = SY_BUS_ROLE_CFG;
    sh->cfg_next = 1;
    sh->map_wanted = true;
    sy_bus_link_connect(&sh->cfg);
    return 0;
}

/* Moves l to host:port: down now (with why), then connecting there. */
static void move_link(sy_bus_link_t *l, const char *host, uint16_t port, const char *why) {
    sy_bus_link_fail(l, why, true); /* no-op when it is down already */
    snprintf(l->host, sizeof(l->host), "%s", host);
    l->port = port;
    sy_bus_link_connect(l);
}

sy_err_t sy_bus_shards_place(sy_bus_shards_t *sh, const char *host, uint16_t port, const char *why, bool *moved) {
    *moved = false;
    if (sh->set.n == 0) {
        sy_bus_shard_t **one = sy_calloc(1, sizeof(*one));
        if (one == NULL || (one[0] = shard_new(sh, host, port)) == NULL) {
            sy_free(one);
            return ENOMEM;
        }
        sh->set = (sy_bus_shard_set_t){.shards = one, .n = 1, .complete = true};
        *moved = true;
        return 0;
    }
    sy_bus_shard_t *s = sh->set.shards[0];
    if (s->pub.port == port && strcmp(s->pub.host, host) == 0)
        return 0;
    move_link(&s->pub, host, port, why);
    move_link(&s->sub, host, port, why);
    *moved = true;
    return 0;
}

void sy_bus_shards_close(sy_bus_shards_t *sh) {
    for (unsigned i = 0; i < sh->set.n; i++)
        shard_free(sh->set.shards[i]);
    sy_free(sh->set.shards);
    sy_free(sh->set.slot);
    sh->set = (sy_bus_shard_set_t){0};
    if (sh->conf.cluster)
        sy_bus_link_close(&sh->cfg);
}

int64_t sy_bus_shards_tick(sy_bus_shards_t *sh, int64_t now) {
    int64_t next = INT64_MAX, t;
    for (unsigned i = 0; i < sh->set.n; i++) {
        if ((t = sy_bus_link_tick(&sh->set.shards[i]->pub, now)) < next)
            next = t;
        if ((t = sy_bus_link_tick(&sh->set.shards[i]->sub, now)) < next)
            next = t;
    }
    if (sh->conf.cluster) {
        if ((t = sy_bus_link_tick(&sh->cfg, now)) < next)
            next = t;
        if (sh->map_due_ms < next)
            next = sh->map_due_ms;
    }
    return next;
}

bool sy_bus_shards_up(const sy_bus_shards_t *sh) {
    bool up = sh->set.n > 0 && sh->set.complete;
    for (unsigned i = 0; up && i < sh->set.n; i++)
        up = sh->set.shards[i]->pub.state == SY_LINK_UP && sh->set.shards[i]->sub.state == SY_LINK_UP;
    return up;
}

bool sy_bus_shards_idle(sy_bus_shards_t *sh) {
    for (unsigned i = 0; i < sh->set.n; i++) {
        redisAsyncContext *ac = sy_bus_link_ac(&sh->set.shards[i]->pub);
        if (ac != NULL && (ac->replies.head != NULL || sdslen(ac->c.obuf) > 0))
            return false;
    }
    return true;
}

sy_bus_shard_t *sy_bus_shards_publish_target(const sy_bus_shards_t *sh, const char *key, size_t len) {
    if (!sh->conf.cluster)
        return sh->set.n ? sh->set.shards[0] : NULL;
    return sh->set.complete ? sh->set.slot[sy_slot_of(key, len)] : NULL;
}

sy_bus_shard_t *sy_bus_shards_sub_target(const sy_bus_shards_t *sh, unsigned slot) {
    if (!sh->conf.cluster)
        return sh->set.n ? sh->set.shards[0] : NULL;
    return sh->set.complete && !sh->map_pending && !sh->map_wanted ? sh->set.slot[slot] : NULL;
}

void sy_bus_shards_want_map(sy_bus_shards_t *sh) {
    if (sh->conf.cluster)
        sh->map_wanted = true;
}

void sy_bus_shards_want_map_from(sy_bus_shards_t *sh, sy_bus_shard_t *s) {
    if (!sh->conf.cluster)
        return;
    sh->map_wanted = true;
    if (sh->cfg.port == s->pub.port && strcmp(sh->cfg.host, s->pub.host) == 0)
        return;
    /* The control link moves to s (a read pending on it is answered NULL:
     * sy_bus_shards_map_answered); the map is read once it is up. Not s's
     * own links: a map read there could free s in its own callback. */
    sy_bus_link_close(&sh->cfg);
    snprintf(sh->cfg.host, sizeof(sh->cfg.host), "%s", s->pub.host);
    sh->cfg.port = s->pub.port;
    sy_bus_link_connect(&sh->cfg);
}

void sy_bus_shards_read_map(sy_bus_shards_t *sh, int64_t now, bool up,
                            void (*done)(struct redisAsyncContext *ac, void *reply, void *priv)) {
    if (!sh->conf.cluster || sh->map_pending)
        return;
    if (now >= sh->map_due_ms)
        sh->map_wanted = true;
    if (!sh->map_wanted)
        return;
    redisAsyncContext *ac = sy_bus_link_ac(&sh->cfg);
    if (ac == NULL)
        return; /* connecting (or backing off); asked again when up */
    if (redisAsyncCommand(ac, done, NULL, "CLUSTER SLOTS") != REDIS_OK)
        return;
    sh->map_wanted = false;
    sh->map_pending = true;
    sh->map_due_ms = now + (up ? BUS_REFRESH_UP_MS : BUS_REFRESH_DOWN_MS);
}

void sy_bus_shards_map_answered(sy_bus_shards_t *sh, bool failed, int64_t now) {
    sh->map_pending = false;
    if (failed)
        sh->map_due_ms = now + BUS_REFRESH_DOWN_MS;
}

void sy_bus_shards_cfg_down(sy_bus_shards_t *sh, sy_bus_link_t *l) {
    const sy_bus_shards_conf_t *c = &sh->conf;
    sh->map_pending = false;
    sh->map_wanted = true;
    unsigned n = c->nseeds + sh->set.n;
    unsigned i = sh->cfg_next++ % n;
    const char *host = i < c->nseeds ? c->hosts[i] : sh->set.shards[i - c->nseeds]->pub.host;
    uint16_t port = i < c->nseeds ? c->ports[i] : sh->set.shards[i - c->nseeds]->pub.port;
    snprintf(l->host, sizeof(l->host), "%s", host);
    l->port = port;
}

/* The shard at host:port: one of next already, or a current one taken
 * over (its connections kept; its place in the current set emptied), or
 * a new one. NULL when out of memory. */
static sy_bus_shard_t *shard_for(sy_bus_shards_t *sh, sy_bus_shard_set_t *next, const char *host, uint16_t port) {
    for (unsigned i = 0; i < next->n; i++)
        if (next->shards[i]->pub.port == port && strcmp(next->shards[i]->pub.host, host) == 0)
            return next->shards[i];
    sy_bus_shard_t *s = NULL;
    for (unsigned i = 0; i < sh->set.n; i++) {
        sy_bus_shard_t *cur = sh->set.shards[i];
        if (cur != NULL && cur->pub.port == port && strcmp(cur->pub.host, host) == 0) {
            s = cur;
            sh->set.shards[i] = NULL; /* taken over */
            break;
        }
    }
    if (s == NULL && (s = shard_new(sh, host, port)) == NULL)
        return NULL;
    next->shards[next->n++] = s;
    return s;
}

sy_err_t sy_bus_shards_stage(sy_bus_shards_t *sh, const struct redisReply *r, const char *asked_host,
                             sy_bus_shard_set_t *next) {
    sy_bus_map_t *map = sy_malloc(sizeof(*map));
    if (map == NULL)
        return ENOMEM;
    sy_err_t rc = sy_bus_map_read(map, r, asked_host);
    if (rc != 0) {
        sy_bus_map_free(map);
        sy_free(map);
        return rc;
    }
    *next = (sy_bus_shard_set_t){0};
    next->shards = sy_calloc(map->nnodes + 1, sizeof(*next->shards));
    next->slot = sy_calloc(SY_SLOTS, sizeof(*next->slot));
    sy_bus_shard_t **by_node = sy_calloc(map->nnodes + 1, sizeof(*by_node));
    if (next->shards == NULL || next->slot == NULL || by_node == NULL) {
        sy_free(next->shards);
        sy_free(next->slot);
        sy_free(by_node);
        sy_bus_map_free(map);
        sy_free(map);
        return ENOMEM;
    }
    for (unsigned i = 0; i < map->nnodes; i++)
        by_node[i] = shard_for(sh, next, map->nodes[i].host, map->nodes[i].port);
    bool complete = map->complete;
    for (unsigned k = 0; k < SY_SLOTS; k++) {
        next->slot[k] = map->slot[k] == SY_BUS_MAP_NONE ? NULL : by_node[map->slot[k]];
        complete = complete && next->slot[k] != NULL;
    }
    next->complete = complete;
    sy_free(by_node);
    sy_bus_map_free(map);
    sy_free(map);
    return 0;
}

bool sy_bus_shard_set_has(const sy_bus_shard_set_t *set, const sy_bus_shard_t *s) {
    for (unsigned i = 0; i < set->n; i++)
        if (set->shards[i] == s)
            return true;
    return false;
}

void sy_bus_shards_commit(sy_bus_shards_t *sh, sy_bus_shard_set_t *next) {
    for (unsigned i = 0; i < sh->set.n; i++)
        if (sh->set.shards[i] != NULL)
            shard_free(sh->set.shards[i]);
    sy_free(sh->set.shards);
    sy_free(sh->set.slot);
    sh->set = *next;
    *next = (sy_bus_shard_set_t){0};
}

/* Publishes to a moved slot go to its new owner now, as cluster clients do,
 * rather than to the old owner until the map is read again (a map read
 * answered by a node that has not heard of the move yet could otherwise
 * keep them going to the old owner, each one dropped). */
sy_bus_shard_t *sy_bus_shards_redirect(sy_bus_shards_t *sh, const char *err) {
    unsigned slot = 0;
    int at = 0;
    bool moved = strncmp(err, "MOVED ", 6) == 0;
    if (sh->set.slot == NULL || (!moved && strncmp(err, "ASK ", 4) != 0) ||
        sscanf(err + (moved ? 6 : 4), "%u %n", &slot, &at) != 1 || at == 0 || slot >= SY_SLOTS)
        return NULL;
    const char *addr = err + (moved ? 6 : 4) + at;
    const char *colon = strrchr(addr, ':'); /* the last one: an IPv6 host has its own */
    char *end = NULL;
    unsigned long port = colon != NULL ? strtoul(colon + 1, &end, 10) : 0;
    if (colon == NULL || end == colon + 1 || *end != '\0' || port == 0 || port > 65535)
        return NULL;
    size_t hlen = (size_t)(colon - addr);
    for (unsigned i = 0; i < sh->set.n; i++) {
        sy_bus_shard_t *s = sh->set.shards[i];
        if (s != NULL && s->pub.port == port && strlen(s->pub.host) == hlen && memcmp(s->pub.host, addr, hlen) == 0) {
            if (moved)
                sh->set.slot[slot] = s;
            return s;
        }
    }
    return NULL;
}
