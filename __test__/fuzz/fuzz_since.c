/* libFuzzer target: sy_since_check, sy_since_next and sy_since_find over
 * a request target (the whole input).
 *
 * Aborts when the parser's contract does not hold:
 *  - sy_since_check answers NULL or a sentence starting "sy.since: ";
 *  - every entry sy_since_next yields (well-formed target or not) has its
 *    topic in the caller's buffer, 1 to SY_SINCE_TOPIC_MAX bytes of valid
 *    UTF-8;
 *  - when check says well formed: at most SY_SINCE_MAX entries, no topic
 *    twice, and sy_since_find finds each entry's topic with its epoch and
 *    offset. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sy_since.h"
#include "proto/sy_utf8.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

typedef struct seen {
    uint64_t epoch, offset;
    size_t len;
    char topic[SY_SINCE_TOPIC_MAX];
} seen_t;

static seen_t seen[SY_SINCE_MAX + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *t = (const char *)data;
    const char *why = sy_since_check(t, size);
    REQUIRE(why == NULL || strncmp(why, "sy.since: ", 10) == 0);

    /* On the heap at its exact size: ASan sees a write past it. */
    char *buf = malloc(SY_SINCE_TOPIC_MAX);
    REQUIRE(buf != NULL);
    sy_since_iter_t it = {0};
    sy_since_t e;
    size_t n = 0;
    while (sy_since_next(t, size, &it, &e, buf)) {
        REQUIRE(e.topic == buf);
        REQUIRE(e.topic_len >= 1 && e.topic_len <= SY_SINCE_TOPIC_MAX);
        REQUIRE(sy_utf8_is_valid((const uint8_t *)e.topic, e.topic_len));
        REQUIRE(it.pos <= size);
        if (why == NULL) {
            REQUIRE(n < SY_SINCE_MAX);
            seen[n].epoch = e.epoch;
            seen[n].offset = e.offset;
            seen[n].len = e.topic_len;
            memcpy(seen[n].topic, e.topic, e.topic_len);
        }
        n++;
    }
    REQUIRE(!sy_since_next(t, size, &it, &e, buf));
    if (why == NULL) {
        for (size_t i = 0; i < n; i++) {
            sy_since_t f;
            REQUIRE(sy_since_find(t, size, seen[i].topic, seen[i].len, &f, buf));
            REQUIRE(f.topic == buf && f.topic_len == seen[i].len && memcmp(f.topic, seen[i].topic, f.topic_len) == 0);
            REQUIRE(f.epoch == seen[i].epoch && f.offset == seen[i].offset);
            /* No topic twice (pairwise while that stays cheap). */
            if (n <= 64)
                for (size_t j = 0; j < i; j++)
                    REQUIRE(seen[j].len != seen[i].len || memcmp(seen[j].topic, seen[i].topic, seen[i].len) != 0);
        }
    }
    free(buf);
    return 0;
}
