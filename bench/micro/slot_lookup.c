/*
 * slot_lookup — what naming connections by slot costs a publish.
 *
 * The core's subscriber arrays hold slots (uint32_t) and a delivery looks the
 * connection up in the thread's slot table; before, they held pointers. This
 * walks N subscribers the two ways, with connections of the core's size
 * (216 B) allocated in order and subscribed in a shuffled order (as a topic's
 * subscribers are), touching each as a push does, and prints ns per
 * subscriber per delivery. Compare with the CPU a delivered message costs
 * (`npm run bench`, cpu phase: ~9-25 us).
 *
 *   cc -std=c11 -O2 -Wall -Wextra bench/micro/slot_lookup.c -o bench/out/slot_lookup
 *   bench/out/slot_lookup 1000 10000 100000
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct conn {
    uint64_t other[26];
    uint32_t queued;
    uint8_t state;
} conn_t;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run(uint32_t n) {
    const int rounds = (int)(20000000 / n) + 1;
    conn_t **table = malloc(sizeof(*table) * n), **ptrs = malloc(sizeof(*ptrs) * n);
    uint32_t *slots = malloc(sizeof(*slots) * n);
    if (table == NULL || ptrs == NULL || slots == NULL)
        exit(1);
    for (uint32_t i = 0; i < n; i++) {
        if ((table[i] = calloc(1, sizeof(conn_t))) == NULL)
            exit(1);
        slots[i] = i;
    }
    srand(1);
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)rand() % (i + 1), t = slots[i];
        slots[i] = slots[j];
        slots[j] = t;
    }
    for (uint32_t i = 0; i < n; i++)
        ptrs[i] = table[slots[i]];
    double best_ptr = 1e9, best_slot = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (int r = 0; r < rounds; r++)
            for (uint32_t i = 0; i < n; i++)
                if (ptrs[i]->state == 0)
                    ptrs[i]->queued++;
        double t1 = now();
        for (int r = 0; r < rounds; r++)
            for (uint32_t i = 0; i < n; i++) {
                conn_t *c = table[slots[i]];
                if (c->state == 0)
                    c->queued++;
            }
        double t2 = now();
        if (t1 - t0 < best_ptr)
            best_ptr = t1 - t0;
        if (t2 - t1 < best_slot)
            best_slot = t2 - t1;
    }
    double per = 1e9 / ((double)rounds * n);
    printf("%7u subscribers: pointer %.2f ns, slot %.2f ns per subscriber per delivery (+%.2f ns)\n", n,
           best_ptr * per, best_slot * per, (best_slot - best_ptr) * per);
    for (uint32_t i = 0; i < n; i++)
        free(table[i]);
    free(table);
    free(ptrs);
    free(slots);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        run(1000);
        run(10000);
        run(100000);
    }
    for (int i = 1; i < argc; i++)
        run((uint32_t)strtoul(argv[i], NULL, 10));
    return 0;
}
