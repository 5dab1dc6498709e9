'use strict';
// Pusher protocol v7, the connection: connection_established, ping/pong both
// ways as pusher-js does them, public channels with pusher-js 8 and the SDK,
// unsubscribe, and reconnects (the server restarts: pusher-js reconnects and
// resubscribes). The target is symphony, or Soketi with SY_PUSHER_TARGET
// (helpers/pusher-target.js).
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget } = require('../helpers/pusher-target');
const { sdk, connect, subscribe, events, raw, withTimeout } = require('../helpers/pusher-clients');

test('connection_established: a socket_id "<digits>.<digits>", unique per connection, and the activity_timeout', async (t) => {
  const target = await startTarget({ t });
  const a = await raw(target, { t, label: 'connection_established' });
  const b = await raw(target, { t });
  assert.match(a.socketId, /^\d+\.\d+$/);
  assert.match(b.socketId, /^\d+\.\d+$/);
  assert.notEqual(a.socketId, b.socketId);
  // The frame itself: data is a JSON string (pusher-js parses it twice).
  const frame = a.frames.items[0];
  assert.equal(frame.event, 'pusher:connection_established');
  assert.equal(typeof frame.data, 'string');
  assert.deepEqual(Object.keys(a.established).sort(), ['activity_timeout', 'socket_id']);
  // Pusher: 120 s unless configured (Soketi always says 30).
  assert.equal(a.established.activity_timeout, target.deviation('activity-timeout', { pusher: 120, soketi: 30 }));
});

test('activity_timeout is the configured one', async (t) => {
  const target = await startTarget({ t, activityTimeout: 7 });
  const a = await raw(target, { t });
  assert.equal(a.established.activity_timeout, target.deviation('activity-timeout', { pusher: 7, soketi: 30 }));
});

test('pusher:ping is answered with pusher:pong; pusher-js with a short activityTimeout stays connected on pongs', async (t) => {
  const target = await startTarget({ t });
  const a = await raw(target, { t, label: 'ping' });
  a.send({ event: 'pusher:ping', data: {} });
  const pong = await a.nextNew((f) => f.event === 'pusher:pong', 3000, 'pusher:pong');
  assert.equal(pong.event, 'pusher:pong');

  // pusher-js pings after activityTimeout ms of silence and drops the
  // connection when no pong comes within pongTimeout.
  const client = await connect(target, { t, activityTimeout: 200, pongTimeout: 2000 });
  let pongs = 0;
  let wake;
  const three = new Promise((resolve) => { wake = resolve; });
  client.connection.bind('message', (m) => {
    if (m.event === 'pusher:pong' && ++pongs === 3) wake();
  });
  await withTimeout(three, 8000, 'three pongs to pusher-js pings');
  // connect() bound its listener after 'connecting': the first state seen is
  // 'connected', and it never left it.
  assert.deepEqual([...client.states.items], ['connected']);
});

test('public channel: pusher-js subscribes, the SDK triggers, the event arrives with its data (object and string)', async (t) => {
  const target = await startTarget({ t });
  const client = await connect(target, { t });
  const { channel } = await subscribe(client, 'news');
  const got = events(channel, 'headline');
  const api = sdk(target);
  await api.trigger('news', 'headline', { title: 'hello', n: 1 });
  await api.trigger('news', 'headline', 'plain text');
  const items = await got.count(2, undefined, 5000, 'two headlines');
  assert.deepEqual(items.map((e) => e.data), [{ title: 'hello', n: 1 }, 'plain text']);

  // The frame as sent: {"event","channel","data"} with data a string.
  const r = await raw(target, { t, label: 'public event' });
  r.send({ event: 'pusher:subscribe', data: { channel: 'news' } });
  const ok = await r.next((f) => f.event === 'pusher_internal:subscription_succeeded', 3000, 'subscription_succeeded');
  assert.equal(ok.channel, 'news');
  await api.trigger('news', 'headline', { x: 1 });
  const ev = await r.next((f) => f.event === 'headline', 3000, 'the headline');
  assert.deepEqual(ev, { event: 'headline', channel: 'news', data: '{"x":1}' });
});

test('unsubscribe: no more events on that channel, the others go on', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t });
  r.send({ event: 'pusher:subscribe', data: { channel: 'one' } });
  r.send({ event: 'pusher:subscribe', data: { channel: 'two' } });
  await r.next((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === 'two', 3000, 'two subscribed');
  await r.next((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === 'one', 3000, 'one subscribed');
  r.send({ event: 'pusher:unsubscribe', data: { channel: 'one' } });
  // The server has read the unsubscribe once it answers the ping after it.
  r.send({ event: 'pusher:ping', data: {} });
  await r.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong');
  const api = sdk(target);
  await api.trigger('one', 'ev', 'on one');
  await api.trigger('two', 'ev', 'on two');
  await r.next((f) => f.event === 'ev' && f.channel === 'two', 3000, 'the event on two');
  assert.equal(r.frames.items.filter((f) => f.channel === 'one' && f.event === 'ev').length, 0);
});

test('the server restarts: pusher-js reconnects with a new socket_id and resubscribes by itself', async (t) => {
  const target = await startTarget({ t });
  const client = await connect(target, { t });
  const first = client.connection.socket_id;
  const { channel } = await subscribe(client, 'live');
  const got = events(channel, 'tick');
  const resubscribed = new Promise((resolve) => {
    let n = 0;
    channel.bind('pusher:subscription_succeeded', () => { if (++n === 1) resolve(); });
  });
  await target.restart();
  // pusher-js goes through connecting again and back to connected.
  await client.states.count(2, (s) => s === 'connected', 30000, 'connected again after the restart');
  await withTimeout(resubscribed, 10000, 'the resubscription after the restart');
  assert.notEqual(client.connection.socket_id, first);
  await sdk(target).trigger('live', 'tick', { after: 'restart' });
  const ev = await got.until(() => true, 5000, 'a tick after the restart');
  assert.deepEqual(ev.data, { after: 'restart' });
});
