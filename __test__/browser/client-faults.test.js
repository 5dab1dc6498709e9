'use strict';
// The client library's fault matrix in Chromium (the Node one is
// __test__/client/faults.test.js): headless Chromium loads a page that
// imports client/symphony-client.mjs as one file and connects, with the
// default transport 'auto' and the browser's own WebSocket and fetch, to a
// symphony server with history, through a TCP proxy (helpers/fault-proxy.js)
// on another origin. Each case ends with the page open on the transport it
// should be on and every message of the topic once, in order.
//
// What differs from Node: a page learns nothing of why a WebSocket failed
// (every cause is 'failed', the error event says nothing), and its plain
// GET to another origin is 'no-cors' (an answer is status 0): the rule
// still tells an outage (no answer) from blocked WebSockets (an answer).
// DevTools' offline emulation fires the page's 'offline' and 'online'
// events; the client drops its connection at the first and reconnects at
// once at the second.
// Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Server } = require('../..');
const { openPage, WAITS } = require('../helpers/browser-page');
const { FaultProxy } = require('../helpers/fault-proxy');

const CORS = { 'Access-Control-Allow-Origin': '*' };

const page = `<!doctype html><html><head><meta charset="utf-8"><title>symphony client faults</title>
<script type="module">
import { SymphonyClient } from '/symphony-client.mjs';
${WAITS}
window.start = (url, options) => {
  if (window.client) window.client.close();
  const S = window.S = { seqs: [], states: [] };
  const client = window.client = new SymphonyClient(url, options);
  client.on('message', (topic, data) => { if (topic === 'feed') S.seqs.push(Number(data)); wake(); });
  client.on('state', (state, info) => { S.states.push([state, info.transport || null, info.cause || null]); wake(); });
  client.on('error', () => {});
  return true;
};
window.failures = () => S.states.filter((s) => s[0] === 'reconnecting').length;
window.summary = () => JSON.stringify({ seqs: S.seqs, state: client.state, transport: client.transport, why: client.transportReason, states: S.states.slice(-12) });
window.ready = true;
</script></head><body>faults</body></html>`;

let opened;
let tab;
const live = [];

test.before(async () => {
  opened = await openPage(page);
  tab = opened.tab;
});

test.after(async () => {
  if (opened) await opened.close();
});

test.afterEach(async () => {
  await tab.evaluate('window.client && window.client.close(), true');
  await tab.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  for (const x of live.splice(0).reverse()) await x();
});

async function feedServer() {
  const s = new Server({ host: '127.0.0.1', port: 0, threads: 1, history: { size: 1000 }, onUpgrade: () => ({ topics: ['feed'], headers: CORS }) });
  await s.listen();
  live.push(() => s.close());
  return s;
}

const waitPage = (cond, what, ms = 20000) => tab.evaluate(`until(() => ${cond}, ${ms}, ${JSON.stringify(what)})`, { timeout: ms + 2000 });

/** One case, as in the Node matrix: 5 messages, the fault held until the page failed `failures` more attempts (5 more published meanwhile), heal, 5 more. */
async function runCase({ brk, heal, transport, failures = 3, options = {} }) {
  const s = await feedServer();
  const proxy = new FaultProxy(s.address().port);
  live.push(() => proxy.close());
  await proxy.start();
  let seq = 0;
  const publish = () => { for (let i = 0; i < 5; i++) s.publish('feed', String(++seq)); };
  await tab.evaluate(`start(${JSON.stringify(`ws://127.0.0.1:${proxy.port}/`)}, ${JSON.stringify(options)})`);
  await waitPage("client.state === 'open'", 'open');
  publish();
  await waitPage('S.seqs.length === 5', '5 messages');
  const before = await tab.evaluate('failures()');
  await brk({ proxy, s });
  publish();
  await waitPage(`failures() >= ${before + failures}`, `${failures} failed attempts`);
  await heal({ proxy, s });
  await waitPage(`client.state === 'open' && client.transport === '${transport}' && S.seqs.length >= 10`, `open on ${transport} with 10 messages`);
  publish();
  await waitPage('S.seqs.length >= 15', '15 messages');
  const S = JSON.parse(await tab.evaluate('JSON.stringify(S)'));
  assert.deepEqual(S.seqs, Array.from({ length: 15 }, (_, i) => i + 1), 'every message once, in order');
  assert.equal(await tab.evaluate('client.transport'), transport);
  assert.equal(await tab.evaluate('client.stats().duplicates'), 0);
  return S;
}

const tried = (S, transport) => S.states.some(([st, t]) => st === 'connecting' && t === transport);

test('Chromium: refused, then back: a WebSocket, never the stream', { timeout: 60000 }, async () => {
  const S = await runCase({ brk: ({ proxy }) => { proxy.stop(); proxy.resetAll(); }, heal: ({ proxy }) => proxy.start(), transport: 'websocket' });
  assert.ok(!tried(S, 'sse'), JSON.stringify(S.states));
});

test('Chromium: a proxy that accepts and at once closes, then passes: a WebSocket, never the stream', { timeout: 60000 }, async () => {
  const S = await runCase({ brk: ({ proxy }) => { proxy.set('close'); proxy.resetAll(); }, heal: ({ proxy }) => proxy.set('pass'), transport: 'websocket', failures: 4 });
  assert.ok(!tried(S, 'sse'), JSON.stringify(S.states));
});

test('Chromium: upgrades answered 400 where HTTP passes (another origin, no-cors): over to the stream', { timeout: 60000 }, async () => {
  const S = await runCase({
    brk: ({ proxy }) => { proxy.set('upgrade:400'); proxy.resetAll(); },
    heal: () => {},
    transport: 'sse',
    failures: 1,
    options: { backoff: { min: 50, max: 200 } },
  });
  assert.ok(S.states.some(([st, , cause]) => st === 'reconnecting' && cause === 'upgrade-blocked'), JSON.stringify(S.states));
  assert.equal(await tab.evaluate('client.transportReason'), 'upgrade-blocked');
});

test('Chromium: a black hole mid-stream: the heartbeat finds it, back on a WebSocket', { timeout: 60000 }, async () => {
  const S = await runCase({
    brk: ({ proxy }) => { proxy.holeAll(); proxy.set('hole'); },
    heal: ({ proxy }) => proxy.set('pass'),
    transport: 'websocket',
    failures: 2,
    options: { openTimeout: 1000, heartbeat: 300 },
  });
  assert.ok(S.states.some(([st, , cause]) => st === 'reconnecting' && cause === 'stalled'), JSON.stringify(S.states));
});

test('Chromium: offline, then online: the connection is dropped at once and comes back at once', { timeout: 60000 }, async () => {
  await tab.send('Network.enable');
  const conditions = (offline) => tab.send('Network.emulateNetworkConditions', { offline, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  const S = await runCase({
    brk: () => conditions(true),
    heal: () => conditions(false),
    transport: 'websocket',
    failures: 1,
  });
  assert.ok(S.states.some(([st, , cause]) => st === 'reconnecting' && cause === 'offline'), JSON.stringify(S.states));
});
