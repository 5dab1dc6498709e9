'use strict';
// A hostile resume (docs/protocol.md, "sy.since"): each malformed position
// is refused with 400 and its reason before the application sees the
// request, a healthy connection is undisturbed; huge but valid positions
// are a 'future', and a URL full of valid positions costs nothing after.
const test = require('node:test');
const assert = require('node:assert/strict');
const { allocator } = require('../..');
const { startServer, closeAll, healthy } = require('../helpers/server');
const { open, waitFor, statusOf } = require('../helpers/raw');
const { connectV1, sinceQuery } = require('../helpers/v1');

test.afterEach(closeAll);

const EPOCH = '0123456789abcdef';
const U64_MAX = '18446744073709551615';
const enc = encodeURIComponent;

/** The whole answer to a raw upgrade request: { status, body } once the server closed. */
async function answer(port, path) {
  const st = await open(port, path, { 'Sec-WebSocket-Protocol': 'symphony.v1' });
  await waitFor(() => st.ended, 5000, 'the server to close');
  return { status: statusOf(st.head), head: st.head, body: st.data.toString() };
}

const CASES = [
  ['an epoch of 15 characters', `sy.since=${enc(`${EPOCH.slice(1)}:1:a`)}`, "sy.since: the epoch must be 16 hexadecimal characters, then ':'"],
  ['an epoch of 17 characters', `sy.since=${enc(`${EPOCH}0:1:a`)}`, "sy.since: the epoch must be 16 hexadecimal characters, then ':'"],
  ['a non-hex epoch', `sy.since=${enc('0123456789abcdeg:1:a')}`, "sy.since: the epoch must be 16 hexadecimal characters, then ':'"],
  ['no parts at all', 'sy.since=', "sy.since: the epoch must be 16 hexadecimal characters, then ':'"],
  ['an offset over 2^64-1', `sy.since=${enc(`${EPOCH}:18446744073709551616:a`)}`, 'sy.since: the offset is over 18446744073709551615'],
  ['an offset of 21 digits', `sy.since=${enc(`${EPOCH}:100000000000000000000:a`)}`, "sy.since: the offset must be 1 to 20 decimal digits, then ':'"],
  ['a signed offset', `sy.since=${enc(`${EPOCH}:-1:a`)}`, "sy.since: the offset must be 1 to 20 decimal digits, then ':'"],
  ['an empty offset', `sy.since=${enc(`${EPOCH}::a`)}`, "sy.since: the offset must be 1 to 20 decimal digits, then ':'"],
  ['no topic part', `sy.since=${enc(`${EPOCH}:1`)}`, "sy.since: the offset must be 1 to 20 decimal digits, then ':'"],
  ['an empty topic', `sy.since=${enc(`${EPOCH}:1:`)}`, 'sy.since: the topic is empty'],
  ['a topic over 1024 bytes', `sy.since=${enc(`${EPOCH}:1:${'t'.repeat(1025)}`)}`, 'sy.since: the topic is over 1024 bytes'],
  ['an invalid UTF-8 topic', `sy.since=${EPOCH}%3A1%3Aab%FF`, 'sy.since: the topic is not valid UTF-8'],
  ['an overlong UTF-8 topic', `sy.since=${EPOCH}%3A1%3A%C0%AF`, 'sy.since: the topic is not valid UTF-8'],
  ['a duplicate topic', `sy.since=${enc(`${EPOCH}:1:a`)}&x=1&sy.since=${enc(`${EPOCH}:2:a`)}`, 'sy.since: a topic is given twice'],
  ['a duplicate topic, escaped differently', `sy.since=${enc(`${EPOCH}:1:a b`)}&sy.since=${EPOCH}%3A2%3Aa%20b`, 'sy.since: a topic is given twice'],
  ['a bad %-escape', `sy.since=${EPOCH}%3A1%3Aa%G1`, 'sy.since: a bad %-escape'],
  ['a truncated %-escape', `sy.since=${EPOCH}%3A1%3Aa%4`, 'sy.since: a bad %-escape'],
  ['a bad %-escape in a later position', `sy.since=${enc(`${EPOCH}:1:a`)}&sy.since=${EPOCH}%3A1%3Ab%%`, 'sy.since: a bad %-escape'],
];

test('malformed sy.since: 400 with the reason, before onUpgrade; a healthy connection is undisturbed', { timeout: 30000 }, async () => {
  let asked = 0;
  const { server, port, url } = await startServer({ history: true, onUpgrade: () => { asked++; return { topics: ['a'] }; } });
  for (const [what, query, reason] of CASES) {
    const r = await answer(port, `/feed?${query}`);
    assert.equal(r.status, 400, `${what}: ${r.head}`);
    assert.equal(r.body.trim().split('\n').at(-1), reason, `${what}: the body says why`);
  }
  assert.equal(asked, 0, 'onUpgrade never saw a malformed request');
  const rejects = server.stats().handshakeRejects;
  assert.equal(rejects, CASES.length);
  // The same server serves others.
  assert.equal(await healthy(server, url), 'still here');
  assert.equal(asked, 1);
});

test('more than 1,024 positions: 400 (with a maxHeaderSize that lets the URL through); 1,024 are fine', { timeout: 30000 }, async () => {
  let asked = 0;
  const { server, port, url } = await startServer({ history: true, maxHeaderSize: 1 << 17, onUpgrade: () => { asked++; return true; } });
  const list = (n) => Array.from({ length: n }, (_, i) => ({ epoch: EPOCH, offset: i, topic: `t${i}` }));
  const r = await answer(port, `/?${sinceQuery(list(1025))}`);
  assert.equal(r.status, 400, r.head);
  assert.equal(r.body.trim(), 'sy.since: more than 1024 positions');
  assert.equal(asked, 0);
  const ok = await open(port, `/?${sinceQuery(list(1024))}`, { 'Sec-WebSocket-Protocol': 'symphony.v1' });
  assert.equal(statusOf(ok.head), 101, ok.head);
  ok.sock.destroy();
  assert.equal(await healthy(server, url), 'still here');
});

test('valid positions the parser must not trip on: + as a space, a ":" in the topic, upper-case hex, other parameters', async () => {
  const seen = [];
  const { port } = await startServer({ history: true, onUpgrade: (req) => { seen.push(req.since); return true; } });
  const query = `x=${enc('sy.since=junk')}&sy.since=${EPOCH.toUpperCase()}%3A7%3Aa+b&sy.since=${enc(`${EPOCH}:0:c:d:é`)}&sy.sincex=1&sy.since2=2`;
  const st = await open(port, `/?${query}`, { 'Sec-WebSocket-Protocol': 'symphony.v1' });
  assert.equal(statusOf(st.head), 101, st.head);
  st.sock.destroy();
  assert.deepEqual(seen, [[{ topic: 'a b', epoch: EPOCH, offset: 7 }, { topic: 'c:d:é', epoch: EPOCH, offset: 0 }]]);
});

test('a huge but valid offset (2^64-1): recovered false, future, at the accept and through subscribe with req.since', async () => {
  const sinceOf = new Map();
  const { server, url } = await startServer({
    history: { size: 10, ttl: 0 },
    onUpgrade: (req) => ({ topics: ['a'], data: req.since }),
  });
  const events = [];
  server.on('recovery', (id, topic, r) => events.push([topic, r]));
  server.on('open', (id, info) => {
    sinceOf.set(id, info.data);
    // The application passes the client's position on, as docs/history.md says.
    const b = info.data.find((s) => s.topic === 'b');
    server.subscribe(id, 'b', { since: b });
  });
  server.publish('a', 'one');
  server.publish('b', 'one');
  const ea = server.position('a').epoch, eb = server.position('b').epoch;
  const c = await connectV1(url, { since: [{ epoch: ea, offset: U64_MAX, topic: 'a' }, { epoch: eb, offset: U64_MAX, topic: 'b' }] });
  await c.until((x) => x.notices('subscribed').length === 2);
  const [na, nb] = ['a', 'b'].map((t) => c.notices('subscribed').find((n) => n.topic === t));
  assert.deepEqual(na, { type: 'subscribed', topic: 'a', id: na.id, epoch: ea, offset: '1', since: U64_MAX, recovered: false, reason: 'future' });
  assert.equal(nb.recovered, false);
  assert.equal(nb.reason, 'future');
  await waitFor(() => events.length === 2, 5000, 'the recovery events');
  assert.deepEqual(events, [['a', { recovered: false, reason: 'future' }], ['b', { recovered: false, reason: 'future' }]]);
  assert.equal(server.stats().recoveryFailedFuture, 2);
  c.ws.close();
});

test('1,024 valid positions in one URL, subscribed at the accept: the connection works, and the memory comes back after', { timeout: 30000 }, async () => {
  const held = () => { const a = allocator.stats(); return a.allocated - a.cached; };
  const N = 1024;
  const topics = Array.from({ length: N }, (_, i) => `topic-${i}-${'x'.repeat(20)}`);
  const { server, url } = await startServer({ threads: 1, history: { size: 10, ttl: 1 }, maxHeaderSize: 1 << 17,
    onUpgrade: (req) => ({ topics: req.since.map((s) => s.topic) }) });
  const round = async () => {
    const c = await connectV1(url, { since: topics.map((topic, i) => ({ epoch: EPOCH, offset: i, topic })) });
    await c.until((x) => x.notices('subscribed').length === N, 10000, 'every notice');
    const ns = c.notices('subscribed');
    assert.ok(ns.every((n) => n.recovered === false && n.reason === 'epoch'), 'made now: another epoch');
    server.publish(topics[N - 1], 'last');
    await c.until((x) => x.messages(topics[N - 1]).length === 1);
    c.ws.close();
    await c.closed;
    // Unsubscribed at the close; the one message kept expires (ttl 1 s) and
    // its topic goes with the sweep.
    await waitFor(() => server.stats().connections === 0 && server.stats().topics === 0, 10000, 'the topics to be freed');
  };
  await round(); // warm-up: tables reach their size
  const before = held();
  await round();
  await round();
  // What may differ: blocks in flight (a batch, a timer's frame).
  await waitFor(() => held() - before < 64 * 1024, 10000, 'held memory to come back');
  console.log(`# held before ${before}, after ${held()}`);
});
