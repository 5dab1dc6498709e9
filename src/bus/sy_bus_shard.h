/*
 * sy_bus_shard — where the bus' commands go: its shards (one Redis
 * primary each, with a publishing and a subscribing connection,
 * sy_bus_link.h) and, with a cluster, the slot map that names each slot's
 * shard and the control connection that reads it.
 *
 * Standalone: one shard, the one seed, made by sy_bus_shards_start.
 * Sentinel: one shard too, made (and moved) by sy_bus_shards_place at the
 * address Sentinel gives (sy_bus_sentinel.h); none before the first.
 * Cluster: the map comes from CLUSTER SLOTS on the control link (to a seed,
 * then any known node, round robin, each time that link goes down). A map
 * is applied in two steps so that the channels can follow it in between
 * (sy_bus_subs_rehome): sy_bus_shards_stage builds the next set (shards
 * whose host:port stays keep their connections; new ones start
 * connecting), sy_bus_shards_commit installs it and closes the shards
 * left out. A MOVED reply points its slot at the named shard at once
 * (sy_bus_shards_redirect). The map is read again when wanted
 * (sy_bus_shards_want_map), every 500 ms while the bus is not up, and
 * every 5 s otherwise.
 *
 * The links' callbacks go to the ops and ctx of the conf's links;
 * each link's role (SY_BUS_ROLE_*) and owner (its sy_bus_shard_t, or
 * NULL for the control link) say which one called.
 *
 * Threads: sy_bus_shards_init on the owner's thread before the bus thread
 * starts; everything else on the bus thread.
 *
 * Ownership: the shards own their shards and links; the conf's pointers
 * are the caller's and must outlive them.
 *
 * Errors: sy_bus_shards_start returns 0 or ENOMEM; sy_bus_shards_stage 0,
 * EINVAL (not a slot map) or ENOMEM, and then changes nothing. A link's
 * failures go to ops->down and the link reconnects by itself.
 */
#ifndef SY_BUS_SHARD_H
#define SY_BUS_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "bus/sy_bus_link.h"
#include "net/sy_poll.h"

struct redisAsyncContext;
struct redisReply;

/* sy_bus_link_t.role of the bus' links. */
enum { SY_BUS_ROLE_PUB = 0, SY_BUS_ROLE_SUB = 1, SY_BUS_ROLE_CFG = 2 };

typedef struct sy_bus_shard {
    sy_bus_link_t pub; /* SPUBLISH, with a reply callback each */
    sy_bus_link_t sub; /* SSUBSCRIBE / SUNSUBSCRIBE only; everything comes as pushes */
} sy_bus_shard_t;

/* A set of shards and, with a cluster, each slot's. */
typedef struct sy_bus_shard_set {
    sy_bus_shard_t **shards;
    unsigned n;
    sy_bus_shard_t **slot; /* [SY_SLOTS] (cluster only): the slot's shard, or NULL */
    bool complete;         /* every slot has a shard (standalone: the one shard is there) */
} sy_bus_shard_set_t;

typedef struct sy_bus_shards_conf {
    bool cluster;
    bool sentinel;      /* the one shard's address comes from sy_bus_shards_place */
    char *const *hosts; /* the seeds */
    const uint16_t *ports;
    unsigned nseeds;
    sy_bus_link_env_t links;
    uint32_t seed; /* the links' jitter */
} sy_bus_shards_conf_t;

typedef struct sy_bus_shards {
    sy_bus_shards_conf_t conf;
    uint32_t rng;
    sy_bus_shard_set_t set; /* the shards now */
    sy_bus_link_t cfg;      /* cluster: the slot map's connection */
    unsigned cfg_next;      /* the next node to ask, round robin over seeds then shards */
    bool map_pending;       /* CLUSTER SLOTS sent, not answered */
    bool map_wanted;        /* read the map as soon as the control link is up */
    int64_t map_due_ms;
} sy_bus_shards_t;

/* Remembers conf; no connection yet. */
void sy_bus_shards_init(sy_bus_shards_t *sh, const sy_bus_shards_conf_t *conf);
/* Starts connecting: the one shard (standalone), or the control link
 * (cluster; shards follow the map); with Sentinel, nothing yet. 0 or
 * ENOMEM. */
sy_err_t sy_bus_shards_start(sy_bus_shards_t *sh);
/* Closes every link (pending publishes' reply callbacks run with a NULL
 * reply) and frees the shards and the map. No link callback runs. */
void sy_bus_shards_close(sy_bus_shards_t *sh);

/* Sentinel: the one shard's primary is at host:port. Makes the shard when
 * there is none (0, or ENOMEM); when it is elsewhere, moves its links: each
 * goes down (ops->down with why, its pending publishes' callbacks run with
 * a NULL reply) and connects to host:port at once. 0 when nothing changed
 * too; *moved says whether it did. Not from a callback of the shard's own
 * links. */
sy_err_t sy_bus_shards_place(sy_bus_shards_t *sh, const char *host, uint16_t port, const char *why, bool *moved);

/* Runs the links' timers; returns the next deadline (ms) or INT64_MAX. */
int64_t sy_bus_shards_tick(sy_bus_shards_t *sh, int64_t now);
/* True when every shard's links are up (and a cluster's map is complete). */
bool sy_bus_shards_up(const sy_bus_shards_t *sh);
/* True when no publish waits to be written or answered. */
bool sy_bus_shards_idle(sy_bus_shards_t *sh);

/* The shard to SPUBLISH channel key[0..len) to, or NULL (none yet). */
sy_bus_shard_t *sy_bus_shards_publish_target(const sy_bus_shards_t *sh, const char *key, size_t len);
/* The shard to SSUBSCRIBE a channel of slot to, or NULL: none yet, or (cluster)
 * a fresher map is on its way, and a channel Redis unsubscribed (its slot
 * moved) would go back to the old node. */
sy_bus_shard_t *sy_bus_shards_sub_target(const sy_bus_shards_t *sh, unsigned slot);

/* Cluster: read the map again soon (no-op standalone). */
void sy_bus_shards_want_map(sy_bus_shards_t *sh);
/* The same, asking shard s's node (the control link moves there): s has
 * just said one of its slots moved, so it knows where, when the node the
 * control link reaches may not have heard yet. */
void sy_bus_shards_want_map_from(sy_bus_shards_t *sh, sy_bus_shard_t *s);
/* Cluster: sends CLUSTER SLOTS on the control link when the map is wanted
 * or due and no read is pending; done gets the reply (privdata NULL).
 * up: the bus is up (the next read is due in 5 s, else in 500 ms). */
void sy_bus_shards_read_map(sy_bus_shards_t *sh, int64_t now, bool up,
                            void (*done)(struct redisAsyncContext *ac, void *reply, void *priv));
/* The read sent by sy_bus_shards_read_map was answered (failed: with an
 * error; the next read is then due in 500 ms). */
void sy_bus_shards_map_answered(sy_bus_shards_t *sh, bool failed, int64_t now);
/* The control link went down: the next connect asks another node. */
void sy_bus_shards_cfg_down(sy_bus_shards_t *sh, sy_bus_link_t *l);

/* Builds the set a CLUSTER SLOTS reply describes (asked_host: the node
 * asked) into *next, taking over the current shards it keeps. 0, EINVAL,
 * ENOMEM. On 0, sy_bus_shards_commit must follow, before anything else
 * uses sh. */
sy_err_t sy_bus_shards_stage(sy_bus_shards_t *sh, const struct redisReply *r, const char *asked_host,
                             sy_bus_shard_set_t *next);
/* True when s is one of set's shards. */
bool sy_bus_shard_set_has(const sy_bus_shard_set_t *set, const sy_bus_shard_t *s);
/* Installs next (taken over) as the current set; shards no longer in it
 * are closed (their pending publishes count as dropped) and freed. */
void sy_bus_shards_commit(sy_bus_shards_t *sh, sy_bus_shard_set_t *next);
/* A redirection ("MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>"):
 * the shard at host:port, or NULL when it is none of the shards (a replica
 * promoted since the map was read) or err is neither. A MOVED also points
 * the slot there, so that the slot's publishes go there at once; an ASK
 * (a slot migrating) names the node for this one command only. */
sy_bus_shard_t *sy_bus_shards_redirect(sy_bus_shards_t *sh, const char *err);

#endif
