'use strict';
// loadgen's latency histogram (bench/loadgen/hist.c) on the runner's side:
// the non-empty buckets of several loadgens' "mark" events pooled, and
// percentiles read the way hist.c reads them, so that a figure over several
// loadgens (the clients of several processes) is one distribution, not the
// worst of several.

const SUB_BITS = 7; // LG_HIST_SUB_BITS
const HALF = 1 << (SUB_BITS - 1);

/** The highest value (ns) of bucket b (hist.c bucket_high). */
function bucketHigh(b) {
  if (b < (1 << SUB_BITS)) return b;
  const e = Math.floor(b / HALF) - 1;
  const m = b - e * HALF;
  return (m + 1) * 2 ** e - 1;
}

/** Pools [[bucket, count], ...] lists (and their maxima, ns). */
function pool(parts) {
  const counts = new Map();
  let total = 0;
  let max = 0;
  for (const p of parts) {
    if (!p || !Array.isArray(p.hist)) continue;
    for (const [b, n] of p.hist) {
      counts.set(b, (counts.get(b) || 0) + n);
      total += n;
    }
    if (Number.isFinite(p.maxNs)) max = Math.max(max, p.maxNs);
  }
  return { buckets: [...counts.entries()].sort((x, y) => x[0] - y[0]), total, max };
}

/** The value (ms) at percentile p of a pooled histogram (hist.c
 * lg_hist_percentile): null when it is empty. */
function percentileMs(h, p) {
  if (!h || h.total === 0) return null;
  if (p >= 100) return h.max / 1e6;
  let rank = Math.ceil((p / 100) * h.total);
  if (rank < 1) rank = 1;
  let seen = 0;
  for (const [b, n] of h.buckets) {
    seen += n;
    if (seen >= rank) return Math.min(bucketHigh(b), h.max) / 1e6;
  }
  return h.max / 1e6;
}

module.exports = { bucketHigh, pool, percentileMs };
