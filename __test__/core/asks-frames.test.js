'use strict';
// What a symphony.v2 client is owed, whatever it sends and however slowly
// it reads (issues 42 and 43): the greeting with the server's limits (and
// an event stream's sy.open with them and its heartbeat); answers and
// notices never dropped or conflated by slowConsumer, so a slow reader
// has a topic's "subscribed" before any message of it; a frame of 1,023
// subscribes all taken though maxPending is 16; 17 malformed frames in one
// write get their 16 answers before the 1008 close; one bad entry of a
// subscribe frame refuses that entry alone. Real `ws` clients (and raw
// bytes on their socket) on loopback; every wait is for a frame, an event
// or a counter.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, closeAll, healthy } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { connectV1, connectV2 } = require('../helpers/v1');
const { openStream } = require('../helpers/sse');

test.afterEach(closeAll);

/** A masked client text frame (mask key 0: the payload as is), for raw writes. */
function textFrame(text) {
  const payload = Buffer.from(text);
  assert.ok(payload.length < 126);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length, 0, 0, 0, 0]), payload]);
}

// ---- the greeting -------------------------------------------------------

test('symphony.v2: the first frame after the 101 is the hello with the server\'s limits, before any subscribed notice', async () => {
  const { url } = await startServer({
    maxPayload: 65536, maxSubscriptions: 10, maxPending: 4, onUpgrade: () => ({ topics: ['news'] }),
  });
  const c = await connectV2(url);
  await c.until(() => c.notices('subscribed').length === 1, 10000, 'the subscribed notice');
  assert.equal(c.frames[0].kind, 'c');
  assert.deepEqual(c.frames[0].notice, {
    type: 'hello',
    limits: { maxPayload: 65536, maxSubscriptions: 10, maxPending: 4, maxTopicLength: 1024, maxEntries: 1024 },
  });
  assert.equal(c.frames[1].notice.type, 'subscribed');
  assert.equal(c.notices('hello').length, 1);
  c.ws.close();
});

test('the hello is exactly its documented text; symphony.v1 and plain connections get none', async () => {
  const { server, url } = await startServer({ onUpgrade: () => ({ topics: ['news'] }) });
  const v2raw = [];
  const v2 = await connectV1(url, { protocols: ['symphony.v1', 'symphony.v2'] });
  v2.ws.on('message', (d) => v2raw.push(d.toString()));
  await v2.until(() => v2.notices('subscribed').length === 1, 10000, 'subscribed');
  const v1 = await connectV1(url);
  await v1.until(() => v1.notices('subscribed').length === 1, 10000, 'subscribed');
  assert.equal(v1.frames[0].notice.type, 'subscribed');
  assert.equal(v1.notices('hello').length, 0);
  server.publish('news', 'x');
  await v2.until(() => v2.messages('news').length === 1, 10000, 'the message');
  // The frames a listener added after open saw: the hello was before them.
  assert.equal(v2.frames.filter((f) => f.kind === 'c' && f.notice.type === 'hello').length, 1);
  const o = server.options;
  assert.equal(JSON.stringify(v2.frames[0].notice),
    `{"type":"hello","limits":{"maxPayload":${o.maxPayload},"maxSubscriptions":${o.maxSubscriptions},"maxPending":${o.maxPending},"maxTopicLength":1024,"maxEntries":1024}}`);
  v2.ws.close();
  v1.ws.close();
});

test('an event stream\'s sy.open carries the same limits and the heartbeat interval (half idleTimeout)', async () => {
  const { port } = await startServer({ idleTimeout: 30, maxPending: 8, onUpgrade: () => ({ topics: ['t'] }) });
  for (const path of ['/?sy.protocol=symphony.v2', '/']) {
    const s = await openStream(port, { path });
    const open = JSON.parse((await s.next((e) => e.event === 'sy.open')).data);
    assert.deepEqual(open.limits, { maxPayload: 1 << 20, maxSubscriptions: 1024, maxPending: 8, maxTopicLength: 1024, maxEntries: 1024 });
    assert.equal(open.heartbeat, 15000);
    assert.deepEqual(Object.keys(open), ['stream', 'protocol', 'limits', 'heartbeat']);
    s.close();
  }
  // No idleTimeout: the heartbeat's own default.
  const other = await startServer({ idleTimeout: 0, onUpgrade: () => ({ topics: ['t'] }) });
  const s = await openStream(other.port);
  assert.equal(JSON.parse((await s.next((e) => e.event === 'sy.open')).data).heartbeat, 15000);
  s.close();
});

// ---- notices are never dropped -------------------------------------------

for (const slowConsumer of ['drop', 'conflate']) {
  test(`slowConsumer '${slowConsumer}': a client whose queue is full subscribes; when it reads again it has 'subscribed' (and the refusal) before any message of the topic`, async () => {
    const maxBackpressure = 64 * 1024;
    const { server, url } = await startServer({
      threads: 1, maxBackpressure, slowConsumer, onUpgrade: () => ({ topics: ['bulk'] }),
      onSubscribe: (id, topic) => topic !== 'denied',
    });
    const c = await connectV2(url);
    await c.until(() => c.notices('subscribed').length === 1, 10000, 'bulk');
    c.ws._socket.pause(); // the client stops reading
    const big = Buffer.alloc(16 * 1024, 0x61);
    // Fill the socket's buffers and the queue until publications are dropped.
    for (let i = 0; i < 4096 && server.stats().dropped === 0 && server.stats().conflated === 0; i++) {
      server.publish('bulk', big);
      if (i % 32 === 31) await new Promise((r) => setImmediate(r));
    }
    await waitFor(() => server.stats().dropped + server.stats().conflated > 0, 10000, 'a publication dropped');
    c.sub({ rid: 1, topic: 'news' }, { rid: 2, topic: 'denied' });
    await waitFor(() => server.subscribers('news') === 1, 10000, 'the subscription made');
    for (let i = 0; i < 5; i++) server.publish('news', `n${i}`);
    c.ws._socket.resume();
    server.publish('news', 'after');
    await c.until(() => c.messages('news').some((m) => m.payload.toString() === 'after'), 10000, 'the message after');
    const notice = c.frames.findIndex((f) => f.kind === 'c' && f.notice.type === 'subscribed' && f.notice.rid === 1);
    assert.ok(notice >= 0, 'the subscribed notice arrived');
    const id = c.frames[notice].notice.id;
    const first = c.frames.findIndex((f) => f.kind === 'p' && f.id === id);
    assert.ok(first > notice, `the notice (${notice}) before the first message of news (${first})`);
    assert.equal(c.answer('refused', 2).code, 'forbidden');
    assert.equal(c.frames.filter((f) => f.kind === '?').length, 0);
    c.ws.close();
    assert.equal(await healthy(server, url), 'still here');
  });
}

test('answers that would take the queue past 4x maxBackpressure close the connection 1008 rather than drop them', async () => {
  const { server, url } = await startServer({
    threads: 1, maxBackpressure: 16 * 1024, onRequest: () => 'x'.repeat(30000), onUpgrade: () => ({ topics: ['bulk'] }),
  });
  const c = await connectV2(url);
  await c.until(() => c.notices('subscribed').length === 1, 10000, 'bulk');
  c.ws._socket.pause();
  const big = Buffer.alloc(16 * 1024, 0x61);
  for (let i = 0; i < 4096 && server.stats().dropped === 0; i++) {
    server.publish('bulk', big);
    if (i % 32 === 31) await new Promise((r) => setImmediate(r));
  }
  await waitFor(() => server.stats().dropped > 0, 10000, 'a publication dropped');
  // 16 replies of 30,000 bytes: past 4 x 16 KiB + 64 KiB.
  c.ws._socket.write(Buffer.concat(Array.from({ length: 16 }, (_, i) => textFrame(`r{"rid":${i + 1}}\n`))));
  await waitFor(() => server.stats().slowCloses > 0, 10000, 'the close');
  c.ws._socket.resume();
  assert.equal(await c.closed, 1008);
  assert.equal(await healthy(server, url), 'still here');
});

// ---- maxPending and one frame -------------------------------------------

for (const mode of ['sync', 'async']) {
  test(`maxPending 16 and an ${mode} hook: 1,023 subscribes in one frame are all granted, none too-many-pending`, async () => {
    let calls = 0;
    const { server, url } = await startServer({
      onSubscribe: () => { calls++; return mode === 'sync' ? true : Promise.resolve(true); },
    });
    const c = await connectV2(url);
    const subs = Array.from({ length: 1023 }, (_, i) => ({ rid: i + 1, topic: `t${i}` }));
    c.sub(...subs);
    await c.until(() => c.notices('subscribed').length + c.notices('refused').length === 1023, 30000, '1,023 answers');
    assert.equal(c.notices('refused').length, 0);
    assert.equal(calls, 1023);
    assert.equal(server.subscribers('t0'), 1);
    assert.equal(server.subscribers('t1022'), 1);
    // The 1,024th fits; the 1,025th does not.
    c.sub({ rid: 5000, topic: 'last' }, { rid: 5001, topic: 'over' });
    await c.waitAnswer('subscribed', 5000);
    await c.waitAnswer('refused', 5001);
    assert.equal(c.answer('refused', 5001).code, 'too-many-subscriptions');
    c.ws.close();
  });
}

test('entries waiting for room are dropped by an unsubscribe of their topic, and count toward maxSubscriptions', async () => {
  const holds = [];
  const { server, url } = await startServer({
    maxPending: 1, maxSubscriptions: 3, onSubscribe: (id, topic) => new Promise((r) => holds.push([topic, r])),
  });
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'a' }, { rid: 2, topic: 'b' }, { rid: 3, topic: 'c' }, { rid: 4, topic: 'd' });
  await c.waitAnswer('refused', 4); // a pending, b and c waiting: 3 of 3
  assert.equal(c.answer('refused', 4).code, 'too-many-subscriptions');
  c.ws.send('u{"rid":5,"topic":"b"}');
  await c.until(() => c.notices('unsubscribed').some((n) => n.rid === 5), 10000, 'unsubscribed b');
  await waitFor(() => holds.length === 1, 10000, 'a asked');
  holds[0][1](true);
  await c.waitAnswer('subscribed', 1);
  await waitFor(() => holds.length === 2, 10000, 'c asked next');
  assert.equal(holds[1][0], 'c'); // b was dropped while it waited
  holds[1][1](true);
  await c.waitAnswer('subscribed', 3);
  assert.equal(server.subscribers('b'), 0);
  c.ws.close();
});

test('publishes and requests waiting for the application do not count toward maxSubscriptions', async () => {
  const holds = [];
  const { server, url } = await startServer({
    maxSubscriptions: 2, onRequest: () => new Promise((r) => holds.push(r)), onSubscribe: () => true,
  });
  const c = await connectV2(url);
  for (let rid = 1; rid <= 3; rid++) c.ws.send(`r{"rid":${rid}}\nq`);
  await waitFor(() => holds.length === 3, 10000, 'three requests held');
  c.sub({ rid: 10, topic: 'a' }, { rid: 11, topic: 'b' }, { rid: 12, topic: 'c' });
  await c.waitAnswer('subscribed', 10);
  await c.waitAnswer('subscribed', 11);
  await c.waitAnswer('refused', 12);
  assert.equal(c.answer('refused', 12).code, 'too-many-subscriptions');
  holds.forEach((r) => r('ok'));
  assert.equal(server.subscribers('b'), 1);
  c.ws.close();
});

// ---- malformed frames ---------------------------------------------------

test('17 malformed frames in one write: the 16 bad-request answers reach the client before the 1008 close', async () => {
  const { server, url } = await startServer({ onSubscribe: () => true });
  const c = await connectV2(url);
  c.ws._socket.write(Buffer.concat(Array.from({ length: 17 }, () => textFrame('s[]'))));
  assert.equal(await c.closed, 1008);
  const errors = c.notices('error');
  assert.equal(errors.length, 16);
  assert.ok(errors.every((e) => e.code === 'bad-request'));
  assert.equal(await healthy(server, url), 'still here');
});

// ---- one bad entry refuses one entry (issue 42) -----------------------------

test('a subscribe frame with bad entries: each bad one refused bad-request with its rid and topic, the others granted', async () => {
  const { server, url } = await startServer({ onSubscribe: () => true });
  const c = await connectV2(url);
  const long = 'x'.repeat(1025);
  c.ws.send(`s${JSON.stringify({
    subs: [
      { rid: 1, topic: 'good' },
      { rid: 2, topic: '' },
      { rid: 3, topic: long },
      { rid: 4, topic: 'since', since: { epoch: 'nothex', offset: '1' } },
      { rid: 5, topic: 'token', token: 7 },
      { rid: 6, topic: 7 },
      { topic: 'norid' },
      'not an object',
      { rid: 9, topic: 'also-good' },
      { rid: 10, topic: 'lone\ud800' }, // JSON.stringify escapes it: "\ud800", no UTF-8 string
    ],
  })}`);
  // Raw bytes that are not UTF-8, in a binary frame: that entry alone.
  c.ws.send(Buffer.concat([Buffer.from('s{"subs":[{"rid":11,"topic":"'), Buffer.from([0xff, 0xfe]),
    Buffer.from('"},{"rid":12,"topic":"bin-good"}]}')]));
  await c.waitAnswer('subscribed', 1);
  await c.waitAnswer('subscribed', 9);
  await c.waitAnswer('subscribed', 12);
  await c.until(() => c.notices('refused').length === 9, 10000, 'nine refusals');
  assert.equal(c.answer('refused', 10).topic, undefined); // not UTF-8: not echoed
  assert.equal(c.answer('refused', 10).reason, 'topic must be UTF-8');
  assert.equal(c.answer('refused', 11).reason, 'topic must be UTF-8');
  const refused = c.notices('refused');
  assert.ok(refused.every((r) => r.code === 'bad-request' && typeof r.reason === 'string' && r.reason !== ''));
  const by = (rid) => refused.find((r) => r.rid === rid);
  assert.equal(by(2).topic, '');
  assert.equal(by(3).topic, undefined); // over 1,024 bytes: not echoed
  assert.equal(by(4).topic, 'since');
  assert.equal(by(5).topic, 'token');
  assert.equal(by(6).topic, undefined);
  const ridless = refused.filter((r) => r.rid === null);
  assert.equal(ridless.length, 2);
  assert.equal(ridless.find((r) => r.topic === 'norid').code, 'bad-request');
  assert.equal(c.notices('error').length, 0); // no frame-level error
  assert.equal(server.subscribers('good'), 1);
  assert.equal(server.subscribers('also-good'), 1);
  c.ws.close();
});

test('a frame that cannot be read at all is one frame-level bad-request: not JSON, no subs array, over 1,024 entries', async () => {
  const { server, url } = await startServer({ onSubscribe: () => true });
  const c = await connectV2(url);
  c.ws.send('s{nope');
  c.ws.send('s{"subscriptions":[]}');
  c.sub(...Array.from({ length: 1025 }, (_, i) => ({ rid: i, topic: `t${i}` })));
  await c.until(() => c.notices('error').length === 3, 10000, 'three errors');
  assert.ok(c.notices('error').every((e) => e.code === 'bad-request' && e.rid === null));
  assert.equal(c.notices('refused').length, 0);
  assert.equal(server.subscribers('t0'), 0);
  c.ws.close();
});

test('a frame with bad entries counts once toward the malformed limit: 16 such frames are answered, the 17th closes 1008', async () => {
  const { url } = await startServer({ onSubscribe: () => true });
  const c = await connectV2(url);
  for (let i = 0; i < 16; i++) c.sub({ rid: 3 * i, topic: '' }, { rid: 3 * i + 1, topic: '' }, { rid: 3 * i + 2, topic: `ok${i}` });
  await c.until(() => c.notices('subscribed').length === 16, 10000, 'the good entries');
  assert.equal(c.notices('refused').length, 32);
  c.sub({ rid: 100, topic: '' });
  assert.equal(await c.closed, 1008);
});
