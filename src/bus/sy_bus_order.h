/*
 * sy_bus_order — each publisher's order on one channel, as the bus receives
 * it (sy_bus.h).
 *
 * Every message a symphony node publishes carries the node's id and its
 * next sequence number (sy_bus_env.h). Redis keeps one connection's order,
 * but in a failover or a slot migration a message the old primary took can
 * reach the new one's subscribers over the cluster bus after newer ones
 * published there directly. A channel remembers the last sequence number
 * it delivered for each of up to SY_BUS_ORDER_PUBLISHERS publishers; a
 * message not newer than that is late, and dropped. A new publisher takes
 * the place of the one heard from least recently.
 *
 * Threads: the caller's (the bus thread, which owns every channel).
 *
 * Ownership: nothing is kept but in the caller's sy_bus_order_t (inside
 * its channel); nothing here allocates.
 *
 * Errors: none: a late message is an answer (false), not a failure.
 */
#ifndef SY_BUS_ORDER_H
#define SY_BUS_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#define SY_BUS_ORDER_PUBLISHERS 8 /* publishers whose order a channel keeps track of */

typedef struct sy_bus_order {
    struct {
        uint64_t node, seq;
        uint64_t used; /* `uses` when last heard from; 0: a free entry */
    } last[SY_BUS_ORDER_PUBLISHERS];
    uint64_t uses; /* messages checked */
} sy_bus_order_t;

/* Zero-filled memory is an empty sy_bus_order_t. */

/* True when seq is newer than the last message of publisher `from` seen
 * here (which o then remembers); false when it is late. seq > 0. */
bool sy_bus_order_check(sy_bus_order_t *o, uint64_t from, uint64_t seq);

#endif
