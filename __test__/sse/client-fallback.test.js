'use strict';
// The client library over an event stream (docs/sse.md): 'auto' falls back
// to the stream when WebSockets are refused, with the same API (topics,
// positions, send, subscribe, publish, request), resumes exactly, and goes
// back to a WebSocket when one opens again. A real server, the client from
// its CommonJS build, ws for the WebSockets, Node's fetch for the stream.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { SymphonyClient } = require('../../client/symphony-client.cjs');
const { startServer, closeAll } = require('../helpers/server');

test.afterEach(closeAll);

/** Records a client's events; until(pred) resolves once pred(list) holds (checked at each event). */
function recorder(c) {
  const items = [];
  const waiters = [];
  const push = (x) => {
    items.push(x);
    for (const w of [...waiters]) if (w.pred(items)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(items); }
  };
  for (const ev of ['state', 'message', 'subscribed', 'recovered', 'error']) c.on(ev, (...a) => push([ev, ...a]));
  return {
    items,
    until: (pred) => (pred(items) ? Promise.resolve(items) : new Promise((resolve) => waiters.push({ pred, resolve }))),
  };
}
/** The text messages so far, as [topic, data]. */
const messages = (items) => items.filter((e) => e[0] === 'message' && typeof e[2] === 'string').map((e) => [e[1], e[2]]);

test("'auto': refused WebSockets twice, then the stream: topics, send, subscribe, publish, request, exact resume after a cut", { timeout: 30000 }, async () => {
  let refuseWs = true;
  const got = [];
  const { server, port } = await startServer({
    history: { size: 100 },
    onUpgrade: (req) => (req.transport === 'websocket' && refuseWs ? { status: 400 } : { topics: ['feed'] }),
    onSubscribe: () => true,
    onPublish: () => true,
    onRequest: (id, data) => ({ echo: String(data) }),
  });
  server.on('message', (id, data) => got.push(String(data)));
  const opened = [];
  server.on('open', (id, info) => opened.push([id, info.transport]));
  const c = new SymphonyClient(`ws://127.0.0.1:${port}/`, { WebSocket, backoff: { min: 1, max: 10 }, fallback: { retryWebSocket: 600000 } });
  const r = recorder(c);
  try {
    await r.until((e) => e.some((x) => x[0] === 'state' && x[1] === 'open'));
    const states = r.items.filter((e) => e[0] === 'state').map((e) => [e[1], e[2].transport]);
    // WebSockets until a plain GET was answered (HTTP passes) and one more failed: then the stream.
    const tries = states.filter(([s]) => s === 'connecting').map(([, t]) => t);
    assert.ok(tries.length >= 4 && tries.slice(0, -1).every((t) => t === 'websocket') && tries.at(-1) === 'sse', tries.join());
    const moved = r.items.filter((e) => e[0] === 'state' && e[1] === 'reconnecting').at(-1)[2];
    assert.equal(moved.cause, 'upgrade-blocked');
    assert.equal(c.transportReason, 'upgrade-blocked');
    assert.deepEqual(states.at(-1), ['open', 'sse']);
    assert.equal(c.transport, 'sse');
    await r.until((e) => e.some((x) => x[0] === 'subscribed' && x[1] === 'feed'));
    server.publish('feed', 'one');
    server.publish('feed', 'two\nlines');
    await r.until((e) => messages(e).length === 2);
    assert.deepEqual(messages(r.items), [['feed', 'one'], ['feed', 'two\nlines']]);
    assert.equal(c.positions().feed.offset, 2);
    // send: a POST each, in order.
    for (let i = 0; i < 5; i++) assert.equal(c.send(`m${i}`), true);
    // symphony.v2 over the stream: subscribe, publish, request.
    const sub = c.subscribe('room');
    await new Promise((resolve) => sub.once('subscribed', resolve));
    const pub = await c.publish('room', 'hello room');
    assert.deepEqual(Object.keys(pub).sort(), ['epoch', 'offset']);
    await r.until((e) => messages(e).some(([t, d]) => t === 'room' && d === 'hello room'));
    assert.deepEqual(await c.request('ping'), { echo: 'ping' });
    assert.deepEqual(got, ['m0', 'm1', 'm2', 'm3', 'm4']);
    // Binary over the stream.
    server.publish('feed', Buffer.from([1, 2, 250]));
    const bin = await r.until((e) => e.some((x) => x[0] === 'message' && typeof x[2] !== 'string'));
    const bytes = bin.find((x) => x[0] === 'message' && typeof x[2] !== 'string');
    assert.equal(bytes[1], 'feed');
    assert.deepEqual([...bytes[2]], [1, 2, 250]);
    // The server cuts the stream; what is published meanwhile arrives once,
    // in order, on the next stream (resumed from the client's positions).
    assert.deepEqual(opened.map(([, t]) => t), ['sse']);
    server.terminate(opened[0][0]);
    server.publish('feed', 'three');
    server.publish('feed', 'four');
    await r.until((e) => messages(e).filter(([t]) => t === 'feed').length === 4);
    assert.deepEqual(messages(r.items).filter(([t]) => t === 'feed').map(([, d]) => d), ['one', 'two\nlines', 'three', 'four']);
    assert.equal(c.positions().feed.offset, 5);
    assert.ok(r.items.some((x) => x[0] === 'recovered' && x[1] === 'feed' && x[2] === true));
    assert.equal(c.stats().duplicates, 0);
  } finally {
    c.close();
  }
});

test("'auto' goes back to a WebSocket when one opens again; 'sse' and 'websocket' stay", { timeout: 30000 }, async () => {
  let refuseWs = true;
  const { server, port } = await startServer({
    history: { size: 10 },
    onUpgrade: (req) => (req.transport === 'websocket' && refuseWs ? { status: 400 } : { topics: ['feed'] }),
  });
  const c = new SymphonyClient(`ws://127.0.0.1:${port}/`, { WebSocket, backoff: { min: 1, max: 10 }, fallback: { after: 1, retryWebSocket: 50 } });
  const r = recorder(c);
  try {
    await r.until((e) => e.some((x) => x[0] === 'state' && x[1] === 'open' && x[2].transport === 'sse'));
    refuseWs = false;
    await r.until((e) => e.some((x) => x[0] === 'state' && x[1] === 'open' && x[2].transport === 'websocket'));
    assert.equal(c.transport, 'websocket');
    server.publish('feed', 'on ws');
    await r.until((e) => messages(e).some(([, d]) => d === 'on ws'));
  } finally {
    c.close();
  }
  const s = new SymphonyClient(`ws://127.0.0.1:${port}/`, { transport: 'sse' });
  const rs = recorder(s);
  try {
    await rs.until((e) => e.some((x) => x[0] === 'subscribed'));
    assert.equal(s.transport, 'sse');
    server.publish('feed', 'on sse');
    await rs.until((e) => messages(e).some(([, d]) => d === 'on sse'));
  } finally {
    s.close();
  }
  assert.throws(() => new SymphonyClient('ws://x/', { WebSocket, transport: 'carrier pigeon' }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => new SymphonyClient('ws://x/', { WebSocket, fallback: { after: 0 } }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => new SymphonyClient('ws://x/', { transport: 'sse', fetch: 5 }), { code: 'ERR_INVALID_ARG_TYPE' });
});
