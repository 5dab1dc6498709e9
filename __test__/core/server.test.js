'use strict';
// The server end to end with the real `ws` package as the client.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const WebSocket = require('ws');
const { Server } = require('../..');
const { startServer, client, nextMessage, closed, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { runNode } = require('../helpers/build');

test.afterEach(closeAll);

function collectOpens(server) {
  const opens = [];
  server.on('open', (id, info) => opens.push({ id, info }));
  return opens;
}

test('handshake, text and binary both ways, stats', async () => {
  const { server, url } = await startServer();
  const opens = collectOpens(server);
  const got = [];
  server.on('message', (id, data, isBinary) => {
    got.push({ id, text: data.toString(), isBinary, isBuffer: Buffer.isBuffer(data) });
    server.send(id, data, { binary: isBinary });
  });
  const ws = await client(`${url}/feed?x=1`);
  await waitFor(() => opens.length === 1);
  const id = opens[0].id;
  assert.equal(typeof id, 'number');
  assert.equal(opens[0].info.protocol, '');

  let m = nextMessage(ws);
  ws.send('héllo');
  assert.deepEqual(await m, { data: Buffer.from('héllo'), isBinary: false });
  m = nextMessage(ws);
  ws.send(Buffer.from([0, 1, 2, 255]));
  assert.deepEqual(await m, { data: Buffer.from([0, 1, 2, 255]), isBinary: true });
  assert.deepEqual(got.map((g) => [g.text.length > 0, g.isBinary, g.isBuffer]), [[true, false, true], [true, true, true]]);

  // Server-initiated, both kinds; Uint8Array and ArrayBuffer are binary by default.
  m = nextMessage(ws);
  assert.equal(server.send(id, new Uint8Array([7, 8])), true);
  assert.deepEqual(await m, { data: Buffer.from([7, 8]), isBinary: true });
  m = nextMessage(ws);
  assert.equal(server.send(id, new Uint16Array([0x0102]).buffer), true);
  assert.equal((await m).data.length, 2);
  m = nextMessage(ws);
  assert.equal(server.send(id, Buffer.from('as text'), { binary: false }), true);
  assert.deepEqual(await m, { data: Buffer.from('as text'), isBinary: false });
  // Large message: 16-bit and 64-bit length encodings both ways.
  for (const size of [200, 70000]) {
    m = nextMessage(ws);
    ws.send(Buffer.alloc(size, 0x61));
    const r = await m;
    assert.equal(r.data.length, size);
  }

  // Counters are updated by the IO threads just after each write.
  await waitFor(() => server.stats().bytesOut > 70000, 5000, 'bytesOut');
  const s = server.stats();
  assert.equal(s.connections, 1);
  assert.equal(s.opened, 1);
  assert.equal(s.messagesIn, 4);
  assert.equal(s.threads.length, 2);
  ws.close();
  await closed(ws);
  await server.close();
});

test('fragmented messages are reassembled, and control frames may interleave', async () => {
  const { server, url } = await startServer();
  const got = [];
  server.on('message', (id, data, isBinary) => got.push({ data: data.toString(), isBinary }));
  const ws = await client(url);
  ws.send('frag', { fin: false });
  ws.ping('in between');
  ws.send('mén', { fin: false });
  ws.send('ted', { fin: true });
  ws.send(Buffer.from('bin'), { fin: false, binary: true });
  ws.send(Buffer.from('ary'), { fin: true, binary: true });
  await waitFor(() => got.length === 2);
  assert.deepEqual(got, [{ data: 'fragménted', isBinary: false }, { data: 'binary', isBinary: true }]);
  ws.close();
  await closed(ws);
  await server.close();
});

test('ping gets pong; the idle timeout pings first and spares a live client', async () => {
  const { server, url } = await startServer({ idleTimeout: 2 });
  const ws = await client(url);
  const pong = new Promise((r) => ws.once('pong', (d) => r(d.toString())));
  ws.ping('abc');
  assert.equal(await pong, 'abc');
  // ws answers pings automatically: the server's idle ping keeps it alive.
  let pinged = 0;
  ws.on('ping', () => pinged++);
  const t0 = Date.now();
  // A second ping means the first pong reset the idle clock and the
  // connection lived on: well past the 2 s idle timeout it is still open.
  await waitFor(() => pinged >= 2, 8000, 'two pings from the server');
  await waitFor(() => Date.now() - t0 > 2500, 5000, 'time past the idle timeout');
  assert.equal(ws.readyState, WebSocket.OPEN);
  assert.equal(server.stats().timeouts, 0);
  ws.close();
  await closed(ws);
  await server.close();
});

test('close codes travel both ways', async () => {
  const { server, url } = await startServer();
  const opens = collectOpens(server);
  const closes = [];
  server.on('close', (id, code, reason) => closes.push({ id, code, reason }));
  const a = await client(url);
  const b = await client(url);
  await waitFor(() => opens.length === 2);
  const [ida, idb] = opens.map((o) => o.id);
  const ca = closed(a);
  assert.equal(server.end(ida, 4001, 'bye now'), true);
  assert.deepEqual(await ca, { code: 4001, reason: 'bye now' });
  b.close(4002, 'client says');
  await waitFor(() => closes.length === 2);
  const byId = Object.fromEntries(closes.map((c) => [c.id, c]));
  assert.equal(byId[ida].code, 4001);
  assert.deepEqual([byId[idb].code, byId[idb].reason], [4002, 'client says']);
  assert.equal(server.send(ida, 'x'), false, 'a closed id is refused');
  assert.equal(server.end(ida), false);
  // terminate: no close frame, the client sees an abnormal close.
  const c = await client(url);
  await waitFor(() => opens.length === 3);
  const cc = closed(c);
  assert.equal(server.terminate(opens[2].id), true);
  assert.equal((await cc).code, 1006);
  await server.close();
});

test('subprotocols: the first offered by default, or the one onUpgrade picks', async () => {
  let s = await startServer();
  let ws = await client(s.url, ['chat.v2', 'chat.v1']);
  assert.equal(ws.protocol, 'chat.v2');
  ws.close();
  await closed(ws);
  await s.server.close();

  s = await startServer({ onUpgrade: (req) => ({ protocol: req.protocols.includes('chat.v1') ? 'chat.v1' : false }) });
  const opens = collectOpens(s.server);
  ws = await client(s.url, ['chat.v2', 'chat.v1']);
  assert.equal(ws.protocol, 'chat.v1');
  await waitFor(() => opens.length === 1);
  assert.equal(opens[0].info.protocol, 'chat.v1');
  ws.close();
  await closed(ws);
  await s.server.close();
});

test('onUpgrade sees the request, accepts with topics and data, refuses with a status', async () => {
  const seen = [];
  const { server, url, port } = await startServer({
    onUpgrade: async (req) => {
      seen.push(req);
      await new Promise((r) => setTimeout(r, 5));
      if (req.url.startsWith('/deny')) return false;
      if (req.url.startsWith('/auth')) return { status: 401, headers: { 'WWW-Authenticate': 'Bearer' } };
      if (req.url.startsWith('/throw')) throw new Error('handler failed');
      return { topics: ['t1', 't2'], data: { user: 'ann' }, headers: { 'X-Served-By': 'symphony' } };
    },
  });
  server.on('error', () => {});
  const opens = collectOpens(server);
  const upgradeHeaders = new Promise((resolve) => {
    const ws = new WebSocket(`${url}/ok?token=1`, { origin: 'https://example.test' });
    ws.on('upgrade', (res) => resolve({ ws, headers: res.headers }));
  });
  const { ws, headers } = await upgradeHeaders;
  assert.equal(headers['x-served-by'], 'symphony');
  await waitFor(() => opens.length === 1);
  assert.deepEqual(opens[0].info.data, { user: 'ann' });
  assert.deepEqual(server.getUserData(opens[0].id), { user: 'ann' });
  assert.equal(seen[0].url, '/ok?token=1');
  assert.equal(seen[0].origin, 'https://example.test');
  assert.equal(seen[0].remoteAddress, '127.0.0.1');
  assert.equal(typeof seen[0].remotePort, 'number');
  assert.equal(seen[0].headers['sec-websocket-version'], '13');
  // Subscribed at open: the very first publish reaches it.
  const m = nextMessage(ws);
  assert.equal(server.publish('t2', 'first'), 1);
  assert.equal((await m).data.toString(), 'first');

  const status = (path) => new Promise((resolve) => {
    const r = new WebSocket(`${url}${path}`);
    r.on('unexpected-response', (req, res) => { resolve({ status: res.statusCode, headers: res.headers }); r.terminate(); });
    r.on('error', () => {});
  });
  assert.equal((await status('/deny')).status, 403);
  const auth = await status('/auth');
  assert.equal(auth.status, 401);
  assert.equal(auth.headers['www-authenticate'], 'Bearer');
  assert.equal((await status('/throw')).status, 500);
  ws.close();
  await closed(ws);
  await server.close();
  void port;
});

test('an \'error\' listener that throws while an upgrade is answered is an uncaught exception, not an unhandled rejection', () => {
  // In a child process: the throw must reach 'uncaughtException', as a
  // throwing listener of any other event does. onUpgrade fails one way for
  // /throw (it throws) and another for /bad (a result of the wrong shape);
  // each is still refused with 500.
  const code = `
    const { Server } = require('.');
    const WebSocket = require('ws');
    const seen = [];
    process.on('unhandledRejection', (e) => seen.push('unhandledRejection: ' + e.message));
    process.on('uncaughtException', (e) => seen.push('uncaughtException: ' + e.message));
    const s = new Server({ host: '127.0.0.1', threads: 1, onUpgrade: (req) => {
      if (req.url === '/throw') throw new Error('handler failed');
      return { topics: 5 };
    } });
    s.on('error', (err) => { throw new Error('listener threw on ' + err.code + ' ' + err.message); });
    const status = (url) => new Promise((resolve) => {
      const ws = new WebSocket(url);
      ws.on('unexpected-response', (req, res) => { resolve(res.statusCode); ws.terminate(); });
      ws.on('error', () => {});
    });
    s.listen().then(async ({ port }) => {
      for (const path of ['/throw', '/bad']) seen.push(path + ' ' + await status('ws://127.0.0.1:' + port + path));
      // Each 'error' listener threw on the turn that answered (an uncaught
      // exception from a next tick): all four are in seen by now.
      await s.close();
      console.log(JSON.stringify(seen.sort()));
    });
  `;
  const r = runNode(code);
  assert.equal(r.status, 0, r.stderr);
  const seen = JSON.parse(r.stdout);
  assert.equal(seen.length, 4, r.stdout);
  assert.deepEqual(seen.slice(0, 2), ['/bad 500', '/throw 500']);
  assert.match(seen[2], /^uncaughtException: listener threw on ERR_INVALID_ARG_TYPE .*"onUpgrade result topics"/);
  assert.match(seen[3], /^uncaughtException: listener threw on ERR_SYMPHONY_HOOK_THREW symphony: onUpgrade threw for connection \d+: handler failed$/);
});

test('the path option: other paths get 404', async () => {
  const { server, port, url } = await startServer({ path: '/ws' });
  const ws = await client(`${url}/ws?room=1`);
  ws.close();
  await closed(ws);
  const res = await new Promise((resolve) => {
    const r = new WebSocket(`${url}/other`);
    r.on('unexpected-response', (req, res) => { resolve(res.statusCode); r.terminate(); });
    r.on('error', () => {});
  });
  assert.equal(res, 404);
  // A plain HTTP request gets a clear error (426 Upgrade Required), not a hang.
  const plain = await new Promise((resolve) => http.get(`http://127.0.0.1:${port}/ws`, (r) => { r.resume(); resolve(r.statusCode); }));
  assert.equal(plain, 426);
  await server.close();
});

test('publish counts subscribers; unsubscribe stops delivery', async () => {
  const { server, url } = await startServer();
  const opens = collectOpens(server);
  const a = await client(url);
  const b = await client(url);
  await waitFor(() => opens.length === 2);
  assert.equal(server.publish('room', 'nobody'), 0);
  for (const o of opens) assert.equal(server.subscribe(o.id, 'room'), true);
  const ma = nextMessage(a), mb = nextMessage(b);
  assert.equal(server.publish('room', 'everyone'), 2);
  assert.equal((await ma).data.toString(), 'everyone');
  assert.equal((await mb).data.toString(), 'everyone');
  assert.equal(server.unsubscribe(opens[0].id, 'room'), true);
  const received = [];
  a.on('message', (d) => received.push(`a:${d}`));
  b.on('message', (d) => received.push(`b:${d}`));
  // The unsubscribe is a command to a's IO thread, queued before this
  // publish; then a message to a itself: the thread runs its commands in
  // order, so had the publish reached a, it would have arrived first.
  server.publish('room', 'only b');
  assert.equal(server.send(opens[0].id, 'to a'), true);
  await waitFor(() => received.length >= 2, 5000, 'the publish and the message to a');
  assert.deepEqual(received.sort(), ['a:to a', 'b:only b']);
  assert.equal(server.stats().topics, 1);
  a.close();
  b.close();
  await Promise.all([closed(a), closed(b)]);
  await waitFor(() => server.stats().topics === 0, 5000, 'topics freed');
  await server.close();
});

test('close() sends 1001 to every client and resolves; the server is then inert', async () => {
  const { server, url } = await startServer();
  const clients = await Promise.all([client(url), client(url), client(url)]);
  const codes = clients.map((ws) => closed(ws));
  await server.close();
  for (const c of await Promise.all(codes)) assert.equal(c.code, 1001);
  assert.equal(server.publish('x', 'y'), 0);
  assert.equal(server.send(4294967296, 'y'), false);
  assert.equal(server.subscribe(4294967296, 'y'), false);
  assert.equal(server.stats(), null);
  await server.close(); // idempotent
});

test('JS misuse throws TypeError/RangeError naming the argument, or returns false', async () => {
  assert.throws(() => new Server({ threads: 0 }), { name: 'RangeError', message: /options\.threads/ });
  assert.throws(() => new Server({ slowConsumer: 'ignore' }), { name: 'TypeError', message: /options\.slowConsumer/ });
  assert.throws(() => new Server({ port: 'x' }), { name: 'TypeError', message: /options\.port/ });
  assert.throws(() => new Server({ bogus: 1 }), { name: 'TypeError', message: /options\.bogus/ });
  assert.throws(() => new Server({ path: 'nope' }), { name: 'TypeError', message: /options\.path/ });
  assert.throws(() => new Server({ onUpgrade: 5 }), { name: 'TypeError', message: /options\.onUpgrade/ });
  const { server } = await startServer();
  assert.throws(() => server.publish(5, 'x'), { name: 'TypeError', message: /topic/ });
  assert.throws(() => server.publish('', 'x'), { name: 'RangeError', message: /topic/ });
  assert.throws(() => server.publish('t'.repeat(1025), 'x'), { name: 'RangeError', message: /topic/ });
  assert.throws(() => server.publish('t', 42), { name: 'TypeError', message: /data/ });
  assert.throws(() => server.publish('t', 'x', { binary: 'yes' }), { name: 'TypeError', message: /binary/ });
  assert.throws(() => server.send('1', 'x'), { name: 'TypeError', message: /id/ });
  assert.throws(() => server.send(-1, 'x'), { name: 'RangeError', message: /id/ });
  assert.throws(() => server.send(1.5, 'x'), { name: 'RangeError', message: /id/ });
  assert.throws(() => server.end(1, 1005), { name: 'RangeError', message: /code/ });
  assert.throws(() => server.end(1, 999), { name: 'RangeError', message: /code/ });
  assert.throws(() => server.end(1, 1000, 'x'.repeat(124)), { name: 'RangeError', message: /reason/ });
  assert.throws(() => server.subscribe(1, null), { name: 'TypeError', message: /topic/ });
  assert.equal(server.send(123456789, 'x'), false);
  assert.equal(server.send(2 ** 53 - 1, 'x'), false);
  assert.equal(server.subscribe(123456789, 't'), false);
  assert.equal(server.terminate(2 ** 40), false);
  await assert.rejects(server.listen(), { code: 'ERR_SERVER_ALREADY_LISTEN' });
  await server.close();
  assert.equal(server.send(123, 'x'), false);
  assert.equal(server.publish('t', 'x'), 0);
  // Listening on a port in use fails with a clear error.
  const a = await startServer();
  const b = new Server({ host: '127.0.0.1', port: a.port });
  await assert.rejects(b.listen(), { code: 'ERR_SYMPHONY_LISTEN', message: /address already in use/i });
  await a.server.close();
  await b.close();
});

test('IO threads reuse arenas: starting and stopping servers does not grow them', async () => {
  const { allocator } = require('../..');
  const count = () => (allocator.config ? allocator.config.createdArenas : 0);
  // Warm up with 3 threads alive at once (an IO thread takes its arena when
  // it starts running, and shows it in stats()), so the pool holds 3.
  const s0 = await startServer({ threads: 3 });
  if (allocator.name === 'jemalloc') {
    await waitFor(() => s0.server.stats().threads.every((t) => t.arena > 0), 5000, 'every IO thread in its arena');
  }
  await s0.server.close();
  const before = count();
  for (let i = 0; i < 10; i++) {
    const { server } = await startServer({ threads: 3 });
    await server.close();
  }
  assert.equal(count(), before);
  if (allocator.name === 'jemalloc') assert.ok(before >= 3, `created arenas ${before}: at least one per IO thread`);
});
