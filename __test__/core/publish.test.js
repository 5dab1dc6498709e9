'use strict';
// The publish path (issue 14): topic handles (server.topic(name)) and the
// hand-over of one JS turn's publishes and sends to the IO threads as one
// batch with one wake-up (stats().commandRuns counts the wake-ups).
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const v8 = require('node:v8');
const vm = require('node:vm');

/** The garbage collector: global.gc under --expose-gc (npm test), else
 * exposed here (the artifact tests run the suites without the flag). */
function collector() {
  if (typeof global.gc === 'function') return global.gc;
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc');
}

test.afterEach(closeAll);

/** n clients, each subscribed to its own topic "u<i>" (id order = i). */
async function subscribers(server, url, n) {
  const ids = [];
  server.on('open', (id) => {
    server.subscribe(id, `u${ids.length}`);
    ids.push(id);
  });
  const received = [];
  const clients = [];
  for (let i = 0; i < n; i++) {
    const ws = await client(url);
    const got = [];
    received.push(got);
    ws.on('message', (data) => got.push(data.toString()));
    clients.push(ws);
    await waitFor(() => ids.length === i + 1, 5000, `open ${i}`);
  }
  return { ids, received, clients };
}

/**
 * Resolves once the IO threads have handled every command queued so far: a
 * message sent to each subscriber after them has arrived (a thread runs its
 * commands in order, and counts a run in commandRuns before it starts it).
 * The received lists are emptied.
 */
async function drained(server, ids, received) {
  ids.forEach((id) => server.send(id, 'drained'));
  await waitFor(() => received.every((r) => r.at(-1) === 'drained'), 5000, 'the IO threads to run what was queued');
  for (const r of received) r.length = 0;
}

test('a topic handle delivers like publish(name), in one order with it', async () => {
  const { server, url } = await startServer({ threads: 2 });
  const { ids, received } = await subscribers(server, url, 4);
  const handles = [0, 1, 2, 3].map((i) => server.topic(`u${i}`));
  assert.equal(handles[2].name, 'u2');
  assert.ok(Object.isFrozen(handles[2]));
  for (let k = 0; k < 200; k++) {
    for (let i = 0; i < 4; i++) {
      const n = k % 2 ? handles[i].publish(`${i}:${k}`) : server.publish(`u${i}`, `${i}:${k}`);
      assert.equal(n, 1, 'one subscriber');
    }
  }
  await waitFor(() => received.every((r) => r.length === 200), 10000, 'every message');
  for (let i = 0; i < 4; i++) assert.deepEqual(received[i], Array.from({ length: 200 }, (_, k) => `${i}:${k}`));
  // Binary and options, as publish().
  const ws = await client(url);
  const bin = new Promise((r) => ws.once('message', (d, isBinary) => r({ d, isBinary })));
  await waitFor(() => ids.length === 5, 5000, 'fifth open');
  const t = server.topic('u4'); // the fifth client subscribed to u4 in the open handler
  assert.equal(t.publish(Buffer.from([1, 2, 3])), 1);
  const { d, isBinary } = await bin;
  assert.equal(isBinary, true);
  assert.deepEqual([...d], [1, 2, 3]);
  assert.equal(t.publish('text', { binary: true }), 1);
  ws.close();
});

test('a handle on a topic nobody follows: 0, and the subscriber that comes later gets what follows', async () => {
  const { server, url } = await startServer({ threads: 1 });
  const t = server.topic('u0');
  assert.equal(t.publish('before'), 0);
  const { received } = await subscribers(server, url, 1);
  assert.equal(t.publish('after'), 1);
  // One topic, one order: had 'before' gone anywhere, it would arrive first.
  await waitFor(() => received[0].length >= 1, 5000, 'the message');
  assert.deepEqual(received[0], ['after']);
});

test('bad arguments: the same errors as publish()', async () => {
  const { server } = await startServer({ threads: 1 });
  assert.throws(() => server.topic(''), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => server.topic('x'.repeat(1025)), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => server.topic(5), { code: 'ERR_INVALID_ARG_TYPE' });
  const t = server.topic('t');
  assert.throws(() => t.publish(5), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => t.publish('x', { binary: 1 }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => t.publish('x', { local: 'yes' }), { code: 'ERR_INVALID_ARG_TYPE' });
});

test('handles keep their topic while they live, and let it go when collected', async (t) => {
  const gc = collector();
  const { server } = await startServer({ threads: 1 });
  let handles = Array.from({ length: 100 }, (_, i) => server.topic(`h${i}`));
  assert.equal(server.stats().topics, 100, 'a handle makes its topic');
  assert.equal(server.topic('h5').publish('x'), 0);
  handles.length = 0;
  handles = null;
  await waitFor(() => {
    gc();
    return server.stats().topics === 0;
  }, 10000, 'the topics released after the handles are collected');
  t.diagnostic('100 topics released by the collector');
});

test('after close: a handle publishes nothing, topic() throws', async () => {
  const { server } = await startServer({ threads: 1 });
  const t = server.topic('x');
  await server.close();
  assert.equal(t.publish('late'), 0);
  assert.throws(() => server.topic('y'), { code: 'ERR_SERVER_NOT_RUNNING' });
});

test('a server collected with handles alive, and handles outliving their server', async () => {
  const gc = collector();
  const { Server } = require('../..');
  let kept;
  {
    const s = new Server({ host: '127.0.0.1', port: 0, threads: 1 });
    kept = s.topic('kept');
    s.topic('dropped');
    await s.listen();
    await s.close();
  }
  for (let i = 0; i < 5; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(kept.publish('x'), 0, 'a handle whose server is closed and gone publishes nothing');
  kept = null;
  gc();
});

test('one JS turn of publishes and sends reaches an IO thread with one wake-up', async () => {
  const { server, url } = await startServer({ threads: 1 });
  const { ids, received } = await subscribers(server, url, 3);
  const handle = server.topic('u1');
  await drained(server, ids, received);
  const before = server.stats().commandRuns;
  for (let k = 0; k < 300; k++) {
    server.publish('u0', `p${k}`);
    handle.publish(`h${k}`);
    server.send(ids[2], `s${k}`);
  }
  await waitFor(() => received.every((r) => r.length === 300), 10000, 'every message');
  assert.equal(server.stats().commandRuns - before, 1, '900 commands, one wake-up');
  assert.deepEqual(received[0], Array.from({ length: 300 }, (_, k) => `p${k}`));
  assert.deepEqual(received[1], Array.from({ length: 300 }, (_, k) => `h${k}`));
  assert.deepEqual(received[2], Array.from({ length: 300 }, (_, k) => `s${k}`));
});

test('a long turn is not held back: the IO thread is woken once 1,024 commands wait', async () => {
  const { server, url } = await startServer({ threads: 1 });
  const { ids, received } = await subscribers(server, url, 1);
  await drained(server, ids, received);
  const before = server.stats().commandRuns;
  for (let k = 0; k < 1023; k++) server.publish('u0', `m${k}`);
  // Still in the same turn: nothing woke the thread yet.
  const spin = (ms) => {
    const end = Date.now() + ms;
    while (Date.now() < end && server.stats().commandRuns === before);
    return server.stats().commandRuns - before;
  };
  assert.equal(spin(100), 0, '1,023 queued commands wait for the end of the turn');
  server.publish('u0', 'm1023');
  assert.equal(spin(5000), 1, 'the 1,024th wakes the thread within the turn');
  for (let k = 1024; k < 3000; k++) server.publish('u0', `m${k}`);
  await waitFor(() => received[0].length === 3000, 10000, 'every message');
  assert.deepEqual(received[0], Array.from({ length: 3000 }, (_, k) => `m${k}`));
});

test('a command that cannot wait (subscribe, end) after queued publishes wakes the thread for all of them, in order', async () => {
  const { server, url } = await startServer({ threads: 1 });
  const { ids, received, clients } = await subscribers(server, url, 1);
  await drained(server, ids, received);
  const closed = new Promise((r) => clients[0].once('close', (code) => r(code)));
  for (let k = 0; k < 10; k++) server.publish('u0', `m${k}`);
  server.end(ids[0], 4000, 'bye');
  assert.equal(await closed, 4000);
  assert.deepEqual(received[0], Array.from({ length: 10 }, (_, k) => `m${k}`), 'the publishes before the close frame');
});
