'use strict';
// Event streams (docs/sse.md): what a symphony.v2 stream's ids carry (its
// event's own position only: its client keeps the others, and says them in
// its URL), what a stream's name names (exactly one stream: a POST to a
// stream that has closed is answered 410), a POST whose bytes arrive one
// at a time, and POSTs that keep their connection (HTTP/1.1 keep-alive).
// Real sockets on loopback.
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
  const answers = reader(sock);
  for (let i = 0; i < req.length; i++) await new Promise((resolve) => sock.write(req.subarray(i, i + 1), resolve));
  assert.match(await answers.next(), /^HTTP\/1\.1 202 /);
  await waitFor(() => got.length === 1, 5000, 'the message');
  assert.deepEqual(got[0], { cid: id, data: body });
  sock.destroy();
  s.close();
});

/** The HTTP answers (heads: the POSTs' answers have no body but an error's
 * text, which Content-Length gives) read from sock, one by one; and
 * whether sock has closed. */
function reader(sock) {
  let buf = '';
  let closed = false;
  const waiting = [];
  const take = () => {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const len = Number((/\r\ncontent-length: (\d+)/i.exec(buf.slice(0, end)) ?? [0, 0])[1]);
    if (buf.length < end + 4 + len) return null;
    const a = buf.slice(0, end + 4 + len);
    buf = buf.slice(end + 4 + len);
    return a;
  };
  const pump = () => {
    while (waiting.length > 0) {
      const a = take();
      if (a !== null) waiting.shift().resolve(a);
      else if (closed) waiting.shift().reject(new Error(`the connection closed; left unread: ${JSON.stringify(buf)}`));
      else return;
    }
  };
  sock.on('data', (d) => { buf += d; pump(); });
  sock.on('close', () => { closed = true; pump(); });
  return {
    next: () => new Promise((resolve, reject) => { waiting.push({ resolve, reject }); pump(); }),
    get closed() { return closed; },
  };
}

test('POSTs keep their connection (HTTP/1.1 keep-alive): each answered 202 without "Connection: close", in order; "Connection: close", HTTP/1.0, a refusal and a pipelined POST close it', async () => {
  const { server, port } = await startServer({ onUpgrade: () => ({ topics: ['t'] }) });
  const got = [];
  server.on('message', (cid, data) => got.push(String(data)));
  const s = await openStream(port);
  const name = await streamName(s);
  const request = (body, { version = '1.1', headers = '' } = {}) =>
    `POST /?sy.stream=${name} HTTP/${version}\r\nHost: x\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const connect = async () => {
    const sock = net.connect(port, '127.0.0.1');
    await once(sock, 'connect');
    return { sock, answers: reader(sock) };
  };

  // Three on one socket, each after the last one's answer.
  const k = await connect();
  for (const m of ['one', 'two', 'three']) {
    k.sock.write(request(m));
    const a = await k.answers.next();
    assert.match(a, /^HTTP\/1\.1 202 /);
    assert.doesNotMatch(a, /connection: close/i);
  }
  await waitFor(() => got.length === 3, 5000, 'three messages');
  assert.deepEqual(got, ['one', 'two', 'three']);
  await waitFor(() => server.stats().keepAlive === 1, 5000, 'the connection kept, waiting');
  assert.ok(server.stats().keptAnswers >= 3);
  assert.equal(k.answers.closed, false);
  // The kept connection takes an upgrade request too: it reads heads again.
  k.sock.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.match(await k.answers.next(), /^HTTP\/1\.1 426 /);
  k.sock.destroy();

  // What closes it: the client's "Connection: close", an HTTP/1.0 client,
  // a refusal at the head (a name no stream has) or from the stream's
  // thread (a stream that has closed), a POST pipelined behind another
  // (not read: the first one's answer closes).
  const closedOne = await openStream(port);
  const closedName = await streamName(closedOne);
  const gone = once(server, 'close');
  closedOne.close();
  await gone;
  const cases = [
    { what: 'a closed stream', send: request('to nobody').replace(name, closedName), status: 410 },
    { what: 'Connection: close', send: request('four', { headers: 'Connection: close\r\n' }), status: 202 },
    { what: 'HTTP/1.0', send: request('five', { version: '1.0' }), status: 202 },
    { what: 'a refusal', send: request('six').replace(name, `${name.slice(0, 79)}${name[79] === '0' ? '1' : '0'}`), status: 404 },
    { what: 'pipelined', send: request('seven') + request('never read'), status: 202 },
  ];
  for (const c of cases) {
    const x = await connect();
    x.sock.write(c.send);
    const a = await x.answers.next();
    assert.match(a, new RegExp(`^HTTP/1\\.[01] ${c.status} `), c.what);
    assert.match(a, /connection: close/i, c.what);
    if (!x.answers.closed) await once(x.sock, 'close');
  }
  await waitFor(() => got.length === 6, 5000, 'six messages');
  assert.deepEqual(got, ['one', 'two', 'three', 'four', 'five', 'seven']);
  s.close();
});
