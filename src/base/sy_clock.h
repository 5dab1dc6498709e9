/*
 * sy_clock — the monotonic clock, the one way src/ reads time; the wall
 * clock, for what is dated in Unix time (tokens' exp and nbf); and a short
 * sleep. The one #if for them: clock_gettime and nanosleep on POSIX;
 * QueryPerformanceCounter, GetSystemTimeAsFileTime and Sleep on Windows
 * (every compiler: MSVC's C runtime has neither clock_gettime nor
 * nanosleep).
 *
 * CLOCK_MONOTONIC cannot fail with a valid clock id on Linux; should it, the
 * reading is 0 (deadlines then fire early rather than never). The same for
 * CLOCK_REALTIME (a token then looks expired rather than valid forever).
 * QueryPerformanceCounter cannot fail on Windows XP and later.
 *
 * Threads: any.
 *
 * Ownership: nothing is kept.
 *
 * Errors: none reported: a failed reading is 0 (above); a sleep cut short
 * by a signal is not resumed.
 */
#ifndef SY_CLOCK_H
#define SY_CLOCK_H

#include <stdint.h>

#if defined(_WIN32)

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN /* no winsock.h: base/sy_inet.h includes winsock2.h */
#endif
#include <windows.h>

/* Microseconds since an arbitrary start (the performance counter's). */
static inline int64_t sy_clock_us(void) {
    LARGE_INTEGER now, freq;
    if (!QueryPerformanceCounter(&now) || !QueryPerformanceFrequency(&freq) || freq.QuadPart <= 0)
        return 0;
    /* In two parts: counter * 1000000 overflows after ~10 days at 10 MHz. */
    return now.QuadPart / freq.QuadPart * 1000000 + now.QuadPart % freq.QuadPart * 1000000 / freq.QuadPart;
}

/* Seconds since the Unix epoch (the wall clock: it may jump). */
static inline int64_t sy_clock_unix_s(void) {
    FILETIME ft; /* 100 ns units since 1601-01-01 */
    GetSystemTimeAsFileTime(&ft);
    int64_t t = (int64_t)(((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime);
    return (t - INT64_C(116444736000000000)) / 10000000;
}

/* Sleeps ms milliseconds (at least; the system's tick may round it up). */
static inline void sy_clock_sleep_ms(uint32_t ms) { Sleep(ms); }

#else

#include <time.h>

/* Microseconds since an arbitrary start. */
static inline int64_t sy_clock_us(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Seconds since the Unix epoch (the wall clock: it may jump). */
static inline int64_t sy_clock_unix_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec;
}

/* Sleeps ms milliseconds (at least, unless a signal cuts it short). */
static inline void sy_clock_sleep_ms(uint32_t ms) {
    struct timespec pause = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    (void)nanosleep(&pause, NULL);
}

#endif

/* Milliseconds since the same start as sy_clock_us. */
static inline int64_t sy_clock_ms(void) { return sy_clock_us() / 1000; }

#endif
