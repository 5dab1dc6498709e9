'use strict';
// Presence on one node (no bus): options.presence, server.topic(name, {
// presence }), onUpgrade's result.presence, server.presence(topic) and the
// 'join' / 'leave' events. Across nodes: __test__/bus/bus-presence.test.js.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Server } = require('../..');
const { startServer, client, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

function recorder(server) {
  const seen = [];
  server.on('join', (topic, entry) => seen.push({ event: 'join', topic, entry }));
  server.on('leave', (topic, entry, reason) => seen.push({ event: 'leave', topic, entry, reason }));
  return seen;
}

const closeWs = (ws) => new Promise((resolve) => { ws.once('close', resolve); ws.close(); });

test('one node: members listed with their info; join and leave by upgrade, subscribe, unsubscribe and close', async () => {
  const { server, url } = await startServer({
    presence: { topics: (topic) => topic.startsWith('room:') },
    onUpgrade: (req) => {
      const q = new URL(req.url, 'http://x').searchParams;
      return { topics: ['room:1', 'feed'], presence: { user: q.get('u') } };
    },
  });
  const seen = recorder(server);
  const ids = [];
  server.on('open', (id) => ids.push(id));
  const ann = await client(`${url}/?u=ann`);
  const bob = await client(`${url}/?u=bob`);
  await waitFor(() => ids.length === 2, 5000, 'opens');
  const list = await server.presence('room:1');
  assert.deepEqual(list.map((e) => e.info.user).sort(), ['ann', 'bob']);
  for (const e of list) assert.ok(ids.includes(e.id));
  assert.equal(new Set(list.map((e) => e.node)).size, 1);
  // 'feed' keeps no presence (the topics function said no).
  assert.deepEqual(await server.presence('feed'), []);
  assert.deepEqual(seen.map((s) => `${s.event} ${s.topic} ${s.entry.info.user}`), ['join room:1 ann', 'join room:1 bob']);

  // subscribe joins with the connection's info; unsubscribe leaves.
  assert.equal(server.subscribe(ids[0], 'room:2'), true);
  assert.equal(server.subscribe(ids[0], 'room:2'), true); // again: one entry
  assert.deepEqual((await server.presence('room:2')).map((e) => e.info.user), ['ann']);
  assert.equal(server.unsubscribe(ids[1], 'room:1'), true);
  assert.deepEqual((await server.presence('room:1')).map((e) => e.info.user), ['ann']);
  // A topic turned off by server.topic before its first subscription.
  server.topic('room:quiet', { presence: false });
  server.subscribe(ids[0], 'room:quiet');
  assert.deepEqual(await server.presence('room:quiet'), []);
  // A close leaves every topic.
  await closeWs(ann);
  await waitFor(() => seen.filter((s) => s.event === 'leave').length === 3, 5000, 'leaves');
  assert.deepEqual(seen.slice(2).map((s) => `${s.event} ${s.topic} ${s.entry.info.user} ${s.reason ?? ''}`), [
    'join room:2 ann ', 'leave room:1 bob left', 'leave room:1 ann left', 'leave room:2 ann left']);
  assert.deepEqual(await server.presence('room:1'), []);
  await closeWs(bob);
});

test('presence without info, and turned on per topic', async () => {
  const { server, url } = await startServer({ onUpgrade: () => ({ topics: ['a', 'b'] }) });
  server.topic('a', { presence: true });
  const seen = recorder(server);
  const ws = await client(url);
  await waitFor(() => seen.length === 1, 5000, 'the join');
  assert.equal(seen[0].topic, 'a');
  assert.equal(seen[0].entry.info, null);
  // 'b' keeps no presence, and the server was made without it: a mistake, said.
  await assert.rejects(server.presence('b'), { name: 'SymphonyError', code: 'ERR_SYMPHONY_NO_PRESENCE', message: /presence\("b"\).*options\.presence/ });
  await closeWs(ws);
});

test('bad presence options and info: TypeError / RangeError naming them; an oversized info refuses the upgrade', async () => {
  assert.throws(() => new Server({ port: 0, presence: 'yes' }), { name: 'TypeError', message: /options\.presence/ });
  assert.throws(() => new Server({ port: 0, presence: { ttl: 10 } }), { name: 'RangeError', message: /options\.presence\.ttl/ });
  assert.throws(() => new Server({ port: 0, presence: { topics: 'a' } }), { name: 'TypeError', message: /options\.presence\.topics/ });
  assert.throws(() => new Server({ port: 0, presence: { color: 1 } }), { message: /options\.presence\.color/ });
  const { server, url } = await startServer({
    presence: { maxInfo: 32 },
    onUpgrade: (req) => ({ topics: ['a'], presence: req.url.includes('big') ? { blob: 'x'.repeat(100) } : { ok: 1 } }),
  });
  assert.throws(() => server.topic('a', { presence: 'on' }), { name: 'TypeError', message: /options\.presence/ });
  const errors = [];
  server.on('error', (err) => errors.push(err));
  await assert.rejects(client(`${url}/big`), /Unexpected server response: 500/);
  assert.match(errors[0].message, /maxInfo/);
  // The server goes on: a good one joins.
  const ws = await client(url);
  await waitFor(async () => (await server.presence('a')).length === 1, 5000, 'the good one listed');
  await closeWs(ws);
  // Info that is not JSON: refused the same way, named.
  const { server: s2, url: u2 } = await startServer({ presence: true, onUpgrade: () => ({ topics: ['a'], presence: { n: 1n } }) });
  const errors2 = [];
  s2.on('error', (err) => errors2.push(err));
  await assert.rejects(client(u2), /Unexpected server response: 500/);
  assert.match(errors2[0].message, /onUpgrade result presence.*JSON/);
  // Without a bus there is no count across nodes.
  assert.equal(server.bus, null);
  await assert.rejects(server.presence(42), { name: 'TypeError', message: /topic/ });
});

test('server.bus.subscribers(): bad arguments are TypeError / RangeError; a bus not up is ERR_BUS_DOWN', async () => {
  // A bus toward a port nobody listens on: never up.
  const server = new Server({ port: 0, bus: { url: 'redis://127.0.0.1:1', backoff: { min: 1000, max: 1000 } } });
  try {
    await assert.rejects(server.bus.subscribers(42), { name: 'TypeError', message: /topic/ });
    await assert.rejects(server.bus.subscribers(''), { name: 'TypeError', message: /topic/ });
    await assert.rejects(server.bus.subscribers('a', null), { name: 'TypeError', message: /options/ });
    await assert.rejects(server.bus.subscribers('a', { timeout: 0 }), { name: 'RangeError', message: /options\.timeout/ });
    await assert.rejects(server.bus.subscribers('a', { timeout: 1.5 }), /options\.timeout/);
    await assert.rejects(server.bus.subscribers('a'), { code: 'ERR_BUS_DOWN' });
  } finally {
    await server.close();
  }
});
