'use strict';
// History across nodes on a Redis Cluster (docs/bus.md, "History on a Redis
// Cluster"): a topic's sequence lives in two keys of its channel's slot
// (`{symphony:<topic>}:meta` and `:stream`), so it moves with the slot. Three
// symphony nodes publish to topics spread over the three primaries while (a)
// the slot of a hash-tagged pair of topics is migrated to another primary and
// (b) a replica of a topic's primary takes over with CLUSTER FAILOVER. What
// every v1 client must see, on every node and every topic:
//   - within an epoch, offsets strictly increasing by 1 from the subscribed
//     notice on: no gap, no duplicate; a change of epoch or a hole only after
//     a `subscribed` notice saying so (recovered: false), never silent;
//   - the same payload at the same (epoch, offset) on every node;
//   - each publisher's messages in its order.
// And what holds on these two (graceful) moves in particular: the epoch stays
// the same, nothing is announced lost, every publish is delivered (a publish
// answered MOVED, ASK or NOSCRIPT is sent again where Redis says), and the
// bus counts no Redis error it could not follow.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startCluster, slotOf, poll } = require('../helpers/redis');
const { startNode, closeAll } = require('../helpers/bus-nodes');
const { connectV1 } = require('../helpers/v1');

test.after(closeAll);

const HISTORY = { size: 5000, ttl: 300 };

/** The channel of a topic (the bus' default prefix). */
const channel = (topic) => `symphony:${topic}`;

/**
 * Publishes from every node, each to every topic in turn, a numbered payload
 * `<node>/<topic>/<n>` per (node, topic), awaited one at a time and paced.
 * It runs until stop(), which ends the loops and resolves once they
 * returned: the moves it is there for take as long as Redis' gossip takes,
 * so a load that ended by itself after a count could end before them (and a
 * wait for messages after the move would then time out). Bounded all the
 * same, by max publishes per node and by maxMs.
 */
function publishers(nodes, topics, { max = 200000, maxMs = 110000, pauseMs = 4 } = {}) {
  let running = true;
  const deadline = Date.now() + maxMs;
  const sent = nodes.map(() => new Map(topics.map((t) => [t, 0])));
  const loops = nodes.map(async (node, i) => {
    for (let k = 0; running && k < max && Date.now() < deadline; k++) {
      const topic = topics[k % topics.length];
      const n = sent[i].get(topic);
      sent[i].set(topic, n + 1);
      await node.publish(topic, `${i}/${topic}/${n}`);
      if (k % topics.length === topics.length - 1) await new Promise((r) => setTimeout(r, pauseMs));
    }
  });
  return {
    sent,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/**
 * Walks a v1 client's frames in order and checks, per topic, the rules at
 * the top of this file. Returns per topic { epochs: the epochs messages
 * came in, lost: the later notices with recovered false, byOffset: Map
 * 'epoch:offset' -> payload, perPublisher: Map node -> [n...] }.
 */
function walk(client, what) {
  const out = new Map();
  for (const f of client.frames) {
    assert.notEqual(f.kind, '?', `${what}: a frame that breaks symphony.v1: ${f.raw}`);
    if (f.kind === 'c' && f.notice.type === 'subscribed') {
      const n = f.notice;
      let s = out.get(n.topic);
      if (s === undefined) {
        s = { epoch: n.epoch, last: BigInt(n.offset), epochs: [n.epoch], lost: [], byOffset: new Map(), perPublisher: new Map() };
        out.set(n.topic, s);
      } else {
        // A later notice: a new epoch, or a hole. Announced as recovered only
        // when nothing was missed: the topic had no message yet (its first
        // publish gives it Redis' epoch, at 0).
        if (n.recovered === false) s.lost.push(n);
        else if (n.epoch !== s.epoch) {
          assert.ok(s.last === 0n && n.offset === '0',
            `${what} ${n.topic}: an epoch change after messages announced as recovered: ${JSON.stringify(n)} at ${s.last}`);
        }
        if (n.epoch !== s.epoch && s.last > 0n) s.epochs.push(n.epoch);
        if (s.last === 0n) s.epochs = [n.epoch];
        s.epoch = n.epoch;
        s.last = BigInt(n.offset);
      }
      continue;
    }
    if (f.kind !== 'p') continue;
    const s = out.get(f.topic);
    assert.ok(s !== undefined, `${what}: a message before its topic's subscribed notice`);
    assert.equal(f.offset, s.last + 1n,
      `${what} ${f.topic}: offset ${f.offset} after ${s.last} in epoch ${s.epoch} (a gap or a duplicate, not announced)`);
    s.last = f.offset;
    const payload = f.payload.toString();
    s.byOffset.set(`${s.epoch}:${f.offset}`, payload);
    const [node, topic, n] = payload.split('/');
    if (topic !== undefined) {
      assert.equal(topic, f.topic, `${what}: ${payload} delivered on ${f.topic}`);
      const seq = s.perPublisher.get(node) ?? [];
      seq.push(Number(n));
      s.perPublisher.set(node, seq);
    }
  }
  return out;
}

/** Waits until every client has at least n more messages of topic than it had in `from` (one count per client). */
function progress(clients, topic, n, what, timeoutMs = 15000) {
  const from = clients.map((c) => c.messages(topic).length);
  return poll(() => clients.every((c, i) => c.messages(topic).length >= from[i] + n),
    { what: `${n} more messages of ${topic} on every client (${what})`, timeoutMs, intervalMs: 20 });
}

test('Redis Cluster: a slot migration and a CLUSTER FAILOVER while three nodes publish with history', { timeout: 120000 }, async (t) => {
  const cluster = await startCluster({ t });
  const config = { history: HISTORY, bus: { url: cluster.urls, backoff: { min: 50, max: 200 } } };
  const nodes = [];
  for (let i = 0; i < 3; i++) nodes.push(await startNode(config));
  for (const node of nodes) await node.waitBus('up', 10000);

  // One topic per primary, and two hash-tagged topics in one slot.
  const byPrimary = new Map();
  for (let i = 0; byPrimary.size < 3 && i < 1000; i++) {
    const port = await cluster.primaryForSlot(slotOf(channel(`h${i}`)));
    if (!byPrimary.has(port)) byPrimary.set(port, `h${i}`);
  }
  assert.equal(byPrimary.size, 3);
  const tagged = ['room:{7}', 'room:{7}:typing'];
  assert.equal(slotOf(channel(tagged[0])), slotOf(channel(tagged[1])));
  const topics = [...byPrimary.values(), ...tagged];

  const q = encodeURIComponent(topics.map((x) => encodeURIComponent(x)).join(','));
  const clients = [];
  for (const node of nodes) {
    const c = await connectV1(`ws://127.0.0.1:${node.port}/?topics=${q}`);
    await c.until((x) => x.notices('subscribed').length === topics.length, 15000, 'every topic subscribed');
    clients.push(c);
  }
  t.after(() => { for (const c of clients) c.ws.terminate(); });
  for (const node of nodes) {
    await poll(async () => (await node.stats()).bus.channels === topics.length,
      { what: 'every channel subscribed on Redis', timeoutMs: 15000 });
  }

  const load = publishers(nodes, topics);
  try {
    // (a) The tagged slot migrates to another primary while publishing.
    const slot = slotOf(channel(tagged[0]));
    const from = await cluster.primaryForSlot(slot);
    const to = [...byPrimary.keys()].find((p) => p !== from);
    await progress(clients, tagged[0], 20, 'before the migration');
    await cluster.migrateSlot(slot, to);
    for (const topic of tagged) {
      await poll(async () => (await cluster.shardNumSub(channel(topic))) === nodes.length,
        { what: `every node subscribed to ${topic} on ${to}`, timeoutMs: 15000 });
    }
    assert.equal(await cluster.call(to, 'EXISTS', `${channel(tagged[0])}:meta`, `${channel(tagged[0])}:stream`), 2,
      'the sequence moved with the slot');
    await progress(clients, tagged[0], 20, 'after the migration');

    // (b) A replica of a topic's primary takes over (CLUSTER FAILOVER).
    const failing = [...byPrimary.entries()].find(([p]) => p !== from && p !== to)[1];
    const oldPrimary = await cluster.primaryForSlot(slotOf(channel(failing)));
    await progress(clients, failing, 20, 'before the failover');
    const { primary } = await cluster.failover(oldPrimary);
    await poll(async () => (await cluster.shardNumSub(channel(failing))) === nodes.length,
      { what: `every node subscribed to ${failing} on ${primary}`, timeoutMs: 15000 });
    await progress(clients, failing, 20, 'after the failover');
  } finally {
    await load.stop();
  }

  // Everything published is delivered everywhere: the last offset in Redis
  // is every client's last, and each publisher's count is complete. A
  // node's publish() returns before Redis has numbered it: the offsets are
  // read once every node's publishes are acknowledged (or dropped, which
  // fails below), not while the last are still on their way.
  const sentBy = load.sent.map((m) => [...m.values()].reduce((a, b) => a + b, 0));
  await poll(async () => (await Promise.all(nodes.map((n) => n.stats())))
    .every((s, i) => s.bus.published + s.bus.dropped === sentBy[i]),
  { what: `every node's publishes acknowledged by Redis (${sentBy.join(', ')})`, timeoutMs: 15000 });
  const last = new Map();
  for (const topic of topics) {
    const port = await cluster.primaryForSlot(slotOf(channel(topic)));
    const meta = topic.includes('{') ? `${channel(topic)}:meta` : `{${channel(topic)}}:meta`;
    last.set(topic, BigInt(await cluster.call(port, 'HGET', meta, 'o')));
  }
  await poll(() => clients.every((c) => topics.every((topic) => c.messages(topic).at(-1)?.offset === last.get(topic))),
    { what: 'every client at each topic\'s last offset in Redis', timeoutMs: 15000 }).catch((err) => {
    // Where each client stopped, beside Redis' last offsets.
    const at = clients.map((c, i) => `client of node ${i}: ${topics.map((topic) => `${topic} ${c.messages(topic).at(-1)?.offset}`).join(', ')}`);
    err.message += `\nRedis: ${topics.map((topic) => `${topic} ${last.get(topic)}`).join(', ')}\n${at.join('\n')}`;
    throw err;
  });

  const stats = await Promise.all(nodes.map((n) => n.stats()));
  const walked = clients.map((c, i) => walk(c, `client of node ${i}`));
  for (const topic of topics) {
    const ref = walked[0].get(topic);
    for (const [i, w] of walked.entries()) {
      const s = w.get(topic);
      const what = `client of node ${i}, ${topic}`;
      assert.deepEqual(s.lost, [], `${what}: nothing announced lost`);
      assert.deepEqual(s.epochs, ref.epochs, `${what}: the same epochs`);
      assert.equal(s.epochs.length, 1, `${what}: one epoch through both moves`);
      for (const [at, payload] of s.byOffset) {
        if (ref.byOffset.has(at)) assert.equal(payload, ref.byOffset.get(at), `${what}: the same message at ${at} on every node`);
      }
      for (const [node, seq] of s.perPublisher) {
        const sent = load.sent[Number(node)].get(topic);
        const disorder = seq.filter((n, k) => k > 0 && n <= seq[k - 1]);
        assert.deepEqual(disorder, [], `${what}: node ${node}'s messages in order`);
        const got = new Set(seq);
        const missing = Array.from({ length: sent }, (_, k) => k).filter((k) => !got.has(k));
        assert.deepEqual(missing, [], `${what}: node ${node}'s messages all delivered (of ${sent}; bus of node ${node}: ` +
          `${JSON.stringify(stats[Number(node)].bus)})`);
      }
    }
  }
  for (const [i, s] of stats.entries()) {
    assert.equal(s.bus.errors, 0, `node ${i}: no Redis error the bus could not follow (${JSON.stringify(s.bus)})`);
    assert.equal(s.bus.dropped, 0, `node ${i}: no publish dropped (${JSON.stringify(s.bus)})`);
  }
});
