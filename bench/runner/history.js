'use strict';
// The history phase (issue 23): a reconnect storm against symphony's history
// and recovery (symphony.v1, sy.since), against socket.io 4.8's
// connectionStateRecovery; the history's memory per kept message; live CPU
// per delivered message with history on and off. See bench/README.md, "history".
//
// One run = one arm, one fresh server (bench/servers/history-server.js) and K
// client processes (bench/runner/history-client.js, ≤ 2,500 sockets each):
//  1. the server at rate 0; the clients connect (≤ `pending` handshakes at
//     once per process): the server's CPU per connection (no traffic);
//  2. live: `rate` messages/s per topic, settle, a steady window: server
//     CPU per delivered message (the clients' count), the baseline cores;
//  3. (storm arms) cut: every client closes its socket (symphony: terminate;
//     socket.io: a transport close, which keeps its session); the topics get
//     `outageRate`/s each for `outage` s (what the clients miss); back to
//     `rate`; every client reconnects with its position (symphony: sy.since;
//     socket.io: its pid/offset) as fast as the server accepts;
//     the resume window lasts until every client is live again: it has every
//     message up to the live edge at the reconnect (caught up) and then got a
//     message published < `freshMs` ago (live). Server CPU in the window,
//     above the live baseline, per replayed message (the server's count);
//  4. a steady tail, then every client's checks: sequence gaps and
//     duplicates (and symphony.v1 offsets), resumes not recovered;
//  5. (the history arm) fill: messages into fresh topics with no subscriber:
//     the allocator's and the process's bytes per kept message;
//  6. everything stopped by PID.
//
// The arms with `nodes` (issue 24: history across nodes): one Redis (AOF,
// appendfsync everysec) and `nodes` servers over it (symphony: bus: { url };
// socket.io: @socket.io/redis-streams-adapter). Node 0 publishes and has no
// clients; the clients connect to node 1 and, at the storm, reconnect to
// node 2 with their positions (a node that had no subscriber of their
// topics: symphony fills from Redis' stream, socket.io restores the session
// from Redis). Server CPU is every node's together (Redis' apart).

const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { Sampler, readProc } = require('./sample');
const { RedisProc } = require('./redis');
const { now, sleep, finite, monoToNow, within } = require('./util');

const BENCH = path.join(__dirname, '..');
const SERVER = path.join(BENCH, 'servers', 'history-server.js');
const CLIENT = path.join(__dirname, 'history-client.js');
const PER_PROC = 2500;

/** A child speaking JSON lines: `waitFor(pred, s)` resolves with the first line matching. */
class Child {
  constructor(name, cmd, args, { cpus, env, lineStream = 'stdout' } = {}) {
    const [c, a] = cpus ? ['taskset', ['-c', cpus, cmd, ...args]] : [cmd, args];
    this.name = name;
    this.child = spawn(c, a, { env: env || process.env, stdio: ['pipe', 'pipe', 'pipe'], cwd: path.join(BENCH, '..') });
    this.pid = this.child.pid;
    this.alive = true;
    this.lines = [];
    this.odd = [];
    this.waiters = [];
    this.child.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => {
      this.alive = false;
      resolve({ code, signal });
    }));
    const onLine = (src) => (line) => {
      let j = null;
      if (line.startsWith('{')) {
        try {
          j = JSON.parse(line);
        } catch {
          j = null;
        }
      }
      if (!j) {
        if (line.trim() && this.odd.length < 100) this.odd.push(`${src}: ${line}`);
        return;
      }
      j.rt = now();
      this.lines.push(j);
      for (let i = 0; i < this.waiters.length; i++) {
        if (this.waiters[i].pred(j)) {
          this.waiters.splice(i, 1)[0].resolve(j);
          i--;
        }
      }
    };
    readline.createInterface({ input: this.child.stdout }).on('line', onLine('stdout'));
    readline.createInterface({ input: this.child.stderr }).on('line', onLine('stderr'));
  }

  send(line) {
    if (this.alive) this.child.stdin.write(`${line}\n`);
  }

  async waitFor(pred, seconds, what) {
    const r = await within(new Promise((resolve) => this.waiters.push({ pred, resolve })), seconds, null);
    if (!r) throw new Error(`${this.name}: no ${what} within ${seconds} s${this.alive ? '' : ' (exited)'}${this.odd.length ? `: ${this.odd.slice(-3).join(' | ')}` : ''}`);
    return r;
  }

  async ask(word, seconds = 30) {
    const p = this.waitFor((j) => j.ctl === word.split(' ')[0], seconds, `answer to ${word}`);
    this.send(word);
    return p;
  }

  async stop(grace = 10) {
    if (!this.alive) return;
    this.child.kill('SIGTERM');
    if (!(await within(this.exited, grace, null))) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** The end of a phase: stopped, no longer the run's to kill, its odd lines in notes as label's. */
  async retire(ctx, notes, grace = 10, label = this.name) {
    await this.stop(grace);
    ctx.live.delete(this);
    for (const l of this.odd) notes.push(`${label}: ${l}`);
  }
}

function sumClients(list) {
  const keys = ['n', 'open', 'caught', 'live', 'msgs', 'gaps', 'dups', 'offGaps', 'offDups', 'notRecovered', 'replayed', 'connectErrors', 'recoveredFlag', 'rssKiB'];
  const s = Object.fromEntries(keys.map((k) => [k, list.reduce((a, x) => a + (x[k] || 0), 0)]));
  s.reasons = {};
  for (const x of list) for (const [k, v] of Object.entries(x.reasons || {})) s.reasons[k] = (s.reasons[k] || 0) + v;
  const maxNs = (k) => list.reduce((m, x) => (BigInt(x[k] || '0') > m ? BigInt(x[k] || '0') : m), 0n);
  s.maxLive = maxNs('maxLiveNs');
  s.maxCaught = maxNs('maxCaughtNs');
  s.maxConn = maxNs('maxConnNs');
  return s;
}

async function history(ctx, arm, repeat) {
  const c = ctx.cfg.history;
  const info = { phase: 'history', arm: arm.name, repeat };
  const n = arm.peer ? c.peerClients : c.clients;
  const storm = arm.storm !== false;
  const mark = (step, extra = {}) => {
    ctx.status.step = step;
    ctx.rec.event(info, { ev: 'mark', step, t: now(), ...extra });
    ctx.progress(true);
  };
  const env = { ...process.env, ...arm.env };
  for (const k of ['SYMPHONY_NATIVE', 'BENCH_SYMPHONY_ROOT', 'LD_PRELOAD', 'MALLOC_CONF', 'SY_JE_MALLOC_CONF']) if (!(k in arm.env)) delete env[k];
  const bound = 60 + 3 * n / 100 + c.settle + c.window + c.outage + c.resumeBound + c.tail + 60;
  const nodes = arm.nodes || 1;
  const clients = [];
  const notes = [];
  const servers = [];
  const redisLog = [];
  let redis = null;
  const sampler = { stop() {}, samples: [] };
  let smp = sampler;
  let server = null;
  try {
    if (nodes > 1) {
      redis = await RedisProc.start({ cpus: ctx.cpus.server, log: redisLog, aof: 'everysec' });
      ctx.live.add(redis);
    }
    for (let k = 0; k < nodes; k++) {
      const s = new Child(`${arm.name} server${nodes > 1 ? ` ${k}` : ''}`, process.execPath, [SERVER, '--impl', arm.impl, '--history', arm.history ? '1' : '0',
        '--size', String(c.size), '--ttl', String(c.ttl), '--topics', String(c.topics), '--rate', '0', '--payload', String(c.payload),
        '--threads', String(ctx.cfg.cpuThreads), '--duration', String(Math.ceil(bound)), ...(redis ? ['--bus-url', redis.url] : [])],
      { cpus: ctx.cpus.server, env });
      servers.push(s);
      ctx.live.add(s);
    }
    server = servers[0];
    const t0Server = now();
    const hellos = await Promise.all(servers.map((s) => s.waitFor((j) => typeof j.port === 'number', 30, 'port')));
    const hello = hellos[nodes > 1 ? 1 : 0]; // the clients' first node
    if (nodes > 1) {
      const t1 = now() + 20;
      for (;;) {
        const st = await Promise.all(servers.map((s) => s.ask('mark')));
        if (st.every((x) => x.busState === 'up')) break;
        if (now() > t1) throw new Error(`${arm.name}: the nodes' Redis not up within 20 s (${st.map((x) => x.busState).join(', ')})`);
        await sleep(0.05);
      }
    }
    const cpuEach = () => servers.map((s) => (readProc(s.pid) || {}).cpuS || 0);
    const cpuAll = () => cpuEach().reduce((a, x) => a + x, 0);
    const redisCpu = () => (redis ? (readProc(redis.pid) || {}).cpuS || 0 : 0);
    // node 0's counters (seq, published), the replay counters of every node summed
    const markNodes = async () => {
      const all = await Promise.all(servers.map((s) => s.ask('mark')));
      const m = { ...all[0] };
      for (const k of ['replays', 'replayed', 'recovered', 'restoreFailed']) m[k] = all.reduce((a, x) => a + (x[k] || 0), 0);
      m.perNode = all;
      return m;
    };
    if (arm.impl === 'symphony' && (!hello.symphony || !hello.symphony.native || !hello.symphony.native.startsWith(path.join(BENCH, '..')))) {
      throw new Error(`${arm.name}: loaded ${hello.symphony && hello.symphony.native}, not this checkout's build`);
    }
    smp = new Sampler(server.pid, { hz: ctx.cfg.sampleHz, onSample: (s) => {
      ctx.status.fpKiB = s.fpKiB;
      ctx.rec.sample(info, { pid: server.pid, t0: t0Server }, s);
    } });
    const procs = Math.max(1, Math.ceil(n / PER_PROC));
    for (let k = 0; k < procs; k++) {
      const first = Math.floor((k * n) / procs);
      const count = Math.floor(((k + 1) * n) / procs) - first;
      const cl = new Child(`client ${k}`, process.execPath, [CLIENT, '--impl', arm.impl, '--port', String(hello.port), '--count', String(count),
        '--first', String(first), '--topics', String(c.topics), '--local', `127.0.0.${2 + k}`, '--pending', String(c.pending),
        '--fresh-ms', String(c.freshMs)], { cpus: ctx.cpus.loadgen });
      ctx.live.add(cl);
      clients.push(cl);
    }
    await Promise.all(clients.map((cl) => cl.waitFor((j) => j.ev === 'ready', 30, 'ready')));
    const clientCpu = () => clients.reduce((s, cl) => s + ((readProc(cl.pid) || {}).cpuS || 0), 0);
    const all = async (word, ev, seconds) => {
      const ps = clients.map((cl) => cl.waitFor((j) => j.ev === ev && j.rt >= tSent, seconds, ev));
      const tSent = now();
      for (const cl of clients) cl.send(word);
      return sumClients(await Promise.all(ps));
    };

    // 1. connect, no traffic
    mark(`connect: ${n} clients (${procs} processes)`);
    const tc0 = now();
    const pc0 = { cpuS: cpuAll() };
    const con = await all('connect', 'connected', 60 + n / 20);
    const tc1 = now();
    const pc1 = { cpuS: cpuAll() };
    if (con.open < n) throw new Error(`connect: ${con.open} of ${n} open`);
    const connectS = tc1 - tc0;
    const cpuPerConn = (pc1.cpuS - pc0.cpuS) / n;

    // 2. live, steady window
    mark(`live: ${c.rate} msg/s per topic × ${c.topics} topics, ${n / c.topics} subscribers each`);
    await server.ask(`rate ${c.rate}`);
    await sleep(c.settle);
    const w0 = { t: now(), e: cpuEach(), p: { ...readProc(server.pid), cpuS: cpuAll() }, r: redisCpu(), cl: clientCpu(), c: await all('mark', 'mark', 30), s: await markNodes() };
    await sleep(c.window);
    const w1 = { t: now(), e: cpuEach(), p: { ...readProc(hellos.length > 1 ? servers[1].pid : server.pid), cpuS: cpuAll() }, r: redisCpu(), cl: clientCpu(), c: await all('mark', 'mark', 30), s: await markNodes() };
    const T = w1.t - w0.t;
    const delivered = w1.c.msgs - w0.c.msgs;
    const liveCpu = w1.p.cpuS - w0.p.cpuS;
    const live = {
      seconds: T,
      delivered,
      msgsPerS: delivered / T,
      expectedPerS: c.rate * n,
      deliveredPct: (100 * delivered) / (c.rate * n * T),
      serverCores: liveCpu / T,
      nodeCores: w1.e.map((x, k) => (x - w0.e[k]) / T), // each node's (node 0 publishes)
      cpuUsPerMsg: (liveCpu / delivered) * 1e6,
      cpuSPer1M: (liveCpu / delivered) * 1e6,
      clientCores: (w1.cl - w0.cl) / T,
      rssKiB: w1.p.rssKiB,
      gapsDups: w1.c.gaps + w1.c.dups + w1.c.offGaps + w1.c.offDups,
      ...(redis ? { redisCores: (w1.r - w0.r) / T, redisUsPerPublish: ((w1.r - w0.r) / Math.max(1, w1.s.published - w0.s.published)) * 1e6,
        cpuSPer1MWithRedis: ((liveCpu + w1.r - w0.r) / delivered) * 1e6 } : {}),
    };
    const fig = { impl: arm.impl, history: !!arm.history, nodes, clients: n, topics: c.topics, rate: c.rate, payload: c.payload, size: c.size, ttl: c.ttl,
      clientProcs: procs, connectS, cpuPerConnMs: cpuPerConn * 1e3, live, pin: { server: ctx.cpus.server || null, clients: ctx.cpus.loadgen || null } };

    if (storm) {
      // 3. the cut
      mark(`cut: ${n} clients close; ${c.outageRate} msg/s per topic for ${c.outage} s`);
      const cut = await all('cut', 'cut', 60);
      if (cut.open) notes.push(`cut: ${cut.open} clients still open`);
      const s0 = await markNodes();
      await server.ask(`rate ${c.outageRate}`);
      await sleep(c.outage);
      const back = await server.ask(`rate ${c.rate}`);
      const sCut = await markNodes();
      const missedPerClient = (sCut.published - s0.published) / c.topics;
      // 4. the storm
      mark(`reconnect: ${n} clients with their positions (~${Math.round(missedPerClient)} missed each)`);
      const tr = now();
      const pr = { cpuS: cpuAll() };
      const clr = clientCpu();
      // caught at once: a process still reconnecting at the bound must not be an unhandled rejection
      const recon = clients.map((cl) => cl.waitFor((j) => j.ev === 'reconnected' && j.rt >= tr, c.resumeBound, 'reconnected').catch(() => ({})));
      // one node: the same server; several: node 2 (the clients were on node 1)
      for (const cl of clients) cl.send(`reconnect ${back.seq.join(',')}${nodes > 2 ? ` ${hellos[2].port}` : ''}`);
      let st = null;
      let peakKiB = 0;
      for (;;) {
        await sleep(0.25);
        const s = readProc(servers[nodes > 2 ? 2 : 0].pid);
        if (s) peakKiB = Math.max(peakKiB, s.rssKiB);
        st = await all('mark', 'mark', 30);
        ctx.status.step = `resume: ${st.open}/${n} open, ${st.caught} caught up, ${st.live} live, ${st.msgs} msgs`;
        ctx.progress(false);
        if (st.live >= n || now() - tr > c.resumeBound) break;
      }
      const td = now();
      const pd = { cpuS: cpuAll() };
      const cld = clientCpu();
      const sEnd = await markNodes();
      const reconnected = sumClients(await Promise.all(recon));
      const tLive = st.live >= n ? monoToNow(st.maxLive) : null;
      const tCaught = st.caught >= n ? monoToNow(st.maxCaught) : null;
      const tConn = monoToNow(st.maxConn);
      const replayed = (sEnd.replayed || 0) - (sCut.replayed || 0);
      const W = td - tr;
      const cpu = pd.cpuS - pr.cpuS;
      const above = cpu - live.serverCores * W;
      // the live deliveries made in the window (clients' count minus the replayed), at the live window's CPU per message
      const liveInWindow = Math.max(0, st.msgs - cut.msgs - replayed);
      const beyondLive = cpu - (live.cpuUsPerMsg / 1e6) * liveInWindow;
      const handshakes = cpuPerConn * n;
      // 5. a steady tail, then the checks
      mark(`tail: ${c.tail} s live`);
      await sleep(c.tail);
      const fin = await all('mark', 'mark', 30);
      const sFin = await markNodes();
      fig.storm = {
        outageS: c.outage,
        outageRate: c.outageRate,
        missedPerClient,
        allConnectedS: tConn ? tConn - tr : null,
        allCaughtUpS: tCaught === null ? null : tCaught - tr,
        allLiveS: tLive === null ? null : tLive - tr,
        // the slowest client process's median client
        p50LiveS: maxOf(clients, 'p50LiveNs') > 0n ? monoToNow(String(maxOf(clients, 'p50LiveNs'))) - tr : null,
        windowS: W,
        live: st.live,
        caught: st.caught,
        replays: (sEnd.replays || 0) - (sCut.replays || 0),
        replayed,
        replayedPerClient: replayed / n,
        serverRecovered: (sEnd.recovered || 0) - (sCut.recovered || 0),
        serverFailed: sEnd.recoveryFailed || (sEnd.restoreFailed !== undefined ? { restoreFailed: sEnd.restoreFailed } : null),
        serverCpuS: cpu,
        serverCores: cpu / W,
        baselineCores: live.serverCores,
        cpuAboveBaselineS: above,
        handshakeCpuS: handshakes,
        cpuUsPerReplayedRaw: replayed ? (cpu / replayed) * 1e6 : null,
        cpuUsPerReplayed: replayed ? (above / replayed) * 1e6 : null,
        cpuUsPerReplayedNoHandshakes: replayed ? ((above - handshakes) / replayed) * 1e6 : null,
        liveInWindow,
        cpuBeyondLiveS: beyondLive,
        cpuUsPerReplayedBeyondLive: replayed ? (beyondLive / replayed) * 1e6 : null,
        cpuUsPerReplayedBeyondLiveNoHandshakes: replayed ? ((beyondLive - handshakes) / replayed) * 1e6 : null,
        clientCores: (cld - clr) / W,
        peakRssInWindowKiB: peakKiB,
        rssBeforeCutKiB: live.rssKiB,
        failures: reconnected.connectErrors,
        gaps: fin.gaps,
        dups: fin.dups,
        offsetGaps: fin.offGaps,
        offsetDups: fin.offDups,
        notRecovered: fin.notRecovered,
        reasons: fin.reasons,
        recoveredFlag: fin.recoveredFlag,
        msgsTotal: fin.msgs,
        historyMessages: sFin.historyMessages,
        historyBytes: sFin.historyBytes,
        socketioStoredPackets: sFin.storedPackets ?? null,
        resumedOnNode: nodes > 2 ? 2 : 0,
        busByNode: nodes > 1 ? sFin.perNode.map((x) => x.bus || null) : null,
      };
      if (st.live < n) notes.push(`resume: only ${st.live} of ${n} clients live after ${c.resumeBound} s`);
    } else {
      const fin = await all('mark', 'mark', 30);
      fig.checks = { gaps: fin.gaps, dups: fin.dups, offsetGaps: fin.offGaps, offsetDups: fin.offDups };
    }

    // 6. the history's memory per kept message (a server with history only)
    if (arm.fill && arm.history && nodes === 1) {
      mark(`fill: ${c.fillTopics} topics × ${c.fillPerTopic} messages of ${c.payload} B, no subscriber`);
      await server.ask('rate 0');
      await sleep(0.5);
      const r0 = readProc(server.pid);
      const f = await server.ask(`fill ${c.fillTopics} ${c.fillPerTopic}`, 120);
      await sleep(1);
      const r1 = readProc(server.pid);
      const N = f.stored;
      const dMsgs = f.after.historyMessages - f.before.historyMessages;
      const dBytes = f.after.historyBytes - f.before.historyBytes;
      const frame = dBytes / dMsgs - 64; // SY_HIST_ENTRY_OVERHEAD (src/io/model/sy_history.h)
      fig.memory = {
        stored: N,
        keptMessages: dMsgs,
        payload: c.payload,
        frameBytes: frame,
        historyBytesPerMsg: dBytes / dMsgs,
        allocatorBytesPerMsg: (f.after.allocated - f.before.allocated) / dMsgs,
        allocatorActiveBytesPerMsg: (f.after.active - f.before.active) / dMsgs,
        rssBytesPerMsg: ((r1.rssKiB - r0.rssKiB) * 1024) / dMsgs,
        overheadAllocatorB: (f.after.allocated - f.before.allocated) / dMsgs - frame,
        overheadRssB: ((r1.rssKiB - r0.rssKiB) * 1024) / dMsgs - frame,
        fillMs: f.fillMs,
        position: f.position,
      };
    }
    fig.peakRssKiB = Math.max(...smp.samples.map((s) => s.rssKiB), 0);
    for (const cl of clients) cl.send('exit');
    await sleep(0.3);
    return { figures: fig, notes };
  } finally {
    for (const cl of clients) await cl.retire(ctx, notes, 5);
    for (const [k, s] of servers.entries()) {
      s.send('');
      await s.retire(ctx, notes, 15, `server${nodes > 1 ? ` ${k}` : ''}`);
      ctx.rec.event(info, { ev: 'server-final', node: k, pid: s.pid, final: s.lines.find((j) => j.final) || null });
    }
    smp.stop();
    if (redis) {
      await redis.stop();
      ctx.live.delete(redis);
    }
    for (const l of redisLog) notes.push(l);
  }
}

function maxOf(clients, key) {
  // the largest per-process value of `key` in the clients' last lines (ns, BigInt)
  let m = 0n;
  for (const cl of clients) {
    const last = [...cl.lines].reverse().find((j) => j[key] !== undefined);
    if (last && BigInt(last[key]) > m) m = BigInt(last[key]);
  }
  return m;
}

module.exports = { history, Child };
