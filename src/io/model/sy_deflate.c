/* sy_deflate — see sy_deflate.h. */
#define _GNU_SOURCE
#include "io/model/sy_deflate.h"

#include <errno.h>
#include <libdeflate.h>
#include <string.h>

#include "base/sy_alloc.h"
#include "base/sy_clock.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"

/* 00 00 ff ff (RFC 7692 7.2.2), then an empty final block with fixed
 * codes (BFINAL=1, BTYPE=01, end of block), so that libdeflate, which
 * wants a final block, ends where the message ends. */
static const uint8_t inflate_tail[SY_INFLATE_TAIL] = {0x00, 0x00, 0xff, 0xff, 0x03, 0x00};

sy_err_t sy_deflate_once_init(sy_deflate_once_t *o) {
    int rc = sy_mutex_init(&o->lock);
    if (rc != 0)
        return rc;
    rc = sy_cond_init(&o->done);
    if (rc != 0)
        sy_mutex_destroy(&o->lock);
    return rc;
}

void sy_deflate_once_destroy(sy_deflate_once_t *o) {
    sy_cond_destroy(&o->done);
    sy_mutex_destroy(&o->lock);
}

void sy_deflate_init(sy_deflate_t *z, int level, sy_stats_live_t *stats) {
    memset(z, 0, sizeof(*z));
    z->level = level < SY_DEFLATE_LEVEL_MIN   ? SY_DEFLATE_LEVEL_MIN
               : level > SY_DEFLATE_LEVEL_MAX ? SY_DEFLATE_LEVEL_MAX
                                              : level;
    z->stats = stats;
}

static void free_comp(sy_deflate_t *z) {
    libdeflate_free_compressor(z->comp);
    z->comp = NULL;
}

static void free_decomp(sy_deflate_t *z) {
    libdeflate_free_decompressor(z->decomp);
    z->decomp = NULL;
}

static void free_scratch(sy_deflate_t *z) {
    sy_free(z->scratch);
    z->scratch = NULL;
    z->scratch_cap = 0;
}

void sy_deflate_free(sy_deflate_t *z) {
    free_comp(z);
    free_decomp(z);
    free_scratch(z);
}

void sy_deflate_trim(sy_deflate_t *z, int64_t now_ms) {
    if (z->comp != NULL && now_ms - z->comp_used_ms >= SY_DEFLATE_IDLE_MS)
        free_comp(z);
    if (z->decomp != NULL && now_ms - z->decomp_used_ms >= SY_DEFLATE_IDLE_MS)
        free_decomp(z);
}

void sy_deflate_done(sy_deflate_t *z) {
    if (z->scratch_cap > SY_DEFLATE_KEEP_SCRATCH)
        free_scratch(z);
}

/* libdeflate allocates through these: the thread's arena, counted. */
static const struct libdeflate_options alloc_options = {
    .sizeof_options = sizeof(struct libdeflate_options),
    .malloc_func = sy_malloc,
    .free_func = sy_free,
};

void *sy_deflate_probe_new(void) { return libdeflate_alloc_decompressor_ex(&alloc_options); }

void sy_deflate_probe_free(void *probe) { libdeflate_free_decompressor(probe); }

/* Room for n bytes in the scratch buffer (its old content is not kept). */
static int scratch_reserve(sy_deflate_t *z, size_t n) {
    if (z->scratch_cap >= n)
        return 0;
    free_scratch(z);
    size_t cap = n < 4096 ? 4096 : n;
    if ((z->scratch = sy_malloc(cap)) == NULL)
        return ENOMEM;
    z->scratch_cap = cap;
    return 0;
}

/* The compressed frame of m, or NULL (did not shrink, or no memory). */
static sy_refbuf_t *compress_frame(sy_deflate_t *z, const sy_refbuf_t *m, int64_t now_ms) {
    const uint8_t *in = sy_refbuf_payload(m);
    size_t n = sy_refbuf_payload_len(m);
    if (n < 2)
        return NULL;
    if (z->comp == NULL && (z->comp = libdeflate_alloc_compressor_ex(z->level, &alloc_options)) == NULL)
        return NULL;
    z->comp_used_ms = now_ms;
    /* At most n - 2 bytes of DEFLATE, so that with the 0x00 it is smaller. */
    if (scratch_reserve(z, n - 1) != 0)
        return NULL;
    int64_t t0 = sy_clock_us();
    size_t c = libdeflate_deflate_compress(z->comp, in, n, z->scratch, n - 2);
    sy_refbuf_t *twin = NULL;
    if (c > 0) {
        z->scratch[c] = 0x00;
        twin = sy_ws_msg_rsv1(m->data[0] & 0x0fu, z->scratch, c + 1);
    }
    if (z->stats != NULL) {
        sy_stat_inc(&z->stats->compressed);
        sy_stat_add(&z->stats->compress_bytes_in, n);
        sy_stat_add(&z->stats->compress_bytes_out, c > 0 ? c + 1 : n);
        sy_stat_add(&z->stats->compress_us, (uint64_t)(sy_clock_us() - t0));
    }
    sy_deflate_done(z);
    return twin;
}

sy_refbuf_t *sy_deflate_twin(sy_deflate_t *z, sy_deflate_once_t *once, sy_refbuf_t *m, int64_t now_ms) {
    unsigned char st = atomic_load_explicit(&m->deflate, memory_order_acquire);
    if (st == SY_REFBUF_Z_DONE)
        return m->twin;
    if (st == SY_REFBUF_Z_NONE)
        return NULL;
    unsigned char todo = SY_REFBUF_Z_TODO;
    if (atomic_compare_exchange_strong_explicit(&m->deflate, &todo, SY_REFBUF_Z_BUSY, memory_order_acq_rel,
                                                memory_order_acquire)) {
        sy_refbuf_t *twin = compress_frame(z, m, now_ms);
        sy_mutex_lock(&once->lock);
        m->twin = twin;
        atomic_store_explicit(&m->deflate, SY_REFBUF_Z_DONE, memory_order_release);
        sy_cond_broadcast(&once->done);
        sy_mutex_unlock(&once->lock);
        return twin;
    }
    /* Another thread is compressing it: wait (at most one compression). */
    sy_mutex_lock(&once->lock);
    while (atomic_load_explicit(&m->deflate, memory_order_acquire) != SY_REFBUF_Z_DONE)
        sy_cond_wait(&once->done, &once->lock);
    sy_mutex_unlock(&once->lock);
    return m->twin;
}

sy_err_t sy_inflate(sy_deflate_t *z, uint8_t *in, size_t n, size_t max, int64_t now_ms, const uint8_t **out,
                    size_t *out_len) {
    if (z->decomp == NULL && (z->decomp = libdeflate_alloc_decompressor_ex(&alloc_options)) == NULL)
        return ENOMEM;
    z->decomp_used_ms = now_ms;
    uint8_t saved[SY_INFLATE_TAIL];
    memcpy(saved, in + n, SY_INFLATE_TAIL);
    memcpy(in + n, inflate_tail, SY_INFLATE_TAIL);
    /* A first try sized for ordinary ratios, then maxPayload itself: the
     * memory follows the message's real size, a bomb gets max at most. */
    size_t guess = n > (SIZE_MAX - 4096) / 8 ? SIZE_MAX : 8 * n + 4096;
    if (guess < 16384)
        guess = 16384;
    size_t cap = guess < max ? guess : max;
    int rc = 0;
    for (;;) {
        if (scratch_reserve(z, cap == 0 ? 1 : cap) != 0) {
            rc = ENOMEM;
            break;
        }
        size_t in_used = 0, got = 0;
        enum libdeflate_result r =
            libdeflate_deflate_decompress_ex(z->decomp, in, n + SY_INFLATE_TAIL, z->scratch, cap, &in_used, &got);
        if (r == LIBDEFLATE_SUCCESS) {
            /* The stream must end inside what was appended (the client's
             * own bytes all used), or just before it after one 0x00 (the
             * BFINAL form, 7.2.3.4): anything else is data after a final
             * block, which no context could continue. */
            size_t rest = n + SY_INFLATE_TAIL - in_used;
            if (rest > SY_INFLATE_TAIL && !(rest == SY_INFLATE_TAIL + 1 && in[n - 1] == 0x00)) {
                rc = EBADMSG;
                break;
            }
            *out = z->scratch;
            *out_len = got;
            break;
        }
        if (r == LIBDEFLATE_INSUFFICIENT_SPACE && cap < max) {
            cap = max;
            continue;
        }
        rc = r == LIBDEFLATE_INSUFFICIENT_SPACE ? EMSGSIZE : EBADMSG;
        break;
    }
    memcpy(in + n, saved, SY_INFLATE_TAIL);
    if (rc != 0) {
        sy_deflate_done(z);
        return rc;
    }
    if (z->stats != NULL) {
        sy_stat_inc(&z->stats->inflated);
        sy_stat_add(&z->stats->inflate_bytes_in, n);
    }
    return 0;
}
