'use strict';
// History across nodes (docs/bus.md, "History across nodes"): with a bus,
// a topic's offsets are Redis' (one script numbers, keeps and publishes
// each message), so every node delivers the same (epoch, offset) for the
// same message, a client resumes on any node, and a node that missed bus
// messages fills the hole from the topic's Redis stream.

const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { startRedis, poll } = require('../helpers/redis');
const { startNode, closeAll } = require('../helpers/bus-nodes');
const { connectV1 } = require('../helpers/v1');
const { waitFor } = require('../helpers/raw');
const { startBalancer } = require('../helpers/balancer');

test.after(closeAll);

const HISTORY = { size: 5000, ttl: 300 };

async function nodes(n, redis, extra = {}) {
  const config = { history: HISTORY, bus: { url: redis.url, backoff: { min: 50, max: 200 } }, ...extra };
  const out = [];
  for (let i = 0; i < n; i++) out.push(await startNode(config));
  for (const node of out) await node.waitBus('up', 10000);
  return out;
}

/** Offsets of a v1 client's messages of topic, as Numbers. */
const offsets = (c, topic) => c.messages(topic).map((f) => Number(f.offset));
const payloads = (c, topic) => c.messages(topic).map((f) => f.payload.toString());

/** Asserts that list is from, from + 1, ..., each once. */
function consecutive(list, from, what) {
  for (let i = 0; i < list.length; i++) {
    if (list[i] !== from + i) assert.fail(`${what}: offset ${list[i]} at ${i}, expected ${from + i} (${JSON.stringify(list.slice(Math.max(0, i - 3), i + 3))})`);
  }
}

test('one sequence per topic: every node delivers the same offsets, epoch and order', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a, b, c] = await nodes(3, redis);
  const clients = [];
  for (const node of [a, b, c]) {
    const cl = await connectV1(`ws://127.0.0.1:${node.port}/?topics=feed`);
    await cl.until((x) => x.notices('subscribed').length === 1, 10000, 'subscribed');
    clients.push(cl);
  }
  const epochs = clients.map((cl) => cl.notices('subscribed')[0].epoch);
  // Publishes alternate between the three nodes, each awaited: one order.
  const sent = [];
  for (let i = 0; i < 30; i++) {
    const node = [a, b, c][i % 3];
    sent.push(`m${i}`);
    await node.publish('feed', `m${i}`);
  }
  for (const cl of clients) await cl.until((x) => x.messages('feed').length === 30, 10000, '30 messages');
  const first = offsets(clients[0], 'feed');
  consecutive(first, first[0], 'node a');
  // Three publishers have no common order (each node's bus thread sends
  // when it runs), but Redis' order is everyone's: one order on every node,
  // each publisher's own kept.
  const order = payloads(clients[0], 'feed');
  assert.deepEqual([...order].sort(), [...sent].sort(), 'every message once');
  for (let k = 0; k < 3; k++) {
    const mine = order.filter((p) => Number(p.slice(1)) % 3 === k);
    assert.deepEqual(mine, sent.filter((p) => Number(p.slice(1)) % 3 === k), `publisher ${k}'s order`);
  }
  for (const cl of clients) {
    assert.deepEqual(offsets(cl, 'feed'), first, 'the same offsets on every node');
    assert.deepEqual(payloads(cl, 'feed'), order, 'the same order on every node');
  }
  // The epoch the notices gave before the first publish (none in Redis
  // yet: each node's own) is replaced by Redis' at the first message,
  // which every client is told: one epoch everywhere after it.
  const latest = clients.map((cl) => cl.notices('subscribed').at(-1).epoch);
  assert.equal(new Set(latest).size, 1, `one epoch: ${latest} (at subscribe: ${epochs})`);
  // Redis holds the sequence: the meta hash's offset is the last one delivered.
  assert.equal(Number(await redis.cli('HGET', '{symphony:feed}:meta', 'o')), first.at(-1));
  assert.equal(await redis.cli('HGET', '{symphony:feed}:meta', 'e'), latest[0]);
  assert.equal(Number(await redis.cli('XLEN', '{symphony:feed}:stream')), 30);
  for (const cl of clients) cl.ws.terminate();
});

test('clients move between three nodes while two nodes publish 1,000 messages/s: no gap, no duplicate, order kept', { timeout: 120000 }, async (t) => {
  const { SymphonyClient } = require('../../client/symphony-client.cjs');
  const redis = await startRedis({ t });
  const all = await nodes(3, redis);
  const lb = await startBalancer(all.map((n) => n.port));
  t.after(() => lb.close());
  const clients = [];
  for (let i = 0; i < 3; i++) {
    const cl = new SymphonyClient(`ws://127.0.0.1:${lb.port}/?topics=move`, { WebSocket, backoff: { min: 5, max: 50 } });
    const rec = { cl, got: [], recovered: [], subscribed: 0 };
    cl.on('message', (topic, payload, info) => rec.got.push({ offset: info.offset, payload }));
    cl.on('recovered', (topic, ok, info) => rec.recovered.push({ ok, ...info }));
    cl.on('subscribed', () => { rec.subscribed++; });
    clients.push(rec);
  }
  t.after(() => { for (const r of clients) r.cl.close(); });
  await waitFor(() => clients.every((r) => r.subscribed >= 1), 10000, 'every client subscribed');

  const N = 1500; // per publisher, 500/s each
  const streams = Promise.all([
    all[0].stream('move', { count: N, rate: 500, prefix: 'a' }),
    all[1].stream('move', { count: N, rate: 500, prefix: 'b' }),
  ]);
  let streaming = true;
  streams.finally(() => { streaming = false; });
  // Move every client to the next node each time all of them got 150
  // more messages (every ~150 ms at 1,000/s), while the streams run.
  let moves = 0;
  while (streaming) {
    const floor = Math.min(...clients.map((r) => r.got.length));
    await waitFor(() => !streaming || clients.every((r) => r.got.length >= floor + 150), 20000, 'messages between moves');
    if (!streaming) break;
    moves++;
    lb.moveTo(moves % 3);
  }
  await streams;
  const last = Number(await redis.cli('HGET', '{symphony:move}:meta', 'o'));
  await waitFor(() => clients.every((r) => r.got.length > 0 && r.got.at(-1).offset === last), 20000,
    'every client at the last offset');
  assert.ok(moves >= 3, `the clients moved ${moves} times`);
  for (const [i, r] of clients.entries()) {
    const offs = r.got.map((g) => g.offset);
    consecutive(offs, offs[0], `client ${i} (resumes: ${JSON.stringify(r.recovered)})`);
    for (const who of ['a', 'b']) {
      const seq = r.got.map((g) => g.payload).filter((p) => p[0] === who).map((p) => Number(p.slice(1)));
      assert.deepEqual(seq, Array.from({ length: N }, (_, k) => k), `client ${i}: every message of ${who}, in order`);
    }
    assert.ok(r.recovered.length >= moves, `client ${i} resumed ${r.recovered.length} times for ${moves} moves`);
    const failed = r.recovered.filter((x) => !x.ok);
    assert.deepEqual(failed, [], `client ${i}: every resume recovered`);
  }
});

/** A v1 client on node, subscribed to topic and past its subscribed notice. */
async function v1On(node, topic, since) {
  const cl = await connectV1(`ws://127.0.0.1:${node.port}/?topics=${topic}`, since ? { since } : {});
  await cl.until((x) => x.notices('subscribed').length >= 1, 10000, `subscribed on ${node.port}`);
  return cl;
}

/** Waits until every node has its channels subscribed (confirmed by Redis) again. */
async function resubscribed(list, n = 1) {
  for (const node of list) await poll(async () => (await node.stats()).bus.channels >= n, { timeoutMs: 15000, what: 'resubscribed' });
}

test('Redis killed and restarted without persistence: a new epoch, live clients told (recovered: false), then live', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a, b] = await nodes(2, redis);
  const ca = await v1On(a, 'feed');
  const cb = await v1On(b, 'feed');
  for (let i = 0; i < 5; i++) await b.publish('feed', `m${i}`);
  for (const cl of [ca, cb]) await cl.until((x) => x.messages('feed').length === 5, 10000, 'm0..m4');
  const before = ca.notices('subscribed').at(-1).epoch;
  const fromA = a.busEvents.length;
  const fromB = b.busEvents.length;
  await redis.kill9();
  await a.waitBus('down', 10000, fromA);
  await b.waitBus('down', 10000, fromB);
  await redis.restart();
  await a.waitBus('up', 15000, fromA);
  await b.waitBus('up', 15000, fromB);
  await resubscribed([a, b]);
  // Redis has no sequence for the topic any more: the next publish starts one.
  await a.publish('feed', 'm5');
  for (const cl of [ca, cb]) {
    await cl.until((x) => x.messages('feed').length === 6, 10000, 'm5 live');
    const told = cl.notices('subscribed').at(-1);
    assert.equal(told.recovered, false, JSON.stringify(told));
    assert.equal(told.reason, 'epoch');
    assert.notEqual(told.epoch, before, 'a new epoch');
    assert.equal(told.offset, '0');
    // The notice came before m5, and m5 is the new epoch's first offset.
    const frames = cl.frames.filter((f) => f.kind === 'p' || (f.kind === 'c' && f.notice.type === 'subscribed'));
    assert.equal(frames.at(-2).kind, 'c');
    assert.equal(Number(cl.messages('feed').at(-1).offset), 1);
    assert.equal(cl.messages('feed').at(-1).payload.toString(), 'm5');
  }
  // A resume from the old epoch, on either node, is told so.
  const old = [{ epoch: before, offset: '5', topic: 'feed' }];
  for (const node of [a, b]) {
    const cl = await v1On(node, 'feed', old);
    const n = cl.notices('subscribed')[0];
    assert.equal(n.recovered, false);
    assert.equal(n.reason, 'epoch');
    cl.ws.terminate();
  }
  ca.ws.terminate();
  cb.ws.terminate();
});

test('Redis killed and restarted with AOF: the same epoch goes on, no client is told of a loss', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t, args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  const [a, b] = await nodes(2, redis);
  const ca = await v1On(a, 'feed');
  for (let i = 0; i < 5; i++) await b.publish('feed', `m${i}`);
  await ca.until((x) => x.messages('feed').length === 5, 10000, 'm0..m4');
  const epoch = ca.notices('subscribed').at(-1).epoch;
  const fromA = a.busEvents.length;
  const fromB = b.busEvents.length;
  await redis.kill9();
  await a.waitBus('down', 10000, fromA);
  await redis.restart();
  await a.waitBus('up', 15000, fromA);
  await b.waitBus('up', 15000, fromB);
  await resubscribed([a]);
  for (let i = 5; i < 10; i++) await b.publish('feed', `m${i}`);
  await ca.until((x) => x.messages('feed').length === 10, 10000, 'm5..m9');
  consecutive(offsets(ca, 'feed'), 1, 'one sequence across the restart');
  assert.deepEqual(ca.notices('subscribed').filter((n) => n.recovered === false), [], 'no loss announced');
  assert.equal(ca.notices('subscribed').at(-1).epoch, epoch);
  // A client that left at m2 resumes on b (which had no client) from the stream.
  const cl = await v1On(b, 'feed', [{ epoch, offset: '3', topic: 'feed' }]);
  await cl.until((x) => x.messages('feed').length === 7, 10000, 'the replay of 4..10');
  assert.equal(cl.notices('subscribed')[0].recovered, true);
  consecutive(offsets(cl, 'feed'), 4, 'replayed on b');
  cl.ws.terminate();
  ca.ws.terminate();
});

test("a node's bus connections cut for 3 s while another node publishes: it fills the hole from the stream, its clients see no gap", { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const proxy = await startBalancer([redis.port]);
  t.after(() => proxy.close());
  const config = { history: HISTORY, bus: { backoff: { min: 50, max: 200 } } };
  const a = await startNode({ ...config, bus: { ...config.bus, url: `redis://127.0.0.1:${proxy.port}` } });
  const b = await startNode({ ...config, bus: { ...config.bus, url: redis.url } });
  await a.waitBus('up');
  await b.waitBus('up');
  const ca = await v1On(a, 'feed');
  const cb = await v1On(b, 'feed');
  for (let i = 0; i < 10; i++) await b.publish('feed', `m${i}`);
  await ca.until((x) => x.messages('feed').length === 10, 10000, 'm0..m9 on a');
  const from = a.busEvents.length;
  proxy.hold(true);
  proxy.cut();
  await a.waitBus('down', 10000, from);
  // 3 s of publishes on b while a cannot hear them (300 at 100/s).
  await b.stream('feed', { count: 300, rate: 100, prefix: 'cut' });
  proxy.hold(false);
  await a.waitBus('up', 15000, from);
  await ca.until((x) => x.messages('feed').length === 310, 15000, 'the hole filled').catch(async (err) => {
    err.message += ` (a: ${ca.messages('feed').length} messages, bus ${JSON.stringify((await a.stats()).bus)}, last frames ${JSON.stringify(ca.frames.slice(-3).map((f) => f.notice || [String(f.offset), String(f.payload)]))}; events ${JSON.stringify(a.busEvents.map((e) => e.state))})`;
    throw err;
  });
  await cb.until((x) => x.messages('feed').length === 310, 15000, 'b live');
  consecutive(offsets(ca, 'feed'), 1, 'a after the outage');
  assert.deepEqual(payloads(ca, 'feed'), payloads(cb, 'feed'), 'what a delivers is what b delivered');
  assert.deepEqual(ca.notices('subscribed').filter((n) => n.recovered === false), [], 'no loss announced');
  // Then live again on a.
  await b.publish('feed', 'after');
  await ca.until((x) => x.messages('feed').length === 311, 10000, 'live after');
  ca.ws.terminate();
  cb.ws.terminate();
});

test('another program publishes with history through the documented script (redis-cli EVAL)', { timeout: 30000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a] = await nodes(1, redis);
  const ca = await v1On(a, 'prices');
  const script = require('node:fs').readFileSync(require('node:path').join(__dirname, '../../docs/bus-publish.lua'), 'utf8');
  for (const v of ['101.5', '101.75']) {
    await redis.cli('EVAL', script, '2', '{symphony:prices}:stream', '{symphony:prices}:meta',
      'symphony:prices', v, '100', '300000', '00000000c0ffee01');
  }
  await ca.until((x) => x.messages('prices').length === 2, 10000, 'both');
  assert.deepEqual(payloads(ca, 'prices'), ['101.5', '101.75']);
  assert.deepEqual(offsets(ca, 'prices'), [1, 2]);
  assert.equal(ca.notices('subscribed').at(-1).epoch, '00000000c0ffee01');
  assert.equal(await redis.cli('XLEN', '{symphony:prices}:stream'), '2');
  ca.ws.terminate();
});

test('offsets given twice (a failover that lost writes, made by hand): the nodes that saw the lost ones start a new epoch, clients are told', { timeout: 30000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a, b] = await nodes(2, redis);
  const ca = await v1On(a, 'feed');
  const cb = await v1On(b, 'feed');
  for (let i = 1; i <= 5; i++) await b.publish('feed', `m${i}`);
  for (const cl of [ca, cb]) await cl.until((x) => x.messages('feed').length === 5, 10000, 'm1..m5');
  const epoch = ca.notices('subscribed').at(-1).epoch;
  const seen = [ca, cb].map((cl) => cl.notices('subscribed').length);
  // What a replica promoted without the primary's last two writes holds.
  await redis.cli('HSET', '{symphony:feed}:meta', 'o', '3');
  await redis.cli('XDEL', '{symphony:feed}:stream', '4-0', '5-0');
  await redis.cli('XSETID', '{symphony:feed}:stream', '3-0');
  await a.publish('feed', 'x4'); // offset 4 again, another message
  for (const [i, [name, cl, node]] of [['a', ca, a], ['b', cb, b]].entries()) {
    await cl.until((x) => x.notices('subscribed').length > seen[i], 10000, `${name} told`).catch(async (err) => {
      err.message += ` (bus: ${JSON.stringify((await node.stats()).bus)}, meta: ${await redis.cli('HGETALL', '{symphony:feed}:meta')}, frames: ${JSON.stringify(cl.frames.slice(-3).map((f) => f.notice || [String(f.offset), String(f.payload)]))})`;
      throw err;
    });
    const told = cl.notices('subscribed').at(-1);
    assert.equal(told.recovered, false, JSON.stringify(told));
    assert.equal(told.reason, 'epoch');
    assert.notEqual(told.epoch, epoch);
    await poll(async () => (await node.stats()).bus.syncs >= 2, { timeoutMs: 10000, what: `${name} synced again` });
  }
  const renewed = (await a.stats()).bus.renewals + (await b.stats()).bus.renewals;
  assert.ok(renewed >= 1 && renewed <= 2, `renewals: ${renewed}`);
  assert.notEqual(await redis.cli('HGET', '{symphony:feed}:meta', 'e'), epoch);
  // Live again, in the new epoch, on both.
  await b.publish('feed', 'm6');
  for (const cl of [ca, cb]) {
    await cl.until((x) => payloads(x, 'feed').includes('m6'), 10000, 'm6').catch(async (err) => {
      err.message += ` (a: ${JSON.stringify((await a.stats()).bus)}, b: ${JSON.stringify((await b.stats()).bus)}, meta: ${await redis.cli('HGETALL', '{symphony:feed}:meta')}, frames: ${JSON.stringify(cl.frames.slice(-4).map((f) => f.notice || [String(f.offset), String(f.payload)]))})`;
      throw err;
    });
    assert.ok(!payloads(cl, 'feed').includes('x4'), 'the repeated offset was not delivered as if it followed');
    assert.equal(Number(cl.messages('feed').at(-1).offset), 5);
  }
  ca.ws.terminate();
  cb.ws.terminate();
});

test('docs/bus-publish.lua is the script the bus runs (src/bus/sy_bus_seq.c)', () => {
  const fs = require('node:fs');
  const path = require('node:path');
  const c = fs.readFileSync(path.join(__dirname, '../../src/bus/sy_bus_seq.c'), 'utf8');
  const m = /sy_bus_seq_publish_lua\[\] =\n([\s\S]*?);\n/.exec(c);
  assert.ok(m, 'the script in sy_bus_seq.c');
  // The C string literals, joined and unescaped (\\ \n \' only, and \246 as Lua writes it).
  const body = [...m[1].matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]).join('')
    .replace(/\\(\\|n|')/g, (_, ch) => (ch === 'n' ? '\n' : ch));
  assert.equal(fs.readFileSync(path.join(__dirname, '../../docs/bus-publish.lua'), 'utf8'), body);
});

test('a topic given history while its node is subscribed already syncs at once; its new subscribers get Redis\' position', { timeout: 30000 }, async (t) => {
  const redis = await startRedis({ t });
  const config = { bus: { url: redis.url, backoff: { min: 50, max: 200 } } }; // no history by default
  const a = await startNode(config);
  const b = await startNode(config);
  await a.waitBus('up');
  await b.waitBus('up');
  const plain = await connectV1(`ws://127.0.0.1:${a.port}/?topics=late`);
  await plain.until((x) => x.notices('subscribed').length === 1, 10000, 'subscribed without history');
  await resubscribed([a]);
  assert.equal((await a.stats()).bus.syncs, 0);
  await b.topic('late', { size: 10, ttl: 60 });
  await a.topic('late', { size: 10, ttl: 60 });
  await poll(async () => (await a.stats()).bus.syncs === 1, { timeoutMs: 10000, what: 'a synced the topic' });
  await b.publish('late', 'first'); // numbered in Redis
  await plain.until((x) => x.messages('late').length === 1, 10000, 'first, live on a');
  // A new subscriber on a starts at Redis' position (the message before it is in a's history).
  const epoch = await redis.cli('HGET', '{symphony:late}:meta', 'e');
  const cl = await v1On(a, 'late', [{ epoch, offset: '0', topic: 'late' }]);
  const n = cl.notices('subscribed')[0];
  assert.equal(n.epoch, epoch);
  assert.equal(n.recovered, true, JSON.stringify(n));
  await cl.until((x) => x.messages('late').length === 1, 10000, 'the replay of the first message');
  assert.equal(payloads(cl, 'late')[0], 'first');
  cl.ws.terminate();
  plain.ws.terminate();
});

test('a publish in flight when its Redis connection goes is delivered to the node\'s own subscribers (an epoch of its own, told)', { timeout: 30000 }, async (t) => {
  const redis = await startRedis({ t });
  const proxy = await startBalancer([redis.port]);
  t.after(() => proxy.close());
  const a = await startNode({ history: HISTORY, bus: { url: `redis://127.0.0.1:${proxy.port}`, backoff: { min: 50, max: 200 } } });
  await a.waitBus('up');
  const ca = await v1On(a, 'feed');
  await a.publish('feed', 'm1');
  await ca.until((x) => x.messages('feed').length === 1, 10000, 'm1 through Redis');
  const seen = ca.notices('subscribed').length;
  proxy.stall(); // what a sends from now on never reaches Redis
  await a.publish('feed', 'm2');
  await poll(async () => (await a.stats()).bus.bufferedBytes > 0, { timeoutMs: 10000, what: 'm2 in flight' });
  const from = a.busEvents.length;
  proxy.hold(true);
  proxy.cut(); // the connection goes before Redis answered
  await a.waitBus('down', 10000, from);
  await ca.until((x) => payloads(x, 'feed').includes('m2'), 10000, 'm2 delivered here all the same');
  const told = ca.notices('subscribed').slice(seen);
  assert.equal(told.length, 1, JSON.stringify(told));
  assert.equal(told[0].reason, 'epoch', 'an epoch of its own, told before m2');
  assert.equal(told[0].recovered, false);
  assert.equal((await a.stats()).bus.dropped, 1, 'the bus copy counted as dropped');
  proxy.hold(false);
  ca.ws.terminate();
});

test('a message a node cannot deliver (over its maxPayload) is a hole its subscribers are told of, never skipped silently', { timeout: 30000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a] = await nodes(1, redis, { maxPayload: 64 });
  const ca = await v1On(a, 'feed');
  const script = require('node:fs').readFileSync(require('node:path').join(__dirname, '../../docs/bus-publish.lua'), 'utf8');
  const publish = (v) => redis.cli('EVAL', script, '2', '{symphony:feed}:stream', '{symphony:feed}:meta',
    'symphony:feed', v, '100', '300000', '00000000c0ffee02');
  await publish('one');
  await ca.until((x) => x.messages('feed').length === 1, 10000, 'one');
  const seen = ca.notices('subscribed').length;
  await publish('x'.repeat(100)); // offset 2: over maxPayload on this node
  await publish('three');
  await ca.until((x) => x.messages('feed').length === 2, 10000, 'three');
  const told = ca.notices('subscribed').slice(seen);
  assert.equal(told.length, 1, JSON.stringify(told));
  assert.equal(told[0].recovered, false);
  assert.equal(told[0].reason, 'trimmed');
  assert.equal(told[0].offset, '2', 'the position after the hole');
  assert.deepEqual(offsets(ca, 'feed'), [1, 3]);
  assert.equal((await a.stats()).bus.ignored, 1);
  ca.ws.terminate();
});

test('SCRIPT FLUSH under a running node: its next publish is answered NOSCRIPT, sent with the script\'s body, delivered in order', { timeout: 30000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a] = await nodes(1, redis);
  const ca = await v1On(a, 'feed');
  await a.publish('feed', 'm1');
  await ca.until((x) => x.messages('feed').length === 1, 10000, 'm1');
  await redis.cli('SCRIPT', 'FLUSH');
  await a.publish('feed', 'm2');
  await a.publish('feed', 'm3');
  await ca.until((x) => x.messages('feed').length === 3, 10000, 'm2, m3 after NOSCRIPT');
  assert.deepEqual(payloads(ca, 'feed'), ['m1', 'm2', 'm3']);
  consecutive(offsets(ca, 'feed'), 1, 'one sequence');
  const bus = (await a.stats()).bus;
  assert.equal(bus.errors, 0, 'NOSCRIPT is followed, not an error');
  assert.equal(bus.dropped, 0);
  ca.ws.terminate();
});
