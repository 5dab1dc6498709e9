/* sy_ask — see sy_ask.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (base/sy_clock.h) */
#include "io/app/sy_ask.h"

#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "io/app/sy_park.h"
#include "io/app/sy_resume.h"
#include "io/app/sy_subs.h"
#include "io/loop/sy_io_thread.h"
#include "io/model/sy_grow.h"
#include "io/model/sy_history.h"
#include "io/wire/sy_sse_out.h"
#include "proto/sy_v1.h"
#include "proto/sy_v2.h"
#include "proto/sy_ws_frame.h"
#ifdef SY_WITH_TLS
#include "auth/sy_tokcache.h"
#include "auth/sy_tokens.h"
#endif

/* One ask the owner has not answered yet. */
typedef struct pending {
    uint32_t rid;
    char kind;          /* 's', 'p', 'r' */
    uint16_t topic_len; /* s: its topic (a copy), to drop it on an unsubscribe */
    char *topic;
} pending_t;

/* A subscribe entry waiting on this thread for room under max_pending
 * (sy_ask.h): a copy of what the owner would be told. */
typedef struct waiting {
    uint32_t rid;
    bool resub;
    bool has_since;
    uint16_t topic_len;
    uint16_t token_len; /* 0: none (SY_V2_TOKEN_MAX fits) */
    uint64_t epoch, offset;
    size_t data_len; /* 0: none */
    char bytes[];    /* topic, token, data */
} waiting_t;

/* A connection's asks: those pending, those waiting for room, and its
 * malformed frames so far. */
typedef struct sy_ask_conn {
    uint32_t n, cap;
    uint32_t nsubs; /* of the n pending, the subscribes (counted in max_subscriptions) */
    uint32_t bad;
    pending_t *p;
    waiting_t **w; /* w[whead..wn): oldest first */
    uint32_t whead, wn, wcap;
    size_t wbytes;    /* what the waiting entries hold */
    int64_t work_tat; /* its work budget's time (io/sy_budget.h) */
#ifdef SY_WITH_TLS
    /* The last token that verified on this connection (a copy), the key set
     * it verified with (a reference) and its grant: a client gives the same
     * token with each of its subscribes, and it is verified once, while it
     * is unexpired and the server's key set is the same. */
    char *tok;
    size_t tok_len;
    sy_tokens_t *tok_set;
    sy_jwt_grant_t *grant;
#endif
} ask_conn_t;

/* The thread's table: one pointer per slot (io/sy_io_thread.h's ctx). */
static ask_conn_t **slot_ref(sy_io_t *io, uint32_t slot, bool make) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    if (slot >= x->asks_cap) {
        if (!make)
            return NULL;
        uint32_t cap = x->asks_cap ? x->asks_cap : 64;
        while (cap <= slot)
            cap *= 2;
        struct sy_ask_conn **a = sy_realloc(x->asks, (size_t)cap * sizeof(*a));
        if (a == NULL)
            return NULL;
        memset(a + x->asks_cap, 0, (size_t)(cap - x->asks_cap) * sizeof(*a));
        x->asks = a;
        x->asks_cap = cap;
    }
    return &x->asks[slot];
}

static ask_conn_t *state_of(sy_io_t *io, sy_conn_t *c, bool make) {
    ask_conn_t **r = slot_ref(io, c->slot, make);
    if (r == NULL)
        return NULL;
    if (*r == NULL && make)
        *r = sy_calloc(1, sizeof(**r));
    return *r;
}

#ifdef SY_WITH_TLS
static void forget_token(ask_conn_t *a) {
    sy_free(a->tok);
    sy_tokens_unref(a->tok_set);
    sy_jwt_grant_free(a->grant);
    a->tok = NULL;
    a->tok_len = 0;
    a->tok_set = NULL;
    a->grant = NULL;
}
#endif

static void state_free(ask_conn_t *a) {
    if (a == NULL)
        return;
    for (uint32_t i = 0; i < a->n; i++)
        sy_free(a->p[i].topic);
    sy_free(a->p);
    for (uint32_t i = a->whead; i < a->wn; i++)
        sy_free(a->w[i]);
    sy_free(a->w);
#ifdef SY_WITH_TLS
    forget_token(a);
#endif
    sy_free(a);
}

/* Queues an answer frame (NULL: out of memory, closes c). */
static void answer(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m) {
    if (m == NULL) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (sy_conn_sse(c)) {
        (void)sy_sse_out_push(io, c, m, true); /* made its event */
        sy_refbuf_release(m);
    } else if (!sy_conn_notice(io, c, m)) { /* never dropped: queued, or c closed */
        sy_refbuf_release(m);
    }
}

/* One more malformed frame: true when it is one too many (c is closed
 * 1008, after the answers queued before it). */
static bool one_too_many(sy_io_t *io, sy_conn_t *c, ask_conn_t *a) {
    if (++a->bad <= SY_ASK_BAD_MAX)
        return false;
    sy_conn_fail_after(io, c, 1008, "too many malformed commands");
    return true;
}

/* A malformed frame: its error answer, and c closed past SY_ASK_BAD_MAX. */
static void malformed(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, bool has_rid, uint32_t rid, const char *why) {
    sy_stat_inc(&sy_io_ctx(io)->stats.ask_errors);
    if (one_too_many(io, c, a))
        return;
    answer(io, c, sy_v2_error_frame(has_rid, rid, "bad-request", why));
}

/* ---- the work budget (io/sy_budget.h) ----------------------------------- */

#define WORK_WHY "this connection is over its work budget (maxWorkPerSecond): ask again later"

/* An entry of c's worth `units` asks to be done: true to do it (charged).
 * False when it is refused (refusable: the caller answers `rate-limited`;
 * else it is done anyway, its refusal charged) or c was closed (asking on
 * past the grace: 1008; c is no longer open). */
static bool work_take(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, uint64_t units, bool refusable) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    switch (sy_budget_take(&x->shared->work, &a->work_tat, sy_budget_now(x->now_ms), units)) {
    case SY_BUDGET_OK:
        return true;
    case SY_BUDGET_REFUSED:
        if (!refusable)
            return true;
        sy_stat_inc(&x->stats.work_refused);
        return false;
    default:
        sy_stat_inc(&x->stats.work_closes);
        sy_conn_fail_after(io, c, 1008, "over its work budget (maxWorkPerSecond)"); /* its refusals first */
        return false;
    }
}

#ifdef SY_WITH_TLS
/* Work an entry's take did not know (its token's checks): charged. */
static void work_charge(sy_io_t *io, ask_conn_t *a, uint64_t units) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    sy_budget_charge(&x->shared->work, &a->work_tat, sy_budget_now(x->now_ms), units);
}
#endif

/* ---- pending asks ---------------------------------------------------------- */

static bool add_pending(ask_conn_t *a, char kind, uint32_t rid, const char *topic, size_t topic_len) {
    if (a->n == a->cap) {
        pending_t *p = sy_grow(a->p, &a->cap, sizeof(*p), 4);
        if (p == NULL)
            return false;
        a->p = p;
    }
    pending_t *e = &a->p[a->n];
    *e = (pending_t){.rid = rid, .kind = kind};
    if (topic != NULL) {
        if ((e->topic = sy_malloc(topic_len)) == NULL)
            return false;
        memcpy(e->topic, topic, topic_len);
        e->topic_len = (uint16_t)topic_len;
    }
    a->n++;
    if (kind == 's')
        a->nsubs++;
    return true;
}

static void remove_pending(ask_conn_t *a, uint32_t i) {
    if (a->p[i].kind == 's')
        a->nsubs--;
    sy_free(a->p[i].topic);
    a->p[i] = a->p[--a->n];
}

static bool pending_topic(const ask_conn_t *a, const char *topic, size_t len) {
    for (uint32_t i = 0; i < a->n; i++)
        if (a->p[i].kind == 's' && a->p[i].topic_len == len && memcmp(a->p[i].topic, topic, len) == 0)
            return true;
    for (uint32_t i = a->whead; i < a->wn; i++)
        if (a->w[i]->topic_len == len && memcmp(a->w[i]->bytes, topic, len) == 0)
            return true;
    return false;
}

/* Subscribe entries waiting for room under max_pending. */
static uint32_t waiting_count(const ask_conn_t *a) { return a->wn - a->whead; }

/* The most entries that may wait: max_subscriptions (else one frame's). */
static uint32_t wait_max(const sy_io_opts_t *o) {
    return o->max_subscriptions > 0 ? o->max_subscriptions : SY_V2_BATCH_MAX;
}

/* The most bytes (topics, tokens, data) the waiting entries may hold: a
 * frame's worth, and never less than 256 KiB, so that a client library's
 * subscribes sent one frame each (a page subscribing to a thousand topics
 * at start) wait here under a small maxPayload too. */
static size_t wait_bytes(const sy_io_opts_t *o) {
    return o->max_payload > ((size_t)256 << 10) ? o->max_payload : (size_t)256 << 10;
}

/* Keeps s (of a frame that said resub or not) waiting, behind those that
 * wait already. False when there is no room (wait_max entries, or
 * wait_bytes, wait already) or no memory (*nomem). */
static bool wait_add(const sy_io_opts_t *o, ask_conn_t *a, const sy_v2_sub_t *s, bool resub, bool *nomem) {
    *nomem = false;
    size_t bytes = s->topic_len + s->token_len + s->data_len;
    if (waiting_count(a) >= wait_max(o) || a->wbytes + bytes > wait_bytes(o))
        return false;
    if (a->wn == a->wcap) {
        if (a->whead > 0) { /* the front was taken: move the rest down */
            memmove(a->w, a->w + a->whead, (size_t)waiting_count(a) * sizeof(*a->w));
            a->wn -= a->whead;
            a->whead = 0;
        } else {
            uint32_t cap = a->wcap ? a->wcap * 2 : 16;
            waiting_t **w = sy_realloc(a->w, (size_t)cap * sizeof(*w));
            if (w == NULL) {
                *nomem = true;
                return false;
            }
            a->w = w;
            a->wcap = cap;
        }
    }
    waiting_t *e = sy_malloc(sizeof(*e) + bytes);
    if (e == NULL) {
        *nomem = true;
        return false;
    }
    *e = (waiting_t){.rid = s->rid,
                     .resub = resub,
                     .has_since = s->has_since,
                     .topic_len = (uint16_t)s->topic_len,
                     .token_len = (uint16_t)s->token_len,
                     .epoch = s->epoch,
                     .offset = s->offset,
                     .data_len = s->data_len};
    memcpy(e->bytes, s->topic, s->topic_len);
    if (s->token_len > 0)
        memcpy(e->bytes + s->topic_len, s->token, s->token_len);
    if (s->data_len > 0)
        memcpy(e->bytes + s->topic_len + s->token_len, s->data, s->data_len);
    a->w[a->wn++] = e;
    a->wbytes += bytes;
    return true;
}

/* The oldest waiting entry, taken off the list (the caller frees it). */
static waiting_t *wait_take(ask_conn_t *a) {
    waiting_t *e = a->w[a->whead++];
    a->wbytes -= (size_t)e->topic_len + e->token_len + e->data_len;
    if (a->whead == a->wn)
        a->whead = a->wn = 0;
    return e;
}

/* The entry a waiting one stands for (pointing into it). */
static void wait_entry(const waiting_t *e, sy_v2_sub_t *s) {
    *s = (sy_v2_sub_t){.has_rid = true,
                       .rid = e->rid,
                       .topic = e->bytes,
                       .topic_len = e->topic_len,
                       .has_since = e->has_since,
                       .epoch = e->epoch,
                       .offset = e->offset,
                       .token = e->token_len > 0 ? e->bytes + e->topic_len : NULL,
                       .token_len = e->token_len,
                       .data = e->data_len > 0 ? e->bytes + e->topic_len + e->token_len : NULL,
                       .data_len = e->data_len};
}

/* Drops the waiting entries for topic (an unsubscribe): true when any. */
static bool wait_drop(ask_conn_t *a, const char *topic, size_t len) {
    uint32_t o = a->whead;
    bool any = false;
    for (uint32_t i = a->whead; i < a->wn; i++) {
        waiting_t *e = a->w[i];
        if (e->topic_len == len && memcmp(e->bytes, topic, len) == 0) {
            a->wbytes -= (size_t)e->topic_len + e->token_len + e->data_len;
            sy_free(e);
            any = true;
        } else {
            a->w[o++] = e;
        }
    }
    a->wn = o;
    if (a->whead == a->wn)
        a->whead = a->wn = 0;
    return any;
}

/* c's subscription to the topic named so, or NULL. */
static sy_sub_t *held(sy_conn_t *c, const char *topic, size_t len) {
    for (uint32_t i = 0; i < c->nsubs; i++) {
        sy_topic_t *t = c->subs[i].topic;
        if (t->name_len == len && memcmp(t->name, topic, len) == 0)
            return &c->subs[i];
    }
    return NULL;
}

/* Emits an SY_EV_ASK with n strings. */
static void emit(sy_io_t *io, sy_conn_t *c, char kind, uint16_t code, const char *const *s, const size_t *len,
                 size_t n) {
    sy_io_emit_strings(io, sy_conn_id(io, c), SY_EV_ASK, (uint8_t)kind, code, s, len, n);
}

/* The answer to a subscribe to t, which c holds: the "subscribed" notice
 * with the ask's id and "held", at pos->head: the topic's last offset when
 * the answer's command was queued, under the history lock, behind the
 * publishes numbered before it (so c has them all when it reads this). */
static void answer_held(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, const sy_sub_pos_t *pos) {
    sy_v1_subscribed_t n = {.topic = t->name, .topic_len = t->name_len, .id = t->id};
    sy_hist_t *g = &sy_io_ctx(io)->shared->hist;
    sy_hist_lock(g);
    sy_history_t *h = atomic_load_explicit(&t->hist, memory_order_relaxed);
    if (h != NULL && h->size > 0) {
        n.history = true;
        n.epoch = h->epoch;
        n.offset = pos->head;
    }
    sy_hist_unlock(g);
    char extra[48];
    n.extra_len = (size_t)snprintf(extra, sizeof(extra), ",\"rid\":%u,\"held\":true", (unsigned)pos->rid);
    n.extra = extra;
    answer(io, c, sy_v1_subscribed_frame(&n));
}

/* Queues c's ask rid for t (held, one reference: handed over) as the
 * owner's grant would go (sy_park_subscribe: its head read and its command
 * queued under the history lock), pending until the command comes back to
 * this thread; there it is a subscription, or, when c holds t,
 * sy_ask_answer_held's answer. False when out of memory (t given back,
 * nothing pending). */
static bool queue_asked(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, sy_topic_t *t, const sy_v2_sub_t *s) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    if (!add_pending(a, 's', s->rid, s->topic, s->topic_len)) {
        sy_topic_release(&x->shared->topics, t);
        return false;
    }
    char extra[24];
    size_t extra_len = (size_t)snprintf(extra, sizeof(extra), ",\"rid\":%u", (unsigned)s->rid);
    sy_sub_pos_t since = {.resume = s->has_since, .epoch = s->epoch, .since = s->offset, .asked = true, .rid = s->rid};
    if (sy_park_subscribe(&x->shared->hist, &x->shared->topics, io, sy_conn_id(io, c), t, &since, extra, extra_len,
                          x->now_ms) != 0) {
        (void)sy_ask_settle(io, c, s->rid);
        return false;
    }
    return true;
}

#ifdef SY_WITH_TLS
/* c subscribes to t (held, its reference handed over), a topic without
 * history asked without a position, here and now, as the owner's plain
 * subscribe would make it (its interest counted, then the subscription):
 * with no offsets there is nothing to order against publishes, so no
 * command goes round the queue. The "subscribed" notice names rid. False
 * when out of memory (t given back). */
static bool subscribe_now(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, uint32_t rid) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    sy_topic_add_interest(&x->shared->topics, t, x->index);
    if (!sy_conn_subscribe(io, c, t)) /* takes the reference and the interest either way */
        return false;
    size_t budget = sy_resume_budget(io, c);
    sy_resume_item_t it;
    sy_resume_prepare(io, c, t, NULL, &budget, &it);
    char extra[24];
    it.extra_len = (size_t)snprintf(extra, sizeof(extra), ",\"rid\":%u", (unsigned)rid);
    it.extra = extra;
    sy_resume_deliver(io, c, &it);
    return true;
}

/* The server's token set now, with a reference of the caller's; NULL: it
 * checks none. */
static sy_tokens_t *tokens_acquire(sy_io_shared_t *sh) {
    sy_mutex_lock(&sh->tokens_lock);
    sy_tokens_t *t = sh->tokens;
    if (t != NULL)
        sy_tokens_ref(t);
    sy_mutex_unlock(&sh->tokens_lock);
    return t;
}

/* The thread's cache of refused tokens, made on first use; NULL when out
 * of memory (every token is verified then). */
static sy_tokcache_t *tokcache(sy_io_t *io) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    if (x->tokcache == NULL)
        x->tokcache = sy_tokcache_new();
    return x->tokcache;
}

/* The grant of token, verified with tk: the connection's kept one when it
 * is that token, verified with that set and not expired; the refusal the
 * thread's cache has for it (no check); else verified now (kept when
 * valid, cached when refused), its checks counted in *w. NULL with *r the
 * refusal. */
static const sy_jwt_grant_t *grant_of(sy_io_t *io, ask_conn_t *a, sy_tokens_t *tk, const char *token, size_t len,
                                      sy_jwt_result_t *r, sy_jwt_work_t *w) {
    int64_t now = sy_clock_unix_s();
    if (a->grant != NULL && a->tok_set == tk && a->tok_len == len && memcmp(a->tok, token, len) == 0) {
        int64_t exp = sy_jwt_grant_exp(a->grant), leeway = (int64_t)tk->policy.leeway_s;
        if (exp == 0 || exp > INT64_MAX - leeway || now < exp + leeway)
            return a->grant;
        *r = SY_JWT_EXPIRED;
        return NULL;
    }
    sy_tokcache_t *cache = tokcache(io);
    uint64_t hash = cache != NULL ? sy_tokcache_hash(cache, token, len) : 0;
    if (cache != NULL && (*r = sy_tokcache_find(cache, tk->serial, hash)) != SY_JWT_OK)
        return NULL;
    sy_jwt_grant_t *g = NULL;
    *r = sy_jwt_verify_work(tk->keys, &tk->policy, token, len, now, &g, w);
    if (*r != SY_JWT_OK) {
        if (cache != NULL)
            sy_tokcache_add(cache, tk->serial, hash, *r);
        return NULL;
    }
    forget_token(a);
    a->grant = g; /* freed with the connection's state, or by the next token */
    char *copy = sy_malloc(len);
    if (copy != NULL) { /* else not kept: verified again next time */
        memcpy(copy, token, len);
        sy_tokens_ref(tk);
        a->tok = copy;
        a->tok_len = len;
        a->tok_set = tk;
    }
    return g;
}

/* What a token says about action on topic: NULL when it grants it, else
 * the refusal's code (counted in tokenRefused) and, in *why, its reason.
 * The signature checks made are charged to the connection's work budget. */
static const char *token_check(sy_io_t *io, ask_conn_t *a, sy_tokens_t *tk, const char *token, size_t len,
                               sy_jwt_action_t action, const char *topic, size_t topic_len, const char **why) {
    sy_jwt_result_t r = SY_JWT_OK;
    sy_jwt_work_t w = {0};
    const sy_jwt_grant_t *g = grant_of(io, a, tk, token, len, &r, &w);
    if (w.checks > 0) {
        sy_stat_add(&sy_io_ctx(io)->stats.token_checks, w.checks);
        work_charge(io, a, w.units);
    }
    const char *code = NULL;
    if (g == NULL) {
        code = sy_jwt_result_name(r);
        *why = sy_jwt_result_reason(r);
    } else if (!sy_jwt_allows(g, action, topic, topic_len)) {
        code = "forbidden";
        *why = action == SY_JWT_PUBLISH ? "the token does not grant publishing on this topic"
                                        : "the token does not grant this topic";
    }
    if (code != NULL)
        sy_stat_inc(&sy_io_ctx(io)->stats.token_refused);
    return code;
}

/* A subscribe with a token, on a server that checks tokens: decided here,
 * without the owner. Granted, it goes live as the owner's would
 * (sy_park_subscribe), pending until its command comes back to this
 * thread, so that an unsubscribe meanwhile drops it. */
static void token_subscribe(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, const sy_v2_sub_t *s, sy_tokens_t *tk) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    const char *why = "";
    const char *code = token_check(io, a, tk, s->token, s->token_len, SY_JWT_SUBSCRIBE, s->topic, s->topic_len, &why);
    if (code != NULL) {
        answer(io, c, sy_v2_refused_frame(s->rid, s->topic, s->topic_len, code, why));
        return;
    }
    sy_topic_t *t = sy_topic_acquire(&x->shared->topics, s->topic, s->topic_len, true);
    if (t == NULL) {
        sy_conn_fail_oom(io, c);
        return;
    }
    if (!s->has_since && !sy_hist_default_on(&x->shared->hist) &&
        atomic_load_explicit(&t->hist, memory_order_acquire) == NULL) {
        if (!subscribe_now(io, c, t, s->rid)) {
            answer(io, c, sy_v2_refused_frame(s->rid, s->topic, s->topic_len, "memory", "out of memory"));
            return;
        }
    } else if (!queue_asked(io, c, a, t, s)) {
        sy_conn_fail_oom(io, c);
        return;
    }
    sy_stat_inc(&x->stats.token_subscribes);
    if (x->shared->opts.tell_token_subscribes) {
        char rid[11];
        size_t rid_len = (size_t)snprintf(rid, sizeof(rid), "%u", (unsigned)s->rid);
        const char *strs[2] = {rid, s->topic};
        size_t lens[2] = {rid_len, s->topic_len};
        emit(io, c, 'S', 0, strs, lens, 2);
    }
}
#endif

/* One subscribe entry, checked (of a frame that said resub or not): held
 * already, refused, made to wait (a frame's entries past max_pending wait
 * here, in order, and go on as earlier asks are answered: sy_ask_drain),
 * decided by its token, or to the owner. from_wait: it waited already (and
 * is no longer counted there). False when c was failed (out of memory). */
static bool subscribe_entry(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, const sy_v2_sub_t *s, bool resub,
                            bool from_wait) {
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    sy_sub_t *have = held(c, s->topic, s->topic_len);
    if (have != NULL && (from_wait || waiting_count(a) == 0)) {
        /* Answered in order behind the publishes numbered before it
         * (no decision: it is held already). */
        sy_topic_ref(have->topic);
        if (!queue_asked(io, c, a, have->topic, s)) {
            sy_conn_fail_oom(io, c);
            return false;
        }
        return true;
    }
    const char *code = NULL, *why = NULL;
    if (have == NULL && pending_topic(a, s->topic, s->topic_len)) {
        code = "pending";
        why = "a subscribe to this topic is waiting for its answer";
    } else if (have == NULL && o->max_subscriptions > 0 &&
               c->nsubs + a->nsubs + waiting_count(a) >= o->max_subscriptions) {
        code = "too-many-subscriptions";
        why = "this connection holds maxSubscriptions subscriptions";
    } else if (a->n >= o->max_pending || (!from_wait && waiting_count(a) > 0)) {
        bool nomem;
        if (wait_add(o, a, s, resub, &nomem))
            return true;
        if (nomem) {
            sy_conn_fail_oom(io, c);
            return false;
        }
        code = "too-many-pending";
        why = "this connection has maxPending asks waiting for answers";
    }
    if (code != NULL) {
        sy_stat_inc(&sy_io_ctx(io)->stats.ask_refused);
        answer(io, c, sy_v2_refused_frame(s->rid, s->topic, s->topic_len, code, why));
        return c->state == SY_CONN_OPEN;
    }
#ifdef SY_WITH_TLS
    sy_tokens_t *tk = s->token != NULL ? tokens_acquire(sy_io_ctx(io)->shared) : NULL;
    if (tk != NULL) {
        token_subscribe(io, c, a, s, tk);
        sy_tokens_unref(tk);
        return c->state == SY_CONN_OPEN;
    }
#endif
    if (!add_pending(a, 's', s->rid, s->topic, s->topic_len)) {
        sy_conn_fail_oom(io, c);
        return false;
    }
    char rid[11], since[16 + 1 + 20 + 1];
    size_t rid_len = (size_t)snprintf(rid, sizeof(rid), "%u", (unsigned)s->rid);
    size_t since_len = s->has_since ? (size_t)snprintf(since, sizeof(since), "%016llx:%llu",
                                                       (unsigned long long)s->epoch, (unsigned long long)s->offset)
                                    : 0;
    const char *strs[5] = {rid, s->topic, since, s->token ? s->token : "", s->data ? s->data : ""};
    size_t lens[5] = {rid_len, s->topic_len, since_len, s->token_len, s->data_len};
    emit(io, c, 's', resub ? SY_ASK_RESUB : 0, strs, lens, 5);
    sy_stat_inc(&sy_io_ctx(io)->stats.ask_subscribes);
    return true;
}

/* A subscribe frame: each entry on its own; a bad entry is refused alone
 * ("bad-request"), and a frame with any counts once as malformed. */
static void subscribe(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, sy_v2_frame_t *f) {
    bool bad = false;
    for (size_t i = 0; i < f->nsubs && c->state == SY_CONN_OPEN; i++) {
        sy_v2_sub_t s;
        const char *why = "";
        sy_v2_status_t st = sy_v2_sub_at(f, i, &s, &why);
        if (st == SY_V2_NOMEM) {
            sy_conn_fail_oom(io, c);
            return;
        }
        /* Each entry is charged, before anything (a bad one too: its answer
         * is work); one over the budget is refused rate-limited. */
        bool within = work_take(io, c, a, SY_WORK_ENTRY, true);
        if (c->state != SY_CONN_OPEN)
            return;
        if (st != SY_V2_OK) {
            if (!bad && one_too_many(io, c, a))
                return;
            bad = true;
            sy_stat_inc(&sy_io_ctx(io)->stats.ask_errors);
            answer(io, c, sy_v2_refused_entry_frame(&s, why));
            continue;
        }
        if (!within) {
            answer(io, c, sy_v2_refused_frame(s.rid, s.topic, s.topic_len, "rate-limited", WORK_WHY));
            continue;
        }
        if (!subscribe_entry(io, c, a, &s, f->resub, false))
            return;
    }
}

void sy_ask_drain(sy_io_t *io, sy_conn_t *c) {
    ask_conn_t *a = state_of(io, c, false);
    if (a == NULL)
        return;
    const sy_io_opts_t *o = &sy_io_ctx(io)->shared->opts;
    while (waiting_count(a) > 0 && a->n < o->max_pending && c->state == SY_CONN_OPEN) {
        waiting_t *e = wait_take(a);
        sy_v2_sub_t s;
        wait_entry(e, &s);
        bool ok = subscribe_entry(io, c, a, &s, e->resub, true);
        sy_free(e);
        if (!ok)
            return;
    }
}

static void unsubscribe(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, sy_v2_frame_t *f) {
    /* Charged, never refused (it lowers the work to come); past the
     * grace, c is closed. */
    if (!work_take(io, c, a, SY_WORK_ENTRY, false))
        return;
    (void)wait_drop(a, f->topic, f->topic_len); /* the owner never heard of those */
    bool was = false;
    for (uint32_t i = 0; i < a->n;) {
        if (a->p[i].kind == 's' && a->p[i].topic_len == f->topic_len &&
            memcmp(a->p[i].topic, f->topic, f->topic_len) == 0) {
            remove_pending(a, i); /* the owner's answer will find it gone */
            was = true;
        } else {
            i++;
        }
    }
    sy_sub_t *have = held(c, f->topic, f->topic_len);
    if (have != NULL) {
        /* The "unsubscribed" notice (sy_resume.h) is the answer. */
        (void)sy_conn_unsubscribe(io, c, have->topic);
        was = true;
    } else {
        answer(io, c, sy_v2_unsubscribed_frame(f->rid, f->topic, f->topic_len));
    }
    if (was) {
        char rid[11];
        size_t rid_len = (size_t)snprintf(rid, sizeof(rid), "%u", (unsigned)f->rid);
        const char *strs[2] = {rid, f->topic};
        size_t lens[2] = {rid_len, f->topic_len};
        emit(io, c, 'u', 0, strs, lens, 2);
    }
    sy_ask_drain(io, c); /* room, when what it dropped was pending */
}

/* A publish or a request: to the owner, pending until answered. A publish
 * with a token, on a server that checks tokens, is decided here: refused
 * with the token's code, or handed to the owner as granted ('P': it
 * publishes without asking onPublish). */
static void ask_owner(sy_io_t *io, sy_conn_t *c, ask_conn_t *a, sy_v2_frame_t *f, unsigned opcode) {
    char kind = (char)f->kind;
    if (!work_take(io, c, a, SY_WORK_ENTRY, true)) {
        if (c->state == SY_CONN_OPEN)
            answer(io, c, sy_v2_error_frame(true, f->rid, "rate-limited", WORK_WHY));
        return;
    }
#ifdef SY_WITH_TLS
    sy_tokens_t *tk = f->token != NULL ? tokens_acquire(sy_io_ctx(io)->shared) : NULL;
    if (tk != NULL) {
        const char *why = "";
        const char *code = token_check(io, a, tk, f->token, f->token_len, SY_JWT_PUBLISH, f->topic, f->topic_len, &why);
        sy_tokens_unref(tk);
        if (code != NULL) {
            answer(io, c, sy_v2_error_frame(true, f->rid, code, why));
            return;
        }
        kind = 'P';
    }
#endif
    if (a->n >= sy_io_ctx(io)->shared->opts.max_pending) {
        sy_stat_inc(&sy_io_ctx(io)->stats.ask_refused);
        answer(io, c,
               sy_v2_error_frame(true, f->rid, "too-many-pending",
                                 "this connection has maxPending asks waiting for answers"));
        return;
    }
    if (!add_pending(a, (char)f->kind, f->rid, NULL, 0)) {
        sy_conn_fail_oom(io, c);
        return;
    }
    char rid[11];
    size_t rid_len = (size_t)snprintf(rid, sizeof(rid), "%u", (unsigned)f->rid);
    uint16_t code = opcode == SY_WS_OP_BINARY ? SY_ASK_BINARY : 0;
    if (f->kind == SY_V2_PUBLISH) {
        const char *strs[3] = {rid, f->topic, (const char *)f->payload};
        size_t lens[3] = {rid_len, f->topic_len, f->payload_len};
        emit(io, c, kind, code, strs, lens, 3);
        sy_stat_inc(&sy_io_ctx(io)->stats.ask_publishes);
    } else {
        const char *strs[2] = {rid, (const char *)f->payload};
        size_t lens[2] = {rid_len, f->payload_len};
        emit(io, c, 'r', code, strs, lens, 2);
        sy_stat_inc(&sy_io_ctx(io)->stats.ask_requests);
    }
}

void sy_ask_message(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n) {
    if (n > 0 && p[0] == SY_V2_DIRECT && n >= 2 && p[1] == '\n') {
        /* The common case, without a parse: an application message. One
         * POSTed to an event stream (answered already: never refused) is
         * charged to the stream's work budget; past its grace the stream
         * is closed. */
        if (sy_conn_sse(c)) {
            ask_conn_t *a = state_of(io, c, true);
            if (a == NULL) {
                sy_conn_fail_oom(io, c);
                return;
            }
            if (!work_take(io, c, a, SY_WORK_ENTRY, false))
                return;
        }
        sy_io_emit(io, sy_conn_id(io, c), SY_EV_MESSAGE, opcode == SY_WS_OP_BINARY ? 1 : 0, 0, p + 2, n - 2);
        return;
    }
    if (n == 1 && p[0] == SY_V2_HEARTBEAT) {
        answer(io, c, sy_v2_pong_frame()); /* costs no state, counts nothing */
        return;
    }
    ask_conn_t *a = state_of(io, c, true);
    if (a == NULL) {
        sy_conn_fail_oom(io, c);
        return;
    }
    sy_v2_frame_t f;
    const char *why = "";
    sy_v2_status_t st = sy_v2_parse(p, n, &f, &why);
    switch (st) {
    case SY_V2_OK:
        break;
    case SY_V2_UNKNOWN:
        sy_stat_inc(&sy_io_ctx(io)->stats.ask_errors);
        answer(io, c, sy_v2_error_frame(false, 0, "unknown-kind", "this server does not know that kind of frame"));
        return;
    case SY_V2_NOMEM:
        sy_conn_fail_oom(io, c);
        return;
    default:
        malformed(io, c, a, f.has_rid, f.rid, why);
        return;
    }
    switch (f.kind) {
    case SY_V2_SUBSCRIBE:
        subscribe(io, c, a, &f);
        break;
    case SY_V2_UNSUBSCRIBE:
        unsubscribe(io, c, a, &f);
        break;
    case SY_V2_PUBLISH:
    case SY_V2_REQUEST:
        ask_owner(io, c, a, &f, opcode);
        break;
    default: /* 'd' with its "\n" was taken above; a bare "d" is malformed */
        break;
    }
    sy_v2_frame_free(&f);
}

bool sy_ask_answer_held(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, const sy_sub_pos_t *pos) {
    for (uint32_t i = 0; i < c->nsubs; i++) {
        if (c->subs[i].topic == t) {
            answer_held(io, c, t, pos);
            return true;
        }
    }
    return false;
}

bool sy_ask_settle(sy_io_t *io, sy_conn_t *c, uint32_t rid) {
    ask_conn_t *a = state_of(io, c, false);
    if (a == NULL)
        return false;
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->p[i].rid == rid) {
            remove_pending(a, i);
            return true;
        }
    }
    return false;
}

void sy_ask_forget(sy_io_t *io, sy_conn_t *c) {
    ask_conn_t **r = slot_ref(io, c->slot, false);
    if (r == NULL || *r == NULL)
        return;
    state_free(*r);
    *r = NULL;
}

void sy_ask_free_all(sy_io_t *io) {
    sy_io_ctx_t *x = sy_io_ctx(io);
    for (uint32_t i = 0; i < x->asks_cap; i++)
        state_free(x->asks[i]);
    sy_free(x->asks);
    x->asks = NULL;
    x->asks_cap = 0;
#ifdef SY_WITH_TLS
    sy_tokcache_free(x->tokcache);
    x->tokcache = NULL;
#endif
}
