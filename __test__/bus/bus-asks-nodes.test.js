'use strict';
// A symphony-ws/client subscription (symphony.v2, asked with
// client.subscribe) moves between two nodes joined by a real Redis (option
// `bus`, with history: Redis numbers every message, docs/bus.md "History
// across nodes"). The client is on node A, leaves (closed), and a new client
// on node B, given the old one's positions(), asks for the same topics with
// `since`: B's onSubscribe grants them, the subscribes recover, and what the
// client saw across both connections is every published message once, in
// order, per topic. A client publish through node B reaches a subscriber on
// node A; with a bus the publish resolves without a position (Redis numbers
// the message later). B's onSubscribe refusing a topic after a move gives
// that topic 'refused' (forbidden) while the other one recovers.
//
// The nodes run in child processes: this file, started with
// SY_ASKS_NODE=1, is one (its hooks are functions, which the JSON config of
// __test__/helpers/bus-node.js cannot carry). Every wait is for an event or
// a condition with a deadline, never for time to pass.

if (process.env.SY_ASKS_NODE === '1') {
  runNode();
  return;
}

const test = require('node:test');
const assert = require('node:assert/strict');
const { fork } = require('node:child_process');
const WebSocket = require('ws');
const { SymphonyClient, AskError } = require('../../client/symphony-client.cjs');
const { startRedis } = require('../helpers/redis');
const { waitFor } = require('../helpers/raw');

// ---------------------------------------------------------------------------
// The child: one symphony node with the hooks, driven over IPC.
//
//   <- { type: 'publish', id, topic, data }  server.publish  -> { id, subscribers }
//   <- { type: 'refuse', id, topics }         onSubscribe refuses these from now on -> { id }
//   <- { type: 'close', id }                  server.close(), then exit 0 -> { id }
//   -> { type: 'listening', port }, { type: 'bus', state }, { type: 'error', message }
//   -> { type: 'hook', hook: 'subscribe' | 'publish', topic, since, resubscribe, data }

function runNode() {
  const { Server } = require('../..');
  const config = JSON.parse(process.argv[2]);
  const send = (msg) => { if (process.connected) process.send(msg); };
  const refused = new Set();
  const server = new Server({
    host: '127.0.0.1',
    port: 0,
    threads: 1,
    history: config.history,
    bus: config.bus,
    onSubscribe: (id, topic, ctx) => {
      send({ type: 'hook', hook: 'subscribe', topic, since: ctx.since, resubscribe: ctx.resubscribe });
      return topic.startsWith('doc.') && !refused.has(topic);
    },
    onPublish: (id, topic, data) => {
      send({ type: 'hook', hook: 'publish', topic, data: String(data) });
      return topic.startsWith('doc.');
    },
  });
  server.on('error', (err) => send({ type: 'error', message: String(err && err.stack) }));
  server.bus.on('state', (state) => send({ type: 'bus', state }));
  let closing = false;
  process.on('message', async (msg) => {
    switch (msg.type) {
      case 'publish':
        send({ id: msg.id, subscribers: server.publish(msg.topic, msg.data) });
        break;
      case 'refuse':
        for (const t of msg.topics) refused.add(t);
        send({ id: msg.id });
        break;
      case 'close':
        closing = true;
        await server.close();
        if (process.connected) process.send({ id: msg.id }, () => process.exit(0));
        else process.exit(0);
        break;
      default:
        send({ type: 'error', message: `unknown message ${JSON.stringify(msg)}` });
    }
  });
  process.on('disconnect', () => { if (!closing) process.exit(0); });
  server.listen().then(({ port }) => {
    send({ type: 'listening', port });
    send({ type: 'bus', state: server.bus.state });
  }, (err) => {
    process.stderr.write(`${err.stack}\n`);
    process.exit(1);
  });
}

// ---------------------------------------------------------------------------
// The parent side.

const children = new Set();
process.on('exit', () => {
  for (const c of children) {
    try { process.kill(c.pid, 'SIGKILL'); } catch { /* gone */ }
  }
});

/** Starts a node (this file as a child); resolves once it listens and its bus is up. */
async function startNode(name, redis) {
  const config = { history: { size: 1000, ttl: 300 }, bus: { url: redis.url, backoff: { min: 50, max: 200 } } };
  const env = { ...process.env, SY_ASKS_NODE: '1' };
  delete env.NODE_TEST_CONTEXT;
  const child = fork(__filename, [JSON.stringify(config)], {
    env, execArgv: [], stdio: ['ignore', 'pipe', 'pipe', 'ipc'], serialization: 'json',
  });
  children.add(child);
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const node = {
    name, child, port: null, url: null, bus: [], hooks: [], errors: [], exit: null,
    output: () => out,
  };
  const waiting = new Map();
  let seq = 0;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => {
    node.exit = { code, signal };
    children.delete(child);
    for (const w of waiting.values()) w.reject(new Error(`node ${name} exited ${JSON.stringify(node.exit)}:\n${out}`));
    waiting.clear();
    resolve(node.exit);
  }));
  child.on('message', (msg) => {
    if (msg.id !== undefined && waiting.has(msg.id)) {
      const w = waiting.get(msg.id);
      waiting.delete(msg.id);
      w.resolve(msg);
    } else if (msg.type === 'listening') {
      node.port = msg.port;
      node.url = `ws://127.0.0.1:${msg.port}/`;
    } else if (msg.type === 'bus') {
      node.bus.push(msg.state);
    } else if (msg.type === 'hook') {
      node.hooks.push(msg);
    } else if (msg.type === 'error') {
      node.errors.push(msg.message);
    }
  });
  const request = (msg) => new Promise((resolve, reject) => {
    if (node.exit) { reject(new Error(`node ${name} has exited`)); return; }
    const id = ++seq;
    waiting.set(id, { resolve, reject });
    child.send({ ...msg, id });
  });
  node.publish = async (topic, data) => (await request({ type: 'publish', topic, data })).subscribers;
  node.refuse = (topics) => request({ type: 'refuse', topics });
  /** The onSubscribe calls for topic so far. */
  node.subscribeHooks = (topic) => node.hooks.filter((h) => h.hook === 'subscribe' && h.topic === topic);
  node.close = async () => {
    if (node.exit) return;
    try {
      await Promise.race([request({ type: 'close' }), exited]);
      await waitFor(() => node.exit, 10000, `node ${name} to exit`);
    } finally {
      if (!node.exit) {
        child.kill('SIGKILL');
        await exited;
      }
    }
  };
  await waitFor(() => node.port !== null || node.exit, 10000, `node ${name} to listen`);
  if (node.exit) throw new Error(`node ${name} exited before listening:\n${out}`);
  await waitFor(() => node.bus.includes('up'), 10000, `node ${name}'s bus to be up (states: ${node.bus})`);
  return node;
}

let redis;
let rc; // a RESP connection for the test's own reads of Redis
let A;
let B;
const clients = new Set();

test.before(async () => {
  redis = await startRedis();
  rc = await redis.client({ resp3: false });
  A = await startNode('A', redis);
  B = await startNode('B', redis);
});

test.afterEach(() => {
  for (const c of clients) c.close();
  clients.clear();
});

test.after(async () => {
  for (const c of clients) c.close();
  const nodes = [A, B].filter(Boolean);
  await Promise.allSettled(nodes.map((n) => n.close()));
  if (rc) rc.close();
  if (redis) await redis.stop();
  for (const n of nodes) assert.deepEqual(n.errors, [], `node ${n.name} reported no error`);
});

/** Redis' position of topic: { epoch, offset } (offset 0 before any message). */
async function redisPosition(topic) {
  const [e, o] = await rc.call('HMGET', `{symphony:${topic}}:meta`, 'e', 'o');
  return { epoch: e, offset: o === null ? 0 : Number(o) };
}

const published = {}; // topic -> payloads, in Redis' order (each publish confirmed before the next)

/**
 * Publishes payload on topic from node and waits until Redis has numbered
 * it: the next publish, from either node, comes after it in Redis' order,
 * so `published[topic]` is the order every node delivers.
 */
async function publish(node, topic, payload) {
  const list = (published[topic] ||= []);
  list.push(payload);
  await node.publish(topic, payload);
  await waitFor(async () => (await redisPosition(topic)).offset === list.length, 10000,
    `Redis to number ${payload} (${topic} offset ${list.length})`);
}

/** Publishes messages from .. to - 1 on each topic, alternating between nodes A and B. */
async function publishRound(topics, from, to) {
  for (let i = from; i < to; i++) {
    const node = i % 2 === 0 ? A : B;
    for (const topic of topics) await publish(node, topic, `${topic}#${i}@${node.name}`);
  }
}

/** A client library client of url; every message it gets is kept in c.got. */
function client(url, options = {}) {
  const c = new SymphonyClient(url, { WebSocket, backoff: { min: 5, max: 50 }, ...options });
  clients.add(c);
  c.got = [];
  c.on('message', (topic, data, info) => c.got.push({ topic, payload: String(data), offset: info.offset, epoch: info.epoch }));
  return c;
}

/**
 * client.subscribe(topic, options) with its events recorded: messages go to
 * log (shared across connections: what the user saw of topic), each with
 * the connection's name.
 */
function subscribe(c, name, topic, log, options) {
  const sub = c.subscribe(topic, options);
  sub.ev = { subscribed: [], refused: [], unsubscribed: [] };
  sub.on('message', (data, info) => log.push({ payload: String(data), offset: info.offset, epoch: info.epoch, on: name }));
  sub.on('subscribed', (info) => sub.ev.subscribed.push(info));
  sub.on('refused', (err) => sub.ev.refused.push(err));
  sub.on('unsubscribed', (info) => sub.ev.unsubscribed.push(info));
  return sub;
}

/** Asserts that what log holds is published[topic] (its first n), each once, in order, at offsets 1.., in epoch. */
function assertExactly(log, topic, epoch, what, n = published[topic].length) {
  const want = published[topic].slice(0, n);
  assert.deepEqual(log.map((m) => m.payload), want, `${what}: every message of ${topic} once, in order`);
  assert.deepEqual(log.map((m) => m.offset), want.map((_, i) => i + 1), `${what}: the offsets of ${topic}`);
  assert.deepEqual([...new Set(log.map((m) => m.epoch))], [epoch], `${what}: one epoch (Redis') for ${topic}`);
}

/** The position a client library keeps for topic after log's last message. */
const lastOf = (log) => ({ epoch: log.at(-1).epoch, offset: log.at(-1).offset });

test('a client subscription moves from node A to node B and back, then to a B that refuses one topic: every message once, in order', { timeout: 30000 }, async () => {
  const topics = ['doc.1', 'doc.2'];
  const seen = { 'doc.1': [], 'doc.2': [] };
  const byNode = (name) => (list) => list.filter((m) => m.on === name);

  // 1. On node A: onSubscribe grants doc.*; messages from both nodes.
  const c1 = client(A.url);
  const s1 = Object.fromEntries(topics.map((t) => [t, subscribe(c1, 'c1@A', t, seen[t])]));
  await waitFor(() => topics.every((t) => s1[t].state === 'subscribed'), 10000, 'c1 subscribed on A');
  for (const t of topics) {
    assert.deepEqual(A.subscribeHooks(t).map((h) => [h.since, h.resubscribe]), [[null, false]], `A's onSubscribe asked for ${t}`);
    assert.deepEqual(B.subscribeHooks(t), [], `B not asked for ${t}`);
  }
  await publishRound(topics, 0, 6);
  await waitFor(() => topics.every((t) => seen[t].length >= 6), 10000, 'c1 got 6 messages per topic on A');
  const epoch = {};
  for (const t of topics) {
    epoch[t] = (await redisPosition(t)).epoch;
    assertExactly(seen[t], t, epoch[t], 'c1 on A');
  }

  // 2. The client leaves A; while it is away both nodes publish; it comes
  // back on B from its positions: recovered, the missed ones replayed, then live.
  c1.close();
  const at1 = c1.positions();
  assert.deepEqual(at1, Object.fromEntries(topics.map((t) => [t, { epoch: epoch[t], offset: 6 }])), 'c1 positions on leaving');
  await publishRound(topics, 6, 12);
  const c2 = client(B.url, { positions: at1 });
  const s2 = Object.fromEntries(topics.map((t) => [t, subscribe(c2, 'c2@B', t, seen[t], { since: at1[t] })]));
  await waitFor(() => topics.every((t) => s2[t].ev.subscribed.length >= 1), 10000, 'c2 subscribed on B');
  for (const t of topics) {
    const info = s2[t].ev.subscribed[0];
    assert.equal(info.recovered, true, `${t} recovered on B: ${JSON.stringify(info)}`);
    assert.equal(info.epoch, epoch[t], `${t}: the same epoch on B`);
    assert.equal(info.since, 6, `${t}: resumed after offset 6`);
    assert.deepEqual(B.subscribeHooks(t).map((h) => h.since), [{ epoch: epoch[t], offset: 6 }], `B's onSubscribe was given ${t}'s since`);
  }
  await waitFor(() => topics.every((t) => seen[t].length >= 12), 10000, 'c2 got the 6 missed messages per topic');
  await publishRound(topics, 12, 18);
  await waitFor(() => topics.every((t) => seen[t].length >= 18), 10000, 'c2 got 6 live messages per topic on B');
  for (const t of topics) {
    assertExactly(seen[t], t, epoch[t], 'c1 on A then c2 on B');
    assert.equal(byNode('c2@B')(seen[t]).length, 12, `${t}: 6 replayed and 6 live on B`);
    assert.equal(s2[t].ev.subscribed.length, 1, `${t}: one subscribed event on B`);
  }

  // 3. Back to A (a second move), recovered there too.
  c2.close();
  const at2 = c2.positions();
  assert.deepEqual(at2, Object.fromEntries(topics.map((t) => [t, lastOf(seen[t])])), 'c2 positions on leaving');
  await publishRound(topics, 18, 22);
  const c3 = client(A.url, { positions: at2 });
  const s3 = Object.fromEntries(topics.map((t) => [t, subscribe(c3, 'c3@A', t, seen[t], { since: at2[t] })]));
  await waitFor(() => topics.every((t) => s3[t].ev.subscribed.length >= 1), 10000, 'c3 subscribed on A');
  for (const t of topics) assert.equal(s3[t].ev.subscribed[0].recovered, true, `${t} recovered back on A`);
  await waitFor(() => topics.every((t) => seen[t].length >= 22), 10000, 'c3 got the 4 missed messages per topic');
  for (const t of topics) assertExactly(seen[t], t, epoch[t], 'A, B, then A again');

  // 4. B refuses doc.2 from now on; the client moves to B again: doc.1
  // recovers (what it missed, then live), doc.2 is refused 'forbidden'.
  await B.refuse(['doc.2']);
  c3.close();
  const at3 = c3.positions();
  await publishRound(topics, 22, 26);
  const doc2Before = seen['doc.2'].length;
  const c4 = client(B.url, { positions: at3 });
  const s4 = Object.fromEntries(topics.map((t) => [t, subscribe(c4, 'c4@B', t, seen[t], { since: at3[t] })]));
  await waitFor(() => s4['doc.1'].ev.subscribed.length >= 1 && s4['doc.2'].ev.refused.length >= 1, 10000,
    'c4: doc.1 subscribed and doc.2 refused on B');
  const info = s4['doc.1'].ev.subscribed[0];
  assert.equal(info.recovered, true, `doc.1 recovered on B: ${JSON.stringify(info)}`);
  assert.equal(info.since, 22);
  const err = s4['doc.2'].ev.refused[0];
  assert.ok(err instanceof AskError, `an AskError: ${err}`);
  assert.equal(err.code, 'forbidden');
  assert.equal(s4['doc.2'].state, 'unsubscribed', 'a refusal is final');
  assert.deepEqual(s4['doc.2'].ev.subscribed, [], 'doc.2 never subscribed on B');
  assert.deepEqual(c4.subscriptions(), [s4['doc.1']]);
  assert.deepEqual(B.subscribeHooks('doc.2').map((h) => h.since), [{ epoch: epoch['doc.2'], offset: 6 }, at3['doc.2']],
    "B's onSubscribe was asked for doc.2 again (and refused it)");
  // Live on doc.1 after doc.2 messages from both nodes: c4 gets doc.1's and none of doc.2's.
  await publish(A, 'doc.2', 'doc.2#26@A');
  await publish(B, 'doc.2', 'doc.2#27@B');
  await publish(A, 'doc.1', 'doc.1#26@A');
  await publish(B, 'doc.1', 'doc.1#27@B');
  await waitFor(() => seen['doc.1'].length >= 28, 10000, 'c4 got doc.1 (4 missed, 2 live) on B');
  assertExactly(seen['doc.1'], 'doc.1', epoch['doc.1'], 'doc.1 across A, B, A, B');
  assert.equal(seen['doc.2'].length, doc2Before, 'no doc.2 message after the refusal');
  assertExactly(seen['doc.2'], 'doc.2', epoch['doc.2'], 'doc.2 up to the refusal', 22);
  assert.deepEqual(c4.got.filter((m) => m.topic !== 'doc.1'), [], 'c4 got nothing but doc.1');
  assert.deepEqual(Object.keys(c4.positions()).sort(), ['doc.1', 'doc.2'], 'c4 still keeps the positions it was given');
  assert.equal(c4.positions()['doc.1'].offset, 28);
});

test('a client publish through node B (its onPublish decides) reaches a subscriber on node A, once, in Redis\' order', { timeout: 30000 }, async () => {
  const topic = 'doc.pub';
  const onA = [];
  const w = client(A.url);
  const sw = subscribe(w, 'w@A', topic, onA);
  await waitFor(() => sw.state === 'subscribed', 10000, 'the subscriber on A');
  // Messages from both nodes first, so the client's publishes are not the topic's first.
  await publishRound([topic], 0, 2);
  const p = client(B.url);
  await waitFor(() => p.state === 'open', 10000, 'the publisher open on B');
  for (let i = 0; i < 3; i++) {
    const payload = `${topic}#client${i}@B`;
    published[topic].push(payload);
    const r = await p.publish(topic, payload);
    assert.equal(typeof r, 'object', `publish ${i} resolved`);
    // Numbered by Redis before the next one (from node A) is published.
    await waitFor(async () => (await redisPosition(topic)).offset === published[topic].length, 10000, `Redis to number ${payload}`);
    assert.deepEqual(B.hooks.filter((h) => h.hook === 'publish' && h.data === payload).map((h) => h.topic), [topic], "B's onPublish asked once");
    await publish(A, topic, `${topic}#${i + 2}@A`);
  }
  await waitFor(() => onA.length >= published[topic].length, 10000, 'every message on A');
  assertExactly(onA, topic, (await redisPosition(topic)).epoch, 'the subscriber on A');
  assert.equal(A.hooks.filter((h) => h.hook === 'publish').length, 0, "A's onPublish was not asked");
  // B's onPublish refuses what is not doc.*: the publish rejects, nothing reaches A.
  await assert.rejects(p.publish('other', 'no'), (err) => err instanceof AskError && err.code === 'forbidden');
  assert.deepEqual(w.got.filter((m) => m.topic !== topic), []);
});

test('with a bus, a client publish through node B resolves without a position (Redis numbers it later); A gets it once, in order', {
  timeout: 30000,
}, async () => {
  const topic = 'doc.pos';
  const onA = [];
  const w = client(A.url);
  const sw = subscribe(w, 'w@A', topic, onA);
  await waitFor(() => sw.state === 'subscribed', 10000, 'the subscriber on A');
  await publishRound([topic], 0, 2);
  await waitFor(() => onA.length >= 2, 10000, 'the first 2 on A');
  const p = client(B.url);
  await waitFor(() => p.state === 'open', 10000, 'the publisher open on B');
  const resolved = [];
  const publishOne = async (payload) => {
    published[topic].push(payload);
    resolved.push({ payload, ...(await p.publish(topic, payload)) });
    await waitFor(() => onA.some((m) => m.payload === payload), 10000, `${payload} on A`);
  };
  // The publisher not subscribed on B, then subscribed there (B holds the topic).
  for (let i = 0; i < 3; i++) await publishOne(`${topic}#client${i}@B`);
  const own = [];
  const sp = subscribe(p, 'p@B', topic, own);
  await waitFor(() => sp.state === 'subscribed', 10000, 'the publisher subscribed on B');
  for (let i = 3; i < 6; i++) await publishOne(`${topic}#client${i}@B`);
  // lib/asks.js answers a publish with the position only where the node
  // numbers the message itself (no bus): a position read right after
  // publish() is not the message's when Redis numbers it (docs/bus.md).
  assert.deepEqual(resolved, resolved.map(({ payload }) => ({ payload })), 'no position claimed');
  const offsets = resolved.map(({ payload }) => onA.find((m) => m.payload === payload).offset);
  assert.deepEqual(offsets, [...offsets].sort((x, y) => x - y), 'A got them in order');
  assert.equal(new Set(offsets).size, offsets.length, 'each at an offset of its own');
});
