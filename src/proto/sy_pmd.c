/* sy_pmd — see sy_pmd.h. */
#include "proto/sy_pmd.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t len, pos;
} scan_t;

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

static void skip_ows(scan_t *sc) {
    while (sc->pos < sc->len && is_ows(sc->s[sc->pos]))
        sc->pos++;
}

static bool at(const scan_t *sc, char c) { return sc->pos < sc->len && sc->s[sc->pos] == c; }

/* A token at the cursor (RFC 9110 tchar*); false when there is none. */
static bool take_token(scan_t *sc, const char **tok, size_t *tok_len) {
    size_t start = sc->pos;
    while (sc->pos < sc->len && sy_http_is_token(sc->s + sc->pos, 1))
        sc->pos++;
    *tok = sc->s + start;
    *tok_len = sc->pos - start;
    return *tok_len > 0;
}

/* A quoted string at the cursor, its content unescaped into buf (at most
 * cap bytes); false when malformed or too long. */
static bool take_quoted(scan_t *sc, char *buf, size_t cap, size_t *out_len) {
    size_t n = 0;
    sc->pos++; /* the opening quote */
    while (sc->pos < sc->len) {
        char c = sc->s[sc->pos++];
        if (c == '"') {
            *out_len = n;
            return true;
        }
        if (c == '\\') {
            if (sc->pos >= sc->len)
                return false;
            c = sc->s[sc->pos++];
        }
        if (n == cap)
            return false;
        buf[n++] = c;
    }
    return false;
}

/* Skips the rest of the current offer (up to the next comma outside a
 * quoted string). */
static void skip_offer(scan_t *sc) {
    while (sc->pos < sc->len && sc->s[sc->pos] != ',') {
        if (sc->s[sc->pos] == '"') {
            char tmp[256];
            size_t n;
            if (!take_quoted(sc, tmp, sizeof(tmp), &n)) {
                /* An unterminated or huge quoted string: skip it by hand. */
                while (sc->pos < sc->len && sc->s[sc->pos] != '"')
                    sc->pos += sc->s[sc->pos] == '\\' ? 2 : 1;
                if (sc->pos < sc->len)
                    sc->pos++;
            }
        } else {
            sc->pos++;
        }
    }
}

/* A window size value "8".."15", exactly (no sign, no leading zero). */
static bool window_value(const char *v, size_t n, uint8_t *out) {
    if (n == 1 && v[0] >= '8' && v[0] <= '9') {
        *out = (uint8_t)(v[0] - '0');
        return true;
    }
    if (n == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5') {
        *out = (uint8_t)(10 + v[1] - '0');
        return true;
    }
    return false;
}

/* Parses one offer's parameters after its name; the cursor ends on the
 * comma or the end. True when the offer is acceptable. */
static bool parse_params(scan_t *sc, sy_pmd_t *out) {
    bool seen_snct = false, seen_cnct = false, seen_smwb = false, seen_cmwb = false;
    sy_pmd_t p = {.server_window_set = false, .server_window = SY_PMD_WINDOW_MAX};
    for (;;) {
        skip_ows(sc);
        if (sc->pos == sc->len || at(sc, ','))
            break;
        if (!at(sc, ';'))
            return false;
        sc->pos++;
        skip_ows(sc);
        const char *name;
        size_t name_len;
        if (!take_token(sc, &name, &name_len))
            return false;
        skip_ows(sc);
        char vbuf[16];
        const char *value = NULL;
        size_t value_len = 0;
        if (at(sc, '=')) {
            sc->pos++;
            skip_ows(sc);
            if (at(sc, '"')) {
                if (!take_quoted(sc, vbuf, sizeof(vbuf), &value_len))
                    return false;
                value = vbuf;
            } else if (!take_token(sc, &value, &value_len)) {
                return false;
            }
        }
        bool *seen;
        if (sy_http_case_eq(name, name_len, SY_HTTP_LIT("server_no_context_takeover"))) {
            seen = &seen_snct;
            if (value != NULL)
                return false;
        } else if (sy_http_case_eq(name, name_len, SY_HTTP_LIT("client_no_context_takeover"))) {
            seen = &seen_cnct;
            if (value != NULL)
                return false;
        } else if (sy_http_case_eq(name, name_len, SY_HTTP_LIT("server_max_window_bits"))) {
            seen = &seen_smwb;
            if (value == NULL || !window_value(value, value_len, &p.server_window))
                return false;
            p.server_window_set = true;
        } else if (sy_http_case_eq(name, name_len, SY_HTTP_LIT("client_max_window_bits"))) {
            seen = &seen_cmwb;
            uint8_t ignored;
            if (value != NULL && !window_value(value, value_len, &ignored))
                return false;
        } else {
            return false; /* an unknown parameter */
        }
        if (*seen)
            return false; /* RFC 7692 7: a parameter twice declines the offer */
        *seen = true;
    }
    *out = p;
    return true;
}

bool sy_pmd_negotiate_value(const char *value, size_t len, sy_pmd_t *out, unsigned *scanned) {
    scan_t sc = {.s = value, .len = len, .pos = 0};
    unsigned n = 0;
    while (sc.pos < sc.len) {
        skip_ows(&sc);
        if (at(&sc, ',')) { /* an empty list element */
            sc.pos++;
            continue;
        }
        if (sc.pos == sc.len)
            break;
        n++;
        const char *name;
        size_t name_len;
        bool ok = false;
        size_t start = sc.pos;
        if (take_token(&sc, &name, &name_len) && sy_http_case_eq(name, name_len, SY_HTTP_LIT("permessage-deflate"))) {
            ok = parse_params(&sc, out);
        }
        if (ok) {
            if (scanned)
                *scanned = n;
            return true;
        }
        if (sc.pos == start)
            sc.pos++; /* not even a token: step over the byte */
        skip_offer(&sc);
        if (at(&sc, ','))
            sc.pos++;
    }
    if (scanned)
        *scanned = n;
    return false;
}

bool sy_pmd_negotiate(const sy_http_request_t *req, sy_pmd_t *out) {
    const sy_http_header_t *h = NULL;
    while ((h = sy_http_find_header(req, SY_HTTP_LIT("sec-websocket-extensions"), h)) != NULL)
        if (sy_pmd_negotiate_value(h->value, h->value_len, out, NULL))
            return true;
    return false;
}

size_t sy_pmd_response(const sy_pmd_t *p, char *buf, size_t cap) {
    int n;
    if (p->server_window_set)
        n = snprintf(buf, cap,
                     "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                     "client_no_context_takeover; server_max_window_bits=%u\r\n",
                     (unsigned)p->server_window);
    else
        n = snprintf(buf, cap,
                     "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                     "client_no_context_takeover\r\n");
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}
