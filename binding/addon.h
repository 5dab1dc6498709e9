/*
 * addon — the per-environment state of the addon and the registration of
 * each part of its exports. One sy_addon_t per napi_env (the main thread and
 * every worker_thread that loads symphony get their own); no globals. It is
 * freed by the instance-data finalizer when its environment shuts down.
 * JS thread of that environment only.
 */
#ifndef SY_ADDON_H
#define SY_ADDON_H

#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef SY_TESTING
typedef struct sy_test_blocks {
    void **blocks; /* live blocks made by _testAlloc, NULL where freed */
    size_t count;
    size_t cap;
} sy_test_blocks_t;
#endif

typedef struct sy_addon {
    napi_env env;
#ifdef SY_TESTING
    sy_test_blocks_t test;
#endif
} sy_addon_t;

/* exports.allocator: the allocator's API (binding/allocator.c). */
bool sy_binding_allocator_init(napi_env env, napi_value exports);
/* exports.server*, exports.statFields and exports.constants: the fan-out
 * server (binding/server*.c, parts listed in binding/server.h). */
bool sy_binding_server_init(napi_env env, napi_value exports);

struct sy_server;
/* The bus (binding/bus.c): serverSetBus's work: reads the bus options
 * (hosts, ports, cluster, prefix, user, pass, maxBuffer, connectTimeout,
 * backoffMin, backoffMax; lib/server.js checks and fills them), makes the
 * state callback's thread-safe function (*tsfn, unref'd; the caller
 * releases it once the server is destroyed) and sets the server's bus.
 * undefined, or NULL with an exception pending. */
napi_value sy_binding_bus_set(napi_env env, struct sy_server *srv, napi_value opts, napi_value fn,
                              napi_threadsafe_function *tsfn);
/* serverBusCall(handle, id, route, args): one Redis command on the bus'
 * connections (sy_bus_call; route null: args[0] published on the nodes'
 * control channel, sy_bus_ctl_publish); its reply reaches onState as ('reply', id,
 * encoded bytes). Returns true when queued, false without a bus or when
 * it stops. */
napi_value sy_binding_bus_call(napi_env env, struct sy_server *srv, napi_threadsafe_function tsfn, napi_value id,
                               napi_value route, napi_value args);
/* stats().bus: its counters and state, or null without a bus. */
napi_value sy_binding_bus_stats(napi_env env, struct sy_server *srv);
/* serverSetPusher's work (binding/pusher.c): the pusher option (lib/pusher/
 * config.js checks and fills it) made into the server's apps and Pusher
 * protocol, before it starts. Its socket ids' node (a number), or NULL with
 * an exception pending. */
napi_value sy_binding_pusher_set(napi_env env, struct sy_server *srv, napi_value opts);
/* serverPublishEvent(handle, topic, data, flags, event): publish() with an
 * event name (the publish's meta: Pusher's event); argv from topic on.
 * Subscribers (a number), or NULL with an exception pending. */
napi_value sy_binding_publish_event(napi_env env, struct sy_server *srv, napi_value *argv);
/* exports.busStatFields: [{ name, metric, type, help }], frozen. */
bool sy_binding_bus_init(napi_env env, napi_value exports);

#ifdef SY_TESTING
/* Testing builds only (scripts/build.js --testing, binding.gyp sy_testing=1,
 * which also compiles binding/testing.c): exports._testAlloc/_testFree,
 * native allocations driven by the tests. */
bool sy_binding_testing_init(napi_env env, napi_value exports, sy_addon_t *addon);
/* Frees what sy_binding_testing_init's functions still hold. */
void sy_binding_testing_free(sy_addon_t *addon);
#endif

#endif
