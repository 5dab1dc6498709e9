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
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, webhooks: [{ url: hooks.url, event_types: ['channel_vacated'] }] }] });
  const a = await raw(target, { t });
  await rawSubscribe(a, target, 'only-vacated', undefined);
  await rawSubscribe(a, target, 'presence-only', { user_id: 'z' });
  a.send({ event: 'pusher:unsubscribe', data: { channel: 'only-vacated' } });
  await hooks.events.until((h) => h.event.channel === 'only-vacated', 10000, 'channel_vacated');
  a.send({ event: 'pusher:unsubscribe', data: { channel: 'presence-only' } });
  await hooks.events.until((h) => h.event.channel === 'presence-only', 10000, 'the second channel_vacated');
  assert.deepEqual(hooks.events.items.map((h) => h.event.name), ['channel_vacated', 'channel_vacated']);
});
