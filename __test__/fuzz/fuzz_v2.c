/* libFuzzer target: sy_v2_parse over a symphony.v2 client frame (the whole
 * input), then every entry of a subscribe (sy_v2_sub_at), and the answers
 * built from what was read.
 *
 * Aborts when the parser's contract does not hold:
 *  - the status is one of SY_V2_OK, SY_V2_UNKNOWN, SY_V2_BAD (never
 *    SY_V2_NOMEM here: the system allocator does not fail), with a reason
 *    on anything but OK;
 *  - a frame not OK holds nothing (doc, texts NULL);
 *  - on OK: the kind is the first byte; payloads and topics lie inside the
 *    input (or inside the JSON document, for topics and tokens); topics are
 *    1 to SY_V2_TOPIC_MAX bytes of valid UTF-8; a subscribe has 1 to
 *    SY_V2_BATCH_MAX entries, each read back good or bad (a bad one with
 *    a reason and a refusal that builds); data, when present, is
 *    valid UTF-8 JSON text that yyjson reads again;
 *  - the refused / error answers build (topic within bounds). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yyjson.h>

#include "base/sy_refbuf.h"
#include "proto/sy_utf8.h"
#include "proto/sy_v2.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

static bool inside(const void *p, size_t n, const uint8_t *data, size_t size) {
    const uint8_t *q = p;
    return q >= data && q + n <= data + size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* On the heap at its exact size: ASan sees a read past it. */
    uint8_t *in = malloc(size ? size : 1);
    REQUIRE(in != NULL);
    if (size > 0)
        memcpy(in, data, size);
    sy_v2_frame_t f;
    const char *why = NULL;
    sy_v2_status_t st = sy_v2_parse(in, size, &f, &why);
    REQUIRE(st == SY_V2_OK || st == SY_V2_UNKNOWN || st == SY_V2_BAD);
    if (st != SY_V2_OK) {
        REQUIRE(why != NULL && why[0] != '\0');
        REQUIRE(f.doc == NULL && f.texts == NULL);
        sy_refbuf_t *m = sy_v2_error_frame(f.has_rid, f.rid, "bad-request", why);
        REQUIRE(m != NULL);
        sy_refbuf_release(m);
        free(in);
        return 0;
    }
    REQUIRE(size > 0 && (uint8_t)f.kind == in[0]);
    if (f.kind == SY_V2_DIRECT || f.kind == SY_V2_PUBLISH || f.kind == SY_V2_REQUEST)
        REQUIRE(inside(f.payload, f.payload_len, in, size));
    if (f.kind == SY_V2_UNSUBSCRIBE || f.kind == SY_V2_PUBLISH) {
        REQUIRE(f.topic_len >= 1 && f.topic_len <= SY_V2_TOPIC_MAX);
        REQUIRE(sy_utf8_is_valid((const uint8_t *)f.topic, f.topic_len));
        sy_refbuf_t *m = sy_v2_refused_frame(f.rid, f.topic, f.topic_len, "forbidden", "no");
        REQUIRE(m != NULL);
        sy_refbuf_release(m);
    }
    if (f.kind == SY_V2_SUBSCRIBE) {
        REQUIRE(f.nsubs >= 1 && f.nsubs <= SY_V2_BATCH_MAX);
        for (size_t i = 0; i < f.nsubs; i++) {
            sy_v2_sub_t s;
            const char *why = NULL;
            sy_v2_status_t st = sy_v2_sub_at(&f, i, &s, &why);
            REQUIRE(st == SY_V2_OK || st == SY_V2_BAD);
            if (st == SY_V2_BAD) {
                /* A bad entry: refused alone, naming what could be read. */
                REQUIRE(why != NULL && why[0] != '\0');
                REQUIRE(s.topic == NULL || s.topic_len <= SY_V2_TOPIC_MAX);
                sy_refbuf_t *m = sy_v2_refused_entry_frame(&s, why);
                REQUIRE(m != NULL);
                sy_refbuf_release(m);
                continue;
            }
            REQUIRE(s.topic_len >= 1 && s.topic_len <= SY_V2_TOPIC_MAX);
            REQUIRE(sy_utf8_is_valid((const uint8_t *)s.topic, s.topic_len));
            REQUIRE(s.token == NULL || (s.token_len >= 1 && s.token_len <= SY_V2_TOKEN_MAX));
            if (s.data != NULL) {
                REQUIRE(sy_utf8_is_valid((const uint8_t *)s.data, s.data_len));
                yyjson_doc *d = yyjson_read(s.data, s.data_len, 0);
                REQUIRE(d != NULL);
                yyjson_doc_free(d);
            }
        }
    }
    sy_v2_frame_free(&f);
    free(in);
    return 0;
}
