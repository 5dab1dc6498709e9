#include "bus/sy_bus_map.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "base/sy_alloc.h"

static bool reply_int(const redisReply *r, long long *v) {
    if (r == NULL || r->type != REDIS_REPLY_INTEGER)
        return false;
    *v = r->integer;
    return true;
}

/* The index of host:port in m->nodes, added when new; -1: no memory. */
static int node_index(sy_bus_map_t *m, unsigned cap, const char *host, size_t host_len, uint16_t port) {
    for (unsigned i = 0; i < m->nnodes; i++)
        if (m->nodes[i].port == port && strlen(m->nodes[i].host) == host_len &&
            memcmp(m->nodes[i].host, host, host_len) == 0)
            return (int)i;
    if (m->nnodes == cap)
        return -1;
    sy_bus_map_node_t *n = &m->nodes[m->nnodes];
    snprintf(n->host, sizeof(n->host), "%.*s", (int)host_len, host);
    n->port = port;
    return (int)m->nnodes++;
}

sy_err_t sy_bus_map_read(sy_bus_map_t *m, const redisReply *r, const char *asked_host) {
    memset(m, 0, sizeof(*m));
    for (unsigned k = 0; k < SY_SLOTS; k++)
        m->slot[k] = SY_BUS_MAP_NONE;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return EINVAL;
    /* At most one primary per range, and never more than there are slots. */
    unsigned cap = r->elements < SY_SLOTS ? (unsigned)r->elements : SY_SLOTS;
    if (cap == 0)
        return 0;
    m->nodes = sy_calloc(cap, sizeof(*m->nodes));
    if (m->nodes == NULL)
        return ENOMEM;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        long long lo, hi, port;
        if (e == NULL || e->type != REDIS_REPLY_ARRAY || e->elements < 3 || !reply_int(e->element[0], &lo) ||
            !reply_int(e->element[1], &hi) || lo < 0 || hi >= (long long)SY_SLOTS || lo > hi)
            continue;
        const redisReply *node = e->element[2];
        if (node == NULL || node->type != REDIS_REPLY_ARRAY || node->elements < 2 || node->element[0] == NULL ||
            node->element[0]->type != REDIS_REPLY_STRING || !reply_int(node->element[1], &port) || port <= 0 ||
            port > 65535)
            continue;
        const char *host = node->element[0]->str;
        size_t host_len = node->element[0]->len;
        if (host_len == 0 || (host_len == 1 && host[0] == '?')) {
            host = asked_host;
            host_len = strlen(asked_host);
        }
        if (host_len >= SY_BUS_MAP_HOST_MAX || memchr(host, '\0', host_len) != NULL)
            continue;
        int idx = node_index(m, cap, host, host_len, (uint16_t)port);
        if (idx < 0)
            continue;
        for (long long k = lo; k <= hi; k++)
            m->slot[k] = (uint16_t)idx;
    }
    m->complete = true;
    for (unsigned k = 0; k < SY_SLOTS && m->complete; k++)
        m->complete = m->slot[k] != SY_BUS_MAP_NONE;
    return 0;
}

void sy_bus_map_free(sy_bus_map_t *m) {
    sy_free(m->nodes);
    m->nodes = NULL;
    m->nnodes = 0;
}
