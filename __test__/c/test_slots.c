/* io/sy_slots: the slot table, its free list, and the generations any
 * thread reads to tell whether an id is open. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "check.h"
#include "io/model/sy_slots.h"
#include "io/sy_io.h"

struct sy_conn {
    int tag;
};

/* Slots are dealt in order, freed slots come back last in first out, and
 * a reused slot gets a new generation. */
static void test_take_release(void) {
    sy_slots_t t;
    sy_slots_init(&t);
    struct sy_conn a = {1}, b = {2}, c = {3};
    uint32_t sa, ga, sb, gb, sc, gc;
    CHECK_EQ(sy_slots_take(&t, &a, &sa, &ga), 0);
    CHECK_EQ(sy_slots_take(&t, &b, &sb, &gb), 0);
    CHECK_EQU(sa, 0);
    CHECK_EQU(sb, 1);
    CHECK(ga != 0 && gb != 0 && ga != gb);
    CHECK(sy_slots_at(&t, sa) == &a && sy_slots_at(&t, sb) == &b);
    CHECK(sy_slots_at(&t, 2) == NULL); /* past the table */
    CHECK_EQU(sy_slots_used(&t), 2);
    sy_slots_release(&t, sa);
    CHECK(sy_slots_at(&t, sa) == NULL);
    CHECK_EQU(sy_slots_used(&t), 1);
    CHECK_EQ(sy_slots_take(&t, &c, &sc, &gc), 0);
    CHECK_EQU(sc, sa);           /* the freed slot again */
    CHECK(gc != ga && gc != gb); /* with a new generation */
    sy_slots_put(&t, sc, &a);    /* a moved connection: one cell */
    CHECK(sy_slots_at(&t, sc) == &a);
    sy_slots_free(&t);
}

/* What sy_io_is_open reads: only the published generation of the slot. */
static void test_live(void) {
    sy_slots_t t;
    sy_slots_init(&t);
    struct sy_conn a = {1};
    uint32_t s, g;
    CHECK_EQ(sy_slots_take(&t, &a, &s, &g), 0);
    CHECK(!sy_slots_is_live(&t, s, g)); /* taken is not open yet */
    sy_slots_set_live(&t, s, g);
    CHECK(sy_slots_is_live(&t, s, g));
    CHECK(!sy_slots_is_live(&t, s, g + 1));               /* a stale or forged id */
    CHECK(!sy_slots_is_live(&t, s, 0));                   /* generation 0 is never live */
    CHECK(!sy_slots_is_live(&t, s + 1, g));               /* a slot never taken */
    CHECK(!sy_slots_is_live(&t, SY_ID_MAX_SLOTS - 1, g)); /* past every page */
    sy_slots_set_live(&t, s, 0);
    CHECK(!sy_slots_is_live(&t, s, g));
    sy_slots_free(&t);
}

/* Growth past the first array and the first generation page (4096 slots):
 * every slot keeps its connection and its own generation cell. */
static void test_growth(void) {
    enum { N = 10000 };
    static struct sy_conn conns[N];
    static uint32_t slots[N], gens[N];
    sy_slots_t t;
    sy_slots_init(&t);
    unsigned bad = 0;
    for (unsigned i = 0; i < N; i++) {
        conns[i].tag = (int)i;
        if (sy_slots_take(&t, &conns[i], &slots[i], &gens[i]) != 0 || slots[i] != i)
            bad++;
        sy_slots_set_live(&t, slots[i], gens[i]);
    }
    for (unsigned i = 0; i < N; i++) {
        if (sy_slots_at(&t, slots[i]) != &conns[i] || !sy_slots_is_live(&t, slots[i], gens[i]))
            bad++;
    }
    CHECK_EQU(bad, 0);
    CHECK_EQU(sy_slots_used(&t), N);
    for (unsigned i = 0; i < N; i += 2) {
        sy_slots_set_live(&t, slots[i], 0);
        sy_slots_release(&t, slots[i]);
    }
    CHECK_EQU(sy_slots_used(&t), N / 2);
    CHECK(!sy_slots_is_live(&t, slots[0], gens[0]) && sy_slots_is_live(&t, slots[1], gens[1]));
    sy_slots_free(&t);
}

/* Generations stay below 2^21 (ids below 2^53) and skip 0 when they wrap. */
static void test_generation_wrap(void) {
    sy_slots_t t;
    sy_slots_init(&t);
    struct sy_conn a = {1};
    uint32_t s, g;
    t.next_gen = SY_ID_GEN_MASK;
    CHECK_EQ(sy_slots_take(&t, &a, &s, &g), 0);
    CHECK_EQU(g, SY_ID_GEN_MASK);
    sy_slots_release(&t, s);
    CHECK_EQ(sy_slots_take(&t, &a, &s, &g), 0);
    CHECK_EQU(g, 1);
    sy_slots_free(&t);
}

/* A reader on another thread sees a slot's generation change while the
 * owner publishes (what sy_server_send's answer rests on). */
static sy_slots_t shared_table;
static atomic_int done;
static uint32_t shared_slot, shared_gen;

/* Reads while the owner writes; what it reads is only ever the slot's
 * generation or 0 (anything else: a torn or stray read). */
static void *reader(void *arg) {
    unsigned long *odd = arg;
    while (!atomic_load(&done)) {
        atomic_uint *page = atomic_load_explicit(&shared_table.gen_pages[0], memory_order_acquire);
        unsigned v = atomic_load_explicit(&page[shared_slot], memory_order_acquire);
        if (v != 0 && v != shared_gen)
            (*odd)++;
        (void)sy_slots_is_live(&shared_table, shared_slot, shared_gen);
    }
    return NULL;
}

static void test_other_thread(void) {
    sy_slots_init(&shared_table);
    struct sy_conn a = {1};
    CHECK_EQ(sy_slots_take(&shared_table, &a, &shared_slot, &shared_gen), 0);
    pthread_t th;
    unsigned long odd = 0;
    CHECK_EQ(pthread_create(&th, NULL, reader, &odd), 0);
    for (int i = 0; i < 100000; i++)
        sy_slots_set_live(&shared_table, shared_slot, (i & 1) ? shared_gen : 0);
    atomic_store(&done, 1);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQU(odd, 0);
    sy_slots_set_live(&shared_table, shared_slot, shared_gen);
    CHECK(sy_slots_is_live(&shared_table, shared_slot, shared_gen));
    sy_slots_free(&shared_table);
}

int main(void) {
    test_take_release();
    test_live();
    test_growth();
    test_generation_wrap();
    test_other_thread();
    return check_report("slots");
}
