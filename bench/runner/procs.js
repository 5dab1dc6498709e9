'use strict';
// The processes a run drives: the server under test (bench/servers/fanout-server.js
// or bench/servers/ws-server.js, with the traffic gate preloaded) and loadgen
// (bench/out/loadgen), possibly sharded over several processes when one
// process's open-file limit cannot hold the population.

const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const { now, monoToNow, within } = require('./util');
const hist = require('./hist');

const BENCH = path.join(__dirname, '..');
const LOADGEN = path.join(BENCH, 'out', 'loadgen');
const GATE = path.join(BENCH, 'servers', 'traffic-gate.js');

// Variables an arm may set; nothing inherited from the runner's own
// environment may leak into an arm that does not set them (SYMPHONY_NATIVE
// would make every arm load one file; BENCH_SYMPHONY_ROOT is the baseline
// arms' checkout; BENCH_TLS would turn a ws:// arm into wss://).
const ARM_VARS = ['SYMPHONY_ALLOCATOR', 'MALLOC_ARENA_MAX', 'GLIBC_TUNABLES', 'SY_JE_MALLOC_CONF', 'MALLOC_CONF',
  'LD_PRELOAD', 'BENCH_TRAFFIC', 'BENCH_GATE', 'BENCH_SYMPHONY_ROOT', 'SYMPHONY_NATIVE', 'BENCH_TLS', 'BENCH_UWS_PATH',
  'BENCH_WS_DEFLATE', 'BENCH_SSE_IMPL'];

function cleanEnv(extra) {
  const env = { ...process.env };
  for (const k of ARM_VARS) delete env[k];
  return { ...env, ...extra };
}

function parseJson(line) {
  if (!line.startsWith('{')) return null;
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

function withTaskset(cpus, cmd, args) {
  return cpus ? ['taskset', ['-c', cpus, cmd, ...args]] : [cmd, args];
}

function waitExit(child, exited, seconds) {
  return within(exited, seconds, null);
}

/** SIGTERM, then SIGKILL (noted in `notes`) if the child has not exited
 * `grace` s later; resolves once it has exited. */
async function terminate(child, exited, grace, notes) {
  child.kill('SIGTERM');
  if (!(await waitExit(child, exited, grace))) {
    notes.push(`runner: no exit ${grace} s after SIGTERM; killed`);
    child.kill('SIGKILL');
  }
  await exited;
}

/** The server under test. */
class ServerProc {
  /**
   * opts: { arm, threads, topics, size, rate, duration, statsInterval,
   * cpus, traffic ('on'|'off'), payload ('binary'|'json'), gate (overrides
   * the arm's BENCH_GATE), extraArgs (appended to the script's command
   * line) }; the arm's `deflate` ({ threshold }) turns permessage-deflate
   * on. Resolves once it printed its port.
   */
  static async start(opts) {
    const s = new ServerProc(opts);
    await s.ready;
    return s;
  }

  constructor(o) {
    this.arm = o.arm;
    this.stats = []; // the script's stats lines, with the runner clock `rt`
    this.gateLog = [];
    this.odd = []; // stderr lines that are not JSON: warnings, errors
    this.final = null;
    this.port = null;
    this.loaded = null; // fanout-server.js: { root, native, allocator } of the symphony it loaded
    this.busEvents = []; // {"busEvent":...} lines, with the runner clock `rt` and `at` (when it happened)
    this.ctlWaiters = [];
    this.t0 = now();
    const args = ['--require', GATE, o.arm.script,
      '--port', '0', '--threads', String(o.threads), '--topics', String(o.topics),
      '--size', String(o.size), '--rate', String(o.rate), '--duration', String(Math.ceil(o.duration)),
      '--stats-interval', String(o.statsInterval)];
    if (o.maxBackpressure) args.push('--max-backpressure', String(o.maxBackpressure));
    if (o.payload) args.push('--payload', o.payload);
    if (o.arm.deflate) args.push('--deflate', '1', '--threshold', String(o.arm.deflate.threshold ?? 0));
    if (o.extraArgs) args.push(...o.extraArgs);
    const [cmd, argv] = withTaskset(o.cpus, process.execPath, args);
    const env = cleanEnv({ ...o.arm.env, BENCH_TRAFFIC: o.traffic || 'on', BENCH_GATE: o.gate || o.arm.gate });
    this.child = spawn(cmd, argv, { env, stdio: ['pipe', 'pipe', 'pipe'], cwd: path.join(BENCH, '..') });
    this.pid = this.child.pid;
    this.child.stdin.on('error', () => {});
    this.exitInfo = null;
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitInfo = { code, signal, t: now() };
        resolve(this.exitInfo);
      });
    });
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${o.arm.name}: server printed no port in 20 s${this.oddTail()}`)), 20000);
      this.exited.then((e) => {
        clearTimeout(timer);
        reject(new Error(`${o.arm.name}: server exited (${e.code ?? e.signal}) before listening${this.oddTail()}`));
      });
      readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
        const j = parseJson(line);
        if (j && this.port === null && typeof j.port === 'number') {
          this.port = j.port;
          this.loaded = j.symphony || null;
          clearTimeout(timer);
          resolve();
        } else if (j) {
          this.final = j;
        } else if (line.trim()) {
          this.odd.push(`stdout: ${line}`);
        }
      });
    });
    this.ready.catch(() => {});
    this.gateWaiters = [];
    readline.createInterface({ input: this.child.stderr }).on('line', (line) => {
      const j = parseJson(line);
      if (j && j.gate) {
        this.gateLog.push({ rt: now(), ...j });
        for (const w of this.gateWaiters.splice(0)) w(j);
      } else if (j && j.ctl) {
        const r = { rt: now(), at: j.mono_ns ? monoToNow(j.mono_ns) : now(), ...j };
        const i = this.ctlWaiters.findIndex((w) => w.word === j.ctl);
        if (i >= 0) this.ctlWaiters.splice(i, 1)[0].resolve(r);
      } else if (j && j.busEvent) {
        this.busEvents.push({ rt: now(), at: j.mono_ns ? monoToNow(j.mono_ns) : now(), ...j });
      } else if (j && 'connections' in j) {
        this.stats.push({ rt: now(), ...j });
      } else if (line.trim() && this.odd.length < 200) {
        this.odd.push(line);
      }
    });
  }

  oddTail() {
    return this.odd.length ? `:\n  ${this.odd.slice(-5).join('\n  ')}` : '';
  }

  get alive() {
    return this.exitInfo === null;
  }

  lastStats() {
    return this.stats.length ? this.stats[this.stats.length - 1] : null;
  }

  /** Turns the traffic gate on or off; resolves at the server's ack. */
  async setTraffic(on) {
    const want = on ? 'on' : 'off';
    const ack = new Promise((resolve) => this.gateWaiters.push(resolve));
    this.child.stdin.write(`traffic ${want}\n`);
    const r = await within(ack, 10, null);
    if (!r || r.gate !== want) throw new Error(`${this.arm.name}: the traffic gate did not answer`);
    return now();
  }

  /** A control line (bench/servers/harness.js handleControl): "ctl WORD
   * ARGS"; resolves with its answer ({ ctl, rt, at, ... }), rejects on an
   * error answer or none within 10 s. */
  async control(word, args = []) {
    const answer = new Promise((resolve) => this.ctlWaiters.push({ word, resolve }));
    this.child.stdin.write(`ctl ${[word, ...args].join(' ')}\n`);
    const r = await within(answer, 10, null);
    if (!r) throw new Error(`${this.arm.name}: no answer to "ctl ${word}" in 10 s`);
    if (r.error) throw new Error(`${this.arm.name}: ctl ${word}: ${r.error}`);
    return r;
  }

  /** Stops the server (SIGTERM, then SIGKILL after `grace` s). */
  async stop(grace = 30) {
    if (this.alive) await terminate(this.child, this.exited, grace, this.odd);
    return this.final;
  }
}

const PROGRESS = /^loadgen\s+(\d+)s\s+open (\d+)\s+pending (\d+)\s+failed (\d+)\s+ended (\d+) \| (\d+) msg\/s/;

/** One loadgen process. */
class LoadgenProc {
  /**
   * o: { port, connections, rampPerSec, hold, duration, sources, cpus,
   * schedule, churn, events, serverPid, maxPending, closeWait, label,
   * deflate (offer permessage-deflate), sse (an event stream over http://
   * instead of WebSocket), seq, checkSize (loadgen --check-size), path
   * (the URL's path, default /), pusher ({ key, secret, channels, prefix }:
   * loadgen --pusher; see bench/runner/pusher.js), pusherBase (the index of
   * this process's first slot) }
   */
  constructor(o) {
    this.o = o;
    this.progress = [];
    this.events = [];
    this.notes = [];
    this.summary = null;
    this.listeners = [];
    const args = ['--url', `${o.sse ? 'http' : o.tls ? 'wss' : 'ws'}://127.0.0.1:${o.port}${o.path || '/'}`, '--connections', String(o.connections),
      '--sources', String(o.sources || 1), '--duration', String(o.duration), '--json',
      '--close-wait', String(o.closeWait ?? 5)];
    if (o.rampPerSec) args.push('--ramp-per-sec', String(o.rampPerSec));
    if (o.hold !== undefined && o.hold !== null) args.push('--hold', String(o.hold));
    if (o.maxPending) args.push('--max-pending', String(o.maxPending));
    if (o.serverPid) args.push('--server-pid', String(o.serverPid));
    if (o.schedule) args.push('--schedule', o.schedule);
    if (o.churn) args.push('--churn', String(o.churn));
    if (o.deflate) args.push('--deflate');
    if (o.seq) args.push('--seq');
    if (o.checkSize) args.push('--check-size', String(o.checkSize));
    if (o.pusher) {
      args.push('--pusher', `${o.pusher.key}:${o.pusher.secret}`, '--pusher-channels', String(o.pusher.channels),
        '--pusher-prefix', o.pusher.prefix, '--pusher-base', String(o.pusherBase || 0));
    }
    args.push('--events'); // always: start (the clock), step, reached, one sample a second
    this.args = args;
    const [cmd, argv] = withTaskset(o.cpus, LOADGEN, args);
    this.t0 = now();
    this.child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.pid = this.child.pid;
    this.exitInfo = null;
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitInfo = { code, signal, t: now() };
        this.emit();
        resolve(this.exitInfo);
      });
    });
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      const j = parseJson(line);
      if (j && j.ev) {
        if (j.ev === 'start' && Number.isFinite(j.mono_ns)) this.t0 = monoToNow(j.mono_ns);
        this.events.push({ rt: now(), ...j });
        this.emit();
      } else if (j && 'url' in j) {
        this.summary = j;
      } else if (line.trim() && this.notes.length < 200) {
        this.notes.push(`stdout: ${line}`);
      }
    });
    readline.createInterface({ input: this.child.stderr }).on('line', (line) => {
      const m = PROGRESS.exec(line);
      if (m) {
        this.progress.push({ rt: now(), s: +m[1], open: +m[2], pending: +m[3], failed: +m[4], ended: +m[5], msgsPerS: +m[6] });
        this.emit();
      } else if (line.trim() && this.notes.length < 200) {
        this.notes.push(line);
      }
    });
  }

  get alive() {
    return this.exitInfo === null;
  }

  emit() {
    for (const f of this.listeners.slice()) f();
  }

  /** Resolves when pred() is true (checked at every line), or at exit, or
   * after `timeout` s (then rejects). */
  until(pred, timeout, what) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (pred()) finish(resolve, true);
        else if (!this.alive) finish(resolve, false);
      };
      const timer = setTimeout(() => finish(reject, new Error(`loadgen: ${what} not within ${timeout} s`)), timeout * 1000);
      const finish = (f, v) => {
        clearTimeout(timer);
        const i = this.listeners.indexOf(check);
        if (i >= 0) this.listeners.splice(i, 1);
        f(v);
      };
      this.listeners.push(check);
      check();
    });
  }

  lastProgress() {
    return this.progress.length ? this.progress[this.progress.length - 1] : null;
  }

  /** Every attempt of a fixed population settled (open or failed). */
  settled() {
    if (this.events.some((e) => e.ev === 'reached' && e.i === 0)) return true;
    const p = this.lastProgress();
    return !!p && p.pending === 0 && p.open + p.failed >= this.o.connections;
  }

  /** Runner time of an event's t (loadgen seconds since its start). */
  at(e) {
    return this.t0 + e.t;
  }

  /** SIGUSR1: loadgen closes its interval with a "mark" event (lg.h). */
  mark() {
    if (this.alive) this.child.kill('SIGUSR1');
  }

  markEvent(k) {
    return this.events.find((e) => e.ev === 'mark' && e.k === k) || null;
  }

  async stop(grace = 20) {
    if (this.alive) await terminate(this.child, this.exited, grace, this.notes);
    await this.exited;
    return this.summary;
  }
}

/** Splits n into k near-equal integer parts. */
function split(n, k) {
  return Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));
}

/**
 * A population driven by one or more loadgen processes (shards), each below
 * `shardMax` connections. Schedules are split target by target.
 */
class Loadgen {
  constructor(o) {
    this.o = o;
    const top = o.schedule ? Math.max(...o.schedule.map((s) => s.target)) : o.connections;
    const k = Math.max(1, Math.ceil(top / o.shardMax));
    const conns = split(o.connections, k);
    const perShardSchedule = o.schedule
      ? o.schedule.map((s) => split(s.target, k))
      : null;
    this.shards = conns.map((c, i) => new LoadgenProc({
      ...o,
      // --pusher: every shard's slots are numbered on from the previous ones' (channels, user ids)
      pusherBase: (o.pusherBase || 0) + conns.slice(0, i).reduce((x, y) => x + y, 0),
      connections: c,
      rampPerSec: o.rampPerSec ? Math.max(1, o.rampPerSec / k) : 0,
      schedule: o.schedule ? o.schedule.map((s, j) => `${perShardSchedule[j][i]}:${s.hold}`).join(',') : null,
    }));
    this.t0 = Math.min(...this.shards.map((s) => s.t0));
  }

  get alive() {
    return this.shards.some((s) => s.alive);
  }

  get pids() {
    return this.shards.map((s) => s.pid);
  }

  /** Current open connections (sum of the shards' last progress lines). */
  open() {
    return this.shards.reduce((n, s) => n + (s.lastProgress() ? s.lastProgress().open : 0), 0);
  }

  /** Open connections by the shards' latest event that tells (step
   * reached, sample, mark), else their last progress line. */
  openNow() {
    return this.shards.reduce((n, s) => {
      let best = null;
      for (const e of s.events) if (Number.isFinite(e.open) && e.ev !== 'start' && (!best || e.t >= best.t)) best = e;
      const p = s.lastProgress();
      return n + (best ? best.open : p ? p.open : 0);
    }, 0);
  }

  async waitSettled(timeout) {
    await Promise.all(this.shards.map((s) => s.until(() => s.settled(), timeout, 'ramp settled')));
    return now();
  }

  /** Resolves with the runner time at which every shard emitted event
   * `ev` for step i (the latest of them). */
  async waitEvent(ev, i, timeout) {
    const find = (s) => s.events.find((e) => e.ev === ev && e.i === i);
    await Promise.all(this.shards.map((s) => s.until(() => !!find(s), timeout, `${ev} of step ${i}`)));
    const found = this.shards.map(find);
    if (found.some((e) => !e)) return null;
    return Math.max(...found.map((e, k) => this.shards[k].at(e)));
  }

  async stop(grace) {
    return Promise.all(this.shards.map((s) => s.stop(grace)));
  }

  /** Closes every shard's interval (SIGUSR1); returns the runner time. */
  mark() {
    for (const s of this.shards) s.mark();
    return now();
  }

  /**
   * Mark k of every shard, combined (waits up to `timeout` s for it): the
   * interval's messages, open connections, sequence counts and loadgen CPU
   * summed; latency percentiles of the shards' histograms pooled (`hists`
   * keeps them, to pool with other loadgens'); first/last message on the
   * runner clock. null if a shard never printed it.
   */
  async markFigures(k, timeout = 10) {
    try {
      await Promise.all(this.shards.map((s) => s.until(() => !!s.markEvent(k), timeout, `mark ${k}`)));
    } catch {
      return null;
    }
    const ev = this.shards.map((s) => s.markEvent(k));
    if (ev.some((e) => !e)) return null;
    const sum = (f) => ev.reduce((x, e) => x + (Number.isFinite(e[f]) ? e[f] : 0), 0);
    const hists = ev.map((e) => ({ hist: e.hist, maxNs: e.hist_max_ns }));
    const pooled = ev.every((e) => Array.isArray(e.hist)) ? hist.pool(hists) : null;
    // without histograms (an older loadgen): the worst shard's
    const worst = (f, p) => (pooled ? hist.percentileMs(pooled, p) : Math.max(...ev.map((e) => (e.lat_n ? e[f] : -Infinity))));
    const lat = sum('lat_n') > 0;
    const firsts = ev.map((e, i) => (e.first_t === null ? null : this.shards[i].at({ t: e.first_t }))).filter((x) => x !== null);
    const lasts = ev.map((e, i) => (e.last_t === null ? null : this.shards[i].at({ t: e.last_t }))).filter((x) => x !== null);
    return {
      t: Math.max(...ev.map((e, i) => this.shards[i].at(e))),
      dt: Math.max(...ev.map((e) => e.dt)),
      open: sum('open'),
      msgs: sum('msgs'),
      bytes: sum('bytes'),
      cpu: sum('cpu'),
      latN: sum('lat_n'),
      p50Ms: lat ? worst('p50_ms', 50) : null,
      p90Ms: lat ? worst('p90_ms', 90) : null,
      p99Ms: lat ? worst('p99_ms', 99) : null,
      p999Ms: lat ? worst('p999_ms', 99.9) : null,
      maxMs: lat ? worst('max_ms', 100) : null,
      hists: pooled ? hists : null,
      dups: sum('dups'),
      back: sum('back'),
      gaps: sum('gaps'),
      firstT: firsts.length ? Math.min(...firsts) : null,
      lastT: lasts.length ? Math.max(...lasts) : null,
    };
  }

  async done(timeout) {
    await within(Promise.all(this.shards.map((s) => s.exited)), timeout);
    return this.stop(10);
  }

  summaries() {
    return this.shards.map((s) => s.summary);
  }

  notes() {
    return this.shards.flatMap((s) => s.notes);
  }

  /**
   * Delivery latency in [a, b] (runner clock) from loadgen's once-a-second
   * samples: the worst second's p99.9 and max (ms), over every shard; null
   * when no sample with latencies falls inside (an older loadgen, or no
   * traffic).
   */
  latency(a, b) {
    let worstP999 = null;
    let worstMax = null;
    let n = 0;
    for (const s of this.shards) {
      for (const e of s.events) {
        if (e.ev !== 'sample' || !Number.isFinite(e.p999_ms) || !e.lat_n) continue;
        const t1 = s.at(e);
        if (t1 - e.dt < a - 0.01 || t1 > b + 0.01) continue;
        worstP999 = Math.max(worstP999 ?? 0, e.p999_ms);
        worstMax = Math.max(worstMax ?? 0, e.max_ms);
        n += e.lat_n;
      }
    }
    return worstP999 === null ? null : { p999Ms: worstP999, maxMs: worstMax, messages: n };
  }

  /**
   * Messages and payload bytes delivered in [a, b] (runner clock), from the
   * shards' per-second arrays: whole loadgen seconds inside the window.
   * Returns { messages, bytes, wire, compressed, seconds, open } (bytes:
   * payload, inflated; wire: payload as it came, compressed where it was;
   * compressed: messages that came compressed; seconds: per shard, the same;
   * open: the mean of the open connections over those seconds, summed over
   * the shards).
   */
  delivered(a, b) {
    let messages = 0;
    let bytes = 0;
    let wire = 0;
    let compressed = 0;
    let seconds = 0;
    let open = 0;
    const samples = this.shards.map((s) => s.events.filter((e) => e.ev === 'sample'));
    if (samples.every((l) => l.length)) {
      // loadgen's samples: one per second, each over [t - dt, t]
      let wa = Infinity;
      let wb = -Infinity;
      for (const [k, s] of this.shards.entries()) {
        let n = 0;
        let o = 0;
        for (const e of samples[k]) {
          const t1 = s.at(e);
          const t0 = t1 - e.dt;
          if (t0 < a - 0.01 || t1 > b + 0.01) continue;
          messages += e.msgs;
          bytes += e.bytes;
          wire += e.wire ?? e.bytes;
          compressed += e.zmsgs ?? 0;
          o += e.open * e.dt;
          n += e.dt;
          wa = Math.min(wa, t0);
          wb = Math.max(wb, t1);
        }
        seconds = n;
        open += n > 0 ? o / n : 0;
      }
      return { messages, bytes, wire, compressed, seconds, open, a: wa, b: wb };
    }
    for (const s of this.shards) {
      const ps = s.summary && s.summary.per_second;
      if (!ps) return null;
      const k0 = Math.ceil(a - s.t0);
      const k1 = Math.floor(b - s.t0); // exclusive
      let n = 0;
      let o = 0;
      for (let k = Math.max(0, k0); k < Math.min(k1, ps.messages.length); k++) {
        messages += ps.messages[k];
        bytes += ps.bytes[k];
        o += ps.open ? ps.open[k] : 0;
        n++;
      }
      seconds = n;
      open += n > 0 ? o / n : 0;
    }
    const s0 = this.shards[0];
    const k0 = Math.max(0, Math.ceil(a - s0.t0));
    return { messages, bytes, wire: bytes, compressed: null, seconds, open, a: s0.t0 + k0, b: s0.t0 + k0 + seconds };
  }
}

module.exports = { ServerProc, Loadgen, LOADGEN, split };
