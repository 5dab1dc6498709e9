'use strict';
// The slow phase's slow clients (bench/runner/slow.js): `count` WebSocket
// connections on raw sockets that read at most `read-rate` bytes/s each
// (a token bucket, 20 ticks a second, socket.read(n) in paused mode: what is
// not read stays in Node's buffer (one read's worth), then the kernel's, then
// the server's queue), each subscribed by fanout-server.js to every topic
// (--all-topics-from). The messages are the harness's binary payloads with
// --seq 1: bytes 0..7 the due time (process.hrtime.bigint(), LE), 8..15 the
// topic's sequence number (from 1), 16..19 the topic's index.
//
//   node bench/runner/slow-client.js --port P --count N --read-rate B
//
// Control lines on stdin, answered with one JSON line each on stdout:
//   connect  opens every connection            -> {"ev":"connected","open":N}
//   catchup  reads as fast as it can from now  -> {"ev":"catchup"}
//   report   the counters                      -> {"ev":"report", ...}
//   exit
// Every second (once connected): {"ev":"tick","t":s,"ageMs":{p50,p90,max},"open":N,...}:
// ageMs is, over the (open client, topic) pairs, now minus the due time of
// the newest message of that topic the client holds (how stale its view of
// the topic is); a client closed by the server keeps its last values and
// counts in "closed" instead.

const net = require('node:net');
const crypto = require('node:crypto');
const readline = require('node:readline');

function args() {
  const o = { port: 0, count: 100, 'read-rate': 1024, host: '127.0.0.1' };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o)) throw new Error(`slow-client: unknown argument ${a[i]}`);
    o[k] = k === 'host' ? a[i + 1] : Number(a[i + 1]);
  }
  return o;
}

const o = args();
const out = (j) => process.stdout.write(`${JSON.stringify(j)}\n`);
const nowNs = () => process.hrtime.bigint();
const TICK_MS = 50;

class SlowClient {
  constructor() {
    this.open = false;
    this.closed = false; // by the server (or the socket failed) after it opened
    this.closeCode = null;
    this.msgs = 0;
    this.bytes = 0;
    this.gaps = 0; // sequence jumps (messages it never got)
    this.skipped = 0; // messages skipped in those jumps
    this.backwards = 0; // a topic's sequence number going back (never expected)
    this.lastSeq = new Map(); // topic index -> its newest sequence number held
    this.newestDue = new Map(); // topic index -> that message's due time
    this.buf = Buffer.alloc(0);
    this.budget = 0;
    this.head = '';
  }

  connect() {
    return new Promise((resolve) => {
      const key = crypto.randomBytes(16).toString('base64');
      const s = net.connect({ host: o.host, port: o.port });
      this.sock = s;
      s.setNoDelay(true);
      s.on('error', () => {});
      s.on('close', () => {
        if (this.open) this.closed = true;
        this.open = false;
        resolve(false);
      });
      s.once('connect', () => {
        s.write(`GET / HTTP/1.1\r\nHost: ${o.host}:${o.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
          + `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
      });
      // The 101 in flowing mode, then paused: reads only through the bucket.
      const onData = (d) => {
        this.head += d.toString('latin1');
        const end = this.head.indexOf('\r\n\r\n');
        if (end < 0) return;
        s.off('data', onData);
        s.pause();
        if (!this.head.startsWith('HTTP/1.1 101')) {
          s.destroy();
          return;
        }
        const rest = Buffer.from(this.head.slice(end + 4), 'latin1');
        if (rest.length) s.unshift(rest);
        this.open = true;
        resolve(true);
      };
      s.on('data', onData);
    });
  }

  /** Reads up to n bytes from what Node holds (n = Infinity: all of it). */
  read(n) {
    const s = this.sock;
    let got = 0;
    while (got < n && s.readableLength > 0) {
      const chunk = s.read(Math.min(n - got, s.readableLength));
      if (chunk === null) break;
      got += chunk.length;
      this.take(chunk);
    }
    return got;
  }

  /** Server frames (unmasked): messages counted, their due time and sequence kept. */
  take(chunk) {
    this.bytes += chunk.length;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      const b = this.buf;
      if (b.length < 2) return;
      const op = b[0] & 0x0f;
      let len = b[1] & 0x7f;
      let at = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = Number(b.readBigUInt64BE(2));
        at = 10;
      }
      if (b.length < at + len) return;
      const p = b.subarray(at, at + len);
      this.buf = b.subarray(at + len);
      if (op === 8) {
        this.closeCode = len >= 2 ? p.readUInt16BE(0) : 1005;
        continue;
      }
      if (op !== 2 || len < 20) continue;
      this.msgs++;
      const due = p.readBigUInt64LE(0);
      const seq = p.readBigUInt64LE(8);
      const g = p.readUInt32LE(16);
      const last = this.lastSeq.get(g) ?? 0n;
      if (last > 0n && seq > last + 1n) {
        this.gaps++;
        this.skipped += Number(seq - last - 1n);
      }
      if (seq <= last) {
        this.backwards++;
        continue;
      }
      this.lastSeq.set(g, seq);
      this.newestDue.set(g, due);
    }
  }
}

const clients = [];
let catchup = false;
const t0 = nowNs();

function pct(sorted, q) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function ages() {
  const t = nowNs();
  const a = clients.filter((c) => c.open).flatMap((c) => [...c.newestDue.values()].map((d) => Number(t - d) / 1e6))
    .sort((x, y) => x - y);
  return { p50: pct(a, 0.5), p90: pct(a, 0.9), max: a.length ? a[a.length - 1] : null, n: a.length };
}

function counters() {
  const sum = (k) => clients.reduce((s, c) => s + c[k], 0);
  const codes = {};
  for (const c of clients) if (c.closed) codes[c.closeCode ?? 'none'] = (codes[c.closeCode ?? 'none'] || 0) + 1;
  return {
    n: clients.length,
    open: clients.filter((c) => c.open).length,
    closed: clients.filter((c) => c.closed).length,
    closeCodes: codes,
    msgs: sum('msgs'),
    bytes: sum('bytes'),
    gaps: sum('gaps'),
    skipped: sum('skipped'),
    backwards: sum('backwards'),
    // per (client, topic): the newest sequence number and due time it holds (decimal strings)
    newest: clients.flatMap((c) => [...c.lastSeq.keys()].map((g) => ({ g, seq: String(c.lastSeq.get(g)),
      due: String(c.newestDue.get(g)), open: c.open }))),
    ageMs: ages(),
  };
}

setInterval(() => {
  const per = (o['read-rate'] * TICK_MS) / 1000;
  for (const c of clients) {
    if (!c.open) continue;
    if (catchup) {
      c.read(Infinity);
      continue;
    }
    c.budget = Math.min(c.budget + per, o['read-rate']); // at most a second's worth saved up
    c.budget -= c.read(Math.floor(c.budget));
  }
}, TICK_MS);

let ticking = null;
readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const word = line.trim();
  if (word === 'connect') {
    for (let i = 0; i < o.count; i++) {
      const c = new SlowClient();
      clients.push(c);
      await c.connect(); // in order: the server subscribes them in open order
    }
    if (!ticking) ticking = setInterval(() => out({ ev: 'tick', t: Number(nowNs() - t0) / 1e9, ageMs: ages(), ...counters(), newest: undefined }), 1000);
    out({ ev: 'connected', open: clients.filter((c) => c.open).length });
  } else if (word === 'catchup') {
    catchup = true;
    out({ ev: 'catchup' });
  } else if (word === 'report') {
    out({ ev: 'report', ...counters() });
  } else if (word === 'exit') {
    for (const c of clients) if (c.sock) c.sock.destroy();
    process.exit(0);
  }
});
