/* libFuzzer target: permessage-deflate negotiation (src/proto/sy_pmd.c) over a
 * Sec-WebSocket-Extensions value from a stranger.
 * Invariants: never reads past the value (ASan); an accepted offer has a
 * window of 8..15 and an answer that fits SY_PMD_RESPONSE_MAX; the result
 * does not change when a declined offer ("x-unknown, ") comes first, or
 * when the value is cut at its end's spaces; every offer counted is at
 * most the commas + 1. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sy_pmd.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *v = (const char *)data;
    sy_pmd_t p, q;
    unsigned n = 0;
    bool ok = sy_pmd_negotiate_value(v, size, &p, &n);
    size_t commas = 0;
    for (size_t i = 0; i < size; i++)
        commas += v[i] == ',';
    REQUIRE(n <= commas + 1);
    if (ok) {
        REQUIRE(p.server_window >= SY_PMD_WINDOW_MIN && p.server_window <= SY_PMD_WINDOW_MAX);
        REQUIRE(p.server_window_set || p.server_window == SY_PMD_WINDOW_MAX);
        char buf[SY_PMD_RESPONSE_MAX];
        REQUIRE(sy_pmd_response(&p, buf, sizeof(buf)) > 0);
    }
    static const char prefix[] = "x-unknown, ";
    char *w = malloc(sizeof(prefix) - 1 + size);
    REQUIRE(w != NULL);
    memcpy(w, prefix, sizeof(prefix) - 1);
    if (size > 0)
        memcpy(w + sizeof(prefix) - 1, data, size);
    bool ok2 = sy_pmd_negotiate_value(w, sizeof(prefix) - 1 + size, &q, NULL);
    REQUIRE(ok2 == ok);
    if (ok)
        REQUIRE(q.server_window_set == p.server_window_set && q.server_window == p.server_window);
    free(w);
    return 0;
}
