'use strict';
// The phases. Each function runs one (arm, repeat) of its phase from
// a fresh server process to its exit, and returns the figures of that run.
// Every wait is bounded; every process is stopped on the way out.

const { ServerProc, Loadgen } = require('./procs');
const { wrongBuild } = require('./arms');
const { Sampler, readProc } = require('./sample');
const { now, sleep, median, slope, finite } = require('./util');

const SETTLE_TIMEOUT_MIN = 30; // s: floor of the bound on a ramp

/** A bound for a ramp of n connections at r/s. */
function rampBound(n, r) {
  return SETTLE_TIMEOUT_MIN + (r > 0 ? 3 * n / r : 0);
}

/**
 * Runs fn(server, sampler, run) with a fresh server of `arm`; run.loadgen()
 * starts loadgens that are stopped when fn ends (or throws). Returns what fn
 * returned plus the server's own records.
 */
async function withServer(ctx, info, sopts, fn) {
  const server = await ServerProc.start({ statsInterval: 1, ...sopts });
  ctx.live.add(server);
  // The symphony build the arm asked for (its checkout, its allocator), or no run.
  const wrong = wrongBuild(sopts.arm, server.loaded);
  if (wrong) {
    await server.stop(10);
    ctx.live.delete(server);
    throw new Error(wrong);
  }
  const loadgens = [];
  const sampler = new Sampler(server.pid, {
    hz: ctx.cfg.sampleHz,
    onSample: (s) => {
      ctx.status.fpKiB = s.fpKiB;
      ctx.rec.sample(info, server, s);
    },
  });
  const run = {
    loadgen(o) {
      const lg = new Loadgen({
        port: server.port,
        sources: ctx.cfg.sources,
        shardMax: ctx.cfg.shardMax,
        cpus: ctx.cpus.loadgen,
        serverPid: server.pid,
        maxPending: ctx.cfg.maxPending,
        tls: !!sopts.arm.tls,
        deflate: sopts.payload === 'json', // the JSON shape's client always offers it, as a browser does
        ...o,
      });
      for (const s of lg.shards) ctx.live.add(s);
      loadgens.push(lg);
      return lg;
    },
    mark(step, extra = {}) {
      ctx.status.step = step;
      ctx.rec.event(info, { ev: 'mark', step, t: now(), ...extra });
      ctx.progress(true);
    },
  };
  let out;
  let error = null;
  try {
    out = await fn(server, sampler, run);
  } catch (err) {
    error = err;
  }
  for (const lg of loadgens) await lg.stop(20);
  const final = await server.stop(30);
  sampler.take();
  sampler.stop();
  ctx.live.delete(server);
  for (const lg of loadgens) for (const s of lg.shards) ctx.live.delete(s);
  for (const st of server.stats) ctx.rec.stat(info, server, st);
  for (const lg of loadgens) {
    for (const s of lg.shards) {
      for (const e of s.events) ctx.rec.event(info, { ...e, source: 'loadgen', pid: s.pid });
      ctx.rec.event(info, { ev: 'loadgen-summary', pid: s.pid, args: s.args, summary: s.summary, exit: s.exitInfo, notes: s.notes });
    }
  }
  ctx.rec.event(info, { ev: 'server-final', pid: server.pid, final, exit: server.exitInfo, odd: server.odd, gate: server.gateLog });
  const notes = [];
  const allocNames = [...new Set(server.stats.map((s) => s.allocator).filter(Boolean))];
  if (sopts.arm.allocator && allocNames.length && !allocNames.includes(sopts.arm.allocator)) {
    error = error || new Error(`${sopts.arm.name}: the server reports allocator ${allocNames.join('/')}, expected ${sopts.arm.allocator}`);
  }
  for (const l of server.odd) notes.push(`server: ${l}`);
  if (final && final.ws) {
    notes.push(`ws ${final.ws.version}, bufferutil ${final.ws.bufferutil}`
      + `${final.ws.perMessageDeflate ? `, perMessageDeflate ${JSON.stringify(final.ws.perMessageDeflate)}` : ''}`);
  }
  if (final && final.skipped) notes.push(`server: ${final.skipped} messages skipped after publishing stalls > 1 s`);
  if (server.exitInfo && server.exitInfo.code !== 0 && server.exitInfo.signal !== 'SIGTERM') {
    notes.push(`server exit: ${server.exitInfo.code ?? server.exitInfo.signal}`);
  }
  for (const lg of loadgens) for (const n of lg.notes()) if (!/^loadgen: RLIMIT/.test(n)) notes.push(`loadgen: ${n}`);
  if (error) {
    error.notes = notes;
    throw error;
  }
  return { ...out, notes, allocator: allocNames.join('/') || null, native: server.loaded ? server.loaded.native : null,
    samplesN: sampler.samples.length };
}

/** The allocator and build of a run made of several servers (withServer's
 * results), for results.json. */
function loadedOf(parts) {
  const one = (k) => [...new Set(parts.map((r) => r[k]).filter(Boolean))].join(' ') || null;
  return { allocator: one('allocator'), native: one('native') };
}

/** Waits until the server's stats lines say pred(connections). */
async function waitServer(server, pred, timeout, what) {
  const t1 = now() + timeout;
  for (;;) {
    const st = server.lastStats();
    if (st && pred(st.connections)) return now();
    if (!server.alive) throw new Error(`server exited while waiting for ${what}`);
    if (now() > t1) throw new Error(`server: ${what} not within ${timeout} s (connections ${st ? st.connections : '?'})`);
    await sleep(0.1);
  }
}

/** Allocator/heap figures of the server's stats line nearest to t. */
function statsAt(server, t) {
  let best = null;
  for (const s of server.stats) if (s.rt <= t + 0.6 && (!best || s.rt > best.rt)) best = s;
  return best;
}

function perConn(kib, n) {
  return finite(kib) && n > 0 ? (kib * 1024) / n : null;
}

// ---- parked ---------------------------------------------------------------

async function parked(ctx, arm, repeat) {
  const c = ctx.cfg.parked;
  const info = { phase: 'parked', arm: arm.name, repeat };
  const top = c.levels[c.levels.length - 1];
  const bound = c.idle + c.levels.length * (rampBound(top, c.ramp) + c.settle) + c.active + 60;
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.threads, topics: c.topics, size: c.size, rate: c.rate,
    duration: bound, cpus: ctx.cpus.server, traffic: 'off',
  }, async (server, smp, run) => {
    run.mark('idle');
    await sleep(c.idle);
    const tIdle = now();
    const idle = smp.footprint(tIdle - c.measure, tIdle);
    const idleStats = statsAt(server, tIdle);
    const lgs = [];
    const levels = [];
    let prev = 0;
    for (const [k, n] of c.levels.entries()) {
      run.mark(`level ${k + 1}: ${n} parked`);
      const lg = run.loadgen({ connections: n - prev, rampPerSec: c.ramp, duration: bound });
      lgs.push(lg);
      await lg.waitSettled(rampBound(n - prev, c.ramp));
      await sleep(c.settle);
      const t = now();
      const open = lgs.reduce((s, l) => s + l.open(), 0);
      const st = statsAt(server, t);
      levels.push({ target: n, open, fpKiB: smp.footprint(t - c.measure, t), t, stats: st, serverConnections: st ? st.connections : null });
      prev = n;
    }
    // The same connections, active.
    run.mark('active');
    const ta = await server.setTraffic(true);
    await sleep(c.active);
    const tb = now();
    const warm = Math.min(2, c.active / 4);
    const last = levels[levels.length - 1];
    const activeFp = smp.footprint(tb - c.measure, tb);
    const slopeKiBs = slope(smp.between(ta + warm, tb).map((s) => ({ x: s.t, y: s.fpKiB })));
    const cpuS = smp.delta('cpuS', ta + warm, tb);
    const activeStats = statsAt(server, tb);
    for (const lg of lgs) await lg.stop(20);
    // delivered during the active window (whole loadgen seconds)
    let msgs = 0;
    let secs = 0;
    for (const lg of lgs) {
      const d = lg.delivered(ta + warm, tb);
      if (d) {
        msgs += d.messages;
        secs = Math.max(secs, d.seconds);
      }
    }
    let openSum = 0;
    for (const lg of lgs) {
      const d = lg.delivered(ta + warm, tb);
      if (d) openSum += d.open;
    }
    const expected = openSum * c.rate * secs;
    const first = levels[0];
    const figures = {
      idleKiB: idle,
      levels: levels.map((l) => ({ target: l.target, open: l.open, fpKiB: l.fpKiB, serverConnections: l.serverConnections,
        allocatedKiB: l.stats ? l.stats.allocatedKiB : null, residentKiB: l.stats ? l.stats.residentKiB : null,
        heapUsedKiB: l.stats ? l.stats.heapUsedKiB : null })),
      n: last.open,
      bytesPerConnTotal: perConn(last.fpKiB, last.open),
      bytesPerConnOverIdle: perConn(last.fpKiB - idle, last.open),
      bytesPerConnMarginal: levels.length > 1 ? perConn(last.fpKiB - first.fpKiB, last.open - first.open) : null,
      allocBytesPerConn: idleStats && last.stats && finite(last.stats.allocatedKiB)
        ? perConn(last.stats.allocatedKiB - idleStats.allocatedKiB, last.open) : null,
      heapBytesPerConn: idleStats && last.stats && finite(last.stats.heapUsedKiB)
        ? perConn(last.stats.heapUsedKiB - idleStats.heapUsedKiB, last.open) : null,
      activeKiB: activeFp,
      activeDeltaKiB: finite(activeFp) && finite(last.fpKiB) ? activeFp - last.fpKiB : null,
      activeSlopeKiBs: slopeKiBs,
      activeMsgsPerS: secs > 0 ? msgs / secs : null,
      activeDeliveredPct: expected > 0 ? (100 * msgs) / expected : null,
      activeCpuPct: finite(cpuS) ? (100 * cpuS) / (tb - ta - warm) : null,
      activeRate: c.rate,
      activeAllocatedKiB: activeStats ? activeStats.allocatedKiB : null,
      failed: lgs.reduce((s, l) => s + l.summaries().reduce((a, x) => a + (x ? x.connections.failed : 0), 0), 0),
    };
    return { figures };
  });
}

// ---- cpu --------------------------------------------------------------------

async function cpuShape(ctx, arm, repeat, shape) {
  const c = ctx.cfg.cpu;
  const info = { phase: 'cpu', arm: arm.name, repeat, shape: shape.name };
  const hold = c.settle + c.window + 2; // the gate opens within ~1 s of the settle
  const bound = rampBound(c.connections, c.ramp) + hold + 60;
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.cpuThreads, topics: c.topics, size: shape.size, rate: shape.rate,
    duration: bound, cpus: ctx.cpus.server, traffic: 'off',
  }, async (server, smp, run) => {
    run.mark(`${shape.name}: ramp`);
    const lg = run.loadgen({ connections: c.connections, rampPerSec: c.ramp, hold, duration: bound });
    const rampLimit = rampBound(c.connections, c.ramp);
    let rampNote = null;
    let sums;
    let a;
    let b;
    try {
      await lg.waitSettled(rampLimit);
    } catch {
      // A server that cannot keep up may never let the ramp finish: measure
      // what is open anyway, over a window the runner times itself.
      rampNote = `ramp not settled after ${Math.round(rampLimit)} s (${lg.open()} of ${c.connections} open): measured as it was`;
    }
    // The ramp ran with the traffic gate off; now the traffic starts.
    const tOn = await server.setTraffic(true);
    run.mark(`${shape.name}: measure`);
    if (!rampNote) {
      sums = await lg.done(hold + 30);
      const s0 = sums[0];
      if (!s0 || !s0.steady) throw new Error(`cpu ${shape.name}: loadgen gave no steady window`);
      // Window: from settle seconds after the traffic started to the end of the hold.
      a = tOn + c.settle;
      b = lg.t0 + s0.run_s;
    } else {
      a = tOn + c.settle;
      await sleep(c.settle + c.window);
      b = now();
      sums = await lg.stop(20);
    }
    const d = lg.delivered(a, b);
    const wa = d.a;
    const wb = d.b;
    const cpuS = smp.delta('cpuS', wa, wb);
    const userS = smp.delta('userS', wa, wb);
    const minflt = smp.delta('minflt', wa, wb);
    const open = d.open;
    const expected = open * shape.rate * d.seconds;
    const publishedBytes = c.topics * shape.rate * shape.size * d.seconds;
    // latency over loadgen's steady window; over the whole run if it never settled
    const hist = (s) => (s && s.steady && s.steady.latency_us ? s.steady.latency_us : s && s.latency_us);
    const lat = (k) => Math.max(...sums.map((s) => (hist(s) ? hist(s)[k] : NaN))) / 1000;
    const lgCpu = Math.max(...sums.map((s) => (s && s.steady ? s.steady.cpu_percent : s && s.cpu ? s.cpu.run_percent : NaN)));
    const deliveredPct = expected > 0 ? (100 * d.messages) / expected : null;
    return {
      figures: {
        shape: shape.name,
        connections: open,
        seconds: d.seconds,
        msgsPerS: d.seconds > 0 ? d.messages / d.seconds : null,
        offeredPerS: open * shape.rate,
        deliveredPct,
        serverCores: finite(cpuS) ? cpuS / d.seconds : null,
        userSharePct: finite(cpuS) && cpuS > 0 ? (100 * userS) / cpuS : null,
        cpuSPer1M: finite(cpuS) && d.messages > 0 ? (cpuS / d.messages) * 1e6 : null,
        cpuSPerGB: finite(cpuS) && d.bytes + publishedBytes > 0 ? cpuS / ((d.bytes + publishedBytes) / 1e9) : null,
        minfltPerS: finite(minflt) ? minflt / d.seconds : null,
        p50ms: lat('p50'),
        p99ms: lat('p99'),
        p999ms: lat('p99_9'),
        loadgenCpuPct: lgCpu,
        loadgenLimited: lgCpu >= 90 && finite(deliveredPct) && deliveredPct < 99,
        failed: sums.reduce((n, s) => n + (s ? s.connections.failed : 0), 0),
        rampIncomplete: !!rampNote,
      },
      rampNote,
    };
  });
}

async function cpu(ctx, arm, repeat) {
  const shapes = [];
  const notes = [];
  const parts = [];
  for (const shape of ctx.cfg.cpu.shapes) {
    const r = await cpuShape(ctx, arm, repeat, shape);
    shapes.push(r.figures);
    if (r.rampNote) notes.push(`${shape.name}: ${r.rampNote}`);
    notes.push(...r.notes);
    parts.push(r);
  }
  return { figures: { shapes }, notes, ...loadedOf(parts) };
}

// ---- json: the JSON shape, with and without permessage-deflate ---------------

/** The delta of a counter of the server's stats lines over [a, b] (null
 * when the server does not report it). */
function statsDelta(server, k, a, b) {
  const s0 = statsAt(server, a);
  const s1 = statsAt(server, b);
  return s0 && s1 && finite(s0[k]) && finite(s1[k]) ? s1[k] - s0[k] : null;
}

/**
 * One server, the JSON shape (bench/servers/json-trade.js, text, `rate` per
 * connection over `topics`): idle; `connections` ramp with the traffic off,
 * every one offering permessage-deflate (the arm decides whether the server
 * accepts); parked (footprint per connection, deflate negotiated or not);
 * then the traffic, and after `settle` s a window of `window` s: wire bytes
 * per delivered message (payload as it came: compressed where it was),
 * inflated bytes, server CPU per 1M delivered, latency, and the footprint
 * per connection while active.
 */
async function json(ctx, arm, repeat) {
  const c = ctx.cfg.json;
  const info = { phase: 'json', arm: arm.name, repeat };
  const hold = c.parked + c.settle + c.window + 3; // after the ramp: parked, then the traffic
  const bound = c.idle + rampBound(c.connections, c.ramp) + hold + 60;
  const measure = ctx.cfg.measure;
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.cpuThreads, topics: c.topics, size: 64, rate: c.rate, payload: 'json',
    duration: bound, cpus: ctx.cpus.server, traffic: 'off',
  }, async (server, smp, run) => {
    run.mark('idle');
    await sleep(c.idle);
    const tIdle = now();
    const idle = smp.footprint(tIdle - measure, tIdle);
    const idleStats = statsAt(server, tIdle);
    run.mark(`ramp to ${c.connections}`);
    const lg = run.loadgen({ connections: c.connections, rampPerSec: c.ramp, hold, duration: bound });
    await lg.waitSettled(rampBound(c.connections, c.ramp));
    run.mark('parked');
    await sleep(c.parked);
    const tParked = now();
    const parkedKiB = smp.footprint(tParked - measure, tParked);
    const parkedStats = statsAt(server, tParked);
    const n = lg.open();
    const tOn = await server.setTraffic(true);
    run.mark('traffic');
    const sums = await lg.done(c.settle + c.window + 40);
    const s0 = sums[0];
    if (!s0 || !s0.steady) throw new Error('json: loadgen gave no steady window');
    const d = lg.delivered(tOn + c.settle, lg.t0 + s0.run_s);
    const cpuS = smp.delta('cpuS', d.a, d.b);
    const userS = smp.delta('userS', d.a, d.b);
    const activeKiB = smp.footprint(d.b - measure, d.b);
    const expected = d.open * c.rate * d.seconds;
    const deliveredPct = expected > 0 ? (100 * d.messages) / expected : null;
    const lat = (k) => Math.max(...sums.map((s) => (s && s.steady && s.steady.latency_us ? s.steady.latency_us[k] : NaN))) / 1000;
    const lgCpu = Math.max(...sums.map((s) => (s && s.steady ? s.steady.cpu_percent : NaN)));
    const sum = (f) => sums.reduce((x, s) => x + (s ? f(s) : 0), 0);
    const compressions = statsDelta(server, 'compressed', d.a, d.b);
    const compressUs = statsDelta(server, 'compressMicros', d.a, d.b);
    const compressIn = statsDelta(server, 'compressBytesIn', d.a, d.b);
    const compressOut = statsDelta(server, 'compressBytesOut', d.a, d.b);
    const per = (x, y) => (finite(x) && finite(y) && y > 0 ? x / y : null);
    return {
      figures: {
        n,
        negotiated: sum((s) => (s.deflate ? s.deflate.negotiated : 0)),
        refusedContext: sum((s) => (s.deflate ? s.deflate.refused_context : 0)),
        inflateErrors: sum((s) => (s.deflate ? s.deflate.inflate_errors : 0)),
        failed: sum((s) => s.connections.failed),
        idleKiB: idle,
        parkedKiB,
        activeKiB,
        bytesPerConnOverIdle: perConn(parkedKiB - idle, n),
        activeBytesPerConnOverIdle: perConn(activeKiB - idle, d.open),
        allocBytesPerConn: idleStats && parkedStats && finite(parkedStats.allocatedKiB)
          ? perConn(parkedStats.allocatedKiB - idleStats.allocatedKiB, n) : null,
        connections: d.open,
        seconds: d.seconds,
        msgsPerS: per(d.messages, d.seconds),
        offeredPerS: d.open * c.rate,
        deliveredPct,
        wireBytesPerMsg: per(d.wire, d.messages),
        bytesPerMsg: per(d.bytes, d.messages),
        wireRatio: per(d.wire, d.bytes),
        compressedPct: finite(d.compressed) && d.messages > 0 ? (100 * d.compressed) / d.messages : null,
        serverCores: per(cpuS, d.seconds),
        userSharePct: finite(cpuS) && cpuS > 0 ? (100 * userS) / cpuS : null,
        cpuSPer1M: finite(cpuS) && d.messages > 0 ? (cpuS / d.messages) * 1e6 : null,
        p50ms: lat('p50'),
        p99ms: lat('p99'),
        p999ms: lat('p99_9'),
        loadgenCpuPct: lgCpu,
        loadgenLimited: lgCpu >= 90 && finite(deliveredPct) && deliveredPct < 99,
        compressions,
        compressUsPerMsg: per(compressUs, compressions),
        compressRatio: per(compressOut, compressIn),
      },
    };
  });
}

// ---- handshakes (TLS arms) ----------------------------------------------------

/**
 * Full TLS + WebSocket handshakes against a server with one IO thread: n
 * connections opened as fast as --max-pending allows, every one a new full
 * handshake (loadgen keeps no sessions). The figure is handshakes per second
 * of the server's CPU time (its IO thread, and its JS thread that sees each
 * open), i.e. per core; the wall rate depends on how much of the 2 cores the
 * client takes, and is reported beside it.
 */
async function handshakesKey(ctx, arm, repeat, key) {
  const c = ctx.cfg.handshakes;
  const info = { phase: 'handshakes', arm: arm.name, repeat, key };
  const bound = c.bound;
  const keyArm = { ...arm, env: { ...arm.env, BENCH_TLS: key } };
  return withServer(ctx, info, {
    arm: keyArm, threads: 1, topics: 1, size: 64, rate: 1,
    duration: bound + 30, cpus: ctx.cpus.server, traffic: 'off',
  }, async (server, smp, run) => {
    await sleep(1);
    run.mark(`${key}: ${c.connections} handshakes`);
    // The server's CPU read directly at both ends (the sampler's 4 Hz is
    // too coarse for a ramp of a few seconds).
    const p0 = readProc(server.pid);
    const t0 = now();
    const lg = run.loadgen({ connections: c.connections, maxPending: c.pending, hold: 2, duration: bound });
    let t1;
    let note = null;
    try {
      t1 = await lg.waitSettled(bound);
    } catch {
      t1 = now();
      note = `${key}: not all ${c.connections} handshakes within ${bound} s: measured as it was`;
    }
    const p1 = readProc(server.pid);
    const cpuS = p0 && p1 ? p1.cpuS - p0.cpuS : null;
    const sums = await lg.stop(20);
    const opened = sums.reduce((n, s) => n + (s ? s.connections.opened : 0), 0);
    return {
      figures: {
        key,
        connections: opened,
        seconds: t1 - t0,
        wallPerS: opened / (t1 - t0),
        serverCpuS: cpuS,
        perCoreS: finite(cpuS) && cpuS > 0 ? opened / cpuS : null,
        failed: sums.reduce((n, s) => n + (s ? s.connections.failed : 0), 0),
      },
      note,
    };
  });
}

async function handshakes(ctx, arm, repeat) {
  const keys = [];
  const notes = [];
  const parts = [];
  for (const key of ['ecdsa', 'rsa']) {
    const r = await handshakesKey(ctx, arm, repeat, key);
    keys.push(r.figures);
    if (r.note) notes.push(r.note);
    notes.push(...r.notes);
    parts.push(r);
  }
  return { figures: { keys }, notes, ...loadedOf(parts) };
}

// ---- soak -------------------------------------------------------------------

/** The footprint just before t (median of the last `measure` s). */
function before(smp, t, measure) {
  return smp.footprint(t - measure, t);
}

async function freshLow(ctx, arm, repeat) {
  const c = ctx.cfg.soak;
  const info = { phase: 'soak', arm: arm.name, repeat, part: 'fresh-low' };
  const bound = rampBound(c.trough, c.ramp) + c.freshHold + 60;
  return withServer(ctx, info, {
    arm, threads: ctx.cfg.threads, topics: c.topics, size: c.size, rate: c.rate,
    duration: bound, cpus: ctx.cpus.server, traffic: 'on',
  }, async (server, smp, run) => {
    run.mark('fresh-low');
    const lg = run.loadgen({
      connections: c.trough, rampPerSec: c.ramp, duration: bound, events: true, churn: c.churn,
      schedule: [{ target: c.trough, hold: c.freshHold }],
    });
    const tReached = await lg.waitEvent('reached', 0, rampBound(c.trough, c.ramp));
    await sleep(Math.max(0, tReached + c.freshHold - now() - 0.2));
    const t = now();
    const fp = before(smp, t, c.measure);
    return { figures: { freshLowKiB: fp, open: lg.open() }, t0: server.t0 };
  });
}

async function soak(ctx, arm, repeat) {
  const c = ctx.cfg.soak;
  const fresh = await freshLow(ctx, arm, repeat);
  const info = { phase: 'soak', arm: arm.name, repeat, part: 'cycles' };
  const schedule = [];
  for (let k = 0; k < c.cycles; k++) schedule.push({ target: c.peak, hold: c.peakHold }, { target: c.trough, hold: c.troughHold });
  schedule.push({ target: c.trough, hold: c.handoffHold }); // the quiet loadgen takes over here
  const cycleBound = rampBound(c.peak, c.ramp) + c.peakHold + c.troughHold + 30;
  const bound = c.cycles * cycleBound + c.handoffHold + c.quietHold + c.zeroHold + 120;
  const main = await withServer(ctx, info, {
    arm, threads: ctx.cfg.threads, topics: c.topics, size: c.size, rate: c.rate,
    duration: bound, cpus: ctx.cpus.server, traffic: 'on',
  }, async (server, smp, run) => {
    run.mark('soak: start');
    const tStart = now();
    const idle = before(smp, tStart, 0.6);
    const idleStats = statsAt(server, tStart) || server.stats[0] || null;
    const lg = run.loadgen({ connections: c.peak, rampPerSec: c.ramp, duration: bound, events: true, churn: c.churn, schedule });
    const cycles = [];
    for (let k = 0; k < c.cycles; k++) {
      ctx.status.cycle = `${k + 1}/${c.cycles}`;
      run.mark(`cycle ${k + 1}: ramp to ${c.peak}`);
      const tUp = await lg.waitEvent('step', 2 * k, cycleBound);
      const tPeak = await lg.waitEvent('reached', 2 * k, rampBound(c.peak, c.ramp));
      const tDown = await lg.waitEvent('step', 2 * k + 1, c.peakHold + 30);
      run.mark(`cycle ${k + 1}: drop to ${c.trough}`);
      const tLow = await lg.waitEvent('reached', 2 * k + 1, 60);
      const tNext = await lg.waitEvent('step', 2 * k + 2, c.troughHold + 30);
      const after = smp.footprint(tLow + c.afterDrop - 0.5, tLow + c.afterDrop + 0.5);
      cycles.push({
        tUp, tPeak, tDown, tLow, tNext,
        rampS: tPeak - tUp,
        peakKiB: smp.maxFootprint(tUp, tDown + 0.5),
        peakHeldKiB: before(smp, tDown, c.measure),
        troughKiB: before(smp, tNext, c.measure),
        afterDropKiB: after,
        peakStats: statsAt(server, tDown),
        troughStats: statsAt(server, tNext),
        afterDropStats: statsAt(server, tLow + c.afterDrop),
        // The reclaim's cost to delivery: the worst second while the drop
        // happens (and 10 s after), against the peak hold just before it.
        holdLatency: lg.latency(tPeak + 1, tDown),
        dropLatency: lg.latency(tDown, tLow + 10),
      });
    }
    ctx.status.cycle = null;
    // Quiet trough: the same population from a loadgen without churn, no traffic.
    run.mark('handoff to a churn-free loadgen');
    const q = run.loadgen({ connections: c.trough, rampPerSec: c.ramp, duration: bound });
    await q.waitSettled(rampBound(c.trough, c.ramp));
    await lg.stop(20);
    await waitServer(server, (n) => n <= c.trough + Math.ceil(c.trough * 0.02), 30, `back to ${c.trough} connections`);
    run.mark('quiet');
    // What the cycles cost the server (every setting serves the same load).
    const tCyclesEnd = now();
    const cyclesCost = {
      cpuS: smp.delta('cpuS', tStart, tCyclesEnd),
      sysS: smp.delta('sysS', tStart, tCyclesEnd),
      minflt: smp.delta('minflt', tStart, tCyclesEnd),
    };
    const tq0 = await server.setTraffic(false);
    await sleep(c.quietHold);
    const tq1 = now();
    const quietKiB = before(smp, tq1, c.measure);
    const quietStats = statsAt(server, tq1);
    run.mark('zero');
    await q.stop(20);
    const tz0 = await waitServer(server, (n) => n === 0, 30, 'zero connections');
    await sleep(c.zeroHold);
    const tz1 = now();
    const zeroKiB = before(smp, tz1, c.measure);
    const zeroStats = statsAt(server, tz1);
    const sums = lg.summaries();
    return {
      t0: server.t0,
      idleKiB: idle,
      idleStats,
      cyclesCost,
      cycles,
      quietKiB, zeroKiB, tq0, tq1, tz0, tz1, quietStats, zeroStats,
      churn: sums.map((s) => (s ? { opened: s.connections && s.connections.opened, failed: s.connections && s.connections.failed, churn: s.churn || null } : null)),
      series: smp.samples.map((s) => [Math.round((s.t - server.t0) * 100) / 100, s.fpKiB]),
      connSeries: server.stats.map((s) => [Math.round((s.rt - server.t0) * 100) / 100, s.connections]),
    };
  });
  const first = main.cycles[0];
  const last = main.cycles[main.cycles.length - 1];
  const freshKiB = fresh.figures.freshLowKiB;
  const figures = {
    freshLowKiB: freshKiB,
    idleKiB: main.idleKiB,
    quietKiB: main.quietKiB,
    zeroKiB: main.zeroKiB,
    cycles: main.cycles.map((cy) => ({
      peakKiB: cy.peakKiB,
      peakHeldKiB: cy.peakHeldKiB,
      troughKiB: cy.troughKiB,
      troughPctOfPeak: cy.peakKiB ? (100 * cy.troughKiB) / cy.peakKiB : null,
      troughOverFreshLow: freshKiB ? cy.troughKiB / freshKiB : null,
      afterDropKiB: cy.afterDropKiB,
      rampS: cy.rampS,
      peakAllocatedKiB: cy.peakStats ? cy.peakStats.allocatedKiB : null,
      troughAllocatedKiB: cy.troughStats ? cy.troughStats.allocatedKiB : null,
      troughResidentKiB: cy.troughStats ? cy.troughStats.residentKiB : null,
      peakResidentKiB: cy.peakStats ? cy.peakStats.residentKiB : null,
      residentTroughPctOfPeak: cy.peakStats && cy.troughStats && cy.peakStats.residentKiB
        ? (100 * cy.troughStats.residentKiB) / cy.peakStats.residentKiB : null,
      peakPagesKiB: cy.peakStats && finite(cy.peakStats.pagesKiB) ? cy.peakStats.pagesKiB : null,
      troughPagesKiB: cy.troughStats && finite(cy.troughStats.pagesKiB) ? cy.troughStats.pagesKiB : null,
      pagesTroughPctOfPeak: cy.peakStats && cy.troughStats && cy.peakStats.pagesKiB
        ? (100 * cy.troughStats.pagesKiB) / cy.peakStats.pagesKiB : null,
      afterDropPagesKiB: cy.afterDropStats && finite(cy.afterDropStats.pagesKiB) ? cy.afterDropStats.pagesKiB : null,
      holdP999Ms: cy.holdLatency ? cy.holdLatency.p999Ms : null,
      dropP999Ms: cy.dropLatency ? cy.dropLatency.p999Ms : null,
      dropMaxMs: cy.dropLatency ? cy.dropLatency.maxMs : null,
      overIdleTroughPctOfPeak: cy.peakKiB - main.idleKiB > 0 ? (100 * (cy.troughKiB - main.idleKiB)) / (cy.peakKiB - main.idleKiB) : null,
      troughHeapUsedKiB: cy.troughStats ? cy.troughStats.heapUsedKiB : null,
      tUp: cy.tUp - main.t0, tPeak: cy.tPeak - main.t0, tDown: cy.tDown - main.t0, tLow: cy.tLow - main.t0, tNext: cy.tNext - main.t0,
    })),
    peakGrowthKiB: last.peakKiB - first.peakKiB,
    troughGrowthKiB: last.troughKiB - first.troughKiB,
    troughGrowthPctOfPeak: first.peakKiB ? (100 * (last.troughKiB - first.troughKiB)) / first.peakKiB : null,
    peakGrowthPctOfPeak: first.peakKiB ? (100 * (last.peakKiB - first.peakKiB)) / first.peakKiB : null,
    quietAllocatedKiB: main.quietStats ? main.quietStats.allocatedKiB : null,
    quietResidentKiB: main.quietStats ? main.quietStats.residentKiB : null,
    zeroAllocatedKiB: main.zeroStats ? main.zeroStats.allocatedKiB : null,
    zeroResidentKiB: main.zeroStats ? main.zeroStats.residentKiB : null,
    idleResidentKiB: main.idleStats ? main.idleStats.residentKiB : null,
    cyclesCpuS: main.cyclesCost ? main.cyclesCost.cpuS : null,
    cyclesSysS: main.cyclesCost ? main.cyclesCost.sysS : null,
    cyclesMinflt: main.cyclesCost ? main.cyclesCost.minflt : null,
    idlePagesKiB: main.idleStats && finite(main.idleStats.pagesKiB) ? main.idleStats.pagesKiB : null,
    zeroPagesKiB: main.zeroStats && finite(main.zeroStats.pagesKiB) ? main.zeroStats.pagesKiB : null,
    zeroMetadataKiB: main.zeroStats && finite(main.zeroStats.metadataKiB) ? main.zeroStats.metadataKiB : null,
    zeroOverIdle: main.idleKiB ? main.zeroKiB / main.idleKiB : null,
    reclaims: main.zeroStats && main.zeroStats.reclaims !== undefined ? main.zeroStats.reclaims : null,
    reclaimMaxUs: main.zeroStats && main.zeroStats.reclaimMaxUs !== undefined ? main.zeroStats.reclaimMaxUs : null,
    reclaimMoved: main.zeroStats && main.zeroStats.reclaimMoved !== undefined ? main.zeroStats.reclaimMoved : null,
    tq0: main.tq0 - main.t0, tq1: main.tq1 - main.t0, tz0: main.tz0 - main.t0, tz1: main.tz1 - main.t0,
    churn: main.churn,
  };
  return {
    figures,
    series: { footprint: main.series, connections: main.connSeries },
    notes: [...fresh.notes, ...main.notes],
    allocator: main.allocator,
    native: main.native,
  };
}

// The bus phase (several processes over Redis) lives in its own file.
const { bus } = require('./bus');
// The publish phase (issue 14: publish-heavy, N topics x 1 subscriber) too.
const { publish } = require('./publish');
// The asks phase (clients' subscribes, tokens and a hook against socket.io; round trips) too.
const { asks } = require('./asks');

module.exports = { parked, cpu, soak, handshakes, json, bus, publish, asks, withServer, median };
