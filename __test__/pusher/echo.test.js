'use strict';
// Laravel Echo 2 over pusher-js 8, as a Laravel app's front end uses it:
// channel().listen(), private().listen(), join() with here/joining/leaving,
// whisper()/listenForWhisper() (client events), .error() on a refused
// private channel, and Echo.socketId() for the SDK's socket_id exclusion
// (Laravel's broadcast()->toOthers()).
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget } = require('../helpers/pusher-target');
const { sdk, connect, withTimeout, Inbox } = require('../helpers/pusher-clients');
const { defer } = require('../helpers/teardown');

let EchoClass = null;
async function Echo() {
  if (!EchoClass) EchoClass = (await import('laravel-echo')).default;
  return EchoClass;
}

/** An Echo over a connected pusher-js client (connect() options). */
async function echo(target, t, opts = {}) {
  const client = await connect(target, { t, ...opts });
  const E = await Echo();
  const e = new E({ broadcaster: 'pusher', key: target.key, client });
  defer(t, () => e.disconnect()); // before the target stops (helpers/teardown.js)
  return e;
}

/** Resolves once an Echo channel has subscribed (Echo's subscribed() callback). */
function subscribed(channel, what) {
  return withTimeout(new Promise((resolve, reject) => {
    if (channel.subscription.subscribed) resolve();
    channel.subscribed(resolve);
    channel.error((err) => reject(new Error(`${what}: ${JSON.stringify(err)}`)));
  }), 5000, what);
}

test('Echo: channel().listen() and private().listen() get what the SDK triggers (Laravel\'s event names)', async (t) => {
  const target = await startTarget({ t });
  const e = await echo(target, t);
  const got = new Inbox('echo events');
  const pub = e.channel('orders').listen('OrderShipped', (d) => got.push(['public', d]));
  const priv = e.private('orders.1').listen('.status', (d) => got.push(['private', d]));
  await subscribed(pub, 'orders');
  await subscribed(priv, 'private-orders.1');
  const api = sdk(target);
  // Echo's default namespace: App\Events\OrderShipped; a leading dot skips it.
  await api.trigger('orders', 'App\\Events\\OrderShipped', { id: 1 });
  await api.trigger('private-orders.1', 'status', { state: 'shipped' });
  await got.count(2, undefined, 5000, 'both events');
  assert.deepEqual(got.items.sort(), [['private', { state: 'shipped' }], ['public', { id: 1 }]].sort());
});

test('Echo: join() here/joining/leaving', async (t) => {
  const target = await startTarget({ t });
  const member = (id) => () => ({ user_id: id, user_info: { name: id.toUpperCase() } });
  const a = await echo(target, t, { member: member('a') });
  const here = new Inbox('here');
  const joining = new Inbox('joining');
  const leaving = new Inbox('leaving');
  a.join('room.1').here((users) => here.push(users)).joining((u) => joining.push(u)).leaving((u) => leaving.push(u));
  assert.deepEqual(await here.until(() => true, 5000, 'here'), [{ name: 'A' }]);

  const b = await echo(target, t, { member: member('b') });
  const hereB = new Inbox('here at b');
  b.join('room.1').here((users) => hereB.push(users));
  const users = await hereB.until(() => true, 5000, 'here at b');
  assert.deepEqual(users.map((u) => u.name).sort(), ['A', 'B']);
  assert.deepEqual(await joining.until(() => true, 5000, 'joining'), { name: 'B' });

  b.leave('room.1');
  assert.deepEqual(await leaving.until(() => true, 5000, 'leaving'), { name: 'B' });
});

test('Echo: whisper() reaches the others on the channel (listenForWhisper), not the sender', async (t) => {
  const target = await startTarget({ t });
  const a = await echo(target, t, { member: () => ({ user_id: 'wa', user_info: {} }) });
  const b = await echo(target, t, { member: () => ({ user_id: 'wb', user_info: {} }) });
  const atA = new Inbox('whispers at a');
  const atB = new Inbox('whispers at b');
  const ca = a.private('chat.9').listenForWhisper('typing', (d) => atA.push(d));
  const cb = b.private('chat.9').listenForWhisper('typing', (d) => atB.push(d));
  await subscribed(ca, 'a on private-chat.9');
  await subscribed(cb, 'b on private-chat.9');
  ca.whisper('typing', { who: 'a' });
  assert.deepEqual(await atB.until(() => true, 5000, 'a\'s whisper at b'), { who: 'a' });
  cb.whisper('typing', { who: 'b' });
  await atA.until(() => true, 5000, 'b\'s whisper at a');
  assert.deepEqual(atA.items, [{ who: 'b' }]);

  // On a presence channel too.
  const pa = a.join('team.2');
  const pb = b.join('team.2');
  const heard = new Inbox('presence whisper');
  pb.listenForWhisper('wave', (d) => heard.push(d));
  await subscribed(pa, 'a on presence-team.2');
  await subscribed(pb, 'b on presence-team.2');
  pa.whisper('wave', { hi: true });
  assert.deepEqual(await heard.until(() => true, 5000, 'the wave'), { hi: true });
});

test('Echo: .error() hears a refused private channel; socketId() excludes the sender (toOthers)', async (t) => {
  const target = await startTarget({ t });
  const signer = sdk(target, { app: { ...target.app, secret: 'wrong' } });
  const bad = await echo(target, t, { signer });
  const errors = new Inbox('echo errors');
  bad.private('secret.1').error((err) => errors.push(err));
  const err = await errors.until(() => true, 5000, 'Echo\'s error callback');
  assert.equal(err.type, 'AuthError');

  const a = await echo(target, t);
  const b = await echo(target, t);
  const atA = new Inbox('a');
  const atB = new Inbox('b');
  const ca = a.channel('feed').listen('.post', (d) => atA.push(d));
  const cb = b.channel('feed').listen('.post', (d) => atB.push(d));
  await subscribed(ca, 'a on feed');
  await subscribed(cb, 'b on feed');
  const api = sdk(target);
  await api.trigger('feed', 'post', { n: 1 }, { socket_id: a.socketId() });
  await api.trigger('feed', 'post', { n: 2 });
  await atB.count(2, undefined, 5000, 'both posts at b');
  await atA.until((d) => d.n === 2, 5000, 'the second post at a');
  assert.deepEqual(atA.items, [{ n: 2 }]);
});
