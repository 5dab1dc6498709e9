'use strict';
// What a new user hit in their first hour (issue 46), each answered with an
// error that says what happened and what to do, instead of silence or a
// message about something else: listen() after close(), a hook that throws,
// an onUpgrade slower than handshakeTimeout, presence asked of a server
// without it, an empty key list, a key that cannot be used, a noServer
// server never used (it must not keep the process alive), a body parser
// mounted before handleRequest.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { spawn } = require('node:child_process');
const path = require('node:path');
const WebSocket = require('ws');
const { Server, SymphonyError, HookError } = require('../..');
const { startServer, client, closed, closeAll } = require('../helpers/server');

const root = path.resolve(__dirname, '..', '..');

test.after(closeAll);

/** The next 'error' of server. */
const nextError = (server) => new Promise((resolve) => server.once('error', resolve));

/** The HTTP status a WebSocket upgrade to url is answered with (or 'closed' when hung up on). */
function upgradeStatus(url) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.once('unexpected-response', (req, res) => { resolve(res.statusCode); req.destroy(); });
    ws.once('open', () => { resolve(101); ws.close(); });
    ws.once('error', () => resolve('closed'));
  });
}

test('listen() after close(): ERR_SERVER_NOT_RUNNING saying a closed server does not listen again', async () => {
  const server = new Server({ host: '127.0.0.1', port: 0 });
  await server.listen();
  await server.close();
  await assert.rejects(server.listen(), (err) => err instanceof SymphonyError && err.code === 'ERR_SERVER_NOT_RUNNING' &&
    /listen\(\) after close\(\).*create a new Server/.test(err.message));
  // Never listened, then closed: the same.
  const unused = new Server({ host: '127.0.0.1', port: 0 });
  await unused.close();
  await assert.rejects(unused.listen(), { code: 'ERR_SERVER_NOT_RUNNING' });
});

test("onUpgrade that throws: 'error' gets a HookError (ERR_SYMPHONY_HOOK_THREW) naming the hook and the connection; the client gets 500", async () => {
  const boom = new Error('boom');
  const { server, url } = await startServer({ onUpgrade: () => { throw boom; } });
  const error = nextError(server);
  assert.equal(await upgradeStatus(`${url}/x`), 500);
  const err = await error;
  assert.ok(err instanceof HookError && err instanceof SymphonyError);
  assert.equal(err.code, 'ERR_SYMPHONY_HOOK_THREW');
  assert.equal(err.hook, 'onUpgrade');
  assert.equal(typeof err.id, 'number');
  assert.equal(err.topic, null);
  assert.equal(err.cause, boom);
  assert.match(err.message, new RegExp(`^symphony: onUpgrade threw for connection ${err.id}: boom$`));
});

test("onUpgrade slower than handshakeTimeout: 'error' says so (ERR_SYMPHONY_UPGRADE_TIMEOUT), not only stats().timeouts", { timeout: 30000 }, async () => {
  let answer;
  const { server, url } = await startServer({ handshakeTimeout: 1, onUpgrade: () => new Promise((r) => { answer = r; }) });
  const error = nextError(server);
  const status = upgradeStatus(`${url}/slow`);
  const err = await error;
  assert.ok(err instanceof SymphonyError);
  assert.equal(err.code, 'ERR_SYMPHONY_UPGRADE_TIMEOUT');
  assert.equal(typeof err.id, 'number');
  assert.match(err.message, /onUpgrade did not answer connection \d+ \(\/slow\) within handshakeTimeout \(1 s\).*raise handshakeTimeout/);
  assert.equal(await status, 'closed');
  answer(true); // too late: nothing more happens
});

test('server.presence(topic) on a server without presence rejects (ERR_SYMPHONY_NO_PRESENCE) instead of resolving []', async () => {
  const { server } = await startServer();
  await assert.rejects(server.presence('room'), (err) => err instanceof SymphonyError && err.code === 'ERR_SYMPHONY_NO_PRESENCE' &&
    /presence\("room"\): this topic keeps no presence.*options\.presence/.test(err.message));
  // Turned on for one topic: that topic lists (nobody yet).
  server.topic('lobby', { presence: true });
  assert.deepEqual(await server.presence('lobby'), []);
});

test('tokens: an empty key list is named as such; a key that cannot be used throws a SymphonyError (ERR_SYMPHONY_TOKENS)', async () => {
  assert.throws(() => new Server({ port: 0, tokens: { keys: [] } }), (err) => err instanceof TypeError &&
    err.code === 'ERR_INVALID_ARG_VALUE' && /"options\.tokens\.keys" must hold at least one key/.test(err.message) && !/Received an array/.test(err.message));
  const secret = { alg: 'HS256', secret: 'a secret of thirty-two bytes....' };
  const server = new Server({ host: '127.0.0.1', port: 0, tokens: { keys: [secret] } });
  try {
    assert.throws(() => server.setTokenKeys([]), (err) => err.code === 'ERR_INVALID_ARG_VALUE' && /"keys" must hold at least one key/.test(err.message));
    assert.throws(() => server.setTokenKeys([{ alg: 'ES256', publicKey: 'not a PEM key' }]),
      (err) => err instanceof SymphonyError && err.code === 'ERR_SYMPHONY_TOKENS');
    assert.throws(() => new Server({ port: 0, tokens: { keys: [{ alg: 'RS256', publicKey: 'not a PEM key' }] } }),
      (err) => err instanceof SymphonyError && err.code === 'ERR_SYMPHONY_TOKENS');
  } finally {
    await server.close();
  }
});

test('a noServer server never used does not keep the process alive; one used and closed ends too', { timeout: 30000 }, async (t) => {
  const run = (code) => {
    const child = spawn(process.execPath, ['-e', code], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => child.kill());
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    return new Promise((resolve) => child.once('exit', (status) => resolve({ status, out })));
  };
  assert.deepEqual(await run("new (require('symphony-ws').Server)({ noServer: true }); console.log('made')"), { status: 0, out: 'made\n' });
  // Used (a connection through node:http), then closed: close() resolves before the process ends.
  const used = await run(`
    const http = require('node:http');
    const WebSocket = require('ws');
    const { Server } = require('symphony-ws');
    const server = new Server({ noServer: true });
    const web = http.createServer().on('upgrade', (req, socket, head) => server.handleUpgrade(req, socket, head));
    web.listen(0, '127.0.0.1', () => {
      const ws = new WebSocket('ws://127.0.0.1:' + web.address().port + '/');
      ws.on('open', () => ws.close());
      ws.on('close', async () => { web.close(); await server.close(); console.log('closed'); });
    });`);
  assert.deepEqual(used, { status: 0, out: 'closed\n' });
});

test("handleRequest after a body parser (express.json()): the stream's POST gets 500 and 'error' says to mount symphony first", async (t) => {
  const express = require('express');
  const server = new Server({ noServer: true, onUpgrade: () => ({ topics: ['room'] }) });
  t.after(() => server.close());
  const app = express();
  app.use(express.json());
  app.use((req, res, next) => { if (!server.handleRequest(req, res)) next(); });
  const web = http.createServer(app);
  t.after(() => web.close());
  await new Promise((resolve) => web.listen(0, '127.0.0.1', resolve));
  const error = nextError(server);
  const res = await fetch(`http://127.0.0.1:${web.address().port}/?sy.stream=abc`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hello: 1 }),
  });
  assert.equal(res.status, 500);
  assert.match(await res.text(), /already read/);
  const err = await error;
  assert.equal(err.code, 'ERR_SYMPHONY_BODY_READ');
  assert.match(err.message, /POST \/\?sy\.stream=abc was already read.*express\.json\(\).*mount symphony before body parsers/);
});

test("shutdown: the server's 'close' event has the reason the client was told ('server shutting down')", async () => {
  const { server, url } = await startServer();
  const opened = new Promise((resolve) => server.once('open', resolve));
  const ws = await client(url);
  await opened;
  const atServer = new Promise((resolve) => server.once('close', (id, code, reason) => resolve({ code, reason })));
  const atClient = closed(ws);
  await server.close();
  assert.deepEqual(await atClient, { code: 1001, reason: 'server shutting down' });
  assert.deepEqual(await atServer, { code: 1001, reason: 'server shutting down' });
});
