/*
 * sy_cidr — address ranges ("10.0.0.0/8", "2001:db8::/32", or one address)
 * and the question whether an address is in one of them: the sources a
 * listener accepts a PROXY protocol header from (proxyProtocolFrom). An
 * IPv4-mapped IPv6 address (::ffff:10.1.2.3, how a dual-stack socket shows
 * an IPv4 peer) is matched as the IPv4 address it maps.
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept; the ranges and addresses are the caller's.
 *
 * Errors: sy_cidr_parse returns 0 or EINVAL (not an address, a prefix
 * length out of range); the others are questions (bool).
 */
#ifndef SY_CIDR_H
#define SY_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

#define SY_CIDR_TEXT_MAX 50 /* the longest text sy_cidr_parse reads: an IPv6 address, '/', 3 digits */

typedef struct sy_cidr {
    uint8_t family; /* 4 or 6 (as sy_proxy_family_t) */
    uint8_t bits;   /* prefix length: 0..32 or 0..128 */
    uint8_t addr[16];
} sy_cidr_t;

/* Reads "address" or "address/bits" from s[0..len) (bits: decimal, no
 * leading zero, at most 32 or 128; an address alone is /32 or /128).
 * Bits of the address past the prefix are cleared ("10.1.2.3/8" is
 * 10.0.0.0/8, as Node's BlockList and Express read it). An IPv4-mapped
 * IPv6 range (::ffff:10.0.0.0/104) is kept as IPv4. */
sy_err_t sy_cidr_parse(const char *s, size_t len, sy_cidr_t *out);

/* True when addr (family 4: 4 bytes; 6: 16 bytes, network order) lies in
 * range r. */
bool sy_cidr_contains(const sy_cidr_t *r, unsigned family, const uint8_t *addr);

/* True when addr lies in one of the n ranges. */
bool sy_cidr_any(const sy_cidr_t *ranges, size_t n, unsigned family, const uint8_t *addr);

#endif
