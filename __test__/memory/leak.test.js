'use strict';
// No leak: 10,000 connections opened and closed with traffic both ways;
// symphony's native `allocated` comes back to where it started.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { allocator } = require('../..');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

const TOTAL = 10000;
const CONCURRENT = 500;
// What symphony holds is `allocated` minus what sits in jemalloc's
// per-thread caches (`cached`: freed blocks the stat still counts). What may
// differ after the churn: a few blocks in flight (a batch, a timer's frame).
const BOUND = 64 * 1024;
const held = () => { const a = allocator.stats(); return a.allocated - a.cached; };

// The JS side's count of close events: a closed connection's event batch
// is native memory until JS has taken it.
let jsCloses = 0;
let made = 0;

async function round(url, n, server, offset) {
  made += n;
  const clients = await Promise.all(Array.from({ length: n }, (_, i) => new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/?n=${offset + i}`);
    let got = 0;
    ws.on('message', () => { got++; if (got === 2) resolve(ws); });
    ws.once('open', () => ws.send(`hello ${offset + i}`));
    ws.once('error', reject);
  })));
  await Promise.all(clients.map((ws, i) => new Promise((resolve) => {
    ws.once('close', resolve);
    if (i % 2) ws.close(1000, 'done'); else ws.terminate();
  })));
  await waitFor(() => server.stats().connections === 0 && jsCloses === made, 10000, 'the close events');
}

test('10,000 connections with traffic leave no native memory behind', { timeout: 300000 }, async () => {
  const { server, url } = await startServer({ threads: 2 });
  // Echo each message, and publish it on a per-connection topic it is subscribed to.
  server.on('open', (id) => server.subscribe(id, `room-${id % 7}`));
  server.on('close', () => jsCloses++);
  server.on('message', (id, data) => {
    server.send(id, data);
    server.publish(`room-${id % 7}`, data);
  });
  // Warm-up: the slot tables and queues reach their size for this concurrency.
  await round(url, CONCURRENT, server, 0);
  // Two sweeps: idle buffers given back, and the command queues (whose two
  // arrays swap at every run) shrunk after the burst.
  await new Promise((r) => setTimeout(r, 2200));
  const before = held();
  for (let done = 0; done < TOTAL; done += CONCURRENT) await round(url, CONCURRENT, server, done);
  await waitFor(() => server.stats().topics === 0, 10000, 'topics freed');
  await new Promise((r) => setTimeout(r, 2200));
  const after = held();
  const s = server.stats();
  assert.equal(s.opened, TOTAL + CONCURRENT);
  assert.equal(s.closed, TOTAL + CONCURRENT);
  assert.ok(s.messagesIn >= TOTAL);
  console.log(`# held (allocated - cached) before ${before} after ${after} delta ${after - before}`);
  assert.ok(after - before < BOUND, `allocated grew by ${after - before} bytes over ${TOTAL} connections`);
  await server.close();
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(held() <= before + BOUND, 'closing the server frees its tables');
});
