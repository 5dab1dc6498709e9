'use strict';
// The bus on a Redis Cluster started here: 3 primaries + 3 replicas
// (redis-cli --cluster create) on free loopback ports. Sharded pub/sub: a
// channel's slot picks its shard; a slot migration and a failover while
// publishing move the subscriptions; no message is delivered twice.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startCluster, slotOf, poll } = require('../helpers/redis');
const { startNode, connectClient, closeAll } = require('../helpers/bus-nodes');

test.after(closeAll);

/** Checks that each client got each of the messages at most once and in order. */
function assertOnceInOrder(messages, what) {
  assert.equal(new Set(messages).size, messages.length, `${what}: no duplicates`);
}

test('Redis Cluster: every shard used, a slot migration and a failover while publishing', { timeout: 180000 }, async (t) => {
  const cluster = await startCluster({ t });
  const config = { bus: { url: cluster.urls, backoff: { min: 50, max: 300 } } };
  const a = await startNode(config);
  const b = await startNode(config);
  await a.waitBus('up', 10000);
  await b.waitBus('up', 10000);

  // One topic per primary.
  const byPrimary = new Map();
  for (let i = 0; byPrimary.size < 3 && i < 1000; i++) {
    const topic = `topic-${i}`;
    const port = await cluster.primaryForSlot(slotOf(`symphony:${topic}`));
    if (!byPrimary.has(port)) byPrimary.set(port, topic);
  }
  assert.equal(byPrimary.size, 3);
  const topics = [...byPrimary.values()];
  const ca = await connectClient(a.port, topics);
  const cb = await connectClient(b.port, topics);
  for (const topic of topics) {
    await poll(async () => (await cluster.shardNumSub(`symphony:${topic}`)) === 2,
      { what: `two subscribers of ${topic} on its shard`, timeoutMs: 10000 });
  }
  for (let i = 0; i < 20; i++) {
    for (const topic of topics) {
      await a.publish(topic, `${topic}:a${i}`);
      await b.publish(topic, `${topic}:b${i}`);
    }
  }
  await ca.waitFor(120, 10000);
  await cb.waitFor(120, 10000);
  for (const c of [ca, cb]) {
    assertOnceInOrder(c.messages, 'across shards');
    for (const topic of topics) {
      for (const p of ['a', 'b']) {
        const mine = c.messages.filter((m) => m.startsWith(`${topic}:${p}`));
        assert.deepEqual(mine, Array.from({ length: 20 }, (_, i) => `${topic}:${p}${i}`));
      }
    }
  }
  const sa = (await a.stats()).bus;
  assert.equal(sa.channels, 3);
  assert.equal(sa.dropped, 0);

  // A slot migration while publishing: the subscriptions follow the slot.
  const moving = topics[0];
  const slot = slotOf(`symphony:${moving}`);
  const from = await cluster.primaryForSlot(slot);
  const to = [...byPrimary.keys()].find((p) => p !== from);
  let seq = 0;
  let publishing = true;
  const publisher = (async () => {
    while (publishing && seq < 400) {
      await a.publish(moving, `m${seq++}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await cluster.migrateSlot(slot, to);
  await poll(async () => (await cluster.shardNumSub(`symphony:${moving}`)) === 2,
    { what: `two subscribers of ${moving} on its new shard (${to})`, timeoutMs: 10000 });
  publishing = false;
  await publisher;
  await a.publish(moving, 'after-move');
  await poll(() => cb.messages.includes('after-move'), { what: 'a message after the migration', timeoutMs: 10000 })
    .catch(async (err) => {
      // What each node's bus counted says where it went (dropped, errors: a MOVED; late; map reads).
      err.message += ` (bus of the publisher: ${JSON.stringify((await a.stats()).bus)}, its events ${JSON.stringify(a.busEvents)}; ` +
        `of the receiver: ${JSON.stringify((await b.stats()).bus)}, its events ${JSON.stringify(b.busEvents)})`;
      throw err;
    });
  const moved = cb.messages.filter((m) => /^m\d+$/.test(m)).map((m) => Number(m.slice(1)));
  assertOnceInOrder(cb.messages, 'through the migration');
  assert.deepEqual(moved, [...moved].sort((x, y) => x - y), 'in order through the migration');
  assert.ok((await a.stats()).bus.mapRefreshes >= 2);

  // A failover (a replica promoted) while publishing.
  const failing = topics[1];
  const fslot = slotOf(`symphony:${failing}`);
  const oldPrimary = await cluster.primaryForSlot(fslot);
  seq = 0;
  publishing = true;
  const publisher2 = (async () => {
    while (publishing && seq < 400) {
      await b.publish(failing, `f${seq++}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const { primary } = await cluster.failover(oldPrimary);
  await poll(async () => (await cluster.shardNumSub(`symphony:${failing}`)) === 2,
    { what: `two subscribers of ${failing} on the promoted replica (${primary})`, timeoutMs: 15000 });
  publishing = false;
  await publisher2;
  await a.waitBus('up', 10000, a.busEvents.length - 1);
  await b.publish(failing, 'after-failover');
  await poll(() => ca.messages.includes('after-failover'), { what: 'a message after the failover', timeoutMs: 10000 });
  const failed = ca.messages.filter((m) => /^f\d+$/.test(m)).map((m) => Number(m.slice(1)));
  assertOnceInOrder(ca.messages, 'through the failover');
  assert.deepEqual(failed, [...failed].sort((x, y) => x - y), 'in order through the failover');

  // A primary killed (-9): its replica is promoted; the bus follows.
  const lost = topics[2];
  const lostPort = await cluster.primaryForSlot(slotOf(`symphony:${lost}`));
  const { primary: promoted } = await cluster.killNode(lostPort);
  await poll(async () => (await cluster.shardNumSub(`symphony:${lost}`)) === 2,
    { what: `two subscribers of ${lost} on ${promoted} after the kill`, timeoutMs: 20000 });
  await a.publish(lost, 'after-kill');
  await poll(() => cb.messages.includes('after-kill'), { what: 'a message after the kill', timeoutMs: 10000 });
  assertOnceInOrder(cb.messages, 'through the kill');
});
