'use strict';
// The pusher phases (issue 45): the Pusher Channels protocol v7 against
// Soketi 1.6, same run, same machine. Four opt-in phases, each run by the
// arms `soketi` (bench/servers/soketi-server.js) and `symphony-pusher`
// (bench/servers/pusher-server.js), one app (APP below) on each:
//
// - pusher-fanout: `channels` public channels × `subscribers` loadgen
//   clients (--pusher: connection n on bench-<n % channels>), every one
//   subscribed (pusher_internal:subscription_succeeded counted) before the
//   publisher (pusher-publisher.js, signed HTTP API POSTs) starts `rate`
//   events/s per channel of `size` B; a settle, a window (loadgen marks,
//   /proc, the publisher's totals), then the drain. Server CPU per delivered
//   message; delivered %, due-time latency, lost (deliveries the accepted
//   publishes owed − messages received), gaps, duplicates, bad payloads.
// - pusher-idle: a fresh server idle, then `connections` / 2 and the rest,
//   every one subscribed to one of `channels` channels, idle: footprint
//   (VmRSS + VmSwap) per subscribed connection over idle and marginal.
// - pusher-http: `channels` channels × 1 subscriber; the publisher in a
//   closed loop (`sockets` requests in flight) for a window: accepted
//   publishes (2xx) per server CPU-second, the wall rate, the TCP
//   connections the publisher had to make (Soketi closes after each
//   answer), the deliveries that reached the subscribers.
// - pusher-presence: a fresh server, then `rooms` presence channels ×
//   `members` clients opened at once (no pacing, loadgen's max-pending in
//   flight), each joining with its own user_id (signed channel_data): the
//   time from loadgen's start to the last subscription_succeeded or
//   member_added (whichever is later) once every join succeeded and every
//   member_added arrived (per room m(m−1)/2), joins/s over it, and the
//   server CPU over it (per join, per member_added delivered).
//
// The symphony-pusher arm needs the `pusher` option of issue 45: a build
// without it is found once per run (pusher-server.js exits 3 naming it) and
// its runs report `unavailable` instead of failing.

const path = require('node:path');
const readline = require('node:readline');
const { spawn, spawnSync } = require('node:child_process');
const { withServer } = require('./phases');
const { readProc } = require('./sample');
const { now, sleep, finite, within } = require('./util');

const { PUSHER_APP: APP } = require('./arms');

const APP_ENV = `${APP.id}:${APP.key}:${APP.secret}`;
const PUBLISHER = path.join(__dirname, 'pusher-publisher.js');
const URL_PATH = `/app/${APP.key}?protocol=7&client=js&version=8.4.0`;
const SETTLE_TIMEOUT_MIN = 30;
const rampBound = (n, r) => SETTLE_TIMEOUT_MIN + (r > 0 ? 3 * n / r : 0);

// ---- the symphony arm: available or not -----------------------------------

const availability = new Map();

/** null when the arm can serve Pusher; else why not (checked once a run). */
function unavailable(arm) {
  if (!arm.pusherProbe) return null;
  if (!availability.has(arm.name)) {
    const r = spawnSync(process.execPath, [arm.script, '--port', '0', '--threads', '1', '--duration', '10'], {
      env: { ...process.env, ...arm.env }, encoding: 'utf8', timeout: 20000, cwd: path.join(__dirname, '..', '..'),
    });
    let why = null;
    const first = (r.stdout || '').split('\n')[0];
    try {
      const j = JSON.parse(first);
      if (j.unavailable) why = j.unavailable;
    } catch {
      why = `the server did not start: ${(r.stderr || '').trim().split('\n').slice(-1)[0] || `exit ${r.status}`}`;
    }
    availability.set(arm.name, why);
  }
  return availability.get(arm.name);
}

// ---- the publisher ----------------------------------------------------------

class Publisher {
  constructor(o) {
    const args = [PUBLISHER, '--port', String(o.port), '--app', APP_ENV, '--channels', String(o.channels),
      '--prefix', o.prefix, '--size', String(o.size), '--sockets', String(o.sockets), '--batch', String(o.batch || 0)];
    const [cmd, argv] = o.cpus ? ['taskset', ['-c', o.cpus, process.execPath, ...args]] : [process.execPath, args];
    this.child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdin.on('error', () => {});
    this.pid = this.child.pid;
    this.lines = [];
    this.waiters = [];
    this.errors = [];
    this.exitInfo = null;
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => {
      this.exitInfo = { code, signal };
      resolve();
    }));
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      let j = null;
      try {
        j = JSON.parse(line);
      } catch {
        return;
      }
      this.lines.push(j);
      for (const w of this.waiters.slice()) w();
    });
    readline.createInterface({ input: this.child.stderr }).on('line', (l) => {
      if (l.trim() && this.errors.length < 50) this.errors.push(l);
    });
  }

  get alive() {
    return this.exitInfo === null;
  }

  /** The first line after `from` for which pred holds (bounded). */
  async wait(pred, timeout, what, from = 0) {
    const find = () => this.lines.slice(from).find(pred);
    const found = new Promise((resolve) => {
      const check = () => {
        const j = find();
        if (j || !this.alive) {
          this.waiters.splice(this.waiters.indexOf(check), 1);
          resolve(j || null);
        }
      };
      this.waiters.push(check);
      check();
    });
    const j = await within(found, timeout, null);
    if (!j) throw new Error(`publisher: ${what} not within ${timeout} s${this.errors.length ? `: ${this.errors.slice(-2).join(' | ')}` : ''}`);
    return j;
  }

  ready() {
    return this.wait((j) => j.ready, 15, 'ready');
  }

  async rate(r) {
    const from = this.lines.length;
    this.child.stdin.write(`rate ${r}\n`);
    await this.wait((j) => 'rate' in j, 10, `rate ${r}`, from);
  }

  async mark() {
    const from = this.lines.length;
    this.child.stdin.write('mark\n');
    const j = await this.wait((x) => 'mark' in x, 10, 'mark', from);
    return { ...j, rt: now() };
  }

  async stop() {
    if (this.alive) {
      this.child.stdin.end();
      if (!(await within(this.exited, 5, false).then(() => !this.alive))) this.child.kill('SIGKILL');
    }
    await this.exited;
  }
}

// ---- loadgen's Pusher counters ----------------------------------------------

/** The Pusher counters summed over a loadgen's shards (each shard's latest
 * event that has them), and the latest subscription / member_added on the
 * runner clock. */
function pusherTotals(lg) {
  const t = { established: 0, subscribed: 0, errors: 0, pings: 0, memberAdded: 0, memberRemoved: 0, other: 0, lastSubscribed: null, lastMember: null };
  for (const s of lg.shards) {
    let best = null;
    for (const e of s.events) if (e.pusher && (!best || e.t >= best.t)) best = e;
    const p = best ? best.pusher : (s.summary && s.summary.pusher) || null;
    if (!p) continue;
    t.established += p.established;
    t.subscribed += p.subscribed;
    t.errors += p.errors;
    t.pings += p.pings;
    t.memberAdded += p.member_added;
    t.memberRemoved += p.member_removed;
    t.other += p.other;
    if (p.last_subscribed_t !== null) t.lastSubscribed = Math.max(t.lastSubscribed ?? -Infinity, s.at({ t: p.last_subscribed_t }));
    if (p.last_member_t !== null) t.lastMember = Math.max(t.lastMember ?? -Infinity, s.at({ t: p.last_member_t }));
  }
  return t;
}

/** Waits until pred(totals) (loadgen's once-a-second samples), bounded;
 * returns the last totals and whether pred held. */
async function waitPusher(lg, pred, timeout) {
  const t1 = now() + timeout;
  for (;;) {
    const t = pusherTotals(lg);
    if (pred(t)) return { totals: t, ok: true };
    if (!lg.alive || now() > t1) return { totals: t, ok: false };
    await sleep(0.2);
  }
}

/** Subscribers of each channel when connections 0..n-1 go to n % channels. */
function perChannel(n, channels) {
  return Array.from({ length: channels }, (_, g) => Math.floor(n / channels) + (g < n % channels ? 1 : 0));
}

function markSum(lg, k, field) {
  let n = 0;
  for (const s of lg.shards) {
    const e = s.markEvent(k);
    if (e && Number.isFinite(e[field])) n += e[field];
  }
  return n;
}

function serverOpts(ctx, arm, threads, bound) {
  return { arm, threads, topics: 1, size: 64, rate: 0, duration: bound, cpus: ctx.cpus.server, gate: arm.gate, traffic: 'on' };
}

function lgOpts(prefix, channels) {
  return { path: URL_PATH, pusher: { key: APP.key, secret: APP.secret, channels, prefix } };
}

function skipped(arm, why) {
  return { figures: { unavailable: why }, notes: [`${arm.name}: not available yet: ${why}`] };
}

// ---- pusher-fanout ----------------------------------------------------------

async function fanout(ctx, arm, repeat) {
  const why = unavailable(arm);
  if (why) return skipped(arm, why);
  const c = ctx.cfg.pusher.fanout;
  const n = c.channels * c.subscribers;
  const info = { phase: 'pusher-fanout', arm: arm.name, repeat };
  const bound = rampBound(n, c.ramp) + 30 + c.settle + c.window + c.drain + c.drainBound + 60;
  return withServer(ctx, info, serverOpts(ctx, arm, ctx.cfg.cpuThreads, bound), async (server, smp, run) => {
    run.mark(`fan-out: ${n} subscribers over ${c.channels} channels`);
    const lg = run.loadgen({ connections: n, rampPerSec: c.ramp, duration: bound, seq: true, checkSize: c.size, ...lgOpts('bench-', c.channels) });
    await lg.waitSettled(rampBound(n, c.ramp));
    // every connection subscribed (or refused) before the first publish
    const sub = await waitPusher(lg, (t) => t.subscribed + t.errors >= n, 30);
    const pub = new Publisher({ port: server.port, channels: c.channels, prefix: 'bench-', size: c.size, sockets: c.sockets, cpus: ctx.cpus.loadgen });
    try {
      await pub.ready();
      run.mark('fan-out: publishing');
      await pub.rate(c.rate * c.channels);
      await sleep(c.settle);
      lg.mark(); // 0: ramp and settle
      const p0 = readProc(server.pid);
      const q0 = await pub.mark();
      const ta = now();
      run.mark('fan-out: window');
      await sleep(c.window);
      lg.mark(); // 1: the window
      const p1 = readProc(server.pid);
      const q1 = await pub.mark();
      const tb = now();
      run.mark('fan-out: drain');
      await pub.rate(0);
      await sleep(c.drain);
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
      const q2 = await pub.mark();
      const w = await lg.markFigures(1);
      const before = await lg.markFigures(0);
      if (!w || !before) throw new Error('pusher-fanout: loadgen printed no marks');
      const tails = [];
      for (let j = 2; j <= k; j++) tails.push(await lg.markFigures(j));
      const totals = pusherTotals(lg);
      await lg.stop(20);
      const marks = Array.from({ length: k + 1 }, (_, j) => j);
      const markTotal = (field) => marks.reduce((x, j) => x + markSum(lg, j, field), 0);
      const received = markTotal('msgs');
      // (every connection subscribed: else what each channel owed is not known)
      const subs = totals.subscribed === n ? perChannel(n, c.channels) : null;
      // what the accepted publishes owed: each channel's accepted events × its subscribers
      // (the publisher sends channels in turn: its seqs say how many went to each)
      const owed = q2.failed > 0 || !subs ? null : q2.seqs.reduce((x, seq, g) => x + seq * subs[g], 0);
      const cpuS = p0 && p1 ? p1.cpuS - p0.cpuS : null;
      const userS = p0 && p1 ? p1.userS - p0.userS : null;
      const dt = w.dt;
      const lgCpuPct = dt > 0 ? (100 * w.cpu) / dt : null;
      const offered = sub.totals.subscribed * c.rate;
      return {
        figures: {
          channels: c.channels,
          subscribers: sub.totals.subscribed,
          allSubscribed: sub.ok,
          subscribeErrors: totals.errors,
          rate: c.rate,
          size: c.size,
          seconds: dt,
          offeredPerS: offered,
          publishesInWindow: q1.ok - q0.ok,
          publishesPerS: (q1.ok - q0.ok) / (q1.rt - q0.rt),
          publishFailed: q2.failed,
          publisherLate: q2.late,
          publisherConnects: q2.connects,
          msgsPerS: dt > 0 ? w.msgs / dt : null,
          deliveredPct: offered > 0 && dt > 0 ? (100 * w.msgs) / (offered * dt) : null,
          serverCores: finite(cpuS) ? cpuS / (tb - ta) : null,
          userSharePct: finite(cpuS) && cpuS > 0 ? (100 * userS) / cpuS : null,
          cpuUsPerMsg: finite(cpuS) && w.msgs > 0 ? (cpuS / w.msgs) * 1e6 : null,
          cpuSPer1M: finite(cpuS) && w.msgs > 0 ? (cpuS / w.msgs) * 1e6 : null,
          p50ms: w.p50Ms,
          p99ms: w.p99Ms,
          p999ms: w.p999Ms,
          maxMs: w.maxMs,
          loadgenCpuPct: lgCpuPct,
          received,
          owed,
          drained,
          lost: drained && owed !== null ? owed - received : null,
          dups: markTotal('dups'),
          back: markTotal('back'),
          gaps: markTotal('gaps'),
          checked: markTotal('checked'),
          badPayloads: markTotal('bad'),
          pings: totals.pings,
          rssKiB: p1 ? p1.rssKiB : null,
        },
      };
    } finally {
      await pub.stop();
    }
  });
}

// ---- pusher-idle ------------------------------------------------------------

async function idle(ctx, arm, repeat) {
  const why = unavailable(arm);
  if (why) return skipped(arm, why);
  const c = ctx.cfg.pusher.idle;
  const info = { phase: 'pusher-idle', arm: arm.name, repeat };
  const levels = [Math.floor(c.connections / 2), c.connections];
  const bound = c.idle + levels.length * (rampBound(c.connections, c.ramp) + 30 + c.settle) + 60;
  const measure = ctx.cfg.measure;
  return withServer(ctx, info, serverOpts(ctx, arm, ctx.cfg.threads, bound), async (server, smp, run) => {
    run.mark('idle: no connection');
    await sleep(c.idle);
    const tIdle = now();
    const idleKiB = smp.footprint(tIdle - measure, tIdle);
    const out = [];
    const lgs = [];
    let prev = 0;
    for (const [k, n] of levels.entries()) {
      run.mark(`idle: level ${k + 1}, ${n} subscribed`);
      const lg = run.loadgen({ connections: n - prev, rampPerSec: c.ramp, duration: bound, pusherBase: prev, ...lgOpts('bench-', c.channels) });
      lgs.push(lg);
      await lg.waitSettled(rampBound(n - prev, c.ramp));
      await waitPusher(lg, (t) => t.subscribed + t.errors >= n - prev, 30);
      await sleep(c.settle);
      const t = now();
      const subscribed = lgs.reduce((x, l) => x + pusherTotals(l).subscribed, 0);
      out.push({ target: n, open: lgs.reduce((x, l) => x + l.open(), 0), subscribed, fpKiB: smp.footprint(t - measure, t) });
      prev = n;
    }
    const [first, last] = out;
    const per = (kib, m) => (finite(kib) && m > 0 ? (kib * 1024) / m : null);
    const errors = lgs.reduce((x, l) => x + pusherTotals(l).errors, 0);
    return {
      figures: {
        channels: c.channels,
        idleKiB,
        levels: out,
        n: last.subscribed,
        open: last.open,
        subscribeErrors: errors,
        bytesPerConnOverIdle: per(last.fpKiB - idleKiB, last.subscribed),
        bytesPerConnMarginal: per(last.fpKiB - first.fpKiB, last.subscribed - first.subscribed),
      },
    };
  });
}

// ---- pusher-http ------------------------------------------------------------

async function http(ctx, arm, repeat) {
  const why = unavailable(arm);
  if (why) return skipped(arm, why);
  const c = ctx.cfg.pusher.http;
  const info = { phase: 'pusher-http', arm: arm.name, repeat };
  const bound = rampBound(c.channels, 1000) + c.warmup + c.window + 60;
  return withServer(ctx, info, serverOpts(ctx, arm, ctx.cfg.cpuThreads, bound), async (server, smp, run) => {
    run.mark(`http: ${c.channels} channels × 1 subscriber`);
    const lg = run.loadgen({ connections: c.channels, duration: bound, seq: true, checkSize: c.size, ...lgOpts('bench-', c.channels) });
    await lg.waitSettled(rampBound(c.channels, 1000));
    const sub = await waitPusher(lg, (t) => t.subscribed + t.errors >= c.channels, 30);
    const pub = new Publisher({ port: server.port, channels: c.channels, prefix: 'bench-', size: c.size, sockets: c.sockets, cpus: ctx.cpus.loadgen });
    try {
      await pub.ready();
      run.mark('http: publishing, closed loop');
      await pub.rate('max');
      await sleep(c.warmup);
      lg.mark(); // 0
      const p0 = readProc(server.pid);
      const q0 = await pub.mark();
      await sleep(c.window);
      const p1 = readProc(server.pid);
      const q1 = await pub.mark();
      lg.mark(); // 1
      await pub.rate(0);
      const w = await lg.markFigures(1);
      await lg.stop(20);
      const cpuS = p0 && p1 ? p1.cpuS - p0.cpuS : null;
      const ok = q1.ok - q0.ok;
      const dt = q1.rt - q0.rt;
      return {
        figures: {
          channels: c.channels,
          subscribed: sub.totals.subscribed,
          sockets: c.sockets,
          size: c.size,
          seconds: dt,
          publishes: ok,
          publishesPerS: ok / dt,
          failed: q1.failed - q0.failed,
          statuses: q1.statuses,
          connectsPerPublish: ok > 0 ? (q1.connects - q0.connects) / ok : null,
          serverCpuS: cpuS,
          serverCores: finite(cpuS) ? cpuS / dt : null,
          publishesPerCpuS: finite(cpuS) && cpuS > 0 ? ok / cpuS : null,
          cpuUsPerPublish: finite(cpuS) && ok > 0 ? (cpuS / ok) * 1e6 : null,
          delivered: w ? w.msgs : null,
          p50ms: w ? w.p50Ms : null,
          p99ms: w ? w.p99Ms : null,
          gaps: w ? w.gaps : null,
        },
      };
    } finally {
      await pub.stop();
    }
  });
}

// ---- pusher-presence --------------------------------------------------------

async function presence(ctx, arm, repeat) {
  const why = unavailable(arm);
  if (why) return skipped(arm, why);
  const c = ctx.cfg.pusher.presence;
  const n = c.rooms * c.members;
  const info = { phase: 'pusher-presence', arm: arm.name, repeat };
  const bound = c.idle + c.settleBound + 60;
  return withServer(ctx, info, serverOpts(ctx, arm, ctx.cfg.cpuThreads, bound), async (server, smp, run) => {
    await sleep(c.idle);
    run.mark(`presence: ${n} joins over ${c.rooms} rooms, at once`);
    const p0 = readProc(server.pid);
    const lg = run.loadgen({ connections: n, duration: bound, ...lgOpts('presence-bench-', c.rooms) });
    const expectAdded = perChannel(n, c.rooms).reduce((x, m) => x + (m * (m - 1)) / 2, 0);
    const done = await waitPusher(lg, (t) => t.subscribed >= n && t.memberAdded >= expectAdded, c.settleBound);
    const p1 = readProc(server.pid);
    const tDetect = now();
    const t = done.totals;
    const t0 = lg.t0; // loadgen's start: the first connection attempt
    const tEnd = Math.max(t.lastSubscribed ?? t0, t.lastMember ?? t0);
    const settleS = done.ok ? tEnd - t0 : null;
    await lg.stop(20);
    const cpuS = p0 && p1 ? p1.cpuS - p0.cpuS : null;
    return {
      figures: {
        rooms: c.rooms,
        members: c.members,
        joins: t.subscribed,
        errors: t.errors,
        memberAdded: t.memberAdded,
        expectAdded,
        settled: done.ok,
        settleS,
        joinsPerS: settleS ? t.subscribed / settleS : null,
        serverCpuS: cpuS,
        cpuWindowS: tDetect - t0,
        cpuUsPerJoin: finite(cpuS) && t.subscribed > 0 ? (cpuS / t.subscribed) * 1e6 : null,
        cpuUsPerMemberAdded: finite(cpuS) && t.memberAdded > 0 ? (cpuS / t.memberAdded) * 1e6 : null,
        serverCores: finite(cpuS) && tDetect > t0 ? cpuS / (tDetect - t0) : null,
        rssKiB: p1 ? p1.rssKiB : null,
      },
    };
  });
}

const PHASES = { 'pusher-fanout': fanout, 'pusher-idle': idle, 'pusher-http': http, 'pusher-presence': presence };

module.exports = { PHASES, pusherTotals };
