'use strict';
// server.on('subscription', (topic, active)): this node's subscriptions of a
// topic went from none to some (true) or from some to none (false), as
// uWebSockets.js' subscription handler at counts 0 and 1, or socket.io's
// create-room / delete-room. Subscriptions on 2 IO threads, from several
// connections, by subscribe, unsubscribe and close: per topic the events
// alternate, start with true, and the last says where the topic is.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

/** n clients, their ids in open order (dealt to the IO threads in turn), and a close tracker. */
async function clients(server, url, n) {
  const ids = [];
  const closedIds = new Set();
  server.on('open', (id) => ids.push(id));
  server.on('close', (id) => closedIds.add(id));
  const wss = [];
  for (let i = 0; i < n; i++) {
    wss.push(await client(url));
    await waitFor(() => ids.length === i + 1, 5000, 'the open');
  }
  return { ids, wss, closedIds };
}

function recorder(server) {
  const events = new Map(); // topic -> [true, false, ...]
  server.on('subscription', (topic, active) => {
    if (!events.has(topic)) events.set(topic, []);
    events.get(topic).push(active);
  });
  return events;
}

/** Events that alternate, starting with true. */
function alternates(list) {
  return list.length > 0 && list.every((v, i) => v === (i % 2 === 0));
}

test('first subscriber and last leaving, across IO threads, by unsubscribe and close', async () => {
  const { server, url } = await startServer({ threads: 2 });
  const events = recorder(server);
  const { ids, wss, closedIds } = await clients(server, url, 3); // threads 0, 1, 0
  server.subscribe(ids[0], 'x');
  await waitFor(() => events.get('x')?.length === 1, 5000, 'x: 0 -> 1');
  assert.deepEqual(events.get('x'), [true]);
  assert.equal(server.subscribers('x'), 1);
  server.subscribe(ids[1], 'x'); // the other thread: 1 -> 2, no event
  server.subscribe(ids[2], 'y');
  await waitFor(() => events.get('y')?.length === 1, 5000, 'y: 0 -> 1');
  server.unsubscribe(ids[0], 'x'); // 2 -> 1
  wss[1].close(); // 1 -> 0 on the other thread
  await waitFor(() => events.get('x').length === 2, 5000, 'x: 1 -> 0');
  assert.deepEqual(events.get('x'), [true, false]);
  assert.equal(server.subscribers('x'), 0);
  await waitFor(() => closedIds.has(ids[1]), 5000, 'the close');
  // Again from none: a new 0 -> 1.
  server.subscribe(ids[2], 'x');
  await waitFor(() => events.get('x').length === 3, 5000, 'x: 0 -> 1 again');
  assert.deepEqual(events.get('x'), [true, false, true]);
  assert.deepEqual(events.get('y'), [true]);
  // Closing the server ends every subscription: the last events say false.
  await server.close();
  assert.deepEqual(events.get('x'), [true, false, true, false]);
  assert.deepEqual(events.get('y'), [true, false]);
});

test('many subscribes, unsubscribes and closes on 2 threads: events alternate and end at the final state', { timeout: 60000 }, async () => {
  const { server, url } = await startServer({ threads: 2 });
  const events = recorder(server);
  const { ids, wss, closedIds } = await clients(server, url, 10);
  const topics = Array.from({ length: 12 }, (_, i) => `t${i}`);
  const subs = ids.map(() => new Set()); // what each connection is subscribed to, as we asked
  const open = ids.map(() => true);
  let seed = 12345;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let step = 0; step < 3000; step++) {
    const c = rand(8); // the last two connections are left for the fences
    if (!open[c]) continue;
    const t = topics[rand(topics.length)];
    if (step > 2500 && rand(60) === 0) {
      open[c] = false;
      subs[c].clear();
      wss[c].close();
    } else if (subs[c].has(t)) {
      server.unsubscribe(ids[c], t);
      subs[c].delete(t);
    } else {
      server.subscribe(ids[c], t);
      subs[c].add(t);
    }
    if (step % 100 === 99) await new Promise((resolve) => setImmediate(resolve)); // let the threads interleave
  }
  await waitFor(() => ids.every((id, i) => open[i] || closedIds.has(id)), 10000, 'the closes');
  // A fence per IO thread (connections 8 and 9 are on threads 0 and 1): each
  // thread's events come in order, so once both fences are reported, every edge
  // before them has been.
  server.subscribe(ids[8], 'fence0');
  server.subscribe(ids[9], 'fence1');
  await waitFor(() => events.has('fence0') && events.has('fence1'), 10000, 'the fences');
  for (const t of topics) {
    const want = subs.some((s) => s.has(t));
    const list = events.get(t) ?? [];
    assert.equal(server.subscribers(t) > 0, want, `${t}: subscribers()`);
    if (list.length === 0) {
      assert.equal(want, false, `${t}: has subscribers but was never reported`);
      continue;
    }
    assert.ok(alternates(list), `${t}: ${list.join(' ')}`);
    assert.equal(list[list.length - 1], want, `${t}: the last event says where it is`);
  }
});

test('a listener added later: topics active then are not reported, their end is; none after the last listener', async () => {
  const { server, url } = await startServer({ threads: 2 });
  const { ids, wss, closedIds } = await clients(server, url, 2);
  server.subscribe(ids[0], 'before');
  await waitFor(() => server.topics().get('before') === 1, 5000, 'the subscription');
  // Applied on its thread: the next message a subscriber gets proves it.
  const got = new Promise((resolve) => wss[0].once('message', resolve));
  server.publish('before', 'ping');
  await got;
  const events = recorder(server);
  server.subscribe(ids[1], 'after');
  await waitFor(() => events.has('after'), 5000, 'after: 0 -> 1');
  wss[0].close();
  await waitFor(() => events.has('before'), 5000, 'before: 1 -> 0');
  assert.deepEqual(events.get('before'), [false]);
  assert.deepEqual(events.get('after'), [true]);
  await waitFor(() => closedIds.has(ids[0]), 5000, 'the close');
  server.removeAllListeners('subscription');
  server.unsubscribe(ids[1], 'after');
  await waitFor(() => server.subscribers('after') === 0, 5000, 'the unsubscribe');
  assert.deepEqual(events.get('after'), [true], 'no listener, no event');
  // Listening again starts from where the topics are now: 'after' has none.
  const again = recorder(server);
  server.subscribe(ids[1], 'after');
  await waitFor(() => again.has('after'), 5000, 'after: 0 -> 1 again');
  assert.deepEqual(again.get('after'), [true]);
});

test('a subscribe and an unsubscribe in one tick: true then false, however late the JS thread reads the edges', async () => {
  // Both edges are made on the IO thread before the JS thread can read the
  // first: reading the count alone would see none and report nothing (a
  // Pusher channel occupied for a moment would then send neither
  // channel_occupied nor channel_vacated).
  const { server, url } = await startServer({ threads: 2 });
  const events = recorder(server);
  const { ids } = await clients(server, url, 2); // one per IO thread
  const topics = Array.from({ length: 20 }, (_, i) => `brief${i}`);
  for (const [i, t] of topics.entries()) {
    server.subscribe(ids[i % 2], t);
    server.unsubscribe(ids[i % 2], t);
  }
  await waitFor(() => topics.every((t) => events.get(t)?.length === 2), 10000, 'true and false for every topic');
  for (const t of topics) assert.deepEqual(events.get(t), [true, false], t);
  // Applied and left: a fence per thread, then nothing more came for them.
  server.subscribe(ids[0], 'fence0');
  server.subscribe(ids[1], 'fence1');
  await waitFor(() => events.has('fence0') && events.has('fence1'), 10000, 'the fences');
  for (const t of topics) {
    assert.deepEqual(events.get(t), [true, false], t);
    assert.equal(server.subscribers(t), 0, t);
  }
});
