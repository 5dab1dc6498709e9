'use strict';
// The bus behind Redis Sentinel (docs/bus.md, "Redis Sentinel"): the bus asks
// the sentinels where the primary named `name` is, checks it with ROLE, and
// follows a failover (a data connection dropping, or +switch-master). Real
// processes on free loopback ports: a primary, a replica
// (redis-server --replicaof) and three sentinels (redis-server --sentinel,
// down-after-milliseconds 1000), helpers/sentinel.js; symphony nodes are
// child processes (helpers/bus-node.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const { Server } = require('../..');
const { poll, numSub, respClient } = require('../helpers/redis');
const { startSentinels } = require('../helpers/sentinel');
const { startNode, connectClient, closeAll } = require('../helpers/bus-nodes');
const { connectV1 } = require('../helpers/v1');

test.after(closeAll);

const HISTORY = { size: 5000, ttl: 300 };

function config(set, extra = {}, bus = {}) {
  return { ...extra, bus: { sentinels: set.urls, name: set.name, backoff: { min: 50, max: 200 }, ...bus } };
}

async function upNodes(set, n, extra) {
  const nodes = [];
  for (let i = 0; i < n; i++) nodes.push(await startNode(config(set, extra)));
  for (const node of nodes) await node.waitBus('up', 15000);
  return nodes;
}

/**
 * RESP3 clients on every sentinel subscribed to +switch-master: switched()
 * resolves to the time of the first sentinel's event (the one that led the
 * failover says it first).
 */
async function watchSwitch(t, sentinels) {
  const cs = await Promise.all(sentinels.map((s) => respClient(s.port)));
  t.after(() => { for (const c of cs) c.close(); });
  await Promise.all(cs.map((c) => c.call('SUBSCRIBE', '+switch-master')));
  return {
    switched: () => Promise.any(cs.map((c) => c.waitPush((p) => p[0] === 'message', 60000, '+switch-master')))
      .then(() => Math.min(...cs.map((c) => c.pushes.find((p) => p[0] === 'message')?.at ?? Infinity))),
  };
}

/** Publishes `${i}/${n}` from every node i to topic, one at a time each, paced; stop() ends them. */
function publishers(nodes, topic, { max = 5000, pauseMs = 5 } = {}) {
  let running = true;
  const sent = nodes.map(() => 0);
  const loops = nodes.map(async (node, i) => {
    while (running && sent[i] < max) {
      await node.publish(topic, `${i}/${sent[i]}`);
      sent[i]++;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  });
  return { sent, async stop() { running = false; await Promise.all(loops); } };
}

/**
 * Walks a v1 client's frames of topic: within an epoch, offsets go up by one
 * from the subscribed notice; an epoch change or a hole only after a
 * `subscribed` notice that says so. Returns { epochs, lost (notices with
 * recovered false), byOffset: Map 'epoch:offset' -> payload }.
 */
function walk(client, topic, what) {
  let s = null;
  for (const f of client.frames) {
    assert.notEqual(f.kind, '?', `${what}: a frame that breaks symphony.v1`);
    if (f.kind === 'c' && f.notice.type === 'subscribed' && f.notice.topic === topic) {
      const n = f.notice;
      if (s === null) {
        s = { epoch: n.epoch, last: BigInt(n.offset), epochs: [n.epoch], lost: [], byOffset: new Map() };
        continue;
      }
      if (n.recovered === false) s.lost.push(n);
      else if (n.epoch !== s.epoch) assert.ok(s.last === 0n && n.offset === '0', `${what}: an epoch change announced as recovered`);
      if (n.epoch !== s.epoch && s.last > 0n) s.epochs.push(n.epoch);
      if (s.last === 0n) s.epochs = [n.epoch];
      s.epoch = n.epoch;
      s.last = BigInt(n.offset);
      continue;
    }
    if (f.kind !== 'p' || f.topic !== topic) continue;
    assert.ok(s !== null, `${what}: a message before the subscribed notice`);
    assert.equal(f.offset, s.last + 1n, `${what}: offset ${f.offset} after ${s.last} in epoch ${s.epoch}, not announced`);
    s.last = f.offset;
    s.byOffset.set(`${s.epoch}:${f.offset}`, f.payload.toString());
  }
  return s;
}

test('options: sentinels and name are checked at new Server, each error naming its option', () => {
  const bad = [
    [{ sentinels: 'redis://127.0.0.1:26379', name: 'm' }, TypeError, 'options.bus.sentinels'],
    [{ sentinels: [], name: 'm' }, RangeError, 'options.bus.sentinels'],
    [{ sentinels: [42], name: 'm' }, TypeError, 'options.bus.sentinels[0]'],
    [{ sentinels: ['http://127.0.0.1:26379'], name: 'm' }, TypeError, 'options.bus.sentinels[0]'],
    [{ sentinels: [{ host: '127.0.0.1', port: 0 }], name: 'm' }, RangeError, 'options.bus.sentinels[0].port'],
    [{ sentinels: [{ host: '127.0.0.1', pass: 'x' }], name: 'm' }, TypeError, 'options.bus.sentinels[0].pass'],
    [{ sentinels: [{ port: 26379 }], name: 'm' }, TypeError, 'options.bus.sentinels[0].host'],
    [{ sentinels: ['redis://127.0.0.1:1'] }, TypeError, 'options.bus.name'],
    [{ sentinels: ['redis://127.0.0.1:1'], name: 'my master' }, TypeError, 'options.bus.name'],
    [{ sentinels: ['redis://127.0.0.1:1'], name: '' }, RangeError, 'options.bus.name'],
    [{ sentinels: ['redis://127.0.0.1:1'], name: 'x'.repeat(129) }, RangeError, 'options.bus.name'],
    [{ sentinels: ['redis://127.0.0.1:1'], name: 'm', cluster: true }, TypeError, 'options.bus.cluster'],
    [{ sentinels: ['redis://127.0.0.1:1'], name: 'm', url: ['redis://a:1', 'redis://b:1'] }, TypeError, 'options.bus.url'],
    [{ url: 'redis://127.0.0.1:1', name: 'm' }, TypeError, 'options.bus.name'],
    [{ sentinels: ['redis://127.0.0.1:1', 'rediss://127.0.0.1:2'], name: 'm' }, TypeError, 'options.bus.sentinels'],
    [{ sentinels: ['redis://:a@127.0.0.1:1', 'redis://:b@127.0.0.1:2'], name: 'm' }, TypeError, 'options.bus.sentinels'],
    [{ sentinels: ['rediss://127.0.0.1:1'], name: 'm', url: 'redis://:pw@primary' }, TypeError, 'options.bus.sentinels'],
  ];
  for (const [bus, Kind, name] of bad) {
    assert.throws(() => new Server({ port: 0, bus }), (err) => {
      assert.ok(err instanceof Kind, `${JSON.stringify(bus)}: ${err.constructor.name} ${err.message}`);
      assert.ok(err.message.includes(`"${name}"`), `${JSON.stringify(bus)}: names ${name}: ${err.message}`);
      return true;
    });
  }
  // A good one: the sentinels (26379 by default), the name, the data nodes'
  // password from url (shown as ***), no seeds.
  const server = new Server({
    port: 0,
    bus: { sentinels: ['redis://:spw@127.0.0.1', { host: '127.0.0.1', port: 26380 }], name: 'mymaster', url: 'redis://:pw@primary' },
  });
  const o = server.bus.options;
  assert.deepEqual(o.sentinels, [{ host: '127.0.0.1', port: 26379 }, { host: '127.0.0.1', port: 26380 }]);
  assert.equal(o.name, 'mymaster');
  assert.equal(o.cluster, false);
  assert.equal(o.url, 'redis://:***@primary');
  assert.deepEqual(o.seeds, []);
  assert.equal(server.bus.state, 'connecting');
});

test('through Sentinel: two nodes on the primary it names deliver each other\'s publishes; an unknown name is down, saying so', { timeout: 60000 }, async (t) => {
  const set = await startSentinels({ t });
  const [a, b] = await upNodes(set, 2);
  const ca = await connectClient(a.port, ['chat']);
  const cb = await connectClient(b.port, ['chat']);
  await poll(async () => (await numSub(set.primary, 'symphony:chat')) === 2, { what: 'both nodes subscribed on the primary' });
  assert.equal(await numSub(set.replica, 'symphony:chat'), 0, 'nothing subscribed on the replica');
  // Each crossing awaited: two nodes' publishes have no common order.
  await a.publish('chat', 'from-a');
  await cb.waitFor(1);
  await b.publish('chat', 'from-b');
  await ca.waitFor(2);
  await cb.waitFor(2);
  assert.deepEqual(ca.messages, ['from-a', 'from-b']);
  assert.deepEqual(cb.messages, ['from-a', 'from-b']);
  for (const s of [await a.stats(), await b.stats()]) {
    assert.equal(s.bus.state, 'up');
    assert.equal(s.bus.received, 1);
  }

  const lost = await startNode(config(set, {}, { name: 'nosuch' }));
  const down = await lost.waitBus('down', 15000);
  assert.match(down.error.message, /^Sentinel: no sentinel \(of 3\) gives the address of primary 'nosuch'; last: 127\.0\.0\.1:\d+: monitors no primary named 'nosuch'$/);
});

test('SENTINEL FAILOVER while two nodes publish with history: both follow the new primary, one sequence, every change told', { timeout: 120000 }, async (t) => {
  const set = await startSentinels({ t });
  const nodes = await upNodes(set, 2, { history: HISTORY });
  const clients = [];
  for (const node of nodes) {
    const c = await connectV1(`ws://127.0.0.1:${node.port}/?topics=feed`);
    await c.until((x) => x.notices('subscribed').length === 1, 15000, 'subscribed');
    clients.push(c);
  }
  t.after(() => { for (const c of clients) c.ws.terminate(); });
  await poll(async () => (await numSub(set.primary, 'symphony:feed')) === 2, { what: 'both nodes subscribed on the primary' });

  const progress = async (n, what) => {
    const from = clients.map((c) => c.messages('feed').length);
    await poll(() => clients.every((c, i) => c.messages('feed').length >= from[i] + n),
      { what: `${n} more messages on every client (${what})`, timeoutMs: 30000, intervalMs: 20 });
  };
  const watch = await watchSwitch(t, set.sentinels);
  const load = publishers(nodes, 'feed');
  let moved;
  const marks = nodes.map((n) => n.busEvents.length);
  const started = Date.now();
  try {
    await progress(30, 'before the failover');
    moved = await set.failover();
    const switched = Date.now();
    // Both nodes move to the new primary: subscribed there, and up.
    await poll(async () => (await numSub(set.byPort(moved.to), 'symphony:feed')) === 2,
      { what: `both nodes subscribed on the new primary ${moved.to}`, timeoutMs: 30000 });
    for (const [i, node] of nodes.entries()) {
      if (node.busEvents.slice(marks[i]).some((e) => e.state === 'down')) await node.waitBus('up', 30000, marks[i] + 1);
    }
    const up = Math.max(...nodes.map((n, i) => n.busEvents.slice(marks[i]).filter((e) => e.state === 'up').at(-1)?.at ?? switched));
    t.diagnostic(`SENTINEL FAILOVER to every sentinel naming the new primary: ${switched - started} ms; ` +
      `to both nodes up on it: ${up - started} ms (${up - await watch.switched()} ms after +switch-master)`);
    await progress(30, 'after the failover');
  } finally {
    await load.stop();
  }

  // Everything Redis numbered reached both clients: each is at the new
  // primary's last offset, in its epoch.
  const meta = '{symphony:feed}:meta';
  const primary = set.byPort(moved.to);
  const [epoch, last] = [await primary.cli('HGET', meta, 'e'), BigInt(await primary.cli('HGET', meta, 'o'))];
  await poll(() => clients.every((c) => c.messages('feed').at(-1)?.offset === last),
    { what: `every client at the new primary's last offset ${last}`, timeoutMs: 15000 });
  const walked = clients.map((c, i) => walk(c, 'feed', `client of node ${i}`));
  const stats = await Promise.all(nodes.map((n) => n.stats()));
  for (const [i, w] of walked.entries()) {
    assert.equal(w.epoch, epoch, `client of node ${i}: in Redis' epoch at the end`);
    // One epoch, unless a change was told (a notice with recovered false):
    // writes the old primary took after the replica's promotion are lost
    // (Sentinel does not stop writes first), and a node that delivered one
    // renews the epoch; a publish made while the bus was down is numbered
    // by its node.
    if (w.epochs.length > 1) {
      assert.ok(w.lost.length >= 1, `client of node ${i}: epochs ${w.epochs} without a notice`);
      for (const n of w.lost) assert.ok(['epoch', 'trimmed'].includes(n.reason), `a notice's reason: ${JSON.stringify(n)}`);
    }
    for (const [at, payload] of w.byOffset) {
      if (at.startsWith(`${epoch}:`) && walked[0].byOffset.has(at)) {
        assert.equal(payload, walked[0].byOffset.get(at), `the same message at ${at} on both nodes`);
      }
    }
  }
  t.diagnostic(`epochs per client: ${walked.map((w) => w.epochs.length).join(', ')}; renewals: ` +
    `${stats.map((s) => s.bus.renewals).join(', ')}; dropped: ${stats.map((s) => s.bus.dropped).join(', ')}`);
  for (const s of stats) assert.equal(s.bus.state, 'up');
});

test('SENTINEL FAILOVER with nothing in flight: the replica had every write, the epoch goes on', { timeout: 90000 }, async (t) => {
  const set = await startSentinels({ t });
  const nodes = await upNodes(set, 2, { history: HISTORY });
  const clients = [];
  for (const node of nodes) {
    const c = await connectV1(`ws://127.0.0.1:${node.port}/?topics=calm`);
    await c.until((x) => x.notices('subscribed').length === 1, 15000, 'subscribed');
    clients.push(c);
  }
  t.after(() => { for (const c of clients) c.ws.terminate(); });
  await poll(async () => (await numSub(set.primary, 'symphony:calm')) === 2, { what: 'both nodes subscribed on the primary' });
  for (let i = 0; i < 20; i++) await nodes[i % 2].publish('calm', `before-${i}`);
  await poll(() => clients.every((c) => c.messages('calm').length === 20), { what: '20 messages on every client' });
  // The replica has it all before the failover starts.
  const offset = async (r) => /master_repl_offset:(\d+)/.exec(await r.call('INFO', 'replication'))[1];
  await poll(async () => (await offset(set.primary)) === (await offset(set.replica)), { what: 'the replica caught up' });
  const { to } = await set.failover();
  await poll(async () => (await numSub(set.byPort(to), 'symphony:calm')) === 2, { what: 'both nodes subscribed on the new primary' });
  await poll(async () => (await Promise.all(nodes.map((n) => n.stats()))).every((s) => s.bus.state === 'up'), { what: 'both buses up' });
  for (let i = 0; i < 20; i++) await nodes[i % 2].publish('calm', `after-${i}`);
  await poll(() => clients.every((c) => c.messages('calm').length === 40), { what: '40 messages on every client' });
  const epoch = await set.byPort(to).cli('HGET', '{symphony:calm}:meta', 'e');
  for (const [i, c] of clients.entries()) {
    const w = walk(c, 'calm', `client of node ${i}`);
    assert.deepEqual(w.epochs, [epoch], `client of node ${i}: one epoch, Redis' on the new primary`);
    assert.deepEqual(w.lost, [], `client of node ${i}: nothing announced lost`);
    assert.deepEqual(c.messages('calm').map((f) => Number(f.offset)), Array.from({ length: 40 }, (_, k) => k + 1));
  }
  for (const s of await Promise.all(nodes.map((n) => n.stats()))) assert.equal(s.bus.renewals, 0);
});

test('kill -9 of the primary: Sentinel promotes the replica, the bus is up on it again and delivering', { timeout: 90000 }, async (t) => {
  const set = await startSentinels({ t });
  const [a, b] = await upNodes(set, 2);
  const ca = await connectClient(a.port, ['x']);
  const cb = await connectClient(b.port, ['x']);
  await poll(async () => (await numSub(set.primary, 'symphony:x')) === 2, { what: 'subscriptions on the primary' });
  const marks = [a.busEvents.length, b.busEvents.length];
  const watch = await watchSwitch(t, set.sentinels);
  const killed = Date.now();
  await set.primary.kill9();
  const downs = [await a.waitBus('down', 10000, marks[0]), await b.waitBus('down', 10000, marks[1])];
  for (const d of downs) assert.match(d.error.message, new RegExp(`127\\.0\\.0\\.1:${set.primary.port}: `));
  const ups = [await a.waitBus('up', 60000, marks[0]), await b.waitBus('up', 60000, marks[1])];
  const up = Math.max(...ups.map((u) => u.at));
  t.diagnostic(`kill -9 of the primary to both nodes up on the promoted replica: ${up - killed} ms ` +
    `(${up - await watch.switched()} ms after +switch-master)`);
  assert.equal(await set.master(), set.replica.port, 'Sentinel promoted the replica');
  await poll(async () => (await numSub(set.replica, 'symphony:x')) === 2, { what: 'subscriptions on the new primary' });
  await a.publish('x', 'after-a');
  await cb.waitFor(1, 10000);
  await b.publish('x', 'after-b');
  await ca.waitFor(2, 10000);
  await cb.waitFor(2, 10000);
  assert.deepEqual(ca.messages, ['after-a', 'after-b']);
  assert.deepEqual(cb.messages, ['after-a', 'after-b']);
});

test('every sentinel gone: the bus stays on the primary it has; a node that must ask is down, naming Sentinel', { timeout: 60000 }, async (t) => {
  const set = await startSentinels({ t });
  const [a, b] = await upNodes(set, 2);
  const cb = await connectClient(b.port, ['y']);
  await poll(async () => (await numSub(set.primary, 'symphony:y')) === 1, { what: 'node b subscribed on the primary' });
  const marks = [a.busEvents.length, b.busEvents.length];
  await Promise.all(set.sentinels.map((s) => s.kill9()));
  // Redis is there: nothing to follow, nothing lost.
  await a.publish('y', 'still');
  await cb.waitFor(1, 10000);
  assert.deepEqual(cb.messages, ['still']);
  assert.deepEqual([a.busEvents.length, b.busEvents.length], marks, 'no state change');

  const late = await startNode(config(set));
  const down = await late.waitBus('down', 15000);
  assert.match(down.error.message, /^Sentinel: no sentinel \(of 3\) gives the address of primary 'mymaster'; last: 127\.0\.0\.1:\d+: /);
  assert.equal(late.busEvents.some((e) => e.state === 'up'), false);
});
