/*
 * sy_bus_map — a Redis Cluster's slot map as the bus reads it: the reply
 * of CLUSTER SLOTS ([[start, end, [host, port, id, ...], replicas...], ...],
 * parsed by hiredis) turned into the list of primaries and, per slot, the
 * index of its primary. Ranges that do not make sense (outside 0..16383,
 * start after end, no port) are skipped; an empty or "?" host means the
 * node that was asked. Fuzzed (__test__/fuzz/fuzz_bus.c, behind hiredis'
 * reply reader).
 *
 * Threads: pure functions (the bus thread calls them, sy_bus_shard.c).
 *
 * Ownership: a map owns its nodes array (sy_alloc); sy_bus_map_free frees
 * it, not the map itself. The reply is only read.
 *
 * Errors: sy_bus_map_read returns 0, EINVAL or ENOMEM.
 */
#ifndef SY_BUS_MAP_H
#define SY_BUS_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "bus/sy_slot.h"

#define SY_BUS_MAP_HOST_MAX 256
#define SY_BUS_MAP_NONE 0xffffu

typedef struct sy_bus_map_node {
    char host[SY_BUS_MAP_HOST_MAX];
    uint16_t port;
} sy_bus_map_node_t;

typedef struct sy_bus_map {
    sy_bus_map_node_t *nodes; /* the primaries, each once */
    unsigned nnodes;
    uint16_t slot[SY_SLOTS]; /* index into nodes, or SY_BUS_MAP_NONE */
    bool complete;           /* every slot has a primary */
} sy_bus_map_t;

struct redisReply;

/* Reads a CLUSTER SLOTS reply into m (asked_host: the node asked). 0,
 * EINVAL (not an array), ENOMEM. m is always safe to free after. */
sy_err_t sy_bus_map_read(sy_bus_map_t *m, const struct redisReply *r, const char *asked_host);
void sy_bus_map_free(sy_bus_map_t *m);

#endif
