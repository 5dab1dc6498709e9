'use strict';
// Flow control of events: while the JS thread is busy, IO threads stop
// reading once maxEventBytes of events wait for it; nothing is lost, and
// native memory stays near that bound instead of growing with the flood.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { allocator } = require('../..');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

const COUNT = 2000;
const SIZE = 16 * 1024; // 32 MiB in all

const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const WebSocket = require(workerData.root + '/node_modules/ws');
const { allocator } = require(workerData.root);
let peak = 0;
const sampler = setInterval(() => { peak = Math.max(peak, allocator.stats().allocated); }, 5);
const ws = new WebSocket(workerData.url);
ws.on('open', () => {
  const payload = Buffer.alloc(workerData.size, 0x61);
  for (let i = 0; i < workerData.count; i++) { payload.writeUInt32BE(i, 0); ws.send(payload); }
});
parentPort.on('message', () => { clearInterval(sampler); parentPort.postMessage({ peak }); ws.terminate(); });
`;

test('a flood while JS is blocked: reading pauses, nothing is lost, memory stays bounded', { timeout: 60000 }, async () => {
  const limit = 1 << 20;
  const { server, url } = await startServer({ threads: 1, maxEventBytes: limit, maxPayload: 1 << 20 });
  const got = [];
  let blocked = false;
  server.on('message', (id, data) => {
    got.push(data.readUInt32BE(0));
    if (!blocked) {
      blocked = true;
      // Block the JS thread for 1.5 s, as a slow handler would.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
    }
  });
  const base = allocator.stats().allocated;
  const w = new Worker(CLIENT, { eval: true, workerData: { root: path.resolve(__dirname, '..', '..'), url, count: COUNT, size: SIZE } });
  await waitFor(() => got.length === COUNT, 30000, 'every message');
  const peak = await new Promise((resolve) => { w.once('message', (m) => resolve(m.peak)); w.postMessage('stop'); });
  await w.terminate();
  assert.deepEqual(got, Array.from({ length: COUNT }, (_, i) => i), 'all messages, in order');
  assert.equal(server.stats().eventsLost, 0);
  // The bound: maxEventBytes of batches, the batch being filled (one 64 KiB
  // read per turn over), the partial frame kept between reads, and slack for
  // what the client worker itself allocates through ws (not ours).
  const grew = peak - base;
  assert.ok(grew < limit + 4 * 1024 * 1024, `native memory grew ${grew} bytes for a 32 MiB flood`);
});

test('a connection paused by flow control that times out is freed safely; reading resumes for the rest', { timeout: 60000 }, async () => {
  const { server, url } = await startServer({ threads: 1, maxEventBytes: 256 * 1024, maxPayload: 1 << 20, idleTimeout: 1 });
  let blocked = false;
  const closes = [];
  server.on('close', (id, code) => closes.push(code));
  server.on('message', () => {
    if (!blocked) {
      blocked = true;
      // Long enough for the paused flooder to reach its idle timeout (1 s:
      // ping at 0.5 s, close after it) while JS is not taking events.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000);
    }
  });
  const w = new Worker(CLIENT, { eval: true, workerData: { root: path.resolve(__dirname, '..', '..'), url, count: 400, size: SIZE } });
  await waitFor(() => blocked, 10000, 'the flood to start');
  await waitFor(() => server.stats().timeouts >= 1, 10000, 'the paused connection to time out');
  await waitFor(() => closes.length >= 1, 10000, 'its close event');
  await new Promise((resolve) => { w.once('message', resolve); w.postMessage('stop'); });
  await w.terminate();
  // The server goes on: a new client is served (and the paused list held no freed connection).
  const { healthy } = require('../helpers/server');
  assert.equal(await healthy(server, url), 'still here');
});
