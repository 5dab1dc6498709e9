/*
 * sy_alloc — the only source of native heap memory in symphony.
 *
 * Every C file of src/ and binding/ allocates with the sy_malloc family and
 * nothing else (a test reads the sources to keep it so). Which allocator sits
 * behind it is decided when the addon is built:
 *
 *   - default (SY_USE_JEMALLOC defined): a private, statically linked
 *     jemalloc whose symbols carry the prefix sy_je_ and stay hidden inside
 *     the .node, so the process's own malloc (Node's) is never touched;
 *   - system allocator (SY_USE_JEMALLOC undefined): libc malloc, for
 *     bisecting and as a benchmark arm. No jemalloc in the binary at all.
 *
 * Threads: every function here may be called from any thread. The
 * sy_alloc_thread_* functions act on the calling thread only; a block given
 * to sy_alloc_move (defragmentation) belongs to the calling thread, and
 * nothing else may reference it while it moves.
 *
 * Ownership: a block from sy_malloc, sy_calloc, sy_realloc, sy_memdup or
 * sy_alloc_move is the caller's, freed with sy_free (by any thread). The
 * strings of sy_alloc_name, sy_alloc_version, sy_alloc_build and
 * sy_alloc_config_t are static: not to be freed. Arenas are pooled, never
 * freed: sy_alloc_arena_release gives one back to the pool.
 *
 * Errors: allocation functions return NULL on failure, like malloc; callers
 * check. The control functions return 0 on success or an errno value
 * (ENOTSUP in the system build for what only jemalloc can do).
 * sy_alloc_should_move answers a question (bool).
 */
#ifndef SY_ALLOC_H
#define SY_ALLOC_H

#include "base/sy_errors.h"
#include "base/sy_port.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the compiler may know of the family (as redis' zmalloc.h tells it):
 * a fresh block aliases nothing, and its size is the argument's, so that
 * -Warray-bounds, _FORTIFY_SOURCE and the sanitizers see overruns. */
#define SY_ALLOC_FRESH SY_ATTR_MALLOC
#define SY_ALLOC_SIZE(n) SY_ATTR_ALLOC_SIZE(n)
#define SY_ALLOC_SIZE2(n, m) SY_ATTR_ALLOC_SIZE2(n, m)

SY_ALLOC_FRESH SY_ALLOC_SIZE(1) void *sy_malloc(size_t size);
SY_ALLOC_FRESH SY_ALLOC_SIZE2(1, 2) void *sy_calloc(size_t count, size_t size);
/* Like realloc: on failure returns NULL and leaves ptr untouched. */
SY_ALLOC_SIZE(2) void *sy_realloc(void *ptr, size_t size);
/* NULL is a no-op. */
void sy_free(void *ptr);
/* The usable size of a live block from this module (0 for NULL). */
size_t sy_alloc_usable(const void *ptr);
/* A copy of len bytes at src, or NULL. Never reads more than len bytes. */
SY_ALLOC_FRESH SY_ALLOC_SIZE(2) void *sy_memdup(const void *src, size_t len);

/* "jemalloc" or "system". */
const char *sy_alloc_name(void);
/* jemalloc's version string, or the C library's version in the system build. */
const char *sy_alloc_version(void);
/* The build marker ("symphony-build: allocator=... lg-page=... libc=...
 * arch=..."), also searched for in the binary by the artifact tests. */
const char *sy_alloc_build(void);

/* Unknown values are reported as -1. */
typedef struct sy_alloc_stats {
    int64_t allocated; /* bytes handed out to symphony and not yet freed */
    int64_t active;    /* bytes in pages that hold live allocations */
    int64_t resident;  /* bytes physically resident in the allocator's mappings */
    int64_t mapped;    /* bytes in active extents mapped by the allocator */
    int64_t retained;  /* bytes kept as virtual memory, returned to the OS */
    int64_t metadata;  /* bytes of the allocator's own bookkeeping */
    int64_t cached;    /* of `allocated`, bytes freed into threads' caches, not yet
                          back in their slabs (0 in the system build) */
} sy_alloc_stats_t;

/* Fresh statistics (jemalloc's epoch is advanced first). In the system build
 * only `allocated` is known (symphony's own bytes, counted by this module). */
sy_err_t sy_alloc_stats(sy_alloc_stats_t *out);

typedef struct sy_alloc_config {
    size_t page_size;        /* jemalloc's compiled page (arenas.page); 0 if unknown */
    unsigned narenas;        /* opt.narenas (automatic arenas) */
    unsigned arenas;         /* arenas that exist now (automatic + explicit) */
    unsigned created_arenas; /* explicit arenas made for IO threads (pooled, never freed) */
    int64_t dirty_decay_ms;  /* current default for new arenas (arenas.dirty_decay_ms) */
    int64_t muzzy_decay_ms;  /* current default for new arenas (arenas.muzzy_decay_ms) */
    bool background_thread;  /* background_thread, as it is now */
    const char *thp;         /* opt.thp: "default", "always" or "never" */
    bool metadata_thp_known;
    const char *metadata_thp; /* opt.metadata_thp: "disabled", "auto" or "always" */
    const char *builtin_conf; /* the configuration string baked into the build */
    const char *env_conf;     /* SY_JE_MALLOC_CONF as read at startup, or NULL */
} sy_alloc_config_t;

/* The configuration in force. ENOTSUP in the system build. */
sy_err_t sy_alloc_config(sy_alloc_config_t *out);

/* Returns all unused dirty pages of every arena to the OS now. */
sy_err_t sy_alloc_purge(void);
/* Sets the decay times of every existing arena and the default for new ones.
 * -1 disables decay (pages kept), 0 returns them at once. */
sy_err_t sy_alloc_set_decay(int64_t dirty_ms, int64_t muzzy_ms);
/* Turns jemalloc's background purging threads on or off. */
sy_err_t sy_alloc_background_thread(bool on);

/* Creates a new arena and stores its index in *arena. */
sy_err_t sy_alloc_arena_create(unsigned *arena);
/* An arena for an IO thread: one given back earlier, or a new one. Arenas
 * cannot be destroyed while blocks from them may still be alive elsewhere,
 * so they are pooled: a server started a thousand times uses as many arenas
 * as it ever had threads at once. */
sy_err_t sy_alloc_arena_acquire(unsigned *arena);
/* Purges the arena's unused pages and puts it back in the pool. */
void sy_alloc_arena_release(unsigned arena);
/* Makes the calling thread allocate from `arena` from now on. */
sy_err_t sy_alloc_thread_use_arena(unsigned arena);
/* Purges (returns to the OS) the unused dirty pages of one arena. */
sy_err_t sy_alloc_arena_purge(unsigned arena);
/* Returns the pages whose decay time has passed, in every arena. jemalloc
 * only decays an arena when it allocates or frees; an idle server calls
 * this (IO thread 0, once a second) so that freed memory goes back on time
 * even when nothing else happens. Cheap when there is nothing to do. */
sy_err_t sy_alloc_decay_all(void);

/* ---- Active defragmentation (after a drop in connections) ----------------
 * A long-lived block (a connection) left alone in a mostly empty slab keeps
 * the slab's pages in use. Moving the few survivors into fuller slabs lets
 * the emptied slabs go back to the OS. The IO thread that owns the blocks
 * does this with the three calls below; nothing else may reference a block
 * while it moves. */

/* True when the block at ptr (from sy_malloc, of a small size class) sits in
 * a slab used less than its size class's average in its arena and is not the
 * slab new blocks come from: moving it helps that slab empty. Uses jemalloc's
 * experimental.utilization.query. Always false in the system build. */
bool sy_alloc_should_move(const void *ptr);
/* Moves a size-byte block: new memory taken past the thread's cache (so from
 * the arena's current, fullest-first slab), the bytes copied, the old block
 * freed past the cache (straight back into its slab). Returns the new block,
 * or NULL (ptr untouched) when out of memory or in the system build. */
SY_ALLOC_SIZE(2) void *sy_alloc_move(void *ptr, size_t size);
/* Returns the calling thread's cached free blocks to their slabs, so that a
 * slab whose blocks are all free can be given back. */
sy_err_t sy_alloc_thread_flush(void);

#ifdef SY_TESTING
/* For tests (built with SY_TESTING only): when on, sy_alloc_should_move
 * answers true for every block and sy_alloc_move moves every block (in the
 * system build too, with malloc, memcpy and free), and the reclaim runs
 * without an arena of its own, so that the sanitizers and valgrind see any
 * pointer left behind by a move. */
void sy_alloc_test_move_all(bool on);
/* The system build's highest `allocated` (sy_alloc_stats) since the last
 * call, which starts a new window from the current value: what a bounded
 * operation cost at its peak. -1 in the jemalloc build. */
int64_t sy_alloc_test_peak(void);
/* True while sy_alloc_test_move_all is on. */
bool sy_alloc_moving_all(void);
#else
/* Production builds: never (the test hook is not compiled in). */
static inline bool sy_alloc_moving_all(void) { return false; }
#endif

/* One arena's pages, in bytes; -1 when unknown. */
typedef struct sy_alloc_arena_stats {
    int64_t active;   /* pages holding live blocks */
    int64_t dirty;    /* unused pages not yet given back (decaying) */
    int64_t muzzy;    /* pages given back lazily (MADV_FREE), still in RSS until reclaimed */
    int64_t resident; /* the arena's resident pages, its metadata included */
} sy_alloc_arena_stats_t;

/* Fresh statistics of one arena (call sy_alloc_stats first, or pass
 * refresh = true to advance jemalloc's epoch). ENOTSUP in the system build,
 * EFAULT/ENOENT for an arena that does not exist. */
sy_err_t sy_alloc_arena_stats(unsigned arena, bool refresh, sy_alloc_arena_stats_t *out);

/* jemalloc's whole statistics report (malloc_stats_print), written through
 * write(ctx, chunk) in pieces. json: in JSON ("J") rather than text; opts
 * are jemalloc's other letters (e.g. "a" to leave out per-arena tables).
 * ENOTSUP in the system build. */
sy_err_t sy_alloc_report(void (*write)(void *ctx, const char *chunk), void *ctx, bool json, const char *opts);

/* Asks jemalloc which arena owns ptr. Returns 0 and sets *arena when jemalloc
 * owns it, ENOENT when it does not, ENOTSUP in the system build. Safe for any
 * pointer: the build carries a fix for jemalloc 5.3.0's arenas.lookup, which
 * faulted on pointers it never mapped. */
sy_err_t sy_alloc_owner(const void *ptr, unsigned *arena);

typedef struct sy_alloc_check {
    bool jemalloc_linked;  /* the build has a jemalloc in it */
    bool ours_is_jemalloc; /* a live sy_malloc block is owned by jemalloc */
    unsigned ours_arena;   /* ... in this arena */
    bool libc_is_jemalloc; /* a live libc malloc block is owned by jemalloc (must be false) */
    size_t probe_size;     /* bytes of each probe block */
} sy_alloc_check_t;

/* Proves which allocator serves sy_malloc: allocates a live block through
 * this module and a live block through the C library's malloc, and asks
 * jemalloc (arenas.lookup) about each. Returns 0 when the checks could be
 * made, ENOMEM when a probe block could not be allocated. */
sy_err_t sy_alloc_self_check(sy_alloc_check_t *out);

#endif
