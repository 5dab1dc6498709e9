/*
 * guard.h — test helper: places an input flush against a PROT_NONE guard
 * page, so a parser reading even one byte past the end of its input faults
 * (SIGSEGV), with or without sanitizers. A second guard page sits before the
 * data, so reading before the start of a page-sized input faults too.
 *
 *     guard_t g;
 *     const char *p = guard_place(&g, "GET / HTTP/1.1\r\n", 16);
 *     ... parse p[0..16) ...
 *     guard_release(&g);
 *
 * The copy is writable (for in-place unmasking tests). Test code only: on
 * failure it prints and exits with status 2.
 *
 * Include it first, or define _DEFAULT_SOURCE before any system header (for
 * MAP_ANONYMOUS under -std=c11).
 */
#ifndef SY_TEST_GUARD_H
#define SY_TEST_GUARD_H

#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    unsigned char *map;
    size_t map_len;
    unsigned char *data; /* the copy; data + len is the first guard byte */
    size_t len;
} guard_t;

static inline void *guard_place(guard_t *g, const void *src, size_t len)
{
    long ps = sysconf(_SC_PAGESIZE);
    size_t page = (ps > 0) ? (size_t)ps : 4096u;
    size_t data_pages = (len + page - 1) / page;
    void *m;

    if (data_pages == 0)
        data_pages = 1;
    g->map_len = (data_pages + 2) * page;
    m = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("guard_place: mmap");
        exit(2);
    }
    g->map = m;
    if (mprotect(g->map, page, PROT_NONE) != 0 ||
        mprotect(g->map + g->map_len - page, page, PROT_NONE) != 0) {
        perror("guard_place: mprotect");
        exit(2);
    }
    g->len = len;
    g->data = g->map + g->map_len - page - len;
    if (len > 0)
        memcpy(g->data, src, len);
    return g->data;
}

/* For string literals and C strings (without the NUL). */
static inline const char *guard_str(guard_t *g, const char *s)
{
    return guard_place(g, s, strlen(s));
}

static inline void guard_release(guard_t *g)
{
    if (g->map != NULL && munmap(g->map, g->map_len) != 0) {
        perror("guard_release: munmap");
        exit(2);
    }
    g->map = NULL;
    g->data = NULL;
    g->len = 0;
}

#endif
