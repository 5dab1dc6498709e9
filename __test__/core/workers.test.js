'use strict';
// The addon in worker_threads: loads, works, and unloads cleanly, in one
// worker and in two at once, with no state shared between environments.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { expectedAllocator, runNode } = require('../helpers/build');
const { isTestingBuild, needsTestingBuild } = require('../helpers/testing');

const root = path.resolve(__dirname, '..', '..');

const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const symphony = require(workerData.root);
const { binding } = require(workerData.root + '/lib/native');
const check = symphony.allocator.selfCheck();
const ids = [];
// Testing builds only (_testAlloc): the other 50 stay allocated, and the
// environment's cleanup must free them.
if (binding._testAlloc) {
  for (let i = 0; i < 100; i++) ids.push(binding._testAlloc(4096));
  for (let i = 0; i < 50; i++) binding._testFree(ids[i]);
}
parentPort.postMessage({ ok: check.ok, name: symphony.allocator.name, firstId: ids[0] ?? null });
`;

function runWorker() {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER_CODE, { eval: true, workerData: { root } });
    let msg = null;
    w.on('message', (m) => { msg = m; });
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve(msg) : reject(new Error(`worker exit ${code}`))));
  });
}

test('loads and works in a worker thread', async () => {
  const msg = await runWorker();
  assert.deepEqual(msg, { ok: true, name: expectedAllocator, firstId: isTestingBuild ? 0 : null });
});

test('two workers at once each get their own state', async () => {
  const msgs = await Promise.all([runWorker(), runWorker()]);
  // Ids start at 0 in each environment: no state is shared between them.
  for (const m of msgs) assert.deepEqual(m, { ok: true, name: expectedAllocator, firstId: isTestingBuild ? 0 : null });
});

test('blocks left by exiting workers are freed by the environment cleanup', needsTestingBuild, async () => {
  const { allocator } = require('../..');
  await runWorker();
  const before = allocator.stats().allocated;
  for (let i = 0; i < 5; i++) await runWorker();
  const after = allocator.stats().allocated;
  // Each worker leaves 50 x 4 KiB live; 5 workers would leave ~1 MiB.
  assert.ok(after - before < 100 * 1024, `allocated grew ${after - before} bytes over 5 workers`);
});

test('a process whose workers load the addon exits cleanly', () => {
  const code = `
    const { Worker } = require('node:worker_threads');
    const w = new Worker(${JSON.stringify(WORKER_CODE)}, { eval: true, workerData: { root: ${JSON.stringify(root)} } });
    w.on('message', (m) => { if (!m.ok) process.exit(3); w.terminate(); });
  `;
  const r = runNode(code);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.signal, null);
});

const SERVER_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { Server } = require(workerData.root);
const server = new Server({ host: '127.0.0.1', threads: 2 });
server.on('open', (id) => { server.subscribe(id, 'w'); server.publish('w', 'from worker ' + workerData.n); });
server.listen().then(({ port }) => parentPort.postMessage({ port }));
// The worker never closes the server: its environment's cleanup must.
`;

function serverWorker(n) {
  const w = new Worker(SERVER_WORKER, { eval: true, workerData: { root, n } });
  const port = new Promise((resolve, reject) => {
    w.once('message', (m) => resolve(m.port));
    w.once('error', reject);
  });
  return { w, port };
}

test('servers in two workers at once; terminating a worker with clients open cleans up', async () => {
  const WebSocket = require('ws');
  const a = serverWorker(1);
  const b = serverWorker(2);
  const ports = await Promise.all([a.port, b.port]);
  const got = await Promise.all(ports.map((port) => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
    ws.once('message', (d) => resolve({ ws, text: d.toString() }));
    ws.once('error', reject);
  })));
  assert.deepEqual(got.map((g) => g.text).sort(), ['from worker 1', 'from worker 2']);
  // Terminate with the clients still connected: the IO threads are joined,
  // the sockets closed (the clients see the connection drop).
  const drops = got.map((g) => new Promise((resolve) => g.ws.once('close', (code) => resolve(code))));
  await Promise.all([a.w.terminate(), b.w.terminate()]);
  const codes = await Promise.all(drops);
  for (const c of codes) assert.ok(c === 1001 || c === 1006, `close code ${c}`);
});

test('a process that exits with a server listening exits cleanly', () => {
  const code = `
    const { Server } = require(${JSON.stringify(root)});
    const s = new Server({ host: '127.0.0.1' });
    s.listen().then(() => { console.log('up'); process.exit(0); });
  `;
  const r = runNode(code);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'up');
});
