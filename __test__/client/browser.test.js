'use strict';
// A real browser: headless Chromium (Debian's chromium, as __test__/browser/
// uses) loads a page that imports client/symphony-client.mjs as one file,
// served as it is, and connects (the browser's own WebSocket) to a small ws
// server that writes symphony.v1 frames. Text and binary messages, the
// positions, a resume with sy.since after the server drops the connection.
// Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const { openPage } = require('../helpers/browser-page');
const { EPOCH_A, startServer, notice } = require('./helpers');

const page = `<!doctype html><html><head><meta charset="utf-8"><title>symphony client</title>
<script type="module">
import { SymphonyClient } from '/symphony-client.mjs';
const events = [];
let wake = () => {};
window.start = (url) => {
  const client = new SymphonyClient(url, { backoff: { min: 0, max: 0 } });
  window.client = client;
  client.on('message', (topic, data, info) => {
    events.push(['message', topic, typeof data === 'string' ? data : { bytes: Array.from(data), uint8: data instanceof Uint8Array }, info.offset ?? null]);
    wake();
  });
  client.on('subscribed', (topic, info) => { events.push(['subscribed', topic, info.offset]); wake(); });
  client.on('state', (state) => { events.push(['state', state]); wake(); });
  return true;
};
// The events once there are n of them (JSON-able, for page.evaluate).
window.take = async (n) => {
  while (events.length < n) await new Promise((r) => { wake = r; });
  return events.slice(0, n);
};
window.ready = true;
</script></head><body>client</body></html>`;

let opened, tab, ws;

test.before(async () => {
  ws = await startServer();
  opened = await openPage(page);
  tab = opened.tab;
});

test.after(async () => {
  if (opened) await opened.close();
  if (ws) await ws.close();
});

test('Chromium imports the one file; messages, positions and a resume', { timeout: 30000 }, async () => {
  await tab.evaluate(`start(${JSON.stringify(ws.url + '?room=1')})`);
  const first = await ws.connections.at(0);
  assert.equal(first.protocol, 'symphony.v1');
  first.ws.send(notice({ type: 'subscribed', topic: 'prices eu', id: 4, epoch: EPOCH_A, offset: '9' }));
  first.ws.send('p4,10\n{"px":1}\nmore');
  first.ws.send(Buffer.from('p4,11\n\x00\n\x7f', 'latin1'));
  first.ws.send('d\nhello page');
  const events = await tab.evaluate('take(6)');
  assert.deepEqual(events, [
    ['state', 'connecting'],
    ['state', 'open'],
    ['subscribed', 'prices eu', 9],
    ['message', 'prices eu', '{"px":1}\nmore', 10],
    ['message', 'prices eu', { bytes: [0, 10, 127], uint8: true }, 11],
    ['message', null, 'hello page', null],
  ]);
  assert.deepEqual(await tab.evaluate('client.positions()'), { 'prices eu': { epoch: EPOCH_A, offset: 11 } });
  // Dropped by the server: the page reconnects and says where it was.
  first.ws.terminate();
  const second = await ws.connections.at(1);
  assert.equal(second.url, `/feed?room=1&sy.since=${EPOCH_A}%3A11%3Aprices+eu`);
  const again = await tab.evaluate('take(9)');
  assert.deepEqual(again.slice(6), [['state', 'reconnecting'], ['state', 'connecting'], ['state', 'open']]);
  assert.equal(await tab.evaluate('client.send("from the page")'), true);
  const [got] = await second.received.until((r) => r.length === 1);
  assert.equal(got.data.toString(), 'from the page');
  await tab.evaluate('client.close(), true');
  await second.closed;
});
