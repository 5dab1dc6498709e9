'use strict';
// Clients ask (docs/protocol.md, "Clients ask"): symphony.v2 frames written
// by hand from the protocol page over a real `ws` connection, against a
// real server: every hook outcome (true, false, { code, reason }, a
// Promise, a throw, a timeout), what needs no hook (a topic held, an
// unsubscribe, limits), the races (an unsubscribe while the hook thinks, a
// connection that goes), and what plain and symphony.v1 clients keep.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, closeAll, client, healthy } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { connectV1, connectV2 } = require('../helpers/v1');
const { ClientError } = require('../..');

test.afterEach(closeAll);

/** Collects the server's ids of opened connections. */
function opened(server) {
  const ids = [];
  server.on('open', (id) => ids.push(id));
  return ids;
}

test('symphony.v2 is chosen when offered (after symphony.v1), v1 stays v1, and a plain client is unchanged', async () => {
  const { url } = await startServer();
  const v2 = await connectV2(url);
  assert.equal(v2.ws.protocol, 'symphony.v2');
  const v1 = await connectV1(url);
  assert.equal(v1.ws.protocol, 'symphony.v1');
  const plain = await client(url);
  assert.equal(plain.protocol, '');
  v2.ws.close();
  v1.ws.close();
  plain.close();
});

test('onUpgrade returning true or topics gives symphony.v2 when offered; result.protocol can pin symphony.v1', async () => {
  let pin = false;
  const { url } = await startServer({ onUpgrade: () => (pin ? { protocol: 'symphony.v1' } : true) });
  const a = await connectV2(url);
  assert.equal(a.ws.protocol, 'symphony.v2');
  pin = true;
  const b = await connectV2(url);
  assert.equal(b.ws.protocol, 'symphony.v1');
  a.ws.close();
  b.ws.close();
});

test('application messages: "d\\n" is taken off; the message event gets the payload, text and binary', async () => {
  const { server, url } = await startServer();
  const got = [];
  server.on('message', (id, data, binary) => got.push([data.toString(), binary]));
  const c = await connectV2(url);
  c.ws.send('d\nhello\nthere');
  c.ws.send(Buffer.concat([Buffer.from('d\n'), Buffer.from([0, 1, 2])]));
  await waitFor(() => got.length === 2, 10000, 'two messages');
  assert.deepEqual(got, [['hello\nthere', false], ['\u0000\u0001\u0002', true]]);
  c.ws.close();
});

test('no hooks: a subscribe is refused (forbidden), a publish answered forbidden, a request unsupported', async () => {
  const { server, url } = await startServer();
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'room' });
  c.ws.send('p{"rid":2,"topic":"room"}\nhi');
  c.ws.send('r{"rid":3}\n{}');
  await c.waitAnswer('refused', 1);
  await c.waitAnswer('error', 2);
  await c.waitAnswer('error', 3);
  assert.equal(c.answer('refused', 1).code, 'forbidden');
  assert.equal(c.answer('refused', 1).topic, 'room');
  assert.equal(c.answer('error', 2).code, 'forbidden');
  assert.equal(c.answer('error', 3).code, 'unsupported');
  assert.equal(server.subscribers('room'), 0);
  c.ws.close();
});

test('onSubscribe true: subscribed (rid, id, data), messages flow; its arguments; false and { code, reason } refuse', async () => {
  const calls = [];
  const { server, url } = await startServer({
    onSubscribe: (id, topic, ctx) => {
      calls.push([topic, ctx]);
      if (topic === 'no') return false;
      if (topic === 'why') return { code: 'not-a-member', reason: 'join the room first' };
      if (topic === 'data') return { data: { members: 3 } };
      return true;
    },
  });
  const ids = opened(server);
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'yes', data: { hello: [1] }, token: 'opaque' }, { rid: 2, topic: 'no' }, { rid: 3, topic: 'why' },
    { rid: 4, topic: 'data' });
  await c.waitAnswer('subscribed', 1);
  await c.waitAnswer('refused', 2);
  await c.waitAnswer('refused', 3);
  await c.waitAnswer('subscribed', 4);
  assert.equal(c.answer('refused', 2).code, 'forbidden');
  assert.deepEqual([c.answer('refused', 3).code, c.answer('refused', 3).reason], ['not-a-member', 'join the room first']);
  assert.deepEqual(c.answer('subscribed', 4).data, { members: 3 });
  assert.equal(c.answer('subscribed', 1).topic, 'yes');
  assert.equal(c.answer('subscribed', 1).data, undefined);
  assert.deepEqual(calls[0], ['yes', { since: null, token: 'opaque', data: { hello: [1] }, resubscribe: false }]);
  assert.equal(server.subscribers('yes'), 1);
  assert.equal(server.subscribers('no'), 0);
  server.publish('yes', 'live');
  await c.until(() => c.messages('yes').length === 1, 10000, 'a message of yes');
  assert.equal(c.messages('yes')[0].payload.toString(), 'live');
  assert.equal(server.stats().askSubscribes, 4);
  // server.unsubscribe() ends it; the client is told.
  assert.equal(server.unsubscribe(ids[0], 'yes'), true);
  await c.until(() => c.notices('unsubscribed').some((n) => n.topic === 'yes'), 10000, 'unsubscribed');
  c.ws.close();
});

test('onSubscribe as a Promise; a throw and a rejection refuse (internal, the error reported; a ClientError shows its code)', async () => {
  const errors = [];
  const { server, url } = await startServer({
    onSubscribe: async (id, topic) => {
      await new Promise((r) => setImmediate(r));
      if (topic === 'throw') throw new Error('secret detail');
      if (topic === 'client') throw new ClientError('banned', 'you are banned');
      return true;
    },
  });
  server.on('error', (err) => errors.push(err));
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'ok' }, { rid: 2, topic: 'throw' }, { rid: 3, topic: 'client' });
  await c.waitAnswer('subscribed', 1);
  await c.waitAnswer('refused', 2);
  await c.waitAnswer('refused', 3);
  assert.deepEqual([c.answer('refused', 2).code, c.answer('refused', 2).reason], ['internal', 'internal error']);
  assert.deepEqual([c.answer('refused', 3).code, c.answer('refused', 3).reason], ['banned', 'you are banned']);
  assert.equal(errors.length, 1);
  // The server is told which hook threw, for which connection and topic.
  assert.equal(errors[0].code, 'ERR_SYMPHONY_HOOK_THREW');
  assert.equal(errors[0].hook, 'onSubscribe');
  assert.equal(errors[0].topic, 'throw');
  assert.equal(typeof errors[0].id, 'number');
  assert.equal(errors[0].cause.message, 'secret detail');
  assert.match(errors[0].message, /onSubscribe threw for connection \d+ on topic "throw": secret detail/);
  c.ws.close();
});

test('a hook past askTimeout refuses (timeout); its late answer is dropped', async () => {
  let release;
  const late = new Promise((r) => { release = r; });
  const { server, url } = await startServer({ askTimeout: 50, onSubscribe: () => late });
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 't' });
  await c.waitAnswer('refused', 1);
  assert.equal(c.answer('refused', 1).code, 'timeout');
  release(true);
  // A later ask round-trips: everything before it was answered, and the
  // late grant made no subscription.
  c.ws.send('p{"rid":2,"topic":"t"}\nx');
  await c.waitAnswer('error', 2);
  assert.equal(server.subscribers('t'), 0);
  assert.equal(c.notices('subscribed').length, 0);
  c.ws.close();
});

test('an unsubscribe while the hook thinks drops its grant: answered unsubscribed, never subscribed', async () => {
  let release;
  const asked = [];
  const { server, url } = await startServer({
    onSubscribe: (id, topic) => { asked.push(topic); return new Promise((r) => { release = r; }); },
  });
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 't' });
  await waitFor(() => asked.length === 1, 10000, 'the hook called');
  c.ws.send('u{"rid":2,"topic":"t"}');
  await c.waitAnswer('unsubscribed', 2);
  release(true);
  // Subscribe again (a fresh hook call, granted at once this time).
  c.sub({ rid: 3, topic: 't' });
  await waitFor(() => asked.length === 2, 10000, 'the second hook call');
  release(true);
  await c.waitAnswer('subscribed', 3);
  assert.equal(c.notices('subscribed').length, 1, 'the first grant made nothing');
  assert.equal(server.subscribers('t'), 1);
  c.ws.close();
});

test('a subscribe to a topic held is answered with its place, without the hook; a second one pending is refused', async () => {
  let calls = 0;
  let release;
  const { server, url } = await startServer({
    history: { size: 10, ttl: 0 },
    onUpgrade: () => ({ topics: ['held'] }),
    onSubscribe: () => { calls++; return new Promise((r) => { release = r; }); },
  });
  const c = await connectV2(url);
  server.publish('held', 'one');
  await c.until(() => c.messages('held').length === 1, 10000, 'a message');
  c.sub({ rid: 1, topic: 'held' });
  await c.waitAnswer('subscribed', 1);
  const n = c.answer('subscribed', 1);
  assert.equal(n.held, true);
  assert.equal(n.offset, '1');
  assert.equal(calls, 0);
  c.sub({ rid: 2, topic: 'x' }, { rid: 3, topic: 'x' });
  await c.waitAnswer('refused', 3);
  assert.equal(c.answer('refused', 3).code, 'pending');
  await waitFor(() => calls === 1, 10000, 'one hook call');
  release(true);
  await c.waitAnswer('subscribed', 2);
  c.ws.close();
});

test('recovery per subscription: a subscribe with since replays exactly what was missed', async () => {
  const { server, url } = await startServer({ history: { size: 100, ttl: 0 }, onSubscribe: () => true });
  const a = await connectV2(url);
  a.sub({ rid: 1, topic: 'feed' });
  await a.waitAnswer('subscribed', 1);
  for (let i = 1; i <= 5; i++) server.publish('feed', `m${i}`);
  await a.until(() => a.messages('feed').length === 5, 10000, 'five messages');
  const { epoch } = a.answer('subscribed', 1);
  a.ws.close();
  for (let i = 6; i <= 9; i++) server.publish('feed', `m${i}`);
  const b = await connectV2(url);
  b.ws.send(`s${JSON.stringify({ subs: [{ rid: 7, topic: 'feed', since: { epoch, offset: '5' } }], resub: true })}`);
  await b.waitAnswer('subscribed', 7);
  const n = b.answer('subscribed', 7);
  assert.equal(n.recovered, true);
  assert.equal(n.since, '5');
  server.publish('feed', 'm10');
  await b.until(() => b.messages('feed').length === 5, 10000, 'the replay and one live');
  assert.deepEqual(b.messages('feed').map((f) => [Number(f.offset), f.payload.toString()]),
    [[6, 'm6'], [7, 'm7'], [8, 'm8'], [9, 'm9'], [10, 'm10']]);
  b.ws.close();
});

test('the hook is told a resubscribe; since reaches it', async () => {
  const seen = [];
  const { url } = await startServer({ onSubscribe: (id, topic, ctx) => { seen.push(ctx); return true; } });
  const c = await connectV2(url);
  c.ws.send(`s${JSON.stringify({ subs: [{ rid: 1, topic: 'a', since: { epoch: '00000000000000ab', offset: '9' } }], resub: true })}`);
  await c.waitAnswer('subscribed', 1);
  assert.deepEqual(seen[0], { since: { epoch: '00000000000000ab', offset: 9 }, token: undefined, data: undefined, resubscribe: true });
  assert.equal(c.answer('subscribed', 1).recovered, false);
  assert.equal(c.answer('subscribed', 1).reason, 'no-history');
  c.ws.close();
});

test('onPublish: granted publishes reach subscribers and answer their offset; refused ones answer an error', async () => {
  const { server, url } = await startServer({
    history: { size: 10, ttl: 0 },
    onSubscribe: () => true,
    onPublish: (id, topic, data, info) => (topic === 'open' ? true : { code: 'read-only', reason: `${topic}: ${info.binary}` }),
  });
  const reader = await connectV2(url);
  reader.sub({ rid: 1, topic: 'open' });
  await reader.waitAnswer('subscribed', 1);
  const writer = await connectV2(url);
  writer.ws.send('p{"rid":5,"topic":"open"}\n{"text":"hi"}');
  writer.ws.send(Buffer.concat([Buffer.from('p{"rid":6,"topic":"open"}\n'), Buffer.from([1, 2, 255])]));
  writer.ws.send('p{"rid":7,"topic":"closed"}\nno');
  await writer.waitAnswer('published', 5);
  await writer.waitAnswer('published', 6);
  await writer.waitAnswer('error', 7);
  assert.equal(writer.answer('published', 5).offset, '1');
  assert.equal(writer.answer('published', 6).offset, '2');
  assert.match(writer.answer('published', 5).epoch, /^[0-9a-f]{16}$/);
  assert.deepEqual([writer.answer('error', 7).code, writer.answer('error', 7).reason], ['read-only', 'closed: false']);
  await reader.until(() => reader.messages('open').length === 2, 10000, 'two messages');
  const [m1, m2] = reader.messages('open');
  assert.equal(m1.payload.toString(), '{"text":"hi"}');
  assert.equal(m1.binary, false);
  assert.deepEqual([...m2.payload], [1, 2, 255]);
  assert.equal(m2.binary, true);
  reader.ws.close();
  writer.ws.close();
});

test('onRequest: a value, a Buffer, a Promise, a ClientError and a throw; replies by rid', async () => {
  const errors = [];
  const { server, url } = await startServer({
    onRequest: async (id, data, info) => {
      if (info.binary) return Buffer.from([9, 8, 7]);
      const q = JSON.parse(data);
      if (q.op === 'add') return q.a + q.b;
      if (q.op === 'deny') throw new ClientError('not-found', 'no such thing');
      if (q.op === 'boom') throw new Error('hidden');
      return undefined;
    },
  });
  server.on('error', (err) => errors.push(err));
  const c = await connectV2(url);
  c.ws.send('r{"rid":1}\n{"op":"add","a":2,"b":3}');
  c.ws.send(Buffer.concat([Buffer.from('r{"rid":2}\n'), Buffer.from([0])]));
  c.ws.send('r{"rid":3}\n{"op":"deny"}');
  c.ws.send('r{"rid":4}\n{"op":"boom"}');
  c.ws.send('r{"rid":5}\n{"op":"none"}');
  const reply = (rid) => c.raw.find((f) => f.data.toString('latin1').startsWith(`r${rid}\n`));
  await c.until(() => reply(1) && reply(2) && reply(5) && c.answer('error', 3) && c.answer('error', 4), 10000, 'answers');
  assert.equal(reply(1).data.toString(), 'r1\n5');
  assert.equal(reply(1).binary, false);
  assert.deepEqual([...reply(2).data], [...Buffer.from('r2\n'), 9, 8, 7]);
  assert.equal(reply(2).binary, true);
  assert.equal(reply(5).data.toString(), 'r5\nnull');
  assert.deepEqual([c.answer('error', 3).code, c.answer('error', 3).reason], ['not-found', 'no such thing']);
  assert.deepEqual([c.answer('error', 4).code, c.answer('error', 4).reason], ['internal', 'internal error']);
  assert.equal(errors.length, 1);
  assert.deepEqual([errors[0].code, errors[0].hook, errors[0].topic, errors[0].cause.message], ['ERR_SYMPHONY_HOOK_THREW', 'onRequest', null, 'hidden']);
  assert.equal(server.stats().askRequests, 5);
  c.ws.close();
});

test('maxSubscriptions and maxPending: refused natively, without the hook', async () => {
  let calls = 0;
  const { server, url } = await startServer({ maxSubscriptions: 2, maxPending: 3, onSubscribe: () => { calls++; return true; } });
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'a' }, { rid: 2, topic: 'b' }, { rid: 3, topic: 'c' });
  await c.waitAnswer('refused', 3);
  assert.equal(c.answer('refused', 3).code, 'too-many-subscriptions');
  await c.waitAnswer('subscribed', 1);
  await c.waitAnswer('subscribed', 2);
  assert.equal(calls, 2);
  // Unsubscribing makes room.
  c.ws.send('u{"rid":4,"topic":"a"}');
  await c.until(() => c.notices('unsubscribed').some((n) => n.topic === 'a'), 10000, 'unsubscribed a');
  c.sub({ rid: 5, topic: 'c' });
  await c.waitAnswer('subscribed', 5);
  assert.equal(server.stats().askRefused, 1);
  c.ws.close();

  // maxPending: requests the hook holds.
  const holds = [];
  const s2 = await startServer({ maxPending: 2, onRequest: () => new Promise((r) => holds.push(r)) });
  const d = await connectV2(s2.url);
  for (let rid = 1; rid <= 3; rid++) d.ws.send(`r{"rid":${rid}}\nq`);
  await d.waitAnswer('error', 3);
  assert.equal(d.answer('error', 3).code, 'too-many-pending');
  await waitFor(() => holds.length === 2, 10000, 'two held');
  holds.forEach((r) => r('done'));
  await d.until(() => d.raw.filter((f) => f.data.toString().startsWith('r')).length === 2, 10000, 'two replies');
  d.ws.send('r{"rid":4}\nq');
  await waitFor(() => holds.length === 3, 10000, 'room again');
  holds[2]('ok');
  d.ws.close();
});

test('malformed frames get bad-request; an unknown kind gets unknown-kind and no close; 17 malformed close 1008', async () => {
  const { server, url } = await startServer({ onSubscribe: () => true });
  const c = await connectV2(url);
  c.ws.send('s{not json');
  c.ws.send('u{"rid":5}');
  c.ws.send('x{"rid":1}');
  await c.until(() => c.notices('error').length === 3, 10000, 'three errors');
  const [e1, e2, e3] = c.notices('error');
  assert.deepEqual([e1.code, e1.rid], ['bad-request', null]);
  assert.equal(e1.reason, 'the head is not valid JSON');
  assert.deepEqual([e2.code, e2.rid], ['bad-request', 5]);
  assert.deepEqual([e3.code, e3.rid], ['unknown-kind', null]);
  // Still open and working.
  c.sub({ rid: 9, topic: 'ok' });
  await c.waitAnswer('subscribed', 9);
  for (let i = 0; i < 20; i++) c.ws.send('s[]');
  assert.equal(await c.closed, 1008);
  assert.ok(server.stats().askErrors >= 17);
  // Bystanders are fine.
  assert.equal(await healthy(server, url), 'still here');
});

test('a connection that goes with asks pending: the late answers are dropped, nothing leaks into the next one', async () => {
  const holds = [];
  const { server, url } = await startServer({ onSubscribe: () => new Promise((r) => holds.push(r)) });
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'a' }, { rid: 2, topic: 'b' });
  await waitFor(() => holds.length === 2, 10000, 'two hooks');
  const closedIds = [];
  server.on('close', (id) => closedIds.push(id));
  c.ws.terminate();
  await waitFor(() => closedIds.length === 1, 10000, 'the close');
  holds.forEach((r) => r(true));
  assert.equal(server.subscribers('a'), 0);
  assert.equal(await healthy(server, url), 'still here');
});

test('plain and symphony.v1 clients: their frames are application messages as before', async () => {
  const { server, url } = await startServer({ onSubscribe: () => true });
  const got = [];
  server.on('message', (id, data) => got.push(data.toString()));
  const plain = await client(url);
  plain.send('s{"subs":[{"rid":1,"topic":"a"}]}');
  const v1 = await connectV1(url);
  v1.ws.send('d\nkept');
  await waitFor(() => got.length === 2, 10000, 'two messages');
  assert.deepEqual(got.sort(), ['d\nkept', 's{"subs":[{"rid":1,"topic":"a"}]}'].sort());
  assert.equal(server.subscribers('a'), 0);
  plain.close();
  v1.ws.close();
});

test('bad options: hooks must be functions, askTimeout and the limits in range', () => {
  const { Server } = require('../..');
  assert.throws(() => new Server({ onSubscribe: 1 }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => new Server({ onPublish: 'x' }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => new Server({ onRequest: {} }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => new Server({ askTimeout: 0 }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => new Server({ maxPending: 0 }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => new Server({ maxSubscriptions: -1 }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => new ClientError('Bad Code'), { code: 'ERR_INVALID_ARG_VALUE' });
});

test('asks are messages: the per-connection rate limit paces them (rateLimit close: 1008)', async () => {
  let calls = 0;
  const { server, url } = await startServer({
    maxMessagesPerSecond: 5, messageBurst: 5, rateLimit: 'close', rateLimitGrace: 0,
    onSubscribe: () => { calls++; return true; },
  });
  const c = await connectV2(url);
  for (let i = 1; i <= 50; i++) c.sub({ rid: i, topic: `t${i}` });
  assert.equal(await c.closed, 1008);
  assert.ok(calls < 50, `the hook saw ${calls} of 50`);
  assert.ok(server.stats().rateCloses >= 1);
  assert.equal(await healthy(server, url), 'still here');
});

test('topics over 1,024 bytes are refused alone, heads that are not UTF-8 are bad requests; a binary head is fine', async () => {
  const { url } = await startServer({ onSubscribe: () => true });
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'x'.repeat(1025) });
  c.ws.send(Buffer.from([0x75, ...Buffer.from('{"rid":2,"topic":"'), 0xc3, 0x28, ...Buffer.from('"}')]));
  c.ws.send(Buffer.from('s{"subs":[{"rid":3,"topic":"bin"}]}'));
  await c.waitAnswer('refused', 1);
  assert.equal(c.answer('refused', 1).code, 'bad-request');
  assert.equal(c.answer('refused', 1).topic, undefined); // too long to be named
  await c.until(() => c.notices('error').length === 1, 10000, 'one error');
  assert.deepEqual(c.notices('error').map((e) => [e.code, e.rid]), [['bad-request', null]]);
  await c.waitAnswer('subscribed', 3);
  c.ws.close();
});
