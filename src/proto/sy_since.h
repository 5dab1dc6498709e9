/*
 * sy_since — the resume positions a client gives in its upgrade URL
 * (docs/protocol.md, "Saying where you were"): one `sy.since` query
 * parameter per topic, URL-encoded, `<epoch>:<offset>:<topic>` once
 * decoded (epoch: 16 hex digits; offset: a u64 in decimal; topic: 1 to
 * SY_SINCE_TOPIC_MAX bytes of UTF-8). A pure parser: no allocation; fuzzed
 * (__test__/fuzz/fuzz_since.c).
 *
 * Use: sy_since_check once over the request target (the upgrade refuses a
 * malformed one with 400 and the reason); then sy_since_next walks the
 * entries, or sy_since_find looks one topic up.
 *
 * Threads: pure functions, any thread.
 *
 * Ownership: the caller's buffers; out->topic points into the caller's
 * topic buffer (SY_SINCE_TOPIC_MAX bytes).
 *
 * Errors: sy_since_check returns NULL when the target's positions are
 * well formed, else a static sentence naming the problem. sy_since_next
 * returns false at the end (and on a malformed entry: check first).
 */
#ifndef SY_SINCE_H
#define SY_SINCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SY_SINCE_PARAM "sy.since"
#define SY_SINCE_TOPIC_MAX 1024 /* as a topic name (sy_server.h) */
#define SY_SINCE_MAX 1024       /* entries in one URL */
#define SY_SINCE_EPOCH_HEX 16

typedef struct sy_since {
    uint64_t epoch;
    uint64_t offset;
    const char *topic; /* in the caller's buffer */
    size_t topic_len;
} sy_since_t;

/* Walks target's query (after '?', up to '#'); *pos starts at 0. */
typedef struct sy_since_iter {
    size_t pos;
} sy_since_iter_t;

/* Reads an epoch: exactly SY_SINCE_EPOCH_HEX hexadecimal characters of
 * s[0..len) (either case). False when it is not one. */
bool sy_since_epoch(const char *s, size_t len, uint64_t *out);
/* NULL when every sy.since parameter of target[0..len) is well formed, no
 * topic is given twice and there are at most SY_SINCE_MAX; else why not. */
const char *sy_since_check(const char *target, size_t len);
/* The next position (its topic decoded into topic_buf, SY_SINCE_TOPIC_MAX
 * bytes). False at the end. */
bool sy_since_next(const char *target, size_t len, sy_since_iter_t *it, sy_since_t *out, char *topic_buf);
/* The position given for topic, if any (topic_buf as above). */
bool sy_since_find(const char *target, size_t len, const char *topic, size_t topic_len, sy_since_t *out,
                   char *topic_buf);

#endif
