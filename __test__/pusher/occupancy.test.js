'use strict';
// A channel's occupancy across the cluster (lib/pusher/occupancy.js):
// channel_occupied once when the first subscriber anywhere appears,
// channel_vacated once when the last one anywhere leaves (a killed node's
// too, after its time), subscription_count as the cluster's count changes
// (throttled as Pusher does). Real servers, real Redis, symphony.v2 clients
// subscribing to topics (the Pusher wire is not there yet), a killed child
// process, and a real HTTP receiver for the webhooks.

if (process.env.OCC_NODE) {
  runNode();
  return;
}

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { once } = require('node:events');
const { fork } = require('node:child_process');
const Pusher = require('pusher');
const { Server } = require('../..');
const WebSocket = require('ws');
const { SymphonyClient } = require('../../client/symphony-client.cjs');
const { Occupancy } = require('../../lib/pusher/occupancy');
const { Webhooks } = require('../../lib/pusher/webhooks');
const { pusherOptions } = require('../../lib/pusher/config');
const { startRedis, startCluster, poll } = require('../helpers/redis');

// ---------------------------------------------------------------------------
// The child: one node with its occupancy, its events sent to the parent.
//   -> { type: 'listening', port }, { type: 'bus', state }
//   -> { type: 'occ', event: 'occupied' | 'vacated' | 'count', topic, n }

function runNode() {
  const { Server } = require('../..');
  const { Occupancy } = require('../../lib/pusher/occupancy');
  const config = JSON.parse(process.argv[2]);
  const send = (msg) => { if (process.connected) process.send(msg); };
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, bus: config.bus, onSubscribe: () => true });
  server.bus.on('state', (state) => send({ type: 'bus', state }));
  // eslint-disable-next-line no-new
  new Occupancy(server, {
    ...config.occupancy,
    onOccupied: (topic) => send({ type: 'occ', event: 'occupied', topic }),
    onVacated: (topic) => send({ type: 'occ', event: 'vacated', topic }),
    onCount: (topic, n) => send({ type: 'occ', event: 'count', topic, n }),
  });
  server.listen().then(({ port }) => send({ type: 'listening', port }));
  process.on('disconnect', () => process.exit(0));
}

// ---------------------------------------------------------------------------

/** A list that wakes until(pred) whenever it grows. */
class Events {
  constructor() { this.items = []; this.waiters = []; }
  push(x) {
    this.items.push(x);
    this.waiters = this.waiters.filter((w) => !(w.pred(this.items) && (w.resolve(this.items), true)));
  }
  /** Resolves once pred(items) holds; rejects after ms naming what. */
  until(pred, what, ms = 15000) {
    if (pred(this.items)) return Promise.resolve(this.items);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (v) => { clearTimeout(timer); resolve(v); } };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; events: ${JSON.stringify(this.items)}`));
      }, ms);
      this.waiters.push(w);
    });
  }
  of(event, topic) { return this.items.filter((e) => e.event === event && e.topic === topic); }
}

/** Occupancy callbacks that record into events, tagged with the node's name. */
function recorder(events, node) {
  return {
    onOccupied: (topic) => events.push({ node, event: 'occupied', topic }),
    onVacated: (topic) => events.push({ node, event: 'vacated', topic }),
    onCount: (topic, n) => events.push({ node, event: 'count', topic, n }),
    onError: (err) => events.push({ node, event: 'error', message: err.message }),
  };
}

/**
 * What a test started, stopped after it in the reverse order (Redis last,
 * so that the nodes close with their bus up), even when a step failed.
 */
function cleanup(t) {
  const fns = [];
  t.after(async () => {
    while (fns.length > 0) await fns.pop()();
  });
  return (fn) => fns.push(fn);
}

/** Real Redis on a free loopback port, stopped last. */
async function redisFor(defer) {
  const redis = await startRedis();
  defer(() => redis.stop());
  return redis;
}

/** A server with an occupancy, closed (occupancy first) after the test. */
async function node(defer, { bus = null, occupancy = {}, events, name = 'a', hooks = null } = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, bus, onSubscribe: () => true });
  const occ = new Occupancy(server, { vacateDelay: 0, ...recorder(events, name), ...occupancy });
  defer(async () => {
    await occ.close();
    await server.close();
  });
  const { port } = await server.listen();
  if (bus !== null && server.bus.state !== 'up') await once(server.bus, 'up');
  return { server, occ, url: `ws://127.0.0.1:${port}/` };
}

/** The client library's own emitter: resolves at the first `event` whose arguments pass pred. */
function when(emitter, event, pred = () => true) {
  return new Promise((resolve) => {
    const fn = (...args) => {
      if (!pred(...args)) return;
      emitter.off(event, fn);
      resolve(args);
    };
    emitter.on(event, fn);
  });
}

/** A symphony.v2 client (the client library), open; closed after the test. */
async function client(defer, url) {
  const c = new SymphonyClient(url, { WebSocket });
  defer(() => c.close());
  c.on('error', () => {});
  await when(c, 'state', (state) => state === 'open');
  return c;
}

/** Subscribes c to topic and waits for the server's grant. */
async function subscribe(c, topic) {
  const sub = c.subscribe(topic);
  if (sub.state !== 'subscribed') await when(sub, 'subscribed');
  return sub;
}

/** Redis, and a node per name (its occupancy options: occupancy) with one client, all recording into one Events. */
async function cluster(t, names, occupancy = {}) {
  const defer = cleanup(t);
  const redis = await redisFor(defer);
  const events = new Events();
  const bus = { url: redis.url, backoff: { min: 50, max: 200 } };
  const nodes = [];
  for (const name of names) {
    const n = await node(defer, { bus, events, name, occupancy });
    nodes.push({ ...n, c: await client(defer, n.url) });
  }
  return { defer, redis, events, bus, nodes };
}

const counts = (events, topic) => events.of('count', topic).map((e) => e.n);

test('one node: occupied at the first subscriber, counts, vacated at the last; other topics not tracked', async (t) => {
  const defer = cleanup(t);
  const events = new Events();
  const a = await node(defer, { events, occupancy: { topics: (topic) => topic.startsWith('chat') } });
  const c1 = await client(defer, a.url);
  const c2 = await client(defer, a.url);
  await subscribe(c1, 'other');
  await subscribe(c1, 'chat');
  await events.until((e) => e.length >= 2, 'occupied and a count of 1');
  assert.deepEqual(events.items, [{ node: 'a', event: 'occupied', topic: 'chat' }, { node: 'a', event: 'count', topic: 'chat', n: 1 }]);
  // A second subscriber is not an edge: changed() (the protocol's call on
  // every subscribe) makes the count read again.
  await subscribe(c2, 'chat');
  a.occ.changed('chat');
  await events.until(() => counts(events, 'chat').includes(2), 'a count of 2');
  c2.subscriptions().find((s) => s.topic === 'chat').unsubscribe();
  await poll(() => a.server.subscribers('chat') === 1, { what: 'the unsubscribe applied' });
  a.occ.changed('chat');
  await events.until(() => counts(events, 'chat').length === 3, 'a count of 1 again');
  c1.close();
  await events.until(() => events.of('vacated', 'chat').length === 1, 'vacated');
  assert.deepEqual(counts(events, 'chat'), [1, 2, 1]);
  assert.equal(events.of('occupied', 'chat').length, 1);
  assert.equal(events.items.some((e) => e.topic === 'other'), false);
  assert.equal(events.items.at(-1).event, 'vacated');
  // Again from none: a new occupied.
  const c3 = await client(defer, a.url);
  await subscribe(c3, 'chat');
  await events.until(() => events.of('occupied', 'chat').length === 2, 'occupied again');
});

test('made while topics already have subscribers: they count from the start, and their end is heard', async (t) => {
  const defer = cleanup(t);
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, onSubscribe: () => true });
  defer(() => server.close());
  const { port } = await server.listen();
  const c = await client(defer, `ws://127.0.0.1:${port}/`);
  await subscribe(c, 'early');
  await poll(() => server.subscribers('early') === 1, { what: 'the subscribe applied' });
  const events = new Events();
  const occ = new Occupancy(server, { vacateDelay: 0, ...recorder(events, 'a') });
  defer(() => occ.close());
  await events.until(() => events.of('occupied', 'early').length === 1, 'occupied from what the server has');
  c.close();
  await events.until(() => events.of('vacated', 'early').length === 1, 'vacated');
  assert.deepEqual(events.items.map((e) => e.event), ['occupied', 'count', 'vacated']);
});

test('a subscribe and an unsubscribe in one tick: occupied, then vacated (both edges read in one turn, before any write)', async (t) => {
  // The JS thread reads the true and the false together (as when it is
  // late on a busy machine): the channel was occupied for a moment, and
  // its webhooks say so (hooks.test.js waited for a channel_vacated that
  // never came).
  const defer = cleanup(t);
  const events = new Events();
  const a = await node(defer, { events, occupancy: { vacateDelay: 50 } });
  const edges = new Events();
  a.server.on('subscription', (topic, active) => edges.push({ topic, active }));
  const opened = once(a.server, 'open');
  const ws = new WebSocket(a.url);
  defer(() => ws.close());
  const [id] = await opened;
  for (const topic of ['brief0', 'brief1', 'brief2']) {
    a.server.subscribe(id, topic);
    a.server.unsubscribe(id, topic);
  }
  await edges.until((e) => e.length === 6, 'the three topics\' true and false');
  for (const topic of ['brief0', 'brief1', 'brief2']) {
    await events.until(() => events.of('vacated', topic).length === 1, `${topic} vacated`);
    assert.deepEqual(events.items.filter((e) => e.topic === topic).map((e) => e.event), ['occupied', 'count', 'vacated'], topic);
  }
  await poll(() => a.occ.stats().topics === 0, { what: 'the topics dropped once written' });
});

test('bad options: a clear error naming the option, and nothing started', async (t) => {
  const defer = cleanup(t);
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1 });
  defer(() => server.close());
  const bad = [
    [{ onVacated: 'no' }, TypeError, /options\.onVacated/],
    [{ topics: /chat/ }, TypeError, /options\.topics/],
    [{ ttl: 10 }, RangeError, /options\.ttl/],
    [{ countInterval: -1 }, RangeError, /options\.countInterval/],
    [{ vacatedelay: 0 }, TypeError, /options\.vacatedelay.*not a known occupancy option/],
    ['fast', TypeError, /options/],
  ];
  for (const [options, type, message] of bad) {
    assert.throws(() => new Occupancy(server, options), (err) => err instanceof type && message.test(err.message), JSON.stringify(options));
  }
  assert.throws(() => new Occupancy({}, {}), (err) => err instanceof TypeError && /server/.test(err.message));
  assert.equal(server.listenerCount('subscription'), 0);
});

test('vacateDelay: a last subscriber that comes back within it sends nothing; close() sends the vacated at once', async (t) => {
  const defer = cleanup(t);
  const events = new Events();
  const a = await node(defer, { events, occupancy: { vacateDelay: 3600000 } });
  const edges = new Events();
  a.server.on('subscription', (topic, active) => edges.push({ topic, active }));
  const c = await client(defer, a.url);
  const sub = await subscribe(c, 'room');
  await events.until(() => events.of('occupied', 'room').length === 1, 'occupied');
  sub.unsubscribe();
  await edges.until((e) => e.some((x) => !x.active), 'the last subscriber gone');
  await subscribe(c, 'room');
  await edges.until((e) => e.filter((x) => x.active).length === 2, 'back');
  c.close();
  await edges.until((e) => e.filter((x) => !x.active).length === 2, 'gone again');
  await a.occ.close();
  assert.deepEqual(events.items.filter((e) => e.event !== 'count').map((e) => e.event), ['occupied', 'vacated']);
});

test('subscription_count: each change up to countSmall, then at most one per countInterval with the latest count', async (t) => {
  const defer = cleanup(t);
  const events = new Events();
  const a = await node(defer, { events, occupancy: { countSmall: 1, countInterval: 3000 } });
  const cs = [];
  for (let i = 0; i < 3; i++) cs.push(await client(defer, a.url));
  await subscribe(cs[0], 'big');
  await events.until(() => counts(events, 'big').length === 1, 'the first count');
  await subscribe(cs[1], 'big');
  a.occ.changed('big');
  await subscribe(cs[2], 'big');
  a.occ.changed('big');
  await events.until(() => counts(events, 'big').includes(3), 'the count held back, sent after the interval');
  // 2 was held back and 3 replaced it: one event at the interval's end.
  assert.deepEqual(counts(events, 'big'), [1, 3]);
});

test('two nodes over Redis: one occupied and one vacated per transition, whichever node decides', { timeout: 60000 }, async (t) => {
  const { redis, events, nodes: [a, b] } = await cluster(t, ['a', 'b']);
  const { c: ca } = a;
  const { c: cb } = b;

  // First on A, then on B: one occupied (A's), the count 2 (B's).
  const sa = await subscribe(ca, 'room');
  await events.until(() => events.of('occupied', 'room').length === 1, 'occupied');
  const sb = await subscribe(cb, 'room');
  await events.until(() => counts(events, 'room').includes(2), 'the cluster count 2');
  // Leave B then A: the count 1 (B's), one vacated (A's).
  sb.unsubscribe();
  await events.until(() => counts(events, 'room').length === 3, 'the count 1');
  sa.unsubscribe();
  await events.until(() => events.of('vacated', 'room').length === 1, 'vacated');
  assert.deepEqual(events.items.filter((e) => e.topic === 'room').map((e) => `${e.node} ${e.event} ${e.n ?? ''}`.trim()),
    ['a occupied', 'a count 1', 'b count 2', 'b count 1', 'a vacated']);

  // Both at the same moment, ten times: each time one occupied and one vacated.
  for (let i = 0; i < 10; i++) {
    const topic = `race.${i}`;
    const [x, y] = await Promise.all([subscribe(ca, topic), subscribe(cb, topic)]);
    await events.until(() => counts(events, topic).includes(2), `${topic}: the count 2`);
    x.unsubscribe();
    y.unsubscribe();
    await events.until(() => events.of('vacated', topic).length === 1, `${topic}: vacated`);
    assert.equal(events.of('occupied', topic).length, 1, `${topic}: one occupied`);
  }
  // Nothing is left in Redis but the live nodes (and the counts' throttle keys expire).
  await poll(async () => (await redis.call('KEYS', '*:occ')).length === 0, { what: 'the topics gone from Redis' });
  assert.deepEqual((await redis.call('ZRANGE', '{symphony:}:occ:nodes', '0', '-1')).sort(), [a.occ.node, b.occ.node].sort());
  assert.equal(events.items.filter((e) => e.event === 'error').length, 0);
});

test('a Redis Cluster (3 primaries): one occupied and one vacated per topic, hash-tagged ones too, every script within its slot', { timeout: 120000 }, async (t) => {
  const defer = cleanup(t);
  const redis = await startCluster({ primaries: 3, replicas: 0 });
  defer(() => redis.stop());
  const events = new Events();
  const bus = { url: redis.urls, backoff: { min: 50, max: 200 } };
  const [a, b] = [await node(defer, { bus, events, name: 'a' }), await node(defer, { bus, events, name: 'b' })];
  const [ca, cb] = [await client(defer, a.url), await client(defer, b.url)];
  const topics = ['room:1', 'room:2', 'room:3', '{tag}:a', '{tag}:b'];
  const subs = await Promise.all(topics.flatMap((topic) => [subscribe(ca, topic), subscribe(cb, topic)]));
  for (const topic of topics) await events.until(() => counts(events, topic).includes(2), `${topic}: the count 2`);
  for (const sub of subs) sub.unsubscribe();
  for (const topic of topics) {
    await events.until(() => events.of('vacated', topic).length === 1, `${topic}: vacated`);
    assert.equal(events.of('occupied', topic).length, 1, `${topic}: one occupied`);
  }
  assert.equal(events.items.filter((e) => e.event === 'error').length, 0);
});

test('the bus cut while transitions are written: each is still decided and sent once', { timeout: 60000 }, async (t) => {
  const { redis, events, nodes: [a, b] } = await cluster(t, ['a', 'b']);
  const { c: ca } = a;
  const { c: cb } = b;
  const ups = (n) => n.server.bus;
  for (let i = 0; i < 5; i++) {
    const topic = `cut.${i}`;
    const wasUp = [once(ups(a), 'up'), once(ups(b), 'up')];
    // The nodes' connections killed as their writes go: a reply may be lost
    // after Redis applied the write; the write sent again gets its answer.
    const subs = Promise.all([subscribe(ca, topic), subscribe(cb, topic)]);
    await redis.call('CLIENT', 'KILL', 'TYPE', 'normal');
    const [x, y] = await subs;
    await Promise.all(wasUp);
    await events.until(() => counts(events, topic).includes(2), `${topic}: the count 2`);
    const wasUpAgain = [once(ups(a), 'up'), once(ups(b), 'up')];
    x.unsubscribe();
    y.unsubscribe();
    await redis.call('CLIENT', 'KILL', 'TYPE', 'normal');
    await Promise.all(wasUpAgain);
    await events.until(() => events.of('vacated', topic).length === 1, `${topic}: vacated`);
    assert.equal(events.of('occupied', topic).length, 1, `${topic}: one occupied`);
  }
  assert.equal(events.items.filter((e) => e.event === 'error').length, 0);
  assert.equal(a.occ.stats().reborn + b.occ.stats().reborn, 0);
});

test('a node taken for dead while alive takes a new id and moves its counts in one write each: no transition', { timeout: 60000 }, async (t) => {
  const { redis, events, nodes: [a] } = await cluster(t, ['a'], { ttl: 1500 });
  const ca = a.c;
  await subscribe(ca, 'held');
  await events.until(() => events.of('occupied', 'held').length === 1, 'occupied');
  const first = a.occ.node;
  // As a claimer does with a node whose time is past: out of the live set.
  await redis.call('ZREM', '{symphony:}:occ:nodes', first);
  await poll(() => a.occ.node !== first, { what: 'a new id at the next renewal' });
  await poll(async () => (await redis.call('HGETALL', '{symphony:held}:occ')).join() === `${a.occ.node},1`,
    { what: 'the count under the new id only' });
  assert.equal(await redis.call('SISMEMBER', `{symphony:}:occ:node:${a.occ.node}`, 'held'), 1);
  assert.deepEqual(events.items.map((e) => e.event), ['occupied', 'count']);
  assert.equal(a.occ.stats().reborn, 1);
});

test('Redis restarted empty: the nodes write their topics again; occupied is sent again (at least once)', { timeout: 60000 }, async (t) => {
  const { redis, events, nodes: [a] } = await cluster(t, ['a'], { ttl: 1500 });
  const ca = a.c;
  await subscribe(ca, 'kept');
  await events.until(() => events.of('occupied', 'kept').length === 1, 'occupied');
  await redis.restart();
  await events.until(() => events.of('occupied', 'kept').length === 2, 'occupied again, from the rewrite');
  assert.deepEqual(await redis.call('HGETALL', '{symphony:kept}:occ'), [a.occ.node, '1']);
  assert.equal(events.of('vacated', 'kept').length, 0);
});

test('a node killed with the last subscribers: vacated once, by a live node, after its time', { timeout: 60000 }, async (t) => {
  const TTL = 1500;
  const { defer, redis, events, bus, nodes: [a] } = await cluster(t, ['a'], { ttl: TTL });
  const child = fork(__filename, [JSON.stringify({ bus, occupancy: { ttl: TTL, vacateDelay: 0 } })], {
    env: { ...process.env, OCC_NODE: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  defer(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  const fromChild = new Events();
  child.on('message', (m) => {
    if (m.type === 'occ') events.push({ node: 'k', event: m.event, topic: m.topic, n: m.n });
    else fromChild.push(m);
  });
  const [{ port }] = await fromChild.until((e) => e.some((m) => m.type === 'listening'), 'the child listening')
    .then((e) => e.filter((m) => m.type === 'listening'));
  await fromChild.until((e) => e.some((m) => m.type === 'bus' && m.state === 'up'), 'the child\'s bus up');
  const ck = await client(defer, `ws://127.0.0.1:${port}/`);
  await subscribe(ck, 'lonely');
  // A holds another topic, so that it has something of its own going on.
  await subscribe(a.c, 'mine');
  await events.until(() => events.of('occupied', 'lonely').length === 1 && events.of('occupied', 'mine').length === 1, 'both occupied');
  assert.equal(events.of('occupied', 'lonely')[0].node, 'k');

  child.kill('SIGKILL');
  await exited;
  await events.until(() => events.of('vacated', 'lonely').length === 1, 'the killed node\'s topic vacated', 20000);
  assert.equal(events.of('vacated', 'lonely')[0].node, 'a');
  // Its keys are gone, 'mine' stays occupied, and the dead node is forgotten.
  await poll(async () => (await redis.call('ZCARD', '{symphony:}:occ:dead')) === 0, { what: 'the dead node forgotten' });
  assert.deepEqual(await redis.call('KEYS', '*:occ'), ['{symphony:mine}:occ']);
  assert.deepEqual(await redis.call('ZRANGE', '{symphony:}:occ:nodes', '0', '-1'), [a.occ.node]);
  assert.equal(events.of('vacated', 'lonely').length, 1);
  assert.equal(events.of('vacated', 'mine').length, 0);
  assert.equal(a.occ.stats().claimed, 1);
});

test('the webhooks, through lib/pusher/webhooks.js: each event POSTed once to a real receiver, signed', { timeout: 60000 }, async (t) => {
  const defer = cleanup(t);
  const redis = await redisFor(defer);
  const got = new Events();
  const receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200).end();
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  defer(() => receiver.close());
  const app = pusherOptions({ apps: [{ id: '7', key: 'the-key', secret: 'the-secret',
    webhooks: [{ url: `http://127.0.0.1:${receiver.address().port}/hook`, event_types: ['channel_occupied', 'channel_vacated', 'subscription_count'] }] }] }).apps[0];
  const bus = { url: redis.url, backoff: { min: 50, max: 200 } };
  const nodes = [];
  for (const name of ['a', 'b']) {
    const hooks = new Webhooks(app, { fetch });
    defer(() => hooks.close());
    const sink = new Events(); // unused: the receiver is the witness
    const n = await node(defer, { bus, events: sink, name,
      occupancy: {
        onOccupied: (channel) => hooks.send({ name: 'channel_occupied', channel }),
        onVacated: (channel) => hooks.send({ name: 'channel_vacated', channel }),
        onCount: (channel, n) => hooks.send({ name: 'subscription_count', channel, subscription_count: n }),
      } });
    nodes.push({ ...n, hooks });
  }
  const ca = await client(defer, nodes[0].url);
  const cb = await client(defer, nodes[1].url);
  const sdk = new Pusher({ appId: '7', key: 'the-key', secret: 'the-secret' });
  const all = () => got.items.flatMap(({ headers, body }) => sdk.webhook({ headers, rawBody: body }).getEvents());
  await Promise.all([subscribe(ca, 'news'), subscribe(cb, 'news')]);
  // Both nodes' counts in Redis before either leaves (a grant comes before
  // its node's write: a's 1 and 0 could both land before b's 1, a second
  // occupied and vacated).
  await got.until(() => all().some((e) => e.name === 'subscription_count' && e.subscription_count === 2), 'the cluster count 2 at the receiver');
  ca.close();
  cb.close();
  await got.until(() => all().some((e) => e.name === 'channel_vacated'), 'channel_vacated at the receiver');
  // Every node done, every POST answered: what is at the receiver is all.
  for (const n of nodes) {
    await n.occ.close();
    await n.hooks.close();
  }
  for (const { headers, body } of got.items) assert.equal(sdk.webhook({ headers, rawBody: body }).isValid(), true);
  const events = all();
  assert.equal(events.filter((e) => e.name === 'channel_occupied').length, 1);
  assert.equal(events.filter((e) => e.name === 'channel_vacated').length, 1);
  assert.deepEqual(events.filter((e) => e.name === 'subscription_count').map((e) => e.subscription_count).sort(), [1, 1, 2]);
  assert.deepEqual(events.map((e) => e.channel), events.map(() => 'news'));
  for (const n of nodes) assert.equal(n.hooks.stats().failed, 0);
});
