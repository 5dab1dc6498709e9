/* sy_json — see sy_json.h. */
#include "base/sy_json.h"

#include <stdint.h>
#include <stdio.h>

#include "base/sy_alloc.h"

static void *json_malloc(void *ctx, size_t size) {
    (void)ctx;
    return sy_malloc(size);
}

static void *json_realloc(void *ctx, void *ptr, size_t old_size, size_t size) {
    (void)ctx;
    (void)old_size;
    return sy_realloc(ptr, size);
}

static void json_free(void *ctx, void *ptr) {
    (void)ctx;
    sy_free(ptr);
}

static const yyjson_alc ALC = {json_malloc, json_realloc, json_free, NULL};

const yyjson_alc *sy_json_alc(void) { return &ALC; }

yyjson_doc *sy_json_read_err(const char *p, size_t len, bool *nomem, char *err, size_t errlen) {
    yyjson_read_err why;
    /* The input is only read: without YYJSON_READ_INSITU yyjson copies it.
     * No flag: comments, trailing commas, NaN/Infinity and invalid UTF-8
     * are all errors. */
    yyjson_doc *doc = yyjson_read_opts((char *)(uintptr_t)p, len, YYJSON_READ_NOFLAG, &ALC, &why);
    *nomem = doc == NULL && why.code == YYJSON_READ_ERROR_MEMORY_ALLOCATION;
    if (doc == NULL && err != NULL && errlen > 0) {
        if (*nomem)
            snprintf(err, errlen, "out of memory");
        else
            snprintf(err, errlen, "%s at byte %zu", why.msg != NULL ? why.msg : "not JSON", why.pos);
    }
    return doc;
}

yyjson_doc *sy_json_read(const char *p, size_t len, bool *nomem) { return sy_json_read_err(p, len, nomem, NULL, 0); }

yyjson_doc *sy_json_read_lax_utf8(const char *p, size_t len, bool *nomem) {
    yyjson_read_err why;
    yyjson_doc *doc = yyjson_read_opts((char *)(uintptr_t)p, len, YYJSON_READ_ALLOW_INVALID_UNICODE, &ALC, &why);
    *nomem = doc == NULL && why.code == YYJSON_READ_ERROR_MEMORY_ALLOCATION;
    return doc;
}

void sy_json_free(void *text) { sy_free(text); }
