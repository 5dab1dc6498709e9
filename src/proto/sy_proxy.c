/* sy_proxy — see sy_proxy.h. */
#define _GNU_SOURCE
#include "proto/sy_proxy.h"

#include "base/sy_inet.h"

#include <stdbool.h>
#include <string.h>

#define V1_PREFIX "PROXY "
#define V1_PREFIX_LEN 6
#define V2_CMD_LOCAL 0x0
#define V2_CMD_PROXY 0x1
#define V2_FAM_UNSPEC 0x0
#define V2_FAM_INET 0x1
#define V2_FAM_INET6 0x2
#define V2_FAM_UNIX 0x3
#define V2_TP_UNSPEC 0x0
#define V2_TP_STREAM 0x1
#define V2_TP_DGRAM 0x2
#define V2_TLV_HEAD 3 /* type, 16-bit length */

/* True when buf[0..len) is a prefix of the n bytes of want (len < n) or
 * starts with all of them. */
static bool starts_like(const uint8_t *buf, size_t len, const char *want, size_t n) {
    return memcmp(buf, want, len < n ? len : n) == 0;
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)((unsigned)p[0] << 8 | p[1]); }

/* ---- v1 ----------------------------------------------------------------- */

/* A port: 1 to 5 decimal digits, no leading zero (but "0"), at most 65535. */
static bool v1_port(const uint8_t *s, size_t n, uint16_t *out) {
    if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535)
        return false;
    *out = (uint16_t)v;
    return true;
}

/* An address of family (AF_INET or AF_INET6) in its text form. */
static bool v1_addr(const uint8_t *s, size_t n, int family, uint8_t out[16]) {
    char text[INET6_ADDRSTRLEN];
    if (n == 0 || n >= sizeof(text))
        return false;
    memcpy(text, s, n);
    text[n] = '\0';
    memset(out, 0, 16);
    return inet_pton(family, text, out) == 1;
}

/* The line buf[0..line) (without its CRLF), known to start "PROXY ":
 * 0 and *p filled, or an SY_PROXY_E_*. */
static long v1_line(const uint8_t *buf, size_t line, sy_proxy_t *p) {
    /* Fields after "PROXY ", each ending at a single space or the line's end. */
    const uint8_t *f[5];
    size_t fl[5], nf = 0, i = V1_PREFIX_LEN;
    size_t start = i;
    for (;; i++) {
        if (i == line || buf[i] == ' ') {
            if (i == start)
                return SY_PROXY_E_V1_SYNTAX; /* an empty field: two spaces, or a space at the end */
            if (nf == 0 && i - start == 7 && memcmp(buf + start, "UNKNOWN", 7) == 0) {
                /* The rest of the line is the sender's business. */
                *p = (sy_proxy_t){.version = 1, .keep = 1};
                return 0;
            }
            if (nf == 5)
                return SY_PROXY_E_V1_SYNTAX; /* more than protocol, 2 addresses, 2 ports */
            f[nf] = buf + start;
            fl[nf++] = i - start;
            if (i == line)
                break;
            start = i + 1;
        }
    }
    int family;
    if (fl[0] == 4 && memcmp(f[0], "TCP4", 4) == 0)
        family = AF_INET;
    else if (fl[0] == 4 && memcmp(f[0], "TCP6", 4) == 0)
        family = AF_INET6;
    else
        return SY_PROXY_E_V1_PROTO;
    if (nf != 5)
        return SY_PROXY_E_V1_SYNTAX;
    sy_proxy_t r = {.version = 1, .family = family == AF_INET ? SY_PROXY_FAM_INET4 : SY_PROXY_FAM_INET6};
    if (!v1_addr(f[1], fl[1], family, r.src) || !v1_addr(f[2], fl[2], family, r.dst))
        return SY_PROXY_E_V1_ADDRESS;
    if (!v1_port(f[3], fl[3], &r.src_port) || !v1_port(f[4], fl[4], &r.dst_port))
        return SY_PROXY_E_V1_PORT;
    *p = r;
    return 0;
}

static long parse_v1(const uint8_t *buf, size_t len, sy_proxy_t *out) {
    if (len < V1_PREFIX_LEN)
        return SY_PROXY_PARTIAL;
    /* The CR must come at index SY_PROXY_V1_MAX - 2 at the latest. */
    size_t limit = len < SY_PROXY_V1_MAX - 1 ? len : SY_PROXY_V1_MAX - 1;
    for (size_t i = V1_PREFIX_LEN; i < limit; i++) {
        if (buf[i] == '\n')
            return SY_PROXY_E_V1_SYNTAX; /* a bare LF */
        if (buf[i] != '\r')
            continue;
        if (i + 1 == len)
            return SY_PROXY_PARTIAL;
        if (buf[i + 1] != '\n')
            return SY_PROXY_E_V1_SYNTAX; /* a bare CR */
        sy_proxy_t p;
        long rc = v1_line(buf, i, &p);
        if (rc < 0)
            return rc;
        *out = p;
        return (long)(i + 2);
    }
    return len >= SY_PROXY_V1_MAX - 1 ? SY_PROXY_E_V1_TOO_LONG : SY_PROXY_PARTIAL;
}

/* ---- v2 ----------------------------------------------------------------- */

/* Bytes of addresses a family carries. */
static size_t v2_addr_len(unsigned fam) {
    switch (fam) {
    case V2_FAM_INET:
        return 12;
    case V2_FAM_INET6:
        return 36;
    case V2_FAM_UNIX:
        return 216;
    default:
        return 0;
    }
}

static long parse_v2(const uint8_t *buf, size_t len, size_t max_len, sy_proxy_t *out) {
    if (len <= SY_PROXY_V2_SIG_LEN)
        return SY_PROXY_PARTIAL;
    unsigned ver = buf[12] >> 4, cmd = buf[12] & 0x0fu;
    if (ver != 2)
        return SY_PROXY_E_V2_VERSION;
    if (cmd != V2_CMD_LOCAL && cmd != V2_CMD_PROXY)
        return SY_PROXY_E_V2_COMMAND;
    if (len < 14)
        return SY_PROXY_PARTIAL;
    /* LOCAL: the family is ignored (the spec: discard the whole block). */
    unsigned fam = buf[13] >> 4, tp = buf[13] & 0x0fu;
    if (cmd == V2_CMD_PROXY && (fam > V2_FAM_UNIX || tp > V2_TP_DGRAM || (tp == V2_TP_DGRAM && fam != V2_FAM_UNSPEC)))
        return SY_PROXY_E_V2_FAMILY;
    if (len < SY_PROXY_V2_FIXED)
        return SY_PROXY_PARTIAL;
    size_t body = be16(buf + 14), total = SY_PROXY_V2_FIXED + body;
    if (total > max_len)
        return SY_PROXY_E_TOO_LARGE;
    size_t addrs = cmd == V2_CMD_PROXY ? v2_addr_len(fam) : 0;
    if (body < addrs)
        return SY_PROXY_E_V2_LENGTH;
    if (len < total)
        return SY_PROXY_PARTIAL;
    sy_proxy_t p = {.version = 2};
    if (cmd == V2_CMD_PROXY) {
        /* The TLVs: each inside the header, none cut short. */
        size_t off = SY_PROXY_V2_FIXED + addrs;
        for (size_t at = off; at < total;) {
            if (total - at < V2_TLV_HEAD || be16(buf + at + 1) > total - at - V2_TLV_HEAD)
                return SY_PROXY_E_V2_TLV;
            at += V2_TLV_HEAD + be16(buf + at + 1);
        }
        p.tlv_off = off;
        p.tlv_len = total - off;
    }
    const uint8_t *a = buf + SY_PROXY_V2_FIXED;
    if (cmd == V2_CMD_PROXY && tp == V2_TP_STREAM && fam == V2_FAM_INET) {
        p.family = SY_PROXY_FAM_INET4;
        memcpy(p.src, a, 4);
        memcpy(p.dst, a + 4, 4);
        p.src_port = be16(a + 8);
        p.dst_port = be16(a + 10);
    } else if (cmd == V2_CMD_PROXY && tp == V2_TP_STREAM && fam == V2_FAM_INET6) {
        p.family = SY_PROXY_FAM_INET6;
        memcpy(p.src, a, 16);
        memcpy(p.dst, a + 16, 16);
        p.src_port = be16(a + 32);
        p.dst_port = be16(a + 34);
    } else {
        p.keep = 1; /* LOCAL, UNSPEC, UNIX: no client address */
    }
    *out = p;
    return (long)total;
}

/* ---- both ----------------------------------------------------------------- */

long sy_proxy_parse(const uint8_t *buf, size_t len, size_t max_len, sy_proxy_t *out) {
    if (len == 0)
        return SY_PROXY_PARTIAL;
    if (max_len == 0 || max_len > SY_PROXY_V2_MAX)
        max_len = SY_PROXY_V2_MAX;
    if (buf[0] == 'P') {
        if (!starts_like(buf, len, V1_PREFIX, V1_PREFIX_LEN))
            return SY_PROXY_E_NOT_PROXY;
        return parse_v1(buf, len, out);
    }
    if (!starts_like(buf, len, SY_PROXY_V2_SIG, SY_PROXY_V2_SIG_LEN))
        return SY_PROXY_E_NOT_PROXY;
    return parse_v2(buf, len, max_len, out);
}

static const char *const ERROR_TEXT[] = {
#define SY_PROXY_E_TEXT_(e, v, text) [-(v)] = text,
    SY_PROXY_ERRORS_LIST(SY_PROXY_E_TEXT_)
#undef SY_PROXY_E_TEXT_
};

const char *sy_proxy_error_str(long err) {
    long n = (long)(sizeof(ERROR_TEXT) / sizeof(ERROR_TEXT[0]));
    return err < 0 && err > -n && ERROR_TEXT[-err] != NULL ? ERROR_TEXT[-err] : "unknown error";
}
