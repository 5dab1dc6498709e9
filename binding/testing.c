/* testing — native allocations the tests can make and free, to see the
 * allocator's statistics move. Exposed as binding._testAlloc/_testFree, not
 * through the public API, and only in a testing build: binding.gyp compiles
 * this file, with SY_TESTING defined, only when sy_testing=1
 * (scripts/build.js --testing). JS thread only. */
#include "addon.h"

#ifndef SY_TESTING
#error "binding/testing.c is compiled in testing builds only (binding.gyp: sy_testing=1)"
#endif

#include <string.h>

#include "base/sy_alloc.h"
#include "sy_napi.h"

/* Largest single test block: 1 GiB. */
#define SY_TEST_MAX_BLOCK ((int64_t)1 << 30)

static sy_addon_t *addon_of(napi_env env, napi_callback_info info) {
    void *data = NULL;
    if (!sy_napi_ok(env, napi_get_cb_info(env, info, NULL, NULL, NULL, &data), "napi_get_cb_info"))
        return NULL;
    return data;
}

/* The addon's test blocks, and the call's one argument: an integer within
 * [min, max]. */
static sy_test_blocks_t *blocks_arg(napi_env env, napi_callback_info info, const char *name, int64_t min, int64_t max,
                                    int64_t *out) {
    napi_value argv[1];
    size_t argc = 1;
    sy_addon_t *addon = addon_of(env, info);
    if (addon == NULL || !sy_napi_args(env, info, 1, &argc, argv, NULL) ||
        !sy_napi_get_int64(env, argv[0], name, min, max, out))
        return NULL;
    return &addon->test;
}

/* Room for one more block in t. */
static bool blocks_grow(napi_env env, sy_test_blocks_t *t) {
    if (t->count < t->cap)
        return true;
    size_t cap = t->cap ? t->cap * 2 : 64;
    void **blocks = sy_realloc(t->blocks, cap * sizeof(*blocks));
    if (blocks == NULL) {
        sy_napi_throw_oom(env, NULL);
        return false;
    }
    t->blocks = blocks;
    t->cap = cap;
    return true;
}

/* _testAlloc(bytes) -> id: allocates `bytes` through sy_malloc and writes
 * every byte, so its pages are resident. */
static napi_value test_alloc(napi_env env, napi_callback_info info) {
    int64_t bytes = 0;
    sy_test_blocks_t *t = blocks_arg(env, info, "bytes", 1, SY_TEST_MAX_BLOCK, &bytes);
    if (t == NULL || !blocks_grow(env, t))
        return NULL;
    void *p = sy_malloc((size_t)bytes);
    if (p == NULL) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    memset(p, 0x5c, (size_t)bytes);
    t->blocks[t->count] = p;
    napi_value id;
    if (!sy_napi_ok(env, napi_create_int64(env, (int64_t)t->count, &id), "napi_create_int64")) {
        sy_free(p);
        return NULL;
    }
    t->count++;
    return id;
}

/* _testFree(id) -> boolean: frees a block made by _testAlloc; false if the
 * id is unknown or already freed. */
static napi_value test_free(napi_env env, napi_callback_info info) {
    int64_t id = 0;
    bool freed = false;
    sy_test_blocks_t *t = blocks_arg(env, info, "id", 0, INT32_MAX, &id);
    if (t == NULL)
        return NULL;
    if ((size_t)id < t->count && t->blocks[id] != NULL) {
        sy_free(t->blocks[id]);
        t->blocks[id] = NULL;
        freed = true;
    }
    return sy_napi_make_bool(env, freed);
}

/* _testAllocPeak() -> number: the system build's highest `allocated` since
 * the last call (which starts a new window); -1 in the jemalloc build
 * (sy_alloc_test_peak). */
static napi_value test_alloc_peak(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value v;
    if (!sy_napi_ok(env, napi_create_int64(env, sy_alloc_test_peak(), &v), "napi_create_int64"))
        return NULL;
    return v;
}

bool sy_binding_testing_init(napi_env env, napi_value exports, sy_addon_t *addon) {
    return sy_napi_set_function(env, exports, "_testAlloc", test_alloc, addon) &&
           sy_napi_set_function(env, exports, "_testFree", test_free, addon) &&
           sy_napi_set_function(env, exports, "_testAllocPeak", test_alloc_peak, addon);
}

void sy_binding_testing_free(sy_addon_t *addon) {
    sy_test_blocks_t *t = &addon->test;
    for (size_t i = 0; i < t->count; i++)
        sy_free(t->blocks[i]);
    sy_free(t->blocks);
    t->blocks = NULL;
    t->count = t->cap = 0;
}
