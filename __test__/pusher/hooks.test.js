'use strict';
// Webhooks from a running server (one node; once per cluster is in
// nodes.test.js): channel_occupied / channel_vacated, member_added /
// member_removed, client_event (with socket_id, and user_id on presence),
// cache_miss; each POST {time_ms, events} signed so that the `pusher` SDK's
// webhook().isValid() accepts it, with X-Pusher-Key.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget, DEFAULT_APP } = require('../helpers/pusher-target');
const { sdk, raw, rawSubscribe, webhookReceiver } = require('../helpers/pusher-clients');

const ALL = ['channel_occupied', 'channel_vacated', 'member_added', 'member_removed', 'client_event', 'cache_miss'];

test('webhooks: occupied, member_added, client_event, member_removed, vacated, cache_miss, each as Pusher sends it', async (t) => {
  const hooks = await webhookReceiver(t);
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, webhooks: [{ url: hooks.url, event_types: ALL }] }] });
  const find = (pred, what) => hooks.events.until((h) => pred(h.event), 10000, what).then((h) => h.event);

  const a = await raw(target, { t });
  await rawSubscribe(a, target, 'presence-hooks', { user_id: 'ha', user_info: { x: 1 } });
  assert.deepEqual(await find((e) => e.name === 'channel_occupied', 'channel_occupied'), { name: 'channel_occupied', channel: 'presence-hooks' });
  assert.deepEqual(await find((e) => e.name === 'member_added', 'member_added'), { name: 'member_added', channel: 'presence-hooks', user_id: 'ha' });

  const b = await raw(target, { t });
  await rawSubscribe(b, target, 'presence-hooks', { user_id: 'hb' });
  a.send({ event: 'client-note', channel: 'presence-hooks', data: { text: 'hi' } });
  const ce = await find((e) => e.name === 'client_event', 'client_event');
  assert.equal(ce.channel, 'presence-hooks');
  assert.equal(ce.event, 'client-note');
  assert.deepEqual(typeof ce.data === 'string' ? JSON.parse(ce.data) : ce.data, { text: 'hi' });
  assert.equal(ce.socket_id, a.socketId);
  assert.equal(ce.user_id, 'ha');

  b.close();
  assert.deepEqual(await find((e) => e.name === 'member_removed', 'member_removed'), { name: 'member_removed', channel: 'presence-hooks', user_id: 'hb' });
  a.send({ event: 'pusher:unsubscribe', data: { channel: 'presence-hooks' } });
  assert.deepEqual(await find((e) => e.name === 'channel_vacated', 'channel_vacated'), { name: 'channel_vacated', channel: 'presence-hooks' });

  const c = await raw(target, { t });
  await rawSubscribe(c, target, 'cache-hooks');
  assert.deepEqual(await find((e) => e.name === 'cache_miss', 'cache_miss'), { name: 'cache_miss', channel: 'cache-hooks' });

  const verifier = sdk(target);
  for (const h of hooks.posts.items) {
    const hook = verifier.webhook({ headers: h.headers, rawBody: h.body });
    assert.equal(hook.isValid(), true);
    assert.equal(h.headers['x-pusher-key'], target.key);
    assert.equal(typeof JSON.parse(h.body).time_ms, 'number');
  }
  // Another secret does not verify them.
  const h0 = hooks.posts.items[0];
  assert.equal(sdk(target, { app: { ...target.app, secret: 'other' } }).webhook({ headers: h0.headers, rawBody: h0.body }).isValid(), false);
});

test('webhooks: only the event types asked for', async (t) => {
  const hooks = await webhookReceiver(t);
  // Not about the delay: a short one (the test above has the default's 3 s).
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, webhooks: [{ url: hooks.url, event_types: ['channel_vacated'] }] }], vacateDelay: 50 });
  const a = await raw(target, { t });
  await rawSubscribe(a, target, 'only-vacated', undefined);
  await rawSubscribe(a, target, 'presence-only', { user_id: 'z' });
  a.send({ event: 'pusher:unsubscribe', data: { channel: 'only-vacated' } });
  await hooks.events.until((h) => h.event.channel === 'only-vacated', 10000, 'channel_vacated');
  a.send({ event: 'pusher:unsubscribe', data: { channel: 'presence-only' } });
  await hooks.events.until((h) => h.event.channel === 'presence-only', 10000, 'the second channel_vacated');
  assert.deepEqual(hooks.events.items.map((h) => h.event.name), ['channel_vacated', 'channel_vacated']);
});

test('webhooks: a private channel\'s occupied, client_event (socket_id, no user_id) and vacated; a second app\'s webhooks hear its own channels, of the types they ask for', async (t) => {
  const hooks = await webhookReceiver(t);
  const hooks2 = await webhookReceiver(t);
  const app2 = { id: 'app-2', key: 'key-2', secret: 'secret-2', enableClientMessages: true, webhooks: [{ url: hooks2.url, event_types: ['channel_occupied'] }] };
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, webhooks: [{ url: hooks.url, event_types: ALL }] }, app2], vacateDelay: 50 });
  const find = (pred, what) => hooks.events.until((h) => pred(h.event), 10000, what).then((h) => h.event);

  const a = await raw(target, { t });
  const b = await raw(target, { t });
  assert.equal((await rawSubscribe(a, target, 'private-hooked')).event, 'pusher_internal:subscription_succeeded');
  assert.deepEqual(await find((e) => e.name === 'channel_occupied', 'channel_occupied'), { name: 'channel_occupied', channel: 'private-hooked' });
  await rawSubscribe(b, target, 'private-hooked');
  a.send({ event: 'client-note', channel: 'private-hooked', data: { text: 'hi' } });
  assert.deepEqual(await find((e) => e.name === 'client_event', 'client_event'),
    { name: 'client_event', channel: 'private-hooked', event: 'client-note', data: '{"text":"hi"}', socket_id: a.socketId });
  a.send({ event: 'pusher:unsubscribe', data: { channel: 'private-hooked' } });
  b.ws.close();
  assert.deepEqual(await find((e) => e.name === 'channel_vacated', 'channel_vacated'), { name: 'channel_vacated', channel: 'private-hooked' });
  assert.deepEqual(hooks.names(), ['channel_occupied:private-hooked', 'client_event:private-hooked', 'channel_vacated:private-hooked']);

  // The second app: its channel by its own name, to its own webhooks, and no client_event (not asked for).
  const second = target.apps[1];
  const c = await raw(target, { t, app: second });
  const d = await raw(target, { t, app: second });
  await rawSubscribe(c, target, 'private-two', undefined, { app: second });
  await rawSubscribe(d, target, 'private-two', undefined, { app: second });
  c.send({ event: 'client-x', channel: 'private-two', data: {} });
  await d.nextNew((f) => f.event === 'client-x', 5000, 'the client event on the second app');
  await rawSubscribe(c, target, 'marker-two');
  await hooks2.events.until(() => hooks2.names().includes('channel_occupied:marker-two') || undefined, 10000, 'the marker webhook');
  assert.deepEqual(hooks2.names().sort(), ['channel_occupied:marker-two', 'channel_occupied:private-two']);
  assert.ok(!hooks.names().some((n) => n.endsWith('-two')), JSON.stringify(hooks.names()));
  for (const h of hooks2.posts.items) {
    assert.equal(sdk(target, { app: second }).webhook({ headers: h.headers, rawBody: h.body }).isValid(), true);
    assert.equal(h.headers['x-pusher-key'], second.key);
  }
});

test('webhooks: subscription_count as the channel\'s subscribers change (subscribe, unsubscribe, disconnect)', async (t) => {
  const hooks = await webhookReceiver(t);
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, webhooks: [{ url: hooks.url, event_types: ['subscription_count'] }] }] });
  const count = (n, what) => hooks.events.until((h) => h.event.subscription_count === n && h.event.channel === 'counted', 10000, what).then((h) => h.event);
  const a = await raw(target, { t });
  const b = await raw(target, { t });
  const c = await raw(target, { t });
  await rawSubscribe(a, target, 'counted');
  assert.deepEqual(await count(1, 'the count 1'), { name: 'subscription_count', channel: 'counted', subscription_count: 1 });
  await rawSubscribe(b, target, 'counted');
  await count(2, 'the count 2');
  await rawSubscribe(c, target, 'counted');
  await count(3, 'the count 3');
  b.send({ event: 'pusher:unsubscribe', data: { channel: 'counted' } });
  await hooks.events.until((h) => h.event.subscription_count === 2 && hooks.events.items.indexOf(h) > 2, 10000, 'the count 2 after an unsubscribe');
  c.ws.close();
  await hooks.events.until((h) => h.event.subscription_count === 1 && hooks.events.items.indexOf(h) > 3, 10000, 'the count 1 after a disconnect');
  assert.deepEqual(hooks.events.items.map((h) => h.event.subscription_count), [1, 2, 3, 2, 1]);
});
