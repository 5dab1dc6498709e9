'use strict';
// publish-1mib — what compressing a 1 MiB publish costs the JS thread.
//
// symphony compresses a publish on the first IO thread that has a
// subscriber who negotiated permessage-deflate, not in publish(). This
// measures, on the JS thread, the time publish() takes and the event loop's
// longest stall with 1 MiB JSON payloads going compressed to N subscribers,
// beside the compression's own cost (stats().compressMicros per message):
// the time publish() would block the JS thread if it compressed there.
// The clients (ws, inflating) run in a child process, so that their work
// is not on the measured thread.
//
//   node bench/micro/publish-1mib.js [--messages 40] [--clients 8] [--level 6]
const { performance, monitorEventLoopDelay } = require('node:perf_hooks');
const path = require('node:path');
const WebSocket = require(require.resolve('ws', { paths: [path.join(__dirname, '..', '..')] }));
const { fork } = require('node:child_process');
const { Server } = require('../..');

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

function json(bytes, seed) {
  const rows = [];
  let s = seed;
  let len = 2;
  while (len < bytes) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const row = { sym: `S${s % 97}`, px: (s % 100000) / 100, qty: s % 5000, side: s % 2 ? 'buy' : 'sell', ts: 1700000000000 + s };
    len += JSON.stringify(row).length + 1;
    rows.push(row);
  }
  return JSON.stringify(rows).slice(0, bytes);
}

async function run({ compression, messages, clients, level }) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 2, maxBackpressure: 64 << 20,
    compression: compression ? { level } : false, onUpgrade: () => ({ topics: ['t'] }) });
  const { port } = await server.listen();
  let received = 0;
  const child = fork(__filename, ['--child', String(port), String(clients), compression ? '1' : '0']);
  child.on('message', (m) => { if (m.received !== undefined) received = m.received; });
  await new Promise((resolve) => child.once('message', resolve)); // open
  const payloads = Array.from({ length: messages }, (_, i) => json(1 << 20, i + 1));
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const calls = [];
  for (const p of payloads) {
    const t0 = performance.now();
    server.publish('t', p);
    calls.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 20)); // a feed, not a burst
  }
  const deadline = Date.now() + 60000;
  while (received < messages * clients && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  h.disable();
  const s = server.stats();
  child.kill();
  await server.close();
  calls.sort((a, b) => a - b);
  return {
    compression, received: received === messages * clients,
    publishMedianMs: calls[calls.length >> 1], publishMaxMs: calls[calls.length - 1],
    loopDelayMaxMs: h.max / 1e6, loopDelayP99Ms: h.percentile(99) / 1e6,
    compressed: s.compressed, compressMsPerMessage: s.compressed ? s.compressMicros / s.compressed / 1000 : 0,
    ratio: s.compressBytesIn ? s.compressBytesOut / s.compressBytesIn : 1,
  };
}

/** The child: N ws clients, reporting how many messages arrived. */
function child([port, n, deflate]) {
  let received = 0;
  Promise.all(Array.from({ length: Number(n) }, () => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: deflate === '1', maxPayload: 8 << 20 });
    ws.on('message', () => { received++; process.send({ received }); });
    ws.once('open', resolve);
    ws.once('error', reject);
  }))).then(() => process.send({ open: true }));
}

if (process.argv[2] === '--child') child(process.argv.slice(3));
else (async () => {
  const messages = arg('messages', 40), clients = arg('clients', 8), level = arg('level', 6);
  for (const compression of [false, true]) {
    const r = await run({ compression, messages, clients, level });
    console.log(JSON.stringify(r));
  }
})();
