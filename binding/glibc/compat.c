/*
 * C library functions newer than the glibc floor, for the glibc prebuilt
 * binaries (with binding/glibc_floor.h; binding.gyp compiles this only when
 * sy_glibc_floor is set). Each is defined here, hidden inside the .node, on
 * top of what every glibc since the floor exports.
 *
 * getentropy (glibc 2.25): OpenSSL's seed source; here the getrandom system
 * call (Linux 3.17), as glibc's own getentropy does.
 *
 * stat and fstat:
 *
 * glibc 2.33 made stat/fstat real symbols (stat@GLIBC_2.33). Before, the
 * headers turned them into __xstat/__fxstat(version, ...), which every glibc
 * still exports. OpenSSL, linked into the addon, calls stat and fstat (its
 * file store, directory lookups, the /dev/urandom check); linked plainly the
 * .node would not load on glibc < 2.33 (RHEL 8, Debian 11, Ubuntu 20.04).
 * These definitions, hidden inside the .node, call the old entry points.
 */
/* node-gyp builds with _FILE_OFFSET_BITS=64, which would rename these to
 * stat64/fstat64; OpenSSL (built without it) calls stat/fstat. Both pairs
 * are defined below (the same structure on 64-bit Linux). */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
int sy_old_xstat64(int ver, const char *path, struct stat64 *buf);
int sy_old_fxstat64(int ver, int fd, struct stat64 *buf);
__asm__(".symver sy_old_xstat, __xstat@" SY_XSTAT_AT);
__asm__(".symver sy_old_fxstat, __fxstat@" SY_XSTAT_AT);
__asm__(".symver sy_old_xstat64, __xstat64@" SY_XSTAT_AT);
__asm__(".symver sy_old_fxstat64, __fxstat64@" SY_XSTAT_AT);

__attribute__((visibility("hidden"))) int stat(const char *path, struct stat *buf) {
    return sy_old_xstat(SY_STAT_VER, path, buf);
}

__attribute__((visibility("hidden"))) int fstat(int fd, struct stat *buf) {
    return sy_old_fxstat(SY_STAT_VER, fd, buf);
}

__attribute__((visibility("hidden"))) int stat64(const char *path, struct stat64 *buf) {
    return sy_old_xstat64(SY_STAT_VER, path, buf);
}

__attribute__((visibility("hidden"))) int fstat64(int fd, struct stat64 *buf) {
    return sy_old_fxstat64(SY_STAT_VER, fd, buf);
}

__attribute__((visibility("hidden"))) int getentropy(void *buf, size_t len) {
    if (len > 256) {
        errno = EIO;
        return -1;
    }
    unsigned char *p = buf;
    while (len > 0) {
        long n = syscall(SYS_getrandom, p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
