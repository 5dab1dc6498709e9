'use strict';
// A loopback fan-out through whichever build the loader picks (or
// SYMPHONY_NATIVE names), for the artifact tests (scripts/test-artifacts.js):
// self-check, page size, 20 ws clients on 2 IO threads, 10 publishes each
// delivered to all. Prints one JSON line; exits non-zero on any failure.
const path = require('node:path');
const WebSocket = require('ws');
const { Server, allocator } = require(path.join(__dirname, '..', '..'));

const CLIENTS = 20;
const MESSAGES = 10;

async function main() {
  const check = allocator.selfCheck();
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 2 });
  server.on('open', (id) => server.subscribe(id, 'news'));
  const { port } = await server.listen();
  let got = 0;
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
    ws.on('message', () => { got++; });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  })));
  const deadline = Date.now() + 60000;
  while (server.stats().connections < CLIENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  for (let i = 0; i < MESSAGES; i++) server.publish('news', `message ${i}`);
  while (got < CLIENTS * MESSAGES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  for (const ws of clients) ws.terminate();
  await server.close();
  const result = {
    nativePath: allocator.nativePath, allocator: allocator.name, pageSize: allocator.pageSize,
    selfCheck: check.ok, delivered: got, expected: CLIENTS * MESSAGES, arch: process.arch,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(check.ok && got === CLIENTS * MESSAGES ? 0 : 1);
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
