/*
 * sy_deflate — permessage-deflate's compression and inflation (RFC 7692),
 * on libdeflate (deps/libdeflate.sh; why: bench/results/2026-11-30-deflate-choice).
 *
 * One sy_deflate_t per IO thread: a compressor (~650 KB at levels 2-9)
 * and a decompressor (~11 KB), each made on first use and given back after
 * SY_DEFLATE_IDLE_MS without use (sy_deflate_trim), so an idle server keeps
 * none; nothing per connection. Their memory comes from sy_alloc (the
 * thread's arena), through libdeflate's per-object allocator hooks.
 *
 * Compressing: every message on its own (no context takeover), whole, in
 * one call: libdeflate's output ends in a final block, to which one 0x00
 * byte is appended (RFC 7692 7.2.3.4: with BFINAL set, the sender appends
 * an empty stored block and strips 00 00 ff ff, which leaves one 0x00).
 * The compressed frame is kept only when it is smaller than the plain one.
 *
 * Inflating: a client message, whole, in one call into a buffer of at most
 * `max` bytes (maxPayload): libdeflate stops with "insufficient space"
 * before writing past it, so a compression bomb costs no more than max
 * bytes of output. The message gets 00 00 ff ff (RFC 7692 7.2.2) and an
 * empty final block (03 00) appended in place: the caller leaves
 * SY_INFLATE_TAIL writable bytes after it (they are restored after).
 *
 * Threads: an sy_deflate_t belongs to one thread. sy_deflate_twin is called
 * by several IO threads on the same frame: the first compresses, the
 * others wait on the server's sy_deflate_once_t (made and destroyed by the
 * owner, around the threads' lives). The probe: any thread.
 *
 * Ownership: the compressor, decompressor and scratch buffer are z's
 * (sy_deflate_free gives them back). sy_deflate_twin's result belongs to
 * m (m holds its one reference): the caller takes references on it as on
 * m. sy_inflate's output lives in z's scratch buffer until the next call
 * on z or sy_deflate_done; its input is the caller's, written and restored.
 * A probe is freed with sy_deflate_probe_free.
 *
 * Errors: sy_deflate_once_init and sy_inflate return 0 or an errno value
 * (sy_inflate: EMSGSIZE, EBADMSG, ENOMEM, as said below); sy_deflate_twin
 * and the probe return NULL (the plain frame goes; out of memory).
 */
#ifndef SY_DEFLATE_H
#define SY_DEFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "base/sy_refbuf.h"
#include "base/sy_thread.h"
#include "io/model/sy_stats.h"

#define SY_INFLATE_TAIL 6                   /* bytes appended in place by sy_inflate */
#define SY_DEFLATE_IDLE_MS 10000            /* compressor and decompressor kept this long unused */
#define SY_DEFLATE_KEEP_SCRATCH (64 * 1024) /* a larger scratch buffer is freed after each use */
#define SY_DEFLATE_LEVEL_MIN 1
#define SY_DEFLATE_LEVEL_MAX 9

struct libdeflate_compressor;
struct libdeflate_decompressor;

typedef struct sy_deflate {
    int level;
    struct libdeflate_compressor *comp;
    struct libdeflate_decompressor *decomp;
    int64_t comp_used_ms, decomp_used_ms;
    uint8_t *scratch; /* compression output / inflation output */
    size_t scratch_cap;
    sy_stats_live_t *stats; /* where compressed/inflated are counted (may be NULL) */
} sy_deflate_t;

/* Where the threads that need one frame's twin wait for the one making it. */
typedef struct sy_deflate_once {
    sy_mutex_t lock;
    sy_cond_t done;
} sy_deflate_once_t;

/* 0 or an errno value (base/sy_thread.h's). */
sy_err_t sy_deflate_once_init(sy_deflate_once_t *o);
void sy_deflate_once_destroy(sy_deflate_once_t *o);

/* level: 1..9. Allocates nothing yet. */
void sy_deflate_init(sy_deflate_t *z, int level, sy_stats_live_t *stats);
/* Frees what it holds (it can be used again after). */
void sy_deflate_free(sy_deflate_t *z);
/* Frees the compressor / decompressor unused for SY_DEFLATE_IDLE_MS. */
void sy_deflate_trim(sy_deflate_t *z, int64_t now_ms);

/* The compressed twin of frame m (made compressible, SY_REFBUF_Z_TODO) for
 * a subscriber that negotiated deflate: compressed by the first thread to
 * ask, waited for by the others. NULL when it did not shrink or memory ran
 * out (the plain frame goes then), or m is not compressible. The twin is
 * m's: the caller references it like m, and m must outlive the call. */
sy_refbuf_t *sy_deflate_twin(sy_deflate_t *z, sy_deflate_once_t *once, sy_refbuf_t *m, int64_t now_ms);

/* Inflates in[0..n), a compressed message as received; in[n..n +
 * SY_INFLATE_TAIL) must be writable (used, then restored). On 0, *out and
 * *out_len are the message, in z's scratch buffer: valid until the next
 * call on z or sy_deflate_done. Errors: EMSGSIZE (it inflates past max:
 * close 1009), EBADMSG (not valid DEFLATE data: 1007), ENOMEM. */
sy_err_t sy_inflate(sy_deflate_t *z, uint8_t *in, size_t n, size_t max, int64_t now_ms, const uint8_t **out,
                    size_t *out_len);

/* After a message from sy_inflate is used: gives back a large scratch buffer. */
void sy_deflate_done(sy_deflate_t *z);

/* The self-check's probe: a decompressor libdeflate allocates, as the IO
 * threads make theirs (allocator.selfCheck asks whose memory it is). NULL
 * when out of memory. */
void *sy_deflate_probe_new(void);
void sy_deflate_probe_free(void *probe);

#endif
