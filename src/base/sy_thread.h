/*
 * sy_thread — threads, mutexes, condition variables and once, the one door
 * to them: pthreads on Linux and macOS (each function is the pthread call
 * it names, inline: nothing changes there), Windows' own primitives on
 * Windows with every compiler, mingw-w64 included (so that the Wine gate
 * runs the code MSVC compiles): SRWLOCK, CONDITION_VARIABLE,
 * InitOnceExecuteOnce, _beginthreadex. No other file of src/ or binding/
 * names pthread (__test__/repo/boundary.test.js checks it).
 *
 * The mutexes are not recursive, and nothing here is shared between
 * processes. A mutex or condition variable is not moved or copied once
 * initialized (SRWLOCK and pthread alike). sy_thread_create's sy_thread_t
 * stays in place until sy_thread_join (on Windows the new thread reads its
 * function and argument from it).
 *
 * Threads: any; the objects are for sharing between threads.
 *
 * Ownership: the caller owns every object; nothing is allocated here.
 *
 * Errors: sy_mutex_init, sy_cond_init, sy_once, sy_thread_create and
 * sy_thread_join return 0 or an errno value (pthread's own on POSIX; on
 * Windows the C runtime's errno from _beginthreadex, EINVAL for a failed
 * wait or once). Lock, unlock, wait, broadcast and destroy cannot fail on a
 * valid, initialized, unlocked (for destroy) object and return nothing.
 */
#ifndef SY_THREAD_H
#define SY_THREAD_H

#include "base/sy_errors.h"

#if defined(_WIN32)

#include <errno.h>
#include <process.h> /* _beginthreadex */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN /* no winsock.h: base/sy_inet.h includes winsock2.h */
#endif
#include <stdint.h>
#include <windows.h>

typedef SRWLOCK sy_mutex_t;
typedef CONDITION_VARIABLE sy_cond_t;
typedef INIT_ONCE sy_once_t;
typedef struct sy_thread {
    HANDLE handle;
    void *(*fn)(void *arg);
    void *arg;
} sy_thread_t;

/* A mutex with static storage, ready without sy_mutex_init. */
#define SY_MUTEX_INIT SRWLOCK_INIT
#define SY_ONCE_INIT INIT_ONCE_STATIC_INIT

static inline sy_err_t sy_mutex_init(sy_mutex_t *m) {
    InitializeSRWLock(m);
    return 0;
}
static inline void sy_mutex_destroy(sy_mutex_t *m) { (void)m; /* an SRWLOCK holds nothing */ }
static inline void sy_mutex_lock(sy_mutex_t *m) { AcquireSRWLockExclusive(m); }
static inline void sy_mutex_unlock(sy_mutex_t *m) { ReleaseSRWLockExclusive(m); }

static inline sy_err_t sy_cond_init(sy_cond_t *c) {
    InitializeConditionVariable(c);
    return 0;
}
static inline void sy_cond_destroy(sy_cond_t *c) { (void)c; /* holds nothing */ }
/* Waits on c with m locked by the caller; m is locked again on return
 * (which may be spurious: the caller re-checks its condition). */
static inline void sy_cond_wait(sy_cond_t *c, sy_mutex_t *m) { (void)SleepConditionVariableSRW(c, m, INFINITE, 0); }
static inline void sy_cond_broadcast(sy_cond_t *c) { WakeAllConditionVariable(c); }

struct sy_once_fn {
    void (*fn)(void);
};
static inline BOOL CALLBACK sy_once_call(PINIT_ONCE once, PVOID param, PVOID *ctx) {
    (void)once;
    (void)ctx;
    ((struct sy_once_fn *)param)->fn();
    return TRUE;
}
/* Runs fn once per o in the process; concurrent callers wait for the first. */
static inline sy_err_t sy_once(sy_once_t *o, void (*fn)(void)) {
    struct sy_once_fn f = {fn};
    return InitOnceExecuteOnce(o, sy_once_call, &f, NULL) ? 0 : EINVAL;
}

static inline unsigned __stdcall sy_thread_start(void *arg) {
    sy_thread_t *t = arg;
    (void)t->fn(t->arg);
    return 0;
}
/* Starts fn(arg) on a new thread (the C runtime's, so that it may use it). */
static inline sy_err_t sy_thread_create(sy_thread_t *t, void *(*fn)(void *), void *arg) {
    t->fn = fn;
    t->arg = arg;
    uintptr_t h = _beginthreadex(NULL, 0, sy_thread_start, t, 0, NULL);
    if (h == 0)
        return errno != 0 ? errno : EAGAIN;
    t->handle = (HANDLE)h;
    return 0;
}
/* Waits for t's end and releases it; fn's result is dropped. */
static inline sy_err_t sy_thread_join(sy_thread_t *t) {
    DWORD w = WaitForSingleObject(t->handle, INFINITE);
    (void)CloseHandle(t->handle);
    return w == WAIT_OBJECT_0 ? 0 : EINVAL;
}

#else

#include <pthread.h>

typedef pthread_mutex_t sy_mutex_t;
typedef pthread_cond_t sy_cond_t;
typedef pthread_once_t sy_once_t;
typedef pthread_t sy_thread_t;

/* A mutex with static storage, ready without sy_mutex_init. */
#define SY_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define SY_ONCE_INIT PTHREAD_ONCE_INIT

static inline sy_err_t sy_mutex_init(sy_mutex_t *m) { return pthread_mutex_init(m, NULL); }
static inline void sy_mutex_destroy(sy_mutex_t *m) { (void)pthread_mutex_destroy(m); }
static inline void sy_mutex_lock(sy_mutex_t *m) { (void)pthread_mutex_lock(m); }
static inline void sy_mutex_unlock(sy_mutex_t *m) { (void)pthread_mutex_unlock(m); }

static inline sy_err_t sy_cond_init(sy_cond_t *c) { return pthread_cond_init(c, NULL); }
static inline void sy_cond_destroy(sy_cond_t *c) { (void)pthread_cond_destroy(c); }
/* Waits on c with m locked by the caller; m is locked again on return
 * (which may be spurious: the caller re-checks its condition). */
static inline void sy_cond_wait(sy_cond_t *c, sy_mutex_t *m) { (void)pthread_cond_wait(c, m); }
static inline void sy_cond_broadcast(sy_cond_t *c) { (void)pthread_cond_broadcast(c); }

/* Runs fn once per o in the process; concurrent callers wait for the first. */
static inline sy_err_t sy_once(sy_once_t *o, void (*fn)(void)) { return pthread_once(o, fn); }

/* Starts fn(arg) on a new thread. */
static inline sy_err_t sy_thread_create(sy_thread_t *t, void *(*fn)(void *), void *arg) {
    return pthread_create(t, NULL, fn, arg);
}
/* Waits for t's end and releases it; fn's result is dropped. */
static inline sy_err_t sy_thread_join(sy_thread_t *t) { return pthread_join(*t, NULL); }

#endif

#endif
