'use strict';
// server.subscribers(topic) and server.topics(): this node's subscription
// counts, exact from the call that made a subscription to the close that
// ends it, on every IO thread.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client, closed, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.after(closeAll);

test('subscribers() and topics(): counted at the call, on both IO threads, gone with the close', async () => {
  const opened = [];
  const { server, url } = await startServer({
    threads: 2,
    onUpgrade: (req) => ({ topics: new URL(req.url, 'ws://x').searchParams.getAll('t') }),
  });
  server.on('open', (id) => opened.push(id));
  assert.equal(server.subscribers('a'), 0, 'no such topic');
  assert.equal(server.topics().size, 0);
  const clients = [];
  for (let i = 0; i < 6; i++) clients.push(await client(`${url}/?t=a${i % 2 ? '&t=b' : ''}`));
  await waitFor(() => opened.length === 6, 5000, 'six opens');
  assert.equal(server.subscribers('a'), 6);
  assert.equal(server.subscribers('b'), 3);
  assert.ok(new Set(opened.map((id) => id % 256)).size === 2, 'both IO threads have subscribers');
  // A subscription counts from the call that makes it, before its thread runs it.
  assert.equal(server.subscribe(opened[0], 'c'), true);
  assert.equal(server.subscribers('c'), 1);
  assert.equal(server.subscribe(opened[1], 'c'), true);
  assert.deepEqual([...server.topics()].sort(), [['a', 6], ['b', 3], ['c', 2]]);
  assert.equal(server.unsubscribe(opened[0], 'c'), true);
  await waitFor(() => server.subscribers('c') === 1, 5000, 'the unsubscribe applied');
  // A close ends its subscriptions.
  const gone = closed(clients[1]);
  clients[1].close();
  await gone;
  await waitFor(() => server.subscribers('a') === 5 && server.subscribers('b') === 2 && server.subscribers('c') === 0,
    5000, `counts after a close: ${JSON.stringify([...server.topics()])}`);
  for (const ws of clients) ws.terminate();
  await waitFor(() => server.topics().size === 0, 5000, 'every topic freed with its last subscriber');
  assert.throws(() => server.subscribers(''), { name: 'RangeError' });
});
