'use strict';
// The event-stream (SSE) shape of the sse phase (issue 34): one fan-out
// server script, three implementations, chosen by BENCH_SSE_IMPL:
//
//   symphony    symphony's Server: onUpgrade(req) answers { topics: [t<n %
//               topics>] } for the n-th connection, whatever its transport
//               (req.transport 'sse' or 'websocket'), so the same process
//               serves SSE and WebSocket clients the same way; publishes
//               through topic handles (server.topic(name).publish(text)).
//   node        a plain node:http SSE hub, written the way Node users write
//               one: a GET with Accept: text/event-stream gets writeHead(200,
//               { Content-Type: text/event-stream, Cache-Control: no-cache,
//               Connection: keep-alive }) and `retry: 1000`, its res goes into
//               a Map of topic -> Set of res (out on 'close'); a publish
//               builds `event: <topic>\ndata: <payload>\n\n` once and calls
//               res.write() for every subscriber (Node's chunked encoding,
//               no backpressure handling).
//   better-sse  better-sse (a devDependency, pinned): createSession(req,
//               res, { retry: 1000 }) and a Channel per topic (createChannel;
//               channel.register(session)); a publish is
//               channel.broadcast({ ts, seq, p }, topic): its default JSON
//               serializer per session, its event id (one randomUUID per
//               broadcast) and its keep-alive comments (every 10 s) as
//               shipped.
//
// Every message is the same `size` bytes of text, {"ts":T,"seq":S,"p":"xx...x"}:
// T the due time (process.hrtime.bigint(), the clock loadgen reads: due-time
// latency), S the topic's sequence number from 1 (loadgen --seq), padded
// with 'x' to exactly `size` bytes (loadgen --check-size). better-sse gets
// it as the object { ts, seq, p } and JSON.stringify makes the same bytes.
//
// The command line, the schedule (--rate per topic; the runner starts at 0
// and sets it with "ctl rate R"), the stats and control lines and the final
// line are harness.js's (as fanout-server.js). --threads is symphony's IO
// threads (the two Node servers have their one JS thread).
//
//   BENCH_SSE_IMPL=symphony|node|better-sse node bench/servers/sse-server.js
//        [--port 0] [--threads 2] [--topics 10] [--size 256] [--rate 0]
//        [--duration 30] [--stats-interval 0]

const http = require('node:http');
const { serve, symphonyRoot, memoryKiB, peerStats } = require('./harness');

const IMPL = process.env.BENCH_SSE_IMPL || 'symphony';
if (!['symphony', 'node', 'better-sse'].includes(IMPL)) {
  process.stderr.write(`sse-server: BENCH_SSE_IMPL must be symphony, node or better-sse (got ${IMPL})\n`);
  process.exit(1);
}

/** The text payload of topic g's message due at dueNs: exactly `size`
 * bytes; `fields` for better-sse (the object it serializes itself). */
function createTextPayloads(o) {
  const seqs = new Array(o.topics).fill(0);
  const pads = new Map();
  const pad = (n) => {
    let s = pads.get(n);
    if (s === undefined) {
      s = 'x'.repeat(Math.max(0, n));
      pads.set(n, s);
    }
    return s;
  };
  return {
    seqs: () => seqs.slice(),
    next(g, dueNs) {
      const seq = ++seqs[g];
      const head = `{"ts":${dueNs},"seq":${seq},"p":"`;
      const p = pad(o.size - head.length - 2);
      return { text: `${head}${p}"}`, fields: { ts: Number(dueNs), seq, p } };
    },
  };
}

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
}

/** Node's http server, closed with its connections (bounded). */
async function closeHttp(server) {
  const closed = new Promise((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  let t;
  await Promise.race([closed, new Promise((resolve) => { t = setTimeout(resolve, 2000); })]);
  clearTimeout(t);
}

const IMPLS = {
  async symphony(o, payloads) {
    const ROOT = symphonyRoot();
    const { Server, allocator } = require(ROOT);
    const memory = () => {
      const arenas = allocator.arenaStats();
      const pages = arenas ? arenas.reduce((sum, r) => sum + r.active + r.dirty + r.muzzy, 0) : null;
      return memoryKiB({ name: allocator.name, ...allocator.stats(), pages });
    };
    const topics = Array.from({ length: o.topics }, (_, g) => `t${g}`);
    let assigned = 0;
    const byTransport = { sse: 0, websocket: 0 };
    const closes = {};
    const server = new Server({
      host: '127.0.0.1',
      port: o.port,
      threads: o.threads,
      maxBackpressure: o['max-backpressure'],
      onUpgrade: () => ({ topics: [topics[assigned++ % o.topics]] }),
    });
    server.on('open', (id, info) => {
      byTransport[info.transport] = (byTransport[info.transport] || 0) + 1;
    });
    server.on('close', (id, code) => {
      closes[code] = (closes[code] || 0) + 1;
    });
    const { port } = await server.listen();
    process.stdout.write(`${JSON.stringify({ port, symphony: { root: ROOT, native: allocator.nativePath, allocator: allocator.name } })}\n`);
    const handles = typeof server.topic === 'function' ? topics.map((name) => server.topic(name)) : null;
    const counters = () => {
      const st = server.stats() || {};
      return { connections: st.connections, sseConnections: st.sseConnections, messagesOut: st.messagesOut, dropped: st.dropped };
    };
    return {
      publish: (g, dueNs) => {
        const { text } = payloads.next(g, dueNs);
        return handles ? handles[g].publish(text) : server.publish(topics[g], text);
      },
      statsLine: () => ({ ...counters(), ...memory() }),
      mark: () => ({ ...counters(), byTransport: { ...byTransport }, seq: payloads.seqs() }),
      stats: () => server.stats(),
      close: () => server.close(),
      report: () => ({ opened: byTransport.sse + byTransport.websocket, subscribeFailed: 0, closes, byTransport }),
      memory,
    };
  },

  async node(o, payloads) {
    const topics = Array.from({ length: o.topics }, (_, g) => `t${g}`);
    const subs = new Map(); // topic -> Set of res
    let opened = 0;
    let closed = 0;
    let messagesOut = 0;
    const server = http.createServer((req, res) => {
      if (req.method !== 'GET' || !/text\/event-stream/.test(req.headers.accept || '')) {
        res.writeHead(404).end();
        return;
      }
      const topic = topics[opened++ % o.topics];
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      res.write('retry: 1000\n\n');
      let set = subs.get(topic);
      if (!set) subs.set(topic, (set = new Set()));
      set.add(res);
      req.on('close', () => {
        set.delete(res);
        closed++;
      });
    });
    const port = await listen(server, o.port);
    process.stdout.write(`${JSON.stringify({ port })}\n`);
    const connections = () => {
      let n = 0;
      for (const set of subs.values()) n += set.size;
      return n;
    };
    return {
      publish: (g, dueNs) => {
        const set = subs.get(topics[g]);
        const { text } = payloads.next(g, dueNs);
        if (!set) return 0;
        const frame = `event: ${topics[g]}\ndata: ${text}\n\n`;
        for (const res of set) res.write(frame);
        messagesOut += set.size;
        return set.size;
      },
      statsLine: () => ({ connections: connections(), messagesOut, ...memoryKiB() }),
      mark: () => ({ connections: connections(), messagesOut, seq: payloads.seqs() }),
      stats: () => peerStats({ connections: connections(), opened, closed, messagesOut }),
      close: () => closeHttp(server),
      report: () => ({ opened, subscribeFailed: 0, closes: {} }),
      memory: () => memoryKiB(),
      exit: true,
    };
  },

  async 'better-sse'(o, payloads) {
    const { createSession, createChannel } = require('better-sse');
    // its package.json is not among its exports: read beside its entry point
    const version = JSON.parse(require('node:fs').readFileSync(require('node:path').join(require.resolve('better-sse'), '..', '..', 'package.json'), 'utf8')).version;
    const topics = Array.from({ length: o.topics }, (_, g) => `t${g}`);
    const channels = topics.map(() => createChannel());
    let opened = 0;
    let failed = 0;
    let messagesOut = 0;
    const server = http.createServer((req, res) => {
      const g = opened++ % o.topics;
      createSession(req, res, { retry: 1000 }).then((session) => channels[g].register(session), () => { failed++; });
    });
    const port = await listen(server, o.port);
    process.stdout.write(`${JSON.stringify({ port })}\n`);
    const connections = () => channels.reduce((n, c) => n + c.sessionCount, 0);
    return {
      publish: (g, dueNs) => {
        const { fields } = payloads.next(g, dueNs);
        const ch = channels[g];
        ch.broadcast(fields, topics[g]);
        messagesOut += ch.sessionCount;
        return ch.sessionCount;
      },
      statsLine: () => ({ connections: connections(), messagesOut, ...memoryKiB() }),
      mark: () => ({ connections: connections(), messagesOut, seq: payloads.seqs() }),
      stats: () => peerStats({ connections: connections(), opened, messagesOut, handshakeRejects: failed }),
      close: () => closeHttp(server),
      report: () => ({ opened, subscribeFailed: failed, closes: {} }),
      memory: () => memoryKiB(),
      extra: () => ({ betterSse: version }),
      exit: true,
    };
  },
};

serve('sse-server', (o) => IMPLS[IMPL](o, createTextPayloads(o)));
