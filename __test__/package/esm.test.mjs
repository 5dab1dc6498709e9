// The package from an ES module, by its name: `import { Server, allocator }
// from 'symphony-ws'` (resolved through package.json's "exports", as a user's
// project resolves it; inside the package Node resolves its own name the
// same way). Every export of require('symphony-ws') must arrive as a named
// import, as the same object (one native binding per process), and a
// server made from the import must serve.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import WebSocket from 'ws';
import symphony, { Server, allocator, SymphonyError, LoadError, TlsError } from 'symphony-ws';
import * as namespace from 'symphony-ws';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('import from symphony-ws: every export of require(), the same objects', () => {
  const cjs = require('symphony-ws');
  assert.equal(require.resolve('symphony-ws'), path.join(root, 'lib', 'index.js'));
  assert.equal(symphony, cjs);
  for (const key of Object.keys(cjs)) {
    assert.ok(key in namespace, `${key} is a named export`);
    assert.equal(namespace[key], cjs[key], `${key} is the same object`);
  }
  assert.deepEqual(Object.keys(namespace).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort());
  assert.equal(typeof Server, 'function');
  assert.ok(new TlsError('x') instanceof SymphonyError);
  assert.equal(typeof LoadError, 'function');
  assert.equal(allocator.selfCheck().ok, true);
});

test('a server made from the ES module import serves: onUpgrade topics, publish, send, close', async () => {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, onUpgrade: () => ({ topics: ['news'] }) });
  server.on('message', (id, data) => server.send(id, `echo ${data}`));
  const opened = new Promise((resolve) => server.once('open', resolve));
  const { port } = await server.listen();
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
  const received = [];
  ws.on('message', (d) => received.push(d.toString()));
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  await opened;
  assert.equal(server.publish('news', 'hello'), 1);
  ws.send('ping');
  const deadline = Date.now() + 5000;
  while (received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(received.sort(), ['echo ping', 'hello']);
  const closed = new Promise((resolve) => ws.once('close', resolve));
  await server.close();
  assert.equal(await closed, 1001);
});
