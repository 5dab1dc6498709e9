/*
 * vectors.h — test helper: the vectors made at test time by a node script
 * under vectors/ (vectors/pusher.js: the real Pusher libraries), read as
 * one JSON document with yyjson. The Makefile writes them to
 * out/vectors/<name>.json before it builds the tests that read them;
 * SY_TEST_VECTORS_DIR overrides the folder. Test code only: a missing or
 * unreadable file is a failed check, reported, and NULL.
 */
#ifndef SY_TEST_VECTORS_H
#define SY_TEST_VECTORS_H

#include <stdio.h>
#include <stdlib.h>

#include <yyjson.h>

#include "check.h"

static yyjson_doc *vectors_load(const char *name) {
    const char *dir = getenv("SY_TEST_VECTORS_DIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.json", dir != NULL ? dir : "out/vectors", name);
    yyjson_read_err err;
    yyjson_doc *doc = yyjson_read_file(path, 0, NULL, &err);
    if (doc == NULL)
        fprintf(stderr, "vectors: cannot read %s (%s): made by `make` in __test__/c\n", path, err.msg);
    CHECK(doc != NULL);
    return doc;
}

/* The string member key of object o ("" when absent). */
static const char *vec_str(yyjson_val *o, const char *key, size_t *len) {
    yyjson_val *v = yyjson_obj_get(o, key);
    *len = yyjson_get_len(v);
    return yyjson_is_str(v) ? yyjson_get_str(v) : "";
}

#endif
