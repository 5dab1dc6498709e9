'use strict';
// The presence phase's node (bench/README.md, "presence"): one symphony
// node of several over one Redis (bus: { url }), with presence on or off.
//
//   node bench/servers/presence-server.js --bus-url redis://127.0.0.1:P
//        [--presence 1|0] [--ttl 15000] [--threads 1] [--duration 600] [--port 0]
//
// A client names its room and its user in the query string
// (/?room=r12&user=u345): onUpgrade subscribes it to the room and, with
// presence, gives { user } as its presence info. The node counts what it
// hears: its own opens and closes ('open', 'close'), and every node's joins
// and leaves ('join', 'leave', which come through the nodes' control
// channel), each with the CLOCK_MONOTONIC time (ns) of the last one, so the
// runner can tell when the last of N was heard. Joins and leaves are counted
// once per (room, node, connection id); one heard again (a node that writes
// a room's entries whole again announces them again) is counted apart
// (dupJoins, dupLeaves). Each connection joins one room once in this phase.
//
// stdin control lines, each answered by one JSON line on stderr {"ctl":word,...}:
//   mark                 the counters, the times of the last of each, the bus' state,
//                        the process' CPU time (process.cpuUsage(), µs)
//   presence K C ROOMS   K calls of server.presence(r<i % ROOMS>), C at once:
//                        latency p50/p99/max (ms), calls/s, entries per call (min/max)
//   subscribers K ROOMS  K sequential calls of server.bus.subscribers(r<i % ROOMS>):
//                        latency p50/p99/max (ms), the counts (min/max)
// stdout: {"port":N,"symphony":{root,native,allocator},"node":id} once listening;
// a final JSON line on exit.

const path = require('node:path');
const readline = require('node:readline');

function parseArgs(argv) {
  const o = { presence: 1, ttl: 15000, threads: 1, duration: 600, port: 0, 'bus-url': '' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in o) || argv[i + 1] === undefined) throw new Error(`unknown option or no value: ${argv[i]}`);
    o[k] = typeof o[k] === 'string' ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (!/^redis:\/\/127\./.test(o['bus-url'])) throw new Error(`--bus-url redis://127.x.x.x:PORT is required (got ${o['bus-url']})`);
  return o;
}

const o = parseArgs(process.argv.slice(2));
const mono = () => process.hrtime.bigint();
const ROOT = process.env.BENCH_SYMPHONY_ROOT ? path.resolve(process.env.BENCH_SYMPHONY_ROOT) : path.join(__dirname, '..', '..');
const { Server, allocator } = require(ROOT);

// joins, leaves: distinct (room, node, id) heard; dupJoins, dupLeaves: heard again
const c = { opens: 0, closes: 0, joins: 0, leaves: 0, dupJoins: 0, dupLeaves: 0, expired: 0, errors: 0,
  lastOpenNs: '0', lastCloseNs: '0', lastJoinNs: '0', lastLeaveNs: '0' };
const joined = new Set();
const left = new Set();
let lastError = null;

function query(url) {
  const q = url.indexOf('?');
  const p = new URLSearchParams(q >= 0 ? url.slice(q + 1) : '');
  return { room: p.get('room') || 'r0', user: p.get('user') || '' };
}

const server = new Server({
  host: '127.0.0.1',
  port: o.port,
  threads: o.threads,
  idleTimeout: 0, // no pings: the bench clients are raw sockets that never answer one
  bus: { url: o['bus-url'] },
  presence: o.presence ? { ttl: o.ttl } : false,
  onUpgrade: (req) => {
    const { room, user } = query(req.url);
    return o.presence ? { topics: [room], presence: { user } } : { topics: [room] };
  },
});
server.on('open', () => {
  c.opens++;
  c.lastOpenNs = String(mono());
});
server.on('close', () => {
  c.closes++;
  c.lastCloseNs = String(mono());
});
server.on('join', (topic, entry) => {
  const k = `${topic}\n${entry.node}\n${entry.id}`;
  if (joined.has(k)) {
    c.dupJoins++;
    return;
  }
  joined.add(k);
  c.joins++;
  c.lastJoinNs = String(mono());
});
server.on('leave', (topic, entry, reason) => {
  const k = `${topic}\n${entry.node}\n${entry.id}`;
  if (left.has(k)) {
    c.dupLeaves++;
    return;
  }
  left.add(k);
  c.leaves++;
  if (reason === 'expired') c.expired++;
  c.lastLeaveNs = String(mono());
});
server.on('error', (err) => {
  c.errors++;
  lastError = `${err.code || ''} ${err.message}`;
});

function ctlOut(word, extra) {
  process.stderr.write(`${JSON.stringify({ ctl: word, mono_ns: String(mono()), ...extra })}\n`);
}

function pct(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
}

function latencies(ms) {
  const s = ms.slice().sort((a, b) => a - b);
  return { p50Ms: pct(s, 0.5), p99Ms: pct(s, 0.99), maxMs: s.length ? s[s.length - 1] : null };
}

/** K calls of fn(i), C at once; their latencies and what they returned. */
async function calls(K, C, fn) {
  const ms = [];
  const out = [];
  let next = 0;
  let failed = 0;
  let firstError = null;
  const t0 = mono();
  const worker = async () => {
    while (next < K) {
      const i = next++;
      const t = mono();
      try {
        out.push(await fn(i));
      } catch (err) {
        failed++;
        firstError = firstError || `${err.code || ''} ${err.message}`;
      }
      ms.push(Number(mono() - t) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(C, K)) }, worker));
  const seconds = Number(mono() - t0) / 1e9;
  return { calls: K, failed, firstError, seconds, perS: K / seconds, ...latencies(ms), out, t0Ns: String(t0), t1Ns: String(mono()) };
}

const minMax = (xs) => ({ min: xs.length ? Math.min(...xs) : null, max: xs.length ? Math.max(...xs) : null });

async function main() {
  const { port } = await server.listen();
  process.stdout.write(`${JSON.stringify({ port, presence: !!o.presence, node: server.bus ? server.bus.node : null,
    symphony: { root: ROOT, native: allocator.nativePath, allocator: allocator.name } })}\n`);
  readline.createInterface({ input: process.stdin }).on('line', async (line) => {
    const [word, ...args] = line.trim().split(/\s+/);
    if (word === 'mark') {
      const st = server.stats() || {};
      const cpu = process.cpuUsage(); // the whole process: the JS thread, the IO threads, the bus thread
      ctlOut('mark', { ...c, connections: st.connections, busState: server.bus ? server.bus.state : null, lastError, cpuUs: cpu.user + cpu.system,
        rssKiB: Math.round(process.memoryUsage.rss() / 1024) });
    } else if (word === 'presence') {
      const [K, C, R] = args.map(Number);
      const r = await calls(K, C, async (i) => (await server.presence(`r${i % R}`)).length);
      ctlOut('presence', { ...r, out: undefined, entries: minMax(r.out) });
    } else if (word === 'subscribers') {
      const [K, R] = args.map(Number);
      const r = await calls(K, 1, (i) => server.bus.subscribers(`r${i % R}`));
      ctlOut('subscribers', { ...r, out: undefined, counts: minMax(r.out) });
    }
  });
  const stop = async () => {
    await server.close();
    process.stdout.write(`${JSON.stringify({ final: true, ...c, lastError })}\n`);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  setTimeout(stop, o.duration * 1000).unref();
}

main().catch((err) => {
  process.stderr.write(`presence-server: ${err.stack || err.message}\n`);
  process.exit(1);
});
