'use strict';
// Client events (client-*): relayed to the channel's other subscribers, not
// echoed to the sender; on private and presence channels only (with the
// sender's user_id on presence); only when the app enables them; rate limited
// per connection (pusher:error 4301, the connection stays open).
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget, DEFAULT_APP } = require('../helpers/pusher-target');
const { sdk, connect, subscribe, events, raw, rawSubscribe } = require('../helpers/pusher-clients');

test('client event on a private channel: the others get it, the sender does not', async (t) => {
  const target = await startTarget({ t });
  const a = await connect(target, { t });
  const b = await connect(target, { t });
  const ca = (await subscribe(a, 'private-chat')).channel;
  const cb = (await subscribe(b, 'private-chat')).channel;
  const atA = events(ca, 'client-typing');
  const atB = events(cb, 'client-typing');
  assert.equal(ca.trigger('client-typing', { who: 'a' }), true);
  const got = await atB.until(() => true, 5000, 'a\'s client event at b');
  assert.deepEqual(got.data, { who: 'a' });
  // b answers; a gets b's event, and never its own (it would have come first).
  cb.trigger('client-typing', { who: 'b' });
  await atA.until((e) => e.data.who === 'b', 5000, 'b\'s client event at a');
  assert.deepEqual(atA.items.map((e) => e.data.who), ['b']);
  assert.deepEqual(atB.items.map((e) => e.data.who), ['a']);
});

test('client event on a presence channel carries the sender\'s user_id', async (t) => {
  const target = await startTarget({ t });
  const a = await connect(target, { t, member: () => ({ user_id: 'ann', user_info: {} }) });
  const b = await connect(target, { t, member: () => ({ user_id: 'ben', user_info: {} }) });
  const ca = (await subscribe(a, 'presence-game')).channel;
  const cb = (await subscribe(b, 'presence-game')).channel;
  const atB = events(cb, 'client-move');
  ca.trigger('client-move', { x: 1 });
  const got = await atB.until(() => true, 5000, 'the move at b');
  assert.deepEqual(got.data, { x: 1 });
  assert.equal(got.metadata.user_id, 'ann');

  // The frame: {"event","channel","data","user_id"}.
  const r = await raw(target, { t, label: 'client event presence' });
  await rawSubscribe(r, target, 'presence-game', { user_id: 'raw' });
  ca.trigger('client-move', { x: 2 });
  const f = await r.next((x) => x.event === 'client-move', 5000, 'the move at the raw client');
  assert.equal(f.channel, 'presence-game');
  assert.equal(f.user_id, 'ann');
  assert.deepEqual(typeof f.data === 'string' ? JSON.parse(f.data) : f.data, { x: 2 });
});

test('client event on a public channel: refused with pusher:error, not relayed', async (t) => {
  const target = await startTarget({ t });
  const a = await raw(target, { t, label: 'client event public' });
  const b = await raw(target, { t });
  await rawSubscribe(a, target, 'lobby');
  await rawSubscribe(b, target, 'lobby');
  a.send({ event: 'client-hi', channel: 'lobby', data: { x: 1 } });
  a.send({ event: 'pusher:ping', data: {} });
  const answer = await a.nextNew((f) => f.event === 'pusher:error' || f.event === 'pusher:pong', 5000, 'the answer');
  assert.equal(answer.event, target.deviation('client-event-public', { pusher: 'pusher:error', soketi: 'pusher:pong' }));
  // The marker, published after: b got the client event before it, or never.
  await sdk(target).trigger('lobby', 'marker', {});
  await b.next((f) => f.event === 'marker', 5000, 'the marker');
  const relayed = b.frames.items.filter((f) => f.event === 'client-hi').length;
  assert.equal(relayed, target.deviation('client-event-public', { pusher: 0, soketi: 1 }));
});

test('client events on an app without them: pusher:error 4301, nothing relayed', async (t) => {
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, enableClientMessages: false }] });
  const a = await raw(target, { t, label: 'client events disabled' });
  const b = await raw(target, { t });
  await rawSubscribe(a, target, 'private-quiet');
  await rawSubscribe(b, target, 'private-quiet');
  a.send({ event: 'client-hi', channel: 'private-quiet', data: {} });
  const err = await a.nextNew((f) => f.event === 'pusher:error', 5000, 'pusher:error');
  assert.equal(err.data.code, 4301);
  await sdk(target).trigger('private-quiet', 'marker', {});
  await b.next((f) => f.event === 'marker', 5000, 'the marker');
  assert.ok(!b.frames.items.some((f) => f.event === 'client-hi'));
  // The connection stays open.
  a.send({ event: 'pusher:ping', data: {} });
  await a.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong');
});

test('client event rate limit: past maxClientEventsPerSecond, pusher:error 4301; the connection stays open', async (t) => {
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, maxClientEventsPerSecond: 3 }] });
  const a = await raw(target, { t, label: 'client event flood' });
  const b = await raw(target, { t });
  await rawSubscribe(a, target, 'private-flood');
  await rawSubscribe(b, target, 'private-flood');
  for (let i = 0; i < 50; i++) a.send({ event: 'client-n', channel: 'private-flood', data: { i } });
  const err = await a.nextNew((f) => f.event === 'pusher:error', 5000, 'pusher:error 4301');
  assert.equal(err.data.code, 4301);
  a.send({ event: 'pusher:ping', data: {} });
  await a.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong after the flood');
  await sdk(target).trigger('private-flood', 'marker', {});
  await b.next((f) => f.event === 'marker', 5000, 'the marker');
  const relayed = b.frames.items.filter((f) => f.event === 'client-n').length;
  assert.ok(relayed >= 1 && relayed < 50, `${relayed} of 50 relayed`);
  // A second's budget (3; a window boundary may give up to twice that).
  assert.ok(relayed <= 6, `${relayed} relayed with a limit of 3 per second`);
});

test('client event from a connection not subscribed to the channel is not relayed', async (t) => {
  const target = await startTarget({ t });
  const outsider = await raw(target, { t, label: 'client event outsider' });
  const b = await raw(target, { t });
  await rawSubscribe(b, target, 'private-members');
  outsider.send({ event: 'client-sneak', channel: 'private-members', data: {} });
  outsider.send({ event: 'pusher:ping', data: {} });
  const answer = await outsider.nextNew((f) => f.event === 'pusher:error' || f.event === 'pusher:pong', 5000, 'the answer');
  assert.equal(answer.event, target.deviation('client-event-unsubscribed', { pusher: 'pusher:error', soketi: 'pusher:pong' }));
  await sdk(target).trigger('private-members', 'marker', {});
  await b.next((f) => f.event === 'marker', 5000, 'the marker');
  assert.ok(!b.frames.items.some((f) => f.event === 'client-sneak'));
});
