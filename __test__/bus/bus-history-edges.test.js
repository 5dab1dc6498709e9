'use strict';
// History across nodes at its edges (docs/bus.md, "History across nodes"):
// a subscription whose topic's sync cannot complete waits at most
// SY_PARK_MAX_MS (src/io/app/sy_park.h), and a sync that finds Redis behind
// what the node delivered (a failover lost writes) renews the topic's epoch.

const test = require('node:test');
const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { startRedis, poll } = require('../helpers/redis');
const { startNode, closeAll } = require('../helpers/bus-nodes');
const { connectV1 } = require('../helpers/v1');
const { startBalancer } = require('../helpers/balancer');

test.after(closeAll);

const HISTORY = { size: 5000, ttl: 300 };
const BUS = { backoff: { min: 50, max: 200 } };
/* src/io/app/sy_park.h */
const SY_PARK_MAX_MS = 5000;

const offsets = (c, topic) => c.messages(topic).map((f) => Number(f.offset));
const payloads = (c, topic) => c.messages(topic).map((f) => f.payload.toString());

test('a subscription waiting for a sync Redis does not answer (CLIENT PAUSE WRITE) is served after 5 s from what its node has, then told Redis\' epoch when the sync answers', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const a = await startNode({ history: HISTORY, bus: { ...BUS, url: redis.url } });
  const b = await startNode({ history: HISTORY, bus: { ...BUS, url: redis.url } });
  await a.waitBus('up');
  await b.waitBus('up');
  // Redis' sequence for the topic: m1..m3, published by b (a never followed it).
  for (let i = 1; i <= 3; i++) await b.publish('feed', `m${i}`);
  const epoch = await redis.cli('HGET', '{symphony:feed}:meta', 'e');
  // Scripts wait (the sync is one), SSUBSCRIBE does not: a subscribes to
  // the channel and sends its sync, which Redis holds.
  await redis.cli('CLIENT', 'PAUSE', '30000', 'WRITE');
  let paused = true;
  t.after(() => (paused ? redis.cli('CLIENT', 'UNPAUSE') : undefined));
  const before = (await a.stats()).bus;
  const asked = performance.now();
  let openedAt = null;
  const held = connectV1(`ws://127.0.0.1:${a.port}/?topics=feed`).then((c) => { openedAt = performance.now(); return c; });
  await poll(async () => (await a.stats()).bus.syncs > before.syncs, { timeoutMs: 10000, what: 'a\'s sync sent' });
  // A later connection with no topic is served while the first waits.
  const bystander = await connectV1(`ws://127.0.0.1:${a.port}/`);
  assert.equal(openedAt, null, 'the upgrade waits for the sync');
  bystander.ws.terminate();
  const ca = await held;
  await ca.until((x) => x.notices('subscribed').length === 1, 10000, 'subscribed');
  // Released by the bound, not by the sync: no earlier than SY_PARK_MAX_MS
  // after it was asked for (less 1: the server counts whole milliseconds of
  // the same monotonic clock), and not in Redis' epoch (the sync did not answer).
  assert.ok(openedAt - asked >= SY_PARK_MAX_MS - 1, `released after ${Math.round(openedAt - asked)} ms`);
  const first = ca.notices('subscribed')[0];
  assert.notEqual(first.epoch, epoch, 'served from what a has (nothing: its own epoch), not from Redis');
  assert.equal(first.offset, '0');
  // The sync answers once Redis takes writes again: the client is told
  // that its topic's offsets are now Redis', after m1..m3 (which a keeps
  // for resumes, older than the client), as a new epoch.
  await redis.cli('CLIENT', 'UNPAUSE');
  paused = false;
  await ca.until((x) => x.notices('subscribed').length === 2, 10000, 'told of Redis\' epoch');
  const told = ca.notices('subscribed')[1];
  assert.deepEqual(told, { type: 'subscribed', topic: 'feed', id: first.id, epoch, offset: '3', since: '0', recovered: false, reason: 'epoch' });
  // Live: b's next publish reaches a's client at Redis' next offset.
  await b.publish('feed', 'm4');
  await ca.until((x) => x.messages('feed').length === 1, 10000, 'm4 live');
  assert.deepEqual(payloads(ca, 'feed'), ['m4']);
  assert.deepEqual(offsets(ca, 'feed'), [4]);
  ca.ws.terminate();
});

test('a sync that finds Redis behind what its node delivered (a failover lost writes, made by hand while the node was cut off) renews the epoch: clients told, delivery goes on', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const proxy = await startBalancer([redis.port]);
  t.after(() => proxy.close());
  const a = await startNode({ history: HISTORY, bus: { ...BUS, url: `redis://127.0.0.1:${proxy.port}` } });
  const b = await startNode({ history: HISTORY, bus: { ...BUS, url: redis.url } });
  await a.waitBus('up');
  await b.waitBus('up');
  const ca = await connectV1(`ws://127.0.0.1:${a.port}/?topics=feed`);
  const cb = await connectV1(`ws://127.0.0.1:${b.port}/?topics=feed`);
  for (const cl of [ca, cb]) await cl.until((x) => x.notices('subscribed').length === 1, 10000, 'subscribed');
  for (let i = 1; i <= 5; i++) await b.publish('feed', `m${i}`);
  for (const cl of [ca, cb]) await cl.until((x) => x.messages('feed').length === 5, 10000, 'm1..m5');
  const epoch = ca.notices('subscribed').at(-1).epoch;
  const seen = [ca, cb].map((cl) => cl.notices('subscribed').length);
  // a is cut off from Redis...
  const from = a.busEvents.length;
  proxy.hold(true);
  proxy.cut();
  await a.waitBus('down', 10000, from);
  // ...while Redis becomes what a replica promoted without the last two writes holds.
  await redis.cli('HSET', '{symphony:feed}:meta', 'o', '3');
  await redis.cli('XDEL', '{symphony:feed}:stream', '4-0', '5-0');
  await redis.cli('XSETID', '{symphony:feed}:stream', '3-0');
  // a comes back: its subscription's sync reads last offset 3 in the
  // epoch in which a delivered 5. No message is published meanwhile, so
  // nothing but the sync can show it.
  const before = (await a.stats()).bus;
  proxy.hold(false);
  await a.waitBus('up', 15000, from);
  await poll(async () => (await a.stats()).bus.renewals > before.renewals, { timeoutMs: 15000, what: 'a renewed the epoch' });
  const renewed = await redis.cli('HGET', '{symphony:feed}:meta', 'e');
  assert.notEqual(renewed, epoch, 'a new epoch in Redis');
  assert.equal(await redis.cli('HGET', '{symphony:feed}:meta', 'o'), '3', 'offsets go on from Redis\' last');
  await ca.until((x) => x.notices('subscribed').length > seen[0], 10000, 'a\'s client told');
  const toldA = ca.notices('subscribed').slice(seen[0]);
  assert.equal(toldA.length, 1, JSON.stringify(toldA));
  assert.deepEqual({ ...toldA[0], epoch: undefined },
    { type: 'subscribed', topic: 'feed', id: toldA[0].id, epoch: undefined, offset: '3', since: '5', recovered: false, reason: 'epoch' });
  assert.equal(toldA[0].epoch, renewed);
  // Delivery goes on in the new epoch, on a and on b (which learns of it from the message).
  await b.publish('feed', 'm6');
  for (const [i, cl] of [ca, cb].entries()) {
    await cl.until((x) => payloads(x, 'feed').includes('m6'), 10000, 'm6');
    assert.deepEqual(payloads(cl, 'feed'), ['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    assert.deepEqual(offsets(cl, 'feed'), [1, 2, 3, 4, 5, 4], 'm6 at offset 4 of the new epoch');
    const told = cl.notices('subscribed').slice(seen[i]);
    assert.equal(told.length, 1, JSON.stringify(told));
    assert.equal(told[0].epoch, renewed);
    assert.equal(told[0].recovered, false);
    assert.equal(told[0].reason, 'epoch');
  }
  // a found it by its sync (no message came before the renewal); b, which
  // never saw Redis behind it, moved with the new epoch's first message.
  const busA = (await a.stats()).bus;
  const busB = (await b.stats()).bus;
  assert.equal(busA.late, 0, 'a saw no repeated offset');
  assert.equal(busB.renewals, 0);
  ca.ws.terminate();
  cb.ws.terminate();
});
