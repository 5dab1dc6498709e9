'use strict';
// The history phase's server (bench/README.md, "history"): a reconnect storm
// against symphony's history and recovery, or socket.io 4.8's
// connectionStateRecovery, the same shape for both.
//
//   node bench/servers/history-server.js --impl symphony|socketio [--history 1|0]
//        [--size 2000] [--ttl 60] [--topics 10] [--rate 0] [--payload 80]
//        [--threads 1] [--duration 600] [--bus-url redis://127.0.0.1:P]
//
// --bus-url makes it one node of several over one Redis (issue 24): symphony
// with bus: { url } (history's offsets are then Redis', the same on every
// node: a client resumes on any node); socket.io with
// @socket.io/redis-streams-adapter (every emit through one Redis stream,
// XADD then XREAD by every node, maxLen = size x topics so it keeps what
// symphony keeps; its sessions in Redis: a client recovers on any node).
// The runner has one node publish; the others deliver what comes through Redis.
//
// Topics t0..t<topics-1> (socket.io: rooms). A client names its topic in the
// query string (?t=t3); symphony subscribes it at the accept (onUpgrade's
// topics, so a sy.since position resumes by itself), socket.io joins the room
// in 'connection' unless the socket was recovered (its rooms came back).
// The topics take turns: message m goes to topic m % topics, due at
// start + (m + 1) / (rate × topics); a timer set for the next due time
// publishes what has come due (none at rate 0).
// Each message is text: its topic's sequence number (12 digits, from 1), '|',
// its due time (process.hrtime.bigint(), CLOCK_MONOTONIC ns), '|', padding to
// --payload bytes. symphony: topic handles, handle.publish(string);
// socket.io: io.to(room).emit('m', string) (recovery appends its offset).
//
// stdin control lines, each answered by one JSON line on stderr {"ctl":word,...}:
//   rate R        the schedule at R messages/s per topic from now (0: stop)
//   mark          seq per topic, published, connections, replay counters, memory
//   fill T N      symphony: N messages of --payload bytes into each of T new topics
//                 with no subscriber (history { size: N, ttl: 0 }), then the memory
//                 before/after (the history's cost per kept message)
// stdout: {"port":N,"impl":...,"symphony":{root,native,allocator}} once listening; a
// final JSON line on exit.

const path = require('node:path');
const readline = require('node:readline');

function parseArgs(argv) {
  const o = { impl: 'symphony', history: 1, size: 2000, ttl: 60, topics: 10, rate: 0, payload: 80, threads: 1, duration: 600, port: 0, 'bus-url': '' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in o)) throw new Error(`unknown option ${argv[i]}`);
    o[k] = typeof o[k] === 'string' ? argv[i + 1] : Number(argv[i + 1]);
  }
  return o;
}

const o = parseArgs(process.argv.slice(2));
const mono = () => process.hrtime.bigint();
const TOPICS = Array.from({ length: o.topics }, (_, g) => `t${g}`);
const seq = new Array(o.topics).fill(0);
let published = 0;
const PAD = 'x'.repeat(4096);

function payloadFor(g, dueNs) {
  const s = String(++seq[g]).padStart(12, '0');
  const head = `${s}|${dueNs}|`;
  return head.length >= o.payload ? head : head + PAD.slice(0, o.payload - head.length);
}

function ctlOut(word, extra) {
  process.stderr.write(`${JSON.stringify({ ctl: word, mono_ns: String(mono()), ...extra })}\n`);
}

async function main() {
  let impl;
  if (o.impl === 'symphony') impl = await symphony();
  else if (o.impl === 'socketio') impl = await socketio();
  else throw new Error(`--impl symphony|socketio (got ${o.impl})`);

  // The schedule: message m (from the last rate change) due at start + (m + 1) / total.
  // One timer, set for the next message's due time, and none at rate 0: a
  // node that does not publish (nodes 1.. across nodes) runs no timer, and
  // the publisher wakes once per message (a 1 ms poll before: ~0.03-0.05 of
  // a core per process, the same in every arm, which was ~40% of symphony's
  // three nodes' CPU in the live window across nodes and none of a
  // server's work: bench/results/2026-12-02-history-nodes-cpu).
  let total = 0;
  let start = mono();
  let m = 0;
  let timer = null;
  const schedule = () => {
    clearTimeout(timer);
    timer = null;
    if (total <= 0) return;
    const nextNs = start + BigInt(Math.round(((m + 1) / total) * 1e9));
    timer = setTimeout(run, Math.max(0, Math.ceil(Number(nextNs - mono()) / 1e6)));
  };
  const setRate = (r) => {
    total = r * o.topics;
    start = mono();
    m = 0;
    schedule();
  };
  const tick = () => {
    if (total <= 0) return;
    const t = mono();
    const elapsedS = Number(t - start) / 1e9;
    let due = Math.floor(elapsedS * total); // messages due by now
    if (due - m > total) m = due - Math.ceil(total); // a stall over 1 s: skip, never a burst made up
    for (; m < due; m++) {
      const g = m % o.topics;
      const dueNs = start + BigInt(Math.round(((m + 1) / total) * 1e9));
      impl.publish(g, payloadFor(g, dueNs));
      published++;
    }
  };
  const run = () => {
    tick();
    schedule();
  };
  setRate(o.rate);

  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const [word, ...args] = line.trim().split(/\s+/);
    if (word === 'rate') {
      tick();
      setRate(Number(args[0]) || 0);
      ctlOut('rate', { rate: Number(args[0]) || 0, seq: seq.slice() });
    } else if (word === 'mark') {
      ctlOut('mark', { seq: seq.slice(), published, ...impl.mark(), rssKiB: Math.round(process.memoryUsage.rss() / 1024) });
    } else if (word === 'fill') {
      ctlOut('fill', impl.fill(Number(args[0]), Number(args[1])));
    }
  });
  const stop = async () => {
    clearTimeout(timer);
    total = 0;
    const last = impl.mark();
    await impl.close();
    process.stdout.write(`${JSON.stringify({ final: true, published, seq, ...last })}\n`);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  setTimeout(stop, o.duration * 1000).unref();
}

async function symphony() {
  const ROOT = process.env.BENCH_SYMPHONY_ROOT ? path.resolve(process.env.BENCH_SYMPHONY_ROOT) : path.join(__dirname, '..', '..');
  const { Server, allocator } = require(ROOT);
  const server = new Server({
    host: '127.0.0.1',
    port: o.port,
    threads: o.threads,
    history: o.history ? { size: o.size, ttl: o.ttl, maxBytes: 0 } : false,
    ...(o['bus-url'] ? { bus: { url: o['bus-url'] } } : {}),
    onUpgrade: (req) => {
      const q = req.url.indexOf('?');
      const t = q >= 0 ? new URLSearchParams(req.url.slice(q + 1)).get('t') : null;
      return { topics: [t && TOPICS.includes(t) ? t : TOPICS[0]] };
    },
  });
  let recoveries = 0;
  const reasons = {};
  server.on('recovery', (id, topic, r) => {
    recoveries++;
    if (!r.recovered) reasons[r.reason] = (reasons[r.reason] || 0) + 1;
  });
  const { port } = await server.listen();
  process.stdout.write(`${JSON.stringify({ port, impl: 'symphony', history: !!o.history, symphony: { root: ROOT, native: allocator.nativePath, allocator: allocator.name } })}\n`);
  const handles = TOPICS.map((name) => server.topic(name));
  const mem = () => {
    const a = allocator.stats() || {};
    return { allocated: a.allocated, active: a.active, resident: a.resident, rssBytes: process.memoryUsage.rss() };
  };
  return {
    publish: (g, p) => handles[g].publish(p),
    mark() {
      const st = server.stats() || {};
      return {
        connections: st.connections,
        messagesOut: st.messagesOut,
        dropped: st.dropped,
        replays: st.replays,
        replayed: st.replayed,
        recovered: st.recovered,
        recoveryFailed: Object.fromEntries(Object.entries(st).filter(([k]) => k.startsWith('recoveryFailed'))),
        historyMessages: st.historyMessages,
        historyBytes: st.historyBytes,
        bus: st.bus || null,
        busState: server.bus ? server.bus.state : null,
        recoveries,
        reasons,
        allocator: mem(),
      };
    },
    fill(T, N) {
      const before = { ...mem(), ...pick(server.stats()) };
      const keep = [];
      const tFill = mono();
      for (let k = 0; k < T; k++) {
        const h = server.topic(`f${fillKeep.length}.${k}`, { history: { size: N, ttl: 0 } });
        keep.push(h);
        const s = { n: 0 };
        for (let i = 0; i < N; i++) {
          const p = `${String(++s.n).padStart(12, '0')}|0|`;
          h.publish(p + PAD.slice(0, Math.max(0, o.payload - p.length)));
        }
      }
      fillKeep.push(keep);
      const after = { ...mem(), ...pick(server.stats()) };
      return { topics: T, perTopic: N, stored: T * N, payload: o.payload, fillMs: Number(mono() - tFill) / 1e6, before, after,
        position: server.position(`f${fillKeep.length - 1}.0`) };
    },
    close: () => server.close(),
  };
}
const fillKeep = [];
function pick(st) {
  st = st || {};
  return { historyMessages: st.historyMessages, historyBytes: st.historyBytes };
}

async function socketio() {
  const http = require('node:http');
  const { Server } = require('socket.io');
  const httpServer = http.createServer();
  let redisClient = null;
  let adapterOpt = {};
  if (o['bus-url']) {
    const { createClient } = require('redis');
    const { createAdapter } = require('@socket.io/redis-streams-adapter');
    redisClient = createClient({ url: o['bus-url'] });
    redisClient.on('error', () => {}); // it reconnects by itself; the runner watches the clients
    // The adapter's own commands can time out under load (the redis client's
    // TimeoutError, unhandled in the adapter): said on stderr (a note of the
    // run), not a crash that would end the node mid-run.
    let timeouts = 0;
    process.on('unhandledRejection', (err) => {
      if (timeouts++ < 5) process.stderr.write(`history-server: unhandled rejection in the adapter: ${err && err.name}: ${err && err.message}\n`);
    });
    await redisClient.connect();
    adapterOpt = { adapter: createAdapter(redisClient, { maxLen: o.size * o.topics }) };
  }
  const io = new Server(httpServer, {
    ...adapterOpt,
    transports: ['websocket'],
    serveClient: false,
    connectionStateRecovery: { maxDisconnectionDuration: 60000, skipMiddlewares: true },
  });
  let restores = 0;
  let restored = 0;
  let restoreFailed = 0;
  const adapter = io.of('/').adapter;
  const orig = adapter.restoreSession.bind(adapter);
  adapter.restoreSession = async (pid, offset) => {
    const s = await orig(pid, offset);
    if (s) {
      restores++;
      restored += s.missedPackets.length;
    } else restoreFailed++;
    return s;
  };
  let recoveredSockets = 0;
  let freshSockets = 0;
  io.on('connection', (socket) => {
    if (socket.recovered) {
      recoveredSockets++;
      return;
    }
    freshSockets++;
    const t = socket.handshake.query.t;
    socket.join(typeof t === 'string' && TOPICS.includes(t) ? t : TOPICS[0]);
  });
  await new Promise((resolve) => httpServer.listen(o.port, '127.0.0.1', resolve));
  const { port } = httpServer.address();
  const version = require('socket.io/package.json').version;
  process.stdout.write(`${JSON.stringify({ port, impl: 'socketio', version, symphony: null })}\n`);
  return {
    publish: (g, p) => io.to(TOPICS[g]).emit('m', p),
    mark: () => ({
      connections: io.engine.clientsCount,
      replays: restores,
      replayed: restored,
      recovered: recoveredSockets,
      restoreFailed,
      freshSockets,
      storedPackets: adapter.packets ? adapter.packets.length : null,
      sessions: adapter.sessions ? adapter.sessions.size : null,
      socketio: version,
      busState: redisClient ? (redisClient.isReady ? 'up' : 'down') : null,
    }),
    fill: () => ({ error: 'fill: symphony only' }),
    close: () => new Promise((resolve) => {
      io.close(() => resolve());
      setTimeout(resolve, 2000).unref();
    }).then(() => (redisClient ? redisClient.disconnect().catch(() => {}) : null)),
  };
}

main().catch((err) => {
  process.stderr.write(`history-server: ${err.stack || err.message}\n`);
  process.exit(1);
});
