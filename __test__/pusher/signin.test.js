'use strict';
// User authentication: pusher:signin with the SDK's authenticateUser,
// pusher:signin_success, events to a user (sendToUser: #server-to-user-<id>)
// on every connection of that user, terminateUserConnections, a bad signin
// (pusher:error 4009, closed 4009), and the sign-in timeout of an app that
// requires it.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget, DEFAULT_APP } = require('../helpers/pusher-target');
const { sdk, connect, raw, withTimeout, Inbox } = require('../helpers/pusher-clients');

const USER_APP = { ...DEFAULT_APP, enableUserAuthentication: true };

/** A pusher-js client signed in as user; resolves once signed in and subscribed to its user channel. */
async function signedIn(target, t, user) {
  const client = await connect(target, { t, user });
  client.signin();
  await withTimeout(client.user.signinDonePromise, 5000, `signin of ${user.id}`);
  assert.equal(client.user.user_data.id, user.id);
  const ch = client.user.serverToUserChannel;
  if (!ch.subscribed) {
    await withTimeout(new Promise((resolve) => ch.bind('pusher:subscription_succeeded', resolve)), 5000, `the #server-to-user-${user.id} subscription`);
  }
  return client;
}

test('signin: pusher:signin_success with the user_data signed; sendToUser reaches each connection of that user only', async (t) => {
  const target = await startTarget({ t, apps: [USER_APP] });
  const api = sdk(target);
  const tab1 = await signedIn(target, t, { id: 'u-7', user_info: { name: 'Seven' } });
  const tab2 = await signedIn(target, t, { id: 'u-7' });
  const other = await signedIn(target, t, { id: 'u-8' });
  const inboxes = [tab1, tab2, other].map((c, i) => {
    const box = new Inbox(`user events ${i}`);
    c.user.bind('notice', (d) => box.push(d));
    return box;
  });
  await api.sendToUser('u-7', 'notice', { text: 'for seven' });
  await api.sendToUser('u-8', 'notice', { text: 'for eight' });
  assert.deepEqual(await inboxes[0].until(() => true, 5000, 'tab1\'s notice'), { text: 'for seven' });
  assert.deepEqual(await inboxes[1].until(() => true, 5000, 'tab2\'s notice'), { text: 'for seven' });
  assert.deepEqual(await inboxes[2].until(() => true, 5000, 'the other user\'s notice'), { text: 'for eight' });
  assert.equal(inboxes[2].items.length, 1);

  // The frame.
  const r = await raw(target, { t, label: 'signin' });
  const userData = JSON.stringify({ id: 'u-9' });
  const { auth } = api.authenticateUser(r.socketId, { id: 'u-9' });
  r.send({ event: 'pusher:signin', data: { auth, user_data: userData } });
  const ok = await r.next((f) => f.event === 'pusher:signin_success' || f.event === 'pusher:error', 5000, 'the signin answer');
  assert.equal(ok.event, 'pusher:signin_success', JSON.stringify(ok));
  assert.equal(ok.data.user_data, userData);
});

test('terminateUserConnections: every connection of that user is closed (4009, pusher-js does not reconnect); the others stay', async (t) => {
  const target = await startTarget({ t, apps: [USER_APP] });
  const api = sdk(target);
  const tab1 = await signedIn(target, t, { id: 'leaver' });
  const tab2 = await signedIn(target, t, { id: 'leaver' });
  const stayer = await signedIn(target, t, { id: 'stayer' });
  const r = await raw(target, { t, label: 'terminate' });
  const { auth } = api.authenticateUser(r.socketId, { id: 'leaver' });
  r.send({ event: 'pusher:signin', data: { auth, user_data: JSON.stringify({ id: 'leaver' }) } });
  await r.next((f) => f.event === 'pusher:signin_success', 5000, 'raw signin');

  const res = await api.terminateUserConnections('leaver');
  assert.equal(res.status, 200);
  const closed = await withTimeout(r.closed, 5000, 'the raw connection to close');
  assert.equal(closed.code, 4009);
  const err = r.frames.items.find((f) => f.event === 'pusher:error');
  assert.ok(err, 'a pusher:error before the close');
  assert.equal(err.data.code, 4009);
  for (const c of [tab1, tab2]) await c.states.until((s) => s === 'disconnected', 5000, 'pusher-js of the terminated user to end disconnected');
  // The other user still gets its events.
  const box = new Inbox('stayer');
  stayer.user.bind('still', (d) => box.push(d));
  await api.sendToUser('stayer', 'still', { here: true });
  await box.until(() => true, 5000, 'the stayer\'s event');
  assert.equal(stayer.connection.state, 'connected');
});

test('a bad signin: pusher:error 4009 and the connection closed 4009', async (t) => {
  const target = await startTarget({ t, apps: [USER_APP] });
  const r = await raw(target, { t, label: 'bad signin' });
  const other = await raw(target, { t });
  // Signed for another socket_id (a replay).
  const { auth } = sdk(target).authenticateUser(other.socketId, { id: 'x' });
  r.send({ event: 'pusher:signin', data: { auth, user_data: JSON.stringify({ id: 'x' }) } });
  const closed = await withTimeout(r.closed, 5000, 'the close after a bad signin');
  assert.equal(closed.code, 4009);
  const err = r.frames.items.find((f) => f.event === 'pusher:error');
  assert.equal(err.data.code, 4009);
  // user_data without an id, correctly signed: refused the same way.
  const r2 = await raw(target, { t, label: 'signin without id' });
  const noId = JSON.stringify({ name: 'anon' });
  const signed = `${target.key}:${require('node:crypto').createHmac('sha256', target.secret).update(`${r2.socketId}::user::${noId}`).digest('hex')}`;
  r2.send({ event: 'pusher:signin', data: { auth: signed, user_data: noId } });
  assert.equal((await withTimeout(r2.closed, 5000, 'the close after a signin without id')).code, 4009);
});

test('an app that requires signin closes a connection that does not sign in within userAuthenticationTimeout (4009)', async (t) => {
  const target = await startTarget({ t, apps: [USER_APP], userAuthenticationTimeout: 500 });
  const quick = await raw(target, { t });
  const idle = await raw(target, { t, label: 'signin timeout' });
  const { auth } = sdk(target).authenticateUser(quick.socketId, { id: 'q' });
  quick.send({ event: 'pusher:signin', data: { auth, user_data: JSON.stringify({ id: 'q' }) } });
  await quick.next((f) => f.event === 'pusher:signin_success', 5000, 'signin');
  const closed = await withTimeout(idle.closed, 10000, 'the close of the connection that never signed in');
  assert.equal(closed.code, 4009);
  assert.equal(idle.frames.items.find((f) => f.event === 'pusher:error').data.code, 4009);
  // The signed-in one, older than the idle one, is still open.
  quick.send({ event: 'pusher:ping', data: {} });
  await quick.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong on the signed-in connection');
});

test('signin on an app that does not require it: signed in all the same (pusher-js signs in when asked)', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t, label: 'signin optional' });
  const { auth } = sdk(target).authenticateUser(r.socketId, { id: 'opt' });
  r.send({ event: 'pusher:signin', data: { auth, user_data: JSON.stringify({ id: 'opt' }) } });
  r.send({ event: 'pusher:ping', data: {} });
  const first = await r.nextNew((f) => f.event === 'pusher:signin_success' || f.event === 'pusher:pong', 5000, 'the answer');
  assert.equal(first.event, target.deviation('signin-without-user-auth', { pusher: 'pusher:signin_success', soketi: 'pusher:pong' }));
});
