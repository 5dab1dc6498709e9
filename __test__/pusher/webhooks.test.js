'use strict';
// Pusher webhooks (lib/pusher/webhooks.js): signed as the `pusher` server SDK
// checks them, batched when asked, retried on 5xx and silence, given up on
// 4xx, bounded. A real HTTP receiver on loopback.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { once } = require('node:events');
const Pusher = require('pusher');
const { Webhooks } = require('../../lib/pusher/webhooks');
const { pusherOptions } = require('../../lib/pusher/config');

/** A receiver: answers each POST with the next status of `statuses` (then 200); `bodies` gets each request. */
async function receiver(t, statuses = []) {
  const got = [];
  const waiters = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const status = statuses.length ? statuses.shift() : 200;
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), status });
      res.writeHead(status).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `http://127.0.0.1:${server.address().port}/hook`;
  const until = async (n) => {
    while (got.length < n) await new Promise((r) => waiters.push(r));
  };
  return { url, got, until };
}

function appWith(url, extra = {}) {
  return pusherOptions({ apps: [{ id: '7', key: 'the-key', secret: ['first', 'second'],
    webhooks: [{ url, event_types: ['channel_occupied', 'member_added'], headers: { 'x-extra': 'yes' }, ...extra }] }] }).apps[0];
}

test('one POST per event, signed with the first secret as the pusher SDK verifies it', async (t) => {
  const r = await receiver(t);
  const hooks = new Webhooks(appWith(r.url), { fetch });
  hooks.send({ name: 'channel_occupied', channel: 'room' });
  hooks.send({ name: 'channel_vacated', channel: 'room' }); // not asked for
  hooks.send({ name: 'member_added', channel: 'presence-room', user_id: 'u1' });
  await r.until(2);
  await hooks.close();
  assert.equal(r.got.length, 2);
  const sdk = new Pusher({ appId: '7', key: 'the-key', secret: 'first' });
  const names = [];
  for (const { headers, body } of r.got) {
    assert.equal(headers['x-extra'], 'yes');
    const hook = sdk.webhook({ headers, rawBody: body });
    assert.equal(hook.isValid(), true);
    names.push(...hook.getEvents().map((e) => e.name));
    assert.ok(Math.abs(hook.getTime().getTime() - Date.now()) < 60000);
  }
  assert.deepEqual(names.sort(), ['channel_occupied', 'member_added']);
  // Signed with the first secret only: the second does not verify it.
  assert.equal(new Pusher({ appId: '7', key: 'the-key', secret: 'second' }).webhook({ headers: r.got[0].headers, rawBody: r.got[0].body }).isValid(), false);
  assert.deepEqual(hooks.stats(), { sent: 2, events: 2, retries: 0, failed: 0, dropped: 0, queued: 0 });
});

test('batching: the events of one turn in one POST; the channel filter applies', async (t) => {
  const r = await receiver(t);
  const hooks = new Webhooks(appWith(r.url, { filter: { channel_name_starts_with: 'presence-' } }), { fetch, batching: true });
  hooks.send({ name: 'channel_occupied', channel: 'room' }); // filtered out
  hooks.send({ name: 'member_added', channel: 'presence-a', user_id: '1' });
  hooks.send({ name: 'member_added', channel: 'presence-a', user_id: '2' });
  await r.until(1);
  await hooks.close();
  assert.equal(r.got.length, 1);
  assert.deepEqual(JSON.parse(r.got[0].body).events.map((e) => e.user_id), ['1', '2']);
});

test('5xx and silence are retried with backoff; 4xx is given up at once, with an error that says so', async (t) => {
  const r = await receiver(t, [503, 500, 400]);
  const hooks = new Webhooks(appWith(r.url), { fetch, backoffMin: 5, backoffMax: 20 });
  const errors = [];
  hooks.on('error', (e) => errors.push(e));
  hooks.send({ name: 'channel_occupied', channel: 'a' }); // 503, 500, then 400: given up
  await r.until(3);
  hooks.send({ name: 'channel_occupied', channel: 'b' }); // 200
  await r.until(4);
  await hooks.close();
  assert.equal(errors.length, 1);
  assert.equal(errors[0].code, 'ERR_SYMPHONY_WEBHOOK');
  assert.equal(errors[0].status, 400);
  assert.match(errors[0].message, /answered 400 after 3 attempts; 1 event not delivered/);
  assert.deepEqual(hooks.stats(), { sent: 1, events: 1, retries: 2, failed: 1, dropped: 0, queued: 0 });

  // No receiver at all: every attempt, then given up.
  const dead = http.createServer();
  dead.listen(0, '127.0.0.1');
  await once(dead, 'listening');
  const url = `http://127.0.0.1:${dead.address().port}/`;
  await new Promise((res) => dead.close(res));
  const h2 = new Webhooks(appWith(url), { fetch, backoffMin: 1, backoffMax: 2, attempts: 3 });
  const gaveUp = once(h2, 'error');
  h2.send({ name: 'channel_occupied', channel: 'c' });
  const [err] = await gaveUp;
  assert.match(err.message, /no answer after 3 attempts/);
  await h2.close();
  assert.equal(h2.stats().retries, 2);
});

test('bounded: past maxQueued, events are dropped and counted', async (t) => {
  const r = await receiver(t);
  let release;
  const gate = new Promise((res) => { release = res; });
  const slowFetch = async (...args) => { await gate; return fetch(...args); };
  const hooks = new Webhooks(appWith(r.url), { fetch: slowFetch, maxQueued: 3 });
  const dropped = [];
  hooks.on('error', (e) => dropped.push(e));
  for (let i = 0; i < 5; i++) hooks.send({ name: 'channel_occupied', channel: `c${i}` });
  assert.equal(dropped.length, 2);
  assert.match(dropped[0].message, /3 events already waiting; channel_occupied dropped/);
  release();
  await r.until(3);
  await hooks.close();
  assert.deepEqual(hooks.stats(), { sent: 3, events: 3, retries: 0, failed: 0, dropped: 2, queued: 0 });
});
