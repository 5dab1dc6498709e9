/*
 * glibc_floor.h — lets the glibc builds load on glibc 2.17 and newer (RHEL 8's 2.28, Ubuntu
 * 20.04's 2.31, Debian 11) although they are linked on a newer glibc.
 *
 * glibc 2.34 moved the pthread functions into libc.so.6 and gave them a new
 * default version (GLIBC_2.34, pthread_sigmask GLIBC_2.32); the old versions
 * stay in libc as compatibility symbols. Linked plainly, our .node would ask
 * for the new ones and fail to load on an older glibc ("version `GLIBC_2.34'
 * not found"). The .symver directives below bind every reference to the
 * version that has existed since the architecture's first glibc, which every
 * glibc from 2.17 (aarch64) or 2.2.5 (x86_64) to today provides.
 *
 * scripts/prebuild.js passes it with -include to every C file of a glibc
 * build, jemalloc's included; the artifact test fails if any symbol still
 * needs a version above the floor (scripts/glibc-floor.js: 2.17). Add a line
 * here when that test names one.
 */
#ifndef SY_GLIBC_FLOOR_H
#define SY_GLIBC_FLOOR_H
/* Also forced into OpenSSL's build, whose .S files are preprocessed too:
 * assembler has no __asm__. */
#ifndef __ASSEMBLER__

#if defined(__x86_64__)
#define SY_GLIBC_BASE "GLIBC_2.2.5"
#define SY_GLIBC_SETNAME "GLIBC_2.12"
#elif defined(__aarch64__)
#define SY_GLIBC_BASE "GLIBC_2.17"
#define SY_GLIBC_SETNAME "GLIBC_2.17"
#else
#error "glibc_floor.h: add this architecture's base glibc version"
#endif

#define SY_GLIBC_OLD(fn, version) __asm__(".symver " #fn ", " #fn "@" version)

SY_GLIBC_OLD(pthread_create, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_join, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_once, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_key_create, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_setspecific, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_mutex_trylock, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_mutexattr_init, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_mutexattr_settype, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_mutexattr_destroy, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_sigmask, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_setname_np, SY_GLIBC_SETNAME);
/* OpenSSL's (thread-local keys and its read-write locks). */
SY_GLIBC_OLD(pthread_getspecific, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_key_delete, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_rwlock_init, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_rwlock_destroy, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_rwlock_rdlock, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_rwlock_wrlock, SY_GLIBC_BASE);
SY_GLIBC_OLD(pthread_rwlock_unlock, SY_GLIBC_BASE);
/* stat and fstat (glibc 2.33's new symbols, which OpenSSL calls) cannot
 * be bound this way: before 2.33 they were __xstat/__fxstat with another
 * signature. binding/glibc/compat.c defines them (and getentropy, 2.25) for
 * the glibc builds. */

#endif /* __ASSEMBLER__ */
#endif
