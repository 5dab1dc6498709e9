/* sy_pusher_user — see sy_pusher_user.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (base/sy_clock.h) */
#include "io/app/sy_pusher_user.h"

#include <stdatomic.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "base/sy_thread.h"
#include "io/app/sy_subs.h"
#include "io/model/sy_stats.h"

#ifdef SY_WITH_TLS
#include "auth/sy_pusher_auth.h"
#include "proto/sy_pusher.h"

#define TERMINATE_KEEP_MS 5000 /* a termination is looked for this long (the idle check runs every second) */

/* Recent terminations, process-wide (a topic pointer is one server's, and
 * names one user's topic while a connection holds a reference to it). */
static sy_mutex_t term_lock = SY_MUTEX_INIT;
static struct {
    const sy_topic_t *topic;
    uint64_t seq;
    int64_t ms;
} terms[SY_PUSHER_TERMINATE_KEEP];
static unsigned term_next;
static atomic_uint_fast64_t clock_seq = 1; /* sign-ins and terminations, in order */
static atomic_uint_fast64_t term_gen;      /* the seq of the last termination recorded */

bool sy_pusher_is_terminate(const void *meta, size_t len) {
    return meta != NULL && len == sizeof(SY_PUSHER_TERMINATE_META) - 1 &&
           memcmp(meta, SY_PUSHER_TERMINATE_META, len) == 0;
}

sy_refbuf_t *sy_pusher_user_publish_frame(const sy_topic_t *t) {
    static const char why[] = "The server terminated this user's connections";
    uint64_t seq = atomic_fetch_add(&clock_seq, 1);
    sy_mutex_lock(&term_lock);
    terms[term_next].topic = t;
    terms[term_next].seq = seq;
    terms[term_next].ms = sy_clock_ms();
    term_next = (term_next + 1) % SY_PUSHER_TERMINATE_KEEP;
    atomic_store(&term_gen, seq);
    sy_mutex_unlock(&term_lock);
    return sy_pusher_error_frame(4009, why, sizeof(why) - 1);
}

/* Whether u's user was terminated after it signed in. */
static bool terminated(sy_pusher_signin_t *u, int64_t now_ms) {
    uint64_t gen = atomic_load_explicit(&term_gen, memory_order_acquire);
    if (gen <= u->seq || gen == u->seen)
        return false;
    u->seen = gen;
    bool hit = false;
    sy_mutex_lock(&term_lock);
    for (unsigned i = 0; i < SY_PUSHER_TERMINATE_KEEP && !hit; i++)
        hit = terms[i].topic == u->topic && terms[i].seq > u->seq && now_ms - terms[i].ms < TERMINATE_KEEP_MS;
    sy_mutex_unlock(&term_lock);
    return hit;
}

sy_topic_t *sy_pusher_join(sy_io_t *io, sy_conn_t *c, const char *name, size_t n) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    for (uint32_t i = 0; i < c->nsubs; i++)
        if (c->subs[i].topic->name_len == n && memcmp(c->subs[i].topic->name, name, n) == 0)
            return c->subs[i].topic;
    sy_topic_t *t = sy_topic_acquire(&x->shared->topics, name, n, true);
    if (t == NULL)
        return NULL;
    sy_topic_add_interest(&x->shared->topics, t, x->index);
    return sy_conn_subscribe(io, c, t) ? t : NULL; /* takes the reference and the interest either way */
}

/* A refused sign-in: its words, then the close (4009: pusher-js does not
 * reconnect). */
static void refuse(sy_io_t *io, sy_conn_t *c, const char *why, size_t len) {
    sy_refbuf_t *m = sy_pusher_error_frame(4009, why, len);
    if (m == NULL) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (!sy_conn_notice(io, c, m))
        sy_refbuf_release(m);
    if (c->state == SY_CONN_OPEN)
        sy_conn_fail_after(io, c, 4009, "Invalid signin");
}

sy_pusher_signin_t *sy_pusher_signin(sy_io_t *io, sy_conn_t *c, const sy_pusher_signin_ctx_t *x,
                                     const struct sy_pusher_msg *m) {
    sy_pusher_auth_t r = sy_pusher_auth_user(x->apps, x->app, x->socket_id, x->socket_id_len, m->user_data,
                                             m->user_data_len, m->auth, m->auth_len);
    if (r == SY_PUSHER_AUTH_NOMEM) {
        sy_conn_fail_oom(io, c);
        return NULL;
    }
    if (r != SY_PUSHER_AUTH_OK) {
        char signed_str[SY_PUSHER_SOCKET_ID_MAX + 1024], why[2048];
        size_t sl = sy_pusher_auth_string(signed_str, sizeof(signed_str), true, x->socket_id, x->socket_id_len,
                                          m->user_data, m->user_data_len, NULL, 0);
        refuse(io, c, why, sy_pusher_auth_message(why, sizeof(why), r, m->auth, m->auth_len, signed_str, sl));
        return NULL;
    }
    sy_pusher_user_t user;
    sy_pusher_err_t e = sy_pusher_user_parse(m->user_data, m->user_data_len, &user);
    if (e != SY_PUSHER_OK) {
        if (e == SY_PUSHER_NOMEM)
            sy_conn_fail_oom(io, c);
        else
            refuse(io, c, sy_pusher_err_message(e), strlen(sy_pusher_err_message(e)));
        return NULL;
    }
    char name[SY_PUSHER_ID_MAX + 2 + sizeof(SY_PUSHER_USER_CHANNEL) + SY_PUSHER_USER_ID_MAX];
    size_t pl = sizeof(SY_PUSHER_USER_CHANNEL) - 1, n = x->prefix_len + pl + user.id_len;
    memcpy(name, x->prefix, x->prefix_len);
    memcpy(name + x->prefix_len, SY_PUSHER_USER_CHANNEL, pl);
    memcpy(name + x->prefix_len + pl, user.id, user.id_len);
    sy_pusher_signin_t *u = sy_malloc(sizeof(*u) + user.id_len);
    sy_topic_t *t = u != NULL ? sy_pusher_join(io, c, name, n) : NULL;
    sy_refbuf_t *ok = t != NULL ? sy_pusher_signin_success_frame(m->user_data, m->user_data_len) : NULL;
    if (ok == NULL) {
        sy_free(u);
        sy_pusher_user_free(&user);
        sy_conn_fail_oom(io, c);
        return NULL;
    }
    sy_topic_ref(t);
    u->topic = t;
    u->seq = atomic_fetch_add(&clock_seq, 1);
    u->seen = 0;
    u->id_len = (uint8_t)user.id_len;
    memcpy(u->id, user.id, user.id_len);
    sy_pusher_user_free(&user);
    if (!sy_conn_notice(io, c, ok))
        sy_refbuf_release(ok);
    return u;
}

void sy_pusher_signin_free(sy_io_t *io, sy_pusher_signin_t *u) {
    if (u == NULL)
        return;
    sy_topic_release(&sy_io_ctx(io)->shared->topics, u->topic);
    sy_free(u);
}

bool sy_pusher_signin_idle(sy_io_t *io, sy_conn_t *c, sy_pusher_signin_t *u, bool required, int64_t opened_ms,
                           int64_t timeout_ms, int64_t now_ms) {
    if (u != NULL) {
        if (!terminated(u, now_ms))
            return true;
        sy_conn_fail_after(io, c, 4009, "Terminated");
        return false;
    }
    if (!required || now_ms - opened_ms < timeout_ms)
        return true;
    static const char why[] = "Connection not authorized within timeout (userAuthenticationTimeout)";
    sy_stat_inc(&sy_io_ctx(io)->stats.timeouts);
    refuse(io, c, why, sizeof(why) - 1);
    return false;
}

#else /* a build without OpenSSL: no Pusher */

bool sy_pusher_is_terminate(const void *meta, size_t len) {
    (void)meta;
    (void)len;
    return false;
}

#endif
