'use strict';
// Event streams (docs/sse.md): what a symphony.v2 stream's ids carry (its
// event's own position only: its client keeps the others, and says them in
// its URL), what a stream's name names (exactly one stream: a POST to a
// stream that has closed is answered 410), and a POST whose bytes arrive
// one at a time. Real sockets on loopback.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { openStream, streamName, post } = require('../helpers/sse');

test.afterEach(closeAll);

/** The entries of an id: [{ epoch, offset, topic }]. */
function entries(id) {
  return id.split('&').map((part) => {
    const v = decodeURIComponent(part.replace(/^sy\.since=/, ''));
    const [epoch, offset, ...topic] = v.split(':');
    return { epoch, offset, topic: topic.join(':') };
  });
}

test('a symphony.v2 stream: each publish\'s id is its own topic\'s position only, notices carry none; its URL\'s positions resume every topic', async () => {
  const topics = Array.from({ length: 50 }, (_, i) => `t${i}`);
  const { server, port } = await startServer({
    history: { size: 100 },
    onUpgrade: (req) => (req.protocols.includes('symphony.v2') ? { topics, protocol: 'symphony.v2' } : { topics }),
  });
  const s = await openStream(port, { path: '/?sy.protocol=symphony.v2' });
  const open = await s.next((e) => e.event === 'sy.open');
  assert.equal(JSON.parse(open.data).protocol, 'symphony.v2');
  await s.next((e) => e.event === 'sy.notice' && JSON.parse(e.data).topic === 't49');
  assert.ok(s.events.filter((e) => e.event === 'sy.notice').every((e) => e.id === ''), 'no notice carries an id');
  for (const t of topics) server.publish(t, `${t}-a`);
  server.publish('t7', 't7-b');
  const last = await s.next((e) => e.event === 't7' && e.data === 't7-b');
  const got = s.events.filter((e) => topics.includes(e.event));
  assert.equal(got.length, 51);
  for (const e of got) {
    const es = entries(e.id);
    assert.equal(es.length, 1, e.id);
    assert.equal(es[0].topic, e.event);
    assert.match(es[0].epoch, /^[0-9a-f]{16}$/);
  }
  assert.equal(entries(last.id)[0].offset, '2');
  // A symphony.v1 stream of the same topics still gets every position (a
  // browser's EventSource keeps nothing else).
  const v1 = await openStream(port);
  await v1.next((e) => e.event === 'sy.notice' && JSON.parse(e.data).topic === 't49');
  server.publish('t3', 't3-b');
  const e1 = await v1.next((e) => e.event === 't3');
  assert.equal(entries(e1.id).length, 50);
  assert.equal(entries(e1.id)[0].topic, 't3');
  v1.close();
  // Its client kept the positions (as the client library does) and says them
  // in its URL: each topic resumes exactly.
  const pos = new Map(got.map((e) => [e.event, entries(e.id)[0]]));
  pos.set('t3', entries(e1.id)[0]);
  s.close();
  await s.done;
  server.publish('t3', 't3-c');
  server.publish('t40', 't40-b');
  const since = [...pos.values()].map((p) => `sy.since=${encodeURIComponent(`${p.epoch}:${p.offset}:${p.topic}`)}`).join('&');
  const again = await openStream(port, { path: `/?sy.protocol=symphony.v2&${since}` });
  const replay = [];
  await again.next((e) => {
    if (topics.includes(e.event)) replay.push(e);
    return replay.length === 2;
  });
  assert.deepEqual(replay.map((e) => e.data).sort(), ['t3-c', 't40-b']);
  for (const e of replay) { // replayed: each with its own position only
    const es = entries(e.id);
    assert.equal(es.length, 1, e.id);
    assert.equal(es[0].topic, e.event);
    assert.equal(es[0].offset, String(Number(pos.get(e.event).offset) + 1));
  }
  server.publish('t0', 't0-b');
  const live = await again.next((e) => e.event === 't0');
  assert.equal(live.data, 't0-b');
  again.close();
});

test('a stream\'s name names that stream only: a POST after it closed is answered 410 and reaches nobody; names differ between streams of the same slot', async () => {
  const { server, port } = await startServer({ threads: 1, onUpgrade: () => ({ topics: ['t'] }) });
  const got = [];
  server.on('message', (cid, data) => got.push({ cid, data: String(data) }));
  const names = [];
  for (let i = 0; i < 3; i++) {
    const opened = once(server, 'open');
    const s = await openStream(port);
    const [id] = await opened;
    const name = await streamName(s);
    assert.match(name, /^[0-9a-f]{80}$/);
    names.push(name);
    assert.equal((await post(port, name, `hello ${i}`)).status, 202);
    await waitFor(() => got.length === i + 1, 5000, 'the message');
    assert.deepEqual(got[i], { cid: id, data: `hello ${i}` });
    const closed = once(server, 'close');
    s.close();
    await closed;
    const late = await post(port, name, 'late');
    assert.equal(late.status, 410);
    assert.match(late.body, /the event stream has closed/);
  }
  assert.equal(new Set(names).size, 3);
  // Every earlier name, again: none reaches anyone.
  for (const name of names) assert.equal((await post(port, name, 'again')).status, 410);
  assert.equal(got.length, 3);
});

test('a POST whose head and body arrive one byte at a time is answered 202 and delivered whole', async () => {
  const { server, port } = await startServer({ onUpgrade: () => ({ topics: ['t'] }) });
  const opened = once(server, 'open');
  const s = await openStream(port);
  const [id] = await opened;
  const name = await streamName(s);
  const got = [];
  server.on('message', (cid, data) => got.push({ cid, data: String(data) }));
  const body = 'one byte at a time: ü';
  const req = Buffer.from(`POST /?sy.stream=${name} HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  const sock = net.connect(port, '127.0.0.1');
  sock.setNoDelay(true);
  await once(sock, 'connect');
  let answer = '';
  sock.on('data', (d) => { answer += d; });
  for (let i = 0; i < req.length; i++) await new Promise((resolve) => sock.write(req.subarray(i, i + 1), resolve));
  await once(sock, 'close');
  assert.match(answer, /^HTTP\/1\.1 202 /);
  await waitFor(() => got.length === 1, 5000, 'the message');
  assert.deepEqual(got[0], { cid: id, data: body });
  s.close();
});
