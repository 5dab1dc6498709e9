/* addon — module registration and per-environment state; see addon.h. */
#include "addon.h"

#include "base/sy_alloc.h"
#include "bus/sy_redis_alloc.h"
#include "sy_napi.h"

static void addon_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    sy_addon_t *addon = data;
#ifdef SY_TESTING
    sy_binding_testing_free(addon);
#endif
    sy_free(addon);
}

NAPI_MODULE_INIT() {
    /* hiredis' memory through sy_alloc before anything can use it (once
     * per process; every later load, in a worker, finds it done). */
    if (sy_redis_alloc_init() != 0) {
        sy_napi_throw(env, "ERR_SYMPHONY_ALLOCATOR", "symphony: routing hiredis' memory to its allocator failed");
        return NULL;
    }
    sy_addon_t *addon = sy_calloc(1, sizeof(*addon));
    if (addon == NULL) {
        sy_napi_throw_oom(env, "loading the addon");
        return NULL;
    }
    addon->env = env;
    if (!sy_napi_ok(env, napi_set_instance_data(env, addon, addon_finalize, NULL), "napi_set_instance_data")) {
        sy_free(addon);
        return NULL;
    }
    if (!sy_binding_allocator_init(env, exports) || !sy_binding_server_init(env, exports) ||
        !sy_binding_bus_init(env, exports))
        return NULL;
#ifdef SY_TESTING
    if (!sy_binding_testing_init(env, exports, addon))
        return NULL;
#endif
    return exports;
}
