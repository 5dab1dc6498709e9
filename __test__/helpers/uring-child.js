'use strict';
// Run by __test__/core/uring.test.js in a child process (under the no-uring
// seccomp launcher, with SYMPHONY_IO_URING=0, or as is): a server with two
// IO threads, 20 clients, bursts of publishes that leave many connections
// dirty in each loop turn (what the io_uring batches are made of), and one
// client whose socket stops reading while 4 MiB more is published to it
// (its socket fills; the server resumes on writability). Every client must
// get exactly its messages, in publish order. Prints one JSON line:
// { problems: [...], stats: { ioUring, uringBatches, uringSends, threads } }.
const WebSocket = require('ws');
const { Server } = require('../..');

const CLIENTS = 20;
const SMALL = 300;
const BULK = 500;

async function main() {
  const server = new Server({
    host: '127.0.0.1', port: 0, threads: 2, maxBackpressure: 16 << 20,
    onUpgrade: (req) => ({ topics: req.url.includes('bulk') ? ['t', 'bulk'] : ['t'] }),
  });
  const { port } = await server.listen();
  const got = Array.from({ length: CLIENTS }, () => []);
  const clients = await Promise.all(got.map((list, i) => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/${i === 0 ? 'bulk' : 'x'}`);
    ws.on('message', (data) => list.push(Number(data.toString('latin1', 0, 12))));
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  })));
  const want = Array.from({ length: CLIENTS }, () => []);
  let seq = 0;
  const publish = (topic, size) => {
    const s = seq++;
    const body = Buffer.alloc(size, 0x2e);
    body.write(String(s).padStart(12, '0'), 'latin1');
    server.publish(topic, body);
    for (let i = 0; i < CLIENTS; i++) if (topic === 't' || i === 0) want[i].push(s);
  };
  clients[0]._socket.pause(); // stops reading: its window and the server's socket fill
  for (let k = 0; k < SMALL; k++) {
    publish('t', 256);
    if (k % 3 === 0 && k / 3 < BULK) for (let b = 0; b < 5; b++) publish('bulk', 8192);
    if (k % 50 === 49) await new Promise((r) => setTimeout(r, 5));
  }
  await new Promise((r) => setTimeout(r, 300));
  clients[0]._socket.resume();
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline && got.some((list, i) => list.length < want[i].length)) {
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 100)); // anything extra would show now
  const problems = [];
  got.forEach((list, i) => {
    if (list.length !== want[i].length || list.some((s, k) => s !== want[i][k])) {
      const at = list.findIndex((s, k) => s !== want[i][k]);
      problems.push(`client ${i}: ${list.length} of ${want[i].length} messages, first wrong at ${at}`);
    }
  });
  const st = server.stats();
  const stats = { ioUring: st.ioUring, uringBatches: st.uringBatches, uringSends: st.uringSends,
    threads: st.threads.length, dropped: st.dropped, slowCloses: st.slowCloses };
  for (const ws of clients) ws.terminate();
  await server.close();
  process.stdout.write(`${JSON.stringify({ problems, stats })}\n`);
}

main().catch((err) => {
  process.stdout.write(`${JSON.stringify({ problems: [String(err && err.stack)], stats: null })}\n`);
  process.exitCode = 1;
});
