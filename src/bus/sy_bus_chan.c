/* sy_bus_chan — see sy_bus_chan.h. */
#include "bus/sy_bus_chan.h"

#include <string.h>

#include "base/sy_alloc.h"
#include "bus/sy_slot.h"

#define BUS_MIN_BUCKETS 64

static const char *chan_key(const sy_strmap_node_t *n, size_t *len) {
    const sy_bus_chan_t *c = SY_STRMAP_ENTRY(n, sy_bus_chan_t, node);
    *len = c->len;
    return c->name;
}

sy_err_t sy_bus_chans_init(sy_bus_chans_t *t, const char *prefix, size_t prefix_len) {
    t->prefix = prefix;
    t->prefix_len = prefix_len;
    return sy_strmap_init(&t->map, BUS_MIN_BUCKETS, chan_key);
}

void sy_bus_chans_destroy(sy_bus_chans_t *t) {
    sy_strmap_iter_t it = SY_STRMAP_ITER_INIT;
    sy_bus_chan_t *c;
    while ((c = sy_bus_chan_next(t, &it)) != NULL) {
        sy_bus_seq_chan_clear(&c->seq);
        sy_free(c);
    }
    sy_strmap_destroy(&t->map);
}

sy_bus_chan_t *sy_bus_chan_next(const sy_bus_chans_t *t, sy_strmap_iter_t *it) {
    sy_strmap_node_t *n = sy_strmap_next(&t->map, it);
    return n != NULL ? SY_STRMAP_ENTRY(n, sy_bus_chan_t, node) : NULL;
}

char *sy_bus_chan_key(const sy_bus_chans_t *t, const char *name, size_t len) {
    char *s = sy_malloc(t->prefix_len + len);
    if (s != NULL) {
        memcpy(s, t->prefix, t->prefix_len);
        memcpy(s + t->prefix_len, name, len);
    }
    return s;
}

sy_bus_chan_t *sy_bus_chan_find(const sy_bus_chans_t *t, const char *name, size_t len) {
    sy_strmap_node_t *n = sy_strmap_find(&t->map, name, len, sy_strmap_hash(name, len));
    return n != NULL ? SY_STRMAP_ENTRY(n, sy_bus_chan_t, node) : NULL;
}

sy_bus_chan_t *sy_bus_chan_get(sy_bus_chans_t *t, const char *name, size_t len) {
    uint64_t h = sy_strmap_hash(name, len);
    sy_strmap_node_t *n = sy_strmap_find(&t->map, name, len, h);
    if (n != NULL)
        return SY_STRMAP_ENTRY(n, sy_bus_chan_t, node);
    sy_bus_chan_t *c = sy_calloc(1, sizeof(*c) + len + 1);
    if (c == NULL)
        return NULL;
    c->len = len;
    memcpy(c->name, name, len);
    /* The slot of the channel name, prefix included. */
    char *key = sy_bus_chan_key(t, name, len);
    if (key == NULL) {
        sy_free(c);
        return NULL;
    }
    c->slot = sy_slot_of(key, t->prefix_len + len);
    sy_free(key);
    sy_strmap_insert(&t->map, &c->node, h);
    return c;
}

void sy_bus_chan_remove(sy_bus_chans_t *t, sy_bus_chan_t *c) {
    /* c is in the table: the walk finds it. */
    (void)sy_strmap_remove(&t->map, &c->node);
    sy_bus_seq_chan_clear(&c->seq);
    sy_free(c);
}
