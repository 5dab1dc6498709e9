'use strict';
// The HTTP API with the `pusher` SDK 5: trigger (one channel, many up to
// 100, socket_id exclusion), triggerBatch, GET /channels (filter_by_prefix,
// info), /channels/<name>, /channels/<name>/users; and bad input made by
// hand (a bad signature, a timestamp 10 minutes off, a bad body_md5, an
// unknown app, an oversized event, more than 100 channels, a batch past 10,
// a body that is not JSON) with the status Pusher documents. (Soketi answers
// every refusal with HTTP 200 and the status in its JSON body: httpRaw's
// status is that one on Soketi, DEVIATIONS['http-error-status'].)
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget, DEFAULT_APP } = require('../helpers/pusher-target');
const { sdk, connect, subscribe, events, raw, rawSubscribe, httpRaw, sdkStatus } = require('../helpers/pusher-clients');

async function json(resPromise) {
  const res = await resPromise;
  assert.equal(res.status, 200);
  return res.json();
}

test('trigger to one channel and to 100 channels; more than 100 is refused (400)', async (t) => {
  const target = await startTarget({ t });
  const api = sdk(target);
  const r = await raw(target, { t });
  const names = Array.from({ length: 100 }, (_, i) => `many-${i}`);
  for (const n of [names[0], names[99]]) await rawSubscribe(r, target, n);
  const res = await api.trigger(names, 'wide', { all: true });
  assert.equal(res.status, 200);
  await r.next((f) => f.event === 'wide' && f.channel === names[0], 5000, 'the event on the first channel');
  await r.next((f) => f.event === 'wide' && f.channel === names[99], 5000, 'the event on the 100th channel');

  // The SDK refuses 101 itself: made by hand.
  const body = JSON.stringify({ name: 'too-wide', data: '{}', channels: [...names, 'many-100'] });
  const bad = await httpRaw(target, { method: 'POST', path: `/apps/${target.appId}/events`, body });
  assert.equal(bad.status, 400, bad.text);
  assert.match(bad.text, /100/);
});

test('socket_id excludes that connection: everyone else gets the event', async (t) => {
  const target = await startTarget({ t });
  const a = await connect(target, { t });
  const b = await connect(target, { t });
  const atA = events((await subscribe(a, 'feed')).channel, 'post');
  const atB = events((await subscribe(b, 'feed')).channel, 'post');
  const api = sdk(target);
  await api.trigger('feed', 'post', { n: 1 }, { socket_id: a.connection.socket_id });
  await api.trigger('feed', 'post', { n: 2 });
  await atB.count(2, undefined, 5000, 'both posts at b');
  await atA.until((e) => e.data.n === 2, 5000, 'the second post at a');
  assert.deepEqual(atA.items.map((e) => e.data.n), [2]);
  assert.deepEqual(atB.items.map((e) => e.data.n), [1, 2]);
});

test('trigger with info=subscription_count answers each channel\'s count', async (t) => {
  const target = await startTarget({ t });
  const r1 = await raw(target, { t });
  const r2 = await raw(target, { t });
  await rawSubscribe(r1, target, 'counted');
  await rawSubscribe(r2, target, 'counted');
  const res = await sdk(target).trigger('counted', 'e', {}, { info: 'subscription_count' });
  const body = await res.json();
  assert.deepEqual(body, target.deviation('http-trigger-info', { pusher: { channels: { counted: { subscription_count: 2 } } }, soketi: { ok: true } }));
});

test('triggerBatch: each event to its channel, in order', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t });
  await rawSubscribe(r, target, 'b1');
  await rawSubscribe(r, target, 'b2');
  const res = await sdk(target).triggerBatch([
    { channel: 'b1', name: 'e', data: { i: 1 } },
    { channel: 'b2', name: 'e', data: { i: 2 } },
    { channel: 'b1', name: 'e', data: { i: 3 } },
  ]);
  assert.equal(res.status, 200);
  const got = await r.frames.count(3, (f) => f.event === 'e', 5000, 'three batched events');
  assert.deepEqual(got.map((f) => [f.channel, JSON.parse(f.data).i]), [['b1', 1], ['b2', 2], ['b1', 3]]);

  // A batch past 10 events: 400.
  const batch = Array.from({ length: 11 }, (_, i) => ({ channel: 'b1', name: 'e', data: String(i) }));
  const bad = await httpRaw(target, { method: 'POST', path: `/apps/${target.appId}/batch_events`, body: JSON.stringify({ batch }) });
  assert.equal(bad.status, 400, bad.text);
});

test('GET /channels: occupied channels, filter_by_prefix, info=user_count for presence', async (t) => {
  const target = await startTarget({ t });
  const api = sdk(target);
  const r1 = await raw(target, { t });
  const r2 = await raw(target, { t });
  await rawSubscribe(r1, target, 'room-a');
  await rawSubscribe(r2, target, 'room-a');
  await rawSubscribe(r1, target, 'room-b');
  await rawSubscribe(r1, target, 'presence-hall', { user_id: 'x' });
  await rawSubscribe(r2, target, 'presence-hall', { user_id: 'y' });
  const r3 = await raw(target, { t });
  await rawSubscribe(r3, target, 'presence-hall', { user_id: 'y' });

  const all = await json(api.get({ path: '/channels' }));
  assert.deepEqual(Object.keys(all.channels).sort(), ['presence-hall', 'room-a', 'room-b']);
  // Pusher: {} per channel unless info asks for attributes.
  assert.deepEqual(all.channels['room-a'], target.deviation('http-channels-info', { pusher: {}, soketi: { subscription_count: 2, occupied: true } }));

  const rooms = await json(api.get({ path: '/channels', params: { filter_by_prefix: 'room-' } }));
  assert.deepEqual(Object.keys(rooms.channels).sort(), ['room-a', 'room-b']);

  const presence = await json(api.get({ path: '/channels', params: { filter_by_prefix: 'presence-', info: 'user_count' } }));
  assert.deepEqual(Object.keys(presence.channels), ['presence-hall']);
  assert.deepEqual(presence.channels['presence-hall'], target.deviation('http-channels-info', { pusher: { user_count: 2 }, soketi: { subscription_count: 3, occupied: true } }));

  // Unsubscribed channels leave the list.
  r1.send({ event: 'pusher:unsubscribe', data: { channel: 'room-b' } });
  r1.send({ event: 'pusher:ping', data: {} });
  await r1.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong');
  const after = await json(api.get({ path: '/channels', params: { filter_by_prefix: 'room-' } }));
  assert.deepEqual(Object.keys(after.channels), ['room-a']);
});

test('GET /channels/<name>: occupied, subscription_count, user_count for presence', async (t) => {
  const target = await startTarget({ t });
  const api = sdk(target);
  const r1 = await raw(target, { t });
  const r2 = await raw(target, { t });
  await rawSubscribe(r1, target, 'stats');
  await rawSubscribe(r2, target, 'stats');
  await rawSubscribe(r1, target, 'presence-stats', { user_id: 'same' });
  await rawSubscribe(r2, target, 'presence-stats', { user_id: 'same' });

  assert.deepEqual(await json(api.get({ path: '/channels/stats', params: { info: 'subscription_count' } })), { occupied: true, subscription_count: 2 });
  assert.deepEqual(await json(api.get({ path: '/channels/presence-stats', params: { info: 'user_count,subscription_count' } })),
    { occupied: true, user_count: 1, subscription_count: 2 });
  const empty = await json(api.get({ path: '/channels/nobody-here' }));
  assert.equal(empty.occupied, false);
  assert.ok(empty.subscription_count === undefined || empty.subscription_count === 0, JSON.stringify(empty));
});

test('GET /channels/<presence>/users: the members, once each; a non-presence channel is 400', async (t) => {
  const target = await startTarget({ t });
  const api = sdk(target);
  for (const id of ['u1', 'u2', 'u2']) {
    const r = await raw(target, { t });
    await rawSubscribe(r, target, 'presence-users', { user_id: id, user_info: { id } });
  }
  const { users } = await json(api.get({ path: '/channels/presence-users/users' }));
  assert.deepEqual(users.map((u) => u.id).sort(), ['u1', 'u2']);
  assert.deepEqual(Object.keys(users[0]), ['id']);
  assert.equal(await sdkStatus(target, api.get({ path: '/channels/not-presence/users' })), 400);
});

test('HTTP API bad input: signature, timestamp skew, body_md5, unknown app, other key, oversized event, bad JSON', async (t) => {
  const target = await startTarget({ t, maxEventBytes: 10 * 1024 });
  const path = `/apps/${target.appId}/events`;
  const body = JSON.stringify({ name: 'e', data: '{}', channel: 'c' });

  const good = await httpRaw(target, { method: 'POST', path, body });
  assert.equal(good.status, 200, good.text);

  const badSig = await httpRaw(target, { method: 'POST', path, body, secret: 'not-the-secret' });
  assert.equal(badSig.status, 401, badSig.text);

  // 10 minutes and a bit in the past, and in the future: Pusher refuses (401); Soketi never checks.
  for (const skew of [-601, 601]) {
    const res = await httpRaw(target, { method: 'POST', path, body, timestamp: Math.floor(Date.now() / 1000) + skew });
    assert.equal(res.status, target.deviation('http-timestamp', { pusher: 401, soketi: 200 }), `skew ${skew}: ${res.text}`);
  }
  // Within the window: fine.
  const near = await httpRaw(target, { method: 'POST', path, body, timestamp: Math.floor(Date.now() / 1000) - 500 });
  assert.equal(near.status, 200, near.text);

  // body_md5 signed but not the body's.
  const badMd5 = await httpRaw(target, { method: 'POST', path, body, bodyMd5: 'd41d8cd98f00b204e9800998ecf8427e' });
  assert.equal(badMd5.status, 401, badMd5.text);

  // An app id nobody has: 404; another app's key on this app's path: 401.
  const unknown = await httpRaw(target, { method: 'POST', path: '/apps/no-such-app/events', body });
  assert.equal(unknown.status, 404, unknown.text);
  const otherKey = await httpRaw(target, { method: 'POST', path, body, key: 'no-such-key' });
  assert.equal(otherKey.status, target.deviation('http-auth-key', { pusher: 401, soketi: 200 }), otherKey.text);

  // An event's data past maxEventBytes (10 KiB here): 413.
  const big = JSON.stringify({ name: 'e', data: 'x'.repeat(11 * 1024), channel: 'c' });
  const tooBig = await httpRaw(target, { method: 'POST', path, body: big });
  assert.equal(tooBig.status, 413, tooBig.text);

  // Not JSON, or JSON without name/data/channel: 400.
  const notJson = await httpRaw(target, { method: 'POST', path, body: '{not json' });
  assert.equal(notJson.status, target.deviation('http-bad-json', { pusher: 400, soketi: 401 }), notJson.text);
  for (const b of [JSON.stringify({ name: 'e', channel: 'c' }), JSON.stringify({ data: '{}', channel: 'c' }), JSON.stringify({ name: 'e', data: '{}' })]) {
    const res = await httpRaw(target, { method: 'POST', path, body: b });
    assert.equal(res.status, 400, `${b}: ${res.text}`);
  }

  // The SDK sees the same: a RequestError with the status.
  const wrong = sdk(target, { app: { ...target.app, secret: 'wrong' } });
  assert.equal(await sdkStatus(target, wrong.trigger('c', 'e', {})), 401);
  assert.equal(await sdkStatus(target, wrong.get({ path: '/channels' })), 401);
});

test('two apps on one server: each app\'s API reaches its own clients only', async (t) => {
  const other = { id: 'app-2', key: 'key-2', secret: 'secret-2', enableClientMessages: false };
  const target = await startTarget({ t, apps: [DEFAULT_APP, other] });
  const one = await raw(target, { t });
  const two = await raw(target, { t, app: other });
  await rawSubscribe(one, target, 'shared-name');
  await rawSubscribe(two, target, 'shared-name', undefined, { app: other });
  await sdk(target, { app: other }).trigger('shared-name', 'for-two', {});
  await sdk(target).trigger('shared-name', 'for-one', {});
  await one.next((f) => f.event === 'for-one', 5000, 'app 1\'s event');
  await two.next((f) => f.event === 'for-two', 5000, 'app 2\'s event');
  // Each got its app's event; app 2's went out first, so app 1's client would have it by now.
  assert.ok(!one.frames.items.some((f) => f.event === 'for-two'));
  await sdk(target, { app: other }).trigger('shared-name', 'marker', {});
  await two.next((f) => f.event === 'marker', 5000, 'marker');
  assert.ok(!two.frames.items.some((f) => f.event === 'for-one'));
  // App 1's secret does not sign for app 2.
  const res = await httpRaw(target, { method: 'GET', path: '/apps/app-2/channels' });
  assert.equal(res.status, 401, res.text);
});
