/* sy_napi — see sy_napi.h. */
#include "sy_napi.h"

#include "base/sy_alloc.h"

#include <stdio.h>

bool sy_napi_ok(napi_env env, napi_status status, const char *what) {
    if (status == napi_ok)
        return true;
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending)
        return false;
    const napi_extended_error_info *info = NULL;
    const char *detail = "unknown error";
    if (napi_get_last_error_info(env, &info) == napi_ok && info != NULL && info->error_message != NULL)
        detail = info->error_message;
    char msg[256];
    snprintf(msg, sizeof(msg), "symphony: %s failed: %s", what, detail);
    napi_throw_error(env, "ERR_SYMPHONY_NAPI", msg);
    return false;
}

void sy_napi_throw_type(napi_env env, const char *name, const char *expected) {
    char msg[256];
    snprintf(msg, sizeof(msg), "The \"%s\" argument must be %s", name, expected);
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
}

void sy_napi_throw_range(napi_env env, const char *name, const char *range) {
    char msg[256];
    snprintf(msg, sizeof(msg), "The value of \"%s\" is out of range. It must be %s", name, range);
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
}

void sy_napi_throw(napi_env env, const char *code, const char *message) { napi_throw_error(env, code, message); }

void sy_napi_throw_oom(napi_env env, const char *what) {
    char msg[160];
    snprintf(msg, sizeof(msg), "symphony: out of memory%s%s%s", what ? " (" : "", what ? what : "", what ? ")" : "");
    napi_throw_error(env, "ERR_SYMPHONY_NO_MEMORY", msg);
}

napi_value sy_napi_make_bool(napi_env env, bool value) {
    napi_value v;
    return sy_napi_ok(env, napi_get_boolean(env, value, &v), "napi_get_boolean") ? v : NULL;
}

bool sy_napi_args(napi_env env, napi_callback_info info, size_t min, size_t *argc, napi_value *argv,
                  napi_value *this_arg) {
    size_t cap = *argc;
    if (!sy_napi_ok(env, napi_get_cb_info(env, info, argc, argv, this_arg, NULL), "napi_get_cb_info"))
        return false;
    if (*argc < min) {
        char msg[128];
        snprintf(msg, sizeof(msg), "Expected at least %zu argument%s, got %zu", min, min == 1 ? "" : "s", *argc);
        napi_throw_type_error(env, "ERR_MISSING_ARGS", msg);
        return false;
    }
    if (*argc > cap)
        *argc = cap;
    return true;
}

static bool type_of(napi_env env, napi_value v, napi_valuetype *t) {
    return sy_napi_ok(env, napi_typeof(env, v, t), "napi_typeof");
}

/* v is of type want, else a TypeError naming it ("of type <expected>"). */
static bool want_type(napi_env env, napi_value v, napi_valuetype want, const char *name, const char *expected) {
    napi_valuetype t;
    if (!type_of(env, v, &t))
        return false;
    if (t != want) {
        sy_napi_throw_type(env, name, expected);
        return false;
    }
    return true;
}

bool sy_napi_get_bool(napi_env env, napi_value v, const char *name, bool *out) {
    return want_type(env, v, napi_boolean, name, "of type boolean") &&
           sy_napi_ok(env, napi_get_value_bool(env, v, out), "napi_get_value_bool");
}

bool sy_napi_get_int64(napi_env env, napi_value v, const char *name, int64_t min, int64_t max, int64_t *out) {
    if (!want_type(env, v, napi_number, name, "of type number"))
        return false;
    double d = 0;
    if (!sy_napi_ok(env, napi_get_value_double(env, v, &d), "napi_get_value_double"))
        return false;
    if (!(d >= (double)min && d <= (double)max) || d != (double)(int64_t)d) {
        char range[96];
        snprintf(range, sizeof(range), "an integer >= %lld and <= %lld", (long long)min, (long long)max);
        sy_napi_throw_range(env, name, range);
        return false;
    }
    *out = (int64_t)d;
    return true;
}

bool sy_napi_get_uint32(napi_env env, napi_value v, const char *name, uint32_t *out) {
    int64_t x = 0;
    if (!sy_napi_get_int64(env, v, name, 0, UINT32_MAX, &x))
        return false;
    *out = (uint32_t)x;
    return true;
}

bool sy_napi_set_value(napi_env env, napi_value obj, const char *key, napi_value value) {
    return sy_napi_ok(env, napi_set_named_property(env, obj, key, value), "napi_set_named_property");
}

bool sy_napi_set_double(napi_env env, napi_value obj, const char *key, double value) {
    napi_value v;
    return sy_napi_ok(env, napi_create_double(env, value, &v), "napi_create_double") &&
           sy_napi_set_value(env, obj, key, v);
}

bool sy_napi_set_int64(napi_env env, napi_value obj, const char *key, int64_t value) {
    napi_value v;
    return sy_napi_ok(env, napi_create_int64(env, value, &v), "napi_create_int64") &&
           sy_napi_set_value(env, obj, key, v);
}

bool sy_napi_set_stat(napi_env env, napi_value obj, const char *key, int64_t value) {
    if (value >= 0)
        return sy_napi_set_int64(env, obj, key, value);
    napi_value v;
    return sy_napi_ok(env, napi_get_null(env, &v), "napi_get_null") && sy_napi_set_value(env, obj, key, v);
}

bool sy_napi_set_bool(napi_env env, napi_value obj, const char *key, bool value) {
    napi_value v;
    return sy_napi_ok(env, napi_get_boolean(env, value, &v), "napi_get_boolean") && sy_napi_set_value(env, obj, key, v);
}

bool sy_napi_set_string(napi_env env, napi_value obj, const char *key, const char *str) {
    napi_value v;
    if (str == NULL)
        return sy_napi_ok(env, napi_get_null(env, &v), "napi_get_null") && sy_napi_set_value(env, obj, key, v);
    return sy_napi_ok(env, napi_create_string_utf8(env, str, NAPI_AUTO_LENGTH, &v), "napi_create_string_utf8") &&
           sy_napi_set_value(env, obj, key, v);
}

bool sy_napi_set_function(napi_env env, napi_value obj, const char *key, napi_callback fn, void *data) {
    napi_value v;
    return sy_napi_ok(env, napi_create_function(env, key, NAPI_AUTO_LENGTH, fn, data, &v), "napi_create_function") &&
           sy_napi_set_value(env, obj, key, v);
}

bool sy_napi_get_string(napi_env env, napi_value v, const char *name, char **out) {
    size_t len;
    return sy_napi_get_string_len(env, v, name, out, &len);
}

bool sy_napi_get_string_len(napi_env env, napi_value v, const char *name, char **out, size_t *out_len) {
    napi_valuetype t;
    size_t len = 0;
    *out = NULL;
    *out_len = 0;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_null || t == napi_undefined)
        return true;
    if (t != napi_string) {
        sy_napi_throw_type(env, name, "of type string");
        return false;
    }
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v, NULL, 0, &len), "napi_get_value_string_utf8"))
        return false;
    if ((*out = sy_malloc(len + 1)) == NULL) {
        sy_napi_throw_oom(env, NULL);
        return false;
    }
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v, *out, len + 1, &len), "napi_get_value_string_utf8")) {
        sy_free(*out);
        *out = NULL;
        return false;
    }
    *out_len = len;
    return true;
}

bool sy_napi_get_named_string(napi_env env, napi_value obj, const char *key, char **out) {
    napi_value v;
    *out = NULL;
    return sy_napi_ok(env, napi_get_named_property(env, obj, key, &v), "napi_get_named_property") &&
           sy_napi_get_string(env, v, key, out);
}

bool sy_napi_set_rows(napi_env env, napi_value obj, const char *key, size_t n, sy_napi_row_fn fill, const void *ctx) {
    napi_value arr;
    if (!sy_napi_ok(env, napi_create_array_with_length(env, n, &arr), "napi_create_array_with_length"))
        return false;
    for (size_t i = 0; i < n; i++) {
        napi_value o;
        if (!sy_napi_ok(env, napi_create_object(env, &o), "napi_create_object") || !fill(env, ctx, i, o) ||
            !sy_napi_ok(env, napi_object_freeze(env, o), "napi_object_freeze") ||
            !sy_napi_ok(env, napi_set_element(env, arr, (uint32_t)i, o), "napi_set_element"))
            return false;
    }
    return sy_napi_ok(env, napi_object_freeze(env, arr), "napi_object_freeze") && sy_napi_set_value(env, obj, key, arr);
}
