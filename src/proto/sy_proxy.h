/*
 * sy_proxy — the PROXY protocol header a load balancer puts before a
 * client's bytes (HAProxy's specification, versions 1 and 2: AWS NLB,
 * HAProxy `send-proxy`/`send-proxy-v2`, nginx `proxy_protocol on`), so that
 * the server learns the client's address instead of the proxy's.
 *
 *  - v1: one text line, "PROXY" SP ("TCP4" | "TCP6") SP src SP dst SP sport
 *    SP dport CRLF, or "PROXY UNKNOWN" followed by anything up to CRLF; at
 *    most SY_PROXY_V1_MAX (107) bytes with the CRLF. Single spaces;
 *    addresses in their usual text forms (IPv4 dotted quad, IPv6 as
 *    inet_pton reads it), of the protocol's family; ports 0..65535 in
 *    decimal without leading zeros.
 *  - v2: the 12-byte signature, a version/command byte (version 2; command
 *    LOCAL or PROXY), a family/transport byte, a 16-bit big-endian length
 *    of what follows: the addresses of the family (IPv4 12 bytes, IPv6 36,
 *    UNIX 216), then TLVs (type, 16-bit length, value), each checked to
 *    lie inside the header and skipped (the caller may walk them itself:
 *    tlv_off, tlv_len). LOCAL (a proxy's own health check) and the
 *    UNSPEC family or transport carry no client: `keep` is set, meaning
 *    "use the socket's own address"; so do UNIX addresses. A DGRAM
 *    transport is refused (this is a stream listener).
 *
 * picohttpparser's shape, as sy_http: stateless and non-allocating; the
 * caller passes every byte received so far and calls again with more after
 * a PARTIAL (the parse restarts from the start; a header is small). A
 * PARTIAL answer means every byte given belongs to the header (none of
 * them can be the first byte after it), so a caller may consume them; a
 * complete answer says exactly how many bytes the header took, and the
 * bytes after it (the HTTP request, a TLS ClientHello) are never looked at.
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept; *out is the caller's; the error texts are
 * static.
 *
 * Errors: sy_proxy_parse returns a long (base/sy_errors.h rule 5): the
 * header's length, SY_PROXY_PARTIAL, or a negative SY_PROXY_E_*, each with
 * a text (sy_proxy_error_str). Errors are reported as soon as the bytes
 * that make them are present.
 */
#ifndef SY_PROXY_H
#define SY_PROXY_H

#include <stddef.h>
#include <stdint.h>

#define SY_PROXY_PARTIAL 0
/* The errors: name, value, the text sy_proxy_error_str gives, and when
 * (one list for the values and the texts). */
#define SY_PROXY_ERRORS_LIST(X)                                                                                      \
    X(SY_PROXY_E_NOT_PROXY, -1, "not a PROXY protocol header")           /* neither "PROXY " nor the v2 signature */ \
    X(SY_PROXY_E_V1_TOO_LONG, -2, "PROXY v1 line longer than 107 bytes") /* no CRLF within 107 bytes */              \
    X(SY_PROXY_E_V1_SYNTAX, -3, "malformed PROXY v1 line")               /* spaces, fields, bare CR or LF */         \
    X(SY_PROXY_E_V1_PROTO, -4, "PROXY v1 protocol not TCP4, TCP6 or UNKNOWN")                                        \
    X(SY_PROXY_E_V1_ADDRESS, -5, "PROXY v1 address invalid for its protocol")                                        \
    X(SY_PROXY_E_V1_PORT, -6, "PROXY v1 port invalid") /* not 0..65535 in decimal */                                 \
    X(SY_PROXY_E_V2_VERSION, -7, "PROXY v2 version not 2")                                                           \
    X(SY_PROXY_E_V2_COMMAND, -8, "PROXY v2 command not LOCAL or PROXY")                                              \
    X(SY_PROXY_E_V2_FAMILY, -9, "PROXY v2 family or transport unknown or not a stream") /* or DGRAM */               \
    X(SY_PROXY_E_V2_LENGTH, -10, "PROXY v2 length shorter than its addresses")                                       \
    X(SY_PROXY_E_V2_TLV, -11, "PROXY v2 TLV runs past the header")                                                   \
    X(SY_PROXY_E_TOO_LARGE, -12, "PROXY v2 header too large") /* longer than the caller allows */

enum {
#define SY_PROXY_E_ENUM_(e, v, text) e = (v),
    SY_PROXY_ERRORS_LIST(SY_PROXY_E_ENUM_)
#undef SY_PROXY_E_ENUM_
};

#define SY_PROXY_V1_MAX 107                    /* the longest v1 line, CRLF included */
#define SY_PROXY_V2_FIXED 16                   /* signature, version/command, family, length */
#define SY_PROXY_V2_MAX (16 + 65535)           /* the longest v2 header the format can say */
#define SY_PROXY_V2_SIG "\r\n\r\n\0\r\nQUIT\n" /* 12 bytes (the literal's NUL is part of it) */
#define SY_PROXY_V2_SIG_LEN 12

typedef enum { SY_PROXY_FAM_NONE = 0, SY_PROXY_FAM_INET4 = 4, SY_PROXY_FAM_INET6 = 6 } sy_proxy_family_t;

typedef struct sy_proxy {
    uint8_t version;             /* 1 or 2 */
    uint8_t keep;                /* 1: no client address (v1 UNKNOWN, v2 LOCAL, UNSPEC, UNIX): keep the socket's */
    uint8_t family;              /* sy_proxy_family_t; NONE when keep */
    uint8_t src[16], dst[16];    /* network order; IPv4 in the first 4 bytes, the rest 0 */
    uint16_t src_port, dst_port; /* host order */
    size_t tlv_off, tlv_len;     /* v2: the TLVs' bytes in the caller's buffer (checked); 0, 0 otherwise */
} sy_proxy_t;

/* Parses the PROXY header at buf[0..len). max_len bounds a v2 header's
 * whole length (16 + its length field); 0 means SY_PROXY_V2_MAX (v1 is
 * always bounded by SY_PROXY_V1_MAX). Returns:
 *  > 0  the header is complete and valid: its length in bytes; *out filled.
 *  SY_PROXY_PARTIAL (0): a valid beginning of a header; every byte of buf
 *       is part of it. Read more and call again with the whole buffer.
 *  < 0  an SY_PROXY_E_* error (SY_PROXY_E_NOT_PROXY: not a PROXY header at
 *       all, from its first byte that differs from both starts).
 * *out is written only on success. Never reads buf past len. */
long sy_proxy_parse(const uint8_t *buf, size_t len, size_t max_len, sy_proxy_t *out);

/* A short, static, one-line description of an SY_PROXY_E_* value
 * ("unknown error" for any other). */
const char *sy_proxy_error_str(long err);

#endif
