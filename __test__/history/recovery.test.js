'use strict';
// Recovery, reason by reason (docs/history.md, docs/protocol.md
// "symphony.v1"): what the client gets (the subscribed notice, its fields,
// the replay), what the application gets ('open' info.recovery, 'recovery'
// events, in that order), the counters, and what does not change: plain
// clients get bare payloads, as before history.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, closeAll, client } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { connectV1, sinceQuery } = require('../helpers/v1');

test.afterEach(closeAll);

const OTHER_EPOCH = (epoch) => (epoch === '0123456789abcdef' ? 'fedcba9876543210' : '0123456789abcdef');

/** Records the server's 'open' and 'recovery' events, in order. */
function recorder(server) {
  const ev = [];
  server.on('open', (id, info) => ev.push(['open', id, info]));
  server.on('recovery', (id, topic, r) => ev.push(['recovery', id, topic, r]));
  return ev;
}

/** The counters a resume moves, from stats(). */
function counters(server) {
  const s = server.stats();
  const keys = ['recovered', 'replays', 'replayed', 'recoveryFailedEpoch', 'recoveryFailedTrimmed', 'recoveryFailedFuture',
    'recoveryFailedTooLarge', 'recoveryFailedNoHistory', 'recoveryFailedMemory'];
  return Object.fromEntries(keys.map((k) => [k, s[k]]));
}

/** after - before, only the counters that moved. */
function moved(before, after) {
  const out = {};
  for (const k of Object.keys(after)) if (after[k] !== before[k]) out[k] = after[k] - before[k];
  return out;
}

function publishN(server, topic, n, from = 1) {
  for (let i = from; i < from + n; i++) server.publish(topic, `${topic}-${i}`);
}

/** Opens a v1 connection and waits for its subscribed notice on topic. */
async function resume(url, since, topic = 'a', opts = {}) {
  const c = await connectV1(url, { since, ...opts });
  await c.until((x) => x.notices('subscribed').some((n) => n.topic === topic), 10000, `the subscribed notice for ${topic}`);
  return c;
}

const payloads = (c, topic) => c.messages(topic).map((f) => [Number(f.offset), f.payload.toString()]);

test('recovered: the notice, then exactly since+1..head replayed, then live; open info.recovery then the recovery event; counters', async () => {
  const { server, url } = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['a'] }) });
  const ev = recorder(server);
  publishN(server, 'a', 8);
  const pos = server.position('a');
  assert.match(pos.epoch, /^[0-9a-f]{16}$/);
  assert.deepEqual(pos, { epoch: pos.epoch, offset: 8, first: 1, kept: 8 });
  const before = counters(server);
  const c = await resume(url, [{ epoch: pos.epoch, offset: 3, topic: 'a' }]);
  await c.until((x) => x.messages('a').length === 5, 10000, 'the replay');
  // The notice comes first, with exactly the documented fields.
  assert.equal(c.frames[0].kind, 'c');
  const n = c.frames[0].notice;
  assert.deepEqual(n, { type: 'subscribed', topic: 'a', id: n.id, epoch: pos.epoch, offset: '8', since: '3', recovered: true });
  assert.equal(Object.keys(n).join(), 'type,topic,id,epoch,offset,since,recovered');
  assert.ok(Number.isInteger(n.id) && n.id >= 0);
  assert.deepEqual(payloads(c, 'a'), [[4, 'a-4'], [5, 'a-5'], [6, 'a-6'], [7, 'a-7'], [8, 'a-8']]);
  assert.ok(c.messages('a').every((f) => f.id === n.id && f.binary === false));
  // Live after the replay.
  server.publish('a', 'a-9');
  await c.until((x) => x.messages('a').length === 6);
  assert.deepEqual(payloads(c, 'a').at(-1), [9, 'a-9']);
  assert.equal(c.frames.length, 7, 'nothing else arrived');
  // The application: 'open' with info.recovery, then the 'recovery' event.
  await waitFor(() => ev.length >= 2, 5000, 'open and recovery events');
  assert.equal(ev.length, 2);
  const [[kind0, id0, info], [kind1, id1, topic1, r1]] = ev;
  assert.equal(kind0, 'open');
  assert.equal(info.protocol, 'symphony.v1');
  assert.deepEqual(info.recovery, [{ topic: 'a', recovered: true, reason: null }]);
  assert.equal(kind1, 'recovery');
  assert.equal(id1, id0);
  assert.equal(topic1, 'a');
  assert.deepEqual(r1, { recovered: true, reason: null });
  assert.deepEqual(moved(before, counters(server)), { recovered: 1, replays: 1, replayed: 5 });
  assert.deepEqual(server.position('a'), { epoch: pos.epoch, offset: 9, first: 1, kept: 9 });
  c.ws.close();
  await c.closed;
});

test('recovered with nothing missed: no replay, counted as recovered, not as a replay', async () => {
  const { server, url } = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['a'] }) });
  publishN(server, 'a', 4);
  const { epoch } = server.position('a');
  const before = counters(server);
  const c = await resume(url, [{ epoch, offset: 4, topic: 'a' }]);
  assert.deepEqual(c.notices('subscribed')[0], { type: 'subscribed', topic: 'a', id: c.notices('subscribed')[0].id, epoch, offset: '4', since: '4', recovered: true });
  server.publish('a', 'a-5');
  await c.until((x) => x.messages('a').length === 1);
  assert.deepEqual(payloads(c, 'a'), [[5, 'a-5']]);
  assert.deepEqual(moved(before, counters(server)), { recovered: 1 });
});

/** A resume that fails with reason: the notice, no replay, live from the head; the events and the counter. */
async function failsWith({ server, url }, since, reason, counter, topic = 'a') {
  const ev = recorder(server);
  const before = counters(server);
  const head = server.position(topic);
  const c = await resume(url, since, topic);
  const n = c.notices('subscribed').find((x) => x.topic === topic);
  const given = since.find((s) => s.topic === topic);
  if (head !== null) {
    assert.deepEqual(n, { type: 'subscribed', topic, id: n.id, epoch: head.epoch, offset: String(head.offset),
      since: String(given.offset), recovered: false, reason });
    assert.equal(Object.keys(n).join(), 'type,topic,id,epoch,offset,since,recovered,reason');
  } else {
    assert.deepEqual(n, { type: 'subscribed', topic, id: n.id, since: String(given.offset), recovered: false, reason });
  }
  // Live goes on from now, and nothing was replayed before it.
  server.publish(topic, 'live');
  await c.until((x) => x.messages(topic).length === 1, 10000, 'the live message');
  const live = c.messages(topic)[0];
  assert.equal(live.payload.toString(), 'live');
  if (head !== null) assert.equal(live.offset, BigInt(head.offset) + 1n);
  else assert.equal(live.offset, undefined);
  assert.equal(c.frames.filter((f) => f.kind === 'p').length, 1, 'no replay');
  await waitFor(() => ev.length >= 2, 5000, 'open and recovery events');
  assert.equal(ev[0][0], 'open');
  assert.deepEqual(ev[0][2].recovery, [{ topic, recovered: false, reason }]);
  assert.deepEqual(ev.slice(1), [['recovery', ev[0][1], topic, { recovered: false, reason }]]);
  assert.deepEqual(moved(before, counters(server)), { [counter]: 1 });
  c.ws.close();
  await c.closed;
  server.removeAllListeners('open');
  server.removeAllListeners('recovery');
}

test('epoch: a position from another epoch', async () => {
  const s = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['a'] }) });
  publishN(s.server, 'a', 3);
  const { epoch } = s.server.position('a');
  await failsWith(s, [{ epoch: OTHER_EPOCH(epoch), offset: 2, topic: 'a' }], 'epoch', 'recoveryFailedEpoch');
  // The epoch is compared as a number: upper case hex is the same epoch.
  const c = await resume(s.url, [{ epoch: epoch.toUpperCase(), offset: 4, topic: 'a' }]);
  assert.equal(c.notices('subscribed')[0].recovered, true);
  c.ws.close();
});

test('trimmed by size: the first missed message is gone; the oldest kept still replays', async () => {
  const s = await startServer({ history: { size: 5, ttl: 0 }, onUpgrade: () => ({ topics: ['a'] }) });
  publishN(s.server, 'a', 12);
  const pos = s.server.position('a');
  assert.deepEqual(pos, { epoch: pos.epoch, offset: 12, first: 8, kept: 5 });
  await failsWith(s, [{ epoch: pos.epoch, offset: 6, topic: 'a' }], 'trimmed', 'recoveryFailedTrimmed');
  // 13 published now (the live one of failsWith): 9..13 kept. since 8: the
  // oldest kept is the first missed, so 9..13 replay.
  assert.deepEqual(s.server.position('a'), { epoch: pos.epoch, offset: 13, first: 9, kept: 5 });
  const c = await resume(s.url, [{ epoch: pos.epoch, offset: 8, topic: 'a' }]);
  await c.until((x) => x.messages('a').length === 5);
  assert.equal(c.notices('subscribed')[0].recovered, true);
  assert.deepEqual(c.messages('a').map((f) => Number(f.offset)), [9, 10, 11, 12, 13]);
  c.ws.close();
});

test('trimmed by ttl: expired messages leave the history (the sweep), the topic and its epoch stay while a handle holds it', { timeout: 20000 }, async () => {
  const s = await startServer({ history: { size: 100, ttl: 1 }, onUpgrade: () => ({ topics: ['a'] }) });
  const handle = s.server.topic('a');
  publishN(s.server, 'a', 3);
  const pos = handle.position;
  assert.deepEqual(pos, { epoch: pos.epoch, offset: 3, first: 1, kept: 3 });
  // Within a ttl and the once-a-second sweep (bounded wait, not a sleep).
  await waitFor(() => handle.position.kept === 0, 5000, 'the messages to expire');
  assert.equal(handle.position.epoch, pos.epoch);
  assert.equal(handle.position.offset, 3);
  await failsWith(s, [{ epoch: pos.epoch, offset: 1, topic: 'a' }], 'trimmed', 'recoveryFailedTrimmed');
  assert.equal(handle.name, 'a');
});

test('future: a position past the last offset', async () => {
  const s = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['a'] }) });
  publishN(s.server, 'a', 3);
  const { epoch } = s.server.position('a');
  await failsWith(s, [{ epoch, offset: 4, topic: 'a' }], 'future', 'recoveryFailedFuture');
});

test('too-large: a replay over maxBackpressure is not sent; one under it is', async () => {
  const s = await startServer({ history: { size: 100, ttl: 0 }, maxBackpressure: 2048, onUpgrade: () => ({ topics: ['a'] }) });
  for (let i = 1; i <= 40; i++) s.server.publish('a', `${i}`.padEnd(200, '.'));
  const { epoch } = s.server.position('a');
  await failsWith(s, [{ epoch, offset: 0, topic: 'a' }], 'too-large', 'recoveryFailedTooLarge');
  const c = await resume(s.url, [{ epoch, offset: 36, topic: 'a' }]);
  await c.until((x) => x.messages('a').length === 5);
  assert.equal(c.notices('subscribed')[0].recovered, true);
  assert.deepEqual(c.messages('a').map((f) => Number(f.offset)), [37, 38, 39, 40, 41]);
  c.ws.close();
});

test('no-history: a topic with history size 0 on a history server; a history-off server', async () => {
  const on = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['quiet'] }) });
  const quiet = on.server.topic('quiet', { history: { size: 0 } });
  quiet.publish('before');
  assert.equal(on.server.position('quiet'), null);
  assert.equal(quiet.position, null);
  await failsWith(on, [{ epoch: '0123456789abcdef', offset: 1, topic: 'quiet' }], 'no-history', 'recoveryFailedNoHistory', 'quiet');
  const off = await startServer({ onUpgrade: () => ({ topics: ['a'] }) });
  off.server.publish('a', 'before');
  assert.equal(off.server.position('a'), null);
  await failsWith(off, [{ epoch: '0123456789abcdef', offset: 1, topic: 'a' }], 'no-history', 'recoveryFailedNoHistory');
});

test('not-symphony.v1: a plain client with sy.since is told nothing; the application learns why; bare payloads', async () => {
  const { server, url } = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['a'] }) });
  const ev = recorder(server);
  publishN(server, 'a', 3);
  const { epoch } = server.position('a');
  const before = counters(server);
  const ws = await client(`${url}/?${sinceQuery([{ epoch, offset: 1, topic: 'a' }])}`);
  const got = [];
  ws.on('message', (data, isBinary) => got.push([data.toString(), isBinary]));
  assert.equal(ws.protocol, '');
  await waitFor(() => ev.length >= 2, 5000, 'open and recovery events');
  assert.deepEqual(ev[0][2].recovery, [{ topic: 'a', recovered: false, reason: 'not-symphony.v1' }]);
  assert.deepEqual(ev.slice(1), [['recovery', ev[0][1], 'a', { recovered: false, reason: 'not-symphony.v1' }]]);
  server.publish('a', 'plain');
  await waitFor(() => got.length >= 1, 5000, 'the live message');
  assert.deepEqual(got, [['plain', false]], 'the first frame is the live message, bare: no notice, no replay');
  // There is no counter of its own: it is counted with no-history
  // (src/io/app/sy_resume.c), although this topic keeps history.
  assert.deepEqual(moved(before, counters(server)), { recoveryFailedNoHistory: 1 });
  ws.close();
});

test('several topics at the accept: info.recovery lists each resume, in order; a topic without a position has none', async () => {
  const { server, url } = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['a', 'b', 'c'] }) });
  const ev = recorder(server);
  publishN(server, 'a', 3);
  publishN(server, 'b', 3);
  publishN(server, 'c', 3);
  const ea = server.position('a').epoch;
  const c = await resume(url, [{ epoch: ea, offset: 1, topic: 'a' }, { epoch: OTHER_EPOCH(server.position('b').epoch), offset: 1, topic: 'b' }], 'c');
  await c.until((x) => x.notices('subscribed').length === 3 && x.messages('a').length === 2);
  await waitFor(() => ev.length >= 3, 5000, 'the events');
  assert.deepEqual(ev[0][2].recovery, [{ topic: 'a', recovered: true, reason: null }, { topic: 'b', recovered: false, reason: 'epoch' }]);
  assert.deepEqual(ev.slice(1).map((e) => e.slice(2)), [['a', { recovered: true, reason: null }], ['b', { recovered: false, reason: 'epoch' }]]);
  const nc = c.notices('subscribed').find((x) => x.topic === 'c');
  assert.deepEqual(nc, { type: 'subscribed', topic: 'c', id: nc.id, epoch: server.position('c').epoch, offset: '3' });
  // Ids differ per topic.
  assert.equal(new Set(c.notices('subscribed').map((x) => x.id)).size, 3);
  c.ws.close();
});

test('a later subscribe with since: the notice and replay, then the recovery event (not in open); unsubscribe sends unsubscribed', async () => {
  const { server, url } = await startServer({ history: { size: 10, ttl: 0 } });
  const ev = recorder(server);
  publishN(server, 'b', 6);
  const { epoch } = server.position('b');
  const c = await connectV1(url);
  await waitFor(() => ev.length === 1, 5000, 'open');
  const id = ev[0][1];
  assert.deepEqual(ev[0][2].recovery, []);
  const before = counters(server);
  assert.equal(server.subscribe(id, 'b', { since: { epoch, offset: 4 } }), true);
  await c.until((x) => x.messages('b').length === 2);
  await waitFor(() => ev.length === 2, 5000, 'the recovery event');
  assert.deepEqual(ev[1], ['recovery', id, 'b', { recovered: true, reason: null }]);
  const n = c.notices('subscribed')[0];
  assert.deepEqual(n, { type: 'subscribed', topic: 'b', id: n.id, epoch, offset: '6', since: '4', recovered: true });
  assert.deepEqual(payloads(c, 'b'), [[5, 'b-5'], [6, 'b-6']]);
  assert.deepEqual(moved(before, counters(server)), { recovered: 1, replays: 1, replayed: 2 });
  // A failing later subscribe: the event says why.
  publishN(server, 'e', 2);
  assert.equal(server.subscribe(id, 'e', { since: { epoch: server.position('e').epoch, offset: 9 } }), true);
  await waitFor(() => ev.length === 3, 5000, 'the second recovery event');
  assert.deepEqual(ev[2], ['recovery', id, 'e', { recovered: false, reason: 'future' }]);
  // A subscribe without since: a notice without recovery fields, no event.
  publishN(server, 'f', 1);
  assert.equal(server.subscribe(id, 'f'), true);
  await c.until((x) => x.notices('subscribed').length === 3);
  const nf = c.notices('subscribed')[2];
  assert.deepEqual(nf, { type: 'subscribed', topic: 'f', id: nf.id, epoch: server.position('f').epoch, offset: '1' });
  // Unsubscribe: the notice, and nothing more of that topic.
  assert.equal(server.unsubscribe(id, 'b'), true);
  await c.until((x) => x.notices('unsubscribed').length === 1);
  assert.deepEqual(c.notices('unsubscribed')[0], { type: 'unsubscribed', topic: 'b', id: n.id });
  server.publish('b', 'b-7');
  server.publish('f', 'f-2');
  await c.until((x) => x.messages('f').length === 1);
  assert.equal(c.messages('b').length, 2);
  assert.equal(ev.length, 3);
  c.ws.close();
});

test('subscribe since: its arguments are checked', async () => {
  const { server } = await startServer({ history: true });
  assert.throws(() => server.subscribe(1, 'a', { since: { epoch: 'xyz', offset: 1 } }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => server.subscribe(1, 'a', { since: { epoch: '0123456789abcdef', offset: -1 } }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => server.subscribe(1, 'a', { since: { epoch: '0123456789abcdef', offset: 2 ** 65 } }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => server.subscribe(1, 'a', { since: { epoch: '0123456789abcdef', offset: 1.5 } }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => server.subscribe(1, 'a', { since: 5 }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => server.subscribe(1, 'a', { from: 5 }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.equal(server.subscribe(12345, 'a', { since: { epoch: '0123456789abcdef', offset: 1 } }), false, 'unknown id');
});

test('plain clients on a history server: bare payloads, text and binary, publish and send, as before', async () => {
  const { server, url } = await startServer({ history: true, onUpgrade: () => ({ topics: ['a'] }) });
  const ids = [];
  server.on('open', (id, info) => ids.push([id, info]));
  const ws = await client(url);
  await waitFor(() => ids.length === 1, 5000, 'open');
  assert.equal(ids[0][1].protocol, '');
  assert.deepEqual(ids[0][1].recovery, []);
  const got = [];
  ws.on('message', (data, isBinary) => got.push([Buffer.from(data), isBinary]));
  server.publish('a', 'text one');
  server.publish('a', Buffer.from([0, 1, 2, 0x0a, 255]));
  server.send(ids[0][0], 'direct');
  server.send(ids[0][0], Buffer.from([9, 8]));
  await waitFor(() => got.length === 4, 5000, 'four messages');
  assert.deepEqual(got, [[Buffer.from('text one'), false], [Buffer.from([0, 1, 2, 0x0a, 255]), true],
    [Buffer.from('direct'), false], [Buffer.from([9, 8]), true]]);
  assert.equal(server.position('a').offset, 2, 'the history numbered them all the same');
  ws.close();
});

test('symphony.v1 frames: send has the d header; text stays text, binary binary; a topic without history gives p<id> frames', async () => {
  const { server, url } = await startServer({ history: { size: 10, ttl: 0 }, onUpgrade: () => ({ topics: ['a', 'quiet'] }) });
  const quiet = server.topic('quiet', { history: { size: 0 } });
  const ids = [];
  server.on('open', (id) => ids.push(id));
  const c = await connectV1(url);
  await c.until((x) => x.notices('subscribed').length === 2);
  await waitFor(() => ids.length === 1, 5000, 'open');
  const nq = c.notices('subscribed').find((x) => x.topic === 'quiet');
  assert.deepEqual(nq, { type: 'subscribed', topic: 'quiet', id: nq.id });
  assert.ok(c.frames.slice(0, 2).every((f) => f.kind === 'c' && f.binary === false), 'notices are text frames');
  server.publish('a', 'héllo\nworld');
  server.publish('a', Buffer.from([0, 0x0a, 0xff]));
  quiet.publish('q-text');
  quiet.publish(Buffer.from([7, 0x0a]));
  server.send(ids[0], 'to you\n');
  server.send(ids[0], Buffer.from([0xfe, 0x0a]));
  await c.until((x) => x.frames.length === 8);
  const [, , a1, a2, q1, q2, d1, d2] = c.frames;
  assert.deepEqual([a1.kind, a1.offset, a1.payload.toString(), a1.binary], ['p', 1n, 'héllo\nworld', false]);
  assert.deepEqual([a2.kind, a2.offset, a2.payload, a2.binary], ['p', 1n + 1n, Buffer.from([0, 0x0a, 0xff]), true]);
  assert.deepEqual([q1.kind, q1.id, q1.offset, q1.payload.toString(), q1.binary], ['p', nq.id, undefined, 'q-text', false]);
  assert.deepEqual([q2.kind, q2.id, q2.offset, q2.payload, q2.binary], ['p', nq.id, undefined, Buffer.from([7, 0x0a]), true]);
  assert.deepEqual([d1.kind, d1.payload.toString(), d1.binary], ['d', 'to you\n', false]);
  assert.deepEqual([d2.kind, d2.payload, d2.binary], ['d', Buffer.from([0xfe, 0x0a]), true]);
  c.ws.close();
});

test('permessage-deflate: the same decoded frames, notices and replay', async () => {
  const { server, url } = await startServer({ history: { size: 50, ttl: 0 }, compression: { threshold: 0, level: 6 },
    onUpgrade: () => ({ topics: ['a'] }) });
  const big = (i) => `${i}:${'compressible '.repeat(40)}`;
  for (let i = 1; i <= 10; i++) server.publish('a', big(i));
  server.publish('a', Buffer.alloc(300, 7));
  const { epoch } = server.position('a');
  const opts = { wsOptions: { perMessageDeflate: true } };
  const c = await resume(url, [{ epoch, offset: 4, topic: 'a' }], 'a', opts);
  assert.match(c.ws.extensions, /permessage-deflate/);
  const plain = await resume(url, [{ epoch, offset: 4, topic: 'a' }], 'a', { wsOptions: { perMessageDeflate: false } });
  assert.equal(plain.ws.extensions, '');
  server.publish('a', big(12));
  await c.until((x) => x.messages('a').length === 8);
  await plain.until((x) => x.messages('a').length === 8);
  const decoded = (x) => x.frames.map((f) => (f.kind === 'c' ? { ...f.notice, id: 0 } : [f.kind, f.offset, f.payload.toString('hex'), f.binary]));
  assert.deepEqual(decoded(c), decoded(plain));
  assert.deepEqual(c.messages('a').map((f) => Number(f.offset)), [5, 6, 7, 8, 9, 10, 11, 12]);
  assert.equal(c.messages('a')[6].binary, true);
  assert.deepEqual(c.messages('a')[0].payload.toString(), big(5));
  const s = server.stats();
  assert.equal(s.deflateConnections, 1);
  assert.ok(s.compressed > 0, 'frames went out compressed');
  c.ws.close();
  plain.ws.close();
});
