'use strict';
// The Pusher protocol wired into the server (docs/pusher.md, issue 45):
// pusher-js 8 in Node against new Server({ pusher }) on loopback, and a raw
// `ws` client where a test needs to see the exact frames (error codes,
// close codes, malformed input). Each bad input gets its own answer and
// nothing else is disturbed.
const test = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const WebSocket = require('ws');
const PusherJs = require('pusher-js');
const PusherSdk = require('pusher');
const { Server } = require('../..');
const { pusherClient } = require('../helpers/pusher-client');

const APP = { id: 'app1', key: 'key1', secret: 'secret1' };
const OTHER = { id: 'app2', key: 'key2', secret: 'secret2' };
const sdk = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret });

async function start(t, pusher = {}, extra = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, pusher: { apps: [APP, OTHER], ...pusher }, ...extra });
  await server.listen();
  t.after(() => server.close());
  return { server, port: server.address().port };
}

/** pusher-js connected to port (its channels authorized with the SDK for app, or as given). */
const client = (t, port, { key = APP.key, authorize } = {}) =>
  pusherClient(t, port, { key, authorize: authorize ?? ((s, c) => sdk.authorizeChannel(s, c)) });
/** A channel subscribed already: its subscription_succeeded (a subscription_error rejects). */
const subscribed = (channel) => new Promise((resolve, reject) => {
  channel.bind('pusher:subscription_succeeded', resolve);
  channel.bind('pusher:subscription_error', (e) => reject(Object.assign(new Error('subscription_error'), { detail: e })));
});

/** A raw WebSocket at path: its JSON messages in order (next()), its close. */
async function raw(t, port, path) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`);
  t.after(() => ws.terminate());
  const got = [];
  const waiters = [];
  ws.on('message', (d) => {
    got.push(JSON.parse(d.toString()));
    for (const w of waiters.splice(0)) w();
  });
  const closed = once(ws, 'close').then(([code, reason]) => ({ code, reason: reason.toString() }));
  await once(ws, 'open');
  const next = async () => {
    while (got.length === 0) await new Promise((r) => waiters.push(r));
    return got.shift();
  };
  const send = (obj) => ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj));
  return { ws, next, send, closed };
}

const PATH = `/app/${APP.key}?protocol=7&client=js&version=8.4.0`;

test('pusher-js connects: a socket id "<node>.<connection id>", the open event says pusher', async (t) => {
  const { server, port } = await start(t);
  const opened = once(server, 'open');
  const p = await client(t, port);
  const [id, info] = await opened;
  assert.equal(info.transport, 'pusher');
  assert.equal(info.socketId, p.connection.socket_id);
  assert.match(p.connection.socket_id, /^\d+\.\d+$/);
  assert.equal(p.connection.socket_id.split('.')[1], String(id));
});

test('public and private channels: server.publish() reaches pusher-js as event "message"', async (t) => {
  const { server, port } = await start(t);
  const p = await client(t, port);
  const pub = p.subscribe('news');
  const priv = p.subscribe('private-orders');
  await Promise.all([subscribed(pub), subscribed(priv)]);
  const got = [];
  pub.bind('message', (d) => got.push(['news', d]));
  priv.bind('message', (d) => got.push(['private-orders', d]));
  const both = new Promise((resolve) => {
    const check = () => (got.length === 2 ? resolve() : setTimeout(check, 5));
    check();
  });
  server.publish('news', JSON.stringify({ a: 1 }));
  server.publish('private-orders', 'plain text');
  await both;
  assert.deepEqual(got.sort(), [['news', { a: 1 }], ['private-orders', 'plain text']].sort());
});

test('server.publish(topic, data, { event }) names the Pusher event; a bad event name is a TypeError', async (t) => {
  const { server, port } = await start(t);
  const p = await client(t, port);
  const ch = p.subscribe('orders');
  await subscribed(ch);
  const got = new Promise((resolve) => ch.bind('order-created', resolve));
  server.publish('orders', JSON.stringify({ id: 1 }), { event: 'order-created' });
  assert.deepEqual(await got, { id: 1 });
  for (const event of ['', 'pusher:x', 'pusher_internal:member_added', 'x'.repeat(201)]) {
    assert.throws(() => server.publish('orders', 'x', { event }), { code: 'ERR_INVALID_ARG_VALUE' }, event);
  }
  assert.throws(() => server.publish('orders', 'x', { event: 1 }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => server.topic('orders').publish('x', { event: 'e' }), { code: 'ERR_INVALID_ARG_VALUE' });
});

test('a second app: its channels are the topics "<app id>:<channel>"', async (t) => {
  const { server, port } = await start(t);
  const other = new PusherSdk({ appId: OTHER.id, key: OTHER.key, secret: OTHER.secret });
  const p = await client(t, port, { key: OTHER.key, authorize: (s, c) => other.authorizeChannel(s, c) });
  const ch = p.subscribe('private-room');
  await subscribed(ch);
  const got = new Promise((resolve) => ch.bind('message', resolve));
  server.publish('private-room', 'for app1 only'); // app1's channel: not this one
  server.publish('app2:private-room', JSON.stringify('for app2'));
  assert.equal(await got, 'for app2');
});

test('a forged or replayed auth is refused with Pusher\'s words; the connection goes on', async (t) => {
  const { server, port } = await start(t);
  const c = await raw(t, port, PATH);
  const hello = await c.next();
  assert.equal(hello.event, 'pusher:connection_established');
  const socketId = JSON.parse(hello.data).socket_id;
  // Signed for another socket id (replayed from another connection).
  const replayed = sdk.authorizeChannel('123.456', 'private-a').auth;
  c.send({ event: 'pusher:subscribe', data: { channel: 'private-a', auth: replayed } });
  const e1 = await c.next();
  assert.equal(e1.event, 'pusher:subscription_error');
  assert.equal(e1.channel, 'private-a');
  assert.equal(e1.data.type, 'AuthError');
  assert.equal(e1.data.status, 401);
  assert.match(e1.data.error, new RegExp(`Invalid signature: Expected HMAC SHA256 hex digest of ${socketId.replace('.', '\\.')}:private-a`));
  // Another app's key.
  c.send({ event: 'pusher:subscribe', data: { channel: 'private-a', auth: `${OTHER.key}:${'0'.repeat(64)}` } });
  const e2 = await c.next();
  assert.equal(e2.event, 'pusher:subscription_error');
  assert.match(e2.data.error, /Invalid key in subscription auth data: 'key2'/);
  // No auth at all.
  c.send({ event: 'pusher:subscribe', data: { channel: 'private-a' } });
  assert.equal((await c.next()).data.type, 'AuthError');
  // Not subscribed: a publish to it does not arrive; the right auth then works.
  c.send({ event: 'pusher:subscribe', data: { channel: 'private-a', auth: sdk.authorizeChannel(socketId, 'private-a').auth } });
  assert.deepEqual(await c.next(), { event: 'pusher_internal:subscription_succeeded', channel: 'private-a', data: '{}' });
  server.publish('private-a', 'x');
  assert.deepEqual(await c.next(), { event: 'message', channel: 'private-a', data: 'x' }); // data: the JSON string "x"
});

test('malformed frames: each its pusher:error 4200, the connection stays', async (t) => {
  const { port } = await start(t);
  const c = await raw(t, port, PATH);
  assert.equal((await c.next()).event, 'pusher:connection_established');
  for (const bad of ['not json', '[1,2]', '{"data":{}}', '{"event":"pusher:subscribe","data":"x"}']) {
    c.send(bad);
    const e = await c.next();
    assert.equal(e.event, 'pusher:error', bad);
    assert.equal(e.data.code, 4200, bad);
  }
  c.send({ event: 'pusher:subscribe', data: { channel: 'bad channel!' } });
  const e = await c.next();
  assert.equal(e.event, 'pusher:subscription_error');
  assert.equal(e.data.type, 'InvalidChannel');
  c.send({ event: 'pusher:ping', data: {} });
  assert.deepEqual(await c.next(), { event: 'pusher:pong', data: {} });
});

test('presence- is checked (a bad auth is an AuthError); cache- answers pusher:cache_miss when it has nothing', async (t) => {
  const { port } = await start(t);
  const c = await raw(t, port, PATH);
  await c.next();
  c.send({ event: 'pusher:subscribe', data: { channel: 'presence-room', auth: 'x:y', channel_data: '{"user_id":"1"}' } });
  const p = await c.next();
  assert.equal(p.event, 'pusher:subscription_error');
  assert.equal(p.data.type, 'AuthError');
  assert.equal(p.data.status, 401);
  c.send({ event: 'pusher:subscribe', data: { channel: 'cache-room' } });
  assert.equal((await c.next()).event, 'pusher_internal:subscription_succeeded');
  assert.deepEqual(await c.next(), { event: 'pusher:cache_miss', channel: 'cache-room' });
});

test("pusher:signin on a second app: signin_success, the user's own #server-to-user- channel (another's refused), sendToUser and terminate there; a forged signin 4009", async (t) => {
  const { port } = await start(t);
  const sdk2 = new PusherSdk({ appId: OTHER.id, key: OTHER.key, secret: OTHER.secret, host: '127.0.0.1', port: String(port), useTLS: false });
  const c = await raw(t, port, `/app/${OTHER.key}?protocol=7`);
  const sid = JSON.parse((await c.next()).data).socket_id;
  const userData = JSON.stringify({ id: 'w1', user_info: { n: 1 } });
  c.send({ event: 'pusher:signin', data: { ...sdk2.authenticateUser(sid, { id: 'w1', user_info: { n: 1 } }), user_data: userData } });
  assert.deepEqual(await c.next(), { event: 'pusher:signin_success', data: { user_data: userData } });
  c.send({ event: 'pusher:subscribe', data: { channel: '#server-to-user-w1', auth: '' } });
  assert.deepEqual(await c.next(), { event: 'pusher_internal:subscription_succeeded', channel: '#server-to-user-w1', data: '{}' });
  c.send({ event: 'pusher:subscribe', data: { channel: '#server-to-user-w2', auth: '' } });
  const refused = await c.next();
  assert.equal(refused.event, 'pusher:subscription_error');
  assert.equal(refused.data.status, 400);
  c.send({ event: 'pusher:signin', data: { ...sdk2.authenticateUser(sid, { id: 'w1' }), user_data: '{"id":"w1"}' } });
  assert.equal((await c.next()).data.message, 'Already signed in');
  // Its user channel is the sign-in's: an unsubscribe leaves it held (terminate finds it).
  c.send({ event: 'pusher:unsubscribe', data: { channel: '#server-to-user-w1' } });
  // The first app's user of the same id is another user.
  const first = await raw(t, port, PATH);
  const sid1 = JSON.parse((await first.next()).data).socket_id;
  first.send({ event: 'pusher:signin', data: { ...sdk.authenticateUser(sid1, { id: 'w1' }), user_data: '{"id":"w1"}' } });
  assert.equal((await first.next()).event, 'pusher:signin_success');
  assert.equal((await sdk2.sendToUser('w1', 'hello', { to: 'second' })).status, 200);
  assert.deepEqual(await c.next(), { event: 'hello', channel: '#server-to-user-w1', data: '{"to":"second"}' });
  assert.equal((await sdk2.terminateUserConnections('w1')).status, 200);
  assert.equal((await c.next()).data.code, 4009);
  assert.equal((await c.closed).code, 4009);
  first.send({ event: 'pusher:ping', data: {} });
  assert.equal((await first.next()).event, 'pusher:pong', 'the first app\'s w1 is not terminated');
  // A signature made for another socket id: Pusher's words, then the close.
  const f = await raw(t, port, PATH);
  await f.next();
  f.send({ event: 'pusher:signin', data: { ...sdk.authenticateUser(sid1, { id: 'w3' }), user_data: '{"id":"w3"}' } });
  const e = await f.next();
  assert.equal(e.data.code, 4009);
  assert.match(e.data.message, /^Invalid signature: Expected HMAC SHA256 hex digest of \d+\.\d+::user::\{"id":"w3"\}/);
  assert.equal((await f.closed).code, 4009);
});

test('refused at the handshake: unknown key 4001, disabled app 4003, over quota 4004, old or unknown protocol 4007, none 4008', async (t) => {
  const { port } = await start(t, { apps: [APP, { ...OTHER, enabled: false }, { id: 'app3', key: 'key3', secret: 's', maxConnections: 1 }] });
  for (const [path, code] of [
    ['/app/nope?protocol=7', 4001],
    [`/app/${OTHER.key}?protocol=7`, 4003],
    [`/app/${APP.key}?protocol=6`, 4007],
    [`/app/${APP.key}?protocol=8`, 4007],
    [`/app/${APP.key}`, 4008],
  ]) {
    const c = await raw(t, port, path);
    const e = await c.next();
    assert.equal(e.event, 'pusher:error', path);
    assert.equal(e.data.code, code, path);
    assert.equal((await c.closed).code, code, path);
  }
  const first = await raw(t, port, '/app/key3?protocol=7');
  assert.equal((await first.next()).event, 'pusher:connection_established');
  const second = await raw(t, port, '/app/key3?protocol=7');
  assert.equal((await second.next()).data.code, 4004);
  assert.equal((await second.closed).code, 4004);
  // The first is undisturbed.
  first.send({ event: 'pusher:ping', data: {} });
  assert.equal((await first.next()).event, 'pusher:pong');
});

test('pusher-js refused for an unknown key stops (4001: no reconnect)', async (t) => {
  const { port } = await start(t);
  const p = new PusherJs('nope', { wsHost: '127.0.0.1', wsPort: port, forceTLS: false, enabledTransports: ['ws'], cluster: 'local' });
  t.after(() => p.disconnect());
  const states = [];
  const stopped = new Promise((resolve) => p.connection.bind('state_change', ({ current }) => {
    states.push(current);
    if (current === 'disconnected') resolve();
  }));
  const err = await new Promise((resolve) => p.connection.bind('error', resolve));
  assert.equal(err.error.type, 'PusherError'); // the handshake's pusher:error, as pusher-js reports it
  assert.equal(err.error.data.code, 4001);
  await stopped;
  assert.deepEqual(states, ['disconnected']); // refused: not 'unavailable', no retry
});

test('the server pings a silent client (pusher:ping) and closes it 4201 without an answer', async (t) => {
  const { port } = await start(t, { activityTimeout: 1 });
  const quiet = await raw(t, port, PATH);
  const hello = await quiet.next();
  assert.equal(JSON.parse(hello.data).activity_timeout, 1);
  assert.deepEqual(await quiet.next(), { event: 'pusher:ping', data: {} });
  const answering = await raw(t, port, PATH);
  await answering.next();
  assert.deepEqual(await answering.next(), { event: 'pusher:ping', data: {} });
  answering.send({ event: 'pusher:pong', data: {} });
  const { code } = await quiet.closed;
  assert.equal(code, 4201);
  // The one that answered is still open.
  answering.send({ event: 'pusher:ping', data: {} });
  let m;
  do m = await answering.next(); while (m.event === 'pusher:ping' && answering.send({ event: 'pusher:pong', data: {} }) === undefined);
  assert.equal(m.event, 'pusher:pong');
});

test('symphony\'s own clients are untouched beside Pusher on the same port', async (t) => {
  const { server, port } = await start(t);
  const plain = new WebSocket(`ws://127.0.0.1:${port}/`);
  t.after(() => plain.terminate());
  const [[id]] = await Promise.all([once(server, 'open'), once(plain, 'open')]);
  server.subscribe(id, 'news');
  const p = await client(t, port);
  const ch = p.subscribe('news');
  await subscribed(ch);
  const gotPusher = new Promise((resolve) => ch.bind('message', resolve));
  const gotPlain = once(plain, 'message');
  server.publish('news', 'hello');
  assert.equal((await gotPlain)[0].toString(), 'hello');
  assert.equal(await gotPusher, 'hello');
});

test('cache channels: server.publish() is the last event too (before any subscriber as well), per app; other topics keep nothing', async (t) => {
  const { server, port } = await start(t, { apps: [APP, { id: 'app2', key: 'key2', secret: 's2' }] });
  const a = await raw(t, port, PATH);
  await a.next();
  a.send({ event: 'pusher:subscribe', data: { channel: 'cache-board' } });
  assert.equal((await a.next()).event, 'pusher_internal:subscription_succeeded');
  assert.equal((await a.next()).event, 'pusher:cache_miss');
  server.publish('cache-board', '{"n":1}', { event: 'score' });
  server.publish('cache-board', '{"n":2}', { event: 'score' });
  assert.deepEqual(await a.next(), { event: 'score', channel: 'cache-board', data: '{"n":1}' });
  assert.deepEqual(await a.next(), { event: 'score', channel: 'cache-board', data: '{"n":2}' });
  // A later subscriber: the last one only, with its event name.
  const b = await raw(t, port, PATH);
  await b.next();
  b.send({ event: 'pusher:subscribe', data: { channel: 'cache-board' } });
  assert.equal((await b.next()).event, 'pusher_internal:subscription_succeeded');
  assert.deepEqual(await b.next(), { event: 'score', channel: 'cache-board', data: '{"n":2}' });
  // The same channel of another app is another topic: a miss there.
  const other = await raw(t, port, '/app/key2?protocol=7');
  await other.next();
  other.send({ event: 'pusher:subscribe', data: { channel: 'cache-board' } });
  assert.equal((await other.next()).event, 'pusher_internal:subscription_succeeded');
  assert.equal((await other.next()).event, 'pusher:cache_miss');
  // A plain channel keeps nothing (history off): no answer after its subscription.
  b.send({ event: 'pusher:subscribe', data: { channel: 'plain' } });
  assert.equal((await b.next()).event, 'pusher_internal:subscription_succeeded');
  b.send({ event: 'pusher:ping', data: {} });
  assert.equal((await b.next()).event, 'pusher:pong');
  // Published before anyone subscribed (and without an event: "message"), and to another app's cache channel.
  server.publish('cache-early', 'hello');
  server.publish('app2:cache-early', 'for two', { event: 'two' });
  server.publish('plain-early', 'not kept');
  b.send({ event: 'pusher:subscribe', data: { channel: 'cache-early' } });
  assert.equal((await b.next()).event, 'pusher_internal:subscription_succeeded');
  assert.deepEqual(await b.next(), { event: 'message', channel: 'cache-early', data: 'hello' });
  other.send({ event: 'pusher:subscribe', data: { channel: 'cache-early' } });
  assert.equal((await other.next()).event, 'pusher_internal:subscription_succeeded');
  assert.deepEqual(await other.next(), { event: 'two', channel: 'cache-early', data: 'for two' });
  assert.equal(server.stats().historyMessages, 3);
});
