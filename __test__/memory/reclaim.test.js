'use strict';
// Memory follows the load while idle: after a burst of connections closes,
// the freed pages go back to the OS once their decay time passes, even when
// nothing at all happens afterwards (jemalloc alone decays only on activity).
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { allocator } = require('../..');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

test('after a burst closes, resident memory returns on its own', { timeout: 60000 }, async (t) => {
  if (allocator.name !== 'jemalloc') {
    assert.equal(allocator.stats().resident, null, 'the system build cannot report resident memory');
    return;
  }
  const cfg = allocator.config;
  allocator.setDecay({ dirtyMs: 500, muzzyMs: 0 });
  t.after(() => allocator.setDecay({ dirtyMs: cfg.dirtyDecayMs, muzzyMs: cfg.muzzyDecayMs }));
  const { server, url } = await startServer({ threads: 2 });
  await new Promise((r) => setTimeout(r, 1500));
  const idle = allocator.stats().resident;
  // A burst: 1,000 connections, each sending a 64 KiB message (read into
  // receive buffers and event batches on the IO threads' arenas).
  let got = 0;
  server.on('message', () => got++);
  const clients = await Promise.all(Array.from({ length: 1000 }, () => new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => { ws.send(Buffer.alloc(64 * 1024, 1)); resolve(ws); });
    ws.once('error', reject);
  })));
  await waitFor(() => got === 1000, 20000, 'messages');
  const peak = allocator.stats().resident;
  for (const ws of clients) ws.terminate();
  await waitFor(() => server.stats().connections === 0, 10000, 'closed');
  // Nothing happens from here on: only the IO thread's once-a-second decay.
  await waitFor(() => allocator.stats().resident - idle < (peak - idle) * 0.25, 8000,
    'resident memory to come back down');
  const after = allocator.stats().resident;
  assert.ok(peak - idle > 4 << 20, `the burst was too small to tell (${peak - idle} bytes)`);
  console.log(`# resident idle ${idle} peak ${peak} after ${after}`);
});
