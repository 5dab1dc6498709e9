/*
 * sy_bus_chan — the bus' channel table: one entry per topic this node has
 * local interest in, or whose subscription is still to be undone, keyed
 * by the topic's name (the channel is the bus' prefix + the name). A
 * sy_strmap (base/sy_strmap.h) underneath.
 *
 * An entry carries what the other parts of the bus keep per channel: its
 * cluster slot (computed once, here), its subscription state (changed by
 * sy_bus_subs.h only) and each publisher's order (sy_bus_order.h, changed
 * by the bus thread's receive path only).
 *
 * Threads: the bus thread only (sy_bus_chans_init and _destroy: whichever
 * thread owns the bus then, before the thread starts or after it ended).
 *
 * Ownership: the table owns its entries; the prefix is the caller's and
 * must outlive the table.
 *
 * Errors: sy_bus_chans_init returns 0 or ENOMEM; sy_bus_chan_get and
 * sy_bus_chan_key return NULL when out of memory.
 */
#ifndef SY_BUS_CHAN_H
#define SY_BUS_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "base/sy_strmap.h"
#include "bus/sy_bus_order.h"
#include "bus/sy_bus_seq.h"

struct sy_bus_shard;

/* The nodes' control channel's name after the prefix (sy_bus_set_ctl): a
 * byte no UTF-8 text has, so no topic's. Not counted as a topic's
 * channel in the channels gauge. */
#define SY_BUS_CTL_NAME \
    "\xff"              \
    "nodes"
#define SY_BUS_CTL_NAME_LEN 6
static inline bool sy_bus_chan_is_ctl(const char *name, size_t len) {
    return len == SY_BUS_CTL_NAME_LEN && (unsigned char)name[0] == 0xffu;
}

typedef struct sy_bus_chan {
    sy_strmap_node_t node;
    unsigned slot; /* Redis Cluster's slot of prefix + name (sy_slot.h) */
    /* The subscription (sy_bus_subs.h). */
    struct sy_bus_shard *shard; /* where SSUBSCRIBE was sent (sent) */
    bool want;                  /* local interest */
    bool sent;                  /* SSUBSCRIBE sent and not undone */
    bool confirmed;             /* Redis said ssubscribe */
    bool dirty;                 /* on the dirty list */
    unsigned unsubs;            /* our SUNSUBSCRIBEs whose pushes have not come back */
    sy_bus_order_t order;       /* each publisher's last message delivered here */
    sy_bus_seq_chan_t seq;      /* the topic's position in Redis' sequence (sy_bus_seq.h) */
    size_t len;                 /* the name's (without the prefix) */
    char name[];
} sy_bus_chan_t;

typedef struct sy_bus_chans {
    sy_strmap_t map;
    const char *prefix; /* the caller's */
    size_t prefix_len;
} sy_bus_chans_t;

/* An empty table for channels named prefix + topic. 0 or ENOMEM. */
sy_err_t sy_bus_chans_init(sy_bus_chans_t *t, const char *prefix, size_t prefix_len);
/* Frees every channel and the table (a zero-filled table too). */
void sy_bus_chans_destroy(sy_bus_chans_t *t);

/* The channel of topic name[0..len), or NULL. */
sy_bus_chan_t *sy_bus_chan_find(const sy_bus_chans_t *t, const char *name, size_t len);
/* The channel of topic name[0..len), made (everything false) when missing;
 * NULL when out of memory. */
sy_bus_chan_t *sy_bus_chan_get(sy_bus_chans_t *t, const char *name, size_t len);
/* Takes c out of the table and frees it. */
void sy_bus_chan_remove(sy_bus_chans_t *t, sy_bus_chan_t *c);
/* The walk's next channel (it = SY_STRMAP_ITER_INIT to start), or NULL:
 * sy_strmap_next's rules (the returned channel may be removed). */
sy_bus_chan_t *sy_bus_chan_next(const sy_bus_chans_t *t, sy_strmap_iter_t *it);

/* The channel's name as Redis knows it: prefix + name[0..len), not
 * NUL-terminated (prefix_len + len bytes; sy_free it), or NULL when out
 * of memory. */
char *sy_bus_chan_key(const sy_bus_chans_t *t, const char *name, size_t len);

#endif
