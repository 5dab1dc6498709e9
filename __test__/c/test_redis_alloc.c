/* sy_redis_alloc: hiredis' allocation functions (hi_malloc, hi_calloc,
 * hi_realloc, hi_strdup, hi_free) are libc's until sy_redis_alloc_init and
 * sy_alloc's after it; what hiredis itself allocates (a reply reader and
 * its replies, a formatted command, an sds string) comes from sy_alloc and
 * goes back to it whole; the self-check's probe; init is idempotent.
 *
 * "From sy_alloc": owned by our jemalloc (sy_alloc_owner) in the jemalloc
 * build (make artifact), or (system build: make test, make valgrind) the
 * block's usable size added to sy_alloc's count of live bytes, which is
 * exact there: everything freed brings it back to where it was. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "check.h"
#include "base/sy_alloc.h"
#include "bus/sy_redis_alloc.h"

/* sy_alloc's live bytes: exact in the system build, jemalloc's
 * stats.allocated (thread caches included) in the jemalloc build. */
static int64_t live(void) {
    sy_alloc_stats_t s;
    if (sy_alloc_stats(&s) != 0)
        return -1;
    return s.allocated;
}

/* p came from sy_alloc; `before` is live() taken before it was made. With
 * `alone`, p is the only block made since (else others may have been). */
static bool from_sy_alloc(const void *p, int64_t before, bool alone) {
    if (p == NULL)
        return false;
#ifdef SY_USE_JEMALLOC
    (void)before;
    (void)alone;
    unsigned arena = 0;
    return sy_alloc_owner(p, &arena) == 0;
#else
    int64_t grew = live() - before, size = (int64_t)sy_alloc_usable(p);
    return size > 0 && (alone ? grew == size : grew >= size);
#endif
}

/* Everything made since `base` was given back (system build: exact). */
#ifdef SY_USE_JEMALLOC
#define CHECK_BALANCED(base) (void)(base)
#else
#define CHECK_BALANCED(base) CHECK_EQ(live(), (base))
#endif

/* Before init: hiredis' defaults, libc's malloc and free. */
static void test_before_init(void) {
    int64_t before = live();
    void *p = hi_malloc(100);
    CHECK(p != NULL);
    bool ours = from_sy_alloc(p, before, true);
    CHECK(!ours);
    hi_free(p);
    char *s = hi_strdup("libc");
    CHECK(s != NULL);
    ours = from_sy_alloc(s, before, true);
    CHECK(!ours);
    hi_free(s);
}

static void test_init(void) {
    CHECK_EQ(sy_redis_alloc_init(), 0);
    CHECK_EQ(sy_redis_alloc_init(), 0); /* again: nothing changes */
}

static void test_functions(void) {
    int64_t base = live();

    int64_t before = live();
    unsigned char *m = hi_malloc(100);
    bool ours = from_sy_alloc(m, before, true);
    CHECK(ours);
    if (m != NULL)
        memset(m, 0x5A, 100);

    before = live();
    unsigned char *c = hi_calloc(10, 30);
    ours = from_sy_alloc(c, before, true);
    CHECK(ours);
    bool zeroed = c != NULL;
    for (size_t i = 0; c != NULL && i < 300; i++)
        zeroed = zeroed && c[i] == 0;
    CHECK(zeroed);
    /* hiredis' own overflow check: no call reaches the allocator. */
    void *huge = hi_calloc(SIZE_MAX / 2, 4);
    CHECK(huge == NULL);

    /* Grown well past its size class: moved, bytes kept, still ours. */
    before = live() - (int64_t)sy_alloc_usable(m);
    unsigned char *r = hi_realloc(m, 100000);
    ours = from_sy_alloc(r, before, true);
    CHECK(ours);
    bool kept = r != NULL;
    for (size_t i = 0; r != NULL && i < 100; i++)
        kept = kept && r[i] == 0x5A;
    CHECK(kept);
    if (r != NULL)
        m = r;

    before = live();
    char *s = hi_strdup("symphony:ticker");
    ours = from_sy_alloc(s, before, true);
    CHECK(ours);
    if (s != NULL)
        CHECK_MEMSTR(s, strlen(s), "symphony:ticker");
    before = live();
    char *e = hi_strdup("");
    ours = from_sy_alloc(e, before, true);
    CHECK(ours);
    CHECK(e != NULL && e[0] == '\0');

    hi_free(m);
    hi_free(c);
    hi_free(s);
    hi_free(e);
    hi_free(NULL);
    CHECK_BALANCED(base); /* all of it given back to sy_alloc */
}

/* What hiredis' own code allocates: a reader and the replies it parses,
 * a command it formats, an sds string. */
static void test_library(void) {
    int64_t base = live();

    int64_t before = live();
    redisReader *rd = redisReaderCreate();
    bool ours = from_sy_alloc(rd, before, false); /* its buffer and task stack too */
    CHECK(ours);
    if (rd != NULL) {
        static const char wire[] = "*3\r\n$8\r\nsmessage\r\n$15\r\nsymphony:ticker\r\n$5\r\nhello\r\n";
        CHECK_EQ(redisReaderFeed(rd, wire, sizeof(wire) - 1), REDIS_OK);
        void *out = NULL;
        CHECK_EQ(redisReaderGetReply(rd, &out), REDIS_OK);
        redisReply *reply = out;
        CHECK(reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == 3);
        if (reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == 3) {
            unsigned arena = 0;
            int owner = sy_alloc_owner(reply, &arena);
#ifdef SY_USE_JEMALLOC
            CHECK_EQ(owner, 0);
#else
            CHECK_EQ(owner, ENOTSUP);
#endif
            CHECK_MEMSTR(reply->element[1]->str, reply->element[1]->len, "symphony:ticker");
            CHECK_MEMSTR(reply->element[2]->str, reply->element[2]->len, "hello");
        }
        freeReplyObject(reply);
        redisReaderFree(rd);
    }

    before = live();
    char *cmd = NULL;
    long long n = redisFormatCommand(&cmd, "SPUBLISH %s %b", "symphony:ticker", "\xF5\x01", (size_t)2);
    CHECK(n > 0);
    ours = from_sy_alloc(cmd, before, true); /* its scratch already freed */
    CHECK(ours);
    redisFreeCommand(cmd);

    before = live();
    sds str = sdsnew("symphony:");
    ours = from_sy_alloc(str != NULL ? sdsAllocPtr(str) : NULL, before, true);
    CHECK(ours);
    str = sdscat(str, "a topic long enough to make sds grow its buffer past the first size class");
    CHECK(str != NULL);
    sdsfree(str);

    CHECK_BALANCED(base);
}

static void test_probe(void) {
    int64_t base = live();
    void *probe = sy_redis_alloc_probe_new();
    CHECK(probe != NULL);
#ifdef SY_USE_JEMALLOC
    unsigned arena = 0;
    CHECK_EQ(sy_alloc_owner(probe, &arena), 0);
#else
    CHECK(live() > base);
#endif
    sy_redis_alloc_probe_free(probe);
    sy_redis_alloc_probe_free(NULL);
    CHECK_BALANCED(base);
}

int main(void) {
    test_before_init();
    test_init();
    test_functions();
    test_library();
    test_probe();
    return check_report("test_redis_alloc");
}
