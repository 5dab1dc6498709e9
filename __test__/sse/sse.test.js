'use strict';
// Event streams (Server-Sent Events, docs/sse.md) from the IO threads:
// a GET that asks for text/event-stream, authorized by onUpgrade; each
// publish as an event whose id carries the stream's positions; exact resume
// from Last-Event-ID (or the URL's sy.since); the client's messages as
// POSTs; the close; the limits and the metrics. Real sockets, node:http as
// the client, the body parsed as EventSource parses it (helpers/sse.js).
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { startServer, closeAll, client, nextMessage } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { openStream, streamName, post } = require('../helpers/sse');

test.afterEach(closeAll);

/** The positions of an id: { topic: 'epoch:offset' }. */
function positions(id) {
  const out = {};
  for (const part of id.split('&')) {
    const v = decodeURIComponent(part.replace(/^sy\.since=/, ''));
    const [epoch, offset, ...topic] = v.split(':');
    out[topic.join(':')] = `${epoch}:${offset}`;
  }
  return out;
}

test('a GET for text/event-stream: onUpgrade is asked (transport sse), the stream opens with its headers and sy.open', async () => {
  const reqs = [];
  const { server, port } = await startServer({
    onUpgrade: (req) => { reqs.push(req); return { topics: ['news'], data: 'd', headers: { 'X-Hello': 'yes' } }; },
  });
  const opened = once(server, 'open');
  const s = await openStream(port, { path: '/feed?x=1', headers: { authorization: 'Bearer abc' } });
  assert.equal(s.status, 200);
  assert.match(s.headers['content-type'], /^text\/event-stream/);
  assert.equal(s.headers['cache-control'], 'no-cache, no-transform');
  assert.equal(s.headers['x-accel-buffering'], 'no');
  assert.equal(s.headers['x-hello'], 'yes');
  const [id, info] = await opened;
  assert.equal(info.transport, 'sse');
  assert.equal(info.data, 'd');
  assert.equal(reqs.length, 1);
  assert.equal(reqs[0].transport, 'sse');
  assert.equal(reqs[0].url, '/feed?x=1');
  assert.equal(reqs[0].headers.authorization, 'Bearer abc');
  const name = await streamName(s);
  assert.match(name, /^[0-9a-f]{80}$/);
  const sub = await s.next((e) => e.event === 'sy.notice');
  assert.equal(JSON.parse(sub.data).type, 'subscribed');
  assert.equal(server.stats().sseConnections, 1);
  assert.equal(server.stats().sseOpened, 1);
  const closed = once(server, 'close');
  s.close();
  const [cid, code] = await closed;
  assert.equal(cid, id);
  assert.equal(code, 1006); // the client left without a close handshake (as a dropped WebSocket)
  await waitFor(() => server.stats().sseConnections === 0, 5000, 'the gauge to go down');
});

test('publishes arrive as events named by their topic: text lines, CR/CRLF made LF, binary as base64 with enc', async () => {
  const { server, port } = await startServer({ onUpgrade: () => ({ topics: ['a b', 'other'] }) });
  const s = await openStream(port);
  await s.next((e) => e.event === 'sy.notice' && JSON.parse(e.data).topic === 'other');
  server.publish('a b', 'one\ntwo\r\nthree\rfour');
  server.publish('other', Buffer.from([0, 1, 2, 250]));
  server.publish('a b', '');
  const e1 = await s.next((e) => e.event === 'a b');
  assert.equal(e1.data, 'one\ntwo\nthree\nfour');
  const e2 = await s.next((e) => e.event === 'other');
  assert.equal(e2.fields.enc, 'base64');
  assert.deepEqual(Buffer.from(e2.data, 'base64'), Buffer.from([0, 1, 2, 250]));
  const e3 = await s.next((e) => e.event === 'a b');
  assert.equal(e3.data, '');
  s.close();
});

test('a direct message (server.send) is a "message" event; the stream\'s id stays', async () => {
  const { server, port } = await startServer({ history: { size: 10 }, onUpgrade: () => ({ topics: ['t'] }) });
  const opened = once(server, 'open');
  const s = await openStream(port);
  const [id] = await opened;
  await s.next((e) => e.event === 'sy.notice');
  server.publish('t', 'p1');
  const p1 = await s.next((e) => e.event === 't');
  server.send(id, 'hello\nthere');
  const m = await s.next((e) => e.event === 'message');
  assert.equal(m.data, 'hello\nthere');
  assert.equal(m.id, p1.id, 'no id of its own');
  s.close();
});

test('ids carry every topic\'s position (this event\'s topic first); Last-Event-ID resumes each exactly', async () => {
  const { server, port } = await startServer({ history: { size: 100 }, onUpgrade: () => ({ topics: ['x', 'y'] }) });
  server.on('error', () => {});
  const recoveries = [];
  server.on('recovery', (id, topic, r) => recoveries.push({ topic, ...r }));
  const s = await openStream(port);
  await s.next((e) => e.event === 'sy.notice' && JSON.parse(e.data).topic === 'y');
  for (let i = 0; i < 3; i++) server.publish('x', `x${i}`);
  server.publish('y', 'y0');
  const last = await s.next((e) => e.event === 'y');
  const pos = positions(last.id);
  assert.deepEqual(Object.keys(pos), ['y', 'x'], 'its own topic first');
  assert.match(pos.x, /^[0-9a-f]{16}:3$/);
  assert.match(pos.y, /^[0-9a-f]{16}:1$/);
  s.close();
  await s.done;
  // Missed while away: 2 on x, 1 on y.
  server.publish('x', 'x3');
  server.publish('y', 'y1');
  server.publish('x', 'x4');
  const again = await openStream(port, { headers: { 'last-event-id': last.id } });
  const seen = [];
  await again.next((e) => {
    if (e.event === 'x' || e.event === 'y') seen.push(e.data);
    return seen.length === 3;
  });
  assert.deepEqual(seen.filter((d) => d.startsWith('x')), ['x3', 'x4']);
  assert.deepEqual(seen.filter((d) => d.startsWith('y')), ['y1']);
  await waitFor(() => recoveries.length === 2, 5000, 'two recoveries');
  assert.ok(recoveries.every((r) => r.recovered), JSON.stringify(recoveries));
  // Nothing is sent twice: the next live publish follows.
  server.publish('x', 'x5');
  const live = await again.next((e) => e.event === 'x');
  assert.equal(live.data, 'x5');
  assert.match(positions(live.id).x, /:6$/);
  again.close();
});

test('the URL\'s sy.since (the first connection) resumes as Last-Event-ID does; a foreign epoch is not recovered', async () => {
  const { server, port } = await startServer({ history: { size: 100 }, onUpgrade: () => ({ topics: ['t'] }) });
  const recoveries = [];
  server.on('recovery', (id, topic, r) => recoveries.push(r));
  const s = await openStream(port);
  await s.next((e) => e.event === 'sy.notice');
  server.publish('t', 'a');
  const a = await s.next((e) => e.event === 't');
  s.close();
  server.publish('t', 'b');
  const q = await openStream(port, { path: `/?${a.id}` });
  const b = await q.next((e) => e.event === 't');
  assert.equal(b.data, 'b');
  q.close();
  const foreign = await openStream(port, { headers: { 'last-event-id': 'sy.since=0123456789abcdef:1:t' } });
  const n = JSON.parse((await foreign.next((e) => e.event === 'sy.notice')).data);
  assert.equal(n.recovered, false);
  assert.equal(n.reason, 'epoch');
  await waitFor(() => recoveries.length === 2, 5000, 'two recoveries');
  assert.deepEqual(recoveries.map((r) => r.recovered), [true, false]);
  foreign.close();
});

test('bad requests get HTTP answers: a malformed Last-Event-ID 400, HTTP/1.0 505, a refusal its status; nothing else is disturbed', async () => {
  const { server, port, url } = await startServer({
    onUpgrade: (req) => (req.headers['x-no'] ? { status: 401 } : { topics: ['t'] }),
  });
  const ws = await client(url);
  for (const bad of ['garbage', 'sy.since=zz:1:t', 'sy.since=0123456789abcdef:1:t#x', 'a'.repeat(70000)]) {
    const s = await openStream(port, { headers: { 'last-event-id': bad } });
    assert.equal(s.status, bad.length > 65536 ? 431 : 400, bad.slice(0, 40));
    await s.done;
  }
  const refused = await openStream(port, { headers: { 'x-no': '1' } });
  assert.equal(refused.status, 401);
  // HTTP/1.0, by hand.
  const sock = net.connect(port, '127.0.0.1');
  await once(sock, 'connect');
  sock.end('GET / HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n');
  let head = '';
  sock.on('data', (d) => { head += d; });
  await once(sock, 'close');
  assert.match(head, /^HTTP\/1\.1 505 /);
  // The WebSocket client is unharmed.
  server.publish('t', 'still here');
  assert.equal(server.stats().connections, 1);
  ws.close();
});

test('POSTs reach the stream\'s \'message\' handler in order; bad ones are refused with their status', async () => {
  const { server, port } = await startServer({ maxPayload: 64, onUpgrade: () => ({ topics: ['t'] }) });
  const opened = once(server, 'open');
  const s = await openStream(port);
  const [id] = await opened;
  const name = await streamName(s);
  const got = [];
  server.on('message', (cid, data, binary) => got.push({ cid, data: Buffer.from(data), binary }));
  for (let i = 0; i < 20; i++) assert.equal((await post(port, name, `m${i}`)).status, 202);
  assert.equal((await post(port, name, Buffer.from([255, 0]), { 'content-type': 'application/octet-stream' })).status, 202);
  await waitFor(() => got.length === 21, 5000, '21 messages');
  assert.deepEqual(got.slice(0, 20).map((m) => m.data.toString()), Array.from({ length: 20 }, (_, i) => `m${i}`));
  assert.ok(got.every((m) => m.cid === id));
  assert.deepEqual(got[20], { cid: id, data: Buffer.from([255, 0]), binary: true });
  const refusals = [
    [await post(port, name, Buffer.from([255])), 400, /UTF-8/],
    [await post(port, name, 'x'.repeat(65)), 413, /maxPayload/],
    [await post(port, `${name.slice(0, 47)}${name[47] === '0' ? '1' : '0'}`, 'forged'), 404, /no such event stream/],
    [await post(port, 'zz', 'short'), 404, /no such event stream/],
    [await post(port, name, 'chunked', { 'transfer-encoding': 'chunked' }), 411, /Content-Length/],
  ];
  for (const [r, status, why] of refusals) {
    assert.equal(r.status, status);
    assert.match(r.body, why);
  }
  assert.equal(refusals[4][0].statusMessage, 'Length Required');
  assert.equal(server.stats().ssePosts, 21);
  // A stream that has gone: its POSTs are answered 410, and reach nobody.
  const closed = once(server, 'close');
  s.close();
  await closed;
  const late = await post(port, name, 'late');
  assert.equal(late.status, 410);
  assert.match(late.body, /the event stream has closed/);
  assert.equal(got.length, 21);
});

test('server.end() sends sy.close with the code and reason, then ends the response; server.close() ends every stream', async () => {
  const { server, port } = await startServer({ onUpgrade: () => ({ topics: ['t'] }) });
  const opened = once(server, 'open');
  const s = await openStream(port);
  const [id] = await opened;
  const closed = once(server, 'close');
  server.end(id, 4001, 'bye now');
  const e = await s.next((x) => x.event === 'sy.close');
  assert.deepEqual(JSON.parse(e.data), { code: 4001, reason: 'bye now' });
  await s.done;
  const [, code] = await closed;
  assert.equal(code, 4001);
  const s2 = await openStream(port);
  await s2.next((x) => x.event === 'sy.open');
  const closing = server.close();
  const e2 = await s2.next((x) => x.event === 'sy.close');
  assert.equal(JSON.parse(e2.data).code, 1001);
  await s2.done;
  await closing;
});

test('limits hold for streams: maxConnectionsPerAddress refuses the next; a stream that does not read is closed at maxBackpressure, never dropped from', async () => {
  const { server, port } = await startServer({
    threads: 1,
    maxConnectionsPerAddress: 2,
    maxBackpressure: 64 * 1024,
    slowConsumer: 'drop', // a WebSocket's policy; a stream is closed instead (it cannot see a gap)
    onUpgrade: () => ({ topics: ['big'] }),
  });
  const opened = once(server, 'open');
  const b = await openStream(port);
  const [bid] = await opened;
  const a = await openStream(port);
  const c = await openStream(port);
  assert.equal(c.status, 503);
  await b.next((e) => e.event === 'sy.notice');
  a.close();
  await a.done;
  // b stops reading: its queue grows past maxBackpressure and it is closed
  // with 1008, where a WebSocket client would have lost messages.
  b.res.pause();
  b.res.socket.pause();
  const closed = new Promise((resolve) => server.on('close', (id, code) => { if (id === bid) resolve(code); }));
  const payload = 'z'.repeat(16 * 1024);
  let sent = 0;
  let done = false;
  closed.then(() => { done = true; });
  while (!done && sent < 4000) {
    for (let i = 0; i < 16; i++, sent++) server.publish('big', payload);
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(await closed, 1008);
  assert.equal(server.stats().slowCloses, 1);
  assert.equal(server.stats().dropped, 0, 'nothing dropped from a stream');
  // The freed slot takes a new stream, which gets what follows.
  const d = await openStream(port);
  await d.next((e) => e.event === 'sy.notice');
  server.publish('big', 'after');
  assert.equal((await d.next((e) => e.event === 'big')).data, 'after');
  d.close();
});

test('heartbeats: a quiet stream gets a comment every half idleTimeout and is never closed as idle', async () => {
  const { server, port } = await startServer({ idleTimeout: 2, onUpgrade: () => ({ topics: ['t'] }) });
  const s = await openStream(port);
  await s.next((e) => e.event === 'sy.open');
  let comments = 0;
  s.res.on('data', (d) => { comments += (String(d).match(/^: \n\n/gm) || []).length; });
  await waitFor(() => comments >= 3, 10000, 'three heartbeats');
  assert.equal(server.stats().connections, 1, 'still open');
  assert.equal(server.stats().timeouts, 0);
  s.close();
});

test('a stream and WebSocket clients of the same topic get the same messages', async () => {
  const { server, port, url } = await startServer({ history: { size: 10 }, onUpgrade: () => ({ topics: ['t'] }) });
  const ws = await client(url);
  const s = await openStream(port);
  await s.next((e) => e.event === 'sy.notice');
  const wsGot = nextMessage(ws);
  server.publish('t', 'both');
  assert.equal((await s.next((e) => e.event === 't')).data, 'both');
  assert.equal((await wsGot).data.toString(), 'both');
  ws.close();
  s.close();
});

test('maxMessagesPerSecond holds for POSTed messages: over it, the stream is closed 1008 and that POST answered 429, the next ones 410', async () => {
  const { server, port } = await startServer({ threads: 1, maxMessagesPerSecond: 5, onUpgrade: () => ({ topics: ['t'] }) });
  const opened = once(server, 'open');
  const s = await openStream(port);
  const [id] = await opened;
  const name = await streamName(s);
  const got = [];
  server.on('message', (cid, data) => got.push(String(data)));
  let isClosed = false;
  const closed = new Promise((resolve) => server.on('close', (cid, code, reason) => { if (cid === id) { isClosed = true; resolve([code, reason]); } }));
  // A burst is allowed, then 5 a second: POSTs as fast as they are answered
  // pass it (bounded: 1,000 would take 200 s at the rate).
  const answers = [];
  for (let i = 0; i < 1000 && !isClosed; i++) answers.push((await post(port, name, `m${i}`)).status);
  const [code, reason] = await closed;
  assert.equal(code, 1008);
  assert.equal(String(reason), 'too many messages');
  // 202 for each delivered, 429 for the one over the rate (not delivered:
  // the close), 410 for any sent after it before the close was seen here.
  const over = answers.indexOf(429);
  assert.ok(over >= 5, JSON.stringify(answers));
  assert.ok(answers.slice(0, over).every((a) => a === 202) && answers.slice(over + 1).every((a) => a === 410), JSON.stringify(answers));
  assert.equal(got.length, over, `${got.length} delivered of ${answers.length}`);
  assert.deepEqual(got, got.map((_, i) => `m${i}`), 'in order, none skipped');
  assert.equal(server.stats().sseRateCloses, 1);
  const e = await s.next((x) => x.event === 'sy.close');
  assert.deepEqual(JSON.parse(e.data), { code: 1008, reason: 'too many messages' });
});

test('handleRequest: a node:http server hands over the stream\'s GET and its POSTs; other requests stay its own', async () => {
  const http = require('node:http');
  const { Server } = require('../..');
  const server = new Server({ noServer: true, threads: 2, onUpgrade: () => ({ topics: ['t'] }) });
  const got = [];
  server.on('message', (id, data) => got.push(String(data)));
  const web = http.createServer((req, res) => {
    if (server.handleRequest(req, res)) return;
    res.end('the app');
  });
  web.listen(0, '127.0.0.1');
  await once(web, 'listening');
  const port = web.address().port;
  try {
    const s = await openStream(port);
    assert.equal(s.status, 200);
    const name = await streamName(s);
    await s.next((e) => e.event === 'sy.notice');
    server.publish('t', 'through node');
    assert.equal((await s.next((e) => e.event === 't')).data, 'through node');
    for (let i = 0; i < 3; i++) assert.equal((await post(port, name, `p${i}`)).status, 202);
    assert.equal((await post(port, name, 'x'.repeat(2 * 1024 * 1024))).status, 413);
    await waitFor(() => got.length === 3, 5000, 'three messages');
    assert.deepEqual(got, ['p0', 'p1', 'p2']);
    const other = await new Promise((resolve) => http.get({ host: '127.0.0.1', port, path: '/' }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve(b));
    }));
    assert.equal(other, 'the app');
    s.close();
  } finally {
    web.close();
    await server.close();
  }
});

test('presence lists a stream with its info, and its leave is told when it goes', async () => {
  const { server, port } = await startServer({
    presence: true,
    onUpgrade: (req) => ({ topics: ['room'], presence: { user: req.headers['x-user'], via: req.transport } }),
  });
  const joined = once(server, 'join');
  const s = await openStream(port, { headers: { 'x-user': 'ada' } });
  const [topic, entry] = await joined;
  assert.equal(topic, 'room');
  assert.deepEqual(entry.info, { user: 'ada', via: 'sse' });
  assert.deepEqual((await server.presence('room')).map((e) => e.info), [{ user: 'ada', via: 'sse' }]);
  const left = once(server, 'leave');
  s.close();
  const [ltopic, lentry] = await left;
  assert.equal(ltopic, 'room');
  assert.equal(lentry.id, entry.id);
  assert.deepEqual(await server.presence('room'), []);
});

test('POSTs from a page of another origin: CORS on every answer, a preflight answered 204, bytes by sy.binary=1 without a Content-Type', async () => {
  const http = require('node:http');
  const { server, port } = await startServer({ onUpgrade: () => ({ topics: ['t'] }) });
  const s = await openStream(port);
  const name = await streamName(s);
  const got = [];
  server.on('message', (id, data, binary) => got.push([Buffer.from(data), binary]));
  const raw = (method, path, body, headers = {}) => new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, method, path, agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res));
    });
    r.once('error', reject);
    r.end(body);
  });
  const pre = await raw('OPTIONS', `/?sy.stream=${name}`, undefined, { origin: 'http://other.example', 'access-control-request-method': 'POST' });
  assert.equal(pre.statusCode, 204);
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  assert.match(pre.headers['access-control-allow-methods'], /POST/);
  const ok = await raw('POST', `/?sy.stream=${name}&sy.binary=1`, Buffer.from([0xff, 0x00]), { origin: 'http://other.example' });
  assert.equal(ok.statusCode, 202);
  assert.equal(ok.headers['access-control-allow-origin'], '*');
  const bad = await raw('POST', `/?sy.stream=${name.replace(/.$/, (c) => (c === '0' ? '1' : '0'))}`, 'x', { origin: 'http://other.example' });
  assert.equal(bad.statusCode, 404);
  assert.equal(bad.headers['access-control-allow-origin'], '*');
  await waitFor(() => got.length === 1, 5000, 'the binary message');
  assert.deepEqual(got[0], [Buffer.from([0xff, 0x00]), true]);
  s.close();
});

test('a stream offers symphony.v2 in its query (sy.protocol) as a browser must: req.protocols has it, and sy.open says which was chosen', async () => {
  const reqs = [];
  const { port } = await startServer({ onUpgrade: (req) => { reqs.push(req); return { topics: ['t'] }; } });
  const s = await openStream(port, { path: '/?sy.protocol=symphony.v1&sy.protocol=symphony.v2' });
  const open = JSON.parse((await s.next((e) => e.event === 'sy.open')).data);
  assert.deepEqual(reqs[0].protocols, ['symphony.v1', 'symphony.v2']);
  assert.equal(open.protocol, 'symphony.v2');
  s.close();
  const plain = await openStream(port);
  assert.equal(JSON.parse((await plain.next((e) => e.event === 'sy.open')).data).protocol, 'symphony.v1');
  plain.close();
});

test('bytes a stream\'s client sends after its GET (a pipelined request, garbage) are read and dropped: the stream goes on, nothing is kept', async () => {
  const { server, port } = await startServer({ threads: 1, onUpgrade: () => ({ topics: ['t'] }) });
  const opened = once(server, 'open');
  const sock = net.connect(port, '127.0.0.1');
  await once(sock, 'connect');
  let got = '';
  sock.setEncoding('utf8');
  sock.on('data', (d) => { got += d; });
  sock.write('GET / HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\nGET /again HTTP/1.1\r\n\r\n');
  await opened;
  await waitFor(() => got.includes('event: sy.notice'), 5000, 'the notice');
  const before = server.stats().bytesIn;
  for (let i = 0; i < 64; i++) sock.write(Buffer.alloc(16 * 1024, 0x41));
  server.publish('t', 'still here');
  await waitFor(() => got.includes('data: still here'), 5000, 'the publish after the garbage');
  assert.equal(server.stats().connections, 1);
  assert.equal(server.stats().messagesIn, 0, 'no message from it');
  assert.equal(server.stats().bytesIn, before, 'not counted as a message\'s bytes');
  sock.destroy();
});
