/* sy_redis_alloc — see sy_redis_alloc.h. */
#include "bus/sy_redis_alloc.h"

#include <hiredis/hiredis.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_thread.h"

/* hiredis' strdupFn: a copy with its terminator, from sy_malloc. */
static char *redis_strdup(const char *s) { return sy_memdup(s, strlen(s) + 1); }

static void set_allocators(void) {
    hiredisAllocFuncs fns = {
        .mallocFn = sy_malloc,
        .callocFn = sy_calloc,
        .reallocFn = sy_realloc,
        .strdupFn = redis_strdup,
        .freeFn = sy_free,
    };
    /* Returns the previous table (libc's): nothing to keep. */
    (void)hiredisSetAllocators(&fns);
}

static sy_once_t init_once = SY_ONCE_INIT;

sy_err_t sy_redis_alloc_init(void) { return sy_once(&init_once, set_allocators); }

void *sy_redis_alloc_probe_new(void) {
    if (sy_redis_alloc_init() != 0)
        return NULL;
    return redisReaderCreate();
}

void sy_redis_alloc_probe_free(void *probe) { redisReaderFree(probe); }
