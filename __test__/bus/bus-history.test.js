'use strict';
// History with a bus (docs/history.md, docs/bus.md): a topic that keeps
// messages keeps its node subscribed on Redis, so a client that was the
// node's last subscriber and comes back gets what another node published
// meanwhile; and an outage of the node's subscribing connection is a
// possible hole, so every history starts a new epoch (a resume from
// before fails 'epoch' instead of skipping what passed unseen).

const test = require('node:test');
const assert = require('node:assert/strict');
const { startRedis } = require('../helpers/redis');
const { startNode, closeAll } = require('../helpers/bus-nodes');
const { connectV1 } = require('../helpers/v1');
const { waitFor } = require('../helpers/raw');

test.after(closeAll);

test('history over a bus: the last subscriber comes back to what others published; a bus outage changes the epoch', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const config = { history: { size: 100, ttl: 60 }, bus: { url: redis.url, backoff: { min: 50, max: 200 } } };
  const a = await startNode(config);
  const b = await startNode(config);
  await a.waitBus('up', 10000);
  await b.waitBus('up', 10000);

  // A client of a, then gone: a keeps the topic (its history holds a message).
  const c1 = await connectV1(`ws://127.0.0.1:${a.port}/?topics=feed`);
  await c1.until((c) => c.notices('subscribed').length === 1, 5000, 'subscribed');
  await waitFor(async () => (await a.stats()).bus.channels === 1, 5000, 'a subscribed on Redis');
  await b.publish('feed', 'm1');
  await c1.until((c) => c.messages('feed').length === 1, 5000, 'm1 through the bus');
  const sub = c1.notices('subscribed')[0];
  const last = c1.messages('feed')[0];
  c1.ws.terminate();
  await c1.closed;

  // Still subscribed on Redis although no client is left on a: b's
  // publishes reach a's history.
  for (const m of ['m2', 'm3', 'm4']) await b.publish('feed', m);
  // (b keeps them too, and so is subscribed as well.)
  await waitFor(async () => (await a.stats()).historyMessages === 4, 5000, "a's history holds m1..m4");

  // The client comes back with its position: m2..m4, nothing more, nothing less.
  const since = [{ epoch: sub.epoch, offset: last.offset.toString(), topic: 'feed' }];
  const c2 = await connectV1(`ws://127.0.0.1:${a.port}/?topics=feed`, { since });
  await c2.until((c) => c.messages('feed').length === 3, 5000, 'the replay');
  const back = c2.notices('subscribed')[0];
  assert.equal(back.recovered, true, JSON.stringify(back));
  assert.equal(back.epoch, sub.epoch);
  assert.deepEqual(c2.messages('feed').map((f) => f.payload.toString()), ['m2', 'm3', 'm4']);
  const pos = { epoch: back.epoch, offset: c2.messages('feed')[2].offset.toString(), topic: 'feed' };
  c2.ws.terminate();
  await c2.closed;

  // The subscribing connections go down (Redis killed and started again):
  // what passed meanwhile is unknown, so a's histories start a new epoch.
  const from = a.busEvents.length;
  const fromB = b.busEvents.length;
  await redis.kill9();
  await a.waitBus('down', 10000, from);
  await redis.restart();
  await a.waitBus('up', 15000, from);
  await b.waitBus('up', 15000, fromB);
  const c3 = await connectV1(`ws://127.0.0.1:${a.port}/?topics=feed`, { since: [pos] });
  await c3.until((c) => c.notices('subscribed').length === 1, 5000, 'subscribed after the outage');
  const after = c3.notices('subscribed')[0];
  assert.equal(after.recovered, false, JSON.stringify(after));
  assert.equal(after.reason, 'epoch');
  assert.notEqual(after.epoch, sub.epoch);
  assert.equal(c3.messages('feed').length, 0, 'nothing replayed across the hole');
  // Then live again, through the bus, in the new epoch.
  await waitFor(async () => (await a.stats()).bus.channels === 1, 10000, 'a subscribed again (confirmed by Redis)');
  await b.publish('feed', 'm5');
  await c3.until((c) => c.messages('feed').length === 1, 5000, 'm5 live').catch(async (err) => {
    err.message += ` (bus of a: ${JSON.stringify((await a.stats()).bus)}; of b: ${JSON.stringify((await b.stats()).bus)})`;
    throw err;
  });
  assert.equal(c3.messages('feed')[0].payload.toString(), 'm5');
  c3.ws.terminate();
});
