'use strict';
// The asks phase: what a client's subscribe costs the server when the
// client asks for it (symphony.v2), authorized by a token the IO thread
// verifies or by an onSubscribe hook, against socket.io 4.8's 'join' event;
// and the round trip of a client's publish and request against socket.io's
// emit with an acknowledgement. See bench/README.md, "asks".
//
// Storm arms (asks-token, asks-hook, asks-socketio), one run = a fresh
// server (bench/servers/asks-server.js, pinned like the cpu phase: CPU 0,
// one IO thread) and client processes (bench/runner/asks-client.js, raw
// sockets, ≤ `perProc` each, on the other CPU):
//  1. open: every connection (symphony: symphony.v2 chosen; socket.io: the
//     namespace connected); with a token, each connection's JWT is signed
//     here (HS256, node:crypto), before the timed part;
//  2. idle: the server's CPU over `idle` s with everything open (what it
//     spends doing nothing; taken out of nothing, printed beside);
//  3. the storm (the timed part): every client process writes every
//     connection's `subs` subscribes (one frame each, a connection's
//     frames in one write) and reads the answers. Wall time from the first
//     write of any process to the last answer read by any (CLOCK_MONOTONIC);
//     the server's CPU (utime + stime from /proc/<pid>/stat, and
//     process.cpuUsage() beside it, µs) from just before the 'go' to just
//     after the last process said it was done; and 1 s later (what the
//     storm left to do: GC, timers);
//  4. every process stopped by PID.
// Round-trip arms (asks-rt-symphony, asks-rt-socketio): a fresh server and
// one client process (bench/runner/asks-rt-client.js, the libraries: the
// symphony client over ws, socket.io-client), one call at a time: a warm-up
// of `rtWarmup` calls, then `rtCount` calls of each series, the latency of
// each (p50, p99, p99.9), the server's CPU per call.

const crypto = require('node:crypto');
const path = require('node:path');
const { Child } = require('./history');
const { Sampler, readProc } = require('./sample');
const { now, sleep, watching, monoToNow } = require('./util');

const BENCH = path.join(__dirname, '..');
const REPO = path.join(BENCH, '..');
const SERVER = path.join(BENCH, 'servers', 'asks-server.js');
const CLIENT = path.join(__dirname, 'asks-client.js');
const RT_CLIENT = path.join(__dirname, 'asks-rt-client.js');

/** The server of an arm, started and listening: { server, hello } (hello.skipped: the arm cannot run here). */
async function startServer(ctx, arm, info, bound, extra = []) {
  const env = { ...process.env, ...arm.env };
  for (const k of ['SYMPHONY_NATIVE', 'BENCH_SYMPHONY_ROOT', 'LD_PRELOAD', 'MALLOC_CONF', 'SY_JE_MALLOC_CONF']) if (!(k in arm.env)) delete env[k];
  const server = new Child('server', process.execPath, [SERVER, '--impl', arm.impl, ...(arm.auth ? ['--auth', arm.auth] : []),
    '--threads', String(ctx.cfg.cpuThreads), '--duration', String(Math.ceil(bound)), ...extra], { cpus: ctx.cpus.server, env });
  ctx.live.add(server);
  const hello = await server.waitFor((j) => typeof j.port === 'number' || j.skipped !== undefined, 30, 'port');
  if (hello.port && arm.impl === 'symphony') {
    const native = hello.symphony && hello.symphony.native;
    if (!native || !native.startsWith(`${REPO}${path.sep}`)) throw new Error(`${arm.name}: the server loaded ${native}, not this checkout's build`);
    if (arm.allocator && hello.symphony.allocator !== arm.allocator) {
      throw new Error(`${arm.name}: the server loaded allocator ${hello.symphony.allocator}, expected ${arm.allocator}`);
    }
  }
  return { server, hello };
}

function cpuOf(pid) {
  const p = readProc(pid);
  return p ? p.cpuS : null;
}

async function storm(ctx, arm, repeat) {
  const c = ctx.cfg.asks;
  const info = { phase: 'asks', arm: arm.name, repeat };
  const N = c.connections;
  const mark = (step) => {
    ctx.status.step = step;
    ctx.rec.event(info, { ev: 'mark', step, t: now() });
    ctx.progress(true);
  };
  const bound = 120 + 2 * c.openBound + c.stormBound + c.idle;
  const secret = arm.auth === 'token' ? crypto.randomBytes(32).toString('hex') : '';
  const notes = [];
  const clients = [];
  let server = null;
  let smp = null;
  try {
    const s = await startServer(ctx, arm, info, bound, secret ? ['--secret', secret] : []);
    server = s.server;
    const { hello } = s;
    if (hello.skipped !== undefined) {
      const why = `skipped: tokens not built yet (new Server({ tokens }) threw: ${hello.skipped})`;
      process.stderr.write(`[bench] ${arm.name}: ${why}\n`);
      notes.push(why);
      return { figures: { skipped: why, impl: arm.impl, auth: arm.auth || null }, notes };
    }
    const t0Server = now();
    smp = new Sampler(server.pid, { hz: ctx.cfg.sampleHz, onSample: (x) => {
      ctx.status.fpKiB = x.fpKiB;
      ctx.rec.sample(info, { pid: server.pid, t0: t0Server }, x);
    } });
    const procs = Math.max(1, Math.ceil(N / c.perProc));
    for (let k = 0; k < procs; k++) {
      const first = Math.floor((k * N) / procs);
      const count = Math.floor(((k + 1) * N) / procs) - first;
      const cl = new Child(`client ${k}`, process.execPath, [CLIENT, '--impl', arm.impl, '--port', String(hello.port), '--count', String(count),
        '--first', String(first), '--subs', String(c.subs), '--rooms', String(c.rooms), '--pending', String(c.pending),
        '--local', `127.0.0.${2 + k}`, '--timeout', String(Math.max(c.openBound, c.stormBound)), ...(secret ? ['--secret', secret] : [])],
      { cpus: ctx.cpus.loadgen });
      clients.push(cl);
      ctx.live.add(cl);
    }
    await Promise.all(clients.map((cl) => cl.waitFor((j) => j.ev === 'ready', 30, 'ready')));
    const clientsCpu = () => clients.reduce((a, cl) => a + (cpuOf(cl.pid) || 0), 0);
    const all = async (word, ev, seconds) => {
      const tSent = now();
      const ps = clients.map((cl) => cl.waitFor((j) => j.ev === ev && j.rt >= tSent, seconds, ev));
      for (const cl of clients) cl.send(word);
      return Promise.all(ps);
    };
    const progress = (what) => {
      const last = clients.map((cl) => [...cl.lines].reverse().find((j) => j.ev === 'progress')).filter(Boolean);
      ctx.status.step = `${what}: ${last.map((j) => (j.answered !== undefined ? `${j.answered}/${j.of}` : `${j.open} open`)).join(' | ')}`;
      ctx.progress(false);
    };

    // 1. open
    mark(`open: ${N} connections (${procs} client processes, ${c.pending} handshakes in flight each)${secret ? ', a token signed for each' : ''}`);
    const o0 = { t: now(), cpu: cpuOf(server.pid), rss: readProc(server.pid).rssKiB };
    const op = await watching(all('open', 'opened', c.openBound + 30), () => progress('open'));
    const o1 = { t: now(), cpu: cpuOf(server.pid), rss: readProc(server.pid).rssKiB };
    const open = op.reduce((a, x) => a + x.open, 0);
    if (open < N) {
      const errs = {};
      for (const x of op) for (const [k, v] of Object.entries(x.errors || {})) errs[k] = (errs[k] || 0) + v;
      throw new Error(`open: ${open} of ${N} opened (${JSON.stringify(errs)})`);
    }
    const tLast = Math.max(...op.map((x) => monoToNow(x.lastNs)));

    // 2. idle, everything open
    await sleep(c.settle);
    mark(`idle: ${c.idle} s with ${N} connections open`);
    const i0 = { t: now(), cpu: cpuOf(server.pid) };
    await sleep(c.idle);
    const i1 = { t: now(), cpu: cpuOf(server.pid) };
    const idleCores = (i1.cpu - i0.cpu) / (i1.t - i0.t);

    // 3. the storm
    mark(`storm: ${N} × ${c.subs} subscribes (${arm.auth === 'token' ? 'tokens' : arm.auth === 'hook' ? 'onSubscribe' : 'socket.io join'})`);
    const m0 = await server.ask('mark');
    const a = { t: now(), proc: readProc(server.pid), cl: clientsCpu() };
    const done = await watching(all('go', 'done', c.stormBound + 30), () => progress('storm'));
    const b = { t: now(), proc: readProc(server.pid), cl: clientsCpu() };
    const m1 = await server.ask('mark');
    await sleep(1);
    const b1 = { t: now(), proc: readProc(server.pid) };
    const m2 = await server.ask('mark');
    const sum = (k) => done.reduce((x, d) => x + d[k], 0);
    const asked = sum('asked');
    const answered = sum('answered');
    const granted = sum('granted');
    const refused = sum('refused');
    const codes = {};
    const errs = {};
    for (const d of done) {
      for (const [k, v] of Object.entries(d.codes || {})) codes[k] = (codes[k] || 0) + v;
      for (const [k, v] of Object.entries(d.errors || {})) errs[k] = (errs[k] || 0) + v;
    }
    const first = Math.min(...done.map((d) => monoToNow(d.firstNs)));
    const lastSend = Math.max(...done.map((d) => monoToNow(d.lastSendNs)));
    const lastAnswer = Math.max(...done.filter((d) => d.lastNs !== '0').map((d) => monoToNow(d.lastNs)));
    const wall = lastAnswer - first;
    const cpuS = b.proc.cpuS - a.proc.cpuS;
    const cpuUsageS = (m1.cpuUs - m0.cpuUs) / 1e6;
    const stats = {};
    for (const k of Object.keys(m1)) {
      if (typeof m1[k] === 'number' && typeof m0[k] === 'number' && !['cpuUs', 'rssKiB', 'heapUsedKiB', 'connections', 'rooms', 'topics', 'rt'].includes(k)) stats[k] = m1[k] - m0[k];
    }
    if (answered < asked) notes.push(`storm: ${asked - answered} of ${asked} subscribes unanswered after ${c.stormBound} s`);
    if (refused) notes.push(`storm: ${refused} refused (${JSON.stringify(codes)})`);
    if (Object.keys(errs).length) notes.push(`storm: client errors ${JSON.stringify(errs)}`);
    if (m1.eventsLost) notes.push(`server: eventsLost ${m1.eventsLost}`);
    if (m1.errors) notes.push(`server: ${m1.errors} 'error' events (${m1.lastError})`);
    const clientCores = (b.cl - a.cl) / (b.t - a.t);
    const fig = {
      impl: arm.impl,
      auth: arm.auth || 'join',
      connections: N,
      subsPerConn: c.subs,
      rooms: c.rooms,
      clientProcs: procs,
      threads: ctx.cfg.cpuThreads,
      open: {
        seconds: tLast - o0.t,
        perS: N / (tLast - o0.t),
        serverCpuUsPerConn: ((o1.cpu - o0.cpu) / N) * 1e6,
        rssBytesPerConn: ((o1.rss - o0.rss) * 1024) / N,
      },
      idleCores,
      storm: {
        asked,
        answered,
        granted,
        refused,
        codes,
        wallS: wall,
        sendS: lastSend - first,
        subscribesPerS: answered / wall,
        serverCpuS: cpuS,
        serverCpuUsPerSub: (cpuS / answered) * 1e6,
        subsPerCpuS: answered / cpuS,
        // process.cpuUsage() across the same part (µs resolution; /proc counts 10 ms ticks)
        cpuUsageS,
        cpuUsageUsPerSub: (cpuUsageS / answered) * 1e6,
        subsPerCpuUsageS: answered / cpuUsageS,
        // with the second after the last answer (what the storm left: GC, timers), the idle rate taken out
        tailCpuS: b1.proc.cpuS - b.proc.cpuS,
        withTailUsPerSub: ((b1.proc.cpuS - a.proc.cpuS - idleCores * (b1.t - b.t)) / answered) * 1e6,
        serverCores: cpuS / (b.t - a.t),
        userSharePct: cpuS > 0 ? (100 * (b.proc.userS - a.proc.userS)) / cpuS : null,
        clientCores,
        clientLimited: clientCores >= 0.9,
        rssBytesPerSub: ((b1.proc.rssKiB - a.proc.rssKiB) * 1024) / answered,
        heapUsedKiB: m0.heapUsedKiB ?? null, // the V8 heap in use before the storm
        gcMs: m1.gcMs !== undefined ? m1.gcMs - m0.gcMs : null, // the JS thread's GC in the timed part
        gcMajorCount: m1.gcMajorCount !== undefined ? m1.gcMajorCount - m0.gcMajorCount : null,
        stats,
        tailStats: Object.fromEntries(Object.keys(stats).map((k) => [k, (m2[k] ?? 0) - (m1[k] ?? 0)]).filter(([, v]) => v)),
      },
      pin: { server: ctx.cpus.server || null, clients: ctx.cpus.loadgen || null },
    };
    ctx.rec.event(info, { ev: 'storm', ...fig.storm });
    for (const cl of clients) cl.send('exit');
    return { figures: fig, notes };
  } finally {
    for (const cl of clients) await cl.retire(ctx, notes, 5);
    if (smp) smp.stop();
    if (server) {
      await server.retire(ctx, notes, 15);
      ctx.rec.event(info, { ev: 'server-final', pid: server.pid, final: server.lines.find((j) => j.final) || null });
    }
  }
}

async function roundTrips(ctx, arm, repeat) {
  const c = ctx.cfg.asks;
  const info = { phase: 'asks', arm: arm.name, repeat };
  const series = arm.impl === 'symphony' ? ['publish', 'request'] : ['publish', 'echo'];
  const perCall = 0.02; // s: a generous bound per call
  const bound = 60 + series.length * (c.rtWarmup + c.rtCount) * perCall;
  const notes = [];
  let server = null;
  let client = null;
  try {
    ({ server } = await startServer(ctx, arm, info, bound + 30));
    const hello = server.lines.find((j) => typeof j.port === 'number');
    client = new Child('rt client', process.execPath, [RT_CLIENT, '--impl', arm.impl, '--port', String(hello.port), '--size', String(c.rtSize)],
      { cpus: ctx.cpus.loadgen });
    ctx.live.add(client);
    const ready = await client.waitFor((j) => j.ev === 'ready', 30, 'ready');
    const run = async (name, n) => {
      const tSent = now();
      const p = client.waitFor((j) => j.ev === 'series' && j.rt >= tSent, 30 + n * perCall, `series ${name}`);
      client.send(`run ${name} ${n}`);
      const r = await p;
      if (r.failed) notes.push(`${name}: ${r.failed} of ${n} failed (${r.firstError})`);
      return r;
    };
    const out = {};
    for (const name of series) {
      ctx.status.step = `round trips: ${name}, ${c.rtWarmup} warm-up`;
      ctx.progress(true);
      await run(name, c.rtWarmup);
      ctx.status.step = `round trips: ${name} × ${c.rtCount}, one at a time`;
      ctx.progress(true);
      const a = readProc(server.pid);
      const r = await run(name, c.rtCount);
      const b = readProc(server.pid);
      out[name] = { n: r.n, failed: r.failed, seconds: r.seconds, perS: r.n / r.seconds, ack: r.ack, delivered: r.delivered,
        serverCpuUsPerCall: ((b.cpuS - a.cpuS) / r.n) * 1e6 };
      ctx.rec.event(info, { ev: 'series', series: name, ...out[name] });
    }
    client.send('exit');
    return { figures: { impl: arm.impl, rt: true, payloadBytes: ready.payloadBytes, warmup: c.rtWarmup, count: c.rtCount, series: out,
      pin: { server: ctx.cpus.server || null, clients: ctx.cpus.loadgen || null } }, notes };
  } finally {
    if (client) await client.retire(ctx, notes, 5);
    if (server) {
      await server.retire(ctx, notes, 15);
      ctx.rec.event(info, { ev: 'server-final', pid: server.pid, final: server.lines.find((j) => j.final) || null });
    }
  }
}

async function asks(ctx, arm, repeat) {
  return arm.rt ? roundTrips(ctx, arm, repeat) : storm(ctx, arm, repeat);
}

module.exports = { asks };
