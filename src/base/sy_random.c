/* sy_random — see sy_random.h. */
#define _GNU_SOURCE
#include "base/sy_random.h"

#include <stdatomic.h>
#if defined(_WIN32)
#include <windows.h> /* before bcrypt.h, which needs its types */

#include <bcrypt.h>
#include <process.h> /* _getpid */
#define getpid _getpid
#else
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#elif defined(__APPLE__)
#include <sys/random.h> /* getentropy: macOS 10.12 */
#endif

#include "base/sy_clock.h"

/* splitmix64's finalizer: spreads the fallback's inputs over every bit. */
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t sy_random_u64(void) {
    uint64_t v = 0;
#if defined(__linux__) && defined(SYS_getrandom)
    /* The syscall, not glibc's getrandom() (2.25: above the prebuilt
     * binaries' glibc floor, scripts/glibc-floor.js). */
    if (syscall(SYS_getrandom, &v, sizeof(v), 0x0001 /* GRND_NONBLOCK */) == (long)sizeof(v))
        return v;
#elif defined(__APPLE__)
    if (getentropy(&v, sizeof(v)) == 0)
        return v;
#elif defined(_WIN32)
    if (BCryptGenRandom(NULL, (PUCHAR)&v, sizeof(v), BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0)
        return v;
#endif
    (void)v;
    static atomic_uint_fast64_t counter;
    uint64_t n = atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    return mix((uint64_t)sy_clock_us() ^ ((uint64_t)getpid() << 32) ^ (n * 0x9e3779b97f4a7c15ull));
}
