'use strict';
// The presence phase's clients (bench/runner/presence.js): `count`
// WebSocket connections on raw sockets, connection i (from `first`) to node
// i % nodes (the ports in --ports) with /?room=r<i % rooms>&user=u<i>, at
// most `pending` handshakes in flight, as fast as the nodes answer. A
// connection reads nothing after its 101 (no message is published in this
// phase); the close is a masked close frame (1000), then the socket ends once
// the server has closed.
//
//   node bench/runner/presence-client.js --ports P0,P1,P2 --count N --first F
//        --rooms R [--pending 256] [--local 127.0.0.2]
//
// Control lines on stdin, answered with one JSON line each on stdout:
//   open   opens every connection -> {"ev":"opened","open":N,"failed":F,"t0Ns":..,"lastNs":..,"errors":{..}}
//          (lastNs: CLOCK_MONOTONIC of the last 101 read)
//   close  closes every open one  -> {"ev":"closed","closed":N,"t0Ns":..,"lastNs":..}
//          (lastNs: the last socket closed by the server's side)
//   exit
// {"ev":"ready"} once started; {"ev":"progress","open":N,...} every second while
// opening or closing.

const net = require('node:net');
const readline = require('node:readline');

const { openAll } = require('./open-all');

function args() {
  const o = { ports: '', count: 100, first: 0, rooms: 10, pending: 256, local: '127.0.0.1', timeout: 60 };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o) || a[i + 1] === undefined) throw new Error(`presence-client: unknown argument or no value: ${a[i]}`);
    o[k] = typeof o[k] === 'string' ? a[i + 1] : Number(a[i + 1]);
  }
  o.ports = o.ports.split(',').map(Number).filter((p) => p > 0 && p < 65536);
  if (!o.ports.length) throw new Error('presence-client: --ports P0,P1,... is required');
  return o;
}

const o = args();
const out = (j) => process.stdout.write(`${JSON.stringify(j)}\n`);
const mono = () => process.hrtime.bigint();
// A close frame, code 1000, masked (a client's frames are), mask 0x01020304.
const CLOSE = Buffer.from([0x88, 0x82, 0x01, 0x02, 0x03, 0x04, 0x03 ^ 0x01, 0xe8 ^ 0x02]);

const socks = []; // the open ones
const errors = {};
let busy = false;

function head(i, port) {
  return `GET /?room=r${i % o.rooms}&user=u${i} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n`
    + 'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
}

/** One connection: resolves with the socket once its 101 is read, or null. */
function connect(i) {
  const port = o.ports[(o.first + i) % o.ports.length];
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: o.local });
    let got = '';
    let done = false;
    const finish = (ok, why) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.removeAllListeners('data');
      if (ok) {
        s.on('data', () => {}); // a close frame or nothing
        resolve(s);
      } else {
        errors[why] = (errors[why] || 0) + 1;
        s.destroy();
        resolve(null);
      }
    };
    const timer = setTimeout(() => finish(false, 'timeout'), o.timeout * 1000);
    s.setNoDelay(true);
    s.once('connect', () => s.write(head(o.first + i, port)));
    s.on('data', (d) => {
      got += d.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) {
        if (got.length > 4096) finish(false, 'bad answer');
        return;
      }
      finish(got.startsWith('HTTP/1.1 101'), `answer ${got.slice(9, 12)}`);
    });
    s.on('error', (err) => finish(false, err.code || 'error'));
    s.on('close', () => finish(false, 'closed before 101'));
  });
}

async function openEvery() {
  const { failed, t0Ns, lastNs } = await openAll(socks, o.count, o.pending, connect, out);
  out({ ev: 'opened', open: socks.length, failed, errors, t0Ns: String(t0Ns), lastNs: String(lastNs) });
}

async function closeAll() {
  const t0 = mono();
  let lastNs = 0n;
  let closed = 0;
  const list = socks.splice(0);
  const tick = setInterval(() => out({ ev: 'progress', closed, of: list.length }), 1000);
  await Promise.all(list.map((s) => new Promise((resolve) => {
    const timer = setTimeout(() => s.destroy(), o.timeout * 1000);
    s.once('close', () => {
      clearTimeout(timer);
      closed++;
      lastNs = mono();
      resolve();
    });
    s.on('end', () => s.end()); // the server closed its side: close ours
    s.on('error', () => {});
    s.write(CLOSE);
  })));
  clearInterval(tick);
  out({ ev: 'closed', closed, t0Ns: String(t0), lastNs: String(lastNs) });
}

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const word = line.trim();
  if (word === 'exit') {
    for (const s of socks) s.destroy();
    process.exit(0);
  }
  if (busy) return;
  busy = true;
  try {
    if (word === 'open') await openEvery();
    else if (word === 'close') await closeAll();
  } finally {
    busy = false;
  }
});
process.stdin.on('end', () => process.exit(0));
out({ ev: 'ready', pid: process.pid });
