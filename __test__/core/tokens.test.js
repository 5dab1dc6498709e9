'use strict';
// Tokens verified on the IO threads (docs/tokens.md): a client's subscribe
// carrying a JWT that grants its topic goes live without onSubscribe (the
// hook is never called), with exact recovery like any subscription; every
// way a token can be wrong is refused with its code; keys rotate without a
// restart; the client library's getToken renews an expired one. Tokens are
// signed here with node:crypto, for each algorithm (HS256, ES256, RS256,
// EdDSA).
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const WebSocket = require('ws');
const { startServer, closeAll, healthy } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { connectV2 } = require('../helpers/v1');
const { Server } = require('../..');
const { SymphonyClient } = require('../../client/symphony-client.cjs');

test.afterEach(closeAll);

const b64 = (o) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

/** A compact JWS of claims signed with key for alg (header: alg, typ, kid when given). */
function sign(claims, { alg = 'HS256', key, kid, header = {} }) {
  const input = `${b64({ alg, typ: 'JWT', ...(kid ? { kid } : {}), ...header })}.${b64(claims)}`;
  const data = Buffer.from(input);
  let sig;
  if (alg === 'HS256') sig = crypto.createHmac('sha256', key).update(data).digest();
  else if (alg === 'RS256') sig = crypto.sign('sha256', data, key);
  else if (alg === 'ES256') sig = crypto.sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
  else if (alg === 'EdDSA') sig = crypto.sign(null, data, key);
  else sig = Buffer.alloc(0);
  return `${input}.${sig.toString('base64url')}`;
}

const SECRET = 'a secret of the application, 32 bytes at least';
const grant = (topics, extra = {}) => ({ sub: 'user-1', exp: now() + 600, topics: { subscribe: topics }, ...extra });

test('HS256: a token that grants the topic subscribes without the hook; prefixes and exact names', async () => {
  let hook = 0;
  const { server, url } = await startServer({
    tokens: { keys: [{ alg: 'HS256', secret: SECRET }] },
    onSubscribe: () => { hook++; return true; },
  });
  const c = await connectV2(url);
  const token = sign(grant(['room.*', 'lobby']), { key: SECRET });
  c.sub({ rid: 1, topic: 'room.7', token }, { rid: 2, topic: 'lobby', token }, { rid: 3, topic: 'lobby.x', token },
    { rid: 4, topic: 'other', token });
  await c.waitAnswer('subscribed', 1);
  await c.waitAnswer('subscribed', 2);
  await c.waitAnswer('refused', 3);
  await c.waitAnswer('refused', 4);
  assert.equal(c.answer('refused', 3).code, 'forbidden');
  assert.equal(c.answer('refused', 4).code, 'forbidden');
  assert.equal(hook, 0, 'a token decides: the hook is not asked');
  assert.equal(server.subscribers('room.7'), 1);
  const st = server.stats();
  assert.equal(st.tokenSubscribes, 2);
  assert.equal(st.tokenRefused, 2);
  assert.equal(st.askSubscribes, 0);
  server.publish('room.7', 'hello');
  await c.until(() => c.messages('room.7').length === 1, 10000, 'a message');
  // Without a token, the hook decides as before.
  c.sub({ rid: 5, topic: 'free' });
  await c.waitAnswer('subscribed', 5);
  assert.equal(hook, 1);
  c.ws.close();
});

test('every algorithm: ES256, RS256 and EdDSA (PEM and KeyObject, JWK), selected by kid', async () => {
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ed = crypto.generateKeyPairSync('ed25519');
  const { url } = await startServer({
    tokens: {
      keys: [
        { kid: 'ec', alg: 'ES256', publicKey: ec.publicKey.export({ type: 'spki', format: 'pem' }) },
        { kid: 'rsa', alg: 'RS256', publicKey: rsa.publicKey },
        { jwk: { ...ed.publicKey.export({ format: 'jwk' }), kid: 'ed', alg: 'EdDSA' } },
        { kid: 'hs', alg: 'HS256', secret: Buffer.from(SECRET) },
      ],
    },
  });
  const c = await connectV2(url);
  const tokens = {
    ec: sign(grant(['t.*']), { alg: 'ES256', key: ec.privateKey, kid: 'ec' }),
    rsa: sign(grant(['t.*']), { alg: 'RS256', key: rsa.privateKey, kid: 'rsa' }),
    ed: sign(grant(['t.*']), { alg: 'EdDSA', key: ed.privateKey, kid: 'ed' }),
    hs: sign(grant(['t.*']), { key: SECRET, kid: 'hs' }),
    // Signed by the EC key but naming the RSA key's kid.
    wrongKid: sign(grant(['t.*']), { alg: 'ES256', key: ec.privateKey, kid: 'rsa' }),
    unknownKid: sign(grant(['t.*']), { key: SECRET, kid: 'nope' }),
  };
  c.sub(...Object.entries(tokens).map(([name, token], i) => ({ rid: i + 1, topic: `t.${name}`, token })));
  for (let rid = 1; rid <= 4; rid++) await c.waitAnswer('subscribed', rid);
  await c.waitAnswer('refused', 5);
  await c.waitAnswer('refused', 6);
  assert.match(c.answer('refused', 5).code, /^token-(alg|signature)$/);
  assert.equal(c.answer('refused', 6).code, 'token-key');
  c.ws.close();
});

test('what a token can get wrong, each refused with its code; bystanders unaffected', async () => {
  const { server, url } = await startServer({
    tokens: { keys: [{ alg: 'HS256', secret: SECRET }], audience: 'feeds', issuer: 'auth.example' },
  });
  const c = await connectV2(url);
  const ok = { aud: 'feeds', iss: 'auth.example' };
  const cases = [
    ['expired', sign(grant(['t'], { ...ok, exp: now() - 60 }), { key: SECRET }), 'token-expired'],
    ['nbf', sign(grant(['t'], { ...ok, nbf: now() + 600 }), { key: SECRET }), 'token-not-yet-valid'],
    ['aud', sign(grant(['t'], { ...ok, aud: 'other' }), { key: SECRET }), 'token-audience'],
    ['iss', sign(grant(['t'], { ...ok, iss: 'evil' }), { key: SECRET }), 'token-issuer'],
    ['wrong key', sign(grant(['t'], ok), { key: 'another secret, of 32 bytes and more' }), 'token-signature'],
    ['alg none', sign(grant(['t'], ok), { alg: 'none' }), 'token-alg'],
    ['garbage', 'not.a.token', 'token-malformed'],
    ['claims', sign({ ...grant([], ok), topics: { subscribe: 'all' } }, { key: SECRET }), 'token-claims'],
    ['no topics', sign({ ...ok, exp: now() + 60 }, { key: SECRET }), 'forbidden'],
  ];
  c.sub(...cases.map(([, token], i) => ({ rid: i + 1, topic: 't', token })));
  await c.until(() => c.notices('refused').length === cases.length, 10000, 'every refusal');
  const got = cases.map((_, i) => c.answer('refused', i + 1).code);
  assert.deepEqual(got, cases.map(([, , code]) => code));
  // Each reason says what its code means (not one sentence for all).
  const reasons = cases.map((_, i) => c.answer('refused', i + 1).reason);
  assert.equal(new Set(reasons).size, cases.length, JSON.stringify(reasons));
  assert.match(reasons[0], /expired/);
  assert.match(reasons[4], /signature/);
  assert.match(reasons[8], /does not grant this topic/);
  // The right one, with aud as an array.
  c.sub({ rid: 99, topic: 't', token: sign(grant(['t'], { aud: ['x', 'feeds'], iss: 'auth.example' }), { key: SECRET }) });
  await c.waitAnswer('subscribed', 99);
  assert.equal(await healthy(server, url), 'still here');
  c.ws.close();
});

test('key rotation without a restart: setTokenKeys; old tokens refused after, new ones granted', async () => {
  const { server, url } = await startServer({ tokens: { keys: [{ kid: 'k1', alg: 'HS256', secret: 'one-secret-one-one-secret-one-one' }] } });
  const c = await connectV2(url);
  const t1 = sign(grant(['t.*']), { key: 'one-secret-one-one-secret-one-one', kid: 'k1' });
  const t2 = sign(grant(['t.*']), { key: 'two-secret-two-two-secret-two-two', kid: 'k2' });
  c.sub({ rid: 1, topic: 't.a', token: t1 }, { rid: 2, topic: 't.b', token: t2 });
  await c.waitAnswer('subscribed', 1);
  await c.waitAnswer('refused', 2);
  // Both keys for the rollover.
  server.setTokenKeys([{ kid: 'k1', alg: 'HS256', secret: 'one-secret-one-one-secret-one-one' }, { kid: 'k2', alg: 'HS256', secret: 'two-secret-two-two-secret-two-two' }]);
  c.sub({ rid: 3, topic: 't.b', token: t2 });
  await c.waitAnswer('subscribed', 3);
  server.setTokenKeys([{ kid: 'k2', alg: 'HS256', secret: 'two-secret-two-two-secret-two-two' }]);
  c.sub({ rid: 4, topic: 't.c', token: t1 }, { rid: 5, topic: 't.d', token: t2 });
  await c.waitAnswer('refused', 4);
  await c.waitAnswer('subscribed', 5);
  assert.equal(c.answer('refused', 4).code, 'token-key');
  // A key that cannot be used throws and keeps the keys in use.
  assert.throws(() => server.setTokenKeys([{ alg: 'ES256', publicKey: 'not a pem' }]), { code: 'ERR_SYMPHONY_TOKENS' });
  c.sub({ rid: 6, topic: 't.e', token: t2 });
  await c.waitAnswer('subscribed', 6);
  c.ws.close();
});

test('a token subscription recovers exactly from its position', async () => {
  const { server, url } = await startServer({ history: { size: 100, ttl: 0 }, tokens: { keys: [{ alg: 'HS256', secret: SECRET }] } });
  const token = sign(grant(['feed']), { key: SECRET });
  const a = await connectV2(url);
  a.sub({ rid: 1, topic: 'feed', token });
  await a.waitAnswer('subscribed', 1);
  for (let i = 1; i <= 3; i++) server.publish('feed', `m${i}`);
  await a.until(() => a.messages('feed').length === 3, 10000, 'three');
  const { epoch } = a.answer('subscribed', 1);
  a.ws.close();
  for (let i = 4; i <= 6; i++) server.publish('feed', `m${i}`);
  const b = await connectV2(url);
  b.sub({ rid: 2, topic: 'feed', token, since: { epoch, offset: '3' } });
  await b.waitAnswer('subscribed', 2);
  assert.equal(b.answer('subscribed', 2).recovered, true);
  await b.until(() => b.messages('feed').length === 3, 10000, 'the replay');
  assert.deepEqual(b.messages('feed').map((f) => f.payload.toString()), ['m4', 'm5', 'm6']);
  b.ws.close();
});

test('the client library: getToken renews a token the server says expired, on every resubscribe too', async () => {
  let issued = 0;
  const { server, url } = await startServer({ tokens: { keys: [{ alg: 'HS256', secret: SECRET }] } });
  const live = new Set();
  server.on('open', (id) => live.add(id));
  server.on('close', (id) => live.delete(id));
  const client = new SymphonyClient(url, {
    WebSocket,
    backoff: { min: 1, max: 10 },
    // The first token is already expired.
    getToken: (topic) => sign(grant([topic], { exp: ++issued === 1 ? now() - 10 : now() + 600 }), { key: SECRET }),
  });
  let opens = 0;
  client.on('state', (s) => { if (s === 'open') opens++; });
  try {
    const sub = client.subscribe('doc.1');
    await waitFor(() => sub.state === 'subscribed', 10000, 'subscribed');
    assert.equal(issued, 2);
    const before = opens;
    server.terminate([...live][0]);
    await waitFor(() => opens > before && sub.state === 'subscribed', 10000, 'resubscribed');
    assert.equal(issued, 3, 'a fresh token on the resubscribe');
  } finally {
    client.close();
  }
});

test('bad tokens options throw', () => {
  assert.throws(() => new Server({ tokens: { keys: [] } }), { code: 'ERR_INVALID_ARG_VALUE', message: /must hold at least one key/ });
  assert.throws(() => new Server({ tokens: { keys: [{ alg: 'HS512', secret: 'x' }] } }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => new Server({ tokens: { keys: [{ alg: 'HS256' }] } }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => new Server({ tokens: { keys: [{ alg: 'ES256', publicKey: 'nope' }] } }), { code: 'ERR_SYMPHONY_TOKENS' });
  assert.throws(() => new Server({ tokens: { keys: [{ jwk: { kty: 'oct' } }] } }), { code: 'ERR_SYMPHONY_TOKENS' });
  assert.throws(() => new Server({ tokens: { keys: [{ alg: 'HS256', secret: SECRET }], leeway: -1 } }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => new Server({ tokens: { keys: [{ alg: 'HS256', secret: SECRET }], what: 1 } }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => new Server({ tokens: { keys: [{ alg: 'HS256', secret: 'short' }] } }), { code: 'ERR_SYMPHONY_TOKENS' });
  const plain = new Server();
  assert.throws(() => plain.setTokenKeys([{ alg: 'HS256', secret: SECRET }]), { code: 'ERR_SYMPHONY_TOKENS' });
  plain.close();
  const s = new Server({ tokens: { keys: [{ kid: 'a', alg: 'HS256', secret: SECRET }] } });
  assert.deepEqual(s.options.tokens.keys, [{ kind: 'secret', kid: 'a', alg: 'HS256' }], 'no secret in options');
  s.close();
});

test('presence: a subscription a token granted is listed, and leaves with its unsubscribe', async () => {
  const { server, url } = await startServer({ presence: true, tokens: { keys: [{ alg: 'HS256', secret: SECRET }] } });
  const joins = [];
  server.on('join', (topic, entry) => joins.push([topic, entry.id]));
  const c = await connectV2(url);
  c.sub({ rid: 1, topic: 'room.1', token: sign(grant(['room.*']), { key: SECRET }) });
  await c.waitAnswer('subscribed', 1);
  await waitFor(() => joins.length === 1, 10000, 'the join');
  const list = await server.presence('room.1');
  assert.equal(list.length, 1);
  assert.equal(list[0].id, joins[0][1]);
  c.ws.send('u{"rid":2,"topic":"room.1"}');
  await c.until(() => c.notices('unsubscribed').length === 1, 10000, 'unsubscribed');
  await waitFor(async () => (await server.presence('room.1')).length === 0, 10000, 'left');
  c.ws.close();
});

test('a publish with a token that grants it is published without onPublish; one that does not is refused', async () => {
  let hook = 0;
  const { server, url } = await startServer({
    history: { size: 10, ttl: 0 },
    tokens: { keys: [{ alg: 'HS256', secret: SECRET }] },
    onPublish: () => { hook++; return true; },
  });
  const reader = await connectV2(url);
  reader.sub({ rid: 1, topic: 'chat.1', token: sign(grant(['chat.*']), { key: SECRET }) });
  await reader.waitAnswer('subscribed', 1);
  const token = sign({ exp: now() + 60, topics: { publish: ['chat.1'] } }, { key: SECRET });
  const w = await connectV2(url);
  w.ws.send(`p${JSON.stringify({ rid: 1, topic: 'chat.1', token })}\nhello`);
  w.ws.send(`p${JSON.stringify({ rid: 2, topic: 'chat.2', token })}\nno`);
  w.ws.send(`p${JSON.stringify({ rid: 3, topic: 'chat.1', token: sign({ exp: now() - 60, topics: { publish: ['chat.1'] } }, { key: SECRET }) })}\nold`);
  await w.waitAnswer('published', 1);
  await w.waitAnswer('error', 2);
  await w.waitAnswer('error', 3);
  assert.equal(w.answer('published', 1).offset, '1');
  assert.equal(w.answer('error', 2).code, 'forbidden');
  assert.equal(w.answer('error', 3).code, 'token-expired');
  assert.equal(hook, 0, 'onPublish not asked');
  await reader.until(() => reader.messages('chat.1').length === 1, 10000, 'the message');
  assert.equal(reader.messages('chat.1')[0].payload.toString(), 'hello');
  // The client library's publish({ token }).
  const client = new SymphonyClient(url, { WebSocket });
  try {
    await waitFor(() => client.state === 'open', 10000, 'open');
    assert.deepEqual(await client.publish('chat.1', 'via the library', { token }), { epoch: server.position('chat.1').epoch, offset: 2 });
  } finally {
    client.close();
  }
  reader.ws.close();
  w.ws.close();
});
