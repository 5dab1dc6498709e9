'use strict';
// What history keeps, and that it lets go: size, ttl and maxBytes bound it
// while much more is published; idle topics are freed by the sweep (a new
// epoch when made again); and the allocator's bytes come back to where they
// were once a big history expired (docs/history.md, "What it costs").
const test = require('node:test');
const assert = require('node:assert/strict');
const { allocator } = require('../..');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { connectV1 } = require('../helpers/v1');

test.afterEach(closeAll);

// What symphony holds: allocated minus jemalloc's thread caches (as
// __test__/memory/leak.test.js reads it).
const held = () => { const a = allocator.stats(); return a.allocated - a.cached; };
const ENTRY = 64; // bytes counted per kept message besides its frame (SY_HIST_ENTRY_OVERHEAD)

test('maxBytes bounds all topics together, the oldest going first whatever their topic; size bounds each', async () => {
  const maxBytes = 256 * 1024;
  const { server } = await startServer({ history: { size: 1000, ttl: 0, maxBytes } });
  const payload = 'x'.repeat(200);
  let most = 0;
  // t0 first, then t1..t9: 6,000 messages of 200 bytes, over 1.8 MB counted.
  for (let t = 0; t < 10; t++) {
    for (let i = 0; i < 600; i++) {
      server.publish(`t${t}`, payload);
      if (i % 50 === 0) {
        const s = server.stats();
        assert.ok(s.historyBytes <= maxBytes, `historyBytes ${s.historyBytes} over maxBytes`);
        most = Math.max(most, s.historyBytes);
      }
    }
  }
  const s = server.stats();
  assert.ok(s.historyBytes <= maxBytes && s.historyBytes > maxBytes - (payload.length + 200 + ENTRY),
    `historyBytes ${s.historyBytes}: full up to one message`);
  // Each counted as its frame (header + payload) plus 64.
  const per = s.historyBytes / s.historyMessages;
  assert.ok(per > payload.length + ENTRY && per < payload.length + ENTRY + 32, `${per} bytes per message`);
  // The oldest went first: t0 (published first) lost everything; t9 keeps its last ones.
  assert.equal(server.position('t0').kept, 0);
  const t9 = server.position('t9');
  assert.equal(t9.offset, 600);
  assert.equal(t9.kept, s.historyMessages - [...Array(9).keys()].reduce((n, t) => n + server.position(`t${t}`).kept, 0));
  assert.equal(t9.first, 600 - t9.kept + 1);
  // size: at most 1,000 per topic, even under maxBytes.
  const { server: small } = await startServer({ history: { size: 7, ttl: 0, maxBytes: 0 } });
  for (let i = 0; i < 100; i++) small.publish('s', `m${i}`);
  assert.deepEqual(small.position('s'), { ...small.position('s'), offset: 100, first: 94, kept: 7 });
  assert.equal(small.stats().historyMessages, 7);
  console.log(`# maxBytes ${maxBytes}: at most ${most} counted, ${s.historyMessages} messages kept of 6000`);
});

test('ttl: kept messages expire with the sweep; idle topics are freed, a subscribed or held one stays (same epoch)', { timeout: 20000 }, async () => {
  const { server, url } = await startServer({ history: { size: 100, ttl: 1 }, onUpgrade: () => ({ topics: ['watched'] }) });
  const c = await connectV1(url);
  await c.until((x) => x.notices('subscribed').length === 1);
  const handle = server.topic('handled');
  for (let i = 0; i < 50; i++) server.publish(`idle-${i}`, `m${i}`);
  server.publish('watched', 'w');
  handle.publish('h');
  const epochs = { idle: server.position('idle-0').epoch, watched: server.position('watched').epoch, handled: handle.position.epoch };
  let s = server.stats();
  assert.equal(s.topics, 52);
  assert.equal(s.historyMessages, 52);
  // Within ttl + the once-a-second sweep: waited for, bounded.
  await waitFor(() => server.stats().historyMessages === 0, 5000, 'the messages to expire');
  await waitFor(() => server.stats().topics === 2, 5000, 'the idle topics to be freed');
  s = server.stats();
  assert.equal(s.historyBytes, 0);
  assert.equal(server.position('idle-0'), null, 'freed');
  assert.deepEqual(server.position('watched'), { epoch: epochs.watched, offset: 1, first: 2, kept: 0 });
  assert.deepEqual(handle.position, { epoch: epochs.handled, offset: 1, first: 2, kept: 0 });
  // Made again: offsets restart, so a new epoch.
  server.publish('idle-0', 'again');
  const again = server.position('idle-0');
  assert.equal(again.offset, 1);
  assert.notEqual(again.epoch, epochs.idle);
  // The subscriber still gets the topic's next offset.
  server.publish('watched', 'w2');
  await c.until((x) => x.messages('watched').length === 2);
  assert.deepEqual(c.messages('watched').map((f) => Number(f.offset)), [1, 2]);
  c.ws.close();
});

test('a big history that expires gives its memory back', { timeout: 30000 }, async () => {
  const { server } = await startServer({ threads: 1, history: { size: 1000, ttl: 1, maxBytes: 0 } });
  // Warm-up: one small round through the same paths.
  for (let t = 0; t < 4; t++) for (let i = 0; i < 10; i++) server.publish(`w${t}`, 'x'.repeat(1024));
  await waitFor(() => server.stats().topics === 0, 5000, 'the warm-up topics to be freed');
  const before = held();
  const payload = Buffer.alloc(8 * 1024, 1);
  for (let t = 0; t < 20; t++) for (let i = 0; i < 150; i++) server.publish(`big-${t}`, payload);
  const s = server.stats();
  assert.equal(s.historyMessages, 3000);
  const peak = held();
  assert.ok(peak - before > 20 * 1024 * 1024, `history held ${peak - before} bytes`);
  await waitFor(() => server.stats().historyMessages === 0 && server.stats().topics === 0, 10000, 'the history to expire');
  await waitFor(() => held() - before < 128 * 1024, 10000, 'held memory to come back');
  console.log(`# held before ${before}, peak ${peak}, after ${held()}`);
});
