'use strict';
// Pusher's HTTP API on the server's own port (docs/pusher.md): the `pusher`
// server SDK 5 triggers events that pusher-js 8 receives (one channel, many,
// a batch, socket_id left out), read and authorized on the IO threads with
// no call into JavaScript; every bad request its status and message.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const PusherSdk = require('pusher');
const { Server } = require('../..');
const { pusherClient, joined: subscribe } = require('../helpers/pusher-client');

const APP = { id: 'app1', key: 'key1', secret: 'secret1' };

async function start(t, pusher = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, pusher: { apps: [APP], ...pusher } });
  await server.listen();
  t.after(() => server.close());
  const port = server.address().port;
  const sdk = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret, host: '127.0.0.1', port: String(port), useTLS: false });
  return { server, port, sdk };
}

const client = (t, port, sdk) => pusherClient(t, port, { key: APP.key, authorize: (s, c) => sdk.authorizeChannel(s, c) });

/** The events a channel gets, as [event, data], with a wait for the n-th. */
function recorder(ch) {
  const got = [];
  const waiters = [];
  ch.bind_global((event, data) => {
    if (event.startsWith('pusher')) return;
    got.push([event, data]);
    for (const w of waiters.splice(0)) w();
  });
  const until = async (n) => {
    while (got.length < n) await new Promise((r) => waiters.push(r));
  };
  return { got, until };
}

/** A signed request as the SDK makes it, with what a test wants changed. */
function signed(port, { method = 'POST', path = `/apps/${APP.id}/events`, body = '', secret = APP.secret, timestamp, md5, query: extra = {} } = {}) {
  const params = { auth_key: APP.key, auth_timestamp: String(timestamp ?? Math.floor(Date.now() / 1000)), auth_version: '1.0', ...extra };
  if (body) params.body_md5 = md5 ?? crypto.createHash('md5').update(body).digest('hex');
  const query = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join('&');
  const sig = crypto.createHmac('sha256', secret).update(`${method}\n${path}\n${query}`).digest('hex');
  return request(port, method, `${path}?${query}&auth_signature=${sig}`, body);
}

function request(port, method, path, body = '') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the SDK triggers to one channel and to many; pusher-js gets each event once', async (t) => {
  const { port, sdk } = await start(t);
  const p = await client(t, port, sdk);
  const a = recorder(await subscribe(p, 'news'));
  const b = recorder(await subscribe(p, 'private-orders'));
  const res = await sdk.trigger('news', 'headline', { title: 'one' });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), '{}');
  await sdk.trigger(['news', 'private-orders'], 'both', 'plain');
  await a.until(2);
  await b.until(1);
  assert.deepEqual(a.got, [['headline', { title: 'one' }], ['both', 'plain']]);
  assert.deepEqual(b.got, [['both', 'plain']]);
});

test('triggerBatch: every event of the batch, in order', async (t) => {
  const { port, sdk } = await start(t);
  const p = await client(t, port, sdk);
  const a = recorder(await subscribe(p, 'a'));
  const res = await sdk.triggerBatch([
    { channel: 'a', name: 'first', data: { n: 1 } },
    { channel: 'b', name: 'other', data: 'x' },
    { channel: 'a', name: 'second', data: { n: 2 } },
  ]);
  assert.equal(res.status, 200);
  await a.until(2);
  assert.deepEqual(a.got, [['first', { n: 1 }], ['second', { n: 2 }]]);
});

test('socket_id leaves that connection out, and only that one', async (t) => {
  const { port, sdk } = await start(t);
  const one = await client(t, port, sdk);
  const two = await client(t, port, sdk);
  const r1 = recorder(await subscribe(one, 'room'));
  const r2 = recorder(await subscribe(two, 'room'));
  await sdk.trigger('room', 'not-for-one', 'x', { socket_id: one.connection.socket_id });
  await sdk.trigger('room', 'for-all', 'y');
  await r1.until(1);
  await r2.until(2);
  assert.deepEqual(r1.got, [['for-all', 'y']]);
  assert.deepEqual(r2.got, [['not-for-one', 'x'], ['for-all', 'y']]);
});

test('a trigger reaches symphony\'s own subscribers of the topic as its data', async (t) => {
  const { server, port, sdk } = await start(t);
  const WebSocket = require('ws');
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
  t.after(() => ws.terminate());
  const [[id]] = await Promise.all([new Promise((r) => server.once('open', (...a) => r(a))), new Promise((r) => ws.once('open', r))]);
  server.subscribe(id, 'news');
  const got = new Promise((r) => ws.once('message', (d) => r(d.toString())));
  await sdk.trigger('news', 'headline', { title: 'x' });
  assert.equal(await got, JSON.stringify({ title: 'x' }));
});

test('bad requests: each its status and message, nothing published', async (t) => {
  const { port, sdk } = await start(t);
  const p = await client(t, port, sdk);
  const r = recorder(await subscribe(p, 'news'));
  const body = JSON.stringify({ name: 'e', channel: 'news', data: 'bad' });
  const cases = [
    [{ body, secret: 'wrong' }, 401, /Invalid signature/],
    [{ body, timestamp: Math.floor(Date.now() / 1000) - 1000 }, 401, /Timestamp expired/],
    [{ body, md5: '0'.repeat(32) }, 401, /body_md5/],
    [{ body, path: '/apps/nope/events' }, 404, /Unknown app/],
    [{ body: JSON.stringify({ name: 'pusher:x', channel: 'news', data: 'x' }) }, 400, /Invalid event/],
    [{ body: JSON.stringify({ name: 'e', channel: 'news', data: 'x'.repeat(11 * 1024) }) }, 413, /too large/],
    [{ body: '{not json' }, 400, /not a JSON object/],
    [{ method: 'GET', path: `/apps/${APP.id}/channels`, secret: 'wrong' }, 401, /Invalid signature/],
    [{ method: 'GET', path: `/apps/${APP.id}/channels/presence-x/users`, secret: 'wrong' }, 401, /Invalid signature/],
    [{ method: 'GET', path: `/apps/${APP.id}/channels/news/users` }, 400, /./],
    [{ body: '{}', secret: 'wrong', path: `/apps/${APP.id}/users/u1/terminate_connections` }, 401, /Invalid signature/],
    [{ body: JSON.stringify({ name: 'e', channels: Array.from({ length: 101 }, (_, i) => `c${i}`), data: 'x' }) }, 400, /limit: 100/],
  ];
  for (const [opts, status, re] of cases) {
    const res = await signed(port, opts);
    assert.equal(res.status, status, `${JSON.stringify(opts).slice(0, 80)}: ${res.body}`);
    assert.match(res.body, re);
  }
  const unsigned = await request(port, 'POST', `/apps/${APP.id}/events`, body);
  assert.equal(unsigned.status, 401);
  const huge = await signed(port, { body: JSON.stringify({ name: 'e', channel: 'news', data: 'x'.repeat(200 * 1024) }) });
  assert.equal(huge.status, 413);
  // Nothing of the above was published; a good one still is.
  await sdk.trigger('news', 'good', 'ok');
  await r.until(1);
  assert.deepEqual(r.got, [['good', 'ok']]);
});

test('GET /channels and /channels/<name>: this app\'s occupied channels and their counts; user_count only for presence', async (t) => {
  const { port, sdk } = await start(t, { apps: [APP, { id: 'app2', key: 'key2', secret: 'secret2' }] });
  const p1 = await client(t, port, sdk);
  const p2 = await client(t, port, sdk);
  await subscribe(p1, 'room-a');
  await subscribe(p2, 'room-a');
  await subscribe(p1, 'private-room-b');
  // Another app's channel of the same name, and symphony's own topics, are not this app's.
  const sdk2 = new PusherSdk({ appId: 'app2', key: 'key2', secret: 'secret2', host: '127.0.0.1', port: String(port), useTLS: false });
  const q = await pusherClient(t, port, { key: 'key2', authorize: (s, c) => sdk2.authorizeChannel(s, c) });
  await subscribe(q, 'only-two');
  const get = async (api, path, params) => {
    const res = await api.get({ path, params });
    assert.equal(res.status, 200);
    return res.json();
  };
  assert.deepEqual(await get(sdk, '/channels'), { channels: { 'room-a': {}, 'private-room-b': {} } });
  assert.deepEqual(await get(sdk, '/channels', { filter_by_prefix: 'room-', info: 'subscription_count' }),
    { channels: { 'room-a': { subscription_count: 2 } } });
  assert.deepEqual(await get(sdk2, '/channels'), { channels: { 'only-two': {} } });
  assert.deepEqual(await get(sdk, '/channels/room-a', { info: 'subscription_count' }), { occupied: true, subscription_count: 2 });
  assert.deepEqual(await get(sdk, '/channels/room-a'), { occupied: true });
  assert.deepEqual(await get(sdk, '/channels/only-two'), { occupied: false });
  // user_count: a presence channel's, and /channels only with filter_by_prefix=presence-.
  for (const [path, params] of [['/channels/room-a', { info: 'user_count' }], ['/channels', { info: 'user_count' }]]) {
    const res = await signed(port, { method: 'GET', path: `/apps/${APP.id}${path}`, query: params });
    assert.equal(res.status, 400, `${path}: ${res.body}`);
    assert.match(res.body, /user_count/);
  }
  // trigger with info: the counts of its channels.
  const res = await sdk.trigger(['room-a', 'nobody'], 'e', {}, { info: 'subscription_count' });
  assert.deepEqual(await res.json(), { channels: { 'room-a': { subscription_count: 2 }, nobody: { subscription_count: 0 } } });
  // A channel everyone left leaves the list.
  p2.unsubscribe('room-a');
  p1.unsubscribe('room-a');
  await new Promise((resolve) => {
    const poll = async () => ((await get(sdk, '/channels/room-a')).occupied ? setImmediate(poll) : resolve());
    poll();
  });
  assert.deepEqual(await get(sdk, '/channels'), { channels: { 'private-room-b': {} } });
});

test('a wrong signature\'s message is said whole, however long the string it quotes', async (t) => {
  // "Invalid signature" quotes the string to sign: with a long channel and
  // query it is longer than the 512 bytes an error response was written in,
  // and the message was left out (only the status line's reason remained).
  const { port } = await start(t);
  const channel = `presence-${'c'.repeat(190)}`;
  const path = `/apps/${APP.id}/channels/${channel}/users`;
  const res = await signed(port, { method: 'GET', path, secret: 'wrong', query: { info: 'user_count,subscription_count' } });
  assert.equal(res.status, 401);
  assert.ok(res.body.length > 400, `${res.body.length} bytes`); // with the headers, past 512
  assert.match(res.body, /^Invalid signature: you should have sent HmacSHA256Hex\("GET\\n\/apps\//); // its LFs as \n
  assert.ok(res.body.includes(`${path}\\nauth_key=${APP.key}&`), res.body);
  assert.match(res.body, /", your_secret_key\), but you sent "[0-9a-f]{64}"\n$/);
});
