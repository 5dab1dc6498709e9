/* sy_alloc — see sy_alloc.h. The only file that names an allocator. */
#define _GNU_SOURCE
#include "base/sy_alloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sy_thread.h"

/* The system allocator's usable size of a block, the one #if for it:
 * malloc_usable_size (<malloc.h>: glibc and musl), malloc_size on macOS,
 * _msize on Windows (the C runtime's heap, HeapAlloc's).
 * SY_SYS_COUNTS: the system build counts its bytes (glibc, macOS and
 * Windows; musl's sizes are not worth the cost). */
#if defined(__APPLE__)
#include <malloc/malloc.h>
#define sy_sys_usable(p) malloc_size(p)
#define SY_SYS_COUNTS 1
#elif defined(_WIN32)
#include <malloc.h>
#define sy_sys_usable(p) _msize(p)
#define SY_SYS_COUNTS 1
#else
#include <malloc.h>
#define sy_sys_usable(p) malloc_usable_size(p)
#if defined(__GLIBC__)
#define SY_SYS_COUNTS 1
#include <gnu/libc-version.h>
#endif
#endif

#ifdef SY_TESTING
/* sy_alloc_test_move_all: every block moves (testing builds only). */
static atomic_bool move_all;

void sy_alloc_test_move_all(bool on) { atomic_store_explicit(&move_all, on, memory_order_relaxed); }
bool sy_alloc_moving_all(void) { return atomic_load_explicit(&move_all, memory_order_relaxed); }
#endif

/* A probe block for the self-check: large enough not to be a special case,
 * small enough to come from a slab. */
#define SY_PROBE_SIZE 256

#ifdef SY_USE_JEMALLOC

#include <jemalloc/jemalloc.h>

/* Baked-in defaults; SY_JE_MALLOC_CONF overrides any of them at startup.
 *   narenas:1          the JS thread(s) share one automatic arena; every IO
 *                      thread gets its own explicit arena (sy_alloc_arena_create),
 *                      so jemalloc's 4 arenas per CPU would only hold waste.
 *   slab_sizes:1-4096:1  one-page slabs for every size class up to 4 KiB
 *                      (jemalloc's default slabs span up to 7 pages). OpenSSL's
 *                      ~40 blocks per TLS connection cannot be moved by the
 *                      reclaim, so after a drop each surviving block pins its
 *                      whole slab; with one page per slab a TLS server that
 *                      fell from 5,000 connections to 500 kept 37% of its
 *                      peak's pages instead of 59% (the peak itself +6%).
 *   muzzy_decay_ms:0   freed pages go back with MADV_DONTNEED once their dirty
 *                      decay ends, instead of lingering as lazily-freed (still
 *                      counted in RSS) pages.
 *   dirty_decay_ms     jemalloc's 10 s default: bursts reuse their pages.
 *   background_thread  off: no threads of ours that the user did not start. */
#define SY_JE_BUILTIN_CONF "narenas:1,slab_sizes:1-4096:1,dirty_decay_ms:10000,muzzy_decay_ms:0,background_thread:false"

#if defined(_WIN32)
/* PE has no weak definitions: the archive's sy_je_malloc_conf is a plain
 * one (NULL), so it is set at load, before jemalloc's first use (it reads
 * its configuration once, at its first allocation). */
SY_CONSTRUCTOR(sy_je_conf_set) { sy_je_malloc_conf = SY_JE_BUILTIN_CONF; }
#else
const char *sy_je_malloc_conf = SY_JE_BUILTIN_CONF;
#endif

/* A marker that survives stripping, so that a .node that cannot be loaded
 * here (another libc or CPU) can still be checked for what it carries. */
#define SY_STR2(x) #x
#define SY_STR(x) SY_STR2(x)
#if defined(__GLIBC__)
#define SY_LIBC "glibc"
#elif defined(__APPLE__)
#define SY_LIBC "darwin"
#elif defined(_WIN32)
#define SY_LIBC "win32"
#else
#define SY_LIBC "musl"
#endif
#if defined(__x86_64__)
#define SY_ARCH "x64"
#elif defined(__aarch64__)
#define SY_ARCH "arm64"
#else
#define SY_ARCH "other"
#endif
#ifndef SY_LG_PAGE
#define SY_LG_PAGE 0
#endif
SY_ATTR_USED static const char sy_build_marker[] = "symphony-build: allocator=jemalloc-" JEMALLOC_VERSION
                                                   " lg-page=" SY_STR(SY_LG_PAGE) " libc=" SY_LIBC " arch=" SY_ARCH;

/* Explicit arenas made so far (for IO threads; pooled, never destroyed). */
static atomic_uint created_arenas;

void *sy_malloc(size_t size) { return sy_je_malloc(size); }
void *sy_calloc(size_t count, size_t size) { return sy_je_calloc(count, size); }
void *sy_realloc(void *ptr, size_t size) { return sy_je_realloc(ptr, size); }
void sy_free(void *ptr) { sy_je_free(ptr); }
size_t sy_alloc_usable(const void *ptr) { return ptr != NULL ? sy_je_malloc_usable_size((void *)ptr) : 0; }

const char *sy_alloc_name(void) { return "jemalloc"; }

const char *sy_alloc_build(void) { return sy_build_marker; }

const char *sy_alloc_version(void) {
    const char *v = NULL;
    size_t sz = sizeof(v);
    if (sy_je_mallctl("version", &v, &sz, NULL, 0) != 0 || v == NULL)
        return "unknown";
    return v;
}

static int read_size(const char *name, size_t *out) {
    size_t sz = sizeof(*out);
    return sy_je_mallctl(name, out, &sz, NULL, 0);
}

static int read_stat(const char *name, int64_t *out) {
    size_t v = 0;
    int rc = read_size(name, &v);
    *out = rc == 0 ? (int64_t)v : -1;
    return rc;
}

static int refresh_epoch(void) {
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch);
    return sy_je_mallctl("epoch", &epoch, &sz, &epoch, sz);
}

sy_err_t sy_alloc_stats(sy_alloc_stats_t *out) {
    int rc = refresh_epoch();
    if (rc != 0)
        return rc;
    if ((rc = read_stat("stats.allocated", &out->allocated)) != 0 ||
        (rc = read_stat("stats.active", &out->active)) != 0 ||
        (rc = read_stat("stats.resident", &out->resident)) != 0 ||
        (rc = read_stat("stats.mapped", &out->mapped)) != 0 ||
        (rc = read_stat("stats.retained", &out->retained)) != 0 ||
        (rc = read_stat("stats.metadata", &out->metadata)) != 0)
        return rc;
    char name[64];
    int n = snprintf(name, sizeof(name), "stats.arenas.%u.tcache_bytes", (unsigned)MALLCTL_ARENAS_ALL);
    if (n < 0 || (size_t)n >= sizeof(name))
        return EINVAL;
    return read_stat(name, &out->cached);
}

static int read_ssize(const char *name, int64_t *out) {
    ssize_t v = 0;
    size_t sz = sizeof(v);
    int rc = sy_je_mallctl(name, &v, &sz, NULL, 0);
    if (rc == 0)
        *out = (int64_t)v;
    return rc;
}

static int read_bool(const char *name, bool *out) {
    size_t sz = sizeof(*out);
    return sy_je_mallctl(name, out, &sz, NULL, 0);
}

static int read_str(const char *name, const char **out) {
    size_t sz = sizeof(*out);
    return sy_je_mallctl(name, (void *)out, &sz, NULL, 0);
}

/* Captured once, at the first call, like jemalloc reads it at its start. */
static const char *env_conf_at_start(void) {
    static _Atomic(const char *) cached;
    static atomic_bool done;
    if (!atomic_load_explicit(&done, memory_order_acquire)) {
        atomic_store_explicit(&cached, getenv("SY_JE_MALLOC_CONF"), memory_order_relaxed);
        atomic_store_explicit(&done, true, memory_order_release);
    }
    return atomic_load_explicit(&cached, memory_order_relaxed);
}

sy_err_t sy_alloc_config(sy_alloc_config_t *out) {
    int rc;
    memset(out, 0, sizeof(*out));
    if ((rc = read_size("arenas.page", &out->page_size)) != 0)
        return rc;
    size_t sz = sizeof(out->narenas);
    if ((rc = sy_je_mallctl("opt.narenas", &out->narenas, &sz, NULL, 0)) != 0)
        return rc;
    sz = sizeof(out->arenas);
    if ((rc = sy_je_mallctl("arenas.narenas", &out->arenas, &sz, NULL, 0)) != 0)
        return rc;
    if ((rc = read_ssize("arenas.dirty_decay_ms", &out->dirty_decay_ms)) != 0 ||
        (rc = read_ssize("arenas.muzzy_decay_ms", &out->muzzy_decay_ms)) != 0 ||
        (rc = read_str("opt.thp", &out->thp)) != 0)
        return rc;
    /* jemalloc has no background threads on Windows: there, none run. */
    if ((rc = read_bool("background_thread", &out->background_thread)) != 0 && rc != ENOENT)
        return rc;
    out->metadata_thp_known = read_str("opt.metadata_thp", &out->metadata_thp) == 0;
    out->created_arenas = atomic_load_explicit(&created_arenas, memory_order_relaxed);
    out->builtin_conf = SY_JE_BUILTIN_CONF;
    out->env_conf = env_conf_at_start();
    return 0;
}

/* An action on an arena (or MALLCTL_ARENAS_ALL): "arena.<i>.<op>". */
static int arena_do(unsigned arena, const char *op) {
    char name[64];
    int n = snprintf(name, sizeof(name), "arena.%u.%s", arena, op);
    if (n < 0 || (size_t)n >= sizeof(name))
        return EINVAL;
    return sy_je_mallctl(name, NULL, NULL, NULL, 0);
}

sy_err_t sy_alloc_purge(void) { return arena_do((unsigned)MALLCTL_ARENAS_ALL, "purge"); }

sy_err_t sy_alloc_arena_purge(unsigned arena) { return arena_do(arena, "purge"); }

sy_err_t sy_alloc_decay_all(void) { return arena_do((unsigned)MALLCTL_ARENAS_ALL, "decay"); }

static int set_arena_decay(unsigned arena, const char *which, ssize_t ms) {
    char name[64];
    int n = snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", arena, which);
    if (n < 0 || (size_t)n >= sizeof(name))
        return EINVAL;
    return sy_je_mallctl(name, NULL, NULL, &ms, sizeof(ms));
}

sy_err_t sy_alloc_set_decay(int64_t dirty_ms, int64_t muzzy_ms) {
    ssize_t dirty = (ssize_t)dirty_ms, muzzy = (ssize_t)muzzy_ms;
    int rc;
    if ((rc = sy_je_mallctl("arenas.dirty_decay_ms", NULL, NULL, &dirty, sizeof(dirty))) != 0 ||
        (rc = sy_je_mallctl("arenas.muzzy_decay_ms", NULL, NULL, &muzzy, sizeof(muzzy))) != 0)
        return rc;
    unsigned narenas = 0;
    size_t sz = sizeof(narenas);
    if ((rc = sy_je_mallctl("arenas.narenas", &narenas, &sz, NULL, 0)) != 0)
        return rc;
    for (unsigned i = 0; i < narenas; i++) {
        /* EFAULT: an automatic arena slot that was never initialized. */
        rc = set_arena_decay(i, "dirty", dirty);
        if (rc != 0 && rc != EFAULT)
            return rc;
        rc = set_arena_decay(i, "muzzy", muzzy);
        if (rc != 0 && rc != EFAULT)
            return rc;
    }
    return 0;
}

sy_err_t sy_alloc_background_thread(bool on) { return sy_je_mallctl("background_thread", NULL, NULL, &on, sizeof(on)); }

sy_err_t sy_alloc_arena_create(unsigned *arena) {
    size_t sz = sizeof(*arena);
    int rc = sy_je_mallctl("arenas.create", arena, &sz, NULL, 0);
    if (rc == 0)
        atomic_fetch_add_explicit(&created_arenas, 1, memory_order_relaxed);
    return rc;
}

sy_err_t sy_alloc_thread_use_arena(unsigned arena) {
    return sy_je_mallctl("thread.arena", NULL, NULL, &arena, sizeof(arena));
}

sy_err_t sy_alloc_owner(const void *ptr, unsigned *arena) {
    unsigned ind = 0;
    size_t sz = sizeof(ind);
    int rc = sy_je_mallctl("arenas.lookup", &ind, &sz, (void *)&ptr, sizeof(ptr));
    if (rc == EINVAL)
        return ENOENT;
    if (rc == 0)
        *arena = ind;
    return rc;
}

/* experimental.utilization.query's answer: where a new block would go, then
 * five counts about the slab of the asked pointer and its size class. */
typedef struct util_query {
    void *slabcur;
    size_t nfree, nregs, size, bin_nfree, bin_nregs;
} util_query_t;

static sy_once_t util_mib_once = SY_ONCE_INIT;
static size_t util_mib[3];
static size_t util_miblen;

static void util_mib_init(void) {
    size_t len = sizeof(util_mib) / sizeof(util_mib[0]);
    if (sy_je_mallctlnametomib("experimental.utilization.query", util_mib, &len) == 0)
        util_miblen = len;
}

bool sy_alloc_should_move(const void *ptr) {
    if (ptr != NULL && sy_alloc_moving_all())
        return true;
    if (ptr == NULL || sy_once(&util_mib_once, util_mib_init) != 0 || util_miblen == 0)
        return false;
    util_query_t q;
    size_t sz = sizeof(q);
    if (sy_je_mallctlbymib(util_mib, util_miblen, &q, &sz, (void *)&ptr, sizeof(ptr)) != 0)
        return false;
    /* Large blocks (nregs 1), a full slab, a bin with no free region, or the
     * slab that new blocks come from: moving would not empty anything. */
    if (q.nregs <= 1 || q.nfree == 0 || q.slabcur == NULL || q.bin_nregs == 0)
        return false;
    const char *p = ptr, *cur = q.slabcur;
    if (p >= cur && p < cur + q.size)
        return false;
    /* Less used than the size class's average (the test redis's active
     * defragmentation uses), compared without division. */
    size_t used = q.nregs - q.nfree, bin_used = q.bin_nregs - q.bin_nfree;
    return used * q.bin_nregs < bin_used * q.nregs;
}

void *sy_alloc_move(void *ptr, size_t size) {
    void *moved = sy_je_mallocx(size, MALLOCX_TCACHE_NONE);
    if (moved == NULL)
        return NULL;
    memcpy(moved, ptr, size);
    sy_je_dallocx(ptr, MALLOCX_TCACHE_NONE);
    return moved;
}

sy_err_t sy_alloc_thread_flush(void) { return sy_je_mallctl("thread.tcache.flush", NULL, NULL, NULL, 0); }

sy_err_t sy_alloc_arena_stats(unsigned arena, bool refresh, sy_alloc_arena_stats_t *out) {
    int rc;
    if (refresh && (rc = refresh_epoch()) != 0)
        return rc;
    static const char *const names[] = {"pactive", "pdirty", "pmuzzy", "resident"};
    int64_t *fields[] = {&out->active, &out->dirty, &out->muzzy, &out->resident};
    size_t page = 0;
    if ((rc = read_size("arenas.page", &page)) != 0)
        return rc;
    for (size_t i = 0; i < 4; i++) {
        char name[64];
        int n = snprintf(name, sizeof(name), "stats.arenas.%u.%s", arena, names[i]);
        if (n < 0 || (size_t)n >= sizeof(name))
            return EINVAL;
        size_t v = 0;
        if ((rc = read_size(name, &v)) != 0)
            return rc;
        *fields[i] = (int64_t)(i < 3 ? v * page : v); /* p*: counts of pages */
    }
    return 0;
}

sy_err_t sy_alloc_report(void (*write)(void *ctx, const char *chunk), void *ctx, bool json, const char *opts) {
    char letters[32];
    int n = snprintf(letters, sizeof(letters), "%s%s", json ? "J" : "", opts != NULL ? opts : "");
    if (n < 0 || (size_t)n >= sizeof(letters))
        return EINVAL;
    sy_je_malloc_stats_print(write, ctx, letters);
    return 0;
}

/* The pool of arenas given back by IO threads that ended. */
#define SY_ARENA_POOL 256
static sy_mutex_t pool_lock = SY_MUTEX_INIT;
static unsigned pool[SY_ARENA_POOL];
static unsigned pool_len;

sy_err_t sy_alloc_arena_acquire(unsigned *arena) {
    sy_mutex_lock(&pool_lock);
    bool have = pool_len > 0;
    if (have)
        *arena = pool[--pool_len];
    sy_mutex_unlock(&pool_lock);
    return have ? 0 : sy_alloc_arena_create(arena);
}

void sy_alloc_arena_release(unsigned arena) {
    (void)sy_alloc_arena_purge(arena); /* nothing to do if it fails */
    sy_mutex_lock(&pool_lock);
    if (pool_len < SY_ARENA_POOL)
        pool[pool_len++] = arena;
    sy_mutex_unlock(&pool_lock);
}

#ifdef SY_TESTING
int64_t sy_alloc_test_peak(void) { return -1; }
#endif

#else /* the system allocator */

/* Bytes symphony holds, by usable size, so that stats() has an honest
 * `allocated` without reading the whole process's malloc state. */
static atomic_llong sys_allocated;
#ifdef SY_TESTING
static atomic_llong sys_peak;

int64_t sy_alloc_test_peak(void) {
    return atomic_exchange_explicit(&sys_peak, atomic_load_explicit(&sys_allocated, memory_order_relaxed),
                                    memory_order_relaxed);
}
#endif

static void *count_in(void *p) {
#if defined(SY_SYS_COUNTS)
    if (p != NULL) {
        long long now = atomic_fetch_add_explicit(&sys_allocated, (long long)sy_sys_usable(p), memory_order_relaxed) +
                        (long long)sy_sys_usable(p);
#ifdef SY_TESTING
        long long peak = atomic_load_explicit(&sys_peak, memory_order_relaxed);
        while (now > peak && !atomic_compare_exchange_weak_explicit(&sys_peak, &peak, now, memory_order_relaxed,
                                                                    memory_order_relaxed)) {
        }
#else
        (void)now;
#endif
    }
#endif
    return p;
}

static void count_out(void *p) {
#if defined(SY_SYS_COUNTS)
    if (p != NULL)
        atomic_fetch_sub_explicit(&sys_allocated, (long long)sy_sys_usable(p), memory_order_relaxed);
#else
    (void)p;
#endif
}

void *sy_malloc(size_t size) { return count_in(malloc(size)); }
void *sy_calloc(size_t count, size_t size) { return count_in(calloc(count, size)); }

void *sy_realloc(void *ptr, size_t size) {
#if defined(SY_SYS_COUNTS)
    size_t before = ptr != NULL ? sy_sys_usable(ptr) : 0;
    void *p = realloc(ptr, size);
    if (p != NULL || size == 0) {
        atomic_fetch_sub_explicit(&sys_allocated, (long long)before, memory_order_relaxed);
        count_in(p);
    }
    return p;
#else
    return realloc(ptr, size);
#endif
}

size_t sy_alloc_usable(const void *ptr) { return ptr != NULL ? sy_sys_usable((void *)ptr) : 0; }

void sy_free(void *ptr) {
    count_out(ptr);
    free(ptr);
}

const char *sy_alloc_name(void) { return "system"; }

const char *sy_alloc_build(void) { return "symphony-build: allocator=system"; }

const char *sy_alloc_version(void) {
#if defined(__GLIBC__)
    return gnu_get_libc_version();
#elif defined(__APPLE__)
    return "libmalloc";
#else
    return "unknown";
#endif
}

sy_err_t sy_alloc_stats(sy_alloc_stats_t *out) {
#if defined(SY_SYS_COUNTS)
    out->allocated = atomic_load_explicit(&sys_allocated, memory_order_relaxed);
#else
    out->allocated = -1;
#endif
    out->active = out->resident = out->mapped = out->retained = out->metadata = -1;
    out->cached = 0; /* no caches of ours: `allocated` is exact */
    return 0;
}

sy_err_t sy_alloc_config(sy_alloc_config_t *out) {
    (void)out;
    return ENOTSUP;
}
sy_err_t sy_alloc_purge(void) { return ENOTSUP; }
sy_err_t sy_alloc_arena_purge(unsigned arena) {
    (void)arena;
    return ENOTSUP;
}
sy_err_t sy_alloc_decay_all(void) { return ENOTSUP; }
sy_err_t sy_alloc_set_decay(int64_t dirty_ms, int64_t muzzy_ms) {
    (void)dirty_ms;
    (void)muzzy_ms;
    return ENOTSUP;
}
sy_err_t sy_alloc_background_thread(bool on) {
    (void)on;
    return ENOTSUP;
}
sy_err_t sy_alloc_arena_create(unsigned *arena) {
    (void)arena;
    return ENOTSUP;
}
sy_err_t sy_alloc_arena_acquire(unsigned *arena) {
    (void)arena;
    return ENOTSUP;
}
void sy_alloc_arena_release(unsigned arena) { (void)arena; }
sy_err_t sy_alloc_thread_use_arena(unsigned arena) {
    (void)arena;
    return ENOTSUP;
}
sy_err_t sy_alloc_owner(const void *ptr, unsigned *arena) {
    (void)ptr;
    (void)arena;
    return ENOTSUP;
}
bool sy_alloc_should_move(const void *ptr) { return ptr != NULL && sy_alloc_moving_all(); }
sy_err_t sy_alloc_report(void (*write)(void *ctx, const char *chunk), void *ctx, bool json, const char *opts) {
    (void)write;
    (void)ctx;
    (void)json;
    (void)opts;
    return ENOTSUP;
}
void *sy_alloc_move(void *ptr, size_t size) {
    if (!sy_alloc_moving_all())
        return NULL; /* glibc has no slabs to empty: nothing to gain */
    void *moved = sy_malloc(size);
    if (moved == NULL)
        return NULL;
    memcpy(moved, ptr, size);
    sy_free(ptr);
    return moved;
}
sy_err_t sy_alloc_thread_flush(void) { return ENOTSUP; }
sy_err_t sy_alloc_arena_stats(unsigned arena, bool refresh, sy_alloc_arena_stats_t *out) {
    (void)arena;
    (void)refresh;
    (void)out;
    return ENOTSUP;
}

#endif /* SY_USE_JEMALLOC */

void *sy_memdup(const void *src, size_t len) {
    void *p = sy_malloc(len > 0 ? len : 1);
    if (p != NULL && len > 0)
        memcpy(p, src, len);
    return p;
}

sy_err_t sy_alloc_self_check(sy_alloc_check_t *out) {
    memset(out, 0, sizeof(*out));
    out->probe_size = SY_PROBE_SIZE;
#ifdef SY_USE_JEMALLOC
    out->jemalloc_linked = true;
#endif
    void *ours = sy_malloc(SY_PROBE_SIZE);
    /* The one place a libc block is made on purpose: the counter-probe. */
    void *libc = malloc(SY_PROBE_SIZE);
    if (ours == NULL || libc == NULL) {
        sy_free(ours);
        free(libc);
        return ENOMEM;
    }
    memset(ours, 0xa5, SY_PROBE_SIZE);
    memset(libc, 0x5a, SY_PROBE_SIZE);
    unsigned arena = 0;
    if (sy_alloc_owner(ours, &arena) == 0) {
        out->ours_is_jemalloc = true;
        out->ours_arena = arena;
    }
    out->libc_is_jemalloc = sy_alloc_owner(libc, &arena) == 0;
    free(libc);
    sy_free(ours);
    return 0;
}
