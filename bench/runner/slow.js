'use strict';
// The slow phase: slow clients among normal ones, under each slowConsumer
// policy ('drop', 'close', 'conflate': one arm each, in the same run). See
// bench/README.md, "slow".
//
// One run = one arm, one fresh server (fanout-server.js --seq 1
// --slow-consumer P --max-backpressure B): connection n subscribes topic
// t<n % topics>, each topic gets `rate` messages/s of `size` bytes.
//  1. `normal` connections from loadgen (they read everything), then `slow`
//     connections from bench/runner/slow-client.js, subscribed to every topic
//     (--all-topics-from) and each reading at most `readPct`% of the bytes
//     published to it per second (topics × rate × (size + 4)); rate 0;
//  2. traffic at `rate`/s per topic; `settle` s (the slow clients' kernel
//     buffers and then their queues fill), then a window of `window` s:
//     the normal clients' due-time latency (loadgen's marks), the server's
//     RSS (/proc) and its allocator's allocated bytes (stats lines), the slow
//     clients' staleness every second (now minus the due time of the newest
//     message each holds), what they received;
//  3. rate 0, the slow clients read as fast as they can (catch-up) until
//     none got a byte for `quiet` s (bounded): what each holds at the end,
//     per topic: the topic's last sequence number minus the newest it holds
//     (messages behind) and that value's age when the traffic stopped;
//  4. everything stopped by PID.

const path = require('node:path');
const { Child } = require('./history');
const { readProc } = require('./sample');
const { now, sleep, finite } = require('./util');

const CLIENT = path.join(__dirname, 'slow-client.js');

/** Sends word to the slow clients and waits for their answer (ev). */
async function ask(cl, word, ev, seconds) {
  const t = now();
  const p = cl.waitFor((j) => j.ev === ev && j.rt >= t, seconds, ev);
  cl.send(word);
  return p;
}

function median(xs) {
  const a = xs.filter(finite).sort((x, y) => x - y);
  return a.length ? a[Math.floor(a.length / 2)] : null;
}
function maxOf(xs) {
  const a = xs.filter(finite);
  return a.length ? Math.max(...a) : null;
}
function quantile(xs, q) {
  const a = xs.filter(finite).sort((x, y) => x - y);
  return a.length ? a[Math.min(a.length - 1, Math.floor(q * a.length))] : null;
}

async function slow(ctx, arm, repeat) {
  const { withServer } = require('./phases');
  const c = ctx.cfg.slow;
  const info = { phase: 'slow', arm: arm.name, repeat };
  const readRate = Math.max(1, Math.round((c.readPct / 100) * c.topics * c.rate * (c.size + (c.size > 125 ? 4 : 2))));
  const bound = Math.ceil(60 + (3 * c.normal) / c.ramp + c.settle + c.window + c.catchupBound + 60);
  const notes = [];
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.threads, topics: c.topics, size: c.size, rate: 0, duration: bound, statsInterval: 1,
    maxBackpressure: c.maxBackpressure, cpus: ctx.cpus.server, traffic: 'on', gate: 'none',
    extraArgs: ['--seq', '1', '--slow-consumer', arm.slowConsumer, '--all-topics-from', String(c.normal + 1)],
  }, async (server, smp, run) => {
    run.mark(`ramp: ${c.normal} normal connections`);
    const lg = run.loadgen({ connections: c.normal, rampPerSec: c.ramp, duration: bound, seq: true });
    await lg.waitSettled(30 + (3 * c.normal) / c.ramp);
    if (lg.openNow() < c.normal) throw new Error(`ramp: ${lg.openNow()} of ${c.normal} normal connections open`);
    run.mark(`slow clients: ${c.slow} on every topic, reading ${readRate} B/s each (${c.readPct}% of what is published to them)`);
    const cl = new Child('slow clients', process.execPath, [CLIENT, '--port', String(server.port), '--count', String(c.slow),
      '--read-rate', String(readRate)], { cpus: ctx.cpus.loadgen });
    ctx.live.add(cl);
    try {
      const con = await ask(cl, 'connect', 'connected', 60);
      if (con.open < c.slow) throw new Error(`slow clients: ${con.open} of ${c.slow} open`);
      await sleep(1);
      const statAt = (t) => [...server.stats].reverse().find((s) => s.rt <= t) || null;
      const before = { t: now(), proc: readProc(server.pid) };
      const idleStat = statAt(before.t + 0.5) || null;

      run.mark(`traffic: ${c.rate} msg/s per topic × ${c.topics} topics, ${c.size} B; settle ${c.settle} s`);
      await server.control('rate', [String(c.rate)]);
      const tTraffic = now();
      await sleep(c.settle);
      const w0 = { t: now(), proc: readProc(server.pid), ctl: await server.control('mark') };
      lg.mark();
      run.mark(`window: ${c.window} s`);
      await sleep(c.window);
      const w1 = { t: now(), proc: readProc(server.pid), ctl: await server.control('mark') };
      lg.mark();
      const f = await lg.markFigures(1);
      const stopped = await server.control('rate', ['0']);
      const tStop = now();
      const stopNs = BigInt(stopped.mono_ns);
      const atStop = await ask(cl, 'report', 'report', 30);

      run.mark(`catch-up: the slow clients read as fast as they can (until ${c.quiet} s without a byte, at most ${c.catchupBound} s)`);
      await ask(cl, 'catchup', 'catchup', 30);
      let last = atStop;
      let quietSince = now();
      while (now() - tStop < c.catchupBound) {
        await sleep(0.5);
        const r = await ask(cl, 'report', 'report', 30);
        if (r.bytes !== last.bytes) quietSince = now();
        last = r;
        if (now() - quietSince >= c.quiet) break;
      }
      const end = last;
      const final = await server.control('mark');
      const published = final.published;
      const lastSeq = Math.round(published / c.topics); // every topic got as many (rounds of every topic)
      const pairs = c.slow * c.topics;

      // The window's slices of the series.
      const inWindow = (x) => x.rt >= w0.t && x.rt <= w1.t;
      const stats = server.stats.filter(inWindow);
      const allocatedKiB = stats.map((s) => s.allocatedKiB).filter(finite);
      const ticks = cl.lines.filter((j) => j.ev === 'tick');
      const wTicks = ticks.filter(inWindow);
      const rss = smp.samples.filter((s) => s.t >= w0.t && s.t <= w1.t).map((s) => s.rssKiB);
      const behind = end.newest.map((x) => lastSeq - Number(x.seq));
      const ageAtStopMs = end.newest.map((x) => (x.due === '0' ? null : Number(stopNs - BigInt(x.due)) / 1e6));
      const T = w1.t - w0.t;
      const cpuS = w0.proc && w1.proc ? w1.proc.cpuS - w0.proc.cpuS : null;
      const slowExpected = c.rate * c.topics * c.slow * T;
      const slowGot = (wTicks.length >= 2 ? wTicks[wTicks.length - 1].msgs - wTicks[0].msgs : null);
      return {
        figures: {
          policy: arm.slowConsumer,
          normal: c.normal,
          slow: c.slow,
          topics: c.topics,
          rate: c.rate,
          size: c.size,
          maxBackpressure: c.maxBackpressure,
          readRate,
          readPct: c.readPct,
          window: T,
          normalOpen: f ? f.open : null,
          normalDeliveredPct: f ? (100 * f.msgs) / ((c.rate * T * f.open) / 1) : null,
          normalP50Ms: f ? f.p50Ms : null,
          normalP99Ms: f ? f.p99Ms : null,
          normalP999Ms: f ? f.p999Ms : null,
          normalMaxMs: f ? f.maxMs : null,
          normalGaps: f ? f.gaps : null,
          serverCores: finite(cpuS) ? cpuS / T : null,
          rssIdleKiB: before.proc ? before.proc.rssKiB : null,
          rssMedianKiB: median(rss),
          rssMaxKiB: maxOf(rss),
          allocatedIdleKiB: idleStat ? idleStat.allocatedKiB ?? null : null,
          allocatedMedianKiB: median(allocatedKiB),
          allocatedMaxKiB: maxOf(allocatedKiB),
          dropped: finite(w1.ctl.dropped) ? w1.ctl.dropped : null,
          conflated: finite(final.conflated) ? final.conflated : null,
          slowCloses: finite(final.slowCloses) ? final.slowCloses : null,
          slowClosed: end.closed,
          slowCloseCodes: end.closeCodes,
          slowMsgsInWindow: slowGot,
          slowMsgsPerClientPerS: finite(slowGot) ? slowGot / c.slow / T : null,
          pairs,
          pairsHeld: end.newest.length,
          slowReceivedPct: finite(slowGot) ? (100 * slowGot) / slowExpected : null,
          slowGaps: end.gaps,
          slowSkipped: end.skipped,
          slowBackwards: end.backwards,
          // staleness over the window: per second, the median and p90 over the slow clients still open
          ageP50MsMedian: median(wTicks.map((t) => t.ageMs.p50)),
          ageP90MsMedian: median(wTicks.map((t) => t.ageMs.p90)),
          ageMaxMs: maxOf(wTicks.map((t) => t.ageMs.max)),
          ageSeries: ticks.filter((t) => t.rt >= tTraffic).map((t) => ({ s: t.rt - tTraffic, p50: t.ageMs.p50, p90: t.ageMs.p90, open: t.open })),
          // at the end (after the catch-up): what each holds
          lastSeq,
          behindMedian: median(behind),
          behindMax: maxOf(behind),
          upToDate: behind.filter((b) => b === 0).length, // (client, topic) pairs holding the topic's last message
          ageAtStopMsMedian: median(ageAtStopMs),
          ageAtStopMsP90: quantile(ageAtStopMs, 0.9),
          catchupS: now() - tStop,
          pin: { server: ctx.cpus.server || null, clients: ctx.cpus.loadgen || null },
        },
        notes,
      };
    } finally {
      cl.send('exit');
      await cl.retire(ctx, notes, 5);
    }
  });
}

module.exports = { slow };
