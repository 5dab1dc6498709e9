/* sy_pusher_presence — see sy_pusher_presence.h. */
#include "io/app/sy_pusher_presence.h"

#include <string.h>

#include "auth/sy_pusher_auth.h"
#include "base/sy_alloc.h"
#include "io/loop/sy_io_thread.h"
#include "io/model/sy_events.h"

/* One presence channel of a connection: its name then its user id, in
 * one block after the node. */
struct sy_pusher_pres {
    struct sy_pusher_pres *next;
    uint16_t ch_len;
    uint16_t id_len;
    char text[];
};

static struct sy_pusher_pres **find(sy_pusher_pres_t **l, const char *ch, size_t len) {
    for (; *l != NULL; l = &(*l)->next)
        if ((*l)->ch_len == len && memcmp((*l)->text, ch, len) == 0)
            return l;
    return l;
}

bool sy_pusher_pres_set(sy_pusher_pres_t **l, const char *ch, size_t len, const char *id, size_t id_len) {
    if (len > UINT16_MAX || id_len > UINT16_MAX)
        return false;
    (void)sy_pusher_pres_drop(l, ch, len);
    sy_pusher_pres_t *e = sy_malloc(sizeof(*e) + len + id_len);
    if (e == NULL)
        return false;
    e->ch_len = (uint16_t)len;
    e->id_len = (uint16_t)id_len;
    memcpy(e->text, ch, len);
    memcpy(e->text + len, id, id_len);
    e->next = *l;
    *l = e;
    return true;
}

const char *sy_pusher_pres_user(const sy_pusher_pres_t *l, const char *ch, size_t len, size_t *id_len) {
    sy_pusher_pres_t *const *r = find((sy_pusher_pres_t **)&l, ch, len);
    if (*r == NULL)
        return NULL;
    *id_len = (*r)->id_len;
    return (*r)->text + (*r)->ch_len;
}

bool sy_pusher_pres_drop(sy_pusher_pres_t **l, const char *ch, size_t len) {
    sy_pusher_pres_t **r = find(l, ch, len);
    if (*r == NULL)
        return false;
    sy_pusher_pres_t *e = *r;
    *r = e->next;
    sy_free(e);
    return true;
}

void sy_pusher_pres_free(sy_pusher_pres_t **l) {
    while (*l != NULL) {
        sy_pusher_pres_t *e = *l;
        *l = e->next;
        sy_free(e);
    }
}

static void emit(sy_io_t *io, sy_conn_t *c, uint8_t kind, unsigned app, const char *const *s, const size_t *n,
                 size_t count) {
    sy_io_emit_strings(io, sy_conn_id(io, c), SY_EV_PUSHER, kind, (uint16_t)app, s, n, count);
}

void sy_pusher_presence_join(sy_io_t *io, sy_conn_t *c, unsigned app, const char *topic, size_t topic_len,
                             const char *ch, size_t ch_len, const char *id, size_t id_len, const char *info,
                             size_t info_len) {
    const char *s[4] = {topic, ch, id, info != NULL ? info : ""};
    size_t n[4] = {topic_len, ch_len, id_len, info != NULL ? info_len : 0};
    emit(io, c, 'j', app, s, n, 4);
}

void sy_pusher_presence_leave(sy_io_t *io, sy_conn_t *c, unsigned app, const char *topic, size_t topic_len,
                              const char *ch, size_t ch_len) {
    const char *s[2] = {topic, ch};
    size_t n[2] = {topic_len, ch_len};
    emit(io, c, 'l', app, s, n, 2);
}

void sy_pusher_presence_users(sy_io_t *io, sy_conn_t *c, unsigned app, const char *topic, size_t topic_len,
                              const char *ch, size_t ch_len) {
    const char *s[2] = {topic, ch};
    size_t n[2] = {topic_len, ch_len};
    emit(io, c, 'u', app, s, n, 2);
    sy_conn_enter(io, c, SY_CONN_UPGRADING);
}

sy_pusher_http_err_t sy_pusher_presence_channels(sy_io_t *io, sy_conn_t *c, unsigned app, const char *prefix,
                                                 size_t prefix_len, const sy_pusher_req_t *r) {
    const char *info = r->info != NULL ? r->info : "";
    if (r->route == SY_PUSHER_API_CHANNELS) {
        const char *s[2] = {r->filter_by_prefix != NULL ? r->filter_by_prefix : "", info};
        size_t n[2] = {r->filter_by_prefix_len, r->info_len};
        emit(io, c, 'c', app, s, n, 2);
    } else {
        char topic[SY_PUSHER_ID_MAX + 2 + 1024];
        if (prefix_len + r->name_len > sizeof(topic))
            return SY_PUSHER_HTTP_CHANNEL_NAME;
        memcpy(topic, prefix, prefix_len);
        memcpy(topic + prefix_len, r->name, r->name_len);
        const char *s[3] = {topic, r->name, info};
        size_t n[3] = {prefix_len + r->name_len, r->name_len, r->info_len};
        emit(io, c, 'n', app, s, n, 3);
    }
    sy_conn_enter(io, c, SY_CONN_UPGRADING);
    return SY_PUSHER_HTTP_OK;
}
