/*
 * sy_bus_env — what a bus message carries on a Redis channel.
 *
 * A symphony node publishes its messages in an envelope of 18 bytes before
 * the payload: the byte 0xF5 (never valid in UTF-8, so no text message
 * starts with it), a flags byte (SY_BUS_ENV_BINARY, SY_BUS_ENV_COMPRESS),
 * the publishing node's 64-bit id and its sequence number (one counter
 * per node, incremented by every publish; both little-endian). A node
 * skips its own messages (it delivered them locally already); the
 * sequence lets a receiver drop a message that Redis brings after a newer
 * one of the same publisher and topic (a failover or slot migration can
 * reorder them), keeping each publisher's order.
 *
 * Anything else on a channel was published by another program (say
 * `SPUBLISH symphony:prices 42`): it is delivered as it is, as a text
 * message when it is valid UTF-8, else as a binary one.
 *
 * Threads: pure functions (sy_bus_publish's thread writes, the bus
 * thread reads).
 *
 * Ownership: nothing allocated; a message read points into the bytes
 * given (m->payload), valid as long as they are.
 *
 * Errors: sy_bus_env_read answers with its kind (SY_BUS_ENV_BAD for a
 * broken envelope); writing cannot fail.
 */
#ifndef SY_BUS_ENV_H
#define SY_BUS_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SY_BUS_ENV_MAGIC 0xF5u
#define SY_BUS_ENV_LEN 18u
#define SY_BUS_ENV_BINARY 1u   /* a binary message (else text) */
#define SY_BUS_ENV_COMPRESS 2u /* may go compressed (the publisher did not say compress: false) */
/* The payload begins with the publish's extras (sy_server_publish.c: a
 * registered protocol's meta, such as Pusher's event name, and the
 * connection to leave out), read by the owner's side, not the bus. */
#define SY_BUS_ENV_META 4u

typedef enum sy_bus_env_kind {
    SY_BUS_ENV_DELIVER = 0, /* deliver payload with flags */
    SY_BUS_ENV_OWN,         /* this node's own message: skip it */
    SY_BUS_ENV_BAD,         /* an envelope that is cut short or has unknown flags */
} sy_bus_env_kind_t;

/* What an envelope said (from: 0 and seq: 0 for another program's message). */
typedef struct sy_bus_env_msg {
    const uint8_t *payload;
    size_t len;
    unsigned flags; /* SY_BUS_ENV_* */
    uint64_t from;  /* the publishing node */
    uint64_t seq;   /* its sequence number (> 0) */
} sy_bus_env_msg_t;

/* Writes the envelope of message seq of node with flags (SY_BUS_ENV_*). */
void sy_bus_env_write(uint8_t out[SY_BUS_ENV_LEN], uint64_t node, uint64_t seq, unsigned flags);
/* Reads a channel message p[0..len) as seen by node into *m. */
sy_bus_env_kind_t sy_bus_env_read(const uint8_t *p, size_t len, uint64_t node, sy_bus_env_msg_t *m);

#endif
