'use strict';
// Run as a child process (a clean heap, no other test's servers freeing
// memory meanwhile): symphony's own allocated bytes per parked connection,
// with and without permessage-deflate negotiated, on one server with
// compression on. Prints { plain, deflate, deflateConnections }. argv[2]:
// more server options as JSON (e.g. '{"history":true}').
const extra = process.argv[2] ? JSON.parse(process.argv[2]) : {};
const WebSocket = require('ws');
const { Server, allocator } = require('../..');

const live = () => { const s = allocator.stats(); return s.allocated - Math.max(0, s.cached); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, compression: true, reclaim: false, ...extra });
  const { port } = await server.listen();
  let deflateConnections = 0;
  const perConnection = async (deflate, n = 200) => {
    while (server.stats().connections > 0) await sleep(10);
    await sleep(1100); // the last closes' events handed over and freed
    const before = live();
    const socks = await Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: deflate });
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
    })));
    while (server.stats().connections < n) await sleep(10);
    await sleep(2100); // parked: after the once-a-second sweep gave back idle send queues
    const bytes = (live() - before) / n;
    if (deflate) deflateConnections = server.stats().deflateConnections;
    for (const ws of socks) ws.terminate();
    return bytes;
  };
  await perConnection(false); // warm up (slabs, the slot table)
  const plain = await perConnection(false);
  const deflate = await perConnection(true);
  await server.close();
  process.stdout.write(JSON.stringify({ plain, deflate, deflateConnections }));
})().catch((err) => { console.error(err); process.exit(1); });
