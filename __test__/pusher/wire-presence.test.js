'use strict';
// Pusher presence channels in symphony itself (docs/pusher.md, "Presence
// channels"): what the acceptance suite (presence.test.js) cannot see from
// outside the process. The member events reported once per user (and once
// per cluster over Redis) through lib/pusher/events.js; user_count for
// the GET /channels endpoints (presenceUserCount); a second app's channels;
// user_info past maxPresenceMemberBytes; a client event's user id that no
// client can forge; a node that closes takes its members with it.
const test = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { Server } = require('../..');
const { onPusherEvent } = require('../../lib/pusher/events');
const { presenceUserCount } = require('../../lib/pusher/presence');
const { sdk, raw, rawSubscribe } = require('../helpers/pusher-clients');
const { startRedis, poll } = require('../helpers/redis');

const APP = { id: 'app1', key: 'key1', secret: 'secret1', enableClientMessages: true };
const APP2 = { id: 'app2', key: 'key2', secret: 'secret2', enableClientMessages: true };

async function start(t, { pusher = {}, bus, presence } = {}) {
  const server = new Server({ host: '127.0.0.1', port: 0, pusher: { apps: [APP, APP2], ...pusher }, bus, presence });
  const events = [];
  onPusherEvent(server, (appId, e) => events.push({ appId, ...e }));
  const up = bus ? new Promise((resolve) => server.bus.once('up', resolve)) : null;
  await server.listen();
  await up;
  t.after(() => server.close());
  const { port } = server.address();
  const target = (app) => ({ kind: 'symphony', app, key: app.key, secret: app.secret, wsHost: '127.0.0.1', wsPort: port, httpHost: '127.0.0.1', httpPort: port });
  return { server, events, target: target(APP), target2: target(APP2) };
}

/** Two servers over one real Redis: { A, B, bus }. */
async function twoNodes(t) {
  const redis = await startRedis({ t });
  const bus = { url: redis.url, backoff: { min: 50, max: 300 } };
  return { A: await start(t, { bus }), B: await start(t, { bus }), bus };
}

/** A node in a child process (helpers/pusher-node.js), to be killed with SIGKILL: { port, child }. */
async function childNode(t, options) {
  const child = spawn(process.execPath, [path.join(__dirname, '../helpers/pusher-node.js'), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /PUSHER-NODE-LISTENING (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
      if (/PUSHER-NODE-FAILED/.test(out)) reject(new Error(out));
    });
    child.once('exit', (code) => reject(new Error(`the node exited ${code}: ${out}`)));
  });
  return { port, child };
}

const memberEvents = (events) => events.filter((e) => e.name.startsWith('member_')).map((e) => `${e.appId} ${e.name} ${e.channel} ${e.user_id}`);

test('member_added and member_removed are reported once per user; user_count follows', async (t) => {
  const { server, events, target } = await start(t);
  const one = await raw(target, { t });
  const two = await raw(target, { t });
  assert.equal((await rawSubscribe(one, target, 'presence-w', { user_id: 'alice' })).event, 'pusher_internal:subscription_succeeded');
  assert.equal(await presenceUserCount(server, APP.id, 'presence-w'), 1);
  assert.equal((await rawSubscribe(two, target, 'presence-w', { user_id: 'alice' })).event, 'pusher_internal:subscription_succeeded');
  assert.equal(await presenceUserCount(server, APP.id, 'presence-w'), 1);
  one.send({ event: 'pusher:unsubscribe', data: { channel: 'presence-w' } });
  // A marker member: its events come after whatever one's leaving caused.
  const marker = await raw(target, { t });
  await rawSubscribe(marker, target, 'presence-w', { user_id: 'marker' });
  await poll(async () => memberEvents(events).length === 2, { what: 'the marker added', timeoutMs: 5000 });
  assert.deepEqual(memberEvents(events), ['app1 member_added presence-w alice', 'app1 member_added presence-w marker']);
  two.close();
  await poll(async () => memberEvents(events).length === 3, { what: 'alice removed', timeoutMs: 5000 });
  assert.equal(memberEvents(events)[2], 'app1 member_removed presence-w alice');
  assert.equal(await presenceUserCount(server, APP.id, 'presence-w'), 1);
  assert.equal(await presenceUserCount(server, APP.id, 'presence-nobody'), 0);
});

test('a second app: its own members, /users, user ids on client events, webhooks named by its id', async (t) => {
  const { server, events, target, target2 } = await start(t);
  const a1 = await raw(target, { t });
  await rawSubscribe(a1, target, 'presence-same', { user_id: 'one' });
  const b1 = await raw(target2, { t });
  const b2 = await raw(target2, { t });
  const first = JSON.parse((await rawSubscribe(b1, target2, 'presence-same', { user_id: 'two' })).data);
  assert.deepEqual(first.presence.ids, ['two']);
  await rawSubscribe(b2, target2, 'presence-same', { user_id: 'three', user_info: { n: 3 } });
  const users = await (await sdk(target2).get({ path: '/channels/presence-same/users' })).json();
  assert.deepEqual(users.users.map((u) => u.id).sort(), ['three', 'two']);
  assert.equal(await presenceUserCount(server, APP2.id, 'presence-same'), 2);
  assert.equal(await presenceUserCount(server, APP.id, 'presence-same'), 1);
  b2.send({ event: 'client-hi', channel: 'presence-same', data: { x: 1 } });
  const hi = await b1.next((f) => f.event === 'client-hi', 5000, 'client-hi');
  assert.equal(hi.user_id, 'three');
  assert.ok(memberEvents(events).includes('app2 member_added presence-same three'));
});

test('user_info past maxPresenceMemberBytes is refused on the channel; the connection goes on', async (t) => {
  const { target } = await start(t, { pusher: { maxPresenceMemberBytes: 64 } });
  const c = await raw(target, { t });
  const big = await rawSubscribe(c, target, 'presence-big', { user_id: 'u', user_info: { pad: 'x'.repeat(80) } });
  assert.equal(big.event, 'pusher:subscription_error');
  assert.equal(big.data.type, 'LimitReached');
  assert.equal(big.data.status, 400);
  const ok = await rawSubscribe(c, target, 'presence-big', { user_id: 'u', user_info: { pad: 'x' } });
  assert.equal(ok.event, 'pusher_internal:subscription_succeeded');
});

test('a client event named with a NUL is refused: nobody can put another user id after it', async (t) => {
  const { server, target } = await start(t);
  const a = await raw(target, { t });
  const b = await raw(target, { t });
  await rawSubscribe(a, target, 'presence-nul', { user_id: 'honest' });
  await rawSubscribe(b, target, 'presence-nul', { user_id: 'b' });
  a.send({ event: 'client-x\u0000mallory', channel: 'presence-nul', data: {} });
  const err = await a.nextNew((f) => f.event === 'pusher:error', 5000, 'the refusal');
  assert.equal(err.data.code, 4301);
  assert.match(err.data.message, /NUL/);
  a.send({ event: 'client-x', channel: 'presence-nul', data: {} });
  const got = await b.next((f) => f.event === 'client-x', 5000, 'client-x');
  assert.equal(got.user_id, 'honest');
  // Nor can the HTTP API or server.publish() name an event with one.
  const res = await sdk(target).trigger('presence-nul', 'ev\u0000mallory', {}).catch((err) => err);
  assert.equal(res.status, 400);
  assert.throws(() => server.publish('presence-nul', '{}', { event: 'ev\u0000mallory' }), { code: 'ERR_INVALID_ARG_VALUE' });
});

test('two nodes: one user on both is one member_added and one member_removed for the cluster; a node that closes takes its members', async (t) => {
  const { A, B } = await twoNodes(t);
  const watcher = await raw(A.target, { t });
  await rawSubscribe(watcher, A.target, 'presence-two', { user_id: 'watcher' });
  const onA = await raw(A.target, { t });
  const onB = await raw(B.target, { t });
  await rawSubscribe(onA, A.target, 'presence-two', { user_id: 'dana' });
  const second = JSON.parse((await rawSubscribe(onB, B.target, 'presence-two', { user_id: 'dana' })).data);
  assert.deepEqual(second.presence.ids.sort(), ['dana', 'watcher']);
  assert.equal(await presenceUserCount(B.server, APP.id, 'presence-two'), 2);
  const all = () => [...memberEvents(A.events), ...memberEvents(B.events)];
  assert.deepEqual(all().filter((e) => e.endsWith('dana')), ['app1 member_added presence-two dana']);
  // Dana's connection on A goes; once A has heard of it, a marker joins on
  // A: its member_added comes after anything dana's leaving decided (one
  // queue per channel).
  const closedOnA = once(A.server, 'close');
  onA.close();
  await closedOnA;
  const marker = await raw(A.target, { t });
  await rawSubscribe(marker, A.target, 'presence-two', { user_id: 'marker' });
  await watcher.next((f) => f.event === 'pusher_internal:member_added' && JSON.parse(f.data).user_id === 'marker', 5000, 'marker added');
  assert.ok(!watcher.frames.items.some((f) => f.event === 'pusher_internal:member_removed'), 'dana is still on B');
  assert.ok(!all().some((e) => e.includes('member_removed')), 'dana is still on B');
  // B closes: its members leave Redis, and A's watcher hears dana leave.
  const removed = watcher.next((f) => f.event === 'pusher_internal:member_removed', 10000, 'dana removed at the watcher');
  await B.server.close();
  assert.deepEqual(JSON.parse((await removed).data), { user_id: 'dana' });
  assert.deepEqual(all().filter((e) => e.includes('member_removed')), ['app1 member_removed presence-two dana']);
  assert.equal(await presenceUserCount(A.server, APP.id, 'presence-two'), 2); // watcher, marker
});

test('a connection that subscribes and goes at once leaves no member behind (Redis)', async (t) => {
  const redis = await startRedis({ t });
  const { server, target } = await start(t, { bus: { url: redis.url } });
  for (let i = 0; i < 5; i++) {
    const c = await raw(target, { t });
    c.send({ event: 'pusher:subscribe', data: { channel: 'presence-gone', ...sdk(target).authorizeChannel(c.socketId, 'presence-gone', { user_id: `g${i}` }) } });
    c.close();
  }
  await poll(async () => (await presenceUserCount(server, APP.id, 'presence-gone')) === 0, { what: 'every member gone', timeoutMs: 5000 });
});

test('a node killed with its members: a live node removes them within ttl + ttl/3 (member_removed, the webhook)', async (t) => {
  const redis = await startRedis({ t });
  const presence = { ttl: 1000, topics: () => false }; // the node's time in Redis; no symphony presence on topics
  const bus = { url: redis.url, backoff: { min: 50, max: 300 } };
  const A = await start(t, { bus, presence });
  const watcher = await raw(A.target, { t });
  await rawSubscribe(watcher, A.target, 'presence-kill', { user_id: 'watcher' });
  const B = await childNode(t, { host: '127.0.0.1', port: 0, pusher: { apps: [APP, APP2] }, bus, presence });
  const targetB = { ...A.target, wsPort: B.port, httpPort: B.port };
  const doomed = await raw(targetB, { t });
  const joined = JSON.parse((await rawSubscribe(doomed, targetB, 'presence-kill', { user_id: 'doomed' })).data);
  assert.deepEqual(joined.presence.ids.sort(), ['doomed', 'watcher']);
  await watcher.next((f) => f.event === 'pusher_internal:member_added' && JSON.parse(f.data).user_id === 'doomed', 5000, 'doomed added');
  B.child.kill('SIGKILL');
  const started = Date.now();
  const removed = await watcher.next((f) => f.event === 'pusher_internal:member_removed', 5000, 'doomed removed by A');
  assert.deepEqual(JSON.parse(removed.data), { user_id: 'doomed' });
  assert.ok(Date.now() - started < 3 * 1000, `removed after ${Date.now() - started} ms (ttl 1000)`);
  assert.deepEqual(memberEvents(A.events), ['app1 member_added presence-kill watcher', 'app1 member_removed presence-kill doomed']);
  assert.equal(await presenceUserCount(A.server, APP.id, 'presence-kill'), 1);
});

test('join flood over Redis on two nodes: 40 members at once, every count once, /users on both', async (t) => {
  const { A, B } = await twoNodes(t);
  const watcher = await raw(A.target, { t });
  await rawSubscribe(watcher, A.target, 'presence-rflood', { user_id: 'watcher' });
  const targets = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? A.target : B.target));
  const joiners = await Promise.all(targets.map((target) => raw(target, { t })));
  const answers = await Promise.all(joiners.map((r, i) => rawSubscribe(r, targets[i], 'presence-rflood', { user_id: `f${i}` })));
  const counts = answers.map((a) => JSON.parse(a.data).presence.count);
  assert.deepEqual([...counts].sort((x, y) => x - y), Array.from({ length: 40 }, (_, i) => i + 2));
  const added = await watcher.frames.count(40, (f) => f.event === 'pusher_internal:member_added', 10000, '40 member_added');
  assert.equal(new Set(added.map((f) => JSON.parse(f.data).user_id)).size, 40);
  for (const node of [A, B]) {
    const users = await (await sdk(node.target).get({ path: '/channels/presence-rflood/users' })).json();
    assert.equal(users.users.length, 41);
  }
  assert.equal(memberEvents([...A.events, ...B.events]).length, 41);
});
