'use strict';
// History across nodes in a real browser (docs/bus.md): headless Chromium
// loads a page that imports client/symphony-client.mjs and follows two
// topics with history through a TCP balancer in front of two symphony nodes
// (child processes) that share a real Redis. Both nodes publish to both
// topics (1,000 messages/s in all) while the balancer moves the page from
// one node to the other (it cuts the connection; the page reconnects through
// it to the other node and resumes there), each time the page has received
// STEP more messages. Redis numbers each topic's messages, so a position
// taken on one node is good on the other: the page must see, for each
// topic, every offset from the first to the last published, once and in
// order, every publisher's messages in order, and every resume recovered.
// Fails (does not skip) when chromium or redis-server is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startRedis } = require('../helpers/redis');
const { startNode, closeAll } = require('../helpers/bus-nodes');
const { startBalancer } = require('../helpers/balancer');
const { openPage, WAITS } = require('../helpers/browser-page');

const TOPICS = ['quotes', 'trades'];
const PUBLISHERS = ['a', 'b']; // node 0 publishes 'a0', 'a1', ...; node 1 'b0', ...
const COUNT = 1000; // messages per publisher per topic: 4,000 in all
const RATE = 250; // per publisher per topic: 1,000 messages/s in all, for 4 s
const TOTAL = TOPICS.length * PUBLISHERS.length * COUNT;
const STEP = 200; // messages the page receives on a node before it is moved
const HISTORY = { size: 5000, ttl: 300 };

// The page: start(url) starts a client that records in S every message
// ([topic, offset, payload, epoch, connection]), every 'recovered' event,
// and its opens; until() (WAITS) is woken by each of the client's events.
const page = `<!doctype html><html><head><meta charset="utf-8"><title>symphony nodes</title>
<script type="module">
import { SymphonyClient } from '/symphony-client.mjs';
${WAITS}
window.S = null;
window.start = (url) => {
  const S = window.S = { got: [], last: {}, count: {}, recovered: [], subscribed: [], opens: 0, states: [], errors: [], published: false };
  const client = window.client = new SymphonyClient(url, { backoff: { min: 5, max: 50 } });
  client.on('message', (topic, data, info) => {
    S.got.push([topic, info.offset, data, info.epoch, S.opens]);
    S.last[topic] = info.offset;
    S.count[topic] = (S.count[topic] || 0) + 1;
    wake();
  });
  client.on('subscribed', (topic, info) => { S.subscribed.push({ topic, epoch: info.epoch, offset: info.offset, conn: S.opens }); wake(); });
  client.on('recovered', (topic, ok, info) => {
    S.recovered.push({ topic, ok, reason: info.reason ?? null, since: info.since, offset: info.offset, epoch: info.epoch, conn: S.opens, at: S.got.length });
    wake();
  });
  client.on('state', (state, info) => {
    if (state === 'open') S.opens++;
    S.states.push(state === 'reconnecting' ? 'reconnecting ' + info.code + ' +' + info.delay + 'ms' : state);
    if (S.states.length > 200) S.states.splice(0, 100);
    wake();
  });
  client.on('error', (err) => { if (S.errors.length < 20) S.errors.push(err.code + ': ' + err.message); });
  return true;
};
// The nodes have published everything (said by the test).
window.published = () => { window.S.published = true; wake(); return true; };
window.summary = () => {
  const S = window.S;
  if (!S) return 'not started';
  return JSON.stringify({ got: S.got.length, last: S.last, count: S.count, opens: S.opens, state: window.client.state,
    recovered: S.recovered.slice(-4), states: S.states.slice(-6), errors: S.errors, stats: window.client.stats() });
};
window.ready = true;
</script></head><body>nodes</body></html>`;

/** Asserts that list is from, from + 1, ..., to: each once, in order. */
function consecutive(list, from, to, what) {
  for (let i = 0; i < list.length; i++) {
    if (list[i] !== from + i) {
      const kind = list.indexOf(list[i]) < i ? 'a duplicate' : (list[i] > from + i ? 'a gap' : 'out of order');
      assert.fail(`${what}: ${kind} at index ${i}: expected ${from + i}, got ${list[i]} `
        + `(around it: ${list.slice(Math.max(0, i - 4), i + 5).join(',')})`);
    }
  }
  assert.equal(list.length, to - from + 1, `${what}: ${list.length} messages, expected ${from} to ${to}`);
}

test.after(closeAll);

test('Chromium moved between two nodes behind a TCP balancer while both publish 1,000 messages/s: no gap, no duplicate, every resume recovered', { timeout: 50000 }, async (t) => {
  // Redis, the two nodes and the browser start side by side.
  const [redis, opened] = await Promise.all([startRedis({ t }), openPage(page)]);
  t.after(() => opened.close());
  const config = { history: HISTORY, bus: { url: redis.url, backoff: { min: 50, max: 200 } } };
  const nodes = await Promise.all([startNode(config), startNode(config)]);
  await Promise.all(nodes.map((n) => n.waitBus('up', 10000)));
  const lb = await startBalancer(nodes.map((n) => n.port));
  t.after(() => lb.close());
  const { tab } = opened;
  const until = (cond, ms, what) => tab.evaluate(`until(() => ${cond}, ${ms}, ${JSON.stringify(what)})`, { timeout: ms + 2000 });

  let moves = 0;
  let streaming = true;
  try {
    // The page connects through the balancer (to node 0) and is subscribed
    // to both topics at its upgrade (bus-node.js reads ?topics=).
    await tab.evaluate(`start(${JSON.stringify(`ws://127.0.0.1:${lb.port}/?topics=${TOPICS.join(',')}`)})`);
    await until(`client.state === 'open' && S.subscribed.length === ${TOPICS.length}`, 10000, 'the page subscribed on node 0');

    const streams = Promise.all(TOPICS.flatMap((topic) => nodes.map((node, i) =>
      node.stream(topic, { count: COUNT, rate: RATE, prefix: PUBLISHERS[i] }))));
    const ended = () => {
      streaming = false;
      return tab.evaluate('published()').catch(() => {});
    };
    streams.then(ended, ended);
    // Each time the page is open on its node (connection moves + 1) and has
    // STEP more messages, it is moved to the other node, until the nodes
    // have published everything.
    for (;;) {
      const mark = await tab.evaluate('S.got.length');
      await until(`client.state === 'open' && S.opens === ${moves + 1} && (S.got.length >= ${mark + STEP} || S.published)`,
        15000, `the page open on node ${moves % 2} (move ${moves}) with ${STEP} more messages`);
      if (!streaming) break;
      moves++;
      lb.moveTo(moves % 2);
    }
    assert.deepEqual(await streams, TOPICS.flatMap(() => nodes.map(() => COUNT)), 'every stream published its messages');

    // Redis numbered every topic's messages: the last offset is the count.
    const last = {};
    const epoch = {};
    for (const topic of TOPICS) {
      last[topic] = Number(await redis.cli('HGET', `{symphony:${topic}}:meta`, 'o'));
      epoch[topic] = await redis.cli('HGET', `{symphony:${topic}}:meta`, 'e');
      assert.equal(last[topic], PUBLISHERS.length * COUNT, `Redis' last offset of ${topic}`);
    }
    await until(TOPICS.map((topic) => `S.last[${JSON.stringify(topic)}] === ${last[topic]}`).join(' && '), 15000,
      'the page at the last offset of every topic');
    const S = await tab.evaluate('({ ...S, stats: client.stats(), positions: client.positions() })');
    // The node the page left closes its side when it reads the balancer's
    // FIN, which nothing reports to this process: its stats are read until
    // that shows (bounded).
    const onLast = moves % 2 === 0 ? [1, 0] : [0, 1];
    let stats;
    for (const deadline = performance.now() + 5000; ;) {
      stats = await Promise.all(nodes.map((n) => n.stats()));
      if (stats.every((st, i) => st.connections === onLast[i]) || performance.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    assert.ok(moves >= 4, `the page moved ${moves} times while the nodes published`);
    for (const topic of TOPICS) {
      const got = S.got.filter((m) => m[0] === topic);
      consecutive(got.map((m) => m[1]), 1, last[topic], `${topic}'s offsets`);
      assert.deepEqual([...new Set(got.map((m) => m[3]))], [epoch[topic]], `${topic}: one epoch, Redis'`);
      for (const who of PUBLISHERS) {
        const seq = got.map((m) => m[2]).filter((p) => p[0] === who).map((p) => Number(p.slice(1)));
        assert.deepEqual(seq, Array.from({ length: COUNT }, (_, k) => k), `${topic}: every message of publisher ${who}, in order`);
      }
      assert.deepEqual(S.positions[topic], { epoch: epoch[topic], offset: last[topic] }, `the client's position of ${topic}`);
    }
    // One connection per move, each through the balancer to the node it
    // sent the page to: node 0 has connections 1, 3, 5, ...; node 1 2, 4, ...
    assert.equal(S.opens, moves + 1, 'the page opened once per move, and once at the start');
    assert.equal(S.stats.reconnects, moves);
    assert.deepEqual(stats.map((s) => s.opened), [Math.ceil((moves + 1) / 2), Math.floor((moves + 1) / 2)],
      'each node accepted the connections the balancer sent it');
    assert.deepEqual(stats.map((s) => s.connections), onLast, 'the page is on the last node, and only there');
    // Every connection after the first resumed both topics, recovered (a
    // live 'recovered' may come too: the topic's first message brings
    // Redis' epoch in place of the node's, nothing missed).
    assert.deepEqual(S.recovered.filter((r) => !r.ok), [], 'every resume recovered');
    for (let conn = 2; conn <= S.opens; conn++) {
      const resumed = S.recovered.filter((r) => r.conn === conn).map((r) => r.topic).sort();
      assert.deepEqual(resumed, TOPICS, `connection ${conn} resumed every topic: ${JSON.stringify(S.recovered.filter((r) => r.conn === conn))}`);
    }
    assert.deepEqual(stats.map((s) => s.recovered), [Math.ceil((moves + 1) / 2) - 1, Math.floor((moves + 1) / 2)].map((n) => n * TOPICS.length),
      'each node recovered every resume it was given');
    for (const [i, s] of stats.entries()) {
      const failed = Object.entries(s).filter(([k, v]) => k.startsWith('recoveryFailed') && v !== 0);
      assert.deepEqual(failed, [], `node ${i}: no resume failed`);
    }
    assert.equal(S.stats.duplicates, 0, 'the client dropped no duplicate (no node sent one)');
    assert.equal(S.stats.malformed + S.stats.unknown, 0, 'no malformed or unknown frame');
    assert.equal(S.got.length, TOTAL);
    const replayed = stats.reduce((n, s) => n + s.replayed, 0);
    console.log(`${TOTAL} messages, ${moves} moves, ${S.recovered.length} recovered events, ${replayed} messages replayed`);
  } catch (err) {
    let seen;
    try { seen = await tab.evaluate('summary()'); } catch (e) { seen = `(could not read the page: ${e.message})`; }
    err.message += `\nafter ${moves} moves (streaming: ${streaming}); the page: ${seen}\nconsole: ${tab.console.slice(-10).join('\n')}`
      + nodes.map((n, i) => (n.output() ? `\nnode ${i}: ${n.output().slice(-1000)}` : '')).join('');
    throw err;
  } finally {
    await tab.evaluate('window.client && window.client.close(), true').catch(() => {});
  }
});
