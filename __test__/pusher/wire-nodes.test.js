'use strict';
// Pusher across nodes (docs/pusher.md): two servers over a real Redis (the
// bus); a publish with an event name on one node reaches a pusher-js client
// on the other, in Pusher's envelope, with that event name; GET /channels
// and /channels/<name> on one node answer every node's channels and counts.
const test = require('node:test');
const assert = require('node:assert/strict');
const PusherSdk = require('pusher');
const { Server } = require('../..');
const { pusherClient, joined } = require('../helpers/pusher-client');
const { startRedis, numSub, poll } = require('../helpers/redis');

const APP = { id: 'app1', key: 'key1', secret: 'secret1' };
const sdk = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret });

async function node(t, redis) {
  const server = new Server({ host: '127.0.0.1', port: 0, pusher: { apps: [APP] }, bus: { url: redis.url, backoff: { min: 50, max: 300 } } });
  t.after(() => server.close());
  const up = new Promise((resolve) => server.bus.once('up', resolve));
  await server.listen();
  await up;
  return server;
}

const client = (t, port) => pusherClient(t, port, { key: APP.key, authorize: (s, c) => sdk.authorizeChannel(s, c) });

test('two nodes: server.publish(topic, data, { event }) on A reaches pusher-js on B with that event', async (t) => {
  const redis = await startRedis({ t });
  const a = await node(t, redis);
  const b = await node(t, redis);
  const p = await client(t, b.address().port);
  const ch = p.subscribe('private-orders');
  await new Promise((resolve) => ch.bind('pusher:subscription_succeeded', resolve));
  await poll(async () => (await numSub(redis, 'symphony:private-orders')) === 1, { what: 'node B subscribed in Redis', timeoutMs: 5000 });
  const got = [];
  const two = new Promise((resolve) => {
    ch.bind('order-created', (d) => { got.push(['order-created', d]); if (got.length === 2) resolve(); });
    ch.bind('message', (d) => { got.push(['message', d]); if (got.length === 2) resolve(); });
  });
  a.publish('private-orders', JSON.stringify({ id: 7 }), { event: 'order-created' });
  a.publish('private-orders', 'no event');
  await two;
  assert.deepEqual(got, [['order-created', { id: 7 }], ['message', 'no event']]);
});

test('two nodes: the SDK triggers on A; pusher-js on B gets it, and a socket_id of B is left out on B', async (t) => {
  const redis = await startRedis({ t });
  const a = await node(t, redis);
  const b = await node(t, redis);
  const one = await client(t, b.address().port);
  const two = await client(t, b.address().port);
  const chans = [one.subscribe('room'), two.subscribe('room')];
  await Promise.all(chans.map((ch) => new Promise((resolve) => ch.bind('pusher:subscription_succeeded', resolve))));
  await poll(async () => (await numSub(redis, 'symphony:room')) === 1, { what: 'node B subscribed in Redis', timeoutMs: 5000 });
  const got = [[], []];
  const done = new Promise((resolve) => {
    chans.forEach((ch, i) => ch.bind_global((event, data) => {
      if (event.startsWith('pusher')) return;
      got[i].push([event, data]);
      if (got[0].length === 1 && got[1].length === 2) resolve();
    }));
  });
  const onA = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret, host: '127.0.0.1', port: String(a.address().port), useTLS: false });
  assert.equal((await onA.trigger('room', 'not-for-one', { n: 1 }, { socket_id: one.connection.socket_id })).status, 200);
  assert.equal((await onA.trigger('room', 'for-all', { n: 2 })).status, 200);
  await done;
  assert.deepEqual(got[0], [['for-all', { n: 2 }]]);
  assert.deepEqual(got[1], [['not-for-one', { n: 1 }], ['for-all', { n: 2 }]]);
});

test('two nodes: GET /channels/<name> and /channels answer every node\'s occupied, subscription_count and user_count', async (t) => {
  const redis = await startRedis({ t });
  const a = await node(t, redis);
  const b = await node(t, redis);
  // A third node without the pusher option, on the same bus: it answers the list's request too (empty).
  const plain = new Server({ host: '127.0.0.1', port: 0, bus: { url: redis.url, backoff: { min: 50, max: 300 } } });
  t.after(() => plain.close());
  const plainUp = new Promise((resolve) => plain.bus.once('up', resolve));
  await plain.listen();
  await plainUp;
  const member = (port, user_id) => pusherClient(t, port, { key: APP.key, authorize: (s, c) => sdk.authorizeChannel(s, c, { user_id }) });
  const onA = await client(t, a.address().port);
  const onB = [await client(t, b.address().port), await client(t, b.address().port)];
  await joined(onA, 'room');
  await Promise.all(onB.map((p) => joined(p, 'room')));
  await joined(onB[0], 'only-on-b');
  await joined(await member(a.address().port, 'ann'), 'presence-hall');
  await joined(await member(b.address().port, 'ann'), 'presence-hall');
  await joined(await member(b.address().port, 'bo'), 'presence-hall');
  const api = (server) => new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret, host: '127.0.0.1', port: String(server.address().port), useTLS: false });
  const get = async (server, path, params) => {
    const res = await api(server).get({ path, params });
    assert.equal(res.status, 200, path);
    return res.json();
  };

  for (const server of [a, b]) {
    assert.deepEqual(await get(server, '/channels/room', { info: 'subscription_count' }), { occupied: true, subscription_count: 3 });
    // Occupied on B only: A answers it too.
    assert.deepEqual(await get(server, '/channels/only-on-b', { info: 'subscription_count' }), { occupied: true, subscription_count: 1 });
    assert.deepEqual(await get(server, '/channels/nowhere', { info: 'subscription_count' }), { occupied: false, subscription_count: 0 });
    assert.deepEqual(await get(server, '/channels/presence-hall', { info: 'user_count,subscription_count' }),
      { occupied: true, user_count: 2, subscription_count: 3 });
    assert.deepEqual(await get(server, '/channels', { info: 'subscription_count' }),
      { channels: { 'only-on-b': { subscription_count: 1 }, 'presence-hall': { subscription_count: 3 }, room: { subscription_count: 3 } } });
    assert.deepEqual(await get(server, '/channels', { filter_by_prefix: 'presence-', info: 'user_count' }), { channels: { 'presence-hall': { user_count: 2 } } });
    assert.deepEqual(await get(server, '/channels', { filter_by_prefix: 'room' }), { channels: { room: {} } });
  }

  // B's clients leave: A's answers follow.
  onB[0].disconnect();
  await poll(async () => (await get(a, '/channels/only-on-b')).occupied === false, { what: 'only-on-b vacated, seen from A', timeoutMs: 5000 });
  assert.deepEqual(await get(a, '/channels/room', { info: 'subscription_count' }), { occupied: true, subscription_count: 2 });
  assert.deepEqual(Object.keys((await get(a, '/channels')).channels).sort(), ['presence-hall', 'room']);
});
