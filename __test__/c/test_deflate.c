/* sy_deflate: the wire forms RFC 7692 gives (7.2.3), a round trip of what
 * we compress through what we inflate, the maxPayload bound while
 * inflating (a bomb costs at most max of output, measured by the system
 * build's allocation peak), corrupt data and data after a final block,
 * the bytes after the message restored, the compressed twin made once
 * with two threads asking at the same time, and the idle trim. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "base/sy_alloc.h"
#include "check.h"
#include "io/model/sy_deflate.h"
#include "proto/sy_ws_frame.h"
#include "proto/sy_ws_msg.h"

/* Inflates a copy of in[0..n) (with room for the tail, and sentinels
 * after it that must come back unchanged). */
static int inflate_copy(sy_deflate_t *z, const uint8_t *in, size_t n, size_t max, uint8_t *out, size_t *out_len) {
    uint8_t *buf = malloc(n + SY_INFLATE_TAIL);
    memcpy(buf, in, n);
    memset(buf + n, 0xA5, SY_INFLATE_TAIL);
    const uint8_t *msg;
    size_t len = 0;
    int rc = sy_inflate(z, buf, n, max, 0, &msg, &len);
    for (size_t i = 0; i < SY_INFLATE_TAIL; i++)
        CHECK_EQU(buf[n + i], 0xA5);
    CHECK(memcmp(buf, in, n) == 0);
    if (rc == 0 && out != NULL) {
        memcpy(out, msg, len);
        *out_len = len;
    }
    sy_deflate_done(z);
    free(buf);
    return rc;
}

static void test_rfc_forms(void) {
    sy_deflate_t z;
    sy_deflate_init(&z, 6, NULL);
    static const struct {
        const char *what;
        uint8_t b[16];
        size_t n;
    } forms[] = {
        {"7.2.3.1 sync flush, 00 00 ff ff stripped", {0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}, 7},
        {"7.2.3.3 stored block", {0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00}, 11},
        {"7.2.3.4 BFINAL set, then 0x00", {0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00}, 8},
        {"BFINAL set, no 0x00", {0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}, 7},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        uint8_t out[64];
        size_t len = 0;
        int rc = inflate_copy(&z, forms[i].b, forms[i].n, 1024, out, &len);
        CHECK_EQ(rc, 0);
        CHECK(len == 5 && memcmp(out, "Hello", 5) == 0);
        if (rc != 0 || len != 5)
            fprintf(stderr, "  form: %s\n", forms[i].what);
    }
    /* Exactly max bytes fit; one byte less does not (1009). */
    uint8_t out[8];
    size_t len;
    CHECK_EQ(inflate_copy(&z, forms[0].b, forms[0].n, 5, out, &len), 0);
    CHECK_EQ(inflate_copy(&z, forms[0].b, forms[0].n, 4, out, &len), EMSGSIZE);
    sy_deflate_free(&z);
}

static void test_bad_data(void) {
    sy_deflate_t z;
    sy_deflate_init(&z, 6, NULL);
    static const struct {
        const char *what;
        uint8_t b[16];
        size_t n;
    } bad[] = {
        {"reserved block type 11", {0xff, 0xff, 0xff, 0xff}, 4},
        {"stored block LEN/NLEN mismatch", {0x00, 0x05, 0x00, 0x00, 0x00, 'H', 'e', 'l', 'l', 'o'}, 10},
        {"data after a final block",
         {0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00},
         14},
        {"a byte after the BFINAL form's 0x00", {0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00, 0x00}, 9},
        {"a match before the start (fixed codes: length 3, distance 1)", {0x03, 0x02, 0x00}, 3},
        {"a sync flush not stripped (7.2.1 says the sender strips it)",
         {0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00, 0x00, 0xff, 0xff},
         11},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = inflate_copy(&z, bad[i].b, bad[i].n, 1 << 20, NULL, NULL);
        CHECK_EQ(rc, EBADMSG);
        if (rc != EBADMSG)
            fprintf(stderr, "  bad data accepted or misreported (%d): %s\n", rc, bad[i].what);
    }
    /* Every prefix of a valid message either fails cleanly or, if it
     * decodes, still restores the bytes after it (inflate_copy checks). */
    static const uint8_t hello[] = {0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
    for (size_t n = 0; n < sizeof(hello); n++)
        (void)inflate_copy(&z, hello, n, 1024, NULL, NULL);
    sy_deflate_free(&z);
}

static size_t json_like(uint8_t *p, size_t n, uint32_t seed) {
    size_t i = 0;
    while (i < n) {
        int k = snprintf((char *)p + i, n - i, "{\"sym\":\"S%u\",\"px\":%u.%02u,\"qty\":%u},", seed % 97, seed % 1000,
                         seed % 100, seed % 5000);
        if (k <= 0 || (size_t)k >= n - i)
            break;
        i += (size_t)k;
        seed = seed * 1103515245u + 12345u;
    }
    while (i < n)
        p[i++] = ' ';
    return n;
}

/* What we send, inflated by what we receive with: equal, for sizes at the
 * frame header's length boundaries and larger. Random bytes do not shrink:
 * no twin (the plain frame goes). */
static void test_round_trip(void) {
    sy_deflate_t z;
    sy_stats_live_t st;
    sy_stats_live_init(&st);
    sy_deflate_init(&z, 6, &st);
    sy_deflate_once_t once;
    CHECK_EQ(sy_deflate_once_init(&once), 0);
    static const size_t sizes[] = {40, 125, 126, 200, 65535, 65536, 70000, 1 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        uint8_t *p = malloc(n), *back = malloc(n);
        json_like(p, n, (uint32_t)i + 1);
        sy_refbuf_t *m = sy_ws_msg_z(SY_WS_OP_TEXT, p, n, true);
        sy_refbuf_t *twin = sy_deflate_twin(&z, &once, m, 0);
        CHECK(twin != NULL);
        if (twin != NULL) {
            CHECK(sy_deflate_twin(&z, &once, m, 0) == twin); /* made once */
            sy_ws_frame_t f;
            long h = sy_ws_frame_parse(twin->data, twin->len, SY_WS_ROLE_CLIENT | SY_WS_ALLOW_RSV1, &f);
            CHECK_EQ(h, (long)twin->hlen);
            CHECK(f.fin == 1 && f.rsv == 4 && f.opcode == SY_WS_OP_TEXT);
            CHECK_EQU(f.payload_len, sy_refbuf_payload_len(twin));
            CHECK(sy_refbuf_payload_len(twin) < n);
            CHECK_EQU(twin->data[twin->len - 1], 0x00);
            size_t len = 0;
            CHECK_EQ(inflate_copy(&z, sy_refbuf_payload(twin), sy_refbuf_payload_len(twin), n, back, &len), 0);
            CHECK(len == n && memcmp(back, p, n) == 0);
        }
        sy_refbuf_release(m); /* and the twin with it (the sanitizers see a leak otherwise) */
        free(p);
        free(back);
    }
    CHECK_EQU(atomic_load(&st.compressed), sizeof(sizes) / sizeof(sizes[0]));
    CHECK_EQU(atomic_load(&st.inflated), sizeof(sizes) / sizeof(sizes[0]));

    /* Incompressible: no twin. Too small, or not compressible: none either. */
    uint8_t rnd[600];
    uint32_t s = 7;
    for (size_t i = 0; i < sizeof(rnd); i++) {
        s = s * 1664525u + 1013904223u;
        rnd[i] = (uint8_t)(s >> 24);
    }
    sy_refbuf_t *m = sy_ws_msg_z(SY_WS_OP_BINARY, rnd, sizeof(rnd), true);
    CHECK(sy_deflate_twin(&z, &once, m, 0) == NULL);
    CHECK_EQ(atomic_load(&m->deflate), SY_REFBUF_Z_DONE);
    sy_refbuf_release(m);
    m = sy_ws_msg_z(SY_WS_OP_TEXT, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 39, false);
    CHECK(sy_deflate_twin(&z, &once, m, 0) == NULL);
    sy_refbuf_release(m);
    sy_deflate_once_destroy(&once);
    sy_deflate_free(&z);
}

/* A bomb: 64 MiB of zeros in ~64 KB. With max 1 MiB it fails with EMSGSIZE
 * and the peak of what was allocated stays under max plus a constant
 * (the decompressor, ~12 KB); nothing is left allocated after. */
static void test_bomb(void) {
    size_t big = (size_t)64 << 20, max = (size_t)1 << 20;
    uint8_t *zeros = calloc(1, big);
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(12);
    size_t cap = libdeflate_deflate_compress_bound(c, big);
    uint8_t *bomb = malloc(cap);
    size_t n = libdeflate_deflate_compress(c, zeros, big, bomb, cap);
    libdeflate_free_compressor(c);
    free(zeros);
    CHECK(n > 0 && n < 128 * 1024);
    sy_deflate_t z;
    sy_deflate_init(&z, 6, NULL);
    sy_alloc_stats_t before, after;
    CHECK_EQ(sy_alloc_stats(&before), 0);
    (void)sy_alloc_test_peak();
    CHECK_EQ(inflate_copy(&z, bomb, n, max, NULL, NULL), EMSGSIZE);
    int64_t peak = sy_alloc_test_peak();
    if (peak >= 0) {
        printf("bomb: %zu B compressed -> > %zu B: peak %lld B over the %lld before (max %zu)\n", n, max,
               (long long)(peak - before.allocated), (long long)before.allocated, max);
        CHECK(peak - before.allocated <= (int64_t)(max + 64 * 1024));
    }
    sy_deflate_free(&z);
    CHECK_EQ(sy_alloc_stats(&after), 0);
    CHECK_EQ(after.allocated, before.allocated);
    free(bomb);
}

/* Two threads ask for one frame's twin at once: one compression, the same
 * twin for both. */
typedef struct {
    sy_deflate_t z;
    sy_deflate_once_t *once;
    sy_refbuf_t *m;
    sy_refbuf_t *got;
    atomic_int *go;
} asker_t;

/* The three askers start together (a spin barrier: macOS has no
 * pthread_barrier_t). */
static void *ask(void *arg) {
    asker_t *a = arg;
    atomic_fetch_add(a->go, 1);
    while (atomic_load(a->go) < 3)
        sched_yield();
    a->got = sy_deflate_twin(&a->z, a->once, a->m, 0);
    return NULL;
}

static void test_twin_once(void) {
    sy_deflate_once_t once;
    CHECK_EQ(sy_deflate_once_init(&once), 0);
    sy_stats_live_t st;
    sy_stats_live_init(&st);
    size_t n = 256 * 1024;
    uint8_t *p = malloc(n);
    json_like(p, n, 99);
    for (int round = 0; round < 20; round++) {
        sy_refbuf_t *m = sy_ws_msg_z(SY_WS_OP_TEXT, p, n, true);
        atomic_int go = 0;
        asker_t a[3];
        pthread_t t[3];
        for (int i = 0; i < 3; i++) {
            sy_deflate_init(&a[i].z, 6, &st);
            a[i].once = &once;
            a[i].m = m;
            a[i].go = &go;
            pthread_create(&t[i], NULL, ask, &a[i]);
        }
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
        CHECK(a[0].got != NULL && a[0].got == a[1].got && a[1].got == a[2].got);
        for (int i = 0; i < 3; i++)
            sy_deflate_free(&a[i].z);
        sy_refbuf_release(m);
    }
    CHECK_EQU(atomic_load(&st.compressed), 20);
    free(p);
    sy_deflate_once_destroy(&once);
}

/* The compressor and decompressor go after SY_DEFLATE_IDLE_MS unused. */
static void test_trim(void) {
    sy_deflate_t z;
    sy_deflate_init(&z, 6, NULL);
    sy_deflate_once_t once;
    CHECK_EQ(sy_deflate_once_init(&once), 0);
    uint8_t p[4096];
    json_like(p, sizeof(p), 5);
    sy_refbuf_t *m = sy_ws_msg_z(SY_WS_OP_TEXT, p, sizeof(p), true);
    sy_refbuf_t *twin = sy_deflate_twin(&z, &once, m, 1000);
    CHECK(twin != NULL && z.comp != NULL && z.decomp == NULL);
    sy_deflate_trim(&z, 1000 + SY_DEFLATE_IDLE_MS - 1);
    CHECK(z.comp != NULL);
    sy_deflate_trim(&z, 1000 + SY_DEFLATE_IDLE_MS);
    CHECK(z.comp == NULL);
    sy_refbuf_release(m);
    sy_deflate_once_destroy(&once);
    sy_deflate_free(&z);
}

int main(void) {
    test_rfc_forms();
    test_bad_data();
    test_round_trip();
    test_bomb();
    test_twin_once();
    test_trim();
    return check_report("test_deflate");
}
