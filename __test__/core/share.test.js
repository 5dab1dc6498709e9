'use strict';
// One port with node:http, Express and Fastify: `noServer` and
// server.handleUpgrade(req, socket, head). symphony takes its own duplicate
// of the socket's descriptor and Node lets go of its own, so: HTTP keeps
// being served beside WebSockets, the same answers as symphony's own
// listener for bad upgrades, sockets it cannot take over get an HTTP error
// and an 'error' event, and no descriptor is leaked or closed twice.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const WebSocket = require('ws');
const express = require('express');
const fastify = require('fastify');
const { Server } = require('../..');
const { pki } = require('../helpers/pki');
const { frame, parseFrames, waitFor, request, statusOf } = require('../helpers/raw');

const openFds = () => fs.readdirSync(process.platform === 'linux' ? '/proc/self/fd' : '/dev/fd').length;

// What a test opened, closed after it even when it failed (so that a
// failure never leaves the file waiting on open handles).
const cleanup = [];
test.afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()();
});

function opened(url, opts) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { handshakeTimeout: 15000, ...opts });
    cleanup.push(async () => ws.terminate());
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}
const nextMessage = (ws) => new Promise((resolve) => ws.once('message', (d) => resolve(d.toString())));
const closedWith = (ws) => new Promise((resolve) => ws.once('close', (code) => resolve(code)));

/** A symphony server on another server's port: echo, and everyone on topic 'all'. */
function symphony(options = {}) {
  const sy = new Server({ noServer: true, threads: 2, onUpgrade: (req) => ({ topics: ['all'], data: req.headers.cookie ?? null }), ...options });
  sy.errors = [];
  sy.on('error', (e) => sy.errors.push(e));
  sy.on('message', (id, data) => sy.send(id, `echo ${data}`));
  cleanup.push(() => sy.close());
  return sy;
}

/** An http.Server closed after the test (its idle keep-alive sockets too). */
function closing(hs) {
  cleanup.push(() => new Promise((r) => { hs.closeAllConnections?.(); hs.close(() => r()); }));
  return hs;
}

/** A raw request through a port; resolves to everything the server sent until it closed. */
function raw(port, text) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    sock.on('data', (d) => { data = Buffer.concat([data, d]); });
    sock.on('error', reject);
    sock.on('close', () => resolve(data));
    sock.write(text);
    setTimeout(() => sock.destroy(), 5000).unref();
  });
}

test('noServer: no listener of its own; listen() says why', async () => {
  const sy = new Server({ noServer: true });
  assert.equal(sy.address(), null);
  await assert.rejects(sy.listen(), { code: 'ERR_SERVER_NO_LISTEN', message: /handleUpgrade/ });
  assert.throws(() => new Server({ noServer: 'yes' }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => new Server({ noServer: true, tls: { cert: 'x', key: 'y' } }), { message: /noServer/ });
  await sy.close();
});

test('node:http: HTTP and WebSockets on one port; head bytes come first; close() ends adopted connections', async () => {
  const sy = symphony();
  const hs = http.createServer((req, res) => res.end(`http ${req.url}`));
  hs.on('upgrade', (req, socket, head) => sy.handleUpgrade(req, socket, head));
  await new Promise((r) => hs.listen(0, '127.0.0.1', r));
  const { port } = hs.address();
  assert.equal(await (await fetch(`http://127.0.0.1:${port}/a`)).text(), 'http /a');
  const ws = await opened(`ws://127.0.0.1:${port}/feed`, { headers: { cookie: 'sid=1' } });
  const echo = nextMessage(ws);
  ws.send('one');
  assert.equal(await echo, 'echo one');
  const pub = nextMessage(ws);
  assert.equal(sy.publish('all', 'to all'), 1);
  assert.equal(await pub, 'to all');
  assert.equal(await (await fetch(`http://127.0.0.1:${port}/b`)).text(), 'http /b', 'HTTP still served');
  // The upgrade request and a first frame in one write: Node hands the
  // frame over as `head`, and symphony reads it before anything later.
  const sock = net.connect(port, '127.0.0.1');
  let data = Buffer.alloc(0);
  sock.on('data', (d) => { data = Buffer.concat([data, d]); });
  await new Promise((r) => sock.once('connect', r));
  sock.write(Buffer.concat([Buffer.from(request('/raw')), frame(1, 'in head')]));
  await waitFor(() => data.indexOf('echo in head') >= 0, 5000, 'the echo of the frame in head');
  // close(): adopted connections get 1001 like any other.
  const code = closedWith(ws);
  await sy.close();
  assert.equal(await code, 1001);
  sock.destroy();
  await new Promise((r) => hs.close(r));
});

test('bad upgrades through handleUpgrade get the answers symphony\'s own listener gives', async () => {
  const sy = symphony();
  const hs = http.createServer((req, res) => res.end('ok'));
  hs.on('upgrade', (req, socket, head) => sy.handleUpgrade(req, socket, head));
  await new Promise((r) => hs.listen(0, '127.0.0.1', r));
  const { port } = hs.address();
  const cases = [
    [{ 'Sec-WebSocket-Key': null }, 400],
    [{ 'Sec-WebSocket-Key': 'short' }, 400],
    [{ 'Sec-WebSocket-Version': '8' }, 426],
    [{ Connection: 'keep-alive, Upgrade', Host: null }, 400],
  ];
  for (const [headers, status] of cases) {
    const answer = await raw(port, request('/', headers));
    assert.equal(statusOf(answer.toString('latin1')), status, JSON.stringify(headers));
  }
  const refused = new Server({ noServer: true, onUpgrade: () => ({ status: 401 }) });
  hs.removeAllListeners('upgrade');
  hs.on('upgrade', (req, socket, head) => refused.handleUpgrade(req, socket, head));
  assert.equal(statusOf((await raw(port, request('/'))).toString('latin1')), 401);
  await refused.close();
  await sy.close();
  await new Promise((r) => hs.close(r));
});

test('sockets that cannot be taken over: an HTTP answer and an error, never a hang', async () => {
  const sy = symphony();
  // A TLS socket (its TLS state is in Node's OpenSSL).
  const p = pki();
  const hs = https.createServer({ cert: p.a.cert, key: p.a.key }, (req, res) => res.end('ok'));
  let result;
  hs.on('upgrade', (req, socket, head) => { result = sy.handleUpgrade(req, socket, head); });
  await new Promise((r) => hs.listen(0, '127.0.0.1', r));
  const ws = new WebSocket(`wss://127.0.0.1:${hs.address().port}/`, { ca: p.ca });
  const err = await new Promise((resolve) => ws.once('error', resolve));
  assert.match(err.message, /501/);
  assert.equal(result, false);
  assert.equal(sy.errors.at(-1).code, 'ERR_SYMPHONY_TLS_SOCKET');
  await new Promise((r) => hs.close(r));
  // A socket already destroyed, and wrong argument types.
  const plain = http.createServer();
  plain.on('upgrade', (req, socket, head) => {
    socket.destroy();
    result = sy.handleUpgrade(req, socket, head);
  });
  await new Promise((r) => plain.listen(0, '127.0.0.1', r));
  await raw(plain.address().port, request('/'));
  await waitFor(() => result === false, 5000, 'handleUpgrade answered');
  assert.equal(sy.errors.at(-1).code, 'ERR_SYMPHONY_UNADOPTABLE');
  await new Promise((r) => plain.close(r));
  const fakeReq = { method: 'GET', url: '/', rawHeaders: [], httpVersion: '1.1' };
  assert.throws(() => sy.handleUpgrade(null, new net.Socket(), Buffer.alloc(0)), { code: 'ERR_INVALID_ARG_TYPE', message: /req/ });
  assert.throws(() => sy.handleUpgrade(fakeReq, {}, Buffer.alloc(0)), { code: 'ERR_INVALID_ARG_TYPE', message: /socket/ });
  assert.throws(() => sy.handleUpgrade(fakeReq, new net.Socket(), 'head'), { code: 'ERR_INVALID_ARG_TYPE', message: /head/ });
  await sy.close();
});

test('Express: 1,000 upgrades while it serves HTTP; onUpgrade sees the cookie its middleware set; no descriptor leaked', async () => {
  const sy = symphony({ onUpgrade: (req) => ({ topics: ['all'], data: req.headers.cookie ?? null }) });
  const cookies = [];
  sy.on('open', (id, info) => cookies.push(info.data));
  const app = express();
  app.get('/login', (req, res) => { res.setHeader('Set-Cookie', 'session=s3cret; Path=/'); res.send('logged in'); });
  app.get('/ping', (req, res) => res.send('pong'));
  const hs = closing(await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); }));
  hs.on('upgrade', (req, socket, head) => sy.handleUpgrade(req, socket, head));
  const { port } = hs.address();
  const login = await fetch(`http://127.0.0.1:${port}/login`);
  const cookie = login.headers.get('set-cookie').split(';')[0];
  const fdsBefore = openFds();
  const n = 1000;
  const clients = [];
  const pings = [];
  for (let i = 0; i < n; i += 50) {
    const batch = Array.from({ length: 50 }, () => opened(`ws://127.0.0.1:${port}/ws`, { headers: { cookie } }));
    pings.push(fetch(`http://127.0.0.1:${port}/ping`).then((r) => r.text()));
    clients.push(...await Promise.all(batch));
  }
  assert.deepEqual(new Set(await Promise.all(pings)), new Set(['pong']));
  await waitFor(() => sy.stats().connections === n, 10000, `${n} connections`);
  // The counter moves on the IO threads; the open events reach JS after.
  await waitFor(() => cookies.length === n, 10000, `${n} open events`);
  assert.ok(cookies.every((c) => c === cookie), 'onUpgrade saw the cookie');
  const got = clients.map(nextMessage);
  assert.equal(sy.publish('all', 'fan-out'), n);
  assert.deepEqual(new Set(await Promise.all(got)), new Set(['fan-out']));
  await Promise.all(clients.map((ws) => { const c = closedWith(ws); ws.close(); return c; }));
  await waitFor(() => sy.stats().connections === 0, 10000, 'all closed');
  // Each adopted socket: Node's descriptor closed by Node, symphony's by
  // symphony; nothing left, nothing closed twice (a double close would
  // close some other descriptor and show up as fewer, or as errors).
  await waitFor(() => openFds() <= fdsBefore, 5000, `descriptors back to ${fdsBefore} (now ${openFds()})`);
  assert.equal(await (await fetch(`http://127.0.0.1:${port}/ping`)).text(), 'pong');
  await sy.close();
  await new Promise((r) => hs.close(r));
});

test('Fastify: routes and WebSockets on one port', async () => {
  const sy = symphony();
  const app = fastify();
  app.get('/hello', async () => ({ hello: 'world' }));
  app.server.on('upgrade', (req, socket, head) => sy.handleUpgrade(req, socket, head));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address();
  assert.deepEqual(await (await fetch(`http://127.0.0.1:${port}/hello`)).json(), { hello: 'world' });
  const ws = await opened(`ws://127.0.0.1:${port}/`);
  const echo = nextMessage(ws);
  ws.send('via fastify');
  assert.equal(await echo, 'echo via fastify');
  assert.deepEqual(await (await fetch(`http://127.0.0.1:${port}/hello`)).json(), { hello: 'world' });
  ws.close();
  await closedWith(ws);
  await sy.close();
  await app.close();
});
