'use strict';
// private- and private-encrypted- channels: the auth string
// key:hex(HMAC-SHA256(secret, socket_id:channel)) as the SDK signs it,
// refused when missing, forged, or replayed from another socket_id; the
// encrypted channel's events relayed as the SDK encrypted them (the server
// never reads them) and decrypted by pusher-js with the shared secret.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { startTarget } = require('../helpers/pusher-target');
const { sdk, connect, subscribe, events, raw, authFor, rawSubscribe } = require('../helpers/pusher-clients');

test('private channel: pusher-js authorized by the SDK subscribes and gets the events', async (t) => {
  const target = await startTarget({ t });
  const client = await connect(target, { t });
  const { channel } = await subscribe(client, 'private-orders');
  const got = events(channel, 'created');
  await sdk(target).trigger('private-orders', 'created', { id: 42 });
  const ev = await got.until(() => true, 5000, 'the event on the private channel');
  assert.deepEqual(ev.data, { id: 42 });
});

/** Subscribes raw client r to channel with auth; resolves the answer frame. */
async function trySubscribe(r, channel, auth) {
  const data = { channel };
  if (auth !== undefined) data.auth = auth;
  r.send({ event: 'pusher:subscribe', data });
  return r.nextNew((f) => f.channel === channel && /subscription_succeeded|subscription_error/.test(f.event), 5000, `the answer to the subscription of ${channel}`);
}

/** The refusal of a subscription: on the channel (pusher:subscription_error, which pusher-js
 * emits on the channel and Laravel Echo's .error() hears) as an AuthError with an HTTP-like
 * status as pusher-js' own authorizer reports; the connection stays open and usable. */
async function assertRefused(r, answer, channel) {
  assert.equal(answer.event, 'pusher:subscription_error', JSON.stringify(answer));
  assert.equal(answer.channel, channel);
  assert.equal(answer.data.type, 'AuthError');
  assert.equal(answer.data.status, 401);
  assert.equal(typeof answer.data.error, 'string');
  assert.ok(answer.data.error.length > 0);
  r.send({ event: 'pusher:ping', data: {} });
  await r.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong after the refusal');
}

test('private channel refused: no auth, a forged signature, another secret, another socket_id (replay), another channel', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t, label: 'private refused' });
  const other = await raw(target, { t });
  const channel = 'private-vault';

  await assertRefused(r, await trySubscribe(r, channel, undefined), channel);
  await assertRefused(r, await trySubscribe(r, channel, `${target.key}:${'0'.repeat(64)}`), channel);
  const wrongSecret = `${target.key}:${crypto.createHmac('sha256', 'not-the-secret').update(`${r.socketId}:${channel}`).digest('hex')}`;
  await assertRefused(r, await trySubscribe(r, channel, wrongSecret), channel);
  // Replayed: a valid auth made for another connection's socket_id.
  const replayed = authFor(target, other.socketId, channel).auth;
  await assertRefused(r, await trySubscribe(r, channel, replayed), channel);
  // Signed for another channel.
  await assertRefused(r, await trySubscribe(r, channel, authFor(target, r.socketId, 'private-other').auth), channel);
  // Another app's key before the colon, with this app's valid signature.
  const good = authFor(target, r.socketId, channel).auth;
  await assertRefused(r, await trySubscribe(r, channel, `other-key:${good.split(':')[1]}`), channel);

  // A refused connection gets nothing published on that channel; the right auth still works.
  const ok = await trySubscribe(r, channel, good);
  assert.equal(ok.event, 'pusher_internal:subscription_succeeded');
  // The replayed auth still works for its own socket.
  assert.equal((await trySubscribe(other, channel, replayed)).event, 'pusher_internal:subscription_succeeded');
});

test('private channel refused through pusher-js: the channel emits pusher:subscription_error', async (t) => {
  const target = await startTarget({ t });
  // The client's auth endpoint signs with the wrong secret (a misconfigured app).
  const signer = sdk(target, { app: { ...target.app, secret: 'wrong-secret' } });
  const client = await connect(target, { t, signer });
  await assert.rejects(subscribe(client, 'private-x'), (err) => {
    assert.equal(err.data.type, 'AuthError');
    assert.equal(err.data.status, 401);
    return true;
  });
  assert.equal(client.connection.state, 'connected');
});

test('private-encrypted-: the SDK encrypts, the server relays without reading, pusher-js decrypts', async (t) => {
  const masterKey = crypto.randomBytes(32).toString('base64');
  const target = await startTarget({ t });
  const enc = sdk(target, { encryptionMasterKeyBase64: masterKey });
  const client = await connect(target, { t, signer: enc });
  const { channel } = await subscribe(client, 'private-encrypted-secrets');
  const got = events(channel, 'msg');

  // A raw subscriber sees what went over the wire: nonce and ciphertext only.
  const r = await raw(target, { t, label: 'encrypted' });
  const answer = await rawSubscribe(r, target, 'private-encrypted-secrets', undefined, { signer: enc });
  assert.equal(answer.event, 'pusher_internal:subscription_succeeded');

  await enc.trigger('private-encrypted-secrets', 'msg', { text: 'top secret' });
  const ev = await got.until(() => true, 5000, 'the decrypted event');
  assert.deepEqual(ev.data, { text: 'top secret' });
  const wire = await r.next((f) => f.event === 'msg', 5000, 'the encrypted event');
  const payload = JSON.parse(wire.data);
  assert.deepEqual(Object.keys(payload).sort(), ['ciphertext', 'nonce']);
  assert.ok(!wire.data.includes('top secret'));
});

test('private-encrypted-: a subscription without a valid auth is refused like a private one', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t });
  await assertRefused(r, await trySubscribe(r, 'private-encrypted-x', `${target.key}:${'f'.repeat(64)}`), 'private-encrypted-x');
});
