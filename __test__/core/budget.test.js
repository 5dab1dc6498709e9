'use strict';
// The work budget of a connection (maxWorkPerSecond, workBurst;
// docs/limits.md) and the IO thread's cache of refused tokens (issue 43):
// each ask's entry and each token signature checked is charged, per entry
// and not per frame; over the budget entries are refused 'rate-limited',
// and a connection that asks on is closed (1008); a bystander on the same
// IO thread gets every message meanwhile; the same bad token is checked
// once; a token without kid tried with two keys costs two checks; a client
// library's resubscribe of 1,024 topics with one token is granted whole.
// Behaviour only: every wait is for an event, nothing asserts a time.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const WebSocket = require('ws');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { connectV2: connectV2Base } = require('../helpers/v1');
const { bystander } = require('../helpers/bystander');
const { openStream, streamName, post } = require('../helpers/sse');
const { Server } = require('../..');
const { SymphonyClient } = require('../../client/symphony-client.cjs');

test.afterEach(closeAll);

const b64 = (o) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);
const grant = (topics) => ({ sub: 'user-1', exp: now() + 600, topics: { subscribe: topics, publish: topics } });

function sign(claims, alg, key) {
  const input = `${b64({ alg, typ: 'JWT' })}.${b64(claims)}`;
  const data = Buffer.from(input);
  const sig = alg === 'EdDSA' ? crypto.sign(null, data, key) : crypto.sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${sig.toString('base64url')}`;
}

/** Bad tokens that cost a whole check each: a real header and claims, a
 * random signature (an Ed25519 S below the group order), the i-th one
 * different from every other. */
function badToken(alg, i) {
  const raw = crypto.randomBytes(64);
  raw.writeUInt32BE(i, 0);
  if (alg === 'EdDSA') raw[63] &= 0x0f;
  return `${b64({ alg, typ: 'JWT' })}.${b64(grant(['*']))}.${raw.toString('base64url')}`;
}

const ed = crypto.generateKeyPairSync('ed25519');
const edKeys = () => ({ keys: [{ alg: 'EdDSA', publicKey: ed.publicKey }] });

async function connectV2(url) {
  const c = await connectV2Base(url, { protocols: ['symphony.v2'] });
  c.closeInfo = new Promise((r) => c.ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
  /** Every answer to rids [from, to]: a notice (refused, subscribed,
   * error), or a request's reply (r<rid>\n...) as { type: 'reply', rid }. */
  c.answers = (from, to) => c.frames.map((f) => {
    if (f.kind === 'c') return f.notice;
    const m = f.kind === '?' && /^r(\d+)\n/.exec(f.raw.toString('latin1', 0, 16));
    return m ? { type: 'reply', rid: Number(m[1]) } : null;
  }).filter((a) => a !== null && a.rid >= from && a.rid <= to);
  c.isClosed = false;
  c.ws.once('close', () => { c.isClosed = true; });
  return c;
}

/** One subscribe frame of entries rid from..from+n-1, token(i) each. */
function subFrame(from, n, token, resub = false) {
  const subs = [];
  for (let i = 0; i < n; i++) subs.push({ rid: from + i, topic: `room.${i}`, token: token(from + i) });
  return `s${JSON.stringify({ subs, resub })}`;
}

const codes = (answers) => answers.reduce((m, a) => { const k = a.code ?? a.type; m[k] = (m[k] || 0) + 1; return m; }, {});

test('a flood of bad EdDSA tokens: checked within the budget, the rest refused rate-limited, then the 1008 close; the bystander gets every message', async () => {
  const { server, url } = await startServer({ threads: 1, tokens: edKeys() });
  const by = await bystander(server, url, 'news');
  const got = [];
  by.ws.on('message', (d) => got.push(d.toString()));
  let sent = 0;
  const publish = () => server.publish('news', `m${sent++}`);
  const c = await connectV2(url);
  // One frame of 1,024 entries, each its own bad token: the budget (a
  // second's worth, 2,048 units; an entry 1, an EdDSA check 8) checks a
  // few hundred, and refuses the rest before checking them.
  c.ws.send(subFrame(1, 1024, (i) => badToken('EdDSA', i)));
  publish();
  await c.until(() => c.answers(1, 1024).length === 1024, 20000, 'every entry answered');
  const first = codes(c.answers(1, 1024));
  assert.ok(first['token-signature'] > 0 && first['rate-limited'] > 0, JSON.stringify(first));
  assert.equal(first['token-signature'] + first['rate-limited'], 1024, JSON.stringify(first));
  const after1 = server.stats();
  assert.equal(after1.tokenChecks, first['token-signature'], 'each checked token was checked once');
  assert.ok(after1.tokenChecks <= 2048 / 9 + 1, `checks bounded by the burst: ${after1.tokenChecks}`);
  assert.equal(after1.workRefused, first['rate-limited']);
  // Asking on: refused, then closed (1008) once the refusals cost another burst.
  let rid = 1025;
  for (let frames = 0; !c.isClosed; frames++) {
    assert.ok(frames < 10, 'closed within a few frames of asking on');
    const from = rid;
    rid += 1024;
    c.ws.send(subFrame(from, 1024, (i) => badToken('EdDSA', i)));
    publish();
    await waitFor(() => c.isClosed || c.answers(from, from + 1023).length === 1024, 20000, 'answers or the close');
    // Refused (a slow machine may have refilled the bucket a little: a few checked).
    for (const k of Object.keys(codes(c.answers(from, from + 1023)))) assert.ok(['rate-limited', 'token-signature'].includes(k), k);
  }
  const { code, reason } = await c.closeInfo;
  assert.equal(code, 1008);
  assert.match(reason, /work budget/);
  const st = server.stats();
  assert.equal(st.workCloses, 1);
  assert.ok(st.workRefused > after1.workRefused);
  // The bystander on the same IO thread got every publish, in order.
  publish();
  await waitFor(() => got.length === sent, 10000, 'every publish at the bystander');
  assert.deepEqual(got, Array.from({ length: sent }, (_, i) => `m${i}`));
  by.ws.close();
});

test('the same bad token is checked once by an IO thread (its cache), until the keys change', async () => {
  const { server, url } = await startServer({ threads: 1, tokens: edKeys() });
  const bad = badToken('EdDSA', 7);
  const a = await connectV2(url);
  a.ws.send(subFrame(1, 1024, () => bad));
  await a.until(() => a.answers(1, 1024).length === 1024, 20000, 'every entry answered');
  assert.deepEqual(codes(a.answers(1, 1024)), { 'token-signature': 1024 }, 'within the budget: 1,024 entries and one check');
  assert.equal(server.stats().tokenChecks, 1);
  // Another connection of the thread, the same bytes: no check.
  const b = await connectV2(url);
  b.ws.send(subFrame(1, 3, () => bad));
  await b.until(() => b.answers(1, 3).length === 3, 10000, 'answers');
  assert.deepEqual(codes(b.answers(1, 3)), { 'token-signature': 3 });
  assert.equal(server.stats().tokenChecks, 1);
  // New keys: the refusals made with the old ones are forgotten.
  server.setTokenKeys(edKeys().keys);
  b.ws.send(subFrame(4, 1, () => bad));
  await b.until(() => b.answers(4, 4).length === 1, 10000, 'answer');
  assert.equal(b.answers(4, 4)[0].code, 'token-signature');
  assert.equal(server.stats().tokenChecks, 2);
  a.ws.close();
  b.ws.close();
});

test('ES256 without kid against two keys without kid: each bad token costs two checks, and the budget charges both', async () => {
  const k1 = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const k2 = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { server, url } = await startServer({
    threads: 1,
    tokens: { keys: [{ alg: 'ES256', publicKey: k1.publicKey }, { alg: 'ES256', publicKey: k2.publicKey }] },
  });
  const c = await connectV2(url);
  // A good token of the second key: both tried, granted.
  c.ws.send(subFrame(1, 1, () => sign(grant(['room.*']), 'ES256', k2.privateKey)));
  await c.until(() => c.answers(1, 1).length === 1, 10000, 'answer');
  assert.equal(c.answers(1, 1)[0].type, 'subscribed');
  assert.equal(server.stats().tokenChecks, 2);
  // Bad ones: two checks each, charged two checks' work each.
  c.ws.send(subFrame(2, 1024, (i) => badToken('ES256', i)));
  await c.until(() => c.answers(2, 1025).length === 1024, 20000, 'every entry answered');
  const got = codes(c.answers(2, 1025));
  const checks = server.stats().tokenChecks - 2;
  assert.equal(checks, 2 * got['token-signature'], JSON.stringify(got));
  assert.ok(got['rate-limited'] > 0, JSON.stringify(got));
  // 1 + 2 x 6 units a token: at most a burst's worth of them.
  assert.ok(got['token-signature'] <= Math.ceil(2048 / 13) + 1, JSON.stringify(got));
  c.ws.close();
});

test('a client library\'s resubscribe of 1,024 topics with one token after a reconnect is granted whole under the default budget', async () => {
  const { server, url } = await startServer({ threads: 1, tokens: edKeys() });
  const live = new Set();
  server.on('open', (id) => live.add(id));
  server.on('close', (id) => live.delete(id));
  const token = sign(grant(['room.*']), 'EdDSA', ed.privateKey);
  const client = new SymphonyClient(url, { WebSocket, backoff: { min: 1, max: 10 }, getToken: () => token });
  const refused = [];
  try {
    const subs = [];
    for (let i = 0; i < 1024; i++) {
      const sub = client.subscribe(`room.${i}`);
      sub.on('refused', (err) => refused.push(err.code));
      subs.push(sub);
    }
    await waitFor(() => subs.every((s) => s.state === 'subscribed'), 30000, 'every topic subscribed');
    let opens = 0;
    client.on('state', (s) => { if (s === 'open') opens++; });
    server.terminate([...live][0]);
    await waitFor(() => opens > 0 && subs.every((s) => s.state === 'subscribed'), 30000, 'every topic subscribed again');
    // Every subscriber counted by the server, none refused along the way.
    await waitFor(() => server.stats().tokenSubscribes === 2048, 10000, 'both rounds granted');
    assert.deepEqual(refused, []);
    const st = server.stats();
    assert.equal(st.workRefused, 0);
    assert.equal(st.workCloses, 0);
    // One check per connection for the 1,024 entries of the same token.
    assert.equal(st.tokenChecks, 2);
  } finally {
    client.close();
  }
});

test('hook calls are counted per entry too: requests past the budget are refused rate-limited, then the connection is closed', async () => {
  const { server, url } = await startServer({ threads: 1, maxWorkPerSecond: 100, onRequest: () => 'ok' });
  const c = await connectV2(url);
  // n requests in one write (corked): one read, one turn of the thread's clock.
  const ask = (from, n) => {
    c.ws._socket.cork();
    for (let i = 0; i < n; i++) c.ws.send(`r{"rid":${from + i}}\nq`);
    c.ws._socket.uncork();
  };
  ask(1, 150);
  await c.until(() => c.answers(1, 150).length === 150, 10000, 'every request answered');
  const first = codes(c.answers(1, 150));
  assert.ok(first['rate-limited'] > 0 && first['rate-limited'] < 150, JSON.stringify(first));
  let from = 151;
  for (let rounds = 0; !c.isClosed; rounds++) {
    assert.ok(rounds < 10, 'closed within a few rounds');
    ask(from, 150);
    const f = from;
    await waitFor(() => c.isClosed || c.answers(f, f + 149).length === 150, 10000, 'answers or the close');
    from += 150;
  }
  assert.equal((await c.closeInfo).code, 1008);
  assert.equal(server.stats().workCloses, 1);
});

test('messages POSTed to a symphony.v2 event stream are charged (answered 202 already: never refused); posting on, the stream is closed 1008', async () => {
  const { server, port } = await startServer({ threads: 1, maxWorkPerSecond: 5, onUpgrade: () => ({ topics: ['t'] }) });
  const ids = [];
  server.on('open', (id) => ids.push(id));
  const s = await openStream(port, { path: '/?sy.protocol=symphony.v2' });
  const name = await streamName(s);
  await waitFor(() => ids.length === 1, 5000, 'open');
  const got = [];
  server.on('message', (cid, data) => got.push(String(data)));
  let isClosed = false;
  const closed = new Promise((resolve) => server.on('close', (cid, code, reason) => { if (cid === ids[0]) { isClosed = true; resolve([code, String(reason)]); } }));
  const answers = [];
  for (let i = 0; i < 1000 && !isClosed; i++) answers.push((await post(port, name, `d\nm${i}`)).status);
  const [code, reason] = await closed;
  assert.equal(code, 1008);
  assert.match(reason, /work budget/);
  // Each answered 202 once its stream's thread saw it; those that met the
  // close or came after it (before its event reached JS) 410: none refused 429.
  const gone = answers.indexOf(410) < 0 ? answers.length : answers.indexOf(410);
  assert.ok(answers.slice(0, gone).every((a) => a === 202) && answers.slice(gone).every((a) => a === 410), JSON.stringify(answers.slice(-5)));
  assert.ok(got.length >= 5 && got.length < answers.length, `${got.length} delivered of ${answers.length}`);
  assert.deepEqual(got, got.map((_, i) => `m${i}`), 'in order, none skipped');
  assert.equal(server.stats().workCloses, 1);
  assert.equal(server.stats().workRefused, 0, 'none refused: each was answered already');
});

test('maxWorkPerSecond 0: no budget; the options are checked', async () => {
  const { server, url } = await startServer({ threads: 1, maxWorkPerSecond: 0, tokens: edKeys() });
  const c = await connectV2(url);
  c.ws.send(subFrame(1, 200, (i) => badToken('EdDSA', i)));
  await c.until(() => c.answers(1, 200).length === 200, 20000, 'every entry answered');
  assert.deepEqual(codes(c.answers(1, 200)), { 'token-signature': 200 });
  assert.equal(server.stats().tokenChecks, 200);
  assert.equal(server.options.maxWorkPerSecond, 0);
  c.ws.close();
  const d = new Server({ port: 0 });
  assert.equal(d.options.maxWorkPerSecond, 2048);
  assert.equal(d.options.workBurst, null);
  d.close();
  assert.throws(() => new Server({ maxWorkPerSecond: -1 }), { name: 'RangeError', message: /options\.maxWorkPerSecond/ });
  assert.throws(() => new Server({ maxWorkPerSecond: '10' }), { name: 'TypeError', message: /options\.maxWorkPerSecond/ });
  assert.throws(() => new Server({ maxWorkPerSecond: 10, workBurst: 601 }), { name: 'RangeError', message: /workBurst.*60 seconds/ });
  assert.throws(() => new Server({ workBurst: 0 }), { name: 'RangeError', message: /options\.workBurst/ });
  const e = new Server({ port: 0, maxWorkPerSecond: 10, workBurst: 600 });
  assert.equal(e.options.workBurst, 600);
  e.close();
});
