/*
 * sy_bus_call — one Redis command of the owner's, run on the bus' own
 * connections (sy_bus_call in sy_bus.h queues it; the bus thread sends
 * it), and its reply in a form that can cross to another thread.
 *
 * A call names a route: a key or a shard channel. It goes on the
 * publishing connection of the node that serves the route's cluster slot
 * (on a standalone Redis, the one publishing connection), so a script on
 * a topic's keys runs where they live. A MOVED or ASK answer is followed
 * (SY_BUS_REDIRECTS_MAX times, to a node the bus has a connection to);
 * anything else ends the call.
 *
 * The reply, encoded (sy_bus_reply_encode): one value, each value a tag
 * byte then its body, integers little-endian:
 *   's' u32 n, n bytes    a string (bulk, status, verbatim; a double as text)
 *   'e' u32 n, n bytes    an error reply
 *   'i' i64               an integer (a boolean: 0 or 1)
 *   'n'                   nil
 *   'a' u32 n, n values   an array (a map or a set: its elements in order)
 *   'x' u32 n, n bytes    no reply: the call ended without one (the
 *                         connection went, the bus stopped, the command
 *                         could not be sent), and why
 *
 * Threads: sy_bus_call_new on any thread; the rest on the bus thread (or
 * the owner's once the bus thread ended).
 *
 * Ownership: a call copies its route and arguments. Its done callback
 * takes the encoded reply (sy_malloc'ed) over; the call is freed after it.
 *
 * Errors: sy_bus_call_new returns NULL when out of memory;
 * sy_bus_reply_encode returns 0 or ENOMEM.
 */
#ifndef SY_BUS_CALL_H
#define SY_BUS_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

struct redisReply;

/* A call ended: reply[0..len) as above, the callee's to free (sy_free). */
typedef void (*sy_bus_call_fn)(void *ctx, uint8_t *reply, size_t len);

#define SY_BUS_CALL_ARGS_MAX 64

typedef struct sy_bus_call {
    struct sy_bus_call *next;
    sy_bus_call_fn done;
    void *ctx;
    unsigned redirects;
    bool sub; /* sent on the subscribing connection of the route's shard, not the publishing one
                 (sy_bus_ctl_fence): not redirected; any reply but PONG fails that connection */
    unsigned argc;
    size_t route_len;
    const char **argv; /* argc, in the same allocation */
    size_t *lens;
    char *route; /* then each argument, NUL-terminated */
} sy_bus_call_t;

/* A call of argc (1..SY_BUS_CALL_ARGS_MAX) arguments routed by
 * route[0..route_len); NULL when out of memory. */
sy_bus_call_t *sy_bus_call_new(const char *route, size_t route_len, unsigned argc, const char *const *argv,
                               const size_t *lens, sy_bus_call_fn done, void *ctx);
/* The call's route. */
static inline const char *sy_bus_call_route(const sy_bus_call_t *c) { return c->route; }
/* Ends c with Redis' reply r, or (r NULL) with an error saying why, and
 * frees it. */
void sy_bus_call_end(sy_bus_call_t *c, const struct redisReply *r, const char *why);
/* Appends r encoded to data[0..*len) (capacity *cap). 0 or ENOMEM. */
sy_err_t sy_bus_reply_encode(const struct redisReply *r, uint8_t **data, size_t *len, size_t *cap);

#endif
