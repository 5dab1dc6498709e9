/*
 * sy_napi — the one way binding/ checks N-API calls, reads arguments and
 * builds result objects. JS thread only (every function takes the napi_env
 * of the calling thread).
 *
 * Convention: every function returns true on success. On failure a JS
 * exception is pending (a TypeError/RangeError naming the argument, or an
 * Error naming the failed call) and the caller returns NULL at once.
 */
#ifndef SY_NAPI_H
#define SY_NAPI_H

#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Checks one N-API call; on failure throws an Error naming `what` (unless an
 * exception is already pending) and returns false. */
bool sy_napi_ok(napi_env env, napi_status status, const char *what);

/* Throws TypeError(code ERR_INVALID_ARG_TYPE): `name` must be `expected`. */
void sy_napi_throw_type(napi_env env, const char *name, const char *expected);
/* Throws RangeError(code ERR_OUT_OF_RANGE): `name` must be `range`. */
void sy_napi_throw_range(napi_env env, const char *name, const char *range);
/* Throws Error with a code and a message. */
void sy_napi_throw(napi_env env, const char *code, const char *message);
/* Throws Error(code ERR_SYMPHONY_NO_MEMORY): "symphony: out of memory", with
 * " (what)" after it when what is not NULL. */
void sy_napi_throw_oom(napi_env env, const char *what);

/* Reads the call's arguments; fails unless at least `min` were given.
 * *argc is in: capacity of argv, out: count given (capped at capacity). */
bool sy_napi_args(napi_env env, napi_callback_info info, size_t min, size_t *argc, napi_value *argv,
                  napi_value *this_arg);

bool sy_napi_get_bool(napi_env env, napi_value v, const char *name, bool *out);
/* A string copied into *out (sy_malloc'ed, NUL-terminated; the caller
 * frees it), or *out = NULL for null or undefined. */
bool sy_napi_get_string(napi_env env, napi_value v, const char *name, char **out);
/* The same, with its length in bytes (0 for null or undefined): the bytes
 * may hold a NUL of the string's own. */
bool sy_napi_get_string_len(napi_env env, napi_value v, const char *name, char **out, size_t *len);
/* The same for obj[key] (key also names it in errors). */
bool sy_napi_get_named_string(napi_env env, napi_value obj, const char *key, char **out);
/* A number that is an integer within [min, max]. */
bool sy_napi_get_int64(napi_env env, napi_value v, const char *name, int64_t min, int64_t max, int64_t *out);
bool sy_napi_get_uint32(napi_env env, napi_value v, const char *name, uint32_t *out);

/* A JS boolean; NULL (an exception pending) on failure. */
napi_value sy_napi_make_bool(napi_env env, bool value);

/* Setters on an object; `value < 0` in set_stat means unknown and sets null. */
bool sy_napi_set_int64(napi_env env, napi_value obj, const char *key, int64_t value);
bool sy_napi_set_stat(napi_env env, napi_value obj, const char *key, int64_t value);
bool sy_napi_set_double(napi_env env, napi_value obj, const char *key, double value);
bool sy_napi_set_bool(napi_env env, napi_value obj, const char *key, bool value);
/* NULL str sets null. */
bool sy_napi_set_string(napi_env env, napi_value obj, const char *key, const char *str);
bool sy_napi_set_value(napi_env env, napi_value obj, const char *key, napi_value value);
bool sy_napi_set_function(napi_env env, napi_value obj, const char *key, napi_callback fn, void *data);

/* Fills obj, row i of a list (ctx: the list). */
typedef bool (*sy_napi_row_fn)(napi_env env, const void *ctx, size_t i, napi_value obj);
/* obj[key] = a frozen array of n frozen objects, the i'th filled by fill:
 * how binding/ exports its lists (statFields, busStatFields, optionSchema). */
bool sy_napi_set_rows(napi_env env, napi_value obj, const char *key, size_t n, sy_napi_row_fn fill, const void *ctx);

#endif
