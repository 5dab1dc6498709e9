/* Log-linear latency histogram. See lg.h. */
#include <string.h>

#include "lg.h"

/* Bucket of v: v itself below 2^SUB_BITS; above, with e chosen so that
 * v >> e lands in [HALF, 2*HALF), bucket e*HALF + (v >> e). The two ranges
 * meet without a gap: 2^SUB_BITS goes to bucket 2^SUB_BITS. */
static unsigned bucket_of(uint64_t v)
{
    if (v < (1u << LG_HIST_SUB_BITS))
        return (unsigned)v;
    unsigned log2v = 63u - (unsigned)__builtin_clzll(v);
    unsigned e = log2v - (LG_HIST_SUB_BITS - 1u);
    return e * LG_HIST_HALF + (unsigned)(v >> e);
}

/* The highest value that falls in bucket b. */
static uint64_t bucket_high(unsigned b)
{
    if (b < (1u << LG_HIST_SUB_BITS))
        return b;
    unsigned e = b / LG_HIST_HALF - 1u;
    uint64_t m = b - e * LG_HIST_HALF;
    return ((m + 1u) << e) - 1u; /* the last bucket wraps to UINT64_MAX */
}

void lg_hist_init(lg_hist_t *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

void lg_hist_record(lg_hist_t *h, uint64_t v)
{
    h->counts[bucket_of(v)]++;
    h->total++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

uint64_t lg_hist_percentile(const lg_hist_t *h, double p)
{
    if (h->total == 0)
        return 0;
    if (p >= 100.0)
        return h->max;
    /* the rank of the value: ceil(p% of total), at least 1 */
    double want = p / 100.0 * (double)h->total;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < LG_HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t v = bucket_high(b);
            return v > h->max ? h->max : v;
        }
    }
    return h->max;
}
