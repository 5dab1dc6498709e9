/* server_events — the IO threads' event batches to JS: each event one call
 * of the dispatch function lib/server.js gave serverListen, as
 * (type, id, arg, payload), made by its row of EVENTS. */
#include "server.h"

#include <string.h>

#include "io/app/sy_ask.h"
#include "sy_napi.h"

/* How an event's third argument is made from the event. */
typedef enum {
    ARG_NONE,     /* no row: as ARG_CODE */
    ARG_FLAGS,    /* ev.flags */
    ARG_CODE,     /* ev.code */
    ARG_ASK,      /* (code << 8) | kind */
    ARG_RECOVERY, /* (reason << 2) | flags (SY_EV_RECOVERED, SY_EV_RECOVERY_AT_OPEN) */
} arg_t;

/* How its payload is made: a Buffer, a UTF-8 string, or an array of the
 * u32-length strings sy_batch_add_strings wrote. */
typedef enum {
    PAY_NONE, /* no row: as PAY_UTF8 */
    PAY_BUFFER,
    PAY_UTF8,
    PAY_LATIN1_LIST,     /* the request's bytes as they came */
    PAY_ASK_LIST,        /* UTF-8; the last a Buffer when it came in a binary frame */
    PAY_UTF8_BYTES_LIST, /* UTF-8; the last (a body) a Buffer */
    PAY_UTF8_LIST,       /* UTF-8, every one */
} payload_t;

/* One row per event the IO threads send to JS (io/sy_events.h), by type
 * (SY_EV_STOPPED is the binding's own); a type without a row: (code, text). */
static const struct {
    uint8_t arg, payload;
} EVENTS[] = {
    [SY_EV_UPGRADE] = {ARG_FLAGS, PAY_LATIN1_LIST}, /* flags: SY_EV_UPGRADE_SSE */
    [SY_EV_OPEN] = {ARG_FLAGS, PAY_UTF8},           /* flags: SY_EV_OPEN_*; the protocol */
    [SY_EV_MESSAGE] = {ARG_FLAGS, PAY_BUFFER},      /* flags: 1 binary */
    [SY_EV_CLOSE] = {ARG_CODE, PAY_UTF8},           /* the code, the reason */
    [SY_EV_DRAIN] = {ARG_CODE, PAY_UTF8},
    [SY_EV_FAILED] = {ARG_CODE, PAY_UTF8},
    [SY_EV_RECOVERY] = {ARG_RECOVERY, PAY_UTF8}, /* the topic */
    [SY_EV_TOPIC] = {ARG_FLAGS, PAY_UTF8},       /* flags: SY_EV_TOPIC_ON; the topic */
    [SY_EV_ASK] = {ARG_ASK, PAY_ASK_LIST},
    [SY_EV_POST] = {ARG_FLAGS, PAY_UTF8_BYTES_LIST}, /* flags: 1 binary; [name, body] */
    [SY_EV_PUSHER] = {ARG_ASK, PAY_UTF8_LIST},       /* (app << 8) | kind; io/app/sy_pusher_presence.h */
    [SY_EV_PUSHER_HOOK] = {ARG_CODE, PAY_UTF8},      /* code: the app's index; the event's JSON */
};
#define EVENT_ROWS (sizeof(EVENTS) / sizeof(EVENTS[0]))

void sy_bevents_on_batch(void *ctx, sy_batch_t *batch) {
    sy_bserver_t *b = ctx;
    if (napi_call_threadsafe_function(b->tsfn, batch, napi_tsfn_nonblocking) != napi_ok)
        sy_batch_free(batch); /* closing: nobody will read it */
}

static bool call_dispatch(napi_env env, napi_value fn, napi_value *argv, size_t argc) {
    napi_value global, result;
    if (napi_get_global(env, &global) != napi_ok)
        return false;
    napi_status st = napi_call_function(env, global, fn, argc, argv, &result);
    if (st == napi_pending_exception) {
        /* A listener threw: report it as an uncaught exception and go on
         * with the rest of the batch. */
        napi_value err;
        if (napi_get_and_clear_last_exception(env, &err) == napi_ok)
            (void)napi_fatal_exception(env, err);
        return true;
    }
    return st == napi_ok;
}

/* A payload of u32-length strings as an array of strings, latin1 or UTF-8;
 * the last one a Buffer when last_bytes. NULL on a napi failure. */
static napi_value strings_payload(napi_env env, const uint8_t *p, size_t len, bool utf8, bool last_bytes) {
    napi_value arr;
    if (napi_create_array(env, &arr) != napi_ok)
        return NULL;
    size_t pos = 0;
    uint32_t i = 0;
    while (pos + sizeof(uint32_t) <= len) {
        uint32_t n;
        memcpy(&n, p + pos, sizeof(n));
        pos += sizeof(n);
        if (n > len - pos)
            break;
        napi_value v;
        napi_status st;
        if (last_bytes && pos + n == len)
            st = napi_create_buffer_copy(env, n, p + pos, NULL, &v);
        else if (utf8)
            st = napi_create_string_utf8(env, (const char *)p + pos, n, &v);
        else
            st = napi_create_string_latin1(env, (const char *)p + pos, n, &v);
        if (st != napi_ok || napi_set_element(env, arr, i++, v) != napi_ok)
            return NULL;
        pos += n;
    }
    return arr;
}

/* The event's (type, id, arg, payload) into argv, by its row. */
static bool event_args(napi_env env, const sy_event_t *ev, const uint8_t *payload, napi_value *argv) {
    uint8_t arg = ev->type < EVENT_ROWS ? EVENTS[ev->type].arg : ARG_NONE;
    uint8_t pay = ev->type < EVENT_ROWS ? EVENTS[ev->type].payload : PAY_NONE;
    uint32_t a = ev->code;
    if (arg == ARG_FLAGS)
        a = ev->flags;
    else if (arg == ARG_ASK)
        a = ((uint32_t)ev->code << 8) | ev->flags;
    else if (arg == ARG_RECOVERY)
        a = ((uint32_t)ev->code << 2) | (ev->flags & 3u);
    if (napi_create_uint32(env, ev->type, &argv[0]) != napi_ok ||
        napi_create_double(env, (double)ev->conn, &argv[1]) != napi_ok ||
        napi_create_uint32(env, a, &argv[2]) != napi_ok)
        return false;
    const char *s = (const char *)payload;
    switch (pay) {
    case PAY_BUFFER:
        return napi_create_buffer_copy(env, ev->len, payload, NULL, &argv[3]) == napi_ok;
    case PAY_LATIN1_LIST:
        return (argv[3] = strings_payload(env, payload, ev->len, false, false)) != NULL;
    case PAY_ASK_LIST: /* a subscribe's or unsubscribe's parts are all text */
        return (argv[3] = strings_payload(env, payload, ev->len, true,
                                          (ev->code & SY_ASK_BINARY) != 0 && ev->flags != 's' && ev->flags != 'u')) !=
               NULL;
    case PAY_UTF8_BYTES_LIST:
        return (argv[3] = strings_payload(env, payload, ev->len, true, true)) != NULL;
    case PAY_UTF8_LIST:
        return (argv[3] = strings_payload(env, payload, ev->len, true, false)) != NULL;
    default: /* PAY_UTF8, PAY_NONE */
        return napi_create_string_utf8(env, s, ev->len, &argv[3]) == napi_ok;
    }
}

/* Every IO thread has stopped: the server is joined and freed, JS hears
 * SY_EV_CLOSED, and the thread-safe function is released. */
static void all_stopped(napi_env env, napi_value fn, sy_bserver_t *b) {
    sy_server_join(b->srv);
    sy_bserver_destroy(b);
    if (b->hook) {
        (void)napi_remove_env_cleanup_hook(env, sy_bserver_cleanup_hook, b);
        b->hook = false;
    }
    napi_value argv[4];
    if (napi_create_uint32(env, SY_EV_CLOSED, &argv[0]) == napi_ok && napi_create_double(env, 0, &argv[1]) == napi_ok &&
        napi_get_undefined(env, &argv[2]) == napi_ok && napi_get_undefined(env, &argv[3]) == napi_ok)
        call_dispatch(env, fn, argv, 4);
    (void)napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
}

/* The batch goes back through the server (the IO thread's flow-control
 * count and the connections awaiting the owner, sy_events.h, see it
 * handled), or is freed when the server is gone. */
static void batch_done(sy_bserver_t *b, sy_batch_t *batch) {
    if (b->srv != NULL)
        sy_server_batch_done(b->srv, batch);
    else
        sy_batch_free(batch);
}

void sy_bevents_call_js(napi_env env, napi_value fn, void *context, void *data) {
    sy_bserver_t *b = context;
    sy_batch_t *batch = data;
    if (env == NULL) {
        sy_batch_free(batch);
        return;
    }
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) {
        batch_done(b, batch); /* its events are lost */
        return;
    }
    size_t pos = 0;
    sy_event_t ev;
    const uint8_t *payload;
    bool stopped = false;
    while (sy_batch_next(batch, &pos, &ev, &payload)) {
        if (ev.type == SY_EV_STOPPED) {
            stopped = b->srv != NULL && ++b->stopped == sy_server_threads(b->srv);
            continue;
        }
        napi_handle_scope inner;
        if (napi_open_handle_scope(env, &inner) != napi_ok)
            break;
        napi_value argv[4];
        if (event_args(env, &ev, payload, argv))
            call_dispatch(env, fn, argv, 4);
        napi_close_handle_scope(env, inner);
    }
    batch_done(b, batch);
    if (stopped && b->srv != NULL)
        all_stopped(env, fn, b);
    napi_close_handle_scope(env, scope);
}
