'use strict';
// The asks phase's round trips (bench/runner/asks.js): one client, the
// libraries users use, one call at a time.
//
//   node bench/runner/asks-rt-client.js --impl symphony|socketio --port P [--size 64]
//
// symphony: SymphonyClient (client/symphony-client.cjs) over the ws package;
//   it subscribes to room.rt first (the onSubscribe hook grants it), so the
//   topic has one subscriber, the publisher itself.
//   publish   await client.publish('room.rt', payload): the time to its answer
//             ('published'), and to the message's arrival on the
//             subscription (the same connection); the next call waits for both
//   request   await client.request(payload): onRequest sends the data back
// socketio: socket.io-client 4.8, websocket transport; it joins room.rt first.
//   publish   socket.emit('publish', 'room.rt', payload, ack): the server emits
//             'm' to the room and acks; the time to the ack and to 'm'
//   echo      socket.emit('echo', payload, ack): the server acks with the data
//
// Control lines on stdin, answered with one JSON line each on stdout:
//   run SERIES N   N calls of SERIES one after another ->
//                  {"ev":"series","series":..,"n":N,"failed":F,"ack":{p50Us,p99Us,p999Us,meanUs,maxUs},
//                   "delivered":{...} (publish), "seconds":..}
//   exit
// {"ev":"ready"} once connected (and subscribed / joined).

const path = require('node:path');
const readline = require('node:readline');

function args() {
  const o = { impl: 'symphony', port: 0, size: 64 };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o) || a[i + 1] === undefined) throw new Error(`asks-rt-client: unknown argument or no value: ${a[i]}`);
    o[k] = typeof o[k] === 'string' ? a[i + 1] : Number(a[i + 1]);
  }
  if (!(o.port > 0 && o.port < 65536)) throw new Error('asks-rt-client: --port P is required');
  return o;
}

const o = args();
const out = (j) => process.stdout.write(`${JSON.stringify(j)}\n`);
const mono = () => process.hrtime.bigint();
const REPO = path.join(__dirname, '..', '..');
const TOPIC = 'room.rt';
const PAYLOAD = 'x'.repeat(Math.max(1, o.size)); // text: sent as is, and as a JSON string in a request's reply

function pct(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
}

function summary(us) {
  const s = us.slice().sort((a, b) => a - b);
  return { n: s.length, p50Us: pct(s, 0.5), p90Us: pct(s, 0.9), p99Us: pct(s, 0.99), p999Us: pct(s, 0.999),
    meanUs: s.length ? s.reduce((a, b) => a + b, 0) / s.length : null, minUs: s.length ? s[0] : null, maxUs: s.length ? s[s.length - 1] : null };
}

/** A promise and its resolve, for the next message on the subscription. */
function later() {
  let resolve;
  const p = new Promise((r) => {
    resolve = r;
  });
  return { p, resolve };
}

async function symphony() {
  const WebSocket = require(path.join(REPO, 'node_modules', 'ws'));
  const { SymphonyClient } = require(path.join(REPO, 'client', 'symphony-client.cjs'));
  const client = new SymphonyClient(`ws://127.0.0.1:${o.port}/`, { WebSocket });
  client.on('error', () => {});
  const sub = client.subscribe(TOPIC);
  let next = null;
  sub.on('message', () => {
    if (next) next.resolve(mono());
  });
  await new Promise((resolve, reject) => {
    sub.once('subscribed', resolve);
    sub.once('refused', (err) => reject(new Error(`subscribe refused: ${err.code}`)));
  });
  return {
    async publish() {
      next = later();
      const t0 = mono();
      await client.publish(TOPIC, PAYLOAD);
      const tAck = mono();
      const tMsg = await next.p;
      next = null;
      return { ack: Number(tAck - t0) / 1e3, delivered: Number(tMsg - t0) / 1e3 };
    },
    async request() {
      const t0 = mono();
      const r = await client.request(PAYLOAD);
      const t1 = mono();
      if (r !== PAYLOAD) throw new Error('request: not the data back');
      return { ack: Number(t1 - t0) / 1e3 };
    },
    close: () => client.close(),
  };
}

async function socketio() {
  const { io } = require(path.join(REPO, 'node_modules', 'socket.io-client'));
  const socket = io(`http://127.0.0.1:${o.port}`, { transports: ['websocket'], reconnection: false });
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  const ok = await new Promise((resolve) => socket.emit('join', TOPIC, resolve));
  if (ok !== true) throw new Error('join refused');
  let next = null;
  socket.on('m', () => {
    if (next) next.resolve(mono());
  });
  return {
    async publish() {
      next = later();
      const t0 = mono();
      const ack = await new Promise((resolve) => socket.emit('publish', TOPIC, PAYLOAD, resolve));
      const tAck = mono();
      if (ack !== true) throw new Error('publish refused');
      const tMsg = await next.p;
      next = null;
      return { ack: Number(tAck - t0) / 1e3, delivered: Number(tMsg - t0) / 1e3 };
    },
    async echo() {
      const t0 = mono();
      const r = await new Promise((resolve) => socket.emit('echo', PAYLOAD, resolve));
      const t1 = mono();
      if (r !== PAYLOAD) throw new Error('echo: not the data back');
      return { ack: Number(t1 - t0) / 1e3 };
    },
    close: () => socket.close(),
  };
}

async function main() {
  const impl = o.impl === 'symphony' ? await symphony() : o.impl === 'socketio' ? await socketio() : null;
  if (!impl) throw new Error(`--impl symphony|socketio (got ${o.impl})`);
  let busy = false;
  readline.createInterface({ input: process.stdin }).on('line', async (line) => {
    const [word, series, nText] = line.trim().split(/\s+/);
    if (word === 'exit') {
      impl.close();
      process.exit(0);
    }
    if (word !== 'run' || busy) return;
    busy = true;
    const fn = impl[series];
    const n = Number(nText) || 0;
    const ack = [];
    const delivered = [];
    let failed = 0;
    let firstError = null;
    const t0 = mono();
    if (typeof fn === 'function') {
      for (let i = 0; i < n; i++) {
        try {
          const r = await fn();
          ack.push(r.ack);
          if (r.delivered !== undefined) delivered.push(r.delivered);
        } catch (err) {
          failed++;
          firstError = firstError || err.message;
        }
      }
    } else {
      failed = n;
      firstError = `no series ${series}`;
    }
    const seconds = Number(mono() - t0) / 1e9;
    out({ ev: 'series', series, n, failed, firstError, seconds, ack: summary(ack), delivered: delivered.length ? summary(delivered) : null });
    busy = false;
  });
  process.stdin.on('end', () => process.exit(0));
  out({ ev: 'ready', pid: process.pid, payloadBytes: Buffer.byteLength(PAYLOAD) });
}

main().catch((err) => {
  process.stderr.write(`asks-rt-client: ${err.stack || err.message}\n`);
  process.exit(1);
});
