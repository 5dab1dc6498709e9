'use strict';
// symphony-ws/client against docs/protocol.md's symphony.v1, with a small
// real `ws` server on 127.0.0.1 that writes the frames (the suite does not
// need symphony's own server): every frame kind, text and binary; notices;
// the positions kept and the sy.since sent on reconnect; the backoff's delays
// (injected random and timers, never wall-clock); duplicates, malformed and
// unknown frames; a server that does not choose symphony.v1; close().
// Every wait is for an event, never for time to pass.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { SymphonyClient, connect, PROTOCOL } = require('../../client/symphony-client.cjs');
const { EPOCH_A, EPOCH_B, startServer, record, only, fastTimers, heldTimers, notice } = require('./helpers');

const T = { timeout: 20000 };
const servers = [];
const clients = [];
test.afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.close();
});

async function server(options) {
  const s = await startServer(options);
  servers.push(s);
  return s;
}

function client(url, options = {}) {
  const c = new SymphonyClient(url, { WebSocket, transport: 'websocket', ...options });
  clients.push(c);
  return { c, events: record(c) };
}

const messages = (events) => only(events, 'message');
const nMessages = (n) => (events) => messages(events).length >= n;
const sinceOf = (url) => new URLSearchParams(url.slice(url.indexOf('?') + 1)).getAll('sy.since');

test('every frame kind, text and binary, payloads holding newlines', T, async () => {
  const s = await server();
  const { c, events } = client(s.url);
  const { ws } = await s.connections.at(0);
  assert.equal(ws.protocol, PROTOCOL);
  ws.send(notice({ type: 'subscribed', topic: 'prices.eu', id: 7, epoch: EPOCH_A, offset: '1042' }));
  ws.send(notice({ type: 'subscribed', topic: 'chat', id: 8 })); // a topic without history
  ws.send('p7,1043\n{"bid":101.5}\nsecond line\n');
  ws.send(Buffer.from('p7,1044\n\n\x00\xff\n', 'latin1'));
  ws.send('p8\nhello\nthere');
  ws.send(Buffer.from('p8\n\x01\x02'));
  ws.send('d\njust\nyou');
  ws.send(Buffer.from('d\n\x0a'));
  ws.send('p7,1045\n'); // an empty payload
  ws.send(notice({ type: 'unsubscribed', topic: 'chat', id: 8 }));
  await events.until(nMessages(7));
  await events.until((e) => only(e, 'unsubscribed').length === 1);

  const got = messages(events.items).map(([topic, data, info]) => [topic, typeof data === 'string' ? data : Array.from(data), info]);
  const A = (offset) => ({ offset, epoch: EPOCH_A });
  const none = { offset: undefined, epoch: undefined };
  assert.deepEqual(got, [
    ['prices.eu', '{"bid":101.5}\nsecond line\n', A(1043)],
    ['prices.eu', [0x0a, 0x00, 0xff, 0x0a], A(1044)],
    ['chat', 'hello\nthere', none],
    ['chat', [1, 2], none],
    [null, 'just\nyou', none],
    [null, [0x0a], none],
    ['prices.eu', '', A(1045)],
  ]);
  // Binary payloads are Uint8Array views of the frame, whatever ws gives.
  for (const [, data] of messages(events.items)) if (typeof data !== 'string') assert.ok(data instanceof Uint8Array);
  assert.deepEqual(only(events.items, 'subscribed'), [
    ['prices.eu', { id: 7, epoch: EPOCH_A, offset: 1042 }],
    ['chat', { id: 8, epoch: undefined, offset: undefined }],
  ]);
  assert.deepEqual(only(events.items, 'unsubscribed'), [['chat']]);
  assert.deepEqual(only(events.items, 'recovered'), [], 'no position was given: nothing to recover');
  assert.deepEqual(c.positions(), { 'prices.eu': { epoch: EPOCH_A, offset: 1045 } });
  assert.deepEqual(c.stats(), { messages: 7, duplicates: 0, malformed: 0, unknown: 0, reconnects: 0 });
  assert.deepEqual(only(events.items, 'state').map((s) => s[0]), ['connecting', 'open']);
  assert.deepEqual(only(events.items, 'state')[1][1], { protocol: 'symphony.v1', plain: false, transport: 'websocket' });
  assert.deepEqual(only(events.items, 'error'), []);
});

test('the client offers symphony.v1; send() reaches the server as is', T, async () => {
  const s = await server();
  const { c, events } = client(s.url);
  assert.equal(c.send('too early'), false, 'not open yet: nothing sent');
  await events.until((e) => c.state === 'open');
  const conn = await s.connections.at(0);
  assert.equal(conn.protocol, 'symphony.v1');
  assert.equal(c.send('p1,2\nnot parsed'), true);
  assert.equal(c.send(new Uint8Array([1, 2, 3])), true);
  const [text, bin] = await conn.received.until((r) => r.length === 2);
  assert.deepEqual([text.isBinary, text.data.toString()], [false, 'p1,2\nnot parsed']);
  assert.deepEqual([bin.isBinary, [...bin.data]], [true, [1, 2, 3]]);
});

test('positions: resumed on every reconnect as sy.since, URL-encoded, the user\'s query kept', T, async () => {
  const s = await server();
  const topic = 'prix eu:a&b=c/é+'; // space, ':', '&', '=', non-ASCII, '+'
  const timers = fastTimers();
  const { c, events } = client(`${s.url}?room=a%20b&sy.since=dropped&x=1#frag`, {
    positions: JSON.parse(JSON.stringify({ [topic]: { epoch: EPOCH_A.toUpperCase(), offset: 10 }, other: { epoch: EPOCH_B, offset: 0 } })),
    timers,
    random: () => 0.5,
  });
  const first = await s.connections.at(0);
  // The user's parameters byte for byte, a sy.since per position, no fragment.
  assert.match(first.url, /^\/feed\?room=a%20b&x=1&sy\.since=/);
  assert.ok(first.url.includes(`sy.since=${EPOCH_A}%3A10%3Aprix+eu%3Aa%26b%3Dc%2F%C3%A9%2B`), first.url);
  assert.deepEqual(sinceOf(first.url), [`${EPOCH_A}:10:${topic}`, `${EPOCH_B}:0:other`]);

  first.ws.send(notice({ type: 'subscribed', topic, id: 1, epoch: EPOCH_A, offset: '12', since: '10', recovered: true }));
  first.ws.send(notice({ type: 'subscribed', topic: 'other', id: 2, epoch: EPOCH_B, offset: '5', since: '0', recovered: true }));
  first.ws.send('p1,11\neleven');
  first.ws.send('p1,12\ntwelve');
  first.ws.send('p2,1\none');
  await events.until(nMessages(3));
  assert.deepEqual(c.positions(), { [topic]: { epoch: EPOCH_A, offset: 12 }, other: { epoch: EPOCH_B, offset: 1 } });
  // JSON-able: what a page keeps in localStorage and gives back.
  assert.deepEqual(JSON.parse(JSON.stringify(c.positions())), c.positions());

  first.ws.close(1001, 'restart');
  const second = await s.connections.at(1);
  assert.deepEqual(sinceOf(second.url), [`${EPOCH_A}:12:${topic}`, `${EPOCH_B}:1:other`]);
  assert.match(second.url, /^\/feed\?room=a%20b&x=1&sy\.since=/);
  const reconnecting = only(events.items, 'state').find((s) => s[0] === 'reconnecting');
  assert.deepEqual(reconnecting[1], { delay: 250, attempt: 1, code: 1001, reason: 'restart', cause: 'closed' });
  assert.equal(c.stats().reconnects, 1);
  assert.equal(c.url(), `ws://127.0.0.1:${s.port}${second.url}`);

  // Positions given back at construction, from the JSON, resume the same way.
  const { c: c2 } = client(s.url, { positions: JSON.parse(JSON.stringify(c.positions())) });
  const third = await s.connections.at(2);
  assert.deepEqual(sinceOf(third.url), sinceOf(second.url));
  assert.deepEqual(c2.positions(), c.positions());
});

test('recovered: true takes the position from since (the replay brings it on), false from the notice', T, async () => {
  const s = await server();
  const { c, events } = client(s.url, {
    positions: { a: { epoch: EPOCH_A, offset: 100 }, b: { epoch: EPOCH_A, offset: 7 }, c: { epoch: EPOCH_A, offset: 3 } },
  });
  const { ws } = await s.connections.at(0);
  ws.send(notice({ type: 'subscribed', topic: 'a', id: 1, epoch: EPOCH_A, offset: '102', since: '100', recovered: true }));
  ws.send(notice({ type: 'subscribed', topic: 'b', id: 2, epoch: EPOCH_B, offset: '50', since: '7', recovered: false, reason: 'epoch', extra: 'ignored' }));
  ws.send(notice({ type: 'subscribed', topic: 'c', id: 3, since: '3', recovered: false, reason: 'no-history' }));
  await events.until((e) => only(e, 'recovered').length === 3);
  assert.deepEqual(c.positions(), { a: { epoch: EPOCH_A, offset: 100 }, b: { epoch: EPOCH_B, offset: 50 } },
    "a: at since until the replay; b: the notice's position; c: no history, no position");
  assert.deepEqual(only(events.items, 'recovered'), [
    ['a', true, { reason: undefined, epoch: EPOCH_A, offset: 102, since: 100 }],
    ['b', false, { reason: 'epoch', epoch: EPOCH_B, offset: 50, since: 7 }],
    ['c', false, { reason: 'no-history', epoch: undefined, offset: undefined, since: 3 }],
  ]);
  // 'subscribed' comes first, then 'recovered', for each topic.
  assert.deepEqual(events.items.filter((e) => e[0] === 'subscribed' || e[0] === 'recovered').map((e) => `${e[0]}:${e[1]}`),
    ['subscribed:a', 'recovered:a', 'subscribed:b', 'recovered:b', 'subscribed:c', 'recovered:c']);
  ws.send('p1,101\nreplayed');
  ws.send('p1,102\nreplayed');
  ws.send('p2,51\nlive');
  await events.until(nMessages(3));
  assert.deepEqual(c.positions(), { a: { epoch: EPOCH_A, offset: 102 }, b: { epoch: EPOCH_B, offset: 51 } });
});

test('a p message whose offset is not after the kept one is dropped and counted', T, async () => {
  const s = await server();
  const { c, events } = client(s.url);
  const { ws } = await s.connections.at(0);
  ws.send(notice({ type: 'subscribed', topic: 't', id: 0, epoch: EPOCH_A, offset: '4' }));
  for (const o of [5, 6, 6, 4, 7]) ws.send(`p0,${o}\nm${o}`);
  ws.send(Buffer.from('p0,7\nagain'));
  ws.send('d\nend');
  await events.until((e) => messages(e).some((m) => m[1] === 'end'));
  assert.deepEqual(messages(events.items).map((m) => m[1]), ['m5', 'm6', 'm7', 'end']);
  assert.deepEqual(c.stats(), { messages: 4, duplicates: 3, malformed: 0, unknown: 0, reconnects: 0 });
  assert.deepEqual(c.positions(), { t: { epoch: EPOCH_A, offset: 7 } });
});

test('unknown kinds and malformed frames are ignored and counted, never thrown', T, async () => {
  const s = await server();
  const { c, events } = client(s.url);
  const { ws } = await s.connections.at(0);
  ws.send(notice({ type: 'subscribed', topic: 't', id: 1, epoch: EPOCH_A, offset: '0' }));
  const unknown = ['x1,2\nfuture kind', Buffer.from('z\n\x00'), notice({ type: 'later-notice', topic: 't' })];
  const malformed = [
    '', Buffer.alloc(0), 'p1,2', 'p1,2 no newline at all', 'p9,1\nunknown id', 'pa,1\nx', 'p1,\nx', 'p1,01\nx', 'p-1\nx',
    'p1,99999999999999999999\nbeyond 2^53', `p1,${2 ** 53}\nnot exact`, `p${'1'.repeat(40)}\nlong header`, 'dx\nnot d',
    'c', 'c{not json', 'c[1,2]', 'cnull', 'c"s"', notice({ type: 'subscribed', id: 1 }), notice({ type: 'subscribed', topic: 'u', id: -1 }),
    notice({ type: 'subscribed', topic: 'u', id: 2, epoch: 'short', offset: '1' }), notice({ type: 'subscribed', topic: 'u', id: 2, epoch: EPOCH_A }),
    notice({ type: 'unsubscribed', id: 1 }), notice({ type: 1 }), Buffer.from('c{bad'), Buffer.from('p1,3'),
  ];
  for (const f of [...unknown, ...malformed]) ws.send(f);
  ws.send(`p1,${2 ** 53 - 1}\nthe last exact offset`);
  await events.until(nMessages(1));
  assert.deepEqual(messages(events.items), [['t', 'the last exact offset', { offset: 2 ** 53 - 1, epoch: EPOCH_A }]]);
  assert.deepEqual(c.stats(), { messages: 1, duplicates: 0, malformed: malformed.length, unknown: unknown.length, reconnects: 0 });
  assert.deepEqual(only(events.items, 'error'), []);
  assert.equal(c.state, 'open');
  assert.deepEqual(only(events.items, 'subscribed').map((e) => e[0]), ['t']);
  // A binary notice is read too (the protocol sends them as text).
  ws.send(Buffer.from(notice({ type: 'unsubscribed', topic: 't', id: 1 })));
  await events.until((e) => only(e, 'unsubscribed').length === 1);
  ws.send('p1,2\nid gone');
  ws.send('d\nafter');
  await events.until(nMessages(2));
  assert.equal(c.stats().malformed, malformed.length + 1, 'an id used after its unsubscribed notice');
  assert.deepEqual(c.positions(), {}, 'an unsubscribed topic is not resumed');
});

test('backoff: random(0, min(max, min * 2^attempt, max(min, outage / 2))), the attempt reset by an open', T, async () => {
  const s = await server();
  s.refuse(true); // 503 to every upgrade: each connection fails before it opens
  const timers = fastTimers();
  // The outage's clock: long ago, so the exponential cap is the smaller one.
  let clock = 0;
  timers.now = () => clock;
  const randoms = [];
  const random = () => { const r = [0.5, 0.999, 0][randoms.length % 3]; randoms.push(r); return r; };
  const { c, events } = client(s.url, { backoff: { min: 100, max: 1000 }, random, timers });
  clock = 1e6;
  await s.upgrades.at(6);
  s.refuse(false);
  const first = await s.connections.at(0);
  await events.until(() => c.state === 'open');
  // Caps 100, 200, 400, 800, 1000, 1000, 1000 times 0.5, 0.999, 0, ...
  assert.deepEqual(timers.delays.slice(0, 7), [50, 199, 0, 400, 999, 0, 500]);
  const failures = timers.delays.length;
  assert.equal(c.stats().reconnects, failures);
  assert.deepEqual(only(events.items, 'state').filter((st) => st[0] === 'reconnecting').map((st) => st[1].attempt),
    Array.from({ length: failures }, (_, i) => i + 1));
  assert.ok(only(events.items, 'error').every(([err]) => err instanceof Error && err.code === 'ERR_WEBSOCKET'));

  // After an open, the attempt starts again at 0: the cap is min again.
  const before = timers.delays.length;
  first.ws.terminate();
  await s.connections.at(1);
  const r = randoms[randoms.length - 1];
  assert.deepEqual(timers.delays.slice(before), [Math.floor(r * 100)]);
  assert.equal(only(events.items, 'state').filter((st) => st[0] === 'reconnecting').at(-1)[1].cause, 'lost');

  // A short outage caps the delay at half its length (never below min):
  // each delay is random times min(max, min * 2^(attempt-1), max(min, age / 2)),
  // age read from the clock when the delay is chosen.
  const second = await s.connections.at(1);
  await events.until(() => c.state === 'open');
  const chosen = [];
  c.on('state', (st, info) => { if (st === 'reconnecting') chosen.push({ ...info, age: clock - lost, r: randoms.at(-1) }); });
  s.refuse(true);
  const lost = clock;
  const u0 = s.upgrades.items.length;
  second.ws.terminate();
  await s.upgrades.at(u0 + 3);
  clock = lost + 300;
  await s.upgrades.at(u0 + 7);
  const expected = chosen.map(({ attempt, age, r }) => Math.floor(r * Math.min(1000, 100 * 2 ** (attempt - 1), Math.max(100, age / 2))));
  assert.deepEqual(chosen.map((x) => x.delay), expected);
  assert.ok(chosen.some((x) => x.age === 300 && x.attempt >= 3 && x.r > 0 && x.delay === Math.floor(x.r * 150)), JSON.stringify(chosen));
});

test('the default backoff and jitter: delays within [0, cap), Math.random when none is given', T, async () => {
  const s = await server();
  s.refuse(true);
  const timers = heldTimers();
  const { events } = client(s.url, { timers });
  await events.until((e) => only(e, 'state').some((st) => st[0] === 'reconnecting'));
  assert.equal(timers.pending.length, 1);
  assert.ok(timers.pending[0].ms >= 0 && timers.pending[0].ms < 500 && Number.isInteger(timers.pending[0].ms));
});

test('close() stops reconnecting: while open, while waiting, while connecting', T, async () => {
  const s = await server();
  // Open: the server sees the close; no reconnect is scheduled.
  const timers = heldTimers();
  const { c, events } = client(s.url, { timers });
  const conn = await s.connections.at(0);
  await events.until(() => c.state === 'open');
  c.close();
  assert.equal(c.state, 'closed');
  const [code] = await conn.closed;
  assert.equal(code, 1000);
  assert.deepEqual(timers.pending, []);
  assert.deepEqual(only(events.items, 'state').map((st) => st[0]), ['connecting', 'open', 'closed']);
  assert.equal(c.send('x'), false);
  c.close(); // twice: nothing more
  assert.equal(only(events.items, 'state').length, 3);

  // Waiting to reconnect: the timer is cleared and never fires.
  const t2 = heldTimers();
  const b = client(s.url, { timers: t2 });
  const conn2 = await s.connections.at(1);
  conn2.ws.terminate();
  await b.events.until(() => b.c.state === 'reconnecting');
  b.c.close();
  assert.deepEqual(t2.cleared, [t2.pending[0]]);
  assert.deepEqual(only(b.events.items, 'state').map((st) => st[0]), ['connecting', 'open', 'reconnecting', 'closed']);

  // Connecting: the socket is abandoned without an uncaught error; and
  // closed before it ever started, no socket at all.
  const t3 = heldTimers();
  const d = client(s.url, { timers: t3 });
  await d.events.until((e) => only(e, 'state').length === 1);
  d.c.close();
  const e = client(s.url, { timers: t3 });
  e.c.close();
  assert.deepEqual(only(e.events.items, 'state').map((st) => st[0]), ['closed']);
  // A later connection still works: the server is fine, and the closed clients never came back.
  const f = client(s.url);
  await f.events.until(() => f.c.state === 'open');
  assert.deepEqual(t3.pending, []);
  assert.deepEqual(only(d.events.items, 'state').map((st) => st[0]), ['connecting', 'closed']);
  assert.deepEqual(only(d.events.items, 'error'), []);
});

test('a listener may close the client from within any event', T, async () => {
  const s = await server();
  const timers = heldTimers();
  const c = new SymphonyClient(s.url, { WebSocket, transport: 'websocket', timers });
  clients.push(c);
  const events = record(c);
  c.on('message', () => c.close());
  const conn = await s.connections.at(0);
  conn.ws.send('d\none');
  conn.ws.send('d\ntwo');
  await conn.closed;
  assert.deepEqual(messages(events.items).map((m) => m[1]), ['one']);
  assert.deepEqual(timers.pending, []);
  // Closed on 'reconnecting': no timer left behind.
  const t2 = heldTimers();
  const c2 = new SymphonyClient(s.url, { WebSocket, transport: 'websocket', timers: t2 });
  clients.push(c2);
  c2.on('state', (st) => { if (st === 'reconnecting') c2.close(); });
  (await s.connections.at(1)).ws.terminate();
  await new Promise((resolve) => c2.on('state', (st) => st === 'closed' && resolve()));
  assert.deepEqual(t2.pending, []);
});

test('a server that does not choose symphony.v1: bare payloads, said by an error and the open state', T, async () => {
  const s = await server({ protocol: false });
  // ws (and Chromium) fail a handshake that offered subprotocols and got
  // none back; Firefox and Safari open it, with protocol ''. This WebSocket
  // is such a lenient one: it offers nothing to ws, so ws opens it.
  class Lenient extends WebSocket {
    constructor(url) { super(url, []); }
  }
  const { c, events } = client(s.url, { WebSocket: Lenient, positions: { t: { epoch: EPOCH_A, offset: 1 } } });
  const conn = await s.connections.at(0);
  assert.equal(conn.protocol, '');
  assert.deepEqual(sinceOf(conn.url), [`${EPOCH_A}:1:t`], 'the positions are still offered');
  conn.ws.send('p1,5\nlooks like a frame');
  conn.ws.send(Buffer.from([0x70, 0x0a]));
  conn.ws.send(notice({ type: 'subscribed', topic: 't', id: 1, epoch: EPOCH_B, offset: '9' }));
  await events.until(nMessages(3));
  assert.deepEqual(messages(events.items).map(([t, d, i]) => [t, typeof d === 'string' ? d : Array.from(d), i]), [
    [null, 'p1,5\nlooks like a frame', { offset: undefined, epoch: undefined }],
    [null, [0x70, 0x0a], { offset: undefined, epoch: undefined }],
    [null, notice({ type: 'subscribed', topic: 't', id: 1, epoch: EPOCH_B, offset: '9' }), { offset: undefined, epoch: undefined }],
  ]);
  assert.deepEqual(only(events.items, 'state')[1], ['open', { protocol: '', plain: true, transport: 'websocket' }]);
  const errors = only(events.items, 'error');
  assert.equal(errors.length, 1);
  assert.equal(errors[0][0].code, 'ERR_SUBPROTOCOL');
  assert.deepEqual(c.positions(), { t: { epoch: EPOCH_A, offset: 1 } }, 'kept as given');
  assert.deepEqual(only(events.items, 'subscribed'), []);
});

test('ws refuses a 101 without symphony.v1 (or with another): an error, then a retry', T, async () => {
  for (const protocol of [false, 'other.v1']) {
    const s = await server({ protocol });
    const timers = heldTimers();
    const { events } = client(s.url, { timers });
    await events.until((e) => only(e, 'state').some((st) => st[0] === 'reconnecting'));
    assert.equal(timers.pending.length, 1);
    assert.ok(only(events.items, 'error').some(([err]) => err.code === 'ERR_WEBSOCKET'), String(protocol));
  }
});

test('on / off / once', T, async () => {
  const s = await server();
  const timers = heldTimers();
  const c = new SymphonyClient(s.url, { WebSocket, transport: 'websocket', timers });
  clients.push(c);
  const seen = [];
  const a = (t, d) => seen.push(`a:${d}`);
  const b = (t, d) => seen.push(`b:${d}`);
  assert.equal(c.on('message', a), c);
  c.once('message', b);
  c.on('message', b);
  c.off('message', b); // the last added goes first: the once() one stays
  const all = record(c);
  const { ws } = await s.connections.at(0);
  ws.send('d\n1');
  ws.send('d\n2');
  await all.until(nMessages(2));
  assert.deepEqual(seen, ['a:1', 'b:1', 'a:2']);
  c.off('message', a);
  c.off('nothing', a);
  ws.send('d\n3');
  await all.until(nMessages(3));
  assert.deepEqual(seen, ['a:1', 'b:1', 'a:2']);
});

test('bad arguments throw Error subclasses with a code', () => {
  const bad = [
    [() => new SymphonyClient(42, { WebSocket }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('not a url', { WebSocket }), TypeError, 'ERR_INVALID_URL'],
    [() => new SymphonyClient('ftp://x/', { WebSocket }), TypeError, 'ERR_INVALID_URL'],
    [() => new SymphonyClient('ws://x/', null), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('ws://x/', { WebSocket: 'ws' }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, backoff: 5 }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, backoff: { min: '1' } }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, backoff: { min: -1 } }), RangeError, 'ERR_OUT_OF_RANGE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, backoff: { min: NaN } }), RangeError, 'ERR_OUT_OF_RANGE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, backoff: { min: 10, max: 5 } }), RangeError, 'ERR_OUT_OF_RANGE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, random: 0.5 }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, timers: { setTimeout: 1 } }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, positions: 'x' }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, positions: { t: { epoch: 'abc', offset: 1 } } }), TypeError, 'ERR_INVALID_ARG_VALUE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, positions: { t: { epoch: EPOCH_A, offset: -1 } } }), TypeError, 'ERR_INVALID_ARG_VALUE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, positions: { t: { epoch: EPOCH_A, offset: 2 ** 53 } } }), TypeError, 'ERR_INVALID_ARG_VALUE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, positions: { '': { epoch: EPOCH_A, offset: 1 } } }), TypeError, 'ERR_INVALID_ARG_VALUE'],
    [() => new SymphonyClient('ws://x/', { WebSocket, timers: heldTimers() }).on('message', 'f'), TypeError, 'ERR_INVALID_ARG_TYPE'],
  ];
  // Node 20 has no global WebSocket: the option is then required.
  if (typeof globalThis.WebSocket !== 'function') bad.push([() => new SymphonyClient('ws://x/'), TypeError, 'ERR_INVALID_ARG_TYPE']);
  for (const [fn, Ctor, code] of bad) {
    assert.throws(fn, (err) => err instanceof Ctor && err.code === code, fn.toString());
  }
  // Accepted: http(s) URLs (as ws(s)), a URL object, offsets as decimal strings.
  const held = heldTimers();
  const ok = [
    new SymphonyClient(new URL('https://x/a?b=1'), { WebSocket, timers: held }),
    connect('http://x/', { WebSocket, positions: { t: { epoch: EPOCH_A, offset: '7' } } }),
  ];
  assert.equal(ok[0].url(), 'wss://x/a?b=1');
  assert.equal(ok[1].url(), `ws://x/?sy.since=${EPOCH_A}%3A7%3At`);
  assert.ok(ok[1] instanceof SymphonyClient);
  for (const c of ok) c.close();
});

test('at most 1,024 sy.since parameters (the server refuses more with 400)', () => {
  const positions = {};
  for (let i = 0; i < 1100; i++) positions[`t${i}`] = { epoch: EPOCH_A, offset: i };
  const c = new SymphonyClient('ws://x/feed', { WebSocket, positions, timers: heldTimers() });
  assert.equal(sinceOf(c.url()).length, 1024);
  assert.equal(Object.keys(c.positions()).length, 1100, 'all are kept');
  c.close();
});
