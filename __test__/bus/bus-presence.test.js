'use strict';
// Presence and subscriber counts across nodes (docs/bus.md, "Presence and
// counts across nodes"): who is subscribed to a topic, on every node, kept
// in Redis per topic and node; join and leave events on every node; a dead
// node's entries expire; server.bus.subscribers() asks every node.

const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { startRedis, startCluster, poll } = require('../helpers/redis');
const { startNode, closeAll, connectClient } = require('../helpers/bus-nodes');

test.after(closeAll);

const TTL = 1500; // ms: a dead node's entries go within TTL + TTL / 3

async function nodes(n, url, extra = {}) {
  const config = { presence: { ttl: TTL }, bus: { url, backoff: { min: 50, max: 200 } }, ...extra };
  const out = [];
  for (let i = 0; i < n; i++) out.push(await startNode(config));
  for (const node of out) await node.waitBus('up', 15000);
  return out;
}

/** A ws client of port subscribed to topics at its upgrade, with presence info (JSON-able). */
function member(port, topics, info) {
  const q = encodeURIComponent(topics.join(','));
  const url = `ws://127.0.0.1:${port}/?topics=${q}&presence=${encodeURIComponent(JSON.stringify(info))}`;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

const closeWs = (ws) => new Promise((resolve) => {
  if (ws.readyState === WebSocket.CLOSED) resolve();
  else {
    ws.once('close', resolve);
    ws.close();
  }
});

const users = (entries) => entries.map((e) => e.info?.user).sort();
const events = (node, event, topic) => node.presenceEvents.filter((e) => e.event === event && e.topic === topic);

test('three nodes: every node lists every member with its info, and hears every join and leave', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const list = await nodes(3, redis.url);
  const ws = [];
  for (const [i, node] of list.entries()) ws.push(await member(node.port, ['room'], { user: `u${i}` }));
  for (const node of list) {
    await poll(async () => events(node, 'join', 'room').length === 3, { what: '3 joins on every node' });
    assert.deepEqual(users(events(node, 'join', 'room').map((e) => e.entry)), ['u0', 'u1', 'u2']);
    assert.deepEqual(users(await node.presence('room')), ['u0', 'u1', 'u2']);
  }
  // The keys sit in the topic's slot by history's rule: {channel} without
  // a hash tag, the channel itself with one (or with a '}').
  const tagged = await member(list[0].port, ['room:{7}', 'odd}'], { user: 't' });
  await poll(async () => (await list[1].presence('room:{7}')).length === 1 && (await list[1].presence('odd}')).length === 1,
    { what: 'the tagged topics listed' });
  const keys = (await redis.call('KEYS', '*:presence')).sort();
  assert.deepEqual(keys, ['symphony:odd}:presence', 'symphony:room:{7}:presence', '{symphony:room}:presence']);
  await closeWs(tagged);
  await poll(async () => (await redis.call('KEYS', '*:presence')).length === 1, { what: 'the tagged topics gone' });
  // Each entry names its node and its connection there.
  const entries = await list[0].presence('room');
  for (const [i, node] of list.entries()) {
    const e = entries.find((x) => x.info.user === `u${i}`);
    assert.equal(e.id, node.opened[0]);
    assert.equal(list.filter((n) => n !== node).every((n) => n.presenceEvents.some((x) => x.entry.node === e.node)), true);
  }
  assert.equal(new Set(entries.map((e) => e.node)).size, 3);

  // A client that closes leaves, on every node (reason 'left').
  await closeWs(ws[1]);
  for (const node of list) {
    await poll(async () => events(node, 'leave', 'room').length === 1, { what: 'a leave on every node' });
    const [leave] = events(node, 'leave', 'room');
    assert.equal(leave.entry.info.user, 'u1');
    assert.equal(leave.reason, 'left');
    assert.deepEqual(users(await node.presence('room')), ['u0', 'u2']);
  }

  // server.unsubscribe leaves; server.subscribe joins with the connection's info.
  const conn = list[2].opened[0];
  assert.equal(await list[2].unsubscribe(conn, 'room'), true);
  await poll(async () => events(list[0], 'leave', 'room').length === 2, { what: 'unsubscribe heard' });
  assert.deepEqual(users(await list[0].presence('room')), ['u0']);
  assert.equal(await list[2].subscribe(conn, 'room'), true);
  assert.equal(await list[2].subscribe(conn, 'other'), true);
  // Two subscriptions, maybe two batches: each is listed once its join is heard.
  await poll(async () => events(list[0], 'join', 'room').length === 4 && events(list[0], 'join', 'other').length === 1,
    { what: 'subscribes heard' });
  assert.deepEqual(users(await list[0].presence('room')), ['u0', 'u2']);
  assert.deepEqual(users(await list[0].presence('other')), ['u2']);

  // A node that closes takes its entries with it, and says so.
  const before = events(list[1], 'leave', 'room').length;
  await list[0].close();
  await poll(async () => events(list[1], 'leave', 'room').length === before + 1, { what: 'the closed node\'s leave' });
  assert.equal(events(list[1], 'leave', 'room').at(-1).entry.info.user, 'u0');
  assert.deepEqual(users(await list[1].presence('room')), ['u2']);
  for (const w of ws) await closeWs(w);
});

test('a node killed with kill -9: its entries expire, and the live nodes are told (reason expired)', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a, b, c] = await nodes(3, redis.url);
  const wa = await member(a.port, ['room'], { user: 'a' });
  const wc = await member(c.port, ['room', 'lobby'], { user: 'c' });
  const wb = [];
  for (let i = 0; i < 5; i++) wb.push(await member(b.port, ['room', 'lobby'], { user: `b${i}` }));
  await poll(async () => (await a.presence('room')).length === 7, { what: '7 in room' });
  // b's entries count until a time (Redis' clock) at most ttl ahead: they
  // cannot outlive b by more than ttl (plus a renewal period, ttl / 3, for
  // another node to notice).
  const bNode = (await a.presence('room')).find((e) => e.info.user === 'b0').node;
  const until = Number(await redis.call('ZSCORE', '{symphony:room}:presence', bNode));
  const [sec, usec] = await redis.call('TIME');
  const left = until - (Number(sec) * 1000 + Math.floor(Number(usec) / 1000));
  assert.ok(left > 0 && left <= TTL, `b's entries count for ${left} ms more (ttl ${TTL})`);
  const killedAt = Date.now();
  await b.kill9();
  // Within TTL + TTL / 3 another node's renewal removes b's entries and
  // tells every node; nobody read the list meanwhile.
  for (const node of [a, c]) {
    await poll(async () => events(node, 'leave', 'room').length === 5 && events(node, 'leave', 'lobby').length === 5,
      { timeoutMs: 15000, what: 'b\'s 10 entries expired' });
    for (const e of [...events(node, 'leave', 'room'), ...events(node, 'leave', 'lobby')]) {
      assert.equal(e.reason, 'expired');
      assert.match(e.entry.info.user, /^b\d$/);
    }
  }
  t.diagnostic(`b's entries expired and were announced ${Date.now() - killedAt} ms after kill -9 (ttl ${TTL})`);
  assert.deepEqual(users(await a.presence('room')), ['a', 'c']);
  assert.deepEqual(users(await c.presence('lobby')), ['c']);
  // Nothing of b's left in Redis: the sorted sets name a and c only.
  const keys = (await redis.call('KEYS', '*presence*')).sort();
  assert.deepEqual(keys.filter((k) => !k.endsWith(':presence')).length, 3); // a's room, c's room and lobby
  for (const w of [wa, wc]) await closeWs(w);
});

test('subscriber counts across nodes: every node answers; a node that does not answer fails the count', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  // Counts do not need presence.
  const list = await nodes(3, redis.url, { presence: false });
  const [a, b, c] = list;
  const clients = [];
  for (let i = 0; i < 2; i++) clients.push(await connectClient(a.port, ['feed']));
  for (let i = 0; i < 3; i++) clients.push(await connectClient(b.port, ['feed', 'other']));
  for (const node of list) {
    assert.equal(await node.subscribersAll('feed'), 5);
    assert.equal(await node.subscribersAll('other'), 3);
    assert.equal(await node.subscribersAll('nobody'), 0);
  }
  await clients[0].closeAndWait();
  await clients[4].closeAndWait();
  await poll(async () => (await c.subscribersAll('feed')) === 3, { what: 'counts follow closes' });
  assert.equal(await c.subscribersAll('other'), 2);

  // A node that is alive for Redis but does not answer (stopped): the
  // count fails with ERR_BUS_TIMEOUT rather than say a wrong number.
  process.kill(b.pid, 'SIGSTOP');
  try {
    await assert.rejects(a.subscribersAll('feed', 300), (err) => err.code === 'ERR_BUS_TIMEOUT' && /2 of 3 nodes/.test(err.message));
  } finally {
    process.kill(b.pid, 'SIGCONT');
  }
  assert.equal(await a.subscribersAll('feed'), 3);

  // Strangers on the control channel: garbage, a reply to nobody, a
  // request with a bad shape. Ignored; every node goes on answering.
  const ctl = 'symphony:\xffnodes';
  for (const m of ['not json', '{"t":"count","to":"x","req":"y","node":"z","n":5}', '{"t":"count?"}', '[1,2]', 'null',
    '{"t":"presence","topic":"feed","node":7}']) {
    await redis.cli('SPUBLISH', ctl, m);
  }
  for (const node of list) assert.equal(await node.subscribersAll('feed'), 3);
  for (const node of list) assert.deepEqual(node.errors, []);

  // Another program broke a topic's presence key (the wrong type): a read
  // rejects with Redis' own words (ERR_BUS_REPLY); the node goes on.
  await redis.call('SET', '{symphony:broken}:presence', 'x');
  await a.presenceTopic('broken', true);
  await assert.rejects(a.presence('broken'), (err) => err.code === 'ERR_BUS_REPLY' && /WRONGTYPE/.test(err.message));
  // Presence is off on these nodes: asking is a mistake, said.
  await assert.rejects(a.presence('feed'), (err) => err.code === 'ERR_SYMPHONY_NO_PRESENCE');
  assert.equal(await a.subscribersAll('feed'), 3);
  for (const cl of clients) await cl.closeAndWait();
});

test('Redis restarted without persistence: each node writes its entries again; counts and presence fail while it is down', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const [a, b] = await nodes(2, redis.url);
  const wa = await member(a.port, ['room'], { user: 'a' });
  const wb = await member(b.port, ['room'], { user: 'b' });
  // Many at once: written in several script calls (28 entries each).
  const many = await Promise.all(Array.from({ length: 60 }, (_, i) => member(b.port, ['room'], { user: `m${i}` })));
  await poll(async () => (await a.presence('room')).length === 62, { what: '62 in room' });
  await redis.kill9();
  await a.waitBus('down', 10000);
  await assert.rejects(a.presence('room'), (err) => err.code === 'ERR_BUS_DOWN');
  await assert.rejects(a.subscribersAll('room'), (err) => err.code === 'ERR_BUS_DOWN');
  const from = a.busEvents.length;
  await redis.restart();
  await a.waitBus('up', 15000, from);
  // The renewal finds Redis without this node's entries and writes them whole.
  await poll(async () => (await b.presence('room')).length === 62, { timeoutMs: 15000, what: 'entries written again' });
  const all = users(await a.presence('room'));
  assert.deepEqual(all.slice(0, 2), ['a', 'b']);
  assert.equal(new Set(all).size, 62);
  assert.equal(await b.subscribersAll('room'), 62);
  for (const w of [wa, wb, ...many]) await closeWs(w);
  await poll(async () => (await a.presence('room')).length === 0, { what: 'all left' });
});

test('a Redis Cluster: presence and counts across 3 nodes, a node killed with kill -9', { timeout: 120000 }, async (t) => {
  const cluster = await startCluster({ t });
  const list = await nodes(3, cluster.urls);
  const topics = ['room:1', 'room:2', '{tag}:a', '{tag}:b'];
  const ws = [];
  for (const [i, node] of list.entries()) ws.push(await member(node.port, topics, { user: `u${i}` }));
  for (const topic of topics) {
    await poll(async () => (await list[0].presence(topic)).length === 3, { what: `3 in ${topic}` });
    for (const node of list) {
      assert.deepEqual(users(await node.presence(topic)), ['u0', 'u1', 'u2']);
      assert.equal(await node.subscribersAll(topic), 3);
      await poll(async () => events(node, 'join', topic).length === 3, { what: `3 joins of ${topic}` });
    }
  }
  await list[1].kill9();
  for (const topic of topics) {
    for (const node of [list[0], list[2]]) {
      await poll(async () => events(node, 'leave', topic).length === 1, { timeoutMs: 15000, what: `u1 expired from ${topic}` });
      assert.equal(events(node, 'leave', topic)[0].reason, 'expired');
    }
    assert.deepEqual(users(await list[2].presence(topic)), ['u0', 'u2']);
    assert.equal(await list[0].subscribersAll(topic), 2);
  }
  for (const w of ws) await closeWs(w);
});

test('churn across renewals: every join and every leave is announced once', { timeout: 90000 }, async (t) => {
  const redis = await startRedis({ t });
  // A short ttl: renewals (every ttl / 3) run while joins and leaves are written.
  const [a, b] = await nodes(2, redis.url, { presence: { ttl: 1000 } });
  const open = []; // [ws, user]
  const waited = new Set(); // users whose join was awaited
  const heard = (node, topic) => new Set(events(node, 'join', topic).map((e) => e.entry.info.user));
  for (let round = 0; round < 12; round++) {
    // Redis holds writes a moment: renewals and writes queue up behind it
    // (a renewal's answer must be compared with what was written before it).
    await redis.call('CLIENT', 'PAUSE', '400', 'WRITE');
    const users = Array.from({ length: 50 }, (_, i) => `x${round}-${i}`);
    const batch = await Promise.all(users.map((u, i) => member(b.port, ['room', `r${i % 3}`], { user: u })));
    open.push(...batch.map((ws, i) => [ws, users[i]]));
    // Half of the open ones go while the next batch comes (a join and a
    // leave in one batch of a node cancel out: neither is announced).
    for (const [ws] of open.splice(0, Math.floor(open.length / 2))) ws.close();
    // Let a renewal fall in between: wait until b has heard the join of
    // every member still open.
    await poll(async () => {
      const h = heard(b, 'room');
      return open.every(([, u]) => h.has(u));
    }, { what: `round ${round}'s joins heard` });
    for (const [, u] of open) waited.add(u);
  }
  for (const [ws] of open) ws.close();
  // Every leave written (no key left), then announced: joins and leaves pair up.
  await poll(async () => (await redis.call('KEYS', '*presence*')).length === 0, { timeoutMs: 20000, what: 'every entry gone from Redis' });
  for (const node of [a, b]) {
    for (const topic of ['room', 'r0', 'r1', 'r2']) {
      await poll(async () => events(node, 'join', topic).length === events(node, 'leave', topic).length,
        { timeoutMs: 20000, what: `every leave of ${topic} heard (joins ${events(node, 'join', topic).length}, leaves ${events(node, 'leave', topic).length})` });
      const key = (e) => `${e.entry.node}/${e.entry.id}`;
      const joins = events(node, 'join', topic).map(key);
      const leaves = events(node, 'leave', topic).map(key);
      assert.equal(new Set(joins).size, joins.length, `${topic}: a join announced twice`);
      assert.equal(new Set(leaves).size, leaves.length, `${topic}: a leave announced twice`);
      assert.deepEqual([...leaves].sort(), [...joins].sort());
      for (const e of events(node, 'leave', topic)) assert.equal(e.reason, 'left');
    }
    // Every member that stayed open through a round was announced, on both nodes.
    const h = heard(node, 'room');
    for (const u of waited) assert.ok(h.has(u), `${u}'s join heard`);
  }
  assert.deepEqual(await a.presence('room'), []);
  assert.deepEqual(await redis.call('KEYS', '*presence*'), []);
});
