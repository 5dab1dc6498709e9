'use strict';
const { Server } = require('../..');
const WebSocket = require('ws');
const { waitFor } = require('./raw');

const live = new Set();

/** Starts a server on loopback with test-friendly defaults. */
async function startServer(options = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 2, ...options });
  live.add(server);
  const { port } = await server.listen();
  return { server, port, url: `ws://127.0.0.1:${port}` };
}

/** Opens a ws client and waits for its 'open'. */
function client(url, protocols, opts) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, opts);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function nextMessage(ws) {
  return new Promise((resolve) => ws.once('message', (data, isBinary) => resolve({ data, isBinary })));
}

function closed(ws) {
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

/** A healthy connection still round-trips through the server (echo via publish). */
async function healthy(server, url) {
  const ids = [];
  const onOpen = (id) => ids.push(id);
  server.on('open', onOpen);
  const ws = await client(url);
  await waitFor(() => ids.length > 0, 5000, 'open event');
  server.off('open', onOpen);
  const got = nextMessage(ws);
  if (!server.send(ids[0], 'still here')) throw new Error('send to a healthy connection failed');
  const m = await got;
  // Wait for the server's own close event too, so it never lands in the
  // next test's listeners.
  let serverClosed = false;
  const onClose = (id) => { if (id === ids[0]) serverClosed = true; };
  server.on('close', onClose);
  ws.close();
  await closed(ws);
  await waitFor(() => serverClosed, 5000, 'the server-side close event');
  server.off('close', onClose);
  return m.data.toString();
}

/** Closes every server a test started (also when it failed half way). */
async function closeAll() {
  const servers = [...live];
  live.clear();
  await Promise.all(servers.map((s) => s.close()));
}

module.exports = { closeAll, startServer, client, nextMessage, closed, healthy };
