'use strict';
// Cache channels (cache-, private-cache-, presence-cache-): a subscriber
// gets the channel's last event right after subscription_succeeded, or
// pusher:cache_miss when there is none (or it expired after cacheTtl).
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget, KIND } = require('../helpers/pusher-target');
const { sdk, connect, subscribe, raw, rawSubscribe, Inbox } = require('../helpers/pusher-clients');
const { startRedis } = require('../helpers/redis');

/** The frames a new raw subscriber of channel gets after its subscription_succeeded, up to the cache answer. */
async function firstAfterSubscribe(target, t, channel, member, label) {
  const r = await raw(target, { t, label });
  const ok = await rawSubscribe(r, target, channel, member);
  assert.equal(ok.event, 'pusher_internal:subscription_succeeded', JSON.stringify(ok));
  const i = r.frames.items.indexOf(ok);
  const answer = await r.frames.until((f) => r.frames.items.indexOf(f) > i && f.channel === channel, 5000, `the cache answer on ${channel}`);
  return { r, answer };
}

test('cache-: pusher:cache_miss when empty; the last event (only the last) once published', async (t) => {
  const target = await startTarget({ t });
  const miss = await firstAfterSubscribe(target, t, 'cache-prices', undefined, 'cache miss');
  assert.deepEqual(miss.answer, { event: 'pusher:cache_miss', channel: 'cache-prices' });

  const api = sdk(target);
  await api.trigger('cache-prices', 'price', { v: 1 });
  await api.trigger('cache-prices', 'price', { v: 2 });
  // The subscriber that was there got both, live.
  await miss.r.frames.count(2, (f) => f.event === 'price', 5000, 'both prices live');
  const hit = await firstAfterSubscribe(target, t, 'cache-prices', undefined, 'cache hit');
  assert.equal(hit.answer.event, 'price');
  assert.deepEqual(JSON.parse(hit.answer.data), { v: 2 });
  assert.equal(hit.r.frames.items.filter((f) => f.event === 'price').length, 1);
  assert.ok(!hit.r.frames.items.some((f) => f.event === 'pusher:cache_miss'));
});

test('private-cache- and presence-cache-: the same, behind their auth', async (t) => {
  const target = await startTarget({ t });
  const api = sdk(target);
  const pm = await firstAfterSubscribe(target, t, 'private-cache-x', undefined, 'private cache miss');
  assert.equal(pm.answer.event, 'pusher:cache_miss');
  await api.trigger('private-cache-x', 'state', { on: true });
  const ph = await firstAfterSubscribe(target, t, 'private-cache-x', undefined, 'private cache hit');
  assert.equal(ph.answer.event, 'state');
  assert.deepEqual(JSON.parse(ph.answer.data), { on: true });

  const qm = await firstAfterSubscribe(target, t, 'presence-cache-y', { user_id: 'a' }, 'presence cache miss');
  assert.equal(qm.answer.event, 'pusher:cache_miss');
  await api.trigger('presence-cache-y', 'state', { n: 7 });
  const qh = await firstAfterSubscribe(target, t, 'presence-cache-y', { user_id: 'b' }, 'presence cache hit');
  assert.equal(qh.answer.event, 'state');
});

test('pusher-js on a cache channel: pusher:cache_miss, then the cached event on a later subscriber', async (t) => {
  const target = await startTarget({ t });
  const a = await connect(target, { t });
  const channel = a.subscribe('cache-js');
  const misses = new Inbox('cache misses');
  channel.bind('pusher:cache_miss', () => misses.push(true));
  await misses.until(() => true, 5000, 'pusher:cache_miss at pusher-js');

  await sdk(target).trigger('cache-js', 'snapshot', { rows: 3 });
  const b = await connect(target, { t });
  const got = new Inbox('snapshots');
  const cb = b.subscribe('cache-js');
  cb.bind('snapshot', (d) => got.push(d));
  assert.deepEqual(await got.until(() => true, 5000, 'the cached snapshot at pusher-js'), { rows: 3 });
});

test('cache-: the cached event expires after cacheTtl', async (t) => {
  const target = await startTarget({ t, cacheTtl: 1 });
  await sdk(target).trigger('cache-short', 'e', { x: 1 });
  const hit = await firstAfterSubscribe(target, t, 'cache-short', undefined, 'cache ttl hit');
  assert.equal(hit.answer.event, 'e');
  // New subscribers until one gets the miss (each subscription an event; bounded).
  const deadline = Date.now() + 10000;
  for (;;) {
    const next = await firstAfterSubscribe(target, t, 'cache-short', undefined, 'cache ttl');
    next.r.close();
    if (next.answer.event === 'pusher:cache_miss') break;
    assert.ok(Date.now() < deadline, 'the cached event was still there 10 s after a TTL of 1 s');
    await new Promise((r) => setTimeout(r, 200)); // pace the retries, not a condition
  }
});

// Pusher is one service: its cache is the channel's wherever a client connects.
// Soketi keeps it per node unless its cache manager is Redis (not what the suite starts).
test('2 nodes: the last event published on either node is the cached one on both, from the first subscriber on', { skip: KIND === 'soketi' ? 'Soketi\'s default cache manager is per node' : false }, async (t) => {
  const redis = await startRedis({ t });
  const one = await startTarget({ t, redisUrl: redis.url });
  const two = await startTarget({ t, redisUrl: redis.url });
  // Published before anyone subscribes anywhere: kept in Redis.
  const res = await sdk(one).trigger('cache-mesh', 'state', { v: 1 });
  assert.equal(res.status, 200);
  // The first subscriber of each node waits for the channel's sync: a hit, not a miss.
  const atOne = await firstAfterSubscribe(one, t, 'cache-mesh', undefined, 'node one first');
  assert.equal(atOne.answer.event, 'state', JSON.stringify(atOne.answer));
  assert.deepEqual(JSON.parse(atOne.answer.data), { v: 1 });
  const atTwo = await firstAfterSubscribe(two, t, 'cache-mesh', undefined, 'node two first');
  assert.equal(atTwo.answer.event, 'state', JSON.stringify(atTwo.answer));
  assert.deepEqual(JSON.parse(atTwo.answer.data), { v: 1 });
  // Published on node two: once node one's subscriber has it live, it is node one's cached event too.
  await sdk(two).trigger('cache-mesh', 'state', { v: 2 });
  await atOne.r.frames.until((f) => f.event === 'state' && JSON.parse(f.data).v === 2, 5000, 'v2 live at node one');
  const later = await firstAfterSubscribe(one, t, 'cache-mesh', undefined, 'node one later');
  assert.deepEqual(JSON.parse(later.answer.data), { v: 2 });
  // A channel nothing was published to: a miss on both.
  for (const node of [one, two]) {
    const miss = await firstAfterSubscribe(node, t, 'cache-empty', undefined, 'miss');
    assert.equal(miss.answer.event, 'pusher:cache_miss');
  }
});
