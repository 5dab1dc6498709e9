'use strict';
// The presence phase (issue 26): what presence costs per join and leave and
// per query, across nodes over Redis. See bench/README.md, "presence".
//
// One run = one arm (presence on: sy-presence; off: sy-nopresence), fresh
// processes: one Redis (persistence off), `nodes` symphony nodes over it
// (bench/servers/presence-server.js, bus: { url }, presence: { ttl } or
// false), and client processes (bench/runner/presence-client.js, raw
// sockets, ≤ `perProc` each): connection i goes to node i % nodes, room
// r<i % rooms>, presence info { user: 'u<i>' }.
//  1. open: every client process opens its connections as fast as the nodes
//     answer (`pending` handshakes in flight per process); done when every
//     connection has its 101, every node counted its opens and (presence)
//     every node heard every join ('join' events: N on each node). Rates:
//     connections/s (the last 101), joins/s (the last join heard by the
//     slowest node); per join: the nodes' CPU, Redis' CPU, Redis' own time
//     (INFO commandstats: usec, calls per command), used_memory per entry;
//  2. hold `hold` s with every entry in Redis: the renewal's cost (Redis'
//     time and CPU per second; a node renews each of its rooms every ttl/3);
//  3. queries (from node 0): server.presence(room) K times sequentially and
//     K times C at once; server.bus.subscribers(room) K times sequentially:
//     latency p50/p99, calls/s, Redis time per call (the hold's renewal rate
//     taken out);
//  4. close: every client sends a close frame; done when every node counted
//     its closes and (presence) heard every leave: closes/s, leaves/s, the
//     same costs per leave, used_memory back;
//  5. everything stopped by PID.
// A join or leave some node never hears does not stall the run: once the
// connections are done and no event has come for `stall` s, the step ends
// and the events never heard are counted (joinsMissing, leavesMissing); one
// heard twice is counted apart by the nodes (dupJoins, dupLeaves).

const path = require('node:path');
const { Child } = require('./history');
const { readProc } = require('./sample');
const { RedisProc, RespClient } = require('./redis');
const { now, sleep, watching, monoToNow } = require('./util');

const BENCH = path.join(__dirname, '..');
const SERVER = path.join(BENCH, 'servers', 'presence-server.js');
const CLIENT = path.join(__dirname, 'presence-client.js');

/** INFO <section> as { key: value } (numbers where they are numbers). */
async function info(cl, section) {
  const text = await cl.command(['INFO', section], 5);
  const out = {};
  for (const line of String(text).split('\r\n')) {
    const i = line.indexOf(':');
    if (i <= 0 || line.startsWith('#')) continue;
    const v = line.slice(i + 1);
    out[line.slice(0, i)] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  }
  return out;
}

/** INFO commandstats as { command: { calls, usec } }. */
async function commandStats(cl) {
  const raw = await info(cl, 'commandstats');
  const out = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!k.startsWith('cmdstat_')) continue;
    const f = Object.fromEntries(String(v).split(',').map((kv) => kv.split('=')));
    out[k.slice(8)] = { calls: Number(f.calls), usec: Number(f.usec) };
  }
  return out;
}

// The commands presence's scripts call (lib/presence.js): Redis counts them
// in commandstats as well as the EVAL that ran them, whose time includes
// theirs; and the runner's own questions.
const IN_SCRIPTS = new Set(['time', 'zrangebyscore', 'hgetall', 'del', 'zrem', 'hset', 'hdel', 'hlen', 'zadd', 'pexpire', 'zrange']);
const RUNNER = new Set(['info', 'dbsize', 'scan', 'memory|usage', 'memory']);

/** b − a per command (those with calls in between), and the sums of the
 * commands the nodes sent (not those their scripts ran, not the runner's). */
function statsDelta(a, b) {
  const per = {};
  let calls = 0;
  let usec = 0;
  for (const [k, v] of Object.entries(b)) {
    const d = { calls: v.calls - (a[k]?.calls || 0), usec: v.usec - (a[k]?.usec || 0) };
    if (d.calls <= 0) continue;
    per[k] = d;
    if (IN_SCRIPTS.has(k) || RUNNER.has(k)) continue;
    calls += d.calls;
    usec += d.usec;
  }
  return { per, calls, usec };
}

/** The bytes Redis holds for presence' keys (MEMORY USAGE, exact: SAMPLES 0), and how many keys. */
async function presenceBytes(cl) {
  let cursor = '0';
  let bytes = 0;
  let keys = 0;
  do {
    const [next, list] = await cl.command(['SCAN', cursor, 'MATCH', '*:presence*', 'COUNT', '1000'], 5);
    for (const k of list) {
      bytes += Number(await cl.command(['MEMORY', 'USAGE', k, 'SAMPLES', '0'], 5)) || 0;
      keys++;
    }
    cursor = next;
  } while (cursor !== '0');
  return { bytes, keys };
}

/** Redis' CPU time (s): INFO cpu (getrusage, µs resolution). */
async function redisCpu(cl) {
  const x = await info(cl, 'cpu');
  return x.used_cpu_sys + x.used_cpu_user;
}

async function presence(ctx, arm, repeat) {
  const c = ctx.cfg.presence;
  const info0 = { phase: 'presence', arm: arm.name, repeat };
  const N = c.connections;
  const on = !!arm.presence;
  const mark = (step) => {
    ctx.status.step = step;
    ctx.rec.event(info0, { ev: 'mark', step, t: now() });
    ctx.progress(true);
  };
  const env = { ...process.env, ...arm.env };
  for (const k of ['SYMPHONY_NATIVE', 'BENCH_SYMPHONY_ROOT', 'LD_PRELOAD', 'MALLOC_CONF', 'SY_JE_MALLOC_CONF']) if (!(k in arm.env)) delete env[k];
  const bound = Math.ceil(120 + 2 * c.openBound + c.hold + 3 * c.queries / 50);
  const notes = [];
  const redisLog = [];
  const nodes = [];
  const clients = [];
  let redis = null;
  let rc = null;
  try {
    redis = await RedisProc.start({ bin: ctx.cfg.bus.redisServer, cpus: ctx.cpus.server, log: redisLog });
    ctx.live.add(redis);
    rc = await RespClient.connect(redis.port, 5);
    for (let k = 0; k < c.nodes; k++) {
      const s = new Child(`node ${k}`, process.execPath, [SERVER, '--presence', on ? '1' : '0', '--ttl', String(c.ttl),
        '--threads', String(c.threads), '--duration', String(bound), '--bus-url', redis.url], { cpus: ctx.cpus.server, env });
      nodes.push(s);
      ctx.live.add(s);
    }
    const hellos = await Promise.all(nodes.map((s) => s.waitFor((j) => typeof j.port === 'number', 30, 'port')));
    for (const h of hellos) {
      if (!h.symphony || !h.symphony.native || !h.symphony.native.startsWith(path.join(BENCH, '..'))) {
        throw new Error(`${arm.name}: a node loaded ${h.symphony && h.symphony.native}, not this checkout's build`);
      }
    }
    const markAll = () => Promise.all(nodes.map((s) => s.ask('mark')));
    const tUp = now() + 20;
    for (;;) {
      const st = await markAll();
      if (st.every((x) => x.busState === 'up')) break;
      if (now() > tUp) throw new Error(`${arm.name}: the nodes' bus not up within 20 s (${st.map((x) => x.busState).join(', ')})`);
      await sleep(0.05);
    }

    const procs = Math.max(1, Math.ceil(N / c.perProc));
    const ports = hellos.map((h) => h.port).join(',');
    for (let k = 0; k < procs; k++) {
      const first = Math.floor((k * N) / procs);
      const count = Math.floor(((k + 1) * N) / procs) - first;
      const cl = new Child(`client ${k}`, process.execPath, [CLIENT, '--ports', ports, '--count', String(count), '--first', String(first),
        '--rooms', String(c.rooms), '--pending', String(c.pending), '--local', `127.0.0.${2 + k}`, '--timeout', String(c.openBound)],
      { cpus: ctx.cpus.loadgen });
      clients.push(cl);
      ctx.live.add(cl);
    }
    await Promise.all(clients.map((cl) => cl.waitFor((j) => j.ev === 'ready', 30, 'ready')));
    const perNode = Array.from({ length: c.nodes }, (_, k) => Math.floor((N - 1 - k) / c.nodes) + 1);
    const gcd = (a, b) => (b ? gcd(b, a % b) : a);
    if (gcd(c.rooms, c.nodes) !== 1) notes.push(`${c.rooms} rooms over ${c.nodes} nodes: a room's members are on ${c.nodes / gcd(c.rooms, c.nodes)} of the nodes only (connection i: node i % ${c.nodes}, room i % ${c.rooms})`);

    // What every step reads at its ends.
    const snap = async () => {
      const marks = await markAll();
      return {
        t: now(),
        marks,
        nodesCpu: marks.map((m) => m.cpuUs / 1e6),
        redisCpu: await redisCpu(rc),
        clientsCpu: clients.reduce((a, cl) => a + ((readProc(cl.pid) || {}).cpuS || 0), 0),
        cmd: await commandStats(rc),
        mem: (await info(rc, 'memory')).used_memory,
        keys: await rc.command(['DBSIZE'], 5),
      };
    };
    const costs = (a, b, per) => {
      const d = statsDelta(a.cmd, b.cmd);
      const nodesCpuS = b.nodesCpu.reduce((s, x, i) => s + x - a.nodesCpu[i], 0);
      const evalsha = d.per.evalsha || { calls: 0, usec: 0 };
      const eval_ = d.per.eval || { calls: 0, usec: 0 };
      return {
        seconds: b.t - a.t,
        nodesCpuS,
        nodesCpuUsPer: (nodesCpuS / per) * 1e6,
        nodesCpuByNode: b.nodesCpu.map((x, i) => x - a.nodesCpu[i]),
        redisCpuS: b.redisCpu - a.redisCpu,
        redisCpuUsPer: ((b.redisCpu - a.redisCpu) / per) * 1e6,
        clientsCpuS: b.clientsCpu - a.clientsCpu,
        redisCalls: d.calls,
        redisUsec: d.usec,
        redisUsecPer: d.usec / per,
        scriptCalls: evalsha.calls + eval_.calls,
        scriptUsecPer: (evalsha.usec + eval_.usec) / per,
        scriptCallsPer: (evalsha.calls + eval_.calls) / per,
        commands: d.per,
        usedMemoryDelta: b.mem - a.mem,
      };
    };
    const sum = (marks, k) => marks.reduce((a, m) => a + (m[k] || 0), 0);

    const where = (what, marks) => {
      ctx.status.step = `${what}: ${marks.map((m) => (on ? `${m.opens - m.closes} open, ${m.joins - m.leaves} present` : `${m.opens - m.closes} open`)).join(' | ')}`;
      ctx.progress(false);
    };
    /**
     * Polls until conns(marks) and events(marks) (complete), or until
     * conns(marks) and the events counted have not moved for `c.stall` s
     * (incomplete: some were never heard); an error when the connections are
     * not done within boundS. The progress line says where it is.
     */
    const until = async (what, conns, events, boundS) => {
      const t1 = now() + boundS;
      let last = null;
      let since = now();
      for (;;) {
        const marks = await markAll();
        where(what, marks);
        const heard = marks.map((m) => `${m.joins}/${m.leaves}`).join(' ');
        if (heard !== last) {
          last = heard;
          since = now();
        }
        if (conns(marks) && events(marks)) return { marks, complete: true };
        if (conns(marks) && now() - since >= c.stall) return { marks, complete: false };
        if (now() > t1) throw new Error(`${what}: not done within ${boundS} s (${ctx.status.step})`);
        await sleep(0.1);
      }
    };
    /** p, with the nodes' counts in the progress line meanwhile. */
    const counting = (what, p) => watching(p, async () => where(what, await markAll()));

    // 1. open
    const s0 = await snap();
    mark(`open: ${N} connections (${procs} client processes, ${c.pending} handshakes in flight each) over ${c.nodes} nodes, ${c.rooms} rooms${on ? ', presence on' : ', presence off'}`);
    const tOpen = now();
    const opened = clients.map((cl) => cl.waitFor((j) => j.ev === 'opened', c.openBound + 30, 'opened'));
    for (const cl of clients) cl.send('open');
    const op = await counting('open', Promise.all(opened));
    const openCount = op.reduce((a, x) => a + x.open, 0);
    if (openCount < N) throw new Error(`open: ${openCount} of ${N} opened (${JSON.stringify(op.map((x) => x.errors))})`);
    const { marks: m1, complete: openComplete } = await until('open', (ms) => ms.every((m, k) => m.opens >= perNode[k]),
      (ms) => !on || ms.every((m) => m.joins >= N), c.openBound);
    if (!openComplete) notes.push(`open: joins heard per node ${m1.map((m) => m.joins).join(', ')} of ${N}, none more for ${c.stall} s`);
    const s1 = await snap();
    const bytes1 = await presenceBytes(rc);
    const tLast101 = Math.max(...op.map((x) => monoToNow(x.lastNs)));
    const tOpens = Math.max(...m1.map((m) => monoToNow(m.lastOpenNs)));
    const heardJoin = on && openComplete ? m1.map((m) => monoToNow(m.lastJoinNs) - tOpen) : null;
    const open = {
      connections: N,
      clientSeconds: tLast101 - tOpen,
      connectionsPerS: N / (tLast101 - tOpen),
      nodeOpensSeconds: tOpens - tOpen,
      allHeardSeconds: heardJoin ? Math.max(...heardJoin) : null,
      heardSecondsByNode: heardJoin,
      joinsPerS: heardJoin ? N / Math.max(...heardJoin) : null,
      // joins never heard, per node (0 when complete)
      joinsMissing: on ? m1.map((m) => N - m.joins) : null,
      joinsHeard: on ? m1.map((m) => m.joins) : null,
      // joins heard again (the same room, node and connection), per node: a node wrote a room whole again
      dupJoinsHeard: on ? m1.map((m) => m.dupJoins) : null,
      ...costs(s0, s1, N),
      usedMemoryPerEntry: on ? (s1.mem - s0.mem) / N : null,
      keys: s1.keys,
      presenceKeys: bytes1.keys,
      presenceBytesPerEntry: on ? bytes1.bytes / N : null,
    };
    ctx.rec.event(info0, { ev: 'open', ...open, commands: undefined });

    // 2. hold: the renewals
    mark(`hold: ${c.hold} s with ${N} ${on ? 'entries' : 'connections'} (renewal every ${c.ttl / 3000} s per node and room)`);
    const s1h = await snap();
    await sleep(c.hold);
    const s2 = await snap();
    const hold = costs(s1h, s2, 1);
    const renewUsecPerS = hold.redisUsec / hold.seconds;
    const renewScriptsPerS = hold.scriptCalls / hold.seconds;
    const holdFig = { seconds: hold.seconds, redisUsecPerS: renewUsecPerS, redisCpuPct: (100 * hold.redisCpuS) / hold.seconds,
      scriptsPerS: renewScriptsPerS, nodesCpuPct: (100 * hold.nodesCpuS) / hold.seconds, commands: hold.commands,
      usedMemory: s2.mem, usedMemoryPerEntry: on ? (s2.mem - s0.mem) / N : null };

    // 3. queries from node 0
    const q = {};
    const ask = async (word, what) => {
      const a = await snap();
      const r = await nodes[0].ask(word, 60 + c.queries);
      const b = await snap();
      const k = costs(a, b, r.calls);
      const T = (Number(BigInt(r.t1Ns) - BigInt(r.t0Ns)) / 1e9);
      // the renewals that ran meanwhile, at the hold's rate, taken out
      const bg = renewUsecPerS * T;
      return { what, calls: r.calls, failed: r.failed, firstError: r.firstError, perS: r.perS, p50Ms: r.p50Ms, p99Ms: r.p99Ms, maxMs: r.maxMs,
        entries: r.entries || null, counts: r.counts || null,
        redisUsecPerCall: (k.redisUsec - bg) / r.calls, redisUsecPerCallRaw: k.redisUsecPer, redisCallsPerCall: k.redisCalls / r.calls,
        redisCpuUsPerCall: k.redisCpuUsPer, node0CpuUsPerCall: (k.nodesCpuByNode[0] / r.calls) * 1e6, nodesCpuUsPerCall: k.nodesCpuUsPer,
        commands: k.commands };
    };
    if (on) {
      mark(`queries: server.presence(room) × ${c.queries} sequential (${N / c.rooms} members each)`);
      q.presenceSeq = await ask(`presence ${c.queries} 1 ${c.rooms}`, 'server.presence(room), sequential');
      mark(`queries: server.presence(room) × ${c.queries}, ${c.concurrency} at once`);
      q.presenceConc = await ask(`presence ${c.queries} ${c.concurrency} ${c.rooms}`, `server.presence(room), ${c.concurrency} at once`);
      const members = N / c.rooms;
      for (const x of [q.presenceSeq, q.presenceConc]) {
        if (x.failed || !x.entries || x.entries.min < Math.floor(members) || x.entries.max > Math.ceil(members)) {
          notes.push(`${x.what}: ${x.failed} failed${x.firstError ? ` (${x.firstError})` : ''}, entries ${JSON.stringify(x.entries)} (expected ${members})`);
        }
      }
    }
    mark(`queries: server.bus.subscribers(room) × ${c.queries} sequential`);
    q.subscribers = await ask(`subscribers ${c.queries} ${c.rooms}`, 'server.bus.subscribers(room), sequential');
    if (q.subscribers.failed || q.subscribers.counts.min < Math.floor(N / c.rooms)) {
      notes.push(`subscribers: ${q.subscribers.failed} failed${q.subscribers.firstError ? ` (${q.subscribers.firstError})` : ''}, counts ${JSON.stringify(q.subscribers.counts)}`);
    }

    // 4. close
    const s3 = await snap();
    const base = s3.marks;
    mark(`close: ${N} connections`);
    const tClose = now();
    const closedP = clients.map((cl) => cl.waitFor((j) => j.ev === 'closed', c.openBound + 30, 'closed'));
    for (const cl of clients) cl.send('close');
    const cp = await counting('close', Promise.all(closedP));
    const { marks: m4, complete: closeComplete } = await until('close', (ms) => ms.every((m, k) => m.closes - base[k].closes >= perNode[k]),
      (ms) => !on || ms.every((m, k) => m.leaves - base[k].leaves >= N), c.openBound);
    if (!closeComplete) {
      notes.push(`close: leaves heard per node ${m4.map((m, k) => m.leaves - base[k].leaves).join(', ')} of ${N}, none more for ${c.stall} s`);
    }
    const s4 = await snap();
    const bytes4 = await presenceBytes(rc);
    const tCloses = Math.max(...m4.map((m) => monoToNow(m.lastCloseNs)));
    const heardLeave = on && closeComplete ? m4.map((m) => monoToNow(m.lastLeaveNs) - tClose) : null;
    const close = {
      closedByClients: cp.reduce((a, x) => a + x.closed, 0),
      clientSeconds: Math.max(...cp.map((x) => monoToNow(x.lastNs))) - tClose,
      nodeClosesSeconds: tCloses - tClose,
      closesPerS: N / (tCloses - tClose),
      allHeardSeconds: heardLeave ? Math.max(...heardLeave) : null,
      heardSecondsByNode: heardLeave,
      leavesPerS: heardLeave ? N / Math.max(...heardLeave) : null,
      // leaves never heard, per node (0 when complete)
      leavesMissing: on ? m4.map((m, k) => N - (m.leaves - base[k].leaves)) : null,
      expired: sum(m4, 'expired'),
      dupJoinsHeard: on ? m4.map((m) => m.dupJoins) : null,
      dupLeavesHeard: on ? m4.map((m) => m.dupLeaves - base[m4.indexOf(m)].dupLeaves) : null,
      ...costs(s3, s4, N),
      usedMemoryAfter: s4.mem,
      usedMemoryBackPerEntry: on ? (s3.mem - s4.mem) / N : null,
      keysAfter: s4.keys,
      presenceKeysAfter: bytes4.keys,
    };
    ctx.rec.event(info0, { ev: 'close', ...close, commands: undefined });
    const errs = sum(m4, 'errors');
    if (errs) notes.push(`nodes' 'error' events: ${errs} (${m4.map((m) => m.lastError).filter(Boolean).join('; ')})`);

    const fig = {
      presence: on,
      nodes: c.nodes,
      connections: N,
      rooms: c.rooms,
      membersPerRoom: N / c.rooms,
      ttl: c.ttl,
      threads: c.threads,
      clientProcs: procs,
      pending: c.pending,
      infoBytes: JSON.stringify({ user: `u${N - 1}` }).length,
      open,
      hold: holdFig,
      queries: q,
      close,
      pin: { server: ctx.cpus.server || null, clients: ctx.cpus.loadgen || null },
    };
    for (const cl of clients) cl.send('exit');
    return { figures: fig, notes };
  } finally {
    for (const cl of clients) await cl.retire(ctx, notes, 5);
    for (const s of nodes) {
      await s.retire(ctx, notes, 15);
      ctx.rec.event(info0, { ev: 'server-final', node: s.name, pid: s.pid, final: s.lines.find((j) => j.final) || null });
    }
    if (rc) rc.close();
    if (redis) {
      await redis.stop();
      ctx.live.delete(redis);
    }
    for (const l of redisLog) notes.push(l);
  }
}

module.exports = { presence, statsDelta };
