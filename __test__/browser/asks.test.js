'use strict';
// The client library asking, in a real browser (headless Chromium, the
// browser's own WebSocket, client/symphony-client.mjs imported as one
// file): the page subscribes to three rooms, publishes into them and sends
// requests, while the server publishes a numbered sequence into each room
// and cuts the page's connection over and over (server.terminate, at random
// points of the stream). Across the cuts the page unsubscribes one room and
// subscribes to it again from its kept position. Every room's sequence must
// arrive once each, in order, with no gap: every resubscribe recovered, in
// one subscribe frame per reconnect. A room the application refuses is
// refused (forbidden), once, not retried.
// Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Server } = require('../..');
const { openPage, WAITS } = require('../helpers/browser-page');

const ROOMS = ['room.a', 'room.b', 'room.c'];
const CUTS = 12;
const T = { timeout: 60000 };

const page = `<!doctype html><html><head><meta charset="utf-8"><title>symphony asks</title>
<script type="module">
import { SymphonyClient } from '/symphony-client.mjs';
${WAITS}
const S = window.S = { seqs: {}, subscribed: [], refused: [], replies: [], published: [], opens: 0, errors: [] };
let client = null;
window.start = (url, rooms) => {
  client = window.client = new SymphonyClient(url, { backoff: { min: 5, max: 50 } });
  client.on('state', (state) => { if (state === 'open') S.opens++; wake(); });
  client.on('error', (err) => { if (S.errors.length < 20) S.errors.push(err.code + ': ' + err.message); });
  for (const room of rooms) window.join(room);
  return true;
};
window.join = (room) => {
  const sub = client.subscribe(room);
  S.seqs[room] = S.seqs[room] || [];
  sub.on('message', (data) => {
    const m = JSON.parse(data);
    if (m.seq !== undefined) S.seqs[room].push(m.seq);
    wake();
  });
  sub.on('subscribed', (info) => { S.subscribed.push({ room, recovered: info.recovered, reason: info.reason ?? null }); wake(); });
  sub.on('refused', (err) => { S.refused.push({ room, code: err.code, retry: err.retry ?? null }); wake(); });
  return sub.state;
};
window.leave = (room) => { client.subscriptions().find((s) => s.topic === room).unsubscribe(); return true; };
window.say = async (room, text) => {
  const r = await client.publish(room, JSON.stringify({ text }));
  S.published.push(r.offset);
  return r.offset;
};
window.ask = async (q) => { const r = await client.request(JSON.stringify(q)); S.replies.push(r); return r; };
window.states = () => client.subscriptions().map((s) => s.topic + ':' + s.state).sort().join(',');
window.summary = () => JSON.stringify({ counts: Object.fromEntries(Object.entries(S.seqs).map(([k, v]) => [k, v.length])),
  opens: S.opens, state: client && client.state, subs: client && window.states(), refused: S.refused, errors: S.errors });
window.ready = true;
</script></head><body>asks</body></html>`;

test('Chromium: subscribe, unsubscribe, publish and request across cuts: every room exact, no gap, no duplicate', T, async (t) => {
  const asked = [];
  const server = new Server({
    host: '127.0.0.1', port: 0, threads: 2, history: { size: 10000, ttl: 0 },
    onSubscribe: (id, topic, ctx) => { asked.push([topic, ctx.resubscribe]); return topic.startsWith('room.'); },
    onPublish: (id, topic) => topic.startsWith('room.'),
    onRequest: (id, data) => ({ members: server.subscribers(JSON.parse(data).room) }),
  });
  const live = new Set();
  server.on('open', (id) => live.add(id));
  server.on('close', (id) => live.delete(id));
  // Each step's cleanup is registered as soon as there is something to
  // clean: a failed launch (no chromium) ends the file instead of leaving
  // the server listening.
  t.after(() => server.close());
  const { port } = await server.listen();
  const { tab, close } = await openPage(page);
  t.after(close);
  const ev = (js, ms = 20000) => tab.evaluate(js, { timeout: ms + 5000 });

  await ev(`start('ws://127.0.0.1:${port}/', ${JSON.stringify(ROOMS)})`);
  await ev(`until(() => window.states() === '${ROOMS.map((r) => `${r}:subscribed`).join(',')}', 15000, 'subscribed')`);
  assert.deepEqual(await ev(`ask({ room: 'room.a' })`), { members: 1 });

  let seq = 0;
  const publishSome = (n) => { for (let i = 0; i < n; i++) { seq++; for (const r of ROOMS) server.publish(r, JSON.stringify({ seq })); } };
  for (let cut = 0; cut < CUTS; cut++) {
    publishSome(20 + (cut * 7) % 30);
    // Cut now; publish while the page is away; wait until it is back and resubscribed.
    const opensBefore = await ev('S.opens');
    server.terminate([...live][0]);
    publishSome(10 + (cut * 11) % 40);
    await ev(`until(() => S.opens > ${opensBefore} && window.states().split(',').every((s) => s.endsWith(':subscribed')), 15000, 'back after cut ${cut}')`);
    if (cut === 4) {
      // Leave room.b, publish meanwhile, join again: an unsubscribe forgets
      // the position, so the page follows it again from the rejoin on.
      await ev(`leave('room.b')`);
      publishSome(5);
      await ev(`join('room.b')`);
      await ev(`until(() => window.states().includes('room.b:subscribed'), 15000, 'room.b again')`);
    }
    // A publish from the page and a request between cuts.
    const offset = await ev(`say('room.c', 'between ${cut}')`);
    assert.ok(Number.isInteger(offset) && offset > 0);
  }
  publishSome(10);
  const last = seq;
  await ev(`until(() => ${JSON.stringify(['room.a', 'room.c'])}.every((r) => S.seqs[r].at(-1) === ${last}) && S.seqs['room.b'].at(-1) === ${last}, 20000, 'the last messages')`);
  const S = await ev('S');
  const all = Array.from({ length: last }, (_, i) => i + 1);
  assert.deepEqual(S.seqs['room.a'], all, 'room.a: every message once, in order');
  assert.deepEqual(S.seqs['room.c'], all, 'room.c: every message once, in order');
  // room.b: everything until the leave, then everything from its rejoin on,
  // each once and in order (what was published while it was left is not asked for).
  const b = S.seqs['room.b'];
  assert.deepEqual(b, [...b].sort((x, y) => x - y), 'room.b in order');
  assert.equal(new Set(b).size, b.length, 'room.b: no duplicate');
  const gaps = b.slice(1).filter((x, i) => x !== b[i] + 1);
  assert.ok(gaps.length <= 1, `room.b has at most the one gap of its leave: ${gaps}`);
  assert.equal(b.at(-1), last);
  // Every resubscribe after a cut recovered.
  const resumes = S.subscribed.filter((s) => s.recovered !== undefined && s.recovered !== null);
  assert.ok(resumes.length >= CUTS * ROOMS.length - 1, `resumes: ${resumes.length}`);
  assert.deepEqual(resumes.filter((s) => !s.recovered), [], 'every resume recovered');
  assert.ok(asked.filter(([, resub]) => resub).length >= CUTS * ROOMS.length - 1, 'the hook was asked on each resubscribe');
  assert.equal(S.published.length, CUTS);
  assert.deepEqual(S.errors, []);

  // A room the application refuses: refused once, final.
  await ev(`join('lobby')`);
  await ev(`until(() => S.refused.length === 1, 10000, 'refused')`);
  assert.deepEqual((await ev('S')).refused, [{ room: 'lobby', code: 'forbidden', retry: null }]);
  assert.equal(await ev('window.states()'), ROOMS.map((r) => `${r}:subscribed`).join(','));
});
