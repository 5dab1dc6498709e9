'use strict';
// presence-cache- channels in symphony (docs/pusher.md, "Cache
// channels"): a presence channel whose subscribers also get its last event
// (or pusher:cache_miss) right after their subscription_succeeded, which
// the owner (lib/pusher/presence.js) sends; across two nodes over one real
// Redis; its member events are delivered, never the cached event; a miss
// is the cache_miss webhook event. Nodes in child processes (pusher-target).
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget, DEFAULT_APP, KIND } = require('../helpers/pusher-target');
const { sdk, raw, rawSubscribe, webhookReceiver } = require('../helpers/pusher-clients');
const { startRedis } = require('../helpers/redis');

const skip = KIND === 'soketi' ? 'symphony\'s own (wire-) tests' : false;

/** A node whose app reports cache_miss to hooksUrl. */
async function start(t, { hooksUrl, ...opts }) {
  const app = { ...DEFAULT_APP, enableClientMessages: true, webhooks: [{ url: hooksUrl, event_types: ['cache_miss'] }] };
  return { target: await startTarget({ t, apps: [app], ...opts }) };
}

/** A new member of channel on node: its subscription_succeeded's presence data and the frame after it on the channel. */
async function join(t, node, channel, userId) {
  const r = await raw(node.target, { t, label: userId });
  const ok = await rawSubscribe(r, node.target, channel, { user_id: userId });
  assert.equal(ok.event, 'pusher_internal:subscription_succeeded', JSON.stringify(ok));
  const i = r.frames.items.indexOf(ok);
  const answer = await r.frames.until((f) => r.frames.items.indexOf(f) > i && f.channel === channel, 5000, `the cache answer to ${userId}`);
  return { r, presence: JSON.parse(ok.data).presence, answer };
}

const data = (f) => JSON.parse(f.data);

test('presence-cache- across two nodes: members as on presence-, the last event (never a member event) after subscription_succeeded, cache_miss and its webhook', { skip }, async (t) => {
  const redis = await startRedis({ t });
  const hooks = await webhookReceiver(t);
  const A = await start(t, { redisUrl: redis.url, hooksUrl: hooks.url });
  const B = await start(t, { redisUrl: redis.url, hooksUrl: hooks.url });
  const ch = 'presence-cache-room';

  // Published on A before anyone is on the channel anywhere: kept in Redis.
  assert.equal((await sdk(A.target).trigger(ch, 'state', { v: 1 })).status, 200);
  // The first subscriber of B waits for the channel's sync: a hit.
  const alice = await join(t, B, ch, 'alice');
  assert.deepEqual(alice.presence.ids, ['alice']);
  assert.equal(alice.answer.event, 'state', JSON.stringify(alice.answer));
  assert.deepEqual(data(alice.answer), { v: 1 });

  // bob on A: both members listed, the same cached event; alice hears of bob.
  const bob = await join(t, A, ch, 'bob');
  assert.deepEqual(bob.presence.ids.sort(), ['alice', 'bob']);
  assert.deepEqual([bob.answer.event, data(bob.answer)], ['state', { v: 1 }]);
  const added = await alice.r.frames.until((f) => f.event === 'pusher_internal:member_added', 5000, 'bob added at alice');
  assert.equal(data(added).user_id, 'bob');

  // carol on B after bob's member_added went through the channel: still the
  // published event, not the member event.
  const carol = await join(t, B, ch, 'carol');
  assert.equal(carol.presence.count, 3);
  assert.deepEqual([carol.answer.event, data(carol.answer)], ['state', { v: 1 }]);

  // Published on B: live to everyone, then the cached event on A.
  await sdk(B.target).trigger(ch, 'state', { v: 2 });
  await bob.r.frames.until((f) => f.event === 'state' && data(f).v === 2, 5000, 'v2 live at bob');
  bob.r.close();
  await alice.r.frames.until((f) => f.event === 'pusher_internal:member_removed' && data(f).user_id === 'bob', 5000, 'bob removed at alice');
  const dave = await join(t, A, ch, 'dave');
  assert.deepEqual([dave.answer.event, data(dave.answer)], ['state', { v: 2 }]);

  // A client event on it is the channel's last event, with its sender's user id.
  carol.r.send({ event: 'client-typing', channel: ch, data: { on: true } });
  await dave.r.frames.until((f) => f.event === 'client-typing', 5000, 'the client event at dave');
  const erin = await join(t, A, ch, 'erin');
  assert.deepEqual([erin.answer.event, erin.answer.user_id, data(erin.answer)], ['client-typing', 'carol', { on: true }]);
  assert.ok(!hooks.events.items.some((h) => h.event.channel === ch), 'no cache_miss for a channel with an event');

  // Nothing published: a miss, on both nodes, and the webhook event.
  for (const [node, user] of [[B, 'frank'], [A, 'gina']]) {
    const miss = await join(t, node, 'presence-cache-empty', user);
    assert.deepEqual(miss.answer, { event: 'pusher:cache_miss', channel: 'presence-cache-empty' });
  }
  const hook = await hooks.events.until((h) => h.event.name === 'cache_miss', 10000, 'the cache_miss webhook');
  assert.deepEqual(hook.event, { name: 'cache_miss', channel: 'presence-cache-empty' });
});

test('presence-cache- on one node: a subscriber past maxPresenceMembers gets its refusal and no cache answer; an unsubscribe and a new subscribe get one answer', { skip }, async (t) => {
  const hooks = await webhookReceiver(t);
  const { target } = await start(t, { hooksUrl: hooks.url, maxPresenceMembers: 1 });
  const ch = 'presence-cache-full';
  await sdk(target).trigger(ch, 'state', { v: 1 });
  const one = await join(t, { target }, ch, 'one');
  assert.deepEqual([one.answer.event, data(one.answer)], ['state', { v: 1 }]);

  const two = await raw(target, { t, label: 'two' });
  const refused = await rawSubscribe(two, target, ch, { user_id: 'two' });
  assert.equal(refused.event, 'pusher:subscription_error');
  assert.equal(refused.data.type, 'LimitReached');

  // one leaves and joins again: one subscription_succeeded, then the event once.
  one.r.send({ event: 'pusher:unsubscribe', data: { channel: ch } });
  const again = await rawSubscribe(one.r, target, ch, { user_id: 'one' });
  assert.equal(again.event, 'pusher_internal:subscription_succeeded');
  const from = one.r.frames.items.indexOf(again);
  await one.r.frames.until((f) => one.r.frames.items.indexOf(f) > from && f.event === 'state', 5000, 'the cache answer again');
  // A marker published after: every frame before it is there once it is.
  await sdk(target).trigger(ch, 'marker', {});
  await one.r.frames.until((f) => f.event === 'marker', 5000, 'the marker');
  assert.equal(one.r.frames.items.slice(from + 1).filter((f) => f.event === 'state').length, 1);
  assert.ok(!two.frames.items.some((f) => f.channel === ch && f.event === 'state'), 'the refused subscriber got no cache answer');
});
