'use strict';
// The sse phase (issue 34): event streams (Server-Sent Events).
//
// Per (arm, repeat), from fresh servers (bench/servers/sse-server.js):
//
// 1. fan-out: `connections` clients over `topics` topics (connection n on
//    topic t<n % topics>: the server assigns it, as onUpgrade does for
//    symphony), the server pinned like the cpu phase (one CPU, one IO
//    thread), loadgen on the other CPU speaking SSE (an http:// URL: a GET
//    with Accept: text/event-stream) or WebSocket (sse-symphony-ws). The
//    server starts at rate 0 (no traffic gate: the Node servers have no
//    publish to wrap); once every connection is open, "ctl rate R" (R
//    messages/s per topic of `size` bytes of text), a settle, then a window
//    whose edges are marked in loadgen (SIGUSR1), read from /proc (server
//    CPU) and asked of the server ("ctl mark": its publishes and the
//    deliveries its publish calls reported); then rate 0 and a drain (marks
//    every 0.5 s until one brings no message: a server that fell behind
//    writes its queue; bounded by drainBound). Every message is checked by loadgen: its size and bytes
//    (--check-size) and its topic's sequence number per connection (--seq:
//    duplicates, out of order, gaps). Lost = the deliveries the server's
//    publish calls reported over the run − the messages loadgen received.
// 2. parked memory (sse-symphony and sse-symphony-ws only): a fresh server,
//    idle; `memory.connections` / 2 connections opened and held, then the
//    rest: footprint (VmRSS + VmSwap) per connection over idle and marginal,
//    symphony's allocator and V8's heap per connection, as the parked phase
//    measures WebSocket.

const { withServer } = require('./phases');
const { readProc } = require('./sample');
const { now, sleep, finite } = require('./util');

const SETTLE_TIMEOUT_MIN = 30;
const rampBound = (n, r) => SETTLE_TIMEOUT_MIN + (r > 0 ? 3 * n / r : 0);

/** The counts of mark k summed over a loadgen's shards (0 when absent). */
function markSum(lg, k, field) {
  let n = 0;
  for (const s of lg.shards) {
    const e = s.markEvent(k);
    if (e && Number.isFinite(e[field])) n += e[field];
  }
  return n;
}

/** Waits until the server's stats lines count n connections (bounded). */
async function serverHas(server, n, timeout) {
  const t1 = now() + timeout;
  for (;;) {
    const st = server.lastStats();
    if (st && st.connections >= n) return true;
    if (!server.alive || now() > t1) return false;
    await sleep(0.1);
  }
}

async function fanout(ctx, arm, repeat) {
  const c = ctx.cfg.sse;
  const info = { phase: 'sse', arm: arm.name, repeat, part: 'fanout' };
  const bound = rampBound(c.connections, c.ramp) + c.settle + c.window + c.drain + c.drainBound + 60;
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.cpuThreads, topics: c.topics, size: c.size, rate: 0,
    duration: bound, cpus: ctx.cpus.server, gate: 'none', traffic: 'on',
  }, async (server, smp, run) => {
    run.mark(`fan-out: ramp ${c.connections} (${arm.sseClient === 'sse' ? 'SSE' : 'WebSocket'})`);
    const lg = run.loadgen({ connections: c.connections, rampPerSec: c.ramp, duration: bound, sse: arm.sseClient === 'sse',
      seq: true, checkSize: c.size });
    await lg.waitSettled(rampBound(c.connections, c.ramp));
    const open = lg.open();
    const held = await serverHas(server, open, 10);
    run.mark('fan-out: traffic');
    await server.control('rate', [String(c.rate)]);
    await sleep(c.settle);
    lg.mark(); // mark 0: the ramp and the settle
    const p0 = readProc(server.pid);
    const m0 = await server.control('mark');
    const ta = now();
    run.mark('fan-out: window');
    await sleep(c.window);
    lg.mark(); // mark 1: the window
    const p1 = readProc(server.pid);
    const m1 = await server.control('mark');
    const tb = now();
    run.mark('fan-out: drain');
    await server.control('rate', ['0']);
    await sleep(c.drain);
    // The drain: marks every 0.5 s until one brings no message (a server
    // that fell behind still has its queue to write), bounded.
    let k = 2;
    let drained = false;
    const tDrain = now() + c.drainBound;
    for (;;) {
      lg.mark();
      const d = await lg.markFigures(k);
      if (!d) break;
      if (d.msgs === 0) {
        drained = true;
        break;
      }
      if (now() > tDrain) break;
      k++;
      await sleep(0.5);
    }
    const m2 = await server.control('mark');
    const w = await lg.markFigures(1);
    const before = await lg.markFigures(0);
    const tails = [];
    for (let j = 2; j <= k; j++) tails.push(await lg.markFigures(j));
    const sums = await lg.stop(20);
    if (!w || !before || tails.some((x) => !x)) throw new Error('sse: loadgen printed no marks');
    const after = { msgs: 0, dups: 0, back: 0, gaps: 0 };
    for (const x of tails) for (const f of Object.keys(after)) after[f] += x[f];
    const marks = Array.from({ length: k + 1 }, (_, j) => j);
    const markTotal = (field) => marks.reduce((n, j) => n + markSum(lg, j, field), 0);
    const cpuS = p0 && p1 ? p1.cpuS - p0.cpuS : null;
    const userS = p0 && p1 ? p1.userS - p0.userS : null;
    const dt = w.dt;
    const received = before.msgs + w.msgs + after.msgs; // every message of the run
    const expected = w.open * c.rate * dt;
    const deliveredPct = expected > 0 ? (100 * w.msgs) / expected : null;
    const lgCpuPct = dt > 0 ? (100 * w.cpu) / dt : null;
    const sum = (f) => sums.reduce((x, s) => x + (s ? f(s) || 0 : 0), 0);
    return {
      figures: {
        client: arm.sseClient,
        connections: w.open,
        serverConnections: m1.connections ?? null,
        held,
        seconds: dt,
        rate: c.rate,
        topics: c.topics,
        size: c.size,
        offeredPerS: w.open * c.rate,
        msgsPerS: dt > 0 ? w.msgs / dt : null,
        deliveredPct,
        serverCores: finite(cpuS) && dt > 0 ? cpuS / (tb - ta) : null,
        userSharePct: finite(cpuS) && cpuS > 0 ? (100 * userS) / cpuS : null,
        cpuSPer1M: finite(cpuS) && w.msgs > 0 ? (cpuS / w.msgs) * 1e6 : null,
        p50ms: w.p50Ms,
        p99ms: w.p99Ms,
        p999ms: w.p999Ms,
        maxMs: w.maxMs,
        loadgenCpuPct: lgCpuPct,
        loadgenLimited: lgCpuPct >= 90 && finite(deliveredPct) && deliveredPct < 99,
        publishedInWindow: m1.published - m0.published,
        serverDeliveriesInWindow: m1.deliveries - m0.deliveries,
        // the whole run: what the server's publish calls reported against what loadgen got
        serverDeliveries: m2.deliveries,
        received,
        drained,
        drainS: now() - tb,
        lost: drained ? m2.deliveries - received : null,
        dups: before.dups + w.dups + after.dups,
        back: before.back + w.back + after.back,
        gaps: before.gaps + w.gaps + after.gaps,
        checked: markTotal('checked'),
        badPayloads: markTotal('bad'),
        otherEvents: sum((s) => s.sse && s.sse.other_events),
        failed: sum((s) => s.connections && s.connections.failed),
        rssKiB: p1 ? p1.rssKiB : null,
      },
    };
  });
}

/** One level's footprint etc. at time t (as the parked phase). */
function statsAt(server, t) {
  let best = null;
  for (const s of server.stats) if (s.rt <= t + 0.6 && (!best || s.rt > best.rt)) best = s;
  return best;
}

const perConn = (kib, n) => (finite(kib) && n > 0 ? (kib * 1024) / n : null);

async function parked(ctx, arm, repeat) {
  const c = ctx.cfg.sse.memory;
  const info = { phase: 'sse', arm: arm.name, repeat, part: 'parked' };
  const levels = [Math.floor(c.connections / 2), c.connections];
  const bound = c.idle + levels.length * (rampBound(c.connections, c.ramp) + c.settle) + 60;
  const measure = ctx.cfg.measure;
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.threads, topics: ctx.cfg.sse.topics, size: ctx.cfg.sse.size, rate: 0,
    duration: bound, cpus: ctx.cpus.server, gate: 'none', traffic: 'on',
  }, async (server, smp, run) => {
    run.mark('parked: idle');
    await sleep(c.idle);
    const tIdle = now();
    const idle = smp.footprint(tIdle - measure, tIdle);
    const idleStats = statsAt(server, tIdle);
    const out = [];
    let prev = 0;
    const lgs = [];
    for (const [k, n] of levels.entries()) {
      run.mark(`parked: level ${k + 1}, ${n} (${arm.sseClient === 'sse' ? 'SSE' : 'WebSocket'})`);
      const lg = run.loadgen({ connections: n - prev, rampPerSec: c.ramp, duration: bound, sse: arm.sseClient === 'sse' });
      lgs.push(lg);
      await lg.waitSettled(rampBound(n - prev, c.ramp));
      await sleep(c.settle);
      const t = now();
      const st = statsAt(server, t);
      out.push({ target: n, open: lgs.reduce((x, l) => x + l.open(), 0), fpKiB: smp.footprint(t - measure, t), stats: st });
      prev = n;
    }
    const [first, last] = out;
    const failed = lgs.reduce((x, l) => x + l.summaries().reduce((a, s) => a + (s ? s.connections.failed : 0), 0), 0);
    return {
      figures: {
        client: arm.sseClient,
        idleKiB: idle,
        levels: out.map((l) => ({ target: l.target, open: l.open, fpKiB: l.fpKiB, serverConnections: l.stats ? l.stats.connections : null,
          allocatedKiB: l.stats ? l.stats.allocatedKiB : null, heapUsedKiB: l.stats ? l.stats.heapUsedKiB : null })),
        n: last.open,
        serverConnections: last.stats ? last.stats.connections : null,
        sseConnections: last.stats ? last.stats.sseConnections ?? null : null,
        bytesPerConnOverIdle: perConn(last.fpKiB - idle, last.open),
        bytesPerConnMarginal: perConn(last.fpKiB - first.fpKiB, last.open - first.open),
        allocBytesPerConn: idleStats && last.stats && finite(last.stats.allocatedKiB)
          ? perConn(last.stats.allocatedKiB - idleStats.allocatedKiB, last.open) : null,
        heapBytesPerConn: idleStats && last.stats && finite(last.stats.heapUsedKiB)
          ? perConn(last.stats.heapUsedKiB - idleStats.heapUsedKiB, last.open) : null,
        failed,
      },
    };
  });
}

async function sse(ctx, arm, repeat) {
  const notes = [];
  const fan = await fanout(ctx, arm, repeat);
  notes.push(...fan.notes);
  let memory = null;
  if (arm.sseMemory) {
    const m = await parked(ctx, arm, repeat);
    notes.push(...m.notes.map((n) => `parked: ${n}`));
    memory = m.figures;
  }
  const f = fan.figures;
  if (!f.drained) notes.push(`not drained: loadgen still received messages ${Math.round(ctx.cfg.sse.drainBound)} s after the traffic stopped (lost not counted)`);
  else if (f.lost !== 0) notes.push(`lost: the server's publish calls reported ${f.serverDeliveries} deliveries, loadgen received ${f.received}`);
  if (f.gaps || f.dups || f.back || f.badPayloads) notes.push(`checks: gaps ${f.gaps}, duplicates ${f.dups}, out of order ${f.back}, bad payloads ${f.badPayloads}`);
  return { figures: { ...f, memory }, notes, allocator: fan.allocator, native: fan.native };
}

module.exports = { sse };
