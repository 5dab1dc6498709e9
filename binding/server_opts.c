/* server_opts — serverCreate's options into sy_server_opts_t, decoded from
 * the one list of them (src/io/model/sy_io_opts.h, SY_IO_OPTS_LIST): one reader
 * per kind of option, not one block per option; and the list exported as
 * binding.optionSchema (lib/options.js validates, fills the defaults and
 * names the options by it) and, for the integers, binding.constants.options
 * ({ min, max } by name). See server.h. */
#include "server.h"

#include <stdio.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "io/model/sy_budget.h"
#include "io/model/sy_deflate.h"
#include "proto/sy_cidr.h"
#include "sy_napi.h"

/* A row of the list as the decoder reads it: where its field is (size 0:
 * no field, an option of the binding's own calls). */
typedef struct {
    const char *name, *path;
    sy_opt_kind_t kind;
    int64_t def, min, max;
    const char *values, *help;
    size_t offset, size;
} opt_row_t;

static const opt_row_t OPTS[] = {
#define OPT_ROW(type, field, name, path, kind, def, min, max, values, help) \
    {name, path, kind, def, min, max, values, help, offsetof(sy_io_opts_t, field), sizeof(((sy_io_opts_t *)0)->field)},
    SY_IO_OPTS_LIST(OPT_ROW)
#undef OPT_ROW
    /* serverClose's deadline (lib/'s closeDeadline), checked by the binding. */
    {"closeDeadline", "closeDeadline", SY_OPT_UINT, 2000, 0, 3600000, "",
     "ms close() lets clients finish before it ends their connections", 0, 0},
};
#define OPT_COUNT (sizeof(OPTS) / sizeof(OPTS[0]))

static const char *const KIND_NAMES[] = {
    [SY_OPT_UINT] = "uint", [SY_OPT_BOOL] = "bool", [SY_OPT_ENUM] = "enum", [SY_OPT_STRING] = "string"};

/* The index of the word of length len in an SY_OPT_ENUM's values, or -1. */
static int64_t enum_index(const char *values, const char *word, size_t len) {
    int64_t i = 0;
    for (const char *p = values; *p != '\0'; i++) {
        size_t n = strcspn(p, " ");
        if (n == len && memcmp(p, word, len) == 0)
            return i;
        p += n;
        p += *p == ' ';
    }
    return -1;
}

/* An SY_OPT_ENUM: a string, one of the row's values, as its index. */
static bool get_enum(napi_env env, napi_value v, const opt_row_t *r, int64_t *out) {
    char word[32];
    size_t len = 0;
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t != napi_string) {
        sy_napi_throw_type(env, r->name, "of type string");
        return false;
    }
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v, word, sizeof(word), &len), "napi_get_value_string_utf8"))
        return false;
    if ((*out = enum_index(r->values, word, len)) < 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "The argument \"%s\" must be one of: %s", r->name, r->values);
        napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", msg);
        return false;
    }
    return true;
}

/* Stores x into the row's field, an integer (or bool, or enum) of its size. */
static void store_int(sy_io_opts_t *o, const opt_row_t *r, int64_t x) {
    char *f = (char *)o + r->offset;
    uint8_t u8 = (uint8_t)x;
    uint16_t u16 = (uint16_t)x;
    uint32_t u32 = (uint32_t)x;
    uint64_t u64 = (uint64_t)x;
    switch (r->size) {
    case 1:
        memcpy(f, &u8, 1);
        break;
    case 2:
        memcpy(f, &u16, 2);
        break;
    case 4:
        memcpy(f, &u32, 4);
        break;
    default:
        memcpy(f, &u64, 8);
        break;
    }
}

/* One option: obj[r->name] by its kind, or its default when undefined. */
static bool decode_row(napi_env env, napi_value obj, const opt_row_t *r, sy_io_opts_t *o) {
    napi_value v;
    napi_valuetype t;
    if (!sy_barg_get(env, obj, r->name, &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    bool given = t != napi_undefined || r->def == SY_OPT_NODEF; /* no default: its reader names what it wants */
    int64_t x = r->def;
    bool flag = false;
    if (r->kind == SY_OPT_STRING) {
        char *str = NULL;
        if (given && !sy_napi_get_string(env, v, r->name, &str))
            return false;
        if (!given && r->def != 0 && (str = sy_memdup(r->values, strlen(r->values) + 1)) == NULL) {
            sy_napi_throw_oom(env, NULL);
            return false;
        }
        memcpy((char *)o + r->offset, &str, sizeof(str));
        return true;
    }
    if (given && r->kind == SY_OPT_UINT && !sy_napi_get_int64(env, v, r->name, r->min, r->max, &x))
        return false;
    if (given && r->kind == SY_OPT_BOOL) {
        if (!sy_napi_get_bool(env, v, r->name, &flag))
            return false;
        x = flag;
    }
    if (given && r->kind == SY_OPT_ENUM && !get_enum(env, v, r, &x))
        return false;
    store_int(o, r, x);
    return true;
}

/* opts.proxyProtocolFrom (null or undefined, or an array of at most
 * SY_PROXY_FROM_MAX addresses or CIDR ranges) into o: not a row of the
 * list, an array of ranges. */
static bool proxy_from(napi_env env, napi_value obj, sy_server_opts_t *o) {
    napi_value v;
    napi_valuetype t;
    if (!sy_barg_get(env, obj, "proxyProtocolFrom", &v) || !sy_napi_ok(env, napi_typeof(env, v, &t), "napi_typeof"))
        return false;
    if (t == napi_null || t == napi_undefined)
        return true;
    bool is_array = false;
    uint32_t n = 0;
    if (!sy_napi_ok(env, napi_is_array(env, v, &is_array), "napi_is_array"))
        return false;
    if (!is_array) {
        sy_napi_throw_type(env, "proxyProtocolFrom", "an array of addresses or CIDR ranges, or null");
        return false;
    }
    if (!sy_napi_ok(env, napi_get_array_length(env, v, &n), "napi_get_array_length"))
        return false;
    if (n > SY_PROXY_FROM_MAX) {
        sy_napi_throw_range(env, "proxyProtocolFrom", "at most 64 entries");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        char text[SY_CIDR_TEXT_MAX + 1];
        size_t len = 0;
        if (!sy_napi_ok(env, napi_get_element(env, v, i, &e), "napi_get_element") ||
            !sy_napi_ok(env, napi_typeof(env, e, &t), "napi_typeof"))
            return false;
        if (t != napi_string) {
            sy_napi_throw_type(env, "proxyProtocolFrom", "an array of strings");
            return false;
        }
        if (!sy_napi_ok(env, napi_get_value_string_utf8(env, e, text, sizeof(text), &len),
                        "napi_get_value_string_utf8"))
            return false;
        if (len >= SY_CIDR_TEXT_MAX || sy_cidr_parse(text, len, &o->proxy_from[i]) != 0) {
            sy_napi_throw_range(env, "proxyProtocolFrom", "addresses or CIDR ranges (10.0.0.0/8, 2001:db8::/32)");
            return false;
        }
    }
    o->proxy_from_n = (uint8_t)n;
    return true;
}

bool sy_bopts_decode(napi_env env, napi_value obj, sy_server_opts_t *o) {
    memset(o, 0, sizeof(*o));
    for (size_t i = 0; i < OPT_COUNT; i++)
        if (OPTS[i].size != 0 && !decode_row(env, obj, &OPTS[i], o))
            return false;
    return proxy_from(env, obj, o);
}

bool sy_bopts_int(napi_env env, napi_value v, const char *option, const char *name, int64_t *out) {
    for (size_t i = 0; i < OPT_COUNT; i++)
        if (OPTS[i].kind == SY_OPT_UINT && strcmp(OPTS[i].name, option) == 0)
            return sy_napi_get_int64(env, v, name, OPTS[i].min, OPTS[i].max, out);
    sy_napi_throw(env, "ERR_SYMPHONY_NAPI", "symphony: no such option");
    return false;
}

/* An SY_OPT_ENUM's values as a frozen array of strings. */
static bool enum_values(napi_env env, const char *values, napi_value *out) {
    uint32_t i = 0;
    if (!sy_napi_ok(env, napi_create_array(env, out), "napi_create_array"))
        return false;
    for (const char *p = values; *p != '\0'; i++) {
        size_t n = strcspn(p, " ");
        napi_value s;
        if (!sy_napi_ok(env, napi_create_string_utf8(env, p, n, &s), "napi_create_string_utf8") ||
            !sy_napi_ok(env, napi_set_element(env, *out, i, s), "napi_set_element"))
            return false;
        p += n;
        p += *p == ' ';
    }
    return sy_napi_ok(env, napi_object_freeze(env, *out), "napi_object_freeze");
}

/* A row's default as JS has it: null (none), a boolean, an enum's name, a
 * string or null, a number. */
static bool row_default(napi_env env, const opt_row_t *r, napi_value *out) {
    if (r->def == SY_OPT_NODEF || (r->kind == SY_OPT_STRING && r->def == 0))
        return sy_napi_ok(env, napi_get_null(env, out), "napi_get_null");
    if (r->kind == SY_OPT_BOOL)
        return sy_napi_ok(env, napi_get_boolean(env, r->def != 0, out), "napi_get_boolean");
    if (r->kind == SY_OPT_STRING)
        return sy_napi_ok(env, napi_create_string_utf8(env, r->values, NAPI_AUTO_LENGTH, out),
                          "napi_create_string_utf8");
    if (r->kind == SY_OPT_ENUM) {
        const char *p = r->values;
        for (int64_t i = 0; i < r->def; i++)
            p += strcspn(p, " ") + 1;
        return sy_napi_ok(env, napi_create_string_utf8(env, p, strcspn(p, " "), out), "napi_create_string_utf8");
    }
    return sy_napi_ok(env, napi_create_double(env, (double)r->def, out), "napi_create_double");
}

/* One row as { name, path, kind, default, min, max (uint), values (enum), help }. */
static bool schema_row(napi_env env, const void *ctx, size_t i, napi_value obj) {
    (void)ctx;
    const opt_row_t *r = &OPTS[i];
    napi_value def, values;
    if (!sy_napi_set_string(env, obj, "name", r->name) || !sy_napi_set_string(env, obj, "path", r->path) ||
        !sy_napi_set_string(env, obj, "kind", KIND_NAMES[r->kind]) || !row_default(env, r, &def) ||
        !sy_napi_set_value(env, obj, "default", def) || !sy_napi_set_string(env, obj, "help", r->help))
        return false;
    if (r->kind == SY_OPT_UINT &&
        (!sy_napi_set_double(env, obj, "min", (double)r->min) || !sy_napi_set_double(env, obj, "max", (double)r->max)))
        return false;
    return r->kind != SY_OPT_ENUM ||
           (enum_values(env, r->values, &values) && sy_napi_set_value(env, obj, "values", values));
}

/* constants.options: { name: { min, max } } of the integer options lib/
 * takes by a name of its own (not those it derives: proxyProtocol). */
static bool export_ranges(napi_env env, napi_value constants) {
    napi_value opts;
    if (!sy_napi_ok(env, napi_create_object(env, &opts), "napi_create_object"))
        return false;
    for (size_t i = 0; i < OPT_COUNT; i++) {
        napi_value r;
        if (OPTS[i].kind != SY_OPT_UINT || OPTS[i].path[0] == '\0')
            continue;
        if (!sy_napi_ok(env, napi_create_object(env, &r), "napi_create_object") ||
            !sy_napi_set_int64(env, r, "min", OPTS[i].min) || !sy_napi_set_int64(env, r, "max", OPTS[i].max) ||
            !sy_napi_ok(env, napi_object_freeze(env, r), "napi_object_freeze") ||
            !sy_napi_set_value(env, opts, OPTS[i].name, r))
            return false;
    }
    return sy_napi_ok(env, napi_object_freeze(env, opts), "napi_object_freeze") &&
           sy_napi_set_value(env, constants, "options", opts);
}

bool sy_bopts_init(napi_env env, napi_value exports, napi_value constants) {
    return sy_napi_set_rows(env, exports, "optionSchema", OPT_COUNT, schema_row, NULL) && export_ranges(env, constants);
}
