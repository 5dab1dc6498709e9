/* test_alloc — src/sy_alloc: which allocator serves symphony (the self-check),
 * its page size, and the defragmentation calls of the memory policy.
 *
 * Built three ways: with the system allocator (make test, make valgrind), and
 * against a prebuilt target's jemalloc (make artifact, for every target of
 * scripts/prebuild.js, natively or under qemu), where SY_LG_PAGE says which
 * page the jemalloc build must report. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "base/sy_alloc.h"

#define BLOCKS 4096
#define BLOCK_SIZE 192

static void test_self_check(void) {
    sy_alloc_check_t c;
    CHECK_EQ(sy_alloc_self_check(&c), 0);
#ifdef SY_USE_JEMALLOC
    CHECK(c.jemalloc_linked);
    CHECK(c.ours_is_jemalloc);
    CHECK(!c.libc_is_jemalloc);
    sy_alloc_config_t cfg;
    CHECK_EQ(sy_alloc_config(&cfg), 0);
#if defined(SY_LG_PAGE) && SY_LG_PAGE > 0
    CHECK_EQU(cfg.page_size, (size_t)1 << SY_LG_PAGE);
#endif
    printf("allocator %s %s, page %zu\n", sy_alloc_name(), sy_alloc_version(), cfg.page_size);
#else
    CHECK(!c.jemalloc_linked);
    CHECK(!c.ours_is_jemalloc);
#endif
}

/* Fills a size class, frees 9 blocks in 10 (scattered), and moves the
 * survivors that the allocator says should move: each keeps its bytes, and in
 * the jemalloc build the moves pack them (active pages fall). */
static void test_defragment(void) {
    static unsigned char *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = sy_malloc(BLOCK_SIZE);
        CHECK(blocks[i] != NULL);
        if (blocks[i] != NULL)
            memset(blocks[i], i & 0xff, BLOCK_SIZE);
    }
    unsigned state = 12345;
    int kept = 0;
    for (int i = 0; i < BLOCKS; i++) {
        state = state * 1103515245u + 12345u;
        if ((state >> 16) % 10 != 0) {
            sy_free(blocks[i]);
            blocks[i] = NULL;
        } else {
            kept++;
        }
    }
    int flushed = sy_alloc_thread_flush();
    CHECK(flushed == 0 || flushed == ENOTSUP);
    sy_alloc_stats_t before, after;
    CHECK_EQ(sy_alloc_stats(&before), 0);
    int moved = 0, bad = 0;
    for (int pass = 0; pass < 4; pass++) {
        for (int i = 0; i < BLOCKS; i++) {
            if (blocks[i] == NULL || !sy_alloc_should_move(blocks[i]))
                continue;
            unsigned char *n = sy_alloc_move(blocks[i], BLOCK_SIZE);
            CHECK(n != NULL);
            if (n == NULL)
                continue;
            blocks[i] = n;
            moved++;
        }
    }
    (void)sy_alloc_thread_flush();
    for (int i = 0; i < BLOCKS; i++) {
        if (blocks[i] == NULL)
            continue;
        for (int k = 0; k < BLOCK_SIZE; k++)
            if (blocks[i][k] != (unsigned char)(i & 0xff))
                bad++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(sy_alloc_stats(&after), 0);
    (void)kept; /* read by the jemalloc build's report only */
#ifdef SY_USE_JEMALLOC
    printf("defragment: %d of %d survivors moved; active %lld -> %lld bytes\n", moved, kept,
           (long long)before.active, (long long)after.active);
    CHECK(moved > 0);
    CHECK(after.active < before.active);
    sy_alloc_arena_stats_t a;
    CHECK_EQ(sy_alloc_arena_stats(0, true, &a), 0);
    CHECK(a.active > 0);
#else
    CHECK_EQ(moved, 0); /* the system build never moves */
    CHECK(sy_alloc_move(blocks[0] != NULL ? blocks[0] : blocks[1], 8) == NULL);
#endif
    for (int i = 0; i < BLOCKS; i++)
        sy_free(blocks[i]);
}

int main(void) {
    test_self_check();
    test_defragment();
    return check_report("test_alloc");
}
