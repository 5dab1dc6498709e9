/* server_args — the arguments of binding.server*: see server.h. */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "sy_napi.h"

bool sy_barg_handle(napi_env env, napi_value v, sy_bserver_t **out) {
    napi_valuetype t;
    void *p = NULL;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t != napi_external) {
        sy_napi_throw_type(env, "handle", "a symphony server handle");
        return false;
    }
    if (!sy_napi_ok(env, napi_get_value_external(env, v, &p), "napi_get_value_external"))
        return false;
    *out = p;
    return true;
}

bool sy_barg_server(napi_env env, napi_callback_info info, size_t n, napi_value *argv, sy_bserver_t **b) {
    size_t argc = n;
    if (!sy_napi_args(env, info, n, &argc, argv, NULL) || !sy_barg_handle(env, argv[0], b))
        return false;
    if ((*b)->srv == NULL) {
        sy_napi_throw(env, "ERR_SYMPHONY_CLOSED", "symphony: the server is closed");
        return false;
    }
    return true;
}

bool sy_barg_id(napi_env env, napi_value v, uint64_t *id) {
    int64_t x = 0;
    if (!sy_napi_get_int64(env, v, "id", 0, ((int64_t)1 << 53) - 1, &x))
        return false;
    *id = (uint64_t)x;
    return true;
}

bool sy_barg_send_flags(napi_env env, napi_value v, unsigned *out) {
    int64_t f;
    if (!sy_napi_get_int64(env, v, "flags", 0, SY_SEND_BINARY | SY_SEND_COMPRESS | SY_SEND_LOCAL, &f))
        return false;
    *out = (unsigned)f;
    return true;
}

bool sy_barg_get(napi_env env, napi_value obj, const char *key, napi_value *out) {
    return sy_napi_ok(env, napi_get_named_property(env, obj, key, out), "napi_get_named_property");
}

/* A string's UTF-8 bytes into out. The heap copy, if one is needed, stays in
 * a local until the last call that can fail has succeeded, so that every
 * failure path frees it and out->owned is set only on success. */
bool sy_barg_string_bytes(napi_env env, napi_value v, sy_bytes_t *out) {
    size_t len = 0;
    out->owned = NULL;
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v, NULL, 0, &len), "napi_get_value_string_utf8"))
        return false;
    char *buf = out->stack, *owned = NULL;
    if (len + 1 > sizeof(out->stack)) {
        buf = owned = sy_malloc(len + 1);
        if (owned == NULL) {
            sy_napi_throw_oom(env, NULL);
            return false;
        }
    }
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v, buf, len + 1, &len), "napi_get_value_string_utf8")) {
        sy_free(owned);
        return false;
    }
    out->data = buf;
    out->len = len;
    out->owned = owned;
    return true;
}

/* The size of one element of a TypedArray. */
static size_t element_size(napi_typedarray_type tt) {
    switch (tt) {
    case napi_int16_array:
    case napi_uint16_array:
        return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array:
        return 4;
    case napi_float64_array:
    case napi_bigint64_array:
    case napi_biguint64_array:
        return 8;
    default:
        return 1;
    }
}

bool sy_barg_bytes(napi_env env, napi_value v, const char *name, sy_bytes_t *out) {
    napi_valuetype t;
    out->owned = NULL;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_string)
        return sy_barg_string_bytes(env, v, out);
    bool is = false;
    void *p = NULL;
    size_t len = 0, offset = 0;
    napi_value ab;
    if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
        napi_typedarray_type tt;
        size_t count = 0;
        if (!sy_napi_ok(env, napi_get_typedarray_info(env, v, &tt, &count, &p, &ab, &offset),
                        "napi_get_typedarray_info"))
            return false;
        len = count * element_size(tt);
    } else if (napi_is_dataview(env, v, &is) == napi_ok && is) {
        if (!sy_napi_ok(env, napi_get_dataview_info(env, v, &len, &p, &ab, &offset), "napi_get_dataview_info"))
            return false;
    } else if (napi_is_arraybuffer(env, v, &is) == napi_ok && is) {
        if (!sy_napi_ok(env, napi_get_arraybuffer_info(env, v, &p, &len), "napi_get_arraybuffer_info"))
            return false;
    } else {
        sy_napi_throw_type(env, name, "a string, Buffer, TypedArray, DataView or ArrayBuffer");
        return false;
    }
    out->data = p != NULL ? p : "";
    out->len = len;
    return true;
}

bool sy_barg_topic(napi_env env, napi_value v, sy_bytes_t *out) {
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t != napi_string) {
        sy_napi_throw_type(env, "topic", "of type string");
        return false;
    }
    if (!sy_barg_string_bytes(env, v, out))
        return false;
    if (out->len == 0 || out->len > SY_TOPIC_MAX_LEN) {
        sy_free(out->owned);
        out->owned = NULL;
        char range[64];
        snprintf(range, sizeof(range), "a non-empty string of at most %d UTF-8 bytes", SY_TOPIC_MAX_LEN);
        sy_napi_throw_range(env, "topic", range);
        return false;
    }
    return true;
}

sy_btopic_t *sy_barg_topic_handle(napi_env env, napi_value v, sy_bserver_t *b) {
    void *p = NULL;
    if (!sy_napi_ok(env, napi_get_value_external(env, v, &p), "napi_get_value_external"))
        return NULL;
    sy_btopic_t *h = p;
    if (h == NULL || h->b != b) {
        sy_napi_throw_type(env, "topic", "a topic handle of this server");
        return NULL;
    }
    return h;
}

napi_value sy_bval_int(napi_env env, int64_t n) {
    napi_value v;
    return sy_napi_ok(env, napi_create_int64(env, n, &v), "napi_create_int64") ? v : NULL;
}

napi_value sy_bval_result(napi_env env, int rc) {
    if (rc != 0 && rc != ENOTCONN) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    return sy_napi_make_bool(env, rc == 0);
}

bool sy_bval_set_u64(napi_env env, napi_value obj, const char *key, uint64_t v) {
    return sy_napi_set_double(env, obj, key, (double)v);
}

bool sy_bval_functions(napi_env env, napi_value exports, const sy_bfunction_t *fns, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!sy_napi_set_function(env, exports, fns[i].name, fns[i].fn, NULL))
            return false;
    return true;
}
