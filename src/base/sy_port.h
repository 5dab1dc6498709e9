/*
 * sy_port — the one door for what the compilers and C runtimes do not share
 * (threads have base/sy_thread.h, time base/sy_clock.h, sockets
 * base/sy_inet.h and net/sy_sock.h): POSIX's ssize_t and strcasecmp, which
 * MSVC's runtime lacks, and the GNU attributes, which MSVC lacks. No other
 * file of src/ or binding/ writes __attribute__ or __builtin_
 * (__test__/repo/boundary.test.js checks it); where C11 has a form (_Noreturn,
 * _Alignas, _Static_assert) the code uses it instead.
 *
 * Threads: any (no state).
 *
 * Ownership: nothing is kept.
 *
 * Errors: none; sy_strcasecmp and sy_strncasecmp answer as strcasecmp does.
 */
#ifndef SY_PORT_H
#define SY_PORT_H

#include <stddef.h>
#include <stdint.h>

/* ssize_t: POSIX's <sys/types.h>; mingw-w64's runtime has it too; MSVC's
 * has not (the same type as hiredis' and jemalloc's stand-ins there). */
#if defined(_MSC_VER)
typedef intptr_t ssize_t;
#else
#include <sys/types.h>
#endif

/* Case-insensitive ASCII comparisons (of protocol words: the C locale). */
#if defined(_WIN32)
#include <string.h>
static inline int sy_strcasecmp(const char *a, const char *b) { return _stricmp(a, b); }
static inline int sy_strncasecmp(const char *a, const char *b, size_t n) { return _strnicmp(a, b, n); }
#else
#include <strings.h>
static inline int sy_strcasecmp(const char *a, const char *b) { return strcasecmp(a, b); }
static inline int sy_strncasecmp(const char *a, const char *b, size_t n) { return strncasecmp(a, b, n); }
#endif

/* What GCC and clang may be told, nothing for MSVC:
 *   SY_ATTR_MALLOC           a fresh block that aliases nothing
 *   SY_ATTR_ALLOC_SIZE(n)    its size is argument n (and n times m)
 *   SY_ATTR_USED             kept in the object even if nothing names it
 *   SY_ALWAYS_INLINE         inlined wherever it is called (MSVC: __forceinline)
 * SY_CONSTRUCTOR(fn) defines static void fn(void), run when the module is
 * loaded, before any of its functions is called (GCC and clang: the
 * constructor attribute; MSVC: a pointer among the C runtime's .CRT$XCU
 * initializers, kept by the linker's /include). */
#if defined(_MSC_VER) /* cl, and clang in its MSVC mode (scripts/windows-gate.js) */
#define SY_ATTR_MALLOC
#define SY_ATTR_ALLOC_SIZE(n)
#define SY_ATTR_ALLOC_SIZE2(n, m)
#define SY_ATTR_USED
#define SY_ALWAYS_INLINE __forceinline
#pragma section(".CRT$XCU", read)
#define SY_CONSTRUCTOR(fn)                                               \
    static void fn(void);                                                \
    __declspec(allocate(".CRT$XCU")) void (*const fn##_ctor)(void) = fn; \
    __pragma(comment(linker, "/include:" #fn "_ctor")) static void fn(void)
#else
#define SY_ATTR_MALLOC __attribute__((malloc))
#define SY_ATTR_ALLOC_SIZE(n) __attribute__((alloc_size(n)))
#define SY_ATTR_ALLOC_SIZE2(n, m) __attribute__((alloc_size(n, m)))
#define SY_ATTR_USED __attribute__((used))
#define SY_ALWAYS_INLINE inline __attribute__((always_inline))
#define SY_CONSTRUCTOR(fn) __attribute__((constructor)) static void fn(void)
#endif

#endif
