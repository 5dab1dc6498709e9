'use strict';
// symphony-ws/client asking a real symphony server (symphony.v2): subscribe,
// unsubscribe, publish and request; every reconnect resubscribes all live
// subscriptions in one frame from their positions, exactly (no gap, no
// duplicate per subscription); the races peers' users hit (a token refreshed
// on resubscribe, a token that expired while offline, an unsubscribe while
// the subscribe is pending, a subscribe to a topic already held); refusals
// final and transient; and a server that only speaks symphony.v1.
// Every wait is for an event, never for time to pass.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { SymphonyClient, AskError } = require('../../client/symphony-client.cjs');
const { Server, ClientError } = require('../..');
const { waitFor } = require('../helpers/raw');
const { startServer: startWsServer } = require('./helpers');

const T = { timeout: 30000 };
const servers = [];
const clients = [];
test.afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.close();
});

async function start(options = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 2, ...options });
  servers.push(server);
  const { port } = await server.listen();
  return { server, url: `ws://127.0.0.1:${port}/` };
}

function client(url, options = {}) {
  const c = new SymphonyClient(url, { WebSocket, backoff: { min: 1, max: 20 }, ...options });
  clients.push(c);
  // Opens so far: a cut is seen by the next open (a poll of state could miss
  // a reconnect that fast).
  c.opens = 0;
  c.on('state', (state) => { if (state === 'open') c.opens++; });
  return c;
}

/** Records a subscription's events. */
function watch(sub) {
  const ev = [];
  for (const name of ['message', 'subscribed', 'refused', 'unsubscribed']) sub.on(name, (...a) => ev.push([name, ...a]));
  return ev;
}
const of = (ev, name) => ev.filter((e) => e[0] === name).map((e) => e.slice(1));

/** The server's open connections' ids, kept up to date. */
function ids(server) {
  const live = new Set();
  server.on('open', (id) => live.add(id));
  server.on('close', (id) => live.delete(id));
  return live;
}

test('subscribe, messages, unsubscribe; publish resolves with the offset; request resolves with the reply', T, async () => {
  const { server, url } = await start({
    history: { size: 100, ttl: 0 },
    onSubscribe: (id, topic, ctx) => (topic.startsWith('room.') ? { data: { welcome: topic, asked: ctx.data } } : false),
    onPublish: (id, topic) => topic.startsWith('room.'),
    onRequest: (id, data) => ({ echo: JSON.parse(data), id: typeof id }),
  });
  const c = client(url);
  const sub = c.subscribe('room.1', { data: { name: 'ann' } });
  assert.equal(c.subscribe('room.1'), sub, 'the same object for the same topic');
  assert.equal(sub.state, 'subscribing');
  const ev = watch(sub);
  await waitFor(() => sub.state === 'subscribed', 10000, 'subscribed');
  assert.deepEqual(of(ev, 'subscribed')[0][0].data, { welcome: 'room.1', asked: { name: 'ann' } });
  assert.deepEqual(c.subscriptions(), [sub]);
  assert.deepEqual(await c.publish('room.1', 'hello'), { epoch: server.position('room.1').epoch, offset: 1 });
  await waitFor(() => of(ev, 'message').length === 1, 10000, 'the message');
  assert.deepEqual(of(ev, 'message')[0], ['hello', { offset: 1, epoch: server.position('room.1').epoch }]);
  const bin = await c.publish('room.1', new Uint8Array([1, 2]));
  assert.equal(bin.offset, 2);
  await waitFor(() => of(ev, 'message').length === 2, 10000, 'the binary message');
  assert.deepEqual([...of(ev, 'message')[1][0]], [1, 2]);
  await assert.rejects(c.publish('other', 'x'), (err) => err instanceof AskError && err.code === 'forbidden');
  assert.deepEqual(await c.request(JSON.stringify({ q: 1 })), { echo: { q: 1 }, id: 'number' });
  sub.unsubscribe();
  assert.equal(sub.state, 'unsubscribed');
  assert.deepEqual(of(ev, 'unsubscribed'), [[{ by: 'client' }]]);
  assert.deepEqual(c.subscriptions(), []);
  await waitFor(() => server.subscribers('room.1') === 0, 10000, 'unsubscribed on the server');
  server.publish('room.1', 'after');
  // A round trip after the publish: nothing of room.1 came meanwhile.
  await c.request('1');
  assert.equal(of(ev, 'message').length, 2);
  const refused = c.subscribe('secret');
  const rev = watch(refused);
  await waitFor(() => of(rev, 'refused').length === 1, 10000, 'refused');
  const err = of(rev, 'refused')[0][0];
  assert.ok(err instanceof AskError);
  assert.equal(err.code, 'forbidden');
  assert.equal(err.retry, undefined);
  assert.equal(refused.state, 'unsubscribed');
});

test('a request: bytes, a ClientError, a timeout; calls reject with disconnected when the connection goes', T, async () => {
  let hold;
  const { server, url } = await start({
    onRequest: (id, data, info) => {
      if (info.binary) return Buffer.from([7, 7]);
      if (data === 'deny') throw new ClientError('nope', 'not you');
      return new Promise((r) => { hold = r; });
    },
  });
  const live = ids(server);
  const c = client(url);
  await waitFor(() => c.state === 'open', 10000, 'open');
  assert.deepEqual([...(await c.request(new Uint8Array([1])))], [7, 7]);
  await assert.rejects(c.request('deny'), { code: 'nope', reason: 'not you' });
  await assert.rejects(c.request('slow', { timeout: 50 }), { code: 'timeout' });
  const pending = c.request('slow');
  await waitFor(() => hold !== undefined, 10000, 'the hook holding');
  hold = undefined;
  server.terminate([...live][0]);
  await assert.rejects(pending, { code: 'disconnected' });
});

test('every reconnect resubscribes all subscriptions in one frame, from their positions: no gap, no duplicate', T, async () => {
  const frames = [];
  const calls = [];
  const { server, url } = await start({
    history: { size: 1000, ttl: 0 },
    onSubscribe: (id, topic, ctx) => { calls.push([topic, ctx.resubscribe, ctx.since]); return true; },
  });
  server.on('message', () => {});
  const live = ids(server);
  const c = client(url);
  const topics = ['a', 'b', 'c'];
  const subs = topics.map((t) => c.subscribe(t));
  const got = Object.fromEntries(topics.map((t) => [t, []]));
  subs.forEach((s) => s.on('message', (data) => got[s.topic].push(Number(data))));
  await waitFor(() => subs.every((s) => s.state === 'subscribed'), 10000, 'subscribed');
  // Count the subscribe frames the server gets: one per connection.
  const origAsk = c._ask.bind(c);
  c._ask = (list, resub) => { frames.push([list.length, resub]); origAsk(list, resub); };
  let n = 0;
  for (let cut = 0; cut < 5; cut++) {
    for (let i = 0; i < 50; i++) { n++; for (const t of topics) server.publish(t, String(n)); }
    assert.equal(live.size, 1);
    const opens = c.opens;
    server.terminate([...live][0]);
    for (let i = 0; i < 50; i++) { n++; for (const t of topics) server.publish(t, String(n)); }
    await waitFor(() => c.opens > opens && subs.every((s) => s.state === 'subscribed'), 10000, 'back');
  }
  for (let i = 0; i < 10; i++) { n++; for (const t of topics) server.publish(t, String(n)); }
  await waitFor(() => topics.every((t) => got[t].length >= n), 10000, `all ${n} messages`);
  const want = Array.from({ length: n }, (_, i) => i + 1);
  for (const t of topics) assert.deepEqual(got[t], want, `topic ${t}: every message once, in order`);
  assert.deepEqual(frames, Array(5).fill([3, true]), 'one frame of 3 per reconnect, marked resub');
  const resubs = calls.filter(([, resub]) => resub);
  assert.equal(resubs.length, 15);
  assert.ok(resubs.every(([, , since]) => since !== null), 'each with its position');
});

test('tokens: getToken is asked on every resubscribe (the hook sees the fresh one); an expired one is renewed once', T, async () => {
  let issued = 0;
  const seen = [];
  const { server, url } = await start({
    onSubscribe: (id, topic, ctx) => {
      seen.push(ctx.token);
      // Tokens t1, t2 are "expired" by the time they arrive on a resubscribe.
      if (ctx.resubscribe && (ctx.token === 't1' || ctx.token === 't2')) return { code: 'token-expired', reason: 'exp' };
      return ctx.token !== undefined;
    },
  });
  const live = ids(server);
  const c = client(url, { getToken: async (topic) => { await null; return `t${++issued}`; } });
  const sub = c.subscribe('doc');
  const ev = watch(sub);
  await waitFor(() => sub.state === 'subscribed', 10000, 'subscribed');
  assert.deepEqual(seen, ['t1']);
  const opens = c.opens;
  server.terminate([...live][0]);
  await waitFor(() => c.opens > opens && sub.state === 'subscribed', 10000, 'back');
  // On the resubscribe: t2 (fresh, but "expired"), then t3 after the refusal.
  assert.deepEqual(seen, ['t1', 't2', 't3']);
  assert.equal(of(ev, 'refused').length, 0, 'a renewal is not a refusal');
  assert.equal(of(ev, 'subscribed').length, 2);
});

test('a token that expired while offline, twice: final after one renewal', T, async () => {
  const { url } = await start({ onSubscribe: () => ({ code: 'token-expired', reason: 'exp' }) });
  let asked = 0;
  const c = client(url, { getToken: () => `t${++asked}` });
  const sub = c.subscribe('x', { token: 'given' });
  const ev = watch(sub);
  await waitFor(() => of(ev, 'refused').length === 1, 10000, 'refused');
  assert.equal(asked, 1, 'the given token, then one fresh one');
  assert.equal(of(ev, 'refused')[0][0].code, 'token-expired');
  assert.equal(sub.state, 'unsubscribed');
});

test('an unsubscribe while the subscribe is pending: nothing of the topic arrives; a new subscribe works', T, async () => {
  const holds = [];
  const { server, url } = await start({ onSubscribe: () => new Promise((r) => holds.push(r)) });
  const c = client(url);
  const first = c.subscribe('t');
  const ev1 = watch(first);
  await waitFor(() => holds.length === 1, 10000, 'the hook asked');
  first.unsubscribe();
  holds[0](true);
  const second = c.subscribe('t');
  assert.notEqual(second, first);
  const ev2 = watch(second);
  await waitFor(() => holds.length === 2, 10000, 'asked again');
  holds[1](true);
  await waitFor(() => second.state === 'subscribed', 10000, 'the second subscribed');
  server.publish('t', 'm');
  await waitFor(() => of(ev2, 'message').length === 1, 10000, 'a message');
  assert.equal(of(ev1, 'message').length, 0);
  assert.equal(of(ev1, 'subscribed').length, 0);
  assert.equal(server.subscribers('t'), 1);
});

test('a subscribe to a topic the server chose at the upgrade: answered at once, the hook not called', T, async () => {
  let calls = 0;
  const { url } = await start({ onUpgrade: () => ({ topics: ['feed'] }), onSubscribe: () => { calls++; return true; } });
  const c = client(url);
  await waitFor(() => c.state === 'open', 10000, 'open');
  const sub = c.subscribe('feed');
  await waitFor(() => sub.state === 'subscribed', 10000, 'subscribed');
  assert.equal(calls, 0);
});

test('transient refusals (timeout) are asked again with backoff; forbidden is not', T, async () => {
  let n = 0;
  const { url } = await start({ askTimeout: 20, onSubscribe: () => (++n < 3 ? new Promise(() => {}) : true) });
  const c = client(url);
  const sub = c.subscribe('t');
  const ev = watch(sub);
  await waitFor(() => sub.state === 'subscribed', 10000, 'subscribed at the third ask');
  const refusals = of(ev, 'refused').map(([e]) => [e.code, typeof e.retry]);
  assert.deepEqual(refusals, [['timeout', 'number'], ['timeout', 'number']]);
});

test('a server that speaks symphony.v1 only: subscribes refused unsupported, publish and request reject', T, async () => {
  const s = await startWsServer({ protocol: 'symphony.v1' });
  try {
    const c = client(s.url);
    const sub = c.subscribe('t');
    const ev = watch(sub);
    await waitFor(() => of(ev, 'refused').length === 1, 10000, 'refused');
    assert.equal(of(ev, 'refused')[0][0].code, 'unsupported');
    await assert.rejects(c.publish('t', 'x'), { code: 'unsupported' });
    await assert.rejects(c.request('x'), { code: 'unsupported' });
    // send() stays as is on v1 (no "d\n").
    const conn = await s.connections.at(0);
    c.send('raw');
    const [m] = await conn.received.until((r) => r.length === 1);
    assert.equal(m.data.toString(), 'raw');
  } finally {
    await s.close();
  }
});

test('send() on symphony.v2 reaches the message event as given', T, async () => {
  const { server, url } = await start();
  const got = [];
  server.on('message', (id, data, binary) => got.push([data.toString(), binary]));
  const c = client(url);
  await waitFor(() => c.state === 'open', 10000, 'open');
  c.send('plain text');
  c.send(new Uint8Array([65, 66]));
  await waitFor(() => got.length === 2, 10000, 'two');
  assert.deepEqual(got, [['plain text', false], ['AB', true]]);
});

test('bad arguments throw with codes', () => {
  const c = new SymphonyClient('ws://127.0.0.1:9', { WebSocket });
  clients.push(c);
  assert.throws(() => c.subscribe(''), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => c.subscribe('t', { token: 5 }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => c.subscribe('t', { since: { epoch: 'x', offset: 1 } }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => c.request('x', { timeout: 0 }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => new SymphonyClient('ws://x', { WebSocket, getToken: 1 }), { code: 'ERR_INVALID_ARG_TYPE' });
  c.close();
  assert.throws(() => c.subscribe('t'), { code: 'ERR_CLIENT_CLOSED' });
});

test('a topic the server chooses at the upgrade and the client subscribes too: no gap across a cut', T, async () => {
  const { server, url } = await start({ history: { size: 100, ttl: 0 }, onUpgrade: () => ({ topics: ['feed'] }), onSubscribe: () => true });
  const live = ids(server);
  const c = client(url);
  const sub = c.subscribe('feed');
  const got = [];
  sub.on('message', (data) => got.push(Number(data)));
  await waitFor(() => sub.state === 'subscribed', 10000, 'subscribed');
  let n = 0;
  const publish = (k) => { for (let i = 0; i < k; i++) server.publish('feed', String(++n)); };
  publish(5);
  await waitFor(() => got.length >= 5, 10000, 'five');
  const opens = c.opens;
  server.terminate([...live][0]);
  publish(5);
  await waitFor(() => c.opens > opens && sub.state === 'subscribed', 10000, 'back');
  publish(5);
  await waitFor(() => got.length >= 15, 10000, 'fifteen');
  assert.deepEqual(got, Array.from({ length: 15 }, (_, i) => i + 1));
});
