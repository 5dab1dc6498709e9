/*
 * sy_bus_seq — one offset sequence per topic across nodes, kept in Redis
 * (docs/bus.md, "History across nodes"): what goes over the wire for a
 * topic with history, and each channel's receiving state.
 *
 * In Redis, beside the channel, a topic with history has two keys in the
 * channel's cluster slot (sy_bus_seq_keys): a hash `<base>:meta` with the
 * epoch (`e`, 16 hex digits) and the last offset (`o`), and a stream
 * `<base>:stream` of the last `size` messages, each with the ID
 * `<offset>-0` and one field `m` (the envelope and payload, as published).
 * One script (sy_bus_seq_publish_lua) gives the next offset, appends,
 * trims, sets both keys' expiry, and publishes on the channel, atomically
 * (it writes nothing before the append has succeeded); when the hash is
 * missing (never used, expired, or Redis lost it), or the stream is ahead
 * of it (the keys disagree), it starts a new epoch (the publisher's random
 * candidate) on a new stream; offsets go on from the hash's. The
 * channel message is the header "\xF6<epoch><offset>:" and the body.
 * Another script (SY_BUS_SEQ_SYNC) reads the hash and the stream after an
 * offset in one step: what a node fills a hole with.
 *
 * Receiving (sy_bus_seq_chan_t, one per channel, bus thread): a node
 * follows the last (epoch, offset) it delivered. A message that follows it
 * goes out at once; any other (a jump, a new epoch) and the channel's
 * (re)subscription start a sync, during which channel messages wait in
 * arrival order; the sync's entries go first, then the waiting messages
 * newer than them. So a node delivers each topic's offsets in order, once,
 * with the holes Redis' stream can fill filled.
 *
 * Threads: the scripts, keys and parsers are pure; a channel's state is
 * the bus thread's.
 *
 * Ownership: sy_bus_seq_keys allocates (sy_free); a channel owns its
 * waiting messages (sy_bus_seq_chan_clear frees them).
 *
 * Errors: sy_bus_seq_keys returns NULL when out of memory; the parsers
 * return false on anything malformed; sy_bus_seq_wait returns false when
 * out of memory or past max_bytes (the caller syncs again after).
 */
#ifndef SY_BUS_SEQ_H
#define SY_BUS_SEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sy_sha1.h"

struct redisReply;

/* The first byte of a channel message with a position (never valid UTF-8,
 * nor the plain envelope's 0xF5). */
#define SY_BUS_SEQ_MAGIC 0xF6u

/* KEYS[1] stream, KEYS[2] meta; ARGV[1] channel, ARGV[2] body, ARGV[3]
 * size, ARGV[4] expiry in ms (0: none), ARGV[5] a new epoch (16 hex
 * digits) for when the topic has none. Returns { epoch, offset }. */
extern const char sy_bus_seq_publish_lua[];
/* KEYS[1] stream, KEYS[2] meta; ARGV[1] after (an offset; 0: all), ARGV[2]
 * at most this many, ARGV[3] the epoch after is in (else all: the topic's
 * epoch changed). Returns { epoch or "", last offset, entries }. */
extern const char sy_bus_seq_sync_lua[];

/* KEYS[1] stream, KEYS[2] meta; ARGV[1] the epoch a node found repeated
 * offsets in, ARGV[2] a new one: when the topic is still in ARGV[1], it
 * moves to ARGV[2] (offsets go on) and the stream is dropped. Returns 1
 * when it did. */
extern const char sy_bus_seq_renew_lua[];

/* A script's SHA-1 in hex, as EVALSHA takes it. */
typedef struct sy_bus_script {
    const char *body;
    char sha[2 * SY_SHA1_DIGEST_LEN + 1];
} sy_bus_script_t;

void sy_bus_script_init(sy_bus_script_t *s, const char *body);

/* True when the keys beside channel[0..len) are named `{channel}:...`
 * (it has no hash tag and no '}'), false for `channel:...`: the one rule
 * for every key a topic has in Redis (its history's here, its presence's
 * in lib/presence.js through the binding's busKeyBase). */
bool sy_bus_seq_wrap(const char *channel, size_t len);
/* The stream's and the meta hash's names for channel[0..len), in its
 * cluster slot: `channel:stream` when the channel has a hash tag, else
 * `{channel}:stream` (a channel with a '}' and no hash tag gets the
 * former, which a Redis Cluster refuses: docs/bus.md). One allocation:
 * *stream then *meta (sy_free(*stream) frees both); NULL when out of
 * memory. */
char *sy_bus_seq_keys(const char *channel, size_t len, char **stream, size_t *stream_len, char **meta,
                      size_t *meta_len);

/* A channel message with a position: epoch, offset and the body after
 * the header. False when p is not one (or is malformed). */
bool sy_bus_seq_read(const uint8_t *p, size_t len, uint64_t *epoch, uint64_t *offset, const uint8_t **body,
                     size_t *body_len);
/* 16 hex digits (either case) to a non-zero epoch. */
bool sy_bus_seq_epoch(const char *s, size_t len, uint64_t *epoch);

/* A message waiting while its channel syncs. */
typedef struct sy_bus_seq_msg {
    struct sy_bus_seq_msg *next;
    uint64_t epoch, offset;
    size_t len;
    uint8_t body[];
} sy_bus_seq_msg_t;

/* What a channel with history knows (in sy_bus_chan_t). */
typedef struct sy_bus_seq_chan {
    uint64_t epoch, last; /* the last position delivered; epoch 0: none yet */
    bool history;         /* a topic with history: synced and followed */
    bool syncing;         /* a sync is on its way */
    bool again;           /* sync again when it answers (messages were lost meanwhile) */
    sy_bus_seq_msg_t *head, *tail;
    size_t bytes;
} sy_bus_seq_chan_t;

/* Keeps a copy of a message until the sync answers. */
bool sy_bus_seq_wait(sy_bus_seq_chan_t *c, uint64_t epoch, uint64_t offset, const uint8_t *body, size_t len,
                     size_t max_bytes);
/* Takes the waiting messages (oldest first; the caller frees each). */
sy_bus_seq_msg_t *sy_bus_seq_take(sy_bus_seq_chan_t *c);
/* Frees the waiting messages. */
void sy_bus_seq_chan_clear(sy_bus_seq_chan_t *c);

/* The sync script's answer: the epoch (0: Redis has none), the last
 * offset, and the entries array (walk it with sy_bus_seq_entry). */
bool sy_bus_seq_sync_reply(const struct redisReply *r, uint64_t *epoch, uint64_t *last,
                           const struct redisReply **entries);
/* Entry i of a stream's range: its offset and body. */
bool sy_bus_seq_entry(const struct redisReply *entries, size_t i, uint64_t *offset, const uint8_t **body, size_t *len);

#endif
