/* server — the N-API face of src/sy_server.h (binding.server*): the server
 * handle's lifecycle (create, listen, close, ref, wake, the bus' calls) and
 * the registration of the other parts (server.h lists them). JS thread
 * only. */
#include "server.h"

#include "addon.h"
#include "base/sy_alloc.h"
#include "sy_napi.h"

/* Frees the core server (its threads joined), then lets go of the bus'
 * thread-safe function, which nothing calls any more. */
void sy_bserver_destroy(sy_bserver_t *b) {
    sy_server_destroy(b->srv);
    b->srv = NULL;
    if (b->bus_tsfn != NULL) {
        (void)napi_release_threadsafe_function(b->bus_tsfn, napi_tsfn_abort);
        b->bus_tsfn = NULL;
    }
}

void sy_bserver_maybe_free(sy_bserver_t *b) {
    if (b->js_gone && !b->tsfn_live && b->topics == 0) {
        sy_bserver_destroy(b);
        sy_free(b);
    }
}

/* Joins and frees the core server; idempotent. */
static void stop_now(sy_bserver_t *b) {
    if (b->srv == NULL)
        return;
    if (b->listening) {
        sy_server_shutdown(b->srv, 0);
        sy_server_join(b->srv);
    }
    /* Batches still queued in the thread-safe function are freed by
     * call_js with env == NULL, which never looks at the server. */
    sy_bserver_destroy(b);
}

void sy_bserver_cleanup_hook(void *arg) {
    sy_bserver_t *b = arg;
    b->hook = false;
    stop_now(b);
    if (b->tsfn_live) {
        /* Aborting makes further calls from IO threads fail; they are joined. */
        (void)napi_release_threadsafe_function(b->tsfn, napi_tsfn_abort);
    }
}

static void external_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    sy_bserver_t *b = data;
    b->js_gone = true;
    if (!b->tsfn_live) {
        stop_now(b);
        if (b->hook) {
            (void)napi_remove_env_cleanup_hook(env, sy_bserver_cleanup_hook, b);
            b->hook = false;
        }
    }
    sy_bserver_maybe_free(b);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)data;
    sy_bserver_t *b = hint;
    b->tsfn_live = false;
    sy_bserver_maybe_free(b);
}

/* serverCreate(opts) -> handle. The events' callback is given to
 * serverListen, which keeps it in the thread-safe function. */
napi_value server_create(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    size_t argc = 1;
    sy_server_opts_t o;
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL))
        return NULL;
    bool ok = sy_bopts_decode(env, argv[0], &o);
    sy_bserver_t *b = ok ? sy_calloc(1, sizeof(*b)) : NULL;
    char err[SY_ERRLEN] = "out of memory";
    if (b != NULL)
        b->srv = sy_server_create(&o, sy_bevents_on_batch, b, err, sizeof(err));
    sy_free((char *)o.host);
    sy_free((char *)o.path);
    if (!ok)
        return NULL;
    if (b == NULL || b->srv == NULL) {
        sy_free(b);
        sy_napi_throw(env, "ERR_SYMPHONY_SERVER", err);
        return NULL;
    }
    b->env = env;
    napi_value handle;
    if (!sy_napi_ok(env, napi_create_external(env, b, external_finalize, NULL, &handle), "napi_create_external")) {
        sy_server_destroy(b->srv);
        sy_free(b);
        return NULL;
    }
    return handle;
}

/* serverListen(handle, dispatch, bind) -> port: starts the IO threads,
 * with a listening socket when bind is true (else port 0: noServer, the
 * connections come through serverAdopt). */
napi_value server_listen(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    bool bind = true;
    if (!sy_barg_server(env, info, 3, argv, &b) || !sy_napi_get_bool(env, argv[2], "bind", &bind))
        return NULL;
    if (b->listening) {
        sy_napi_throw(env, "ERR_SERVER_ALREADY_LISTEN", "symphony: the server is already listening");
        return NULL;
    }
    napi_value name;
    if (!sy_napi_ok(env, napi_create_string_utf8(env, "symphony", NAPI_AUTO_LENGTH, &name),
                    "napi_create_string_utf8") ||
        !sy_napi_ok(env,
                    napi_create_threadsafe_function(env, argv[1], NULL, name, 0, 1, NULL, tsfn_finalize, b,
                                                    sy_bevents_call_js, &b->tsfn),
                    "napi_create_threadsafe_function"))
        return NULL;
    b->tsfn_live = true;
    uint16_t port = 0;
    char err[SY_ERRLEN] = "";
    int rc = bind ? sy_server_listen(b->srv, &port, err, sizeof(err)) : sy_server_start(b->srv, err, sizeof(err));
    if (rc != 0) {
        (void)napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
        napi_throw_error(env, "ERR_SYMPHONY_LISTEN", err);
        return NULL;
    }
    b->listening = true;
    if (sy_napi_ok(env, napi_add_env_cleanup_hook(env, sy_bserver_cleanup_hook, b), "napi_add_env_cleanup_hook"))
        b->hook = true;
    else
        return NULL;
    return sy_bval_int(env, port);
}

/* serverWake(handle): the end of a turn in which publish or send queued
 * messages (SY_SEND_LATER): the IO threads take them now. */
napi_value server_wake(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    sy_bserver_t *b;
    size_t argc = 1;
    if (!sy_napi_args(env, info, 1, &argc, argv, NULL) || !sy_barg_handle(env, argv[0], &b))
        return NULL;
    if (b->srv != NULL)
        sy_server_wake(b->srv);
    return NULL;
}

/* serverRef(handle, ref): whether the server's thread-safe function keeps
 * Node's event loop alive (a noServer server not used yet does not; it is
 * ref'd at its first connection and at close). */
napi_value server_ref(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    sy_bserver_t *b;
    size_t argc = 2;
    bool ref = true;
    if (!sy_napi_args(env, info, 2, &argc, argv, NULL) || !sy_barg_handle(env, argv[0], &b) ||
        !sy_napi_get_bool(env, argv[1], "ref", &ref))
        return NULL;
    if (b->tsfn_live) {
        if (ref)
            (void)napi_ref_threadsafe_function(env, b->tsfn);
        else
            (void)napi_unref_threadsafe_function(env, b->tsfn);
    }
    return NULL;
}

/* serverSetBus(handle, opts, onState) -> undefined: before listen. */
napi_value server_set_bus(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    if (!SY_BCALL(env, info, &c, SY_BA_SKIP, SY_BA_SKIP))
        return NULL;
    if (c.b->listening || c.b->bus_tsfn != NULL) {
        sy_napi_throw(env, "ERR_SYMPHONY_BUS", "symphony: the bus must be set once, before the server starts");
        return NULL;
    }
    return sy_binding_bus_set(env, c.b->srv, c.argv[1], c.argv[2], &c.b->bus_tsfn);
}

/* serverSetPusher(handle, pusher) -> node (binding/pusher.c) */
napi_value server_set_pusher(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    return SY_BCALL(env, info, &c, SY_BA_SKIP) ? sy_binding_pusher_set(env, c.b->srv, c.argv[1]) : NULL;
}

/* serverPublishEvent(handle, topic, data, flags, event) -> subscribers (binding/pusher.c) */
napi_value server_publish_event(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    return SY_BCALL(env, info, &c, SY_BA_SKIP, SY_BA_SKIP, SY_BA_SKIP, SY_BA_SKIP)
               ? sy_binding_publish_event(env, c.b->srv, c.argv + 1)
               : NULL;
}

/* serverBusCall(handle, id, route, args) -> boolean (binding/bus.c) */
napi_value server_bus_call(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    return SY_BCALL(env, info, &c, SY_BA_SKIP, SY_BA_SKIP, SY_BA_SKIP)
               ? sy_binding_bus_call(env, c.b->srv, c.b->bus_tsfn, c.argv[1], c.argv[2], c.argv[3])
               : NULL;
}

/* serverBusStats(handle) -> { state, counters... } or null */
napi_value server_bus_stats(napi_env env, napi_callback_info info) {
    sy_bcall_t c;
    return sy_bcall(env, info, &c, NULL, 0) ? sy_binding_bus_stats(env, c.b->srv) : NULL;
}

/* serverClose(handle, deadlineMs) -> bool: begins shutdown (false when the
 * server is not running); the events' callback gets EV_CLOSED once every
 * IO thread has stopped. */
napi_value server_close(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    size_t argc = 2;
    sy_bserver_t *b;
    int64_t deadline;
    if (!sy_napi_args(env, info, 2, &argc, argv, NULL) || !sy_barg_handle(env, argv[0], &b) ||
        !sy_bopts_int(env, argv[1], "closeDeadline", "deadlineMs", &deadline))
        return NULL;
    if (b->srv != NULL && b->listening)
        sy_server_shutdown(b->srv, (unsigned)deadline);
    return sy_napi_make_bool(env, b->srv != NULL && b->listening);
}

bool sy_binding_server_init(napi_env env, napi_value exports) {
    static const sy_bfunction_t fns[] = {
#define SY_BFUNCTION_ROW(js, c) {#js, c},
        SY_BSERVER_FUNCTIONS(SY_BFUNCTION_ROW)
#ifdef SY_WITH_TLS
            SY_BSERVER_TLS_FUNCTIONS(SY_BFUNCTION_ROW)
#endif
#undef SY_BFUNCTION_ROW
    };
    return sy_bval_functions(env, exports, fns, sizeof(fns) / sizeof(fns[0])) && sy_bstats_init(env, exports);
}
