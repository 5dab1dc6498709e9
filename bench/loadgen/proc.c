/* CPU time and resident memory of this process and of another pid. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lg.h"

/* VmRSS in KiB from a /proc/<pid>/status file, or -1. */
static long status_rss_kib(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            if (sscanf(line + 6, "%ld", &kib) != 1)
                kib = -1;
            break;
        }
    }
    fclose(f);
    return kib;
}

void lg_sample_self(lg_sample_t *s, int64_t now_ns)
{
    struct rusage ru;
    memset(s, 0, sizeof(*s));
    s->at_ns = now_ns;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return;
    s->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    s->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    s->cpu_s = s->user_s + s->sys_s;
    s->rss_kib = status_rss_kib("/proc/self/status");
    s->ok = true;
}

void lg_sample_pid(lg_sample_t *s, pid_t pid, int64_t now_ns)
{
    char path[64], buf[1024];
    memset(s, 0, sizeof(*s));
    s->at_ns = now_ns;
    s->rss_kib = -1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and ')': the fields after
     * the last ')' are 3 (state) onwards; utime and stime are 14 and 15. */
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return;
    unsigned long long utime, stime;
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
               &stime) != 2)
        return;
    long tick = sysconf(_SC_CLK_TCK);
    if (tick <= 0)
        tick = 100;
    s->user_s = (double)utime / (double)tick;
    s->sys_s = (double)stime / (double)tick;
    s->cpu_s = s->user_s + s->sys_s;
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    s->rss_kib = status_rss_kib(path);
    s->ok = true;
}
