/* sy_pusher — see sy_pusher.h. */
#include "proto/sy_pusher.h"

#include <stdio.h>
#include <string.h>

#include <yyjson.h>

#include "base/sy_alloc.h"
#include "base/sy_json.h"
#include "base/sy_random.h"
#include "proto/sy_utf8.h"
#include "proto/sy_ws_frame.h"

/* ---- errors ------------------------------------------------------------- */

typedef struct err_info {
    unsigned code;
    sy_pusher_scope_t scope;
    const char *type, *message;
} err_info_t;

static const err_info_t ERRORS[SY_PUSHER_ERR_COUNT] = {
#define SY_PUSHER_ROW(name, code, scope, type, msg) [SY_PUSHER_##name] = {code, scope, type, msg},
    SY_PUSHER_ERRORS_LIST(SY_PUSHER_ROW)
#undef SY_PUSHER_ROW
};

static const err_info_t *err_info(sy_pusher_err_t e) {
    return (unsigned)e < SY_PUSHER_ERR_COUNT ? &ERRORS[e] : &ERRORS[SY_PUSHER_JSON];
}

unsigned sy_pusher_err_code(sy_pusher_err_t e) { return err_info(e)->code; }
sy_pusher_scope_t sy_pusher_err_scope(sy_pusher_err_t e) { return err_info(e)->scope; }
const char *sy_pusher_err_type(sy_pusher_err_t e) { return err_info(e)->type; }
const char *sy_pusher_err_message(sy_pusher_err_t e) { return err_info(e)->message; }

/* ---- channels, events, socket ids --------------------------------------- */

#define S2U "#server-to-user-"
#define S2U_LEN (sizeof(S2U) - 1)

static bool has_prefix(const char *s, size_t n, const char *prefix) {
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* [A-Za-z0-9_\-=@,.;] */
static bool channel_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '=' || c == '@' || c == ',' || c == '.' || c == ';';
}

sy_pusher_err_t sy_pusher_channel_check(const char *name, size_t len, size_t max_len, sy_pusher_chan_t *out) {
    *out = (sy_pusher_chan_t){SY_PUSHER_PUBLIC, false};
    if (len == 0)
        return SY_PUSHER_CHANNEL_NAME;
    if (len > max_len)
        return SY_PUSHER_CHANNEL_LONG;
    if (has_prefix(name, len, S2U)) {
        size_t id_len = len - S2U_LEN;
        if (id_len == 0 || id_len > SY_PUSHER_USER_ID_MAX)
            return SY_PUSHER_CHANNEL_NAME;
        for (size_t i = S2U_LEN; i < len; i++)
            if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
                return SY_PUSHER_CHANNEL_NAME;
        out->type = SY_PUSHER_SERVER_TO_USER;
        return SY_PUSHER_OK;
    }
    for (size_t i = 0; i < len; i++)
        if (!channel_char((unsigned char)name[i]))
            return SY_PUSHER_CHANNEL_NAME;
    static const struct {
        const char *prefix;
        sy_pusher_ctype_t type;
        bool cache;
    } PREFIXES[] = {
        /* Longest first: private-encrypted-cache- before private-encrypted- before private-. */
        {"private-encrypted-cache-", SY_PUSHER_ENCRYPTED, true},
        {"private-encrypted-", SY_PUSHER_ENCRYPTED, false},
        {"private-cache-", SY_PUSHER_PRIVATE, true},
        {"private-", SY_PUSHER_PRIVATE, false},
        {"presence-cache-", SY_PUSHER_PRESENCE, true},
        {"presence-", SY_PUSHER_PRESENCE, false},
        {"cache-", SY_PUSHER_PUBLIC, true},
    };
    for (size_t i = 0; i < sizeof(PREFIXES) / sizeof(PREFIXES[0]); i++) {
        if (has_prefix(name, len, PREFIXES[i].prefix)) {
            out->type = PREFIXES[i].type;
            out->cache = PREFIXES[i].cache;
            break;
        }
    }
    return SY_PUSHER_OK;
}

bool sy_pusher_is_client_event(const char *name, size_t len) { return has_prefix(name, len, "client-"); }

uint64_t sy_pusher_socket_node(void) {
    const uint64_t max = (UINT64_C(1) << 53) - 1;
    return sy_random_u64() % max + 1;
}

size_t sy_pusher_socket_id(char out[SY_PUSHER_SOCKET_ID_MAX], uint64_t node, uint64_t seq) {
    int n = snprintf(out, SY_PUSHER_SOCKET_ID_MAX, "%llu.%llu", (unsigned long long)node, (unsigned long long)seq);
    return n > 0 ? (size_t)n : 0;
}

/* 1 to 20 digits. */
static size_t digits(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    return i <= 20 ? i : 0;
}

bool sy_pusher_socket_id_valid(const char *s, size_t n) {
    size_t a = digits(s, n);
    if (a == 0 || a >= n || s[a] != '.')
        return false;
    size_t b = digits(s + a + 1, n - a - 1);
    return b > 0 && a + 1 + b == n;
}

void sy_pusher_limits_default(sy_pusher_limits_t *l) {
    l->max_channel_len = SY_PUSHER_CHANNEL_MAX_DEFAULT;
    l->max_event_len = SY_PUSHER_EVENT_MAX_DEFAULT;
    l->max_data_len = SY_PUSHER_DATA_MAX_DEFAULT;
}

/* ---- a client's message ------------------------------------------------- */

/* A string of 1 byte or more; NULL otherwise. */
static const char *nonempty_str(yyjson_val *v, size_t *len) {
    if (!yyjson_is_str(v) || yyjson_get_len(v) == 0)
        return NULL;
    *len = yyjson_get_len(v);
    return yyjson_get_str(v);
}

static sy_pusher_err_t parse_subscribe(yyjson_val *data, const sy_pusher_limits_t *lim, sy_pusher_msg_t *m) {
    if (!yyjson_is_obj(data))
        return SY_PUSHER_DATA;
    m->channel = nonempty_str(yyjson_obj_get(data, "channel"), &m->channel_len);
    if (m->channel == NULL)
        return SY_PUSHER_NO_CHANNEL;
    sy_pusher_err_t e = sy_pusher_channel_check(m->channel, m->channel_len, lim->max_channel_len, &m->chan);
    if (e != SY_PUSHER_OK)
        return e;
    if (!sy_pusher_needs_auth(m->chan.type))
        return SY_PUSHER_OK; /* a public (or #server-to-user-) channel's auth and channel_data are ignored */
    m->auth = nonempty_str(yyjson_obj_get(data, "auth"), &m->auth_len);
    if (m->auth == NULL)
        return SY_PUSHER_AUTH_MISSING;
    if (m->chan.type != SY_PUSHER_PRESENCE)
        return SY_PUSHER_OK;
    yyjson_val *cd = yyjson_obj_get(data, "channel_data");
    if (cd == NULL || yyjson_is_null(cd))
        return SY_PUSHER_OK; /* a signed-in user's presence (pusher-js: the user's id) */
    if (!yyjson_is_str(cd))
        return SY_PUSHER_CHANNEL_DATA;
    m->channel_data = yyjson_get_str(cd);
    m->channel_data_len = yyjson_get_len(cd);
    return SY_PUSHER_OK;
}

static sy_pusher_err_t parse_client_event(yyjson_val *root, const sy_pusher_limits_t *lim, sy_pusher_msg_t *m) {
    if (m->event_len > lim->max_event_len)
        return SY_PUSHER_CLIENT_EVENT_LONG;
    m->channel = nonempty_str(yyjson_obj_get(root, "channel"), &m->channel_len);
    if (m->channel == NULL ||
        sy_pusher_channel_check(m->channel, m->channel_len, lim->max_channel_len, &m->chan) != SY_PUSHER_OK)
        return SY_PUSHER_CLIENT_CHANNEL;
    if (m->chan.type != SY_PUSHER_PRIVATE && m->chan.type != SY_PUSHER_PRESENCE)
        return SY_PUSHER_CLIENT_PUBLIC; /* encrypted: pusher-js refuses them too */
    yyjson_val *data = yyjson_obj_get(root, "data");
    if (data == NULL)
        return SY_PUSHER_OK;
    size_t len;
    yyjson_write_err err;
    m->text = yyjson_val_write_opts(data, YYJSON_WRITE_NOFLAG, sy_json_alc(), &len, &err);
    if (m->text == NULL)
        return SY_PUSHER_NOMEM; /* the document was read as UTF-8: only memory can fail */
    if (len > lim->max_data_len)
        return SY_PUSHER_CLIENT_DATA_LONG;
    m->data = m->text;
    m->data_len = len;
    return SY_PUSHER_OK;
}

sy_pusher_err_t sy_pusher_parse(const uint8_t *p, size_t n, const sy_pusher_limits_t *lim, sy_pusher_msg_t *out) {
    *out = (sy_pusher_msg_t){0};
    bool nomem;
    yyjson_doc *doc = sy_json_read((const char *)p, n, &nomem);
    if (doc == NULL)
        return nomem ? SY_PUSHER_NOMEM : SY_PUSHER_JSON;
    out->doc = doc;
    yyjson_val *root = yyjson_doc_get_root(doc);
    sy_pusher_err_t e = SY_PUSHER_OK;
    if (!yyjson_is_obj(root)) {
        e = SY_PUSHER_NOT_OBJECT;
        goto done;
    }
    out->event = nonempty_str(yyjson_obj_get(root, "event"), &out->event_len);
    if (out->event == NULL) {
        e = SY_PUSHER_NO_EVENT;
        goto done;
    }
    yyjson_val *data = yyjson_obj_get(root, "data");
#define IS(lit) (out->event_len == sizeof(lit) - 1 && memcmp(out->event, lit, sizeof(lit) - 1) == 0)
    if (IS("pusher:subscribe")) {
        out->kind = SY_PUSHER_MSG_SUBSCRIBE;
        e = parse_subscribe(data, lim, out);
    } else if (IS("pusher:unsubscribe")) {
        out->kind = SY_PUSHER_MSG_UNSUBSCRIBE;
        if (!yyjson_is_obj(data))
            e = SY_PUSHER_DATA;
        else if ((out->channel = nonempty_str(yyjson_obj_get(data, "channel"), &out->channel_len)) == NULL)
            e = SY_PUSHER_NO_CHANNEL;
    } else if (IS("pusher:ping")) {
        out->kind = SY_PUSHER_MSG_PING;
    } else if (IS("pusher:pong")) {
        out->kind = SY_PUSHER_MSG_PONG;
    } else if (IS("pusher:signin")) {
        out->kind = SY_PUSHER_MSG_SIGNIN;
        if (!yyjson_is_obj(data))
            e = SY_PUSHER_DATA;
        else if ((out->auth = nonempty_str(yyjson_obj_get(data, "auth"), &out->auth_len)) == NULL ||
                 (out->user_data = nonempty_str(yyjson_obj_get(data, "user_data"), &out->user_data_len)) == NULL)
            e = SY_PUSHER_SIGNIN;
    } else if (sy_pusher_is_client_event(out->event, out->event_len)) {
        out->kind = SY_PUSHER_MSG_CLIENT_EVENT;
        e = parse_client_event(root, lim, out);
    } else {
        out->kind = SY_PUSHER_MSG_OTHER;
    }
#undef IS
done:
    if (e == SY_PUSHER_OK)
        return e;
    if (sy_pusher_err_scope(e) == SY_PUSHER_TO_CHANNEL && out->channel != NULL) {
        /* The refusal names the channel: keep the document, drop the rest. */
        const char *channel = out->channel;
        size_t channel_len = out->channel_len;
        sy_json_free(out->text);
        *out = (sy_pusher_msg_t){.doc = doc, .channel = channel, .channel_len = channel_len};
        return e;
    }
    sy_pusher_msg_free(out);
    return e;
}

void sy_pusher_msg_free(sy_pusher_msg_t *m) {
    sy_json_free(m->text);
    if (m->doc != NULL)
        yyjson_doc_free(m->doc);
    *m = (sy_pusher_msg_t){0};
}

/* The object of s[0..n) as a document; NULL with *e set. */
static yyjson_doc *read_object(const char *s, size_t n, sy_pusher_err_t bad, sy_pusher_err_t *e) {
    bool nomem;
    yyjson_doc *doc = sy_json_read(s, n, &nomem);
    if (doc == NULL) {
        *e = nomem ? SY_PUSHER_NOMEM : bad;
        return NULL;
    }
    if (!yyjson_is_obj(yyjson_doc_get_root(doc))) {
        yyjson_doc_free(doc);
        *e = bad;
        return NULL;
    }
    return doc;
}

/* out->block = id then info, each copied; id and info point into it. */
static sy_pusher_err_t user_block(sy_pusher_user_t *out, const char *id, size_t id_len, const char *info,
                                  size_t info_len) {
    out->block = sy_malloc(id_len + info_len + 1);
    if (out->block == NULL)
        return SY_PUSHER_NOMEM;
    memcpy(out->block, id, id_len);
    if (info_len > 0)
        memcpy(out->block + id_len, info, info_len);
    out->id = out->block;
    out->id_len = id_len;
    out->info = info != NULL ? out->block + id_len : NULL;
    out->info_len = info_len;
    return SY_PUSHER_OK;
}

sy_pusher_err_t sy_pusher_member_parse(const char *s, size_t n, size_t max_info, sy_pusher_user_t *out) {
    *out = (sy_pusher_user_t){0};
    sy_pusher_err_t e = SY_PUSHER_OK;
    yyjson_doc *doc = read_object(s, n, SY_PUSHER_MEMBER_DATA, &e);
    if (doc == NULL)
        return e;
    yyjson_val *root = yyjson_doc_get_root(doc);
    yyjson_val *uid = yyjson_obj_get(root, "user_id");
    char num[24];
    const char *id = NULL;
    size_t id_len = 0;
    if (yyjson_is_str(uid)) {
        id = yyjson_get_str(uid);
        id_len = yyjson_get_len(uid);
    } else if (yyjson_is_uint(uid) || yyjson_is_sint(uid)) {
        /* {"user_id": 1265}: older SDKs sign numbers; members are named by text */
        int k = yyjson_is_uint(uid) ? snprintf(num, sizeof(num), "%llu", (unsigned long long)yyjson_get_uint(uid))
                                    : snprintf(num, sizeof(num), "%lld", (long long)yyjson_get_sint(uid));
        id = num;
        id_len = k > 0 ? (size_t)k : 0;
    }
    if (id == NULL || id_len == 0 || id_len > SY_PUSHER_USER_ID_MAX) {
        yyjson_doc_free(doc);
        return SY_PUSHER_MEMBER_DATA;
    }
    yyjson_val *info = yyjson_obj_get(root, "user_info");
    char *text = NULL;
    size_t info_len = 0;
    if (info != NULL) {
        yyjson_write_err err;
        text = yyjson_val_write_opts(info, YYJSON_WRITE_NOFLAG, sy_json_alc(), &info_len, &err);
        if (text == NULL) {
            yyjson_doc_free(doc);
            return SY_PUSHER_NOMEM;
        }
    }
    if (info_len > max_info)
        e = SY_PUSHER_MEMBER_LONG;
    else
        e = user_block(out, id, id_len, text, info_len);
    sy_json_free(text);
    yyjson_doc_free(doc);
    return e;
}

sy_pusher_err_t sy_pusher_user_parse(const char *s, size_t n, sy_pusher_user_t *out) {
    *out = (sy_pusher_user_t){0};
    sy_pusher_err_t e = SY_PUSHER_OK;
    yyjson_doc *doc = read_object(s, n, SY_PUSHER_USER_DATA, &e);
    if (doc == NULL)
        return e;
    size_t id_len = 0;
    const char *id = nonempty_str(yyjson_obj_get(yyjson_doc_get_root(doc), "id"), &id_len);
    if (id == NULL || id_len > SY_PUSHER_USER_ID_MAX)
        e = SY_PUSHER_USER_DATA;
    else
        e = user_block(out, id, id_len, s, n);
    yyjson_doc_free(doc);
    return e;
}

void sy_pusher_user_free(sy_pusher_user_t *u) {
    sy_free(u->block);
    *u = (sy_pusher_user_t){0};
}

/* ---- writing JSON ------------------------------------------------------- */

/* A writer that measures (p NULL) or writes. Inside a string layer
 * (quoted), what is put is escaped once more: JSON inside a JSON string,
 * written in one pass. */
typedef struct w {
    uint8_t *p;
    size_t o;
    bool quoted;
} w_t;

static void put_raw(w_t *w, const char *s, size_t n) {
    if (n == 0)
        return;
    if (w->p != NULL)
        memcpy(w->p + w->o, s, n);
    w->o += n;
}

static const char HEX[] = "0123456789abcdef";

/* One byte escaped as a JSON string's content would need: its escape in
 * e, its length; 0 when it needs none. */
static size_t esc(unsigned char c, char e[6]) {
    if (c == '"' || c == '\\') {
        e[0] = '\\';
        e[1] = (char)c;
        return 2;
    }
    if (c < 0x20) {
        memcpy(e, "\\u00", 4);
        e[4] = HEX[c >> 4];
        e[5] = HEX[c & 15];
        return 6;
    }
    return 0;
}

/* s[0..n) at the writer's layer: as it is, or escaped when quoted. */
static void put(w_t *w, const char *s, size_t n) {
    if (!w->quoted) {
        put_raw(w, s, n);
        return;
    }
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        char e[6];
        size_t k = esc((unsigned char)s[i], e);
        if (k == 0)
            continue;
        put_raw(w, s + run, i - run);
        put_raw(w, e, k);
        run = i + 1;
    }
    put_raw(w, s + run, n - run);
}

static void put_z(w_t *w, const char *s) { put(w, s, strlen(s)); }

/* s[0..n) as a JSON string (quotes included) at the writer's layer; bytes
 * >= 0x80 as U+FFFD when s is not UTF-8 as a whole (as sy_v1_json_string). */
static void put_str(w_t *w, const char *s, size_t n) {
    bool valid = sy_utf8_is_valid((const uint8_t *)s, n);
    put(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[6];
        size_t k = esc(c, e);
        if (k == 0 && (c < 0x80 || valid))
            continue;
        put(w, s + run, i - run);
        if (k > 0)
            put(w, e, k);
        else
            put(w, "\\ufffd", 6);
        run = i + 1;
    }
    put(w, s + run, n - run);
    put(w, "\"", 1);
}

static void put_u64(w_t *w, uint64_t v) {
    char num[24];
    int k = snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    put(w, num, k > 0 ? (size_t)k : 0);
}

/* Opens or closes a string layer: '"' at the outer layer. */
static void open_layer(w_t *w) {
    put(w, "\"", 1);
    w->quoted = true;
}
static void close_layer(w_t *w) {
    w->quoted = false;
    put(w, "\"", 1);
}

/* ,"channel":C */
static void put_channel(w_t *w, const char *channel, size_t len) {
    put_z(w, ",\"channel\":");
    put_str(w, channel, len);
}

/* What a frame's JSON is made of: one function called twice (measure, write). */
typedef void (*write_fn)(w_t *w, const void *args);

static sy_refbuf_t *build(write_fn fn, const void *args, bool compressible) {
    w_t w = {0};
    fn(&w, args);
    size_t len = w.o;
    uint8_t hdr[10];
    size_t hlen = sy_ws_frame_header(hdr, 1, SY_WS_OP_TEXT, len);
    sy_refbuf_t *m = sy_refbuf_alloc(hlen, len, compressible ? SY_REFBUF_Z_TODO : SY_REFBUF_Z_NONE);
    if (m == NULL)
        return NULL;
    memcpy(m->data, hdr, hlen);
    w = (w_t){.p = m->data + hlen};
    fn(&w, args);
    return m;
}

/* The arguments every builder may use. */
typedef struct args {
    const char *event, *channel, *s, *s2, *type;
    size_t event_len, channel_len, s_len, s2_len;
    uint64_t num;
    const sy_pusher_member_t *members;
    size_t n;
    sy_pusher_data_t how;
} args_t;

static void w_established(w_t *w, const void *p) {
    const args_t *a = p;
    put_z(w, "{\"event\":\"pusher:connection_established\",\"data\":");
    open_layer(w);
    put_z(w, "{\"socket_id\":");
    put_str(w, a->s, a->s_len);
    put_z(w, ",\"activity_timeout\":");
    put_u64(w, a->num);
    put_z(w, "}");
    close_layer(w);
    put_z(w, "}");
}

sy_refbuf_t *sy_pusher_established_frame(const char *socket_id, size_t len, unsigned activity_timeout) {
    args_t a = {.s = socket_id, .s_len = len, .num = activity_timeout};
    return build(w_established, &a, false);
}

static void w_fixed(w_t *w, const void *p) { put_z(w, ((const args_t *)p)->s); }

sy_refbuf_t *sy_pusher_pong_frame(void) {
    args_t a = {.s = "{\"event\":\"pusher:pong\",\"data\":{}}"};
    return build(w_fixed, &a, false);
}

sy_refbuf_t *sy_pusher_ping_frame(void) {
    args_t a = {.s = "{\"event\":\"pusher:ping\",\"data\":{}}"};
    return build(w_fixed, &a, false);
}

static void w_error(w_t *w, const void *p) {
    const args_t *a = p;
    put_z(w, "{\"event\":\"pusher:error\",\"data\":{\"code\":");
    if (a->num == 0)
        put_z(w, "null");
    else
        put_u64(w, a->num);
    put_z(w, ",\"message\":");
    put_str(w, a->s, a->s_len);
    put_z(w, "}}");
}

sy_refbuf_t *sy_pusher_error_frame(unsigned code, const char *message, size_t len) {
    args_t a = {.s = message, .s_len = len, .num = code};
    return build(w_error, &a, false);
}

static void w_sub_error(w_t *w, const void *p) {
    const args_t *a = p;
    put_z(w, "{\"event\":\"pusher:subscription_error\"");
    put_channel(w, a->channel, a->channel_len);
    put_z(w, ",\"data\":{\"type\":");
    put_str(w, a->type, strlen(a->type));
    put_z(w, ",\"error\":");
    put_str(w, a->s, a->s_len);
    put_z(w, ",\"status\":");
    put_u64(w, a->num);
    put_z(w, "}}");
}

sy_refbuf_t *sy_pusher_subscription_error_frame(const char *channel, size_t channel_len, const char *type,
                                                const char *error, size_t error_len, unsigned status) {
    args_t a = {
        .channel = channel, .channel_len = channel_len, .type = type, .s = error, .s_len = error_len, .num = status};
    return build(w_sub_error, &a, false);
}

sy_refbuf_t *sy_pusher_err_frame(sy_pusher_err_t e, const char *channel, size_t channel_len) {
    const err_info_t *i = err_info(e);
    if (i->scope == SY_PUSHER_TO_CHANNEL && channel != NULL)
        return sy_pusher_subscription_error_frame(channel, channel_len, i->type, i->message, strlen(i->message),
                                                  i->code);
    unsigned code = i->scope == SY_PUSHER_TO_CHANNEL ? 4200 : i->code;
    return sy_pusher_error_frame(code, i->message, strlen(i->message));
}

/* {"event":E,"channel":C,"data":<layer: inner>} with inner written by fn. */
static void w_internal(w_t *w, const args_t *a, void (*inner)(w_t *w, const args_t *a)) {
    put_z(w, "{\"event\":");
    put_str(w, a->event, a->event_len);
    put_channel(w, a->channel, a->channel_len);
    put_z(w, ",\"data\":");
    open_layer(w);
    inner(w, a);
    close_layer(w);
    put_z(w, "}");
}

static void in_empty(w_t *w, const args_t *a) {
    (void)a;
    put_z(w, "{}");
}

static void w_subscribed(w_t *w, const void *p) { w_internal(w, p, in_empty); }

#define EV(lit) .event = lit, .event_len = sizeof(lit) - 1

sy_refbuf_t *sy_pusher_subscribed_frame(const char *channel, size_t len) {
    args_t a = {EV("pusher_internal:subscription_succeeded"), .channel = channel, .channel_len = len};
    return build(w_subscribed, &a, false);
}

static void put_info(w_t *w, const sy_pusher_member_t *m) {
    if (m->info != NULL)
        put(w, m->info, m->info_len);
    else
        put_z(w, "null");
}

static void in_presence(w_t *w, const args_t *a) {
    put_z(w, "{\"presence\":{\"ids\":[");
    for (size_t i = 0; i < a->n; i++) {
        if (i > 0)
            put_z(w, ",");
        put_str(w, a->members[i].id, a->members[i].id_len);
    }
    put_z(w, "],\"hash\":{");
    for (size_t i = 0; i < a->n; i++) {
        if (i > 0)
            put_z(w, ",");
        put_str(w, a->members[i].id, a->members[i].id_len);
        put_z(w, ":");
        put_info(w, &a->members[i]);
    }
    put_z(w, "},\"count\":");
    put_u64(w, a->n);
    put_z(w, "}}");
}

static void w_presence(w_t *w, const void *p) { w_internal(w, p, in_presence); }

sy_refbuf_t *sy_pusher_presence_subscribed_frame(const char *channel, size_t len, const sy_pusher_member_t *m,
                                                 size_t n) {
    args_t a = {EV("pusher_internal:subscription_succeeded"), .channel = channel, .channel_len = len, .members = m,
                .n = n};
    return build(w_presence, &a, false);
}

static void in_member(w_t *w, const args_t *a) {
    put_z(w, "{\"user_id\":");
    put_str(w, a->members->id, a->members->id_len);
    if (a->n > 0) { /* added: with its info */
        put_z(w, ",\"user_info\":");
        put_info(w, a->members);
    }
    put_z(w, "}");
}

static void w_member(w_t *w, const void *p) { w_internal(w, p, in_member); }

sy_refbuf_t *sy_pusher_member_added_frame(const char *channel, size_t len, const sy_pusher_member_t *m) {
    args_t a = {EV("pusher_internal:member_added"), .channel = channel, .channel_len = len, .members = m, .n = 1};
    return build(w_member, &a, false);
}

sy_refbuf_t *sy_pusher_member_removed_frame(const char *channel, size_t len, const char *id, size_t id_len) {
    sy_pusher_member_t m = {.id = id, .id_len = id_len};
    args_t a = {EV("pusher_internal:member_removed"), .channel = channel, .channel_len = len, .members = &m, .n = 0};
    return build(w_member, &a, false);
}

static void in_count(w_t *w, const args_t *a) {
    put_z(w, "{\"subscription_count\":");
    put_u64(w, a->num);
    put_z(w, "}");
}

static void w_count(w_t *w, const void *p) { w_internal(w, p, in_count); }

sy_refbuf_t *sy_pusher_subscription_count_frame(const char *channel, size_t len, uint64_t count) {
    args_t a = {EV("pusher_internal:subscription_count"), .channel = channel, .channel_len = len, .num = count};
    return build(w_count, &a, false);
}

static void w_cache_miss(w_t *w, const void *p) {
    const args_t *a = p;
    put_z(w, "{\"event\":\"pusher:cache_miss\"");
    put_channel(w, a->channel, a->channel_len);
    put_z(w, "}");
}

sy_refbuf_t *sy_pusher_cache_miss_frame(const char *channel, size_t len) {
    args_t a = {.channel = channel, .channel_len = len};
    return build(w_cache_miss, &a, false);
}

static void w_signin(w_t *w, const void *p) {
    const args_t *a = p;
    put_z(w, "{\"event\":\"pusher:signin_success\",\"data\":{\"user_data\":");
    put_str(w, a->s, a->s_len);
    put_z(w, "}}");
}

sy_refbuf_t *sy_pusher_signin_success_frame(const char *user_data, size_t len) {
    args_t a = {.s = user_data, .s_len = len};
    return build(w_signin, &a, false);
}

static void w_event(w_t *w, const void *p) {
    const args_t *a = p;
    put_z(w, "{\"event\":");
    put_str(w, a->event, a->event_len);
    put_channel(w, a->channel, a->channel_len);
    put_z(w, ",\"data\":");
    if (a->how == SY_PUSHER_DATA_JSON)
        put(w, a->s, a->s_len);
    else
        put_str(w, a->s, a->s_len);
    if (a->s2 != NULL) {
        put_z(w, ",\"user_id\":");
        put_str(w, a->s2, a->s2_len);
    }
    put_z(w, "}");
}

sy_refbuf_t *sy_pusher_event_frame(const char *event, size_t event_len, const char *channel, size_t channel_len,
                                   const void *data, size_t data_len, sy_pusher_data_t how, const char *user_id,
                                   size_t user_id_len, bool compressible) {
    args_t a = {.event = event,
                .event_len = event_len,
                .channel = channel,
                .channel_len = channel_len,
                .s = data,
                .s_len = data_len,
                .how = how,
                .s2 = user_id,
                .s2_len = user_id_len};
    return build(w_event, &a, compressible);
}

size_t sy_pusher_meta_join(char *buf, size_t cap, const char *ev, size_t ev_len, const char *id, size_t id_len) {
    if (ev_len >= cap || id_len > cap - ev_len - 1)
        return 0;
    memcpy(buf, ev, ev_len);
    buf[ev_len] = 0;
    memcpy(buf + ev_len + 1, id, id_len);
    return ev_len + 1 + id_len;
}

void sy_pusher_meta_split(const char *meta, size_t len, size_t *ev_len, const char **id, size_t *id_len) {
    const char *z = len > 0 ? memchr(meta, 0, len) : NULL;
    *ev_len = z != NULL ? (size_t)(z - meta) : len;
    *id = z != NULL ? z + 1 : NULL;
    *id_len = z != NULL ? len - *ev_len - 1 : 0;
}
