/* test_json — src/base/sy_json: yyjson's memory comes from sy_alloc (the
 * count of symphony's bytes goes up while a document lives and back down to
 * where it was once it is freed, for the reader and the writer), the input
 * is only read, and what is not strict JSON is refused with a message:
 * comments, trailing commas, NaN and Infinity, invalid UTF-8, single quotes,
 * leading zeros, trailing text.
 *
 *   make -C __test__/c test TEST=test_json
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_json.h"
#include "check.h"

/* symphony's live bytes. With jemalloc, the thread's cache is flushed
 * first: jemalloc counts a small block when it moves between its arena and
 * the cache, not when the cache hands it out, so without the flush the
 * figure lags (ENOTSUP: the system build, whose count is exact). */
static int64_t allocated(void) {
    sy_err_t flushed = sy_alloc_thread_flush();
    CHECK(flushed == 0 || flushed == ENOTSUP);
    sy_alloc_stats_t s;
    CHECK_EQ(sy_alloc_stats(&s), 0);
    return s.allocated;
}

static void test_memory(void) {
    static const char text[] = "{\"a\":[1,2.5,-3],\"b\":\"x\\u00e9\",\"c\":{\"d\":null,\"e\":true}}";
    char copy[sizeof(text)];
    memcpy(copy, text, sizeof(text));
    int64_t before = allocated();
    bool nomem = true;
    yyjson_doc *doc = sy_json_read(copy, strlen(copy), &nomem);
    CHECK(doc != NULL);
    CHECK(!nomem);
    int64_t live = allocated();
    CHECK(live > before); /* the document is in sy_alloc */
    CHECK(memcmp(copy, text, sizeof(text)) == 0);
    yyjson_val *root = yyjson_doc_get_root(doc);
    CHECK_EQU(yyjson_arr_size(yyjson_obj_get(root, "a")), 3);
    CHECK(strcmp(yyjson_get_str(yyjson_obj_get(root, "b")), "x\xc3\xa9") == 0);
    /* The writer with the same allocator. */
    size_t len = 0;
    char *out = yyjson_write_opts(doc, YYJSON_WRITE_NOFLAG, sy_json_alc(), &len, NULL);
    CHECK(out != NULL);
    CHECK(allocated() > live);
    CHECK_EQU(len, strlen(out));
    sy_json_free(out);
    sy_json_free(NULL);
    CHECK_EQ(allocated(), live);
    yyjson_doc_free(doc);
    CHECK_EQ(allocated(), before);
}

static void test_strict(void) {
    static const char *const bad[] = {
        "",
        "   ",
        "{\"a\":1 /* c */}",
        "// c\n{}",
        "[1,]",
        "{\"a\":1,}",
        "[NaN]",
        "[nan]",
        "[Infinity]",
        "[-Infinity]",
        "[1e999]",
        "[\"\xc3\x28\"]",         /* a broken two-byte sequence */
        "[\"\xc0\xaf\"]",         /* an overlong '/' */
        "[\"\xed\xa0\x80\"]",     /* a UTF-16 surrogate in UTF-8 */
        "[\"\xf4\x90\x80\x80\"]", /* past U+10FFFF */
        "[\"\x01\"]",             /* a raw control character */
        "{'a':1}",
        "{a:1}",
        "[01]",
        "[+1]",
        "[.5]",
        "{\"a\":1} x",
        "[\"\\x41\"]",
        "[\"\\ud800\"]", /* a lone surrogate escape */
        "[true",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[128] = "";
        bool nomem = true;
        int64_t before = allocated();
        yyjson_doc *doc = sy_json_read_err(bad[i], strlen(bad[i]), &nomem, err, sizeof(err));
        CHECK(doc == NULL);
        CHECK(!nomem);
        CHECK(strstr(err, " at byte ") != NULL);
        CHECK_EQ(allocated(), before);
        if (doc != NULL) {
            fprintf(stderr, "  accepted: %s\n", bad[i]);
            yyjson_doc_free(doc);
        }
        nomem = true;
        doc = sy_json_read(bad[i], strlen(bad[i]), &nomem);
        CHECK(doc == NULL && !nomem);
        yyjson_doc_free(doc);
    }
    /* The message names where the reader stopped. */
    char err[128] = "";
    bool nomem = false;
    CHECK(sy_json_read_err("[1,2,x]", 7, &nomem, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "at byte 5") != NULL);
    /* No room for a message is fine. */
    CHECK(sy_json_read_err("[", 1, &nomem, NULL, 0) == NULL);
    CHECK(sy_json_read_err("[", 1, &nomem, err, 1) == NULL && err[0] == 0);
    /* Only len bytes are read: what follows them does not count. */
    yyjson_doc *doc = sy_json_read("[1] trailing", 3, &nomem);
    CHECK(doc != NULL);
    yyjson_doc_free(doc);
    static const char *const good[] = {"0", "-0.5e-3", "\"\xf0\x9f\x8e\xb5\"", "[\"\\ud83c\\udfb5\"]", " {} ", "null"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        doc = sy_json_read(good[i], strlen(good[i]), &nomem);
        CHECK(doc != NULL);
        yyjson_doc_free(doc);
    }
}

int main(void) {
    test_memory();
    test_strict();
    return check_report("test_json");
}
