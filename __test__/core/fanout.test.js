'use strict';
// Fan-out: 2,000 clients over 2 IO threads on 20 topics. Every client gets
// every message of its topic, in publish order, and nothing else.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

const CLIENTS = 2000;
const TOPICS = 20;
const PER_TOPIC = 50;

test('2,000 clients, 2 threads, 20 topics: all messages, in order, nothing else', { timeout: 120000 }, async () => {
  const { server, url } = await startServer({
    threads: 2,
    onUpgrade: (req) => ({ topics: [`topic-${new URL(req.url, 'ws://x').searchParams.get('t')}`] }),
  });
  const clients = [];
  const received = new Array(CLIENTS).fill(null).map(() => []);
  // Connect in batches so the test does not depend on the listen backlog.
  for (let base = 0; base < CLIENTS; base += 200) {
    const batch = [];
    for (let i = base; i < base + 200; i++) {
      batch.push(new Promise((resolve, reject) => {
        const ws = new WebSocket(`${url}/?t=${i % TOPICS}`);
        ws.on('message', (data) => received[i].push(data.toString()));
        ws.once('open', () => resolve(ws));
        ws.once('error', reject);
      }));
    }
    clients.push(...(await Promise.all(batch)));
  }
  await waitFor(() => server.stats().connections === CLIENTS, 10000, 'all connections open');
  const perThread = server.stats().threads.map((t) => t.connections);
  assert.deepEqual(perThread, [CLIENTS / 2, CLIENTS / 2], 'connections are dealt evenly over the threads');

  // Interleave topics: message k of topic t is "t:k".
  for (let k = 0; k < PER_TOPIC; k++) {
    for (let t = 0; t < TOPICS; t++) {
      const n = server.publish(`topic-${t}`, `${t}:${k}`);
      assert.equal(n, CLIENTS / TOPICS);
    }
  }
  await waitFor(() => received.every((r) => r.length >= PER_TOPIC), 60000, 'every message delivered');
  await new Promise((r) => setTimeout(r, 100)); // anything extra would show now
  for (let i = 0; i < CLIENTS; i++) {
    const t = i % TOPICS;
    const want = Array.from({ length: PER_TOPIC }, (_, k) => `${t}:${k}`);
    assert.deepEqual(received[i], want, `client ${i} (topic ${t})`);
  }
  const s = server.stats();
  assert.equal(s.messagesOut, CLIENTS * PER_TOPIC);
  assert.equal(s.dropped, 0);
  assert.equal(s.topics, TOPICS);
  for (const ws of clients) ws.terminate();
  await waitFor(() => server.stats().connections === 0, 10000, 'all closed');
  await waitFor(() => server.stats().topics === 0, 10000, 'topics freed');
});
