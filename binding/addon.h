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

typedef struct sy_test_blocks {
    void **blocks; /* live blocks made by _testAlloc, NULL where freed */
    size_t count;
    size_t cap;
} sy_test_blocks_t;

typedef struct sy_addon {
    napi_env env;
    sy_test_blocks_t test;
} sy_addon_t;

/* exports.allocator: the allocator's API (binding/allocator.c). */
bool sy_binding_allocator_init(napi_env env, napi_value exports);
/* exports._testAlloc/_testFree: native allocations driven by the tests
 * (binding/testing.c). */
bool sy_binding_testing_init(napi_env env, napi_value exports, sy_addon_t *addon);
/* exports.server*: the fan-out server (binding/server.c). */
bool sy_binding_server_init(napi_env env, napi_value exports);
/* Frees what sy_binding_testing_init's functions still hold. */
void sy_binding_testing_free(sy_addon_t *addon);

#endif
