'use strict';
// presence- channels: channel_data signed into the auth;
// subscription_succeeded carries {presence: {ids, hash, count}};
// member_added / member_removed to the others (not to the member itself),
// once per user however many connections it has; pusher-js' Members.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget } = require('../helpers/pusher-target');
const { sdk, connect, subscribe, raw, rawSubscribe, Inbox } = require('../helpers/pusher-clients');

const member = (id, info) => () => ({ user_id: id, user_info: info });

/** pusher-js Members as a plain object: { me, count, each: {id: info} }. */
function membersOf(channel) {
  const each = {};
  channel.members.each((m) => { each[m.id] = m.info; });
  return { me: channel.members.me && channel.members.me.id, count: channel.members.count, each };
}

test('presence: subscription_succeeded lists the members, the others get member_added and member_removed', async (t) => {
  const target = await startTarget({ t });
  const alice = await connect(target, { t, member: member('alice', { name: 'Alice' }) });
  const a = await subscribe(alice, 'presence-room');
  assert.deepEqual(membersOf(a.channel), { me: 'alice', count: 1, each: { alice: { name: 'Alice' } } });
  const added = new Inbox('alice member_added');
  const removed = new Inbox('alice member_removed');
  a.channel.bind('pusher:member_added', (m) => added.push(m));
  a.channel.bind('pusher:member_removed', (m) => removed.push(m));

  const bob = await connect(target, { t, member: member('bob', { name: 'Bob' }) });
  const b = await subscribe(bob, 'presence-room');
  assert.deepEqual(membersOf(b.channel), { me: 'bob', count: 2, each: { alice: { name: 'Alice' }, bob: { name: 'Bob' } } });
  const m = await added.until(() => true, 5000, 'member_added for bob');
  assert.deepEqual({ id: m.id, info: m.info }, { id: 'bob', info: { name: 'Bob' } });
  assert.equal(a.channel.members.count, 2);

  bob.unsubscribe('presence-room');
  const gone = await removed.until(() => true, 5000, 'member_removed for bob');
  assert.equal(gone.id, 'bob');
  assert.equal(a.channel.members.count, 1);

  // A disconnect removes the member too.
  const carol = await connect(target, { t, member: member('carol', null) });
  await subscribe(carol, 'presence-room');
  await added.count(2, undefined, 5000, 'member_added for carol');
  carol.disconnect();
  await removed.count(2, undefined, 5000, 'member_removed for carol');
  assert.deepEqual(membersOf(a.channel), { me: 'alice', count: 1, each: { alice: { name: 'Alice' } } });
  // The member itself never heard about itself.
  assert.ok(!added.items.some((x) => x.id === 'alice'));
});

test('presence frames: {ids, hash, count} in a JSON string; member_added with user_info; member_removed with user_id', async (t) => {
  const target = await startTarget({ t });
  const a = await raw(target, { t, label: 'presence a' });
  const answer = await rawSubscribe(a, target, 'presence-lobby', { user_id: 'u1', user_info: { role: 'admin' } });
  assert.equal(answer.event, 'pusher_internal:subscription_succeeded');
  assert.equal(typeof answer.data, 'string');
  assert.deepEqual(JSON.parse(answer.data), { presence: { ids: ['u1'], hash: { u1: { role: 'admin' } }, count: 1 } });

  const b = await raw(target, { t, label: 'presence b' });
  const second = await rawSubscribe(b, target, 'presence-lobby', { user_id: 'u2' });
  const p = JSON.parse(second.data).presence;
  assert.deepEqual([...p.ids].sort(), ['u1', 'u2']);
  assert.equal(p.count, 2);
  // A member without user_info: null or absent in the hash (pusher-js reads both as undefined info).
  assert.deepEqual(p.hash.u1, { role: 'admin' });
  assert.ok(p.hash.u2 === null || p.hash.u2 === undefined, JSON.stringify(p.hash));

  const added = await a.next((f) => f.event === 'pusher_internal:member_added', 5000, 'member_added');
  assert.equal(added.channel, 'presence-lobby');
  assert.equal(JSON.parse(added.data).user_id, 'u2');
  b.send({ event: 'pusher:unsubscribe', data: { channel: 'presence-lobby' } });
  const removed = await a.next((f) => f.event === 'pusher_internal:member_removed', 5000, 'member_removed');
  assert.deepEqual(JSON.parse(removed.data), { user_id: 'u2' });
  // b never got its own member_added.
  assert.ok(!b.frames.items.some((f) => f.event === 'pusher_internal:member_added'));
});

test('presence: an integer user_id is the same member as its decimal string', async (t) => {
  const target = await startTarget({ t });
  const a = await raw(target, { t });
  const answer = await rawSubscribe(a, target, 'presence-n', { user_id: 1234, user_info: { n: 1 } });
  const p = JSON.parse(answer.data).presence;
  assert.equal(p.count, 1);
  assert.equal(String(p.ids[0]), '1234');
});

test('presence: one user on two connections is one member; removed when its last connection leaves', async (t) => {
  const target = await startTarget({ t });
  const watcher = await connect(target, { t, member: member('watcher', null) });
  const w = await subscribe(watcher, 'presence-multi');
  const added = new Inbox('added');
  const removed = new Inbox('removed');
  w.channel.bind('pusher:member_added', (m) => added.push(m.id));
  w.channel.bind('pusher:member_removed', (m) => removed.push(m.id));

  const tab1 = await connect(target, { t, member: member('dana', { tab: 1 }) });
  await subscribe(tab1, 'presence-multi');
  await added.until((id) => id === 'dana', 5000, 'dana added');
  const tab2 = await connect(target, { t, member: member('dana', { tab: 2 }) });
  const second = await subscribe(tab2, 'presence-multi');
  assert.equal(second.channel.members.count, 2); // watcher and dana, once

  tab1.disconnect();
  // The marker: a member that joins after tab1 left; its member_added comes
  // after any member_removed that tab1's leaving would have caused.
  const marker = await connect(target, { t, member: member('marker', null) });
  await subscribe(marker, 'presence-multi');
  await added.until((id) => id === 'marker', 5000, 'marker added');
  assert.deepEqual(added.items, ['dana', 'marker']);
  assert.deepEqual(removed.items, [], 'dana still has a connection');

  tab2.disconnect();
  await removed.until((id) => id === 'dana', 5000, 'dana removed after her last connection');
  assert.equal(w.channel.members.count, 2);
});

test('presence refused: channel_data other than the one signed, or a signature without channel_data', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t, label: 'presence refused' });
  const api = sdk(target);
  const signed = api.authorizeChannel(r.socketId, 'presence-x', { user_id: 'honest' });
  r.send({ event: 'pusher:subscribe', data: { channel: 'presence-x', auth: signed.auth, channel_data: JSON.stringify({ user_id: 'impostor' }) } });
  const first = await r.nextNew((f) => f.channel === 'presence-x', 5000, 'the answer');
  assert.equal(first.event, 'pusher:subscription_error');
  assert.equal(first.data.status, 401);
  // The private-channel signature (no channel_data) does not open a presence channel.
  const privateStyle = api.authorizeChannel(r.socketId, 'presence-x');
  r.send({ event: 'pusher:subscribe', data: { channel: 'presence-x', auth: privateStyle.auth } });
  const second = await r.nextNew((f) => f.channel === 'presence-x', 5000, 'the answer');
  assert.equal(second.event, 'pusher:subscription_error');
  // The right one works on the same connection.
  r.send({ event: 'pusher:subscribe', data: { channel: 'presence-x', ...signed } });
  const ok = await r.nextNew((f) => f.channel === 'presence-x', 5000, 'the answer');
  assert.equal(ok.event, 'pusher_internal:subscription_succeeded');
  assert.deepEqual(JSON.parse(ok.data).presence.ids, ['honest']);
});

test('presence over the limit: the member past maxPresenceMembers is refused on the channel', async (t) => {
  const target = await startTarget({ t, maxPresenceMembers: 2 });
  const clients = [];
  for (const id of ['m1', 'm2']) {
    const r = await raw(target, { t });
    assert.equal((await rawSubscribe(r, target, 'presence-small', { user_id: id })).event, 'pusher_internal:subscription_succeeded');
    clients.push(r);
  }
  const third = await raw(target, { t, label: 'presence full' });
  const answer = await rawSubscribe(third, target, 'presence-small', { user_id: 'm3' });
  assert.equal(answer.event, 'pusher:subscription_error');
  assert.equal(answer.data.type, 'LimitReached');
  // A connection of a member already in still joins (it is not a new member).
  const again = await raw(target, { t });
  const theirs = await rawSubscribe(again, target, 'presence-small', { user_id: 'm1' });
  assert.equal(theirs.event, target.deviation('presence-limit-same-user', { pusher: 'pusher_internal:subscription_succeeded', soketi: 'pusher:subscription_error' }));
});

test('presence join flood: 40 members join at once; every count and list agrees', async (t) => {
  const target = await startTarget({ t });
  const watcher = await raw(target, { t });
  await rawSubscribe(watcher, target, 'presence-flood', { user_id: 'watcher' });
  const joiners = await Promise.all(Array.from({ length: 40 }, () => raw(target, { t })));
  const answers = await Promise.all(joiners.map((r, i) => rawSubscribe(r, target, 'presence-flood', { user_id: `f${i}` })));
  for (const a of answers) assert.equal(a.event, 'pusher_internal:subscription_succeeded');
  const counts = answers.map((a) => JSON.parse(a.data).presence.count);
  // Each joiner saw itself, the watcher and those before it: 2 to 41, each once.
  assert.deepEqual([...counts].sort((x, y) => x - y), Array.from({ length: 40 }, (_, i) => i + 2));
  const added = await watcher.frames.count(40, (f) => f.event === 'pusher_internal:member_added', 10000, '40 member_added at the watcher');
  assert.equal(new Set(added.map((f) => JSON.parse(f.data).user_id)).size, 40);
  const res = await sdk(target).get({ path: '/channels/presence-flood/users' });
  assert.equal((await res.json()).users.length, 41);
});
