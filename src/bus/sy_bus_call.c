/* sy_bus_call — a Redis command of the owner's and its reply (sy_bus_call.h). */
#include "bus/sy_bus_call.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_buf.h"

sy_bus_call_t *sy_bus_call_new(const char *route, size_t route_len, unsigned argc, const char *const *argv,
                               const size_t *lens, sy_bus_call_fn done, void *ctx) {
    if (argc == 0 || argc > SY_BUS_CALL_ARGS_MAX)
        return NULL;
    size_t total = route_len + 1;
    for (unsigned i = 0; i < argc; i++)
        total += lens[i] + 1;
    /* One allocation: the struct, argv, lens, then the bytes. */
    size_t head = sizeof(sy_bus_call_t) + argc * (sizeof(char *) + sizeof(size_t));
    sy_bus_call_t *c = sy_malloc(head + total);
    if (c == NULL)
        return NULL;
    *c = (sy_bus_call_t){.done = done, .ctx = ctx, .argc = argc, .route_len = route_len};
    c->argv = (const char **)(c + 1);
    c->lens = (size_t *)(c->argv + argc);
    c->route = (char *)c + head;
    char *p = c->route;
    memcpy(p, route, route_len);
    p[route_len] = '\0';
    p += route_len + 1;
    for (unsigned i = 0; i < argc; i++) {
        memcpy(p, argv[i], lens[i]);
        p[lens[i]] = '\0';
        c->argv[i] = p;
        c->lens[i] = lens[i];
        p += lens[i] + 1;
    }
    return c;
}

static sy_err_t put(uint8_t **data, size_t *len, size_t *cap, const void *p, size_t n) {
    return sy_buf_append(data, len, cap, p, n, 64);
}

static sy_err_t put_u32(uint8_t **data, size_t *len, size_t *cap, uint8_t tag, uint64_t n) {
    uint8_t h[5] = {tag, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    return n > UINT32_MAX ? ENOMEM : put(data, len, cap, h, sizeof(h));
}

static sy_err_t put_str(uint8_t **data, size_t *len, size_t *cap, uint8_t tag, const char *s, size_t n) {
    sy_err_t rc = put_u32(data, len, cap, tag, n);
    return rc != 0 ? rc : put(data, len, cap, s, n);
}

sy_err_t sy_bus_reply_encode(const redisReply *r, uint8_t **data, size_t *len, size_t *cap) {
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_VERB:
    case REDIS_REPLY_DOUBLE:
    case REDIS_REPLY_BIGNUM:
        return put_str(data, len, cap, 's', r->str, r->len);
    case REDIS_REPLY_ERROR:
        return put_str(data, len, cap, 'e', r->str, r->len);
    case REDIS_REPLY_INTEGER:
    case REDIS_REPLY_BOOL: {
        uint64_t v = (uint64_t)r->integer;
        uint8_t h[9] = {'i'};
        for (int i = 0; i < 8; i++)
            h[1 + i] = (uint8_t)(v >> (8 * i));
        return put(data, len, cap, h, sizeof(h));
    }
    case REDIS_REPLY_ARRAY:
    case REDIS_REPLY_MAP:
    case REDIS_REPLY_SET:
    case REDIS_REPLY_PUSH: {
        sy_err_t rc = put_u32(data, len, cap, 'a', r->elements);
        for (size_t i = 0; rc == 0 && i < r->elements; i++)
            rc = sy_bus_reply_encode(r->element[i], data, len, cap);
        return rc;
    }
    default:
        return put(data, len, cap, "n", 1);
    }
}

void sy_bus_call_end(sy_bus_call_t *c, const redisReply *r, const char *why) {
    uint8_t *data = NULL;
    size_t len = 0, cap = 0;
    sy_err_t rc =
        r != NULL ? sy_bus_reply_encode(r, &data, &len, &cap) : put_str(&data, &len, &cap, 'x', why, strlen(why));
    if (rc != 0) {
        len = 0;
        static const char oom[] = "symphony: out of memory for the reply";
        if (put_str(&data, &len, &cap, 'x', oom, sizeof(oom) - 1) != 0) {
            sy_free(data);
            data = NULL;
            len = 0; /* the callee sees an empty reply: nothing could be said */
        }
    }
    c->done(c->ctx, data, len);
    sy_free(c);
}
