'use strict';
// slowConsumer: 'conflate': a client over maxBackpressure gets, per topic,
// the newest value instead of the oldest queued ones and then a gap; the
// memory it holds stays bounded while publishes go on; a normal client on the
// same IO thread gets everything; send() to it is dropped as with 'drop'.
const test = require('node:test');
const assert = require('node:assert/strict');
const { allocator } = require('../..');
const { startServer, client, closed, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

const CAP = 256 * 1024;
const SIZE = 4 * 1024;
const TOPICS = ['t0', 't1', 't2', 't3'];
// A chunk (8 rounds of 4 topics x 4 KiB: 128 KiB) stays under CAP, so the fast
// client is never over the limit even if it reads nothing during one.
const ROUNDS_PER_CHUNK = 8;
const MAX_CHUNKS = 5000; // a bound on the load: ~640 MiB to the fast client at most

/** A payload saying (topic index, n), padded to SIZE. */
function value(ti, n) {
  const b = Buffer.alloc(SIZE, 0x20);
  b.write(JSON.stringify({ t: ti, n }));
  return b;
}
function parse(data) {
  return JSON.parse(data.toString().trimEnd());
}

/** A server with one IO thread (so both clients share it), a slow and a fast client subscribed to TOPICS. */
async function setup(extra = {}) {
  const { server, url } = await startServer({ threads: 1, maxBackpressure: CAP, slowConsumer: 'conflate', closeTimeout: 1, ...extra });
  const ids = [];
  server.on('open', (id) => ids.push(id));
  const fast = await client(url);
  const slow = await client(url);
  await waitFor(() => ids.length === 2, 5000, 'both opens');
  const fastGot = [];
  fastGot.waiting = null; // { count, resolve }: resolved when fastGot reaches count
  fast.on('message', (d) => {
    fastGot.push(parse(d));
    if (fastGot.waiting && fastGot.length >= fastGot.waiting.count) fastGot.waiting.resolve();
  });
  const slowGot = [];
  slow.on('message', (d, binary) => slowGot.push(binary ? parse(d) : d.toString()));
  for (const t of TOPICS) {
    server.subscribe(ids[0], t);
    server.subscribe(ids[1], t);
  }
  return { server, fast, slow, fastId: ids[0], slowId: ids[1], fastGot, slowGot };
}

/** Publishes rounds of numbered values to every topic, each chunk after the fast client has all before it, until
 * enough were conflated; samples the native memory whenever the fast client has caught up. */
async function publishUntilConflated(server, fastGot, base, wanted, topics = TOPICS) {
  let n = 0;
  let peak = 0;
  // What the fast client had before: a later call waits for its own
  // publishes, not for a count its earlier calls reached already (which
  // left this call's last chunk in flight, counted after the caller's
  // baseline: "the send is counted once" then saw 60 more).
  const before = fastGot.length;
  for (let chunk = 0; chunk < MAX_CHUNKS && server.stats().conflated < wanted; chunk++) {
    for (let r = 0; r < ROUNDS_PER_CHUNK; r++, n++) {
      for (let ti = 0; ti < topics.length; ti++) server.publish(topics[ti], value(ti, n), { binary: true });
    }
    const sent = before + n * topics.length;
    if (fastGot.length < sent) await new Promise((resolve) => { fastGot.waiting = { count: sent, resolve }; });
    fastGot.waiting = null;
    // Only the slow client's queue still holds frames now.
    peak = Math.max(peak, allocator.stats().allocated - base);
  }
  return { rounds: n, peak };
}

test('a client that stops reading gets each topic\'s newest value, in order, and holds bounded memory', { timeout: 120000 }, async () => {
  const { server, slow, fastGot, slowGot } = await setup();
  slow.pause();
  const base = allocator.stats().allocated;
  const { rounds, peak } = await publishUntilConflated(server, fastGot, base, 2000);
  const s = server.stats();
  assert.ok(s.conflated >= 2000, `conflated ${s.conflated} after ${rounds} rounds`);
  assert.equal(s.dropped, 0);
  assert.equal(s.slowCloses, 0);
  // The queue held its backlog (<= CAP) and one newest value per topic: never
  // more than twice the limit, however long the publishes went on (drop's bound
  // is CAP). Slack: the queue's ring and the allocator's size classes.
  assert.ok(peak <= 2 * CAP + 256 * 1024, `native memory held for the slow client: ${peak} bytes`);

  // The fast client, on the same IO thread, got everything, in order.
  for (let ti = 0; ti < TOPICS.length; ti++) {
    const ns = fastGot.filter((m) => m.t === ti).map((m) => m.n);
    assert.equal(ns.length, rounds);
    assert.ok(ns.every((v, i) => v === i), `fast client, topic ${ti}, in order`);
  }

  // Reading again, the slow client receives per topic increasing values, ending with the newest.
  const drained = new Promise((resolve) => server.once('drain', resolve));
  slow.resume();
  await waitFor(() => TOPICS.every((_, ti) => slowGot.some((m) => m.t === ti && m.n === rounds - 1)), 20000,
    'the newest value of every topic');
  await drained;
  for (let ti = 0; ti < TOPICS.length; ti++) {
    const ns = slowGot.filter((m) => m.t === ti).map((m) => m.n);
    for (let i = 1; i < ns.length; i++) assert.ok(ns[i] > ns[i - 1], `topic ${ti}: ${ns[i - 1]} then ${ns[i]}`);
    assert.equal(ns[ns.length - 1], rounds - 1);
    assert.ok(ns.length < rounds, `topic ${ti}: skipped older values (${ns.length} of ${rounds})`);
  }
  // What was written plus what was replaced is what was queued.
  assert.equal(slowGot.length + fastGot.length + server.stats().conflated, server.stats().messagesOut);
});

test('send() to a conflating connection is dropped and counted, as with \'drop\'; after it drains, send() arrives', { timeout: 120000 }, async () => {
  const { server, slow, slowId, fastGot, slowGot } = await setup();
  slow.pause();
  // Each handled send() is either queued (messagesOut) or dropped (dropped). The
  // kernel may still take a little from the queue now and then (its buffers grow),
  // so a send goes under the limit sometimes: publish more until one is dropped.
  const dropped = [];
  const queued = [];
  for (let i = 0; i < 50 && dropped.length === 0; i++) {
    await publishUntilConflated(server, fastGot, allocator.stats().allocated, server.stats().conflated + 1);
    const { dropped: d0, messagesOut: m0 } = server.stats();
    // Half the limit: over it while the queue holds more than half (it
    // holds about all of it once a value was conflated), whatever little
    // the kernel takes meanwhile.
    const text = `direct ${i} `.padEnd(CAP / 2, '.');
    assert.equal(server.send(slowId, text), true); // the id is open: handed to its IO thread
    // Waited for as long as the test may take (a busy machine can hold the IO
    // thread back); should it never come, the message says where the send went.
    const handled = () => { const s = server.stats(); return s.dropped + s.messagesOut >= d0 + m0 + 1; };
    await waitFor(handled, 60000, 'the send').catch((e) => {
      const { connections, slowCloses, dropped: d, messagesOut: m, conflated } = server.stats();
      e.message += `: before dropped ${d0} messagesOut ${m0}, now ${JSON.stringify({ d, m, conflated, connections, slowCloses })}`;
      throw e;
    });
    const s1 = server.stats();
    assert.equal(s1.dropped + s1.messagesOut, d0 + m0 + 1, 'the send is counted once, and nothing else was');
    (s1.dropped === d0 + 1 ? dropped : queued).push(text);
  }
  assert.equal(dropped.length, 1, 'a send over the limit was dropped');
  const drained = new Promise((resolve) => server.once('drain', resolve));
  slow.resume();
  await drained;
  assert.equal(server.send(slowId, 'direct after'), true);
  await waitFor(() => slowGot.includes('direct after'), 5000, 'the send after the drain');
  assert.ok(!slowGot.includes(dropped[0]), 'the dropped send never arrives');
  for (const text of queued) assert.ok(slowGot.includes(text), `${text} (queued under the limit) arrived`);
});

test('closing a conflating connection frees what its queue held', { timeout: 120000 }, async () => {
  const { server, slow, slowId, fastGot } = await setup();
  slow.pause();
  await publishUntilConflated(server, fastGot, allocator.stats().allocated, 200);
  // Over the limit: its queue holds more than CAP - SIZE bytes of frames no one else references.
  const held = allocator.stats().allocated;
  const gone = new Promise((resolve) => server.on('close', (id) => { if (id === slowId) resolve(); }));
  server.terminate(slowId);
  await gone;
  await waitFor(() => held - allocator.stats().allocated >= CAP - SIZE, 5000, 'the queue\'s frames to be freed');
  assert.equal(server.stats().connections, 1);
  slow.terminate();
});

test('past twice maxBackpressure (the newest value of very many topics) the slow client is closed 1008', { timeout: 120000 }, async () => {
  const { server, url } = await startServer({ threads: 1, maxBackpressure: CAP, slowConsumer: 'conflate', closeTimeout: 1 });
  const ids = [];
  server.on('open', (id) => ids.push(id));
  const slow = await client(url);
  await waitFor(() => ids.length === 1, 5000, 'the open');
  const many = Array.from({ length: 160 }, (_, i) => `m${i}`);
  for (const t of ['fill', ...many]) server.subscribe(ids[0], t);
  slow.pause();
  // Over the limit first: the kernel's buffers, then the queue (the fill topic conflates).
  for (let i = 0; i < 100000 && server.stats().conflated === 0; i++) {
    server.publish('fill', value(0, i));
    if (i % 64 === 63) await waitFor(() => server.stats().messagesOut === i + 1, 5000, 'the fill publishes');
  }
  assert.ok(server.stats().conflated > 0);
  // 160 topics x 4 KiB of newest values: more than CAP again.
  for (const t of many) server.publish(t, value(1, 0));
  await waitFor(() => server.stats().slowCloses === 1, 5000, 'the close for the bound');
  const done = closed(slow);
  slow.resume();
  assert.equal((await done).code, 1008);
  assert.equal(server.stats().conflated > 0, true);
});

test('a symphony.v1 client sees a conflated topic\'s offsets jump, increasing, ending at the topic\'s last', { timeout: 120000 }, async () => {
  const { server, url } = await startServer({ threads: 1, maxBackpressure: CAP, slowConsumer: 'conflate', history: { size: 10 } });
  const ids = [];
  server.on('open', (id) => ids.push(id));
  const fast = await client(url);
  const slow = await client(url, 'symphony.v1');
  await waitFor(() => ids.length === 2, 5000, 'both opens');
  const fastGot = [];
  fastGot.waiting = null;
  fast.on('message', (d) => {
    fastGot.push(parse(d));
    if (fastGot.waiting && fastGot.length >= fastGot.waiting.count) fastGot.waiting.resolve();
  });
  const offsets = [];
  slow.on('message', (d) => {
    const text = d.toString('latin1');
    const m = /^p\d+,(\d+)\n/.exec(text);
    if (m) offsets.push(Number(m[1]));
  });
  server.subscribe(ids[0], 'h');
  server.subscribe(ids[1], 'h');
  slow.pause();
  await publishUntilConflated(server, fastGot, allocator.stats().allocated, 100, ['h']);
  const last = server.position('h').offset;
  const drained = new Promise((resolve) => server.once('drain', resolve));
  slow.resume();
  await waitFor(() => offsets.includes(last), 20000, 'the last offset');
  await drained;
  for (let i = 1; i < offsets.length; i++) assert.ok(offsets[i] > offsets[i - 1], `${offsets[i - 1]} then ${offsets[i]}`);
  assert.equal(offsets[offsets.length - 1], last);
  assert.ok(offsets.some((o, i) => i > 0 && o > offsets[i - 1] + 1), 'a jump');
  assert.ok(offsets.length < last);
});
