'use strict';
// The publish phase (issue 14): publish-heavy load. N connections, N topics,
// one subscriber each (connection n subscribes topic n), small binary
// messages, the JS thread publishing R messages/s in total (R / N per
// topic). See bench/README.md, "publish".
//
// One run = one arm, one repeat, one fresh server process:
//  1. the server starts at rate 0 with --stagger 1 (the topics take turns:
//     message m goes to topic m % N, due at start + (m + 1) / R; the script's
//     1 ms timer publishes what has come due, so the publishes go out in
//     small batches, ~R / 1000 per tick, and each topic's messages are
//     evenly spaced N / R s apart) and no traffic gate (BENCH_GATE=none:
//     nothing wraps publish on the hot path);
//  2. the N connections ramp; a warm-up (`warmup` s at the lowest rate, not
//     measured), straight into the first point;
//  3. the rate points, in ascending order: "ctl rate R/N" to the server (the
//     schedule at the new rate from then), `settle` s, then a window of
//     `window` s whose edges are marked in loadgen (SIGUSR1: due-time
//     latency and messages of exactly the window), read from /proc (the
//     server's CPU) and asked of the server ("ctl mark": what it published).
//     After a passing point the next rate follows without a pause; after a
//     failing one, rate 0 and a drain: loadgen marked every 0.2 s until an
//     interval brings no message (bounded), so its backlog never lands in
//     the next point (a pause after every point cost every arm a start-up
//     transient of seconds at the restart);
//  4. which points: the sweep (`sweep`, ascending) until the first point
//     that fails (delivered < `minDeliveredPct` or due-p99 > `p99BoundMs`),
//     then `refine` bisections between the last pass and that failure, then
//     any named point (`points`, 50k and 100k/s) not measured yet. The
//     latency-bound capacity is the largest passing rate below the first
//     failure (a lower bound when every sweep point passed);
//  5. everything stopped by PID.

const { readProc } = require('./sample');
const { now, sleep, finite } = require('./util');

const SETTLE_TIMEOUT_MIN = 30;
const rampBound = (n, r) => SETTLE_TIMEOUT_MIN + (r > 0 ? 3 * n / r : 0);

/** The rates to try, in order, given what was measured so far: see (4). */
function nextRate(c, done) {
  const measured = new Set(done.map((w) => w.rate));
  const firstFail = done.find((w) => w.kind !== 'point-only' && !w.pass);
  if (!firstFail) {
    const s = c.sweep.find((r) => !measured.has(r));
    if (s !== undefined) return { rate: s, kind: 'sweep' };
  } else {
    // refine: bisect between the largest pass below the first failure and the smallest failure
    const passes = done.filter((w) => w.pass && w.rate < firstFail.rate && w.kind !== 'point-only').map((w) => w.rate);
    const fails = done.filter((w) => !w.pass && w.kind !== 'point-only').map((w) => w.rate);
    const lo = passes.length ? Math.max(...passes) : null;
    const hi = Math.min(...fails);
    const refines = done.filter((w) => w.kind === 'refine').length;
    if (lo !== null && refines < c.refine) {
      const q = hi - lo >= 4000 ? 1000 : 1; // a round rate when the gap allows
      const mid = Math.round((lo + hi) / 2 / q) * q;
      if (mid > lo && mid < hi && !measured.has(mid)) return { rate: mid, kind: 'refine' };
    }
  }
  const p = c.points.find((r) => !measured.has(r));
  return p !== undefined ? { rate: p, kind: 'point-only' } : null;
}

/** The latency-bound capacity from the windows: { rate, bound }, bound
 * 'exact' (a pass just below a failure), 'atLeast' (every sweep point
 * passed) or 'below' (the first sweep point failed: rate is that point). */
function capacityOf(windows) {
  const sweep = windows.filter((w) => w.kind !== 'point-only');
  if (!sweep.length) return { rate: null, bound: null };
  const fails = sweep.filter((w) => !w.pass).map((w) => w.rate);
  if (!fails.length) return { rate: Math.max(...sweep.map((w) => w.rate)), bound: 'atLeast' };
  const hi = Math.min(...fails);
  const passes = sweep.filter((w) => w.pass && w.rate < hi).map((w) => w.rate);
  if (!passes.length) return { rate: hi, bound: 'below' };
  const lo = Math.max(...passes);
  return { rate: lo, bound: 'exact', failedAt: hi };
}

async function publish(ctx, arm, repeat) {
  const { withServer } = require('./phases'); // here: phases.js requires this file
  const c = ctx.cfg.publish;
  const info = { phase: 'publish', arm: arm.name, repeat };
  const maxPoints = c.sweep.length + c.refine + c.points.length;
  const perPoint = 0.1 + c.settle + c.window + c.drainBound + 5;
  const bound = Math.ceil(rampBound(c.connections, c.ramp) + c.warmup + c.drainBound + maxPoints * perPoint + 60);
  // No stats lines (statsInterval 0): fanout-server.js's would read the
  // allocator's arenas and server.stats() on the JS thread every second, a
  // cost the peers' scripts do not have; the final line still has the stats.
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.cpuThreads, topics: c.topics, size: c.size, rate: 0, duration: bound, statsInterval: 0,
    cpus: ctx.cpus.server, traffic: 'on', gate: 'none', extraArgs: ['--stagger', '1'],
  }, async (server, smp, run) => {
    run.mark(`ramp: ${c.connections} connections, ${c.topics} topics`);
    const tRamp = now();
    const lg = run.loadgen({ connections: c.connections, rampPerSec: c.ramp, duration: bound });
    await lg.waitSettled(rampBound(c.connections, c.ramp));
    const rampS = now() - tRamp;
    const opened = lg.openNow();
    if (opened < c.connections) throw new Error(`ramp: ${opened} of ${c.connections} connections open`);
    await sleep(0.5);

    let marks = 0;
    /** SIGUSR1 to loadgen, /proc and "ctl mark" of the server, together. */
    const markAll = async () => {
      const t = now();
      lg.mark();
      const proc = readProc(server.pid);
      const k = marks++;
      const ctl = await server.control('mark');
      return { t, k, proc, ctl };
    };
    /** Rate 0, then loadgen marked every 0.2 s until an interval brings
     * nothing (bounded): the seconds it took, or null. */
    const drain = async () => {
      await server.control('rate', ['0']);
      const tStop = now();
      while (now() - tStop < c.drainBound) {
        await sleep(0.2);
        const d = await markAll();
        const df = await lg.markFigures(d.k);
        if (df && df.msgs === 0) return now() - tStop;
      }
      return null;
    };
    // Warm-up, not measured: the lowest rate for `warmup` s right after the
    // ramp (the first seconds of traffic on fresh connections are not the
    // steady state); the first point follows without a pause.
    const first = Math.min(...c.sweep, ...c.points);
    if (c.warmup > 0) {
      run.mark(`warm-up: ${first} publishes/s for ${c.warmup} s`);
      await server.control('rate', [String(first / c.topics)]);
      await sleep(c.warmup);
    }
    const deliveredPctOf = (rate, T, f) => {
      const expected = (rate * T * f.open) / c.topics;
      return expected > 0 ? (100 * f.msgs) / expected : null;
    };
    const windows = [];
    for (let step = nextRate(c, windows); step; step = nextRate(c, windows)) {
      const { rate, kind } = step;
      const perTopic = rate / c.topics;
      run.mark(`${kind}: ${rate} publishes/s (${perTopic} msg/s per topic)`);
      // the schedule at the new rate from now (no gap when the traffic was flowing)
      const start = now();
      await server.control('rate', [String(perTopic)]);
      await sleep(Math.max(0, start + c.settle - now()));
      const w0 = await markAll();
      await sleep(Math.max(0, w0.t + c.window - now()));
      const w1 = await markAll();
      const f = await lg.markFigures(w1.k);
      if (!f) throw new Error(`${rate}/s: loadgen gave no mark for the window`);
      // After a failing point, rate 0 until the backlog is gone, so that
      // none of it lands in the next point. After a passing one there is no
      // backlog to drain, and the traffic goes on at the next rate directly:
      // a pause of the traffic costs a start-up transient of a few seconds
      // (seen here as 200-300 ms latencies at every restart, in every arm).
      const T = w1.t - w0.t;
      const deliveredPct = deliveredPctOf(rate, T, f);
      const pass = finite(deliveredPct) && deliveredPct >= c.minDeliveredPct && finite(f.p99Ms) && f.p99Ms <= c.p99BoundMs;
      const drainS = pass ? 0 : await drain();
      const cpuS = w0.proc && w1.proc ? w1.proc.cpuS - w0.proc.cpuS : null;
      const userS = w0.proc && w1.proc ? w1.proc.userS - w0.proc.userS : null;
      const published = finite(w1.ctl.published) && finite(w0.ctl.published) ? w1.ctl.published - w0.ctl.published : null;
      const expected = (rate * T * f.open) / c.topics; // every topic has open / topics subscribers
      const loadgenCpuPct = T > 0 ? (100 * f.cpu) / T : null;
      windows.push({
        rate,
        kind,
        ratePerTopic: perTopic,
        seconds: T,
        open: f.open,
        serverConnections: w1.ctl.connections,
        published,
        publishedPerS: finite(published) ? published / T : null,
        delivered: f.msgs,
        msgsPerS: f.msgs / T,
        expected,
        deliveredPct,
        serverCpuS: cpuS,
        serverCores: finite(cpuS) ? cpuS / T : null,
        userSharePct: finite(cpuS) && cpuS > 0 ? (100 * userS) / cpuS : null,
        cpuSPer1M: finite(cpuS) && f.msgs > 0 ? (cpuS / f.msgs) * 1e6 : null,
        p50Ms: f.p50Ms,
        p90Ms: f.p90Ms,
        p99Ms: f.p99Ms,
        p999Ms: f.p999Ms,
        maxMs: f.maxMs,
        loadgenCpuPct,
        loadgenLimited: finite(loadgenCpuPct) && loadgenCpuPct >= 90 && finite(deliveredPct) && deliveredPct < c.minDeliveredPct,
        drainS,
        pass,
      });
      if (!pass && drainS === null) run.mark(`${rate}/s: still delivering ${c.drainBound} s after the rate went to 0`);
    }
    const sums = lg.summaries();
    windows.sort((a, b) => a.rate - b.rate);
    return {
      figures: {
        connections: c.connections,
        topics: c.topics,
        size: c.size,
        threads: ctx.cfg.cpuThreads,
        points: c.points,
        p99BoundMs: c.p99BoundMs,
        minDeliveredPct: c.minDeliveredPct,
        pin: { server: ctx.cpus.server || null, loadgen: ctx.cpus.loadgen || null },
        rampS,
        windows,
        capacity: capacityOf(windows),
        failed: sums.reduce((n, s) => n + (s ? s.connections.failed : 0), 0),
      },
    };
  });
}

module.exports = { publish, nextRate, capacityOf };
