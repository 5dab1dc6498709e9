'use strict';
// The pusher phases' publisher: the HTTP API's POST /apps/<id>/events (or
// /batch_events), signed as the `pusher` server SDK signs it, over raw
// keep-alive sockets (one request in flight per socket), so that the
// publisher's own cost stays small beside the server's.
//
//   node bench/runner/pusher-publisher.js --port P --app id:key:secret --channels N
//     [--prefix bench-] [--size 256] [--sockets 4] [--batch 0]
//
// The signature (pusher-http-node's): the query auth_key, auth_timestamp
// (seconds), auth_version=1.0 and body_md5 (hex MD5 of the body), sorted by
// key and joined with &; auth_signature = hex HMAC-SHA256(secret,
// "POST\n<path>\n<that query>"). Every request is signed afresh.
//
// A publish is one event on one channel (channels in turn, from 0): name
// "bench", data a string of exactly --size bytes {"ts":T,"seq":S,"p":"xx…x"}
// (T: CLOCK_MONOTONIC ns when it was due, as the other servers' payloads,
// so loadgen measures due-time latency; S: the channel's sequence number).
// --batch K: K events (K channels in turn) per request to /batch_events.
//
// A channel has at most one request in flight, so its events reach the
// server in order (loadgen's --seq checks order per connection): a free
// socket takes the next channel that has a publish due and none in flight.
//
// Control, lines on stdin: "rate R" (publishes/s over every channel, open
// loop: each channel's due times every channels/R s; a publish due while
// its channel or every socket is busy waits; one due more than a second
// ago is dropped, counted in `late`), "rate max" (closed loop: every
// socket sends its next request as soon as the answer to the last came),
// "rate 0" (stop), "mark" (answered on stdout with the totals). Answers, one JSON line each on stdout:
//   {"ready":true,"sockets":n}                       once every socket connected
//   {"rate":R}                                        after "rate"
//   {"mark":k,"mono_ns":"…","requests":q,"ok":a,"failed":f,"statuses":{…},
//    "events":e,"inflight":i,"late":l,"connects":c,"seqs":[…]}
//                                                     after "mark" (running totals;
//                                                     seqs: last seq per channel;
//                                                     connects: TCP connections made)

const net = require('node:net');
const crypto = require('node:crypto');
const readline = require('node:readline');

function parseArgs(argv) {
  const o = { prefix: 'bench-', size: 256, sockets: 4, batch: 0, channels: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[i + 1];
    o[k] = /^\d+$/.test(v) ? Number(v) : v;
  }
  if (!o.port || !o.app) throw new Error('--port and --app id:key:secret are required');
  const [id, key, secret] = String(o.app).split(':');
  return { ...o, id, key, secret };
}

const o = parseArgs(process.argv.slice(2));
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const seqs = new Array(o.channels).fill(0);
const pad = 'x'.repeat(o.size);
let next = 0; // the channel to look at first
const due = new Array(o.channels).fill(0); // open loop: publishes due per channel
const busyCh = new Array(o.channels).fill(false); // a request in flight

function payload(g) {
  const seq = ++seqs[g];
  const head = `{"ts":${process.hrtime.bigint()},"seq":${seq},"p":"`;
  return `${head}${pad.slice(0, Math.max(0, o.size - head.length - 2))}"}`;
}

function oneEvent(g) {
  return { name: 'bench', channel: `${o.prefix}${g}`, data: payload(g) };
}

/** One signed request (a Buffer), and how many events it carries. */
function request(g) {
  let path;
  let body;
  let events;
  if (o.batch > 0) {
    path = `/apps/${o.id}/batch_events`;
    const batch = [];
    for (let k = 0; k < o.batch; k++) batch.push(oneEvent((g + k) % o.channels));
    body = JSON.stringify({ batch });
    events = o.batch;
  } else {
    path = `/apps/${o.id}/events`;
    const e = oneEvent(g);
    body = JSON.stringify({ name: e.name, channels: [e.channel], data: e.data });
    events = 1;
  }
  const md5 = crypto.createHash('md5').update(body).digest('hex');
  const query = `auth_key=${o.key}&auth_timestamp=${Math.floor(Date.now() / 1000)}&auth_version=1.0&body_md5=${md5}`;
  const sig = crypto.createHmac('sha256', o.secret).update(`POST\n${path}\n${query}`).digest('hex');
  const len = Buffer.byteLength(body);
  const head = `POST ${path}?${query}&auth_signature=${sig} HTTP/1.1\r\nHost: 127.0.0.1:${o.port}\r\n`
    + `Content-Type: application/json\r\nContent-Length: ${len}\r\n\r\n`;
  return { buf: Buffer.from(head + body), events, g };
}

const totals = { requests: 0, ok: 0, failed: 0, events: 0, late: 0, connects: 0, statuses: {} };
let inflight = 0;
let mode = 0; // publishes/s; Infinity: closed loop; 0: stopped

/** Reads HTTP/1.1 responses (Content-Length or chunked) off one socket. */
function responses(s, onResponse) {
  let buf = Buffer.alloc(0);
  s.on('data', (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const status = Number(head.slice(9, 12));
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      let total;
      if (cl) {
        total = end + 4 + Number(cl[1]);
      } else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
        const z = buf.indexOf('\r\n0\r\n\r\n', end);
        const z0 = buf.indexOf('0\r\n\r\n', end + 4) === end + 4 ? end + 4 : -1;
        if (z0 >= 0) total = z0 + 5;
        else if (z >= 0) total = z + 7;
        else return;
      } else {
        total = end + 4;
      }
      if (buf.length < total) return;
      buf = buf.subarray(total);
      onResponse(status, /\r\nconnection:\s*close/i.test(head));
    }
  });
}

// A slot: one socket at a time, one request in flight. A server that
// closes after each answer (Soketi answers with Connection: close) gets a
// new connection for the next request, as an HTTP client's agent would
// open one: counted in `connects`.
function send(slot, g) {
  const r = request(g);
  slot.busy = r.events;
  slot.g = g;
  busyCh[g] = true;
  inflight++;
  totals.requests++;
  slot.s.write(r.buf);
}

/** The next channel with a publish due (any, closed loop) and none in
 * flight, round robin; -1 when none. (--batch: its first channel.) */
function nextChannel() {
  for (let k = 0; k < o.channels; k++) {
    const g = (next + k) % o.channels;
    if (busyCh[g] || (mode !== Infinity && due[g] < 1)) continue;
    next = (g + 1) % o.channels;
    return g;
  }
  return -1;
}

function pump() {
  for (const slot of slots) {
    if (slot.busy || !slot.ready || mode === 0) continue;
    const g = nextChannel();
    if (g < 0) break;
    if (mode !== Infinity) due[g]--;
    send(slot, g);
  }
}

function done(slot) {
  if (slot.busy) busyCh[slot.g] = false;
  slot.busy = 0;
}

let stopping = false;

function connect(slot) {
  const s = net.connect(o.port, '127.0.0.1');
  slot.s = s;
  slot.ready = false;
  totals.connects++;
  s.setNoDelay(true);
  s.once('connect', () => {
    slot.ready = true;
    if (slot.onReady) slot.onReady();
    pump();
  });
  s.on('error', (err) => {
    slot.error = err.message;
  });
  s.on('close', () => {
    slot.ready = false;
    if (slot.busy) {
      inflight--;
      totals.failed++;
      done(slot);
    }
    if (!stopping) setImmediate(() => connect(slot));
  });
  responses(s, (status, closing) => {
    inflight--;
    if (closing) {
      // the server closes after this answer: the next request goes on a
      // new connection (made at the close)
      slot.ready = false;
      s.end();
    }
    totals.statuses[status] = (totals.statuses[status] || 0) + 1;
    if (status >= 200 && status < 300) {
      totals.ok++;
      totals.events += slot.busy;
    } else {
      totals.failed++;
    }
    done(slot);
    pump();
  });
}

const slots = [];

let last = process.hrtime.bigint();
setInterval(() => {
  const t = process.hrtime.bigint();
  const dt = Number(t - last) / 1e9;
  last = t;
  if (mode > 0 && mode !== Infinity) {
    const per = mode / o.channels;
    for (let g = 0; g < o.channels; g++) {
      due[g] += per * dt;
      // a backlog beyond a second of publishes is dropped, not sent in a burst
      if (due[g] > Math.max(1, per)) {
        const drop = Math.floor(due[g] - Math.max(1, per));
        totals.late += drop;
        due[g] -= drop;
      }
    }
    pump();
  }
}, 5);

let marks = 0;
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const [word, arg] = line.trim().split(/\s+/);
  if (word === 'rate') {
    mode = arg === 'max' ? Infinity : Number(arg) || 0;
    due.fill(0);
    last = process.hrtime.bigint();
    out({ rate: arg === 'max' ? 'max' : mode });
    if (mode === Infinity) pump();
  } else if (word === 'mark') {
    out({ mark: marks++, mono_ns: String(process.hrtime.bigint()), ...totals, inflight, seqs });
  }
});
process.stdin.on('end', () => process.exit(0));

(async () => {
  await Promise.all(Array.from({ length: o.sockets }, () => new Promise((resolve, reject) => {
    const slot = { busy: 0, ready: false, onReady: null };
    slot.onReady = () => {
      slot.onReady = null;
      resolve();
    };
    slots.push(slot);
    connect(slot);
    setTimeout(() => reject(new Error(`no connection to 127.0.0.1:${o.port} in 10 s${slot.error ? `: ${slot.error}` : ''}`)), 10000).unref();
  })));
  out({ ready: true, sockets: slots.length });
})().catch((err) => {
  process.stderr.write(`pusher-publisher: ${err.message}\n`);
  process.exit(1);
});
process.on('SIGTERM', () => {
  stopping = true;
  process.exit(0);
});
