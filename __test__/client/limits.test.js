'use strict';
// The client library within what the server takes (issue: "the client
// never gets stuck"): a resubscribe split into frames that fit the
// server's hello (maxPayload, maxEntries); a topic the server would refuse
// refused at once, alone; a close for size or policy answered with a
// growing backoff, never an immediate identical retry; one rule for calls
// before 'open' (they wait for it) and after close() ('closed'); bad data
// throws whatever the state. A real symphony server (or, for the closes, a
// small ws server that writes them), the client from its CommonJS build.
// Every wait is for an event.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { SymphonyClient, AskError } = require('../../client/symphony-client.cjs');
const { Server } = require('../..');
const { startServer: startWsServer, record, only, fastTimers } = require('./helpers');

const T = { timeout: 60000 };
const live = [];
test.afterEach(async () => {
  for (const x of live.splice(0).reverse()) await x();
});

async function start(options = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, ...options });
  live.push(() => server.close());
  const { port } = await server.listen();
  const ids = new Set();
  server.on('open', (id) => ids.add(id));
  server.on('close', (id) => ids.delete(id));
  return { server, url: `ws://127.0.0.1:${port}/`, ids };
}

function client(url, options = {}) {
  const c = new SymphonyClient(url, { WebSocket, backoff: { min: 1, max: 20 }, ...options });
  live.push(async () => c.close());
  return c;
}

/** Resolves once pred() holds, checked after each of the client's events (and what its subscriptions emit with it). */
function until(c, pred) {
  return new Promise((resolve) => {
    const check = () => { if (pred()) { for (const e of EVENTS) c.off(e, later); resolve(); } };
    const later = () => queueMicrotask(check);
    for (const e of EVENTS) c.on(e, later);
    check();
  });
}
const EVENTS = ['state', 'subscribed', 'message', 'error'];

test('1,000 subscriptions resubscribe after a cut within a 16 KiB maxPayload: frames split by the hello, no 1009, all granted', T, async () => {
  const { server, url, ids } = await start({ maxPayload: 16384, onSubscribe: () => true });
  const c = client(url);
  const states = [];
  c.on('state', (s, info) => states.push([s, info.code]));
  await until(c, () => c.state === 'open');
  const topics = Array.from({ length: 1000 }, (_, i) => `room/${String(i).padStart(4, '0')}/${'x'.repeat(20)}`);
  const granted = new Map();
  for (const t of topics) c.subscribe(t).on('subscribed', () => granted.set(t, (granted.get(t) || 0) + 1));
  await until(c, () => granted.size === 1000);
  assert.equal(server.subscribers(topics[999]), 1);
  // The cut: the resubscribe is 1,000 entries (~50 KB of JSON) in one go.
  server.terminate([...ids][0]);
  await until(c, () => topics.every((t) => granted.get(t) === 2));
  assert.deepEqual(states.filter(([s]) => s === 'reconnecting').map(([, code]) => code), [1006], 'one reconnect, no close for size');
  for (const t of [topics[0], topics[500], topics[999]]) assert.equal(server.subscribers(t), 1);
  assert.ok(c.subscriptions().every((s) => s.state === 'subscribed'));
});

test('a topic over 1,024 bytes is refused at once, alone: the others are granted and resubscribed', T, async () => {
  const { server, url, ids } = await start({ onSubscribe: () => true });
  const c = client(url);
  await until(c, () => c.state === 'open');
  const long = c.subscribe('é'.repeat(513)); // 1,026 bytes
  const lone = c.subscribe('\ud800');
  const good = c.subscribe('good');
  const refusals = [];
  long.on('refused', (err) => refusals.push(['long', err]));
  lone.on('refused', (err) => refusals.push(['lone', err]));
  await until(c, () => good.state === 'subscribed' && refusals.length === 2);
  for (const [, err] of refusals) {
    assert.ok(err instanceof AskError);
    assert.equal(err.code, 'bad-request');
  }
  assert.equal(long.state, 'unsubscribed');
  assert.equal(lone.state, 'unsubscribed');
  assert.deepEqual(c.subscriptions(), [good]);
  await assert.rejects(c.publish('é'.repeat(513), 'x'), { code: 'bad-request' });
  let again = 0;
  good.on('subscribed', () => again++);
  server.terminate([...ids][0]);
  await until(c, () => again === 1);
  assert.equal(server.subscribers('good'), 1);
});

test('a close for size or policy (1008, 1009) is answered with a growing backoff, past each open', T, async () => {
  const s = await startWsServer();
  live.push(() => s.close());
  let codes = [1009, 1009, 1008, 1009, 1000];
  s.wss.on('connection', (ws) => ws.close(codes.shift() ?? 1000, 'no'));
  const timers = fastTimers();
  timers.now = () => 1e9; // the outage's cap out of the way: the exponent decides
  const c = new SymphonyClient(s.url, { WebSocket, transport: 'websocket', backoff: { min: 100, max: 1000 }, random: () => 0.999, timers });
  live.push(async () => c.close());
  const events = record(c);
  await events.until((e) => only(e, 'state').filter(([st]) => st === 'reconnecting').length === 5);
  const rec = only(events.items, 'state').filter(([st]) => st === 'reconnecting').map(([, info]) => [info.code, info.delay]);
  // Each connection opened (its attempt back to 0), yet the caps grow: 200, 400, 800, 1000; then a normal close: min again.
  assert.deepEqual(rec, [[1009, 199], [1009, 399], [1008, 799], [1009, 999], [1000, 99]]);
  assert.equal(only(events.items, 'state').filter(([st]) => st === 'open').length, 5);
});

test('one rule for calls: before open they wait for it; after close() they reject closed; bad data throws in every state', T, async () => {
  const { server, url } = await start({ onPublish: () => true, onRequest: (id, data) => ({ got: String(data) }), history: { size: 10 } });
  const c = client(url);
  const states = [];
  c.on('state', (s, info) => states.push([s, info]));
  // Queued before the connection exists.
  assert.equal(c.state, 'connecting');
  const pub = c.publish('room', 'early');
  const req = c.request('ping');
  assert.throws(() => c.send({ a: 1 }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.equal(c.send('not yet'), false);
  assert.deepEqual(Object.keys(await pub).sort(), ['epoch', 'offset']);
  assert.deepEqual(await req, { got: 'ping' });
  assert.equal(server.subscribers('room'), 0);
  assert.throws(() => c.send({ a: 1 }), { code: 'ERR_INVALID_ARG_TYPE' });
  c.close();
  assert.throws(() => c.send({ a: 1 }), { code: 'ERR_INVALID_ARG_TYPE' });
  await assert.rejects(c.publish('room', 'late'), { code: 'closed' });
  await assert.rejects(c.request('late'), { code: 'closed' });
  // A call still queued when close() comes: closed too.
  const d = client(url);
  const queued = d.publish('room', 'never');
  d.close();
  await assert.rejects(queued, (err) => err instanceof AskError && err.code === 'closed');
  // The stream's connecting state names the URL it fetches.
  const e = client(url, { transport: 'sse' });
  const seen = [];
  e.on('state', (s, info) => seen.push([s, info]));
  await until(e, () => e.state === 'open');
  assert.match(seen[0][1].url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  assert.equal(seen[0][1].transport, 'sse');
  // Node 20 has no global WebSocket: the error says what to give, and that the stream needs none.
  if (typeof globalThis.WebSocket !== 'function') {
    assert.throws(() => new SymphonyClient(url), (err) => err.code === 'ERR_INVALID_ARG_TYPE' && /transport 'sse'/.test(err.message));
    const f = new SymphonyClient(url, { transport: 'sse' });
    f.close();
  }
});
