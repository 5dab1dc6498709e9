'use strict';
// The client library's fault matrix in Node (docs/sse.md, "The rule"): a
// real symphony server with history, the client with its default options
// (transport 'auto', ws for WebSockets, Node's fetch for the stream), and
// between them a TCP proxy (helpers/fault-proxy.js) that breaks the path
// the way networks do. Every case ends with the client open on the
// transport it should be on, with every message of the topic once and in
// order. Every wait is for an event (the client's states, its messages,
// the server's opens), never for time to pass; the faults last until the
// client has met them (a count of failed attempts).
//
// Each case also checks the delay the client chose when the path opened
// again: the backoff's cap is half the outage so far (docs/api.md), so a
// client is back within about 2 s of a 1.5-2.5 s outage. The diagnostic
// line of each case prints how long it took in fact.
const test = require('node:test');
const assert = require('node:assert/strict');
const dns = require('node:dns');
const WebSocket = require('ws');
const { SymphonyClient } = require('../../client/symphony-client.cjs');
const { Server } = require('../..');
const { FaultProxy } = require('../helpers/fault-proxy');

const T = { timeout: 60000 };
const live = [];
test.afterEach(async () => {
  for (const x of live.splice(0).reverse()) await x();
});

/** A server on 127.0.0.1 (port: a given one, for a restart) whose upgrades get the topic 'feed'. */
async function server(port = 0, options = {}) {
  const s = new Server({
    host: '127.0.0.1', port, threads: 1, history: { size: 1000 },
    onUpgrade: () => ({ topics: ['feed'] }),
    ...options,
  });
  const { port: p } = await s.listen();
  let closed = false;
  const close = async () => { if (!closed) { closed = true; await s.close(); } };
  live.push(close);
  return { s, port: p, close };
}

/** Records a client: its states (with their info) and the feed's sequence numbers; until(pred) waits for an event that makes pred true. */
function watch(c) {
  const w = { states: [], seqs: [], recovered: [], errors: [], waiters: [] };
  const wake = () => { w.waiters = w.waiters.filter((x) => !(x.pred() && (x.resolve(), true))); };
  c.on('state', (state, info) => { w.states.push({ state, ...info, at: Date.now() }); wake(); });
  c.on('message', (topic, data) => { if (topic === 'feed') w.seqs.push(Number(data)); wake(); });
  c.on('recovered', (topic, ok, info) => { w.recovered.push({ ok, reason: info.reason }); wake(); });
  c.on('error', (err) => { w.errors.push(err.code); });
  // what: for a reader of a hung test (the test's own timeout ends it).
  w.until = (pred, what) => new Promise((resolve) => {
    if (pred()) resolve();
    else w.waiters.push({ pred, resolve, what });
  });
  w.failures = () => w.states.filter((s) => s.state === 'reconnecting').length;
  w.opens = () => w.states.filter((s) => s.state === 'open');
  return w;
}

/** A client of url with the defaults but what a case sets; closed after the test. */
function client(url, options = {}) {
  const c = new SymphonyClient(url, { WebSocket, ...options });
  live.push(async () => c.close());
  return c;
}

let seq = 0;
/** Publishes the next n sequence numbers on 'feed'; resolves the last. */
function publish(s, n) {
  for (let i = 0; i < n; i++) s.publish('feed', String(++seq));
  return seq;
}

/**
 * One case: a client through the proxy, 5 messages, the fault (break(),
 * held until the client has failed `failures` attempts after it, and 5
 * messages published meanwhile), heal(), then 5 more. The client must end
 * open on `transport`, with 1..15 once and in order.
 */
async function runCase(t, { brk, heal, transport, failures = 3, met = () => true, options = {}, server: srvOptions, via = (port) => `127.0.0.1:${port}`, after }) {
  seq = 0;
  const srv = await server(0, srvOptions);
  const proxy = new FaultProxy(srv.port);
  live.push(() => proxy.close());
  await proxy.start();
  const c = client(`ws://${via(proxy.port)}/`, options);
  const w = watch(c);
  await w.until(() => c.state === 'open' && c.transport === 'websocket', 'the first open');
  await w.until(() => w.states.some((s) => s.state === 'open'), 'open');
  // Subscribed to the feed at the upgrade: the first messages arrive.
  publish(srv.s, 5);
  await w.until(() => w.seqs.length === 5, '5 messages');
  const before = w.failures();
  await brk({ srv, proxy, c, w });
  publish(srv.s, 5);
  await w.until(() => w.failures() >= before + failures && met(w), `${failures} failed attempts`);
  const healed = Date.now();
  const lastDelay = w.states.filter((s) => s.state === 'reconnecting').at(-1);
  const opensBefore = w.opens().length;
  await heal({ srv, proxy, c, w });
  await w.until(() => w.opens().length > opensBefore && c.state === 'open' && c.transport === transport, `open on ${transport}`);
  const back = w.opens().at(-1).at - healed;
  publish(srv.s, 5);
  await w.until(() => w.seqs.length >= 15 && w.seqs.at(-1) === 15, 'all 15 messages');
  assert.deepEqual(w.seqs, Array.from({ length: 15 }, (_, i) => i + 1), 'every message once, in order');
  assert.equal(c.transport, transport);
  assert.equal(c.stats().duplicates, 0);
  t.diagnostic(`back on ${c.transport} ${back} ms after the path opened; the delay it was waiting: ${lastDelay.delay} ms; causes: ${[...new Set(w.states.filter((s) => s.state === 'reconnecting').map((s) => s.cause))].join(', ')}`);
  if (after) await after({ srv, proxy, c, w, lastDelay });
  return { srv, proxy, c, w, lastDelay };
}

const causes = (w) => new Set(w.states.filter((s) => s.state === 'reconnecting').map((s) => s.cause));

test('a proxy that accepts and at once closes (the issue\'s first scenario): never the stream, back on a WebSocket', T, async (t) => {
  const { w, lastDelay } = await runCase(t, {
    brk: ({ proxy }) => { proxy.set('close'); proxy.resetAll(); },
    heal: ({ proxy }) => proxy.set('pass'),
    transport: 'websocket',
    failures: 4,
  });
  assert.ok(!w.states.some((s) => s.state === 'connecting' && s.transport === 'sse'), 'no stream was tried');
  assert.ok(lastDelay.delay <= 2000, `the delay in effect when the path opened: ${lastDelay.delay} ms`);
});

test('refused (the proxy stops listening), then back: a WebSocket', T, async (t) => {
  const { w } = await runCase(t, {
    brk: async ({ proxy }) => { await proxy.stop(); proxy.resetAll(); },
    heal: ({ proxy }) => proxy.start(),
    transport: 'websocket',
  });
  assert.ok(causes(w).has('refused'), [...causes(w)].join());
  assert.ok(!w.states.some((s) => s.state === 'connecting' && s.transport === 'sse'));
});

test('reset at accept, then back: a WebSocket', T, async (t) => {
  const { w } = await runCase(t, {
    brk: ({ proxy }) => { proxy.set('reset'); proxy.resetAll(); },
    heal: ({ proxy }) => proxy.set('pass'),
    transport: 'websocket',
  });
  assert.ok(causes(w).has('reset') || causes(w).has('failed'), [...causes(w)].join());
});

test('reset mid-stream: resumed at once on a WebSocket, recovered', T, async (t) => {
  const { w } = await runCase(t, {
    brk: ({ proxy }) => proxy.resetAll(),
    heal: () => {},
    transport: 'websocket',
    failures: 1,
  });
  assert.ok(causes(w).has('lost'), [...causes(w)].join());
  assert.ok(w.recovered.some((r) => r.ok));
});

test('reset inside the HTTP head, then back: a WebSocket', T, async (t) => {
  await runCase(t, {
    brk: ({ proxy }) => { proxy.set('head-reset'); proxy.resetAll(); },
    heal: ({ proxy }) => proxy.set('pass'),
    transport: 'websocket',
  });
});

test('a black hole at connect: each attempt ends at openTimeout, never the stream; back on a WebSocket', T, async (t) => {
  const { w } = await runCase(t, {
    brk: ({ proxy }) => { proxy.set('hole'); proxy.resetAll(); },
    heal: ({ proxy }) => proxy.set('pass'),
    transport: 'websocket',
    options: { openTimeout: 500 },
  });
  assert.ok(causes(w).has('timeout'), [...causes(w)].join());
  assert.ok(!w.states.some((s) => s.state === 'connecting' && s.transport === 'sse'));
});

test('a black hole mid-stream (no FIN): the heartbeat finds it; back on a WebSocket', T, async (t) => {
  const { w } = await runCase(t, {
    brk: ({ proxy }) => { proxy.holeAll(); proxy.set('hole'); },
    heal: ({ proxy }) => proxy.set('pass'),
    transport: 'websocket',
    failures: 2,
    options: { openTimeout: 500, heartbeat: 200 },
  });
  assert.ok(causes(w).has('stalled'), [...causes(w)].join());
});

for (const status of [400, 403]) {
  test(`upgrades answered ${status} where HTTP passes: over to the stream (upgrade-blocked), every message`, T, async (t) => {
    const { c, w } = await runCase(t, {
      brk: ({ proxy }) => { proxy.set(`upgrade:${status}`); proxy.resetAll(); },
      heal: () => {},
      transport: 'sse',
      failures: 1,
      options: { backoff: { min: 50, max: 200 } },
    });
    assert.equal(c.transportReason, 'upgrade-blocked');
    assert.ok(causes(w).has('upgrade-blocked'));
  });
}

test('every request answered 502 (the proxy\'s server is away): an outage, back on a WebSocket', T, async (t) => {
  const { w } = await runCase(t, {
    brk: ({ proxy }) => { proxy.set('all:502'); proxy.resetAll(); },
    heal: ({ proxy }) => proxy.set('pass'),
    transport: 'websocket',
    failures: 4,
  });
  assert.ok(!w.states.some((s) => s.state === 'connecting' && s.transport === 'sse'), 'no stream was tried');
  assert.ok(causes(w).has('rejected'), [...causes(w)].join());
});

test('a proxy that passes upgrades but not frames: the silent WebSocket sends the client to the stream', T, async (t) => {
  const { c } = await runCase(t, {
    brk: ({ proxy }) => { proxy.set('silent'); proxy.resetAll(); },
    heal: () => {},
    transport: 'sse',
    failures: 1,
    options: { openTimeout: 500 },
  });
  assert.equal(c.transportReason, 'silent');
});

test('a proxy that buffers the stream (and refuses upgrades): each stream attempt ends at openTimeout with its cause; live once it lets go', T, async (t) => {
  const { w } = await runCase(t, {
    brk: ({ proxy }) => { proxy.set('buffer'); proxy.resetAll(); },
    heal: ({ proxy }) => proxy.set('upgrade:400'),
    transport: 'sse',
    failures: 4,
    // A stream attempt's end (a WebSocket attempt may end at openTimeout
    // too, on a busy machine, before its refusal is read).
    met: (w) => w.states.some((s, i) => s.state === 'reconnecting' && s.cause === 'timeout' && w.states[i - 1]?.transport === 'sse'),
    options: { openTimeout: 500, backoff: { min: 50, max: 200 } },
  });
  // Every stream attempt while it held them ended at openTimeout, and the client stayed on the stream.
  const streamFailures = w.states.filter((s, i) => s.state === 'reconnecting' && w.states[i - 1].transport === 'sse');
  assert.ok(streamFailures.length > 0 && streamFailures.every((s) => s.cause === 'timeout'), JSON.stringify(streamFailures));
});

test('DNS failure, then the name resolves again: a WebSocket', T, async (t) => {
  // The name resolves through the client's own WebSocket class (ws' lookup option) while `up`.
  let up = true;
  const lookup = (host, opts, cb) => {
    if (!up) { const e = new Error(`getaddrinfo ENOTFOUND ${host}`); e.code = 'ENOTFOUND'; process.nextTick(cb, e); return; }
    dns.lookup('127.0.0.1', opts, cb);
  };
  class LookupWebSocket extends WebSocket {
    constructor(url, protocols) { super(url, protocols, { lookup }); }
  }
  const { w } = await runCase(t, {
    brk: ({ proxy }) => { up = false; proxy.resetAll(); },
    heal: () => { up = true; },
    transport: 'websocket',
    via: (port) => `symphony-fault.invalid:${port}`,
    options: { WebSocket: LookupWebSocket },
  });
  assert.ok(causes(w).has('dns'), [...causes(w)].join());
});

test('a server restart (the issue\'s deploy): refused for a while, a new server on the same port; a WebSocket at once, told it could not recover', T, async (t) => {
  seq = 0;
  let srv = await server();
  const port = srv.port;
  const c = client(`ws://127.0.0.1:${port}/`);
  const w = watch(c);
  await w.until(() => c.state === 'open', 'open');
  publish(srv.s, 5);
  await w.until(() => w.seqs.length === 5, '5 messages');
  await srv.close();
  await w.until(() => w.failures() >= 4 && causes(w).has('refused'), 'refused attempts');
  const healed = Date.now();
  const lastDelay = w.states.filter((s) => s.state === 'reconnecting').at(-1);
  srv = await server(port);
  const opened = new Promise((resolve) => srv.s.once('open', resolve));
  await w.until(() => c.state === 'open' && w.opens().length === 2, 'open again');
  await opened;
  const back = w.opens().at(-1).at - healed;
  assert.equal(c.transport, 'websocket');
  assert.ok(!w.states.some((s) => s.state === 'connecting' && s.transport === 'sse'), 'no stream was tried');
  assert.ok(lastDelay.delay <= 2000, `the delay in effect when the server came back: ${lastDelay.delay} ms`);
  // A new epoch: the client is told its position could not be kept.
  await w.until(() => w.recovered.length > 0, 'recovered');
  assert.equal(w.recovered.at(-1).ok, false);
  seq = 5;
  publish(srv.s, 5);
  await w.until(() => w.seqs.length === 10, 'the new server\'s messages');
  assert.deepEqual(w.seqs, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  t.diagnostic(`back on ${c.transport} ${back} ms after the server listened again; the delay it was waiting: ${lastDelay.delay} ms`);
});
