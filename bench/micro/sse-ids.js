'use strict';
// What an event stream's ids cost (docs/sse.md, "Ids and exact resume"):
// bytes on the wire and server CPU (the IO thread's, from
// /proc/self/task/<tid>/schedstat) per 1-byte publish to a stream holding
// 1 or 1,024 topics with history, for a symphony.v1 stream (a browser's
// EventSource: every topic's position in each id) and a symphony.v2 one
// (the client library: its event's own position only); and what a v2
// stream's 1,023 granted subscribes (asked by POST, 16 per frame) cost in
// answer bytes.
//
//   node bench/micro/sse-ids.js [--events N] [--topics 1,1024] [--asks]
//
// One server (threads: 1) in this process, the stream's reader in a child
// process (raw TCP, counts bytes and events). Loopback only.
const { fork } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');

if (process.argv[2] === '--reader') {
  // The child: reads one stream, says how many events of topics named
  // `topic`... (a prefix) it had
  // and how many bytes, on each request from the parent.
  const [, , , port, path, topic] = process.argv;
  const sock = net.connect(Number(port), '127.0.0.1');
  sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n`);
  const marker = Buffer.from(`event: ${topic}`);
  let bytes = 0;
  let events = 0;
  let tail = Buffer.alloc(0);
  let notices = 0;
  const nmark = Buffer.from('event: sy.notice\n');
  let stream = null;
  let head = '';
  sock.on('data', (d) => {
    bytes += d.length;
    if (stream === null) {
      head += d.toString('latin1');
      const m = /"stream":"([0-9a-f]+)"/.exec(head);
      if (m) {
        stream = m[1];
        process.send({ stream });
      }
    }
    // Counted in whole lines only; the incomplete last line is kept for
    // the next chunk.
    const all = Buffer.concat([tail, d]);
    const cut = all.lastIndexOf(0x0a);
    const b = all.subarray(0, cut + 1);
    tail = all.subarray(cut + 1);
    for (let i = b.indexOf(marker); i >= 0; i = b.indexOf(marker, i + 1)) events++;
    for (let i = b.indexOf(nmark); i >= 0; i = b.indexOf(nmark, i + 1)) notices++;
    process.send({ bytes, events, notices });
  });
  sock.on('close', () => process.exit(0));
  return;
}

const { Server } = require(process.env.SY_PKG || '../..'); // SY_PKG: another checkout's package (a before/after)

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const EVENTS = Number(arg('events', '4000'));
const TOPIC_COUNTS = arg('topics', '1,1024').split(',').map(Number);
const ASKS = process.argv.includes('--asks');

/** CPU ns of each thread of this process. */
function threadCpu() {
  const out = new Map();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      out.set(tid, Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {}
  }
  return out;
}
/** The thread that used the most CPU between two snapshots, not the JS thread: ns. */
function ioThreadNs(a, b) {
  let best = 0;
  for (const [tid, v] of b) if (tid !== String(process.pid)) best = Math.max(best, v - (a.get(tid) ?? v));
  return best;
}

function reader(port, path, topic) {
  const child = fork(__filename, ['--reader', String(port), path, topic]);
  const st = { bytes: 0, events: 0, notices: 0, stream: null, child, waiters: [] };
  child.on('message', (m) => {
    Object.assign(st, m);
    for (const w of st.waiters.splice(0)) if (!w()) st.waiters.push(w);
  });
  st.until = (pred) => new Promise((resolve) => {
    const w = () => (pred(st) ? (resolve(), true) : false);
    if (!w()) st.waiters.push(w);
  });
  return st;
}

function postFrame(port, name, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: `/?sy.stream=${name}`, agent: false,
      headers: { 'content-length': Buffer.byteLength(body) } }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
    req.on('error', reject);
    req.end(body);
  });
}

async function publishes(ntopics, v2) {
  const topics = Array.from({ length: ntopics }, (_, i) => `topic-${i}`);
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, history: { size: 16 }, maxBackpressure: 256 << 20,
    onUpgrade: () => (v2 ? { topics, protocol: 'symphony.v2' } : { topics }) });
  const { port } = await server.listen();
  const r = reader(port, v2 ? '/?sy.protocol=symphony.v2' : '/', 'topic-');
  await r.until((s) => s.notices >= ntopics);
  // Every topic has a position (one publish each): a v1 id carries them all.
  // (The reader counts the events of every topic-N.)
  for (const t of topics) server.publish(t, 'x');
  await r.until((s) => s.events >= ntopics);
  const before = r.events;
  const b0 = r.bytes;
  const c0 = threadCpu();
  const BATCH = 200;
  for (let sent = 0; sent < EVENTS; sent += BATCH) {
    for (let k = 0; k < BATCH; k++) server.publish('topic-0', 'x');
    await r.until((s) => s.events >= before + sent + BATCH);
  }
  const ns = ioThreadNs(c0, threadCpu());
  const bytes = r.bytes - b0;
  r.child.kill();
  await server.close();
  return { topics: ntopics, protocol: v2 ? 'symphony.v2' : 'symphony.v1', bytesPerEvent: Math.round(bytes / EVENTS),
    usPerEvent: +(ns / EVENTS / 1000).toFixed(2) };
}

async function asks(ntopics) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, history: { size: 16 }, maxBackpressure: 256 << 20,
    onUpgrade: () => ({ topics: ['topic-0'], protocol: 'symphony.v2' }), onSubscribe: () => true });
  const { port } = await server.listen();
  const r = reader(port, '/?sy.protocol=symphony.v2', 'topic-0');
  await r.until((s) => s.stream !== null && s.notices >= 1);
  const b0 = r.bytes;
  const c0 = threadCpu();
  let rid = 1;
  for (let i = 1; i < ntopics; i += 16) {
    const subs = [];
    for (let k = i; k < Math.min(ntopics, i + 16); k++) subs.push({ rid: rid++, topic: `topic-${k}` });
    await postFrame(port, r.stream, `s${JSON.stringify({ subs, resub: false })}`);
    const want = 1 + Math.min(ntopics - 1, i + 15);
    await r.until((s) => s.notices >= want);
  }
  const ns = ioThreadNs(c0, threadCpu());
  const bytes = r.bytes - b0;
  r.child.kill();
  await server.close();
  return { asks: ntopics - 1, answerBytes: bytes, cpuMs: +(ns / 1e6).toFixed(1) };
}

(async () => {
  for (const n of TOPIC_COUNTS) {
    for (const v2 of [false, true]) console.log(JSON.stringify(await publishes(n, v2)));
  }
  if (ASKS) console.log(JSON.stringify(await asks(1024)));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
