'use strict';
// The asks phase's storm clients (bench/runner/asks.js): `count` WebSocket
// connections on raw sockets (connection i from `first`), at most `pending`
// handshakes in flight, then, on 'go', `subs` subscribes from every
// connection at once, each answered by the server.
//
//   node bench/runner/asks-client.js --impl symphony|socketio --port P --count N
//        --first F [--subs 5] [--rooms 1000] [--pending 256] [--local 127.0.0.2]
//        [--timeout 60] [--secret HEX]
//
// Connection i's subscribe k (0 ≤ k < subs) is to room.<(i × subs + k) % rooms>.
//   symphony: the upgrade offers symphony.v2 (the 101 must choose it); each
//     subscribe is its own frame s{"subs":[{"rid":k+1,"topic":...[,"token":JWT]}],"resub":false},
//     as SymphonyClient.subscribe() sends one on an open connection; with
//     --secret every entry carries the connection's token (HS256, claims
//     { sub: "u<i>", exp: now + 1 h, topics: { subscribe: ["room.*"] } }),
//     signed once per connection with node:crypto at the open. Answers: the
//     'subscribed' notice (with its rid) or 'refused' (with its code).
//   socketio: Engine.IO 4 over websocket (GET /socket.io/?EIO=4&transport=websocket),
//     its open packet, then the namespace's CONNECT (40 → 40{"sid"}); each
//     subscribe is the event 42<k+1>["join","room.N"] with an ack id, as
//     socket.emit('join', room, ack) sends it; the answer is its ack
//     43<k+1>[true|false]. Pings (2) are answered (3).
// Every frame a client sends is masked; a connection's frames are made at the
// open (before the timed part) and written at 'go' in one write per
// connection (its `subs` frames together).
//
// Control lines on stdin, answered with one JSON line each on stdout:
//   open   opens every connection -> {"ev":"opened","open":N,"failed":F,"errors":{..},"t0Ns":..,"lastNs":..}
//   go     every connection sends its subscribes; once every one is answered
//          (or --timeout s) -> {"ev":"done","asked":..,"answered":..,"granted":..,"refused":..,
//          "codes":{..},"firstNs":..,"lastSendNs":..,"lastNs":..}
//          (CLOCK_MONOTONIC ns: the first write, the last write, the last answer read)
//   exit
// {"ev":"ready"} once started; {"ev":"progress",...} every second while opening or asking.

const net = require('node:net');
const crypto = require('node:crypto');
const readline = require('node:readline');

const { openAll } = require('./open-all');

function args() {
  const o = { impl: 'symphony', port: 0, count: 100, first: 0, subs: 5, rooms: 1000, pending: 256, local: '127.0.0.1', timeout: 60, secret: '' };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o) || a[i + 1] === undefined) throw new Error(`asks-client: unknown argument or no value: ${a[i]}`);
    o[k] = typeof o[k] === 'string' ? a[i + 1] : Number(a[i + 1]);
  }
  if (!(o.port > 0 && o.port < 65536)) throw new Error('asks-client: --port P is required');
  if (!['symphony', 'socketio'].includes(o.impl)) throw new Error(`asks-client: --impl symphony|socketio (got ${o.impl})`);
  return o;
}

const o = args();
const out = (j) => process.stdout.write(`${JSON.stringify(j)}\n`);
const mono = () => process.hrtime.bigint();
const SECRET = o.secret ? Buffer.from(o.secret, 'hex') : null;
const SIO = o.impl === 'socketio';

const b64url = (buf) => buf.toString('base64url');
const JWT_HEAD = b64url(Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })));

/** An HS256 JWT for connection i (node:crypto). */
function token(i) {
  const claims = { sub: `u${i}`, exp: Math.floor(Date.now() / 1000) + 3600, topics: { subscribe: ['room.*'] } };
  const body = `${JWT_HEAD}.${b64url(Buffer.from(JSON.stringify(claims)))}`;
  return `${body}.${b64url(crypto.createHmac('sha256', SECRET).update(body).digest())}`;
}

/** A masked text frame (a client's frames are masked: RFC 6455 5.3). */
function frame(text) {
  const p = Buffer.from(text);
  const n = p.length;
  const hl = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const f = Buffer.allocUnsafe(hl + 4 + n);
  f[0] = 0x81;
  if (n < 126) f[1] = 0x80 | n;
  else if (n < 65536) {
    f[1] = 0x80 | 126;
    f.writeUInt16BE(n, 2);
  } else {
    f[1] = 0x80 | 127;
    f.writeBigUInt64BE(BigInt(n), 2);
  }
  const mask = crypto.randomBytes(4);
  mask.copy(f, hl);
  for (let j = 0; j < n; j++) f[hl + 4 + j] = p[j] ^ mask[j & 3];
  return f;
}

const PONG = frame('3'); // Engine.IO pong (the same bytes each time: fine for the server)
const SIO_CONNECT = frame('40');

/** The subscribes of connection i, as one buffer of `subs` frames. */
function asks(i) {
  const tok = SECRET ? token(i) : null;
  const frames = [];
  for (let k = 0; k < o.subs; k++) {
    const topic = `room.${(i * o.subs + k) % o.rooms}`;
    if (SIO) frames.push(frame(`42${k + 1}${JSON.stringify(['join', topic])}`));
    else {
      const e = { rid: k + 1, topic };
      if (tok) e.token = tok;
      frames.push(frame(`s${JSON.stringify({ subs: [e], resub: false })}`));
    }
  }
  return Buffer.concat(frames);
}

/**
 * The server's frames on one socket: onText(text) per text frame (the
 * server's are unmasked and, here, never fragmented). Returns (chunk) => void.
 */
function frames(onText, onClose) {
  let buf = null;
  return (chunk) => {
    buf = buf && buf.length ? Buffer.concat([buf, chunk]) : chunk;
    let at = 0;
    for (;;) {
      if (buf.length - at < 2) break;
      const op = buf[at] & 0x0f;
      let n = buf[at + 1] & 0x7f;
      let h = 2;
      if (n === 126) {
        if (buf.length - at < 4) break;
        n = buf.readUInt16BE(at + 2);
        h = 4;
      } else if (n === 127) {
        if (buf.length - at < 10) break;
        n = Number(buf.readBigUInt64BE(at + 2));
        h = 10;
      }
      if (buf.length - at < h + n) break;
      const payload = buf.subarray(at + h, at + h + n);
      at += h + n;
      if (op === 1) onText(payload.toString('utf8'));
      else if (op === 8) onClose();
    }
    buf = at < buf.length ? buf.subarray(at) : null;
  };
}

const conns = []; // { s, i, asks, answered, onText }
const errors = {};
let busy = false;
// the storm's counters
const st = { answered: 0, granted: 0, refused: 0, other: 0, codes: {}, lastNs: 0n, done: 0, asking: false, finish: null };

function head(port) {
  const url = SIO ? '/socket.io/?EIO=4&transport=websocket' : '/';
  return `GET ${url} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
    + `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${SIO ? '' : 'Sec-WebSocket-Protocol: symphony.v2\r\n'}\r\n`;
}

/** An answer read on connection c (symphony: a notice; socket.io: an ack). */
function answer(c, ok, code) {
  if (!st.asking) return;
  st.answered++;
  st.lastNs = mono();
  if (ok) st.granted++;
  else {
    st.refused++;
    st.codes[code] = (st.codes[code] || 0) + 1;
  }
  if (++c.answered === o.subs) {
    st.done++;
    if (st.done === conns.length && st.finish) st.finish();
  }
}

function onSymphony(c, text) {
  if (text.charCodeAt(0) !== 99) { // 'c'
    st.other++;
    return;
  }
  if (text.startsWith('c{"type":"subscribed"')) answer(c, true);
  else if (text.startsWith('c{"type":"refused"')) {
    const m = /"code":"([^"]*)"/.exec(text);
    answer(c, false, m ? m[1] : '?');
  } else st.other++;
}

function onSocketio(c, text) {
  if (text === '2') {
    c.s.write(PONG);
    return;
  }
  if (text.startsWith('43')) answer(c, /^43\d+\[true\]/.test(text), 'false');
  else st.other++;
}

/** One connection: resolves with it once upgraded (socket.io: and its namespace connected), or null. */
function connect(i) {
  const port = o.port;
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: o.local });
    let got = '';
    let done = false;
    let stage = 0; // 0: the 101; socket.io: 1 its open packet, 2 the namespace's CONNECT
    const c = { s, i, asks: null, answered: 0 };
    const finish = (ok, why) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (ok) {
        c.asks = asks(i);
        resolve(c);
      } else {
        errors[why] = (errors[why] || 0) + 1;
        s.destroy();
        resolve(null);
      }
    };
    const timer = setTimeout(() => finish(false, 'timeout'), o.timeout * 1000);
    let closed = false;
    const parse = frames((text) => {
      if (done) {
        if (SIO) onSocketio(c, text);
        else onSymphony(c, text);
        return;
      }
      if (stage === 1 && text.startsWith('0{')) {
        stage = 2;
        s.write(SIO_CONNECT);
      } else if (stage === 2 && text.startsWith('40')) finish(true);
      else if (stage === 2 && text.startsWith('44')) finish(false, 'connect_error');
    }, () => {
      if (!closed) {
        closed = true;
        errors['close frame'] = (errors['close frame'] || 0) + 1;
      }
    });
    s.setNoDelay(true);
    s.once('connect', () => s.write(head(port)));
    s.on('data', (d) => {
      if (stage > 0) {
        parse(d);
        return;
      }
      got += d.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) {
        if (got.length > 4096) finish(false, 'bad answer');
        return;
      }
      if (!got.startsWith('HTTP/1.1 101')) {
        finish(false, `answer ${got.slice(9, 12)}`);
        return;
      }
      if (!SIO && !/\r\nsec-websocket-protocol: *symphony\.v2\r\n/i.test(got.slice(0, end + 2))) {
        finish(false, 'symphony.v2 not chosen');
        return;
      }
      const rest = Buffer.from(got.slice(end + 4), 'latin1');
      stage = 1;
      if (!SIO) finish(true);
      if (rest.length) parse(rest);
    });
    s.on('error', (err) => finish(false, err.code || 'error'));
    s.on('close', () => {
      if (done && st.asking && c.answered < o.subs) errors['closed while asking'] = (errors['closed while asking'] || 0) + 1;
      finish(false, 'closed before ready');
    });
  });
}

async function openEvery() {
  const { failed, t0Ns, lastNs } = await openAll(conns, o.count, o.pending, (k) => connect(o.first + k), out);
  out({ ev: 'opened', open: conns.length, failed, errors, t0Ns: String(t0Ns), lastNs: String(lastNs) });
}

async function go() {
  st.asking = true;
  const finished = new Promise((resolve) => {
    st.finish = resolve;
  });
  const firstNs = mono();
  for (const c of conns) c.s.write(c.asks);
  const lastSendNs = mono();
  const tick = setInterval(() => out({ ev: 'progress', answered: st.answered, of: conns.length * o.subs }), 1000);
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, o.timeout * 1000);
  });
  if (conns.length) await Promise.race([finished, timeout]);
  clearTimeout(timer);
  clearInterval(tick);
  st.asking = false;
  out({ ev: 'done', conns: conns.length, asked: conns.length * o.subs, answered: st.answered, granted: st.granted, refused: st.refused,
    codes: st.codes, other: st.other, complete: st.done, errors, firstNs: String(firstNs), lastSendNs: String(lastSendNs), lastNs: String(st.lastNs) });
}

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const word = line.trim();
  if (word === 'exit') {
    for (const c of conns) c.s.destroy();
    process.exit(0);
  }
  if (busy) return;
  busy = true;
  try {
    if (word === 'open') await openEvery();
    else if (word === 'go') await go();
  } finally {
    busy = false;
  }
});
process.stdin.on('end', () => process.exit(0));
out({ ev: 'ready', pid: process.pid });
