/*
 * deflate-measure: zlib 1.3.1 vs libdeflate 1.23 for permessage-deflate
 * with server_no_context_takeover (every message compressed on its own).
 *
 *   bench check     correctness / format checks, allocator checks (no timing)
 *   bench mem       memory tables (no timing)
 *   bench comp      compression timing + ratio
 *   bench decomp    decompression timing
 *   bench zgrid     zlib windowBits/memLevel speed+ratio
 *   bench bomb      bounded inflate of compression bombs
 *
 * Timing: CLOCK_THREAD_CPUTIME_ID around a loop over a set of distinct
 * messages, repeated REPS times, median reported.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <libdeflate.h>

#define REPS 5
static double g_min_sec = 0.25; /* minimum CPU time per repetition */

/* ------------------------------------------------------------------ */
/* counting allocators                                                 */

typedef struct { int64_t cur, peak, calls, frees; } acct_t;
static acct_t g_acct;
static void acct_reset(void) { memset(&g_acct, 0, sizeof g_acct); }

static void *cnt_malloc(size_t n) {
    size_t *p = malloc(n + 16);
    if (!p) return NULL;
    p[0] = n;
    g_acct.cur += (int64_t)n; g_acct.calls++;
    if (g_acct.cur > g_acct.peak) g_acct.peak = g_acct.cur;
    return (char *)p + 16;
}
static void cnt_free(void *q) {
    if (!q) return;
    size_t *p = (size_t *)((char *)q - 16);
    g_acct.cur -= (int64_t)p[0]; g_acct.frees++;
    free(p);
}
static voidpf z_cnt_alloc(voidpf opaque, uInt items, uInt size) {
    (void)opaque;
    if (size && items > SIZE_MAX / size) return Z_NULL;
    return cnt_malloc((size_t)items * size);
}
static void z_cnt_free(voidpf opaque, voidpf p) { (void)opaque; cnt_free(p); }

/* ------------------------------------------------------------------ */
/* payload generators                                                  */

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double urand(void) { return (rnd() >> 11) * (1.0 / 9007199254740992.0); }

static const char *syms[] = {"BTC-USD", "ETH-USD", "SOL-USD", "XRP-USD", "ADA-USD", "DOGE-USD",
                             "BTC-EUR", "ETH-EUR", "AVAX-USD", "LINK-USD"};
static const double base_px[] = {43123.51, 2281.45, 98.12, 0.6123, 0.5871, 0.09123,
                                 39880.10, 2104.77, 35.61, 14.92};
static uint64_t g_seq = 71234567890ull, g_tid = 512345678, g_usec = 0;

static void uuid(char *b) {
    static const char hx[] = "0123456789abcdef";
    int k = 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) { b[i] = '-'; continue; }
        b[i] = hx[(rnd() >> (k++ % 60)) & 15];
    }
    b[36] = 0;
}
static void ts(char *b) {
    g_usec += 1 + rnd() % 20000;
    uint64_t s = g_usec / 1000000, us = g_usec % 1000000;
    sprintf(b, "2026-11-30T%02u:%02u:%02u.%06uZ", (unsigned)(12 + s / 3600 % 12),
            (unsigned)(s / 60 % 60), (unsigned)(s % 60), (unsigned)us);
}

/* one ~600 B market-data trade message */
static int gen_trade(char *b) {
    int si = rnd() % 10;
    double px = base_px[si] * (1 + (urand() - 0.5) * 0.002);
    int dp = px < 1 ? 5 : 2;
    double sz = urand() * (si == 0 ? 0.5 : 20);
    char t[40], u1[40], u2[40];
    ts(t); uuid(u1); uuid(u2);
    double tick = px < 1 ? 0.00001 : 0.01;
    int n = sprintf(b,
        "{\"type\":\"trade\",\"symbol\":\"%s\",\"price\":\"%.*f\",\"size\":\"%.8f\","
        "\"side\":\"%s\",\"time\":\"%s\",\"trade_id\":%llu,\"sequence\":%llu,"
        "\"maker_order_id\":\"%s\",\"taker_order_id\":\"%s\","
        "\"venue\":{\"id\":\"XSYM\",\"region\":\"us-east-1\"},"
        "\"book\":{\"best_bid\":\"%.*f\",\"best_ask\":\"%.*f\",\"bid_size\":\"%.8f\",\"ask_size\":\"%.8f\","
        "\"depth\":[[\"%.*f\",\"%.4f\"],[\"%.*f\",\"%.4f\"],[\"%.*f\",\"%.4f\"]]},"
        "\"flags\":{\"liquidation\":%s,\"block\":false,\"odd_lot\":%s},"
        "\"fee\":{\"maker\":\"-0.0001\",\"taker\":\"0.0004\",\"currency\":\"%s\"}}",
        syms[si], dp, px, sz, (rnd() & 1) ? "buy" : "sell", t,
        (unsigned long long)(g_tid += 1 + rnd() % 5), (unsigned long long)(g_seq += 1 + rnd() % 40),
        u1, u2, dp, px - tick, dp, px + tick, urand() * 5, urand() * 5,
        dp, px - 2 * tick, urand() * 9, dp, px - 3 * tick, urand() * 9, dp, px - 4 * tick, urand() * 9,
        (rnd() % 50) ? "false" : "true", (rnd() & 1) ? "true" : "false",
        strstr(syms[si], "EUR") ? "EUR" : "USD");
    return n;
}
/* a 100-200 B ticker message */
static int gen_ticker(char *b) {
    int si = rnd() % 10;
    double px = base_px[si] * (1 + (urand() - 0.5) * 0.002);
    int dp = px < 1 ? 5 : 2;
    char t[40];
    ts(t);
    return sprintf(b, "{\"type\":\"ticker\",\"symbol\":\"%s\",\"price\":\"%.*f\",\"bid\":\"%.*f\",\"ask\":\"%.*f\","
                      "\"volume_24h\":\"%.3f\",\"time\":\"%s\",\"seq\":%llu}",
                   syms[si], dp, px, dp, px * 0.9999, dp, px * 1.0001, urand() * 1e6, t,
                   (unsigned long long)(g_seq += 1 + rnd() % 40));
}
/* JSON array of trades, as large as fits in target */
static int gen_array(char *b, size_t target) {
    char one[2048];
    size_t n = 0;
    b[n++] = '[';
    for (;;) {
        int k = gen_trade(one);
        if (n + (size_t)k + 2 > target) break;
        if (n > 1) b[n++] = ',';
        memcpy(b + n, one, k); n += k;
    }
    b[n++] = ']';
    return (int)n;
}

typedef struct {
    const char *name;
    int n;
    unsigned char **msg;
    size_t *len;
    size_t total, maxlen;
} set_t;

enum { K_TICK, K_TRADE, K_A4K, K_A64K, K_BIN600, K_BIN4K, K_A1M, NKIND };
static set_t sets[NKIND];

static void set_add(set_t *s, int i, const void *p, size_t n) {
    s->msg[i] = malloc(n + 16);
    memcpy(s->msg[i], p, n);
    s->len[i] = n;
    s->total += n;
    if (n > s->maxlen) s->maxlen = n;
}
static void make_sets(void) {
    static char buf[1 << 21];
    struct { const char *name; int n; } spec[NKIND] = {
        {"json-ticker-150B", 2000}, {"json-trade-600B", 2000}, {"json-array-4KiB", 400},
        {"json-array-64KiB", 32}, {"binary-600B", 2000}, {"binary-4KiB", 400}, {"json-array-1MiB", 3}};
    for (int k = 0; k < NKIND; k++) {
        set_t *s = &sets[k];
        s->name = spec[k].name; s->n = spec[k].n;
        s->msg = calloc(s->n, sizeof *s->msg);
        s->len = calloc(s->n, sizeof *s->len);
        for (int i = 0; i < s->n; i++) {
            size_t n = 0;
            switch (k) {
            case K_TICK: n = gen_ticker(buf); break;
            case K_TRADE: n = gen_trade(buf); break;
            case K_A4K: n = gen_array(buf, 4096); break;
            case K_A64K: n = gen_array(buf, 65536); break;
            case K_A1M: n = gen_array(buf, 1 << 20); break;
            case K_BIN600: case K_BIN4K:
                n = k == K_BIN600 ? 600 : 4096;
                for (size_t j = 0; j < n; j += 8) { uint64_t r = rnd(); memcpy(buf + j, &r, 8); }
                break;
            }
            set_add(s, i, buf, n);
        }
    }
}

/* ------------------------------------------------------------------ */
/* compressors                                                         */

enum { C_ZSYNC, C_ZFIN, C_LD };
typedef struct {
    int kind, level, wbits, memlevel;
    z_stream z;
    struct libdeflate_compressor *ld;
} comp_t;

static void comp_init(comp_t *c, int kind, int level, int wbits, int memlevel) {
    memset(c, 0, sizeof *c);
    c->kind = kind; c->level = level; c->wbits = wbits; c->memlevel = memlevel;
    if (kind == C_LD) {
        c->ld = libdeflate_alloc_compressor(level);
        if (!c->ld) { fprintf(stderr, "ld alloc\n"); exit(1); }
    } else {
        if (deflateInit2(&c->z, level, Z_DEFLATED, -wbits, memlevel, Z_DEFAULT_STRATEGY) != Z_OK) {
            fprintf(stderr, "deflateInit2\n"); exit(1);
        }
    }
}
static void comp_free(comp_t *c) {
    if (c->kind == C_LD) libdeflate_free_compressor(c->ld);
    else deflateEnd(&c->z);
}
static size_t comp_bound(comp_t *c, size_t n) {
    if (c->kind == C_LD) return libdeflate_deflate_compress_bound(c->ld, n) + 8;
    return deflateBound(&c->z, n) + 16;
}
/* returns the permessage-deflate wire payload length (RFC 7692 7.2.1) */
static size_t comp_one(comp_t *c, const unsigned char *in, size_t n, unsigned char *out, size_t cap) {
    if (c->kind == C_LD) {
        size_t r = libdeflate_deflate_compress(c->ld, in, n, out, cap - 1);
        if (!r) return 0;
        out[r] = 0x00; /* empty stored block header (BFINAL=0,BTYPE=00) + padding: RFC 7692 7.2.3.4 */
        return r + 1;
    }
    z_stream *z = &c->z;
    deflateReset(z);
    z->next_in = (Bytef *)in; z->avail_in = (uInt)n;
    z->next_out = out; z->avail_out = (uInt)cap;
    if (c->kind == C_ZSYNC) {
        int rc = deflate(z, Z_SYNC_FLUSH);
        if (rc != Z_OK || z->avail_in || !z->avail_out) return 0;
        size_t r = cap - z->avail_out;
        if (r < 4 || memcmp(out + r - 4, "\0\0\xff\xff", 4)) return 0;
        return r - 4; /* strip 00 00 ff ff */
    } else {
        int rc = deflate(z, Z_FINISH);
        if (rc != Z_STREAM_END) return 0;
        size_t r = cap - z->avail_out;
        out[r] = 0x00; /* as for libdeflate */
        return r + 1;
    }
}

/* ------------------------------------------------------------------ */
/* decompressors: input is a wire payload; the buffer has 8 bytes of slack */

static const unsigned char TAIL_Z[4] = {0x00, 0x00, 0xff, 0xff};
/* for libdeflate: finish the empty stored block, then an empty final fixed block */
static const unsigned char TAIL_LD[6] = {0x00, 0x00, 0xff, 0xff, 0x03, 0x00};

static z_stream g_inf;
static struct libdeflate_decompressor *g_ld_dec;

/* zlib: one inflate call into a large-enough buffer; returns out length or (size_t)-1 */
static size_t z_inflate_one(unsigned char *in, size_t n, unsigned char *out, size_t cap) {
    memcpy(in + n, TAIL_Z, 4); /* slack in the buffer */
    inflateReset(&g_inf);
    g_inf.next_in = in; g_inf.avail_in = (uInt)(n + 4);
    g_inf.next_out = out; g_inf.avail_out = (uInt)cap;
    int rc = inflate(&g_inf, Z_SYNC_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return (size_t)-1;
    return cap - g_inf.avail_out;
}
static size_t ld_inflate_one(unsigned char *in, size_t n, unsigned char *out, size_t cap) {
    memcpy(in + n, TAIL_LD, 6);
    size_t got = 0;
    enum libdeflate_result r = libdeflate_deflate_decompress(g_ld_dec, in, n + 6, out, cap, &got);
    if (r != LIBDEFLATE_SUCCESS) return (size_t)-1;
    return got;
}

/* ------------------------------------------------------------------ */
/* timing helpers                                                      */

static int64_t cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp_d); return v[n / 2]; }

/* compressed copies of a set */
typedef struct { unsigned char **p; size_t *len; size_t total; } cset_t;

static cset_t compress_set(comp_t *c, set_t *s) {
    cset_t o;
    o.p = calloc(s->n, sizeof *o.p); o.len = calloc(s->n, sizeof *o.len); o.total = 0;
    for (int i = 0; i < s->n; i++) {
        size_t cap = comp_bound(c, s->len[i]);
        o.p[i] = malloc(cap + 16);
        o.len[i] = comp_one(c, s->msg[i], s->len[i], o.p[i], cap);
        if (!o.len[i]) { fprintf(stderr, "compress failed %s\n", s->name); exit(1); }
        o.total += o.len[i];
    }
    return o;
}
static void cset_free(cset_t *o, int n) {
    for (int i = 0; i < n; i++) free(o->p[i]);
    free(o->p); free(o->len);
}

static const char *cname(int kind) { return kind == C_LD ? "libdeflate" : kind == C_ZSYNC ? "zlib(sync)" : "zlib(finish)"; }

/* time compression of set s with c; fills median ns/msg and MB/s */
static void time_comp(comp_t *c, set_t *s, double *ns_msg, double *mbs) {
    size_t cap = comp_bound(c, s->maxlen);
    unsigned char *out = malloc(cap + 16);
    /* calibrate iterations */
    long iters = s->n;
    for (;;) {
        int64_t t0 = cpu_ns();
        for (long i = 0; i < iters; i++) comp_one(c, s->msg[i % s->n], s->len[i % s->n], out, cap);
        double sec = (cpu_ns() - t0) / 1e9;
        if (sec >= g_min_sec * 0.5 || iters > (1L << 30)) {
            if (sec < g_min_sec) iters = (long)(iters * (g_min_sec / (sec > 1e-6 ? sec : 1e-6))) + 1;
            break;
        }
        iters *= 4;
    }
    if (iters < s->n && s->n <= 3) iters = s->n; /* big messages: at least the whole set */
    double v_ns[REPS], v_mbs[REPS];
    for (int r = 0; r < REPS; r++) {
        size_t bytes = 0;
        int64_t t0 = cpu_ns();
        for (long i = 0; i < iters; i++) {
            size_t k = i % s->n;
            if (!comp_one(c, s->msg[k], s->len[k], out, cap)) { fprintf(stderr, "comp fail\n"); exit(1); }
            bytes += s->len[k];
        }
        int64_t dt = cpu_ns() - t0;
        v_ns[r] = (double)dt / iters;
        v_mbs[r] = bytes / (dt / 1e9) / 1e6;
    }
    *ns_msg = median(v_ns, REPS);
    *mbs = median(v_mbs, REPS);
    free(out);
}

static void time_decomp(int use_ld, cset_t *cs, set_t *s, double *ns_msg, double *mbs) {
    size_t cap = s->maxlen + 64;
    unsigned char *out = malloc(cap);
    long iters = s->n;
    for (;;) {
        int64_t t0 = cpu_ns();
        for (long i = 0; i < iters; i++) {
            size_t k = i % s->n;
            if (use_ld) ld_inflate_one(cs->p[k], cs->len[k], out, cap);
            else z_inflate_one(cs->p[k], cs->len[k], out, cap);
        }
        double sec = (cpu_ns() - t0) / 1e9;
        if (sec >= g_min_sec * 0.5 || iters > (1L << 30)) {
            if (sec < g_min_sec) iters = (long)(iters * (g_min_sec / (sec > 1e-6 ? sec : 1e-6))) + 1;
            break;
        }
        iters *= 4;
    }
    double v_ns[REPS], v_mbs[REPS];
    for (int r = 0; r < REPS; r++) {
        size_t bytes = 0;
        int64_t t0 = cpu_ns();
        for (long i = 0; i < iters; i++) {
            size_t k = i % s->n, got;
            if (use_ld) got = ld_inflate_one(cs->p[k], cs->len[k], out, cap);
            else got = z_inflate_one(cs->p[k], cs->len[k], out, cap);
            if (got != s->len[k]) { fprintf(stderr, "decomp fail\n"); exit(1); }
            bytes += got;
        }
        int64_t dt = cpu_ns() - t0;
        v_ns[r] = (double)dt / iters;
        v_mbs[r] = bytes / (dt / 1e9) / 1e6;
    }
    *ns_msg = median(v_ns, REPS);
    *mbs = median(v_mbs, REPS);
    free(out);
}

/* ------------------------------------------------------------------ */

static const int zlevels[] = {1, 3, 6};
static const int ldlevels[] = {1, 3, 6, 9, 12};

static void init_decoders(void) {
    memset(&g_inf, 0, sizeof g_inf);
    if (inflateInit2(&g_inf, -15) != Z_OK) exit(1);
    g_ld_dec = libdeflate_alloc_decompressor();
}

static void run_comp(void) {
    printf("## compression (wire payload per RFC 7692; CPU per message, median of %d)\n", REPS);
    printf("| payload | library | level | ratio | ns/msg | MB/s | CPU-ms per MB |\n|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NKIND; k++) {
        set_t *s = &sets[k];
        for (int kind = C_ZSYNC; kind <= C_LD; kind++) {
            const int *lv = kind == C_LD ? ldlevels : zlevels;
            int nl = kind == C_LD ? 5 : 3;
            for (int j = 0; j < nl; j++) {
                comp_t c;
                comp_init(&c, kind, lv[j], 15, 8);
                cset_t cs = compress_set(&c, s);
                double ns, mbs;
                time_comp(&c, s, &ns, &mbs);
                printf("| %s | %s | %d | %.3f | %.0f | %.1f | %.2f |\n", s->name, cname(kind), lv[j],
                       (double)cs.total / s->total, ns, mbs, 1000.0 / mbs);
                fflush(stdout);
                cset_free(&cs, s->n);
                comp_free(&c);
            }
        }
    }
}

static void run_decomp(void) {
    printf("## decompression (whole message, median of %d)\n", REPS);
    printf("| payload | produced by | zlib inflate ns/msg | zlib MB/s | libdeflate ns/msg | libdeflate MB/s |\n|---|---|---|---|---|---|\n");
    struct { int kind, level; } prod[] = {{C_ZSYNC, 1}, {C_ZSYNC, 6}, {C_LD, 6}};
    for (int k = 0; k < NKIND; k++) {
        set_t *s = &sets[k];
        for (int p = 0; p < 3; p++) {
            comp_t c;
            comp_init(&c, prod[p].kind, prod[p].level, 15, 8);
            cset_t cs = compress_set(&c, s);
            double zn, zm, ln, lm;
            time_decomp(0, &cs, s, &zn, &zm);
            time_decomp(1, &cs, s, &ln, &lm);
            printf("| %s | %s L%d | %.0f | %.1f | %.0f | %.1f |\n", s->name, cname(prod[p].kind), prod[p].level,
                   zn, zm, ln, lm);
            fflush(stdout);
            cset_free(&cs, s->n);
            comp_free(&c);
        }
    }
}

static void run_zgrid(void) {
    printf("## zlib windowBits/memLevel (sync flush), median of %d\n", REPS);
    printf("| payload | wbits | memLevel | level | ratio | ns/msg | MB/s |\n|---|---|---|---|---|---|---|\n");
    int cfg[][2] = {{15, 9}, {15, 8}, {15, 6}, {14, 7}, {13, 6}, {12, 5}, {11, 4}, {10, 3}, {9, 1}};
    int kinds[] = {K_TRADE, K_A4K, K_A64K};
    int lv[] = {1, 6};
    for (int ki = 0; ki < 3; ki++)
        for (int li = 0; li < 2; li++)
            for (unsigned ci = 0; ci < sizeof cfg / sizeof cfg[0]; ci++) {
                set_t *s = &sets[kinds[ki]];
                comp_t c;
                comp_init(&c, C_ZSYNC, lv[li], cfg[ci][0], cfg[ci][1]);
                cset_t cs = compress_set(&c, s);
                double ns, mbs;
                time_comp(&c, s, &ns, &mbs);
                printf("| %s | %d | %d | %d | %.3f | %.0f | %.1f |\n", s->name, cfg[ci][0], cfg[ci][1], lv[li],
                       (double)cs.total / s->total, ns, mbs);
                fflush(stdout);
                cset_free(&cs, s->n);
                comp_free(&c);
            }
}

static void run_mem(void) {
    printf("## zlib deflate state bytes (deflateInit2, raw, all zalloc calls summed)\n");
    printf("| memLevel \\ windowBits |");
    for (int w = 9; w <= 15; w++) printf(" %d |", w);
    printf("\n|---|---|---|---|---|---|---|---|\n");
    for (int m = 1; m <= 9; m++) {
        printf("| %d |", m);
        for (int w = 9; w <= 15; w++) {
            z_stream z; memset(&z, 0, sizeof z);
            z.zalloc = z_cnt_alloc; z.zfree = z_cnt_free;
            acct_reset();
            int rc = deflateInit2(&z, 6, Z_DEFLATED, -w, m, Z_DEFAULT_STRATEGY);
            if (rc != Z_OK) { printf(" err%d |", rc); continue; }
            int64_t after_init = g_acct.cur;
            printf(" %lld |", (long long)after_init);
            deflateEnd(&z);
        }
        printf("\n");
    }
    /* zlib level does not change memory; show, and show that deflate() allocates nothing */
    printf("\nzlib deflate memory by level (wbits 15, memLevel 8):");
    for (int l = 1; l <= 9; l++) {
        z_stream z; memset(&z, 0, sizeof z);
        z.zalloc = z_cnt_alloc; z.zfree = z_cnt_free;
        acct_reset();
        deflateInit2(&z, l, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
        int64_t calls = g_acct.calls;
        unsigned char out[4096];
        for (int i = 0; i < 100; i++) {
            deflateReset(&z);
            z.next_in = sets[K_TRADE].msg[i]; z.avail_in = (uInt)sets[K_TRADE].len[i];
            z.next_out = out; z.avail_out = sizeof out;
            deflate(&z, Z_SYNC_FLUSH);
        }
        printf(" L%d=%lld (allocs in 100 deflates: %lld)", l, (long long)g_acct.cur, (long long)(g_acct.calls - calls));
        deflateEnd(&z);
    }
    printf("\n\n## libdeflate compressor bytes (libdeflate_alloc_compressor_ex with counting malloc_func)\n");
    printf("| level | bytes requested (incl. alignment slack) | allocs during 100 compressions |\n|---|---|---|\n");
    for (int l = 0; l <= 12; l++) {
        struct libdeflate_options o; memset(&o, 0, sizeof o);
        o.sizeof_options = sizeof o; o.malloc_func = cnt_malloc; o.free_func = cnt_free;
        acct_reset();
        struct libdeflate_compressor *c = libdeflate_alloc_compressor_ex(l, &o);
        int64_t b = g_acct.cur, calls = g_acct.calls;
        unsigned char out[4096];
        for (int i = 0; i < 100; i++)
            libdeflate_deflate_compress(c, sets[K_TRADE].msg[i], sets[K_TRADE].len[i], out, sizeof out);
        printf("| %d | %lld | %lld |\n", l, (long long)b, (long long)(g_acct.calls - calls));
        libdeflate_free_compressor(c);
        if (g_acct.cur != 0) printf("LEAK %lld\n", (long long)g_acct.cur);
    }
    printf("\n## decompressor memory\n");
    {
        struct libdeflate_options o; memset(&o, 0, sizeof o);
        o.sizeof_options = sizeof o; o.malloc_func = cnt_malloc; o.free_func = cnt_free;
        acct_reset();
        struct libdeflate_decompressor *d = libdeflate_alloc_decompressor_ex(&o);
        printf("libdeflate decompressor: %lld bytes\n", (long long)g_acct.cur);
        libdeflate_free_decompressor(d);
    }
    for (int w = 9; w <= 15; w += 3 - (w == 15 ? 0 : 0)) {
        z_stream z; memset(&z, 0, sizeof z);
        z.zalloc = z_cnt_alloc; z.zfree = z_cnt_free;
        acct_reset();
        inflateInit2(&z, -w);
        int64_t init = g_acct.cur;
        /* inflate a message in one call with Z_SYNC_FLUSH (window gets allocated) */
        comp_t c; comp_init(&c, C_ZSYNC, 6, w, 8);
        unsigned char cbuf[8192], obuf[8192];
        size_t n = comp_one(&c, sets[K_A4K].msg[0], sets[K_A4K].len[0], cbuf, sizeof cbuf - 8);
        memcpy(cbuf + n, TAIL_Z, 4);
        z.next_in = cbuf; z.avail_in = (uInt)(n + 4); z.next_out = obuf; z.avail_out = sizeof obuf;
        inflate(&z, Z_SYNC_FLUSH);
        int64_t after_sync = g_acct.cur;
        inflateEnd(&z);
        /* same with Z_FINISH into a big enough buffer: no window */
        memset(&z, 0, sizeof z); z.zalloc = z_cnt_alloc; z.zfree = z_cnt_free;
        acct_reset();
        inflateInit2(&z, -w);
        /* for Z_FINISH the stream must end: use finish-mode output */
        comp_t c2; comp_init(&c2, C_ZFIN, 6, w, 8);
        n = comp_one(&c2, sets[K_A4K].msg[0], sets[K_A4K].len[0], cbuf, sizeof cbuf - 8);
        z.next_in = cbuf; z.avail_in = (uInt)n; z.next_out = obuf; z.avail_out = sizeof obuf;
        int rc = inflate(&z, Z_FINISH);
        int64_t after_fin = g_acct.cur;
        inflateEnd(&z);
        printf("zlib inflate windowBits %d: after inflateInit2 %lld B; after an inflate(Z_SYNC_FLUSH) %lld B;"
               " after a one-call inflate(Z_FINISH) rc=%d %lld B\n", w, (long long)init, (long long)after_sync,
               rc, (long long)after_fin);
        comp_free(&c); comp_free(&c2);
        if (w == 15) break;
    }
}

/* ------------------------------------------------------------------ */
/* format / correctness checks                                         */

static void hex(const unsigned char *p, size_t n) { for (size_t i = 0; i < n; i++) printf("%02x ", p[i]); printf("\n"); }

static void run_check(void) {
    unsigned char out[1 << 16], back[1 << 16];
    const char *hello = "Hello";
    comp_t zs, zf, ld;
    comp_init(&zs, C_ZSYNC, 6, 15, 8);
    comp_init(&zf, C_ZFIN, 6, 15, 8);
    comp_init(&ld, C_LD, 6, 15, 8);
    size_t n;
    printf("'Hello' zlib sync-flush, stripped: "); n = comp_one(&zs, (const unsigned char *)hello, 5, out, 100); hex(out, n);
    printf("'Hello' zlib Z_FINISH + 00:        "); n = comp_one(&zf, (const unsigned char *)hello, 5, out, 100); hex(out, n);
    printf("'Hello' libdeflate L6 + 00:         "); n = comp_one(&ld, (const unsigned char *)hello, 5, out, 100); hex(out, n);
    {
        struct libdeflate_compressor *l1 = libdeflate_alloc_compressor(1);
        unsigned char o2[100];
        size_t r = libdeflate_deflate_compress(l1, hello, 5, o2, 100);
        printf("'Hello' libdeflate L1 raw (no 00):  "); hex(o2, r);
        /* a 60-byte message: above max_passthrough for L6? */
        libdeflate_free_compressor(l1);
    }
    /* cross-decode every message of every set, both producers, both decoders */
    int bad = 0;
    comp_t *cs[] = {&zs, &zf, &ld};
    for (int k = 0; k < NKIND; k++)
        for (int p = 0; p < 3; p++) {
            set_t *s = &sets[k];
            cset_t c = compress_set(cs[p], s);
            unsigned char *o = malloc(s->maxlen + 64);
            for (int i = 0; i < s->n; i++) {
                size_t a = z_inflate_one(c.p[i], c.len[i], o, s->maxlen + 64);
                if (a != s->len[i] || memcmp(o, s->msg[i], a)) { bad++; }
                size_t b = ld_inflate_one(c.p[i], c.len[i], o, s->maxlen + 64);
                if (b != s->len[i] || memcmp(o, s->msg[i], b)) { bad++; }
            }
            printf("cross-decode %-18s produced by %-12s: zlib-inflate+00 00 ff ff and libdeflate+00 00 ff ff 03 00 -> %s\n",
                   s->name, cname(cs[p]->kind), bad ? "MISMATCH" : "all ok");
            free(o);
            cset_free(&c, s->n);
        }
    /* libdeflate without the 6-byte tail on zlib-sync output: expect failure */
    {
        n = comp_one(&zs, sets[K_TRADE].msg[0], sets[K_TRADE].len[0], out, sizeof out - 8);
        size_t got = 0;
        enum libdeflate_result r = libdeflate_deflate_decompress(g_ld_dec, out, n, back, sizeof back, &got);
        printf("libdeflate on a stripped sync-flush payload with no tail: result %d (1=BAD_DATA)\n", r);
        memcpy(out + n, TAIL_Z, 4);
        r = libdeflate_deflate_decompress(g_ld_dec, out, n + 4, back, sizeof back, &got);
        printf("libdeflate on it + 00 00 ff ff only: result %d\n", r);
    }
    /* zlib inflate of libdeflate output without the trailing 00 byte */
    {
        size_t r = libdeflate_deflate_compress(ld.ld, sets[K_TRADE].msg[0], sets[K_TRADE].len[0], out, sizeof out);
        memcpy(out + r, TAIL_Z, 4);
        inflateReset(&g_inf);
        g_inf.next_in = out; g_inf.avail_in = (uInt)(r + 4); g_inf.next_out = back; g_inf.avail_out = sizeof back;
        int rc = inflate(&g_inf, Z_SYNC_FLUSH);
        printf("zlib inflate of libdeflate output WITHOUT the 00 byte (+00 00 ff ff): rc=%d (1=Z_STREAM_END) out=%lu ok=%d, %u input bytes left\n",
               rc, (unsigned long)(sizeof back - g_inf.avail_out),
               (sizeof back - g_inf.avail_out) == sets[K_TRADE].len[0] && !memcmp(back, sets[K_TRADE].msg[0], sets[K_TRADE].len[0]),
               g_inf.avail_in);
    }
    /* incompressible: do wire payloads grow? */
    for (int k = K_BIN600; k <= K_BIN4K; k++) {
        set_t *s = &sets[k];
        cset_t a = compress_set(&zs, s), b = compress_set(&ld, s);
        printf("%s: zlib-sync L6 wire %.4f of original, libdeflate L6 wire %.4f\n", s->name,
               (double)a.total / s->total, (double)b.total / s->total);
        cset_free(&a, s->n); cset_free(&b, s->n);
    }
    /* sizes of the sets */
    for (int k = 0; k < NKIND; k++)
        printf("set %-18s n=%d mean=%.0f B min..max=", sets[k].name, sets[k].n, (double)sets[k].total / sets[k].n),
        printf("%zu..%zu\n", ({ size_t m = SIZE_MAX; for (int i = 0; i < sets[k].n; i++) if (sets[k].len[i] < m) m = sets[k].len[i]; m; }), sets[k].maxlen);
    printf("sample trade message (%zu B):\n%.*s\n", sets[K_TRADE].len[0], (int)sets[K_TRADE].len[0], sets[K_TRADE].msg[0]);
    printf("sample ticker message (%zu B):\n%.*s\n", sets[K_TICK].len[0], (int)sets[K_TICK].len[0], sets[K_TICK].msg[0]);
    comp_free(&zs); comp_free(&zf); comp_free(&ld);
    if (bad) { printf("FAILURES: %d\n", bad); exit(1); }
}

/* ------------------------------------------------------------------ */
/* bombs                                                               */

typedef struct { unsigned char *p; size_t n; size_t orig; } bomb_t;

/* zeros of size total, deflated at level 9 with sync flush + strip (browser-style) */
static bomb_t make_bomb(size_t total) {
    z_stream z; memset(&z, 0, sizeof z);
    deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);
    size_t cap = total / 1000 + (1 << 16);
    bomb_t b = {malloc(cap + 16), 0, total};
    static unsigned char zeros[1 << 20];
    size_t left = total;
    z.next_out = b.p; z.avail_out = (uInt)cap;
    while (left) {
        size_t k = left < sizeof zeros ? left : sizeof zeros;
        z.next_in = zeros; z.avail_in = (uInt)k;
        left -= k;
        deflate(&z, left ? Z_NO_FLUSH : Z_SYNC_FLUSH);
        if (z.avail_in) { fprintf(stderr, "bomb cap\n"); exit(1); }
    }
    b.n = cap - z.avail_out - 4;
    deflateEnd(&z);
    return b;
}

/* zlib bounded inflate: per-thread z_stream (window 32 KiB), output grown in
 * doubling chunks, stop as soon as total_out > max.  Returns 1 if over. */
static int z_bounded(unsigned char *in, size_t n, size_t max, size_t *produced, int64_t *peak_out) {
    z_stream *z = &g_inf;
    memcpy(in + n, TAIL_Z, 4);
    inflateReset(z);
    size_t cap = 16384, used = 0;
    unsigned char *out = cnt_malloc(cap);
    z->next_in = in; z->avail_in = (uInt)(n + 4);
    int over = 0;
    for (;;) {
        if (used == cap) {
            if (cap > max) { over = 1; break; }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            unsigned char *o2 = cnt_malloc(ncap);
            memcpy(o2, out, used); cnt_free(out); out = o2; cap = ncap;
        }
        z->next_out = out + used; z->avail_out = (uInt)(cap - used);
        int rc = inflate(z, Z_SYNC_FLUSH);
        used = cap - z->avail_out;
        if (used > max) { over = 1; break; }
        if (rc == Z_STREAM_END) break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) { over = -1; break; }
        if (z->avail_in == 0 && z->avail_out != 0) break; /* all input used, all output flushed */
    }
    *produced = used;
    *peak_out = g_acct.peak;
    cnt_free(out);
    return over;
}
/* libdeflate, strategy A: one output buffer of max bytes */
static int ld_bounded_full(unsigned char *in, size_t n, size_t max, size_t *produced) {
    memcpy(in + n, TAIL_LD, 6);
    unsigned char *out = cnt_malloc(max);
    size_t got = 0;
    enum libdeflate_result r = libdeflate_deflate_decompress(g_ld_dec, in, n + 6, out, max, &got);
    cnt_free(out);
    *produced = got;
    return r == LIBDEFLATE_INSUFFICIENT_SPACE ? 1 : r == LIBDEFLATE_SUCCESS ? 0 : -1;
}
/* libdeflate, strategy B: start at min(max, 4*n rounded, >=16K), double and redo */
static int ld_bounded_grow(unsigned char *in, size_t n, size_t max, size_t *produced, int *tries) {
    memcpy(in + n, TAIL_LD, 6);
    size_t cap = n * 4 < 16384 ? 16384 : n * 4;
    if (cap > max) cap = max;
    *tries = 0;
    for (;;) {
        unsigned char *out = cnt_malloc(cap);
        size_t got = 0;
        enum libdeflate_result r = libdeflate_deflate_decompress(g_ld_dec, in, n + 6, out, cap, &got);
        cnt_free(out);
        (*tries)++;
        if (r == LIBDEFLATE_SUCCESS) { *produced = got; return 0; }
        if (r != LIBDEFLATE_INSUFFICIENT_SPACE) return -1;
        if (cap == max) { *produced = cap; return 1; }
        cap = cap * 2 > max ? max : cap * 2;
    }
}

static void run_bomb(void) {
    struct { size_t total, max; } cases[] = {
        {1u << 20, 64u << 10},         /* ~1 KB that inflates to 1 MiB, maxPayload 64 KiB */
        {1u << 30, 1u << 20},          /* ~1 MB that inflates to 1 GiB, maxPayload 1 MiB (default) */
        {1u << 30, 16u << 20},         /* same, maxPayload 16 MiB */
    };
    printf("## compression bombs: bounded inflate (CPU, median of %d)\n", REPS);
    printf("| bomb (compressed -> inflated) | maxPayload | method | result | output before stop | peak bytes allocated (state+output) | CPU ms |\n|---|---|---|---|---|---|---|\n");
    for (unsigned ci = 0; ci < 3; ci++) {
        bomb_t b = make_bomb(cases[ci].total);
        size_t max = cases[ci].max;
        for (int m = 0; m < 3; m++) {
            double v[REPS];
            int res = 0; size_t produced = 0; int64_t peak = 0; int tries = 0;
            for (int r = 0; r < REPS; r++) {
                acct_reset();
                int64_t t0 = cpu_ns();
                if (m == 0) res = z_bounded(b.p, b.n, max, &produced, &peak);
                else if (m == 1) res = ld_bounded_full(b.p, b.n, max, &produced);
                else res = ld_bounded_grow(b.p, b.n, max, &produced, &tries);
                v[r] = (cpu_ns() - t0) / 1e6;
                peak = g_acct.peak;
            }
            /* add the decoder state itself */
            int64_t state = m == 0 ? (int64_t)(7160 + 32768) : 0;
            (void)state;
            char meth[80];
            if (m == 0) snprintf(meth, sizeof meth, "zlib inflate, output doubling from 16 KiB");
            else if (m == 1) snprintf(meth, sizeof meth, "libdeflate one-shot into maxPayload buffer");
            else snprintf(meth, sizeof meth, "libdeflate doubling+retry (%d tries)", tries);
            printf("| %zu B -> %zu B | %zu | %s | %s | %zu | %lld (+ decoder state) | %.2f |\n", b.n, b.orig, max, meth,
                   res == 1 ? "stopped (1009)" : res == 0 ? "accepted?!" : "error", produced, (long long)peak,
                   median(v, REPS));
            fflush(stdout);
        }
        free(b.p);
    }
    /* normal messages through the bounded paths: overhead of doubling on a 64 KiB JSON */
    printf("\n## bounded inflate of ordinary messages (maxPayload 1 MiB), CPU ns per message, median of %d\n", REPS);
    printf("| payload | zlib chunked | libdeflate maxPayload buffer | libdeflate doubling |\n|---|---|---|---|\n");
    int kinds[] = {K_TRADE, K_A4K, K_A64K, K_A1M};
    for (int ki = 0; ki < 4; ki++) {
        set_t *s = &sets[kinds[ki]];
        comp_t c; comp_init(&c, C_ZSYNC, 6, 15, 8);
        cset_t cs = compress_set(&c, s);
        double res[3];
        for (int m = 0; m < 3; m++) {
            double v[REPS];
            long iters = s->n < 50 ? s->n * 20 : s->n;
            if (kinds[ki] == K_TRADE) iters = 20000;
            for (int r = 0; r < REPS; r++) {
                int64_t t0 = cpu_ns();
                for (long i = 0; i < iters; i++) {
                    size_t k = i % s->n, produced; int64_t pk; int tries;
                    int rr = m == 0 ? z_bounded(cs.p[k], cs.len[k], 1 << 20, &produced, &pk)
                           : m == 1 ? ld_bounded_full(cs.p[k], cs.len[k], 1 << 20, &produced)
                                    : ld_bounded_grow(cs.p[k], cs.len[k], 1 << 20, &produced, &tries);
                    if (rr != 0 || produced != s->len[k]) { fprintf(stderr, "bounded fail m=%d rr=%d\n", m, rr); exit(1); }
                }
                v[r] = (double)(cpu_ns() - t0) / iters;
            }
            res[m] = median(v, REPS);
        }
        printf("| %s | %.0f | %.0f | %.0f |\n", s->name, res[0], res[1], res[2]);
        cset_free(&cs, s->n);
        comp_free(&c);
    }
}

static void run_fixed(void) {
    /* per-call fixed cost: 64-byte JSON snippets (above libdeflate's passthrough sizes) */
    set_t s = {"json-64B", 2000, calloc(2000, sizeof(void *)), calloc(2000, sizeof(size_t)), 0, 0};
    for (int i = 0; i < s.n; i++) set_add(&s, i, sets[K_TICK].msg[i], 64);
    printf("## per-call fixed cost: 64 B JSON prefix, median of %d\n| library | level | wbits/memLevel | ns/msg |\n|---|---|---|---|\n", REPS);
    struct { int kind, level, w, m; } cf[] = {{C_ZSYNC, 1, 15, 8}, {C_ZSYNC, 6, 15, 8}, {C_ZSYNC, 6, 15, 9}, {C_ZSYNC, 6, 13, 6}, {C_ZSYNC, 6, 12, 5},
                                             {C_LD, 1, 15, 0}, {C_LD, 3, 15, 0}, {C_LD, 6, 15, 0}, {C_LD, 9, 15, 0}};
    for (unsigned i = 0; i < sizeof cf / sizeof cf[0]; i++) {
        comp_t c; comp_init(&c, cf[i].kind, cf[i].level, cf[i].w, cf[i].m ? cf[i].m : 8);
        double ns, mbs;
        time_comp(&c, &s, &ns, &mbs);
        printf("| %s | %d | %d/%d | %.0f |\n", cname(cf[i].kind), cf[i].level, cf[i].w, cf[i].m, ns);
        comp_free(&c);
    }
}

/* reference only: what context takeover (one zlib stream per connection, as ws
 * does by default) would give on the same message sequence */
static void run_ctx(void) {
    printf("## reference: zlib WITH context takeover (one stream, Z_SYNC_FLUSH per message, no reset)\n");
    printf("| payload | level | ratio with context takeover | ratio without (per message) | ns/msg with takeover |\n|---|---|---|---|---|\n");
    int kinds[] = {K_TICK, K_TRADE, K_A4K};
    for (int ki = 0; ki < 3; ki++)
        for (int lv = 1; lv <= 6; lv += 5) {
            set_t *s = &sets[kinds[ki]];
            z_stream z; memset(&z, 0, sizeof z);
            deflateInit2(&z, lv, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
            unsigned char *out = malloc(s->maxlen * 2 + 64);
            size_t tot = 0;
            double v[REPS];
            for (int r = 0; r < REPS + 1; r++) {
                deflateReset(&z);
                tot = 0;
                int64_t t0 = cpu_ns();
                for (int i = 0; i < s->n; i++) {
                    z.next_in = s->msg[i]; z.avail_in = (uInt)s->len[i];
                    z.next_out = out; z.avail_out = (uInt)(s->maxlen * 2 + 64);
                    deflate(&z, Z_SYNC_FLUSH);
                    tot += (s->maxlen * 2 + 64 - z.avail_out) - 4;
                }
                if (r) v[r - 1] = (double)(cpu_ns() - t0) / s->n;
            }
            comp_t c; comp_init(&c, C_ZSYNC, lv, 15, 8);
            cset_t cs = compress_set(&c, s);
            printf("| %s | zlib %d | %.3f | %.3f | %.0f |\n", s->name, lv, (double)tot / s->total, (double)cs.total / s->total, median(v, REPS));
            cset_free(&cs, s->n); comp_free(&c);
            deflateEnd(&z); free(out);
        }
}

static void run_check_bounded(void) {
    bomb_t b = make_bomb(1u << 20);
    size_t produced; int64_t pk; int tries;
    acct_reset();
    int r0 = z_bounded(b.p, b.n, 64u << 10, &produced, &pk);
    printf("bounded check: %zu B bomb -> 1 MiB, max 64 KiB: zlib=%d (produced %zu, peak out %lld)", b.n, r0, produced, (long long)pk);
    acct_reset();
    int r1 = ld_bounded_full(b.p, b.n, 64u << 10, &produced);
    printf(" ld_full=%d (peak %lld)", r1, (long long)g_acct.peak);
    acct_reset();
    int r2 = ld_bounded_grow(b.p, b.n, 64u << 10, &produced, &tries);
    printf(" ld_grow=%d tries=%d (peak %lld)\n", r2, tries, (long long)g_acct.peak);
    /* the same under the limit */
    r0 = z_bounded(b.p, b.n, 1u << 20, &produced, &pk);
    printf("  with max 1 MiB (exactly the size): zlib=%d produced=%zu", r0, produced);
    r1 = ld_bounded_full(b.p, b.n, 1u << 20, &produced);
    printf(" ld_full=%d produced=%zu", r1, produced);
    r2 = ld_bounded_grow(b.p, b.n, 1u << 20, &produced, &tries);
    printf(" ld_grow=%d produced=%zu tries=%d\n", r2, produced, tries);
    r0 = z_bounded(b.p, b.n, (1u << 20) - 1, &produced, &pk);
    r1 = ld_bounded_full(b.p, b.n, (1u << 20) - 1, &produced);
    r2 = ld_bounded_grow(b.p, b.n, (1u << 20) - 1, &produced, &tries);
    printf("  with max 1 MiB - 1: zlib=%d ld_full=%d ld_grow=%d\n", r0, r1, r2);
    /* corrupt data */
    b.p[b.n / 2] ^= 0x55; b.p[10] ^= 0xff;
    r0 = z_bounded(b.p, b.n, 1u << 20, &produced, &pk);
    r1 = ld_bounded_full(b.p, b.n, 1u << 20, &produced);
    printf("  corrupted: zlib=%d ld_full=%d (-1 = error)\n", r0, r1);
    free(b.p);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench check|mem|comp|decomp|zgrid|bomb\n"); return 2; }
    if (getenv("MIN_SEC")) g_min_sec = atof(getenv("MIN_SEC"));
    make_sets();
    init_decoders();
    if (!strcmp(argv[1], "check")) { run_check(); run_check_bounded(); }
    else if (!strcmp(argv[1], "mem")) run_mem();
    else if (!strcmp(argv[1], "comp")) run_comp();
    else if (!strcmp(argv[1], "decomp")) run_decomp();
    else if (!strcmp(argv[1], "zgrid")) run_zgrid();
    else if (!strcmp(argv[1], "bomb")) run_bomb();
    else if (!strcmp(argv[1], "fixed")) run_fixed();
    else if (!strcmp(argv[1], "ctx")) run_ctx();
    else return 2;
    return 0;
}
