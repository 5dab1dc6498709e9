'use strict';
// A loopback fan-out through whichever build the loader picks (or
// SYMPHONY_NATIVE names), for the artifact tests (scripts/test-artifacts.js):
// self-check, page size, 20 ws clients on 2 IO threads, 10 publishes each
// delivered to all; then the same over wss:// (the private OpenSSL of that
// build) with 5 clients. Prints one JSON line; exits non-zero on any failure.
const path = require('node:path');
const WebSocket = require('ws');
const { Server, allocator } = require(path.join(__dirname, '..', '..'));
const { pki } = require(path.join(__dirname, '..', '..', 'bench', 'servers', 'pki'));

const CLIENTS = 20;
const MESSAGES = 10;

/** n clients, MESSAGES publishes; resolves to the messages delivered. */
async function fanout(n, tls) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 2, tls: tls ? { cert: tls.a.cert, key: tls.a.key } : null });
  let opened = 0;
  server.on('open', (id) => { server.subscribe(id, 'news'); opened++; });
  const { port } = await server.listen();
  let got = 0;
  const clients = await Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const ws = new WebSocket(`${tls ? 'wss' : 'ws'}://127.0.0.1:${port}/`, tls ? { ca: tls.ca } : {});
    ws.on('message', () => { got++; });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  })));
  const deadline = Date.now() + 60000;
  while (opened < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  for (let i = 0; i < MESSAGES; i++) server.publish('news', `message ${i}`);
  while (got < n * MESSAGES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const handshakes = server.stats().tlsHandshakes;
  for (const ws of clients) ws.terminate();
  await server.close();
  return { delivered: got, expected: n * MESSAGES, handshakes };
}

async function main() {
  const check = allocator.selfCheck();
  const plain = await fanout(CLIENTS, null);
  const tls = await fanout(5, pki());
  const result = {
    nativePath: allocator.nativePath, allocator: allocator.name, pageSize: allocator.pageSize,
    selfCheck: check.ok, tlsRouted: check.tlsRouted, delivered: plain.delivered, expected: plain.expected,
    tls: { ...tls, openssl: allocator.tls().version }, arch: process.arch,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  const ok = check.ok && plain.delivered === plain.expected && tls.delivered === tls.expected && tls.handshakes === 5;
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
