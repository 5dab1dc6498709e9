'use strict';
// HTTP/1.1 keep-alive for the requests the IO threads answer themselves
// (docs/internals.md, io/wire/sy_reply): Pusher's HTTP API publishes on one
// socket, pipelined requests answered in order, `Connection: close` and
// HTTP/1.0 honoured, an idle kept socket closed at handshakeTimeout, a bad
// request answered and closed, and nothing left counted afterwards.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const net = require('node:net');
const PusherSdk = require('pusher');
const { Server } = require('../..');
const { pusherClient, joined: subscribe } = require('../helpers/pusher-client');

const APP = { id: 'app1', key: 'key1', secret: 'secret1' };

async function start(t, opts = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, pusher: { apps: [APP] }, ...opts });
  await server.listen();
  t.after(() => server.close());
  return { server, port: server.address().port };
}

/** The path and body of a signed events request, as the SDK signs it. */
function signedEvent(channel, name, data, { secret = APP.secret } = {}) {
  const body = JSON.stringify({ name, channels: [channel], data: JSON.stringify(data) });
  const path = `/apps/${APP.id}/events`;
  const params = { auth_key: APP.key, auth_timestamp: String(Math.floor(Date.now() / 1000)), auth_version: '1.0', body_md5: crypto.createHash('md5').update(body).digest('hex') };
  const query = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join('&');
  const sig = crypto.createHmac('sha256', secret).update(`POST\n${path}\n${query}`).digest('hex');
  return { path: `${path}?${query}&auth_signature=${sig}`, body };
}

/** A raw request's bytes: version '1.1' or '1.0', extra header lines. */
function raw({ path, body }, { version = '1.1', headers = [] } = {}) {
  return `POST ${path} HTTP/${version}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n${body}`;
}

/** A raw socket and the HTTP responses it reads, parsed by Content-Length. */
async function rawSocket(t, port) {
  const sock = net.connect(port, '127.0.0.1');
  t.after(() => sock.destroy());
  await new Promise((resolve, reject) => sock.once('connect', resolve).once('error', reject));
  let buf = Buffer.alloc(0);
  const responses = [];
  let waiter = null;
  let closed = false;
  const wake = () => { if (waiter) { const w = waiter; waiter = null; w(); } };
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) break;
      const head = buf.subarray(0, end).toString();
      const m = /\r\ncontent-length: *(\d+)/i.exec(head);
      const len = m ? Number(m[1]) : 0;
      if (buf.length < end + 4 + len) break;
      const [status, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      responses.push({ status: Number(status.split(' ')[1]), version: status.split(' ')[0], headers, body: buf.subarray(end + 4, end + 4 + len).toString() });
      buf = buf.subarray(end + 4 + len);
    }
    wake();
  });
  sock.on('error', () => {});
  sock.on('close', () => { closed = true; wake(); });
  return {
    sock,
    responses,
    get closed() { return closed; },
    /** Waits for n responses (false if the socket closed first). */
    async until(n) {
      while (responses.length < n && !closed) await new Promise((r) => { waiter = r; });
      return responses.length >= n;
    },
    async untilClosed() {
      while (!closed) await new Promise((r) => { waiter = r; });
    },
  };
}

/** Waits until stats() says what pred wants (polls the counters: they
 * are the server's, no event tells of them). */
async function statsUntil(server, pred) {
  for (let i = 0; i < 500; i++) {
    const s = server.stats();
    if (pred(s)) return s;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`stats never matched: ${JSON.stringify(server.stats(), ['keepAlive', 'keptAnswers', 'timeouts', 'handshakeRejects'])}`);
}

test('two, then three pipelined publishes on one socket: answered in order, kept open, each event delivered', async (t) => {
  const { server, port } = await start(t);
  const sdk = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret, host: '127.0.0.1', port: String(port), useTLS: false });
  const p = await pusherClient(t, port, { key: APP.key, authorize: (s, c) => sdk.authorizeChannel(s, c) });
  const ch = await subscribe(p, 'news');
  const got = [];
  ch.bind('n', (d) => got.push(d.i));
  const s = await rawSocket(t, port);
  s.sock.write(raw(signedEvent('news', 'n', { i: 1 })) + raw(signedEvent('news', 'n', { i: 2 })));
  assert.ok(await s.until(2), 'two answers');
  const st = await statsUntil(server, (x) => x.keepAlive === 1);
  assert.equal(st.keptAnswers, 2);
  s.sock.write(raw(signedEvent('news', 'n', { i: 3 })) + raw(signedEvent('news', 'n', { i: 4 })) + raw(signedEvent('news', 'n', { i: 5 })));
  assert.ok(await s.until(5), 'three more answers');
  for (const r of s.responses) {
    assert.equal(r.status, 200);
    assert.equal(r.body, '{}');
    assert.equal(r.headers.connection, undefined, 'no Connection: close');
    assert.equal(r.headers['content-length'], '2');
  }
  assert.equal(s.closed, false);
  while (got.length < 5) await new Promise((r) => ch.bind('n', r));
  assert.deepEqual(got, [1, 2, 3, 4, 5]);
  s.sock.end();
  await s.untilClosed();
  const end = await statsUntil(server, (x) => x.keepAlive === 0);
  assert.equal(end.keptAnswers, 5);
});

test('http.Agent({ keepAlive }) makes 100 signed publishes on few sockets; the pusher SDK with it, unchanged', async (t) => {
  const { server, port } = await start(t);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  t.after(() => agent.destroy());
  const sockets = new Set();
  const publish = (i) => new Promise((resolve, reject) => {
    const { path, body } = signedEvent('c', 'e', { i });
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      sockets.add(req.socket);
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.end(body);
  });
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => publish(i)));
  for (const r of results) assert.deepEqual(r, { status: 200, text: '{}', connection: undefined });
  assert.ok(sockets.size <= 2, `${sockets.size} sockets for 100 publishes`);
  assert.equal((await statsUntil(server, (x) => x.keptAnswers >= 100)).keptAnswers, 100);

  // The pusher SDK with a keep-alive agent: its triggers reach pusher-js.
  const sdk = new PusherSdk({ appId: APP.id, key: APP.key, secret: APP.secret, host: '127.0.0.1', port: String(port), useTLS: false, agent });
  const p = await pusherClient(t, port, { key: APP.key, authorize: (s, c) => sdk.authorizeChannel(s, c) });
  const ch = await subscribe(p, 'private-sdk');
  const got = [];
  ch.bind('e', (d) => got.push(d));
  for (let i = 0; i < 10; i++) assert.equal((await sdk.trigger('private-sdk', 'e', i)).status, 200);
  const batch = await sdk.triggerBatch([{ channel: 'private-sdk', name: 'e', data: 10 }, { channel: 'private-sdk', name: 'e', data: 11 }]);
  assert.equal(batch.status, 200);
  const info = await sdk.get({ path: '/channels/private-sdk', params: { info: 'subscription_count' } });
  assert.equal(info.status, 200);
  assert.equal((await info.json()).subscription_count, 1);
  while (got.length < 12) await new Promise((r) => ch.bind('e', r));
  assert.deepEqual(got, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  assert.ok(sockets.size <= 2);
  agent.destroy();
  await statsUntil(server, (x) => x.keepAlive === 0);
});

test('Connection: close is honoured; HTTP/1.0 is kept only with Connection: keep-alive', async (t) => {
  const { server, port } = await start(t);
  const a = await rawSocket(t, port);
  a.sock.write(raw(signedEvent('c', 'e', 1), { headers: ['Connection: close'] }));
  await a.untilClosed();
  assert.equal(a.responses.length, 1);
  assert.equal(a.responses[0].status, 200);
  assert.equal(a.responses[0].headers.connection, 'close');

  const b = await rawSocket(t, port);
  b.sock.write(raw(signedEvent('c', 'e', 2), { version: '1.0' }));
  await b.untilClosed();
  assert.equal(b.responses[0].status, 200);
  assert.equal(b.responses[0].headers.connection, 'close');

  const c = await rawSocket(t, port);
  c.sock.write(raw(signedEvent('c', 'e', 3), { version: '1.0', headers: ['Connection: keep-alive'] }) + raw(signedEvent('c', 'e', 4), { version: '1.0', headers: ['Connection: keep-alive'] }));
  assert.ok(await c.until(2));
  for (const r of c.responses) {
    assert.equal(r.status, 200);
    assert.equal(r.headers.connection, 'keep-alive');
  }
  assert.equal(c.closed, false);
  // A body framed two ways (Transfer-Encoding beside Content-Length) is never kept.
  const d = await rawSocket(t, port);
  d.sock.write(raw(signedEvent('c', 'e', 5), { headers: ['Transfer-Encoding: identity'] }));
  await d.untilClosed();
  assert.equal(d.responses[0].headers.connection, 'close');
  c.sock.end();
  await c.untilClosed();
  await statsUntil(server, (x) => x.keepAlive === 0);
});

test('an idle kept socket is closed at handshakeTimeout', async (t) => {
  const { server, port } = await start(t, { handshakeTimeout: 1 });
  const s = await rawSocket(t, port);
  const timeouts = server.stats().timeouts;
  s.sock.write(raw(signedEvent('c', 'e', 1)));
  assert.ok(await s.until(1));
  assert.equal(s.responses[0].headers.connection, undefined);
  await statsUntil(server, (x) => x.keepAlive === 1);
  const t0 = Date.now();
  await s.untilClosed();
  assert.ok(Date.now() - t0 < 4000, 'closed within the limit and a sweep');
  const st = await statsUntil(server, (x) => x.keepAlive === 0);
  assert.equal(st.timeouts, timeouts + 1);
});

test('a bad request in the middle is answered and closes; the one after it is not read', async (t) => {
  const { server, port } = await start(t);
  const s = await rawSocket(t, port);
  s.sock.write(raw(signedEvent('c', 'e', 1)) + raw(signedEvent('c', 'e', 2, { secret: 'wrong' })) + raw(signedEvent('c', 'e', 3)));
  await s.untilClosed();
  assert.deepEqual(s.responses.map((r) => r.status), [200, 401]);
  assert.equal(s.responses[0].headers.connection, undefined);
  assert.equal(s.responses[1].headers.connection, 'close');
  assert.match(s.responses[1].body, /Invalid signature/);
  const st = await statsUntil(server, (x) => x.keepAlive === 0);
  assert.equal(st.keptAnswers, 1);
});

test('an event stream preflight (OPTIONS) is kept alive too; a malformed head after it closes', async (t) => {
  const { server, port } = await start(t, { pusher: undefined });
  const s = await rawSocket(t, port);
  const pre = 'OPTIONS /?sy.stream=x HTTP/1.1\r\nHost: x\r\nOrigin: http://a\r\nAccess-Control-Request-Method: POST\r\n\r\n';
  s.sock.write(pre + pre + 'GET / HTTP/1.1\r\nBad Header\r\n\r\n');
  await s.untilClosed();
  assert.deepEqual(s.responses.map((r) => r.status), [204, 204, 400]);
  assert.equal(s.responses[0].headers.connection, undefined);
  assert.equal(s.responses[2].headers.connection, 'close');
  await statsUntil(server, (x) => x.keepAlive === 0 && x.keptAnswers === 2);
});

test('a large publish, then small ones on the same socket (its receive buffer given back between them)', async (t) => {
  const { server, port } = await start(t);
  const s = await rawSocket(t, port);
  s.sock.write(raw(signedEvent('c', 'e', { big: 'x'.repeat(8000) })));
  assert.ok(await s.until(1));
  s.sock.write(raw(signedEvent('c', 'e', 1)));
  assert.ok(await s.until(2));
  s.sock.write(raw(signedEvent('c', 'e', { big: 'y'.repeat(8000) })) + raw(signedEvent('c', 'e', 2)));
  assert.ok(await s.until(4));
  assert.deepEqual(s.responses.map((r) => r.status), [200, 200, 200, 200]);
  assert.equal(s.closed, false);
  s.sock.destroy();
  await statsUntil(server, (x) => x.keepAlive === 0 && x.keptAnswers === 4);
});
