'use strict';
// Pusher client events (docs/pusher.md) between two pusher-js 8 clients:
// relayed on the IO thread to the channel's other subscribers (never back
// to the sender), only where the app enables them, rate limited per
// connection (4301); a client event also reaches symphony's own
// subscribers of the topic.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const PusherSdk = require('pusher');
const { Server } = require('../..');
const { pusherClient, joined } = require('../helpers/pusher-client');

const APP = { id: 'app1', key: 'key1', secret: 'secret1', enableClientMessages: true, maxClientEventsPerSecond: 3 };
const sdk = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret });

async function start(t, app = APP) {
  const server = new Server({ host: '127.0.0.1', port: 0, pusher: { apps: [app] } });
  await server.listen();
  t.after(() => server.close());
  return { server, port: server.address().port };
}

const client = (t, port) => pusherClient(t, port, { key: APP.key, authorize: (s, c) => sdk.authorizeChannel(s, c) });

/** The next pusher:error the connection reports (its data: { code, message }). */
const nextError = (p) => new Promise((resolve) => p.connection.bind('error', (e) => resolve(e.data ?? e.error?.data)));

test('a client event reaches the others on the channel, not its sender', async (t) => {
  const { server, port } = await start(t);
  const a = await client(t, port);
  const b = await client(t, port);
  const chA = await joined(a, 'private-chat');
  const chB = await joined(b, 'private-chat');
  const gotA = [];
  chA.bind('client-typing', (d) => gotA.push(d));
  const gotB = new Promise((resolve) => chB.bind('client-typing', resolve));
  assert.equal(chA.trigger('client-typing', { who: 'a' }), true);
  assert.deepEqual(await gotB, { who: 'a' });
  // A server publish after it reaches A; the client event never did.
  const marker = new Promise((resolve) => chA.bind('marker', resolve));
  server.publish('private-chat', 'm', { event: 'marker' });
  await marker;
  assert.deepEqual(gotA, []);
});

test('a client event reaches symphony\'s own subscribers of the topic as its JSON', async (t) => {
  const { server, port } = await start(t);
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
  t.after(() => ws.terminate());
  const [[id]] = await Promise.all([new Promise((r) => server.once('open', (...a) => r(a))), new Promise((r) => ws.once('open', r))]);
  server.subscribe(id, 'private-chat');
  const a = await client(t, port);
  const ch = await joined(a, 'private-chat');
  const got = new Promise((r) => ws.once('message', (d) => r(d.toString())));
  ch.trigger('client-move', { x: 1, y: [2] });
  assert.deepEqual(JSON.parse(await got), { x: 1, y: [2] });
});

test('a flood: past maxClientEventsPerSecond each event is refused with 4301, the others get the first ones', async (t) => {
  const { port } = await start(t);
  const a = await client(t, port);
  const b = await client(t, port);
  const chA = await joined(a, 'private-flood');
  const chB = await joined(b, 'private-flood');
  const got = [];
  chB.bind('client-n', (d) => got.push(d.n));
  const refused = nextError(a);
  for (let n = 0; n < 20; n++) chA.trigger('client-n', { n });
  const err = await refused;
  assert.equal(err.code, 4301);
  assert.match(err.message, /rate limit/);
  // The burst allowed (3, or 4 if a third of a second went by) arrives in order; a is still connected.
  const last = new Promise((resolve) => chB.bind('after', resolve));
  const pub = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret, host: '127.0.0.1', port: String(port), useTLS: false });
  await pub.trigger('private-flood', 'after', 'x');
  await last;
  assert.ok(got.length >= 3 && got.length <= 4, `got ${got}`);
  assert.deepEqual(got, [...got.keys()]);
  assert.equal(a.connection.state, 'connected');
});

test('refused: an app without client events, a public channel, a channel not joined', async (t) => {
  const { port } = await start(t, { ...APP, enableClientMessages: false });
  const a = await client(t, port);
  const ch = await joined(a, 'private-x');
  let e = nextError(a);
  ch.trigger('client-x', {});
  assert.match((await e).message, /not enabled/);
  const { port: port2 } = await start(t);
  const b = await client(t, port2);
  const raw = b.connection;
  e = nextError(b);
  raw.send_event('client-x', {}, 'news');
  assert.equal((await e).code, 4301);
  e = nextError(b);
  raw.send_event('client-x', {}, 'private-not-joined');
  assert.match((await e).message, /not subscribed/);
});
