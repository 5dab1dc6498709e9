/*
 * sy_bus_sentinel_reply — what the bus reads from Redis Sentinel and from
 * the primary it names (sy_bus_sentinel.h), as pure functions over hiredis'
 * parsed replies and the bytes of an event:
 *   - `SENTINEL get-master-addr-by-name <name>`: [host, port] (bulk
 *     strings), or a null (no primary of that name);
 *   - `ROLE`: [role, ...], the first element "master", "slave" or
 *     "sentinel";
 *   - the `+switch-master` event (a message on that channel):
 *     "<name> <old host> <old port> <new host> <new port>".
 * Fuzzed (__test__/fuzz/fuzz_bus.c, behind hiredis' reply reader) and
 * tested (__test__/c/test_bus_sentinel.c).
 *
 * Threads: pure functions (the bus thread calls them).
 *
 * Ownership: replies and bytes are only read; an address is copied into
 * the caller's sy_bus_sentinel_addr_t.
 *
 * Errors: none; each function says what it found.
 */
#ifndef SY_BUS_SENTINEL_REPLY_H
#define SY_BUS_SENTINEL_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus/sy_bus_link.h"

struct redisReply;

typedef struct sy_bus_sentinel_addr {
    char host[SY_BUS_HOST_MAX]; /* NUL-terminated, no NUL or space inside */
    uint16_t port;              /* 1..65535 */
} sy_bus_sentinel_addr_t;

typedef enum sy_bus_sentinel_answer {
    SY_SENTINEL_ADDR = 0,  /* an address (in *out) */
    SY_SENTINEL_UNKNOWN,   /* a null: the sentinel monitors no primary of that name */
    SY_SENTINEL_ERROR,     /* an error reply (its text is the reply's) */
    SY_SENTINEL_MALFORMED, /* anything else */
} sy_bus_sentinel_answer_t;

/* Reads the answer to SENTINEL get-master-addr-by-name. */
sy_bus_sentinel_answer_t sy_bus_sentinel_read_addr(const struct redisReply *r, sy_bus_sentinel_addr_t *out);

typedef enum sy_bus_sentinel_role {
    SY_ROLE_PRIMARY = 0, /* "master" */
    SY_ROLE_OTHER,       /* "slave", "sentinel", anything else named */
    SY_ROLE_MALFORMED,   /* not a ROLE reply (an error included) */
} sy_bus_sentinel_role_t;

/* Reads the answer to ROLE. */
sy_bus_sentinel_role_t sy_bus_sentinel_read_role(const struct redisReply *r);

/* Reads a +switch-master event's text (msg[0..len), not NUL-terminated):
 * true, with the new primary in *out, when it is about the primary named
 * name[0..name_len) and well formed. */
bool sy_bus_sentinel_read_switch(const char *msg, size_t len, const char *name, size_t name_len,
                                 sy_bus_sentinel_addr_t *out);

/* Reads a pub/sub message as hiredis gives it to a subscription's callback
 * (["message", channel, text], RESP2 array or RESP3 push): true, with the
 * new primary in *out, when it is a +switch-master event about name (as
 * sy_bus_sentinel_read_switch). */
bool sy_bus_sentinel_read_event(const struct redisReply *r, const char *name, size_t name_len,
                                sy_bus_sentinel_addr_t *out);

#endif
