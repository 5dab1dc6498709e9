// The ES module as a Node ESM user loads it ('symphony-ws/client' through
// package.json's "exports"), with ws: a subscription, messages, positions, a
// resume on reconnect.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import WebSocket from 'ws';
import { SymphonyClient, PROTOCOL } from 'symphony-ws/client';

const require = createRequire(import.meta.url);
const { EPOCH_A, startServer, record, only, fastTimers, notice } = require('./helpers.js');

test('the ES module: subscribe, receive, reconnect with sy.since', { timeout: 20000 }, async () => {
  const s = await startServer();
  const c = new SymphonyClient(s.url, { WebSocket, transport: 'websocket', timers: fastTimers(), random: () => 0 });
  const events = record(c);
  try {
    const first = await s.connections.at(0);
    assert.equal(first.protocol, PROTOCOL);
    first.ws.send(notice({ type: 'subscribed', topic: 'news', id: 3, epoch: EPOCH_A, offset: '41' }));
    first.ws.send('p3,42\nhello');
    await events.until((e) => only(e, 'message').length === 1);
    assert.deepEqual(only(events.items, 'message'), [['news', 'hello', { offset: 42, epoch: EPOCH_A }]]);
    first.ws.terminate();
    const second = await s.connections.at(1);
    assert.deepEqual(new URL(second.url, 'ws://x').searchParams.getAll('sy.since'), [`${EPOCH_A}:42:news`]);
  } finally {
    c.close();
    await s.close();
  }
});
