/*
 * sy_json — the one JSON reader of src/: yyjson (deps/yyjson.sh), with its
 * memory from sy_alloc (base/sy_alloc.h), so a document parsed on an IO
 * thread lives in that thread's arena and nothing process-wide is set.
 *
 * Every parse in src/ goes through sy_json_read (strict JSON: no comments,
 * no trailing commas, no NaN or Infinity; UTF-8 checked), or
 * sy_json_read_lax_utf8 (the same, strings not UTF-8 kept for the caller
 * to check); the values are
 * read with yyjson's own accessors (yyjson_obj_get, yyjson_get_str, ...).
 *
 * Threads: any thread; a document is used by one thread at a time.
 *
 * Ownership: sy_json_read returns a document the caller frees with
 * yyjson_doc_free; its strings are copies (the input is not kept or
 * written). Text made by yyjson's writers with sy_json_alc() is freed with
 * sy_json_free.
 *
 * Errors: sy_json_read returns NULL with *nomem true when out of memory,
 * false when the text is not JSON; sy_json_read_err also says why in err
 * (yyjson's words and the byte where it stopped, or "out of memory").
 */
#ifndef SY_JSON_H
#define SY_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <yyjson.h>

/* The allocator of every yyjson call in src/. */
const yyjson_alc *sy_json_alc(void);
/* Parses p[0..len) as strict JSON; NULL when it is not (or out of memory:
 * *nomem). */
yyjson_doc *sy_json_read(const char *p, size_t len, bool *nomem);
/* The same, with what is wrong in err[0..errlen) when it returns NULL
 * ("unexpected character at byte 7"). */
yyjson_doc *sy_json_read_err(const char *p, size_t len, bool *nomem, char *err, size_t errlen);
/* The same as sy_json_read but for strings: raw bytes that are not UTF-8
 * are kept in them as they are (YYJSON_READ_ALLOW_INVALID_UNICODE), for a
 * caller that checks each string it uses and refuses the part that holds
 * one (proto/sy_v2.c: one subscribe entry, not its whole frame). */
yyjson_doc *sy_json_read_lax_utf8(const char *p, size_t len, bool *nomem);
/* Frees text a yyjson writer made with sy_json_alc() (NULL: nothing). */
void sy_json_free(void *text);

#endif
