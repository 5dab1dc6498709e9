/*
 * stat() and fstat() for the glibc prebuilt binaries (with
 * binding/glibc_floor.h; binding.gyp compiles this only when sy_glibc_floor
 * is set).
 *
 * glibc 2.33 made stat/fstat real symbols (stat@GLIBC_2.33). Before, the
 * headers turned them into __xstat/__fxstat(version, ...), which every glibc
 * still exports. OpenSSL, linked into the addon, calls stat and fstat (its
 * file store, directory lookups, the /dev/urandom check); linked plainly the
 * .node would not load on glibc < 2.33 (RHEL 8, Debian 11, Ubuntu 20.04).
 * These definitions, hidden inside the .node, call the old entry points.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#if defined(__x86_64__)
#define SY_STAT_VER 1 /* _STAT_VER_LINUX */
#define SY_XSTAT_AT "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define SY_STAT_VER 0 /* _STAT_VER (generic) */
#define SY_XSTAT_AT "GLIBC_2.17"
#else
#error "binding/glibc/stat.c: add this architecture's __xstat version"
#endif

int sy_old_xstat(int ver, const char *path, struct stat *buf);
int sy_old_fxstat(int ver, int fd, struct stat *buf);
__asm__(".symver sy_old_xstat, __xstat@" SY_XSTAT_AT);
__asm__(".symver sy_old_fxstat, __fxstat@" SY_XSTAT_AT);

__attribute__((visibility("hidden"))) int stat(const char *path, struct stat *buf) {
    return sy_old_xstat(SY_STAT_VER, path, buf);
}

__attribute__((visibility("hidden"))) int fstat(int fd, struct stat *buf) {
    return sy_old_fxstat(SY_STAT_VER, fd, buf);
}
