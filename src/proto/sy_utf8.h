/*
 * sy_utf8 — incremental UTF-8 validator for WebSocket text messages and close
 * reasons (RFC 6455 section 8.1), following the well-formed byte sequences
 * of Unicode table 3-7: no overlong forms, no surrogates (U+D800..U+DFFF),
 * nothing above U+10FFFF, no stray continuation bytes, no C0, C1, F5..FF.
 *
 * The state is a small integer the caller keeps between calls, so a message
 * may be validated piece by piece as its fragments and reads arrive, split
 * at any byte, even in the middle of a character:
 *
 *     uint32_t st = SY_UTF8_ACCEPT;
 *     st = sy_utf8_validate(st, part1, len1);
 *     st = sy_utf8_validate(st, part2, len2);
 *     ... at the end of the message: valid iff st == SY_UTF8_ACCEPT.
 *
 * After any call, st == SY_UTF8_REJECT means no continuation can make the
 * bytes seen so far valid: fail the connection now (1007) rather than at
 * the end of the message. REJECT is sticky. Any other value means "valid so
 * far"; ACCEPT additionally means "ends on a character boundary". Values
 * other than these two constants are internal: do not interpret them.
 *
 * ASCII runs are checked 8 bytes at a time.
 *
 * Threads: pure functions, callable from any thread. Nothing allocates.
 *
 * Ownership: nothing is kept; the state is the caller's integer.
 *
 * Errors: invalid input is the answer, not a failure: SY_UTF8_REJECT from
 * sy_utf8_validate, false from sy_utf8_is_valid (a question).
 */
#ifndef SY_UTF8_H
#define SY_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SY_UTF8_ACCEPT 0u
#define SY_UTF8_REJECT 1u

/* Advances the validator over s[0..len) starting from state (SY_UTF8_ACCEPT
 * at the start of a message) and returns the new state. s may be NULL when
 * len is 0. A state value that did not come from this function is treated
 * as SY_UTF8_REJECT. Stops reading at the first byte that makes the input
 * invalid. */
uint32_t sy_utf8_validate(uint32_t state, const uint8_t *s, size_t len);

/* One-shot: 1 if s[0..len) is complete, valid UTF-8, else 0. */
bool sy_utf8_is_valid(const uint8_t *s, size_t len);

#endif
