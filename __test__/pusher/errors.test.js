'use strict';
// Every error a client can provoke, with its code: 4001 an unknown app key,
// 4004 an app over its connection quota, 4201 no pong to the server's ping,
// 4301 an oversized client event; a message that is not JSON, a JSON that
// is not a Pusher message, an unknown event, a bad channel name; and the
// close code of a server that shuts down (one that pusher-js reconnects on).
const test = require('node:test');
const assert = require('node:assert/strict');
const { startTarget, DEFAULT_APP, KIND } = require('../helpers/pusher-target');
const { sdk, connect, raw, rawSubscribe, withTimeout } = require('../helpers/pusher-clients');

test('4001: an unknown app key gets pusher:error 4001 and a close 4001; pusher-js gives up (no reconnect)', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t, key: 'no-such-key', established: false, label: 'unknown key' });
  const err = await r.next((f) => f.event === 'pusher:error', 5000, 'pusher:error');
  assert.equal(err.data.code, 4001);
  assert.equal(typeof err.data.message, 'string');
  const closed = await withTimeout(r.closed, 5000, 'the close');
  assert.equal(closed.code, 4001);
  assert.ok(!r.frames.items.some((f) => f.event === 'pusher:connection_established'));

  const client = await connect(target, { t, key: 'no-such-key', wait: false });
  await client.states.until((s) => s === 'disconnected', 10000, 'pusher-js to end disconnected');
  assert.ok(!client.states.items.includes('connected'));
  const pe = await client.errors.until((e) => e.type === 'PusherError' || (e.error && e.error.data), 5000, 'the PusherError');
  assert.equal((pe.data || pe.error.data).code, 4001);
});

test('over the app\'s connection quota (maxConnections): pusher:error and a close with the quota code; the others stay', async (t) => {
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, maxConnections: 2 }] });
  const a = await raw(target, { t });
  const b = await raw(target, { t });
  const c = await raw(target, { t, established: false, label: 'over quota' });
  const code = target.deviation('quota-code', { pusher: 4004, soketi: 4100 });
  const err = await c.next((f) => f.event === 'pusher:error', 5000, 'pusher:error');
  assert.equal(err.data.code, code);
  assert.equal((await withTimeout(c.closed, 5000, 'the close')).code, code);
  for (const r of [a, b]) {
    r.send({ event: 'pusher:ping', data: {} });
    await r.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong from a connection within the quota');
  }
});

test('a message that is not JSON, or not a Pusher message: the connection stays open (Pusher: a pusher:error)', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t, label: 'bad json' });
  // Frames are indexed from before each send: the error and the pong may
  // come in one TCP read (ws then emits both before a promise resolves), so
  // "the pong after the error" is looked for past the error's index, not
  // past the frames seen when the wait starts.
  const after = (from) => (f) => r.frames.items.indexOf(f) >= from;
  for (const bad of ['not json', '{"event":', '[1,2]', '"a string"', '{"event":5}', '{"data":{}}']) {
    const from = r.frames.items.length;
    r.send(bad);
    r.send({ event: 'pusher:ping', data: {} });
    const first = await r.next((f) => after(from)(f) && (f.event === 'pusher:error' || f.event === 'pusher:pong'), 5000, `the answer to ${bad}`);
    assert.equal(first.event, target.deviation('bad-json', { pusher: 'pusher:error', soketi: 'pusher:pong' }), bad);
    if (first.event === 'pusher:error') {
      assert.equal(typeof first.data.message, 'string');
      await r.next((f) => after(r.frames.items.indexOf(first) + 1)(f) && f.event === 'pusher:pong', 3000, 'the pong after the error');
    }
  }
  // Still subscribed and served.
  await rawSubscribe(r, target, 'after-bad');
  await sdk(target).trigger('after-bad', 'ok', {});
  await r.next((f) => f.event === 'ok', 5000, 'an event after the bad messages');
});

test('an unknown event (pusher: or not) is ignored', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t });
  r.send({ event: 'pusher:no_such_thing', data: {} });
  r.send({ event: 'whatever', data: {} });
  r.send({ event: 'pusher:ping', data: {} });
  const first = await r.nextNew((f) => f.event !== undefined, 5000, 'the answer');
  assert.equal(first.event, 'pusher:pong');
});

test('an oversized client event: pusher:error 4301, not relayed, the connection stays open', async (t) => {
  const target = await startTarget({ t, maxEventBytes: 1024 });
  const a = await raw(target, { t, label: 'oversized client event' });
  const b = await raw(target, { t });
  await rawSubscribe(a, target, 'private-big');
  await rawSubscribe(b, target, 'private-big');
  a.send({ event: 'client-big', channel: 'private-big', data: { blob: 'x'.repeat(2048) } });
  const err = await a.nextNew((f) => f.event === 'pusher:error', 5000, 'pusher:error');
  assert.equal(err.data.code, 4301);
  a.send({ event: 'client-small', channel: 'private-big', data: { ok: true } });
  await b.next((f) => f.event === 'client-small', 5000, 'the small client event');
  assert.ok(!b.frames.items.some((f) => f.event === 'client-big'));
});

test('a channel name that is not allowed, or too long: refused on the channel', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t, label: 'bad channel' });
  for (const name of ['has space', 'semi:colon', 'x'.repeat(201)]) {
    r.send({ event: 'pusher:subscribe', data: { channel: name } });
    const answer = await r.nextNew((f) => f.channel === name || f.event === 'pusher:error', 5000, `the answer for ${name.slice(0, 20)}`);
    assert.equal(answer.event, 'pusher:subscription_error', JSON.stringify(answer));
    assert.equal(answer.data.status, target.deviation('channel-name-status', { pusher: 400, soketi: 4009 }));
  }
  r.send({ event: 'pusher:ping', data: {} });
  await r.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong');
});

test('4201: the server pings after activity_timeout and closes a connection that does not answer', { skip: KIND === 'soketi' && !process.env.SY_PUSHER_SLOW ? 'Soketi closes silent connections after a fixed 120 s (SY_PUSHER_SLOW=1 to wait for it)' : false }, async (t) => {
  const target = await startTarget({ t, activityTimeout: 1 });
  const pings = target.deviation('pong-timeout', { pusher: true, soketi: false });
  const silent = await raw(target, { t, label: 'pong timeout' });
  const polite = await raw(target, { t });
  // polite answers every ping.
  polite.ws.on('message', (d) => { if (JSON.parse(d).event === 'pusher:ping') polite.send({ event: 'pusher:pong', data: {} }); });
  if (pings) {
    const ping = await silent.next((f) => f.event === 'pusher:ping', 5000, 'the server\'s pusher:ping');
    assert.equal(ping.event, 'pusher:ping');
  }
  // Pusher recommends a pong timeout of 30 s: activity_timeout + 30 s + slack.
  const closed = await withTimeout(silent.closed, pings ? 40000 : 130000, 'the close of the silent connection');
  assert.equal(closed.code, 4201);
  // polite was pinged too, answered, and is open (Soketi never pings: it
  // closes the polite one at 120 s as well).
  if (pings) {
    await polite.next((f) => f.event === 'pusher:ping', 5000, 'a ping to the polite connection');
    polite.send({ event: 'pusher:ping', data: {} });
    await polite.nextNew((f) => f.event === 'pusher:pong', 3000, 'pong on the polite connection');
  }
});

test('the server shuts down: a close code pusher-js reconnects on (4200-4299, or below 4000 but 1002-1004)', async (t) => {
  const target = await startTarget({ t });
  const r = await raw(target, { t, label: 'shutdown' });
  await target.stop();
  const { code } = await withTimeout(r.closed, 10000, 'the close at shutdown');
  const reconnects = (code >= 4200 && code < 4300) || (code < 4000 && !(code >= 1002 && code <= 1004));
  assert.ok(reconnects, `close code ${code}`);
});

test('protocol version: none is 4008, an unsupported one 4007 (pusher:error, then the close)', async (t) => {
  const target = await startTarget({ t });
  for (const [query, code] of [['client=js&version=8.6.0', 4008], ['protocol=99&client=js&version=8.6.0', 4007]]) {
    const r = await raw(target, { t, query, established: false, label: `protocol ${code}` });
    const first = await r.next((f) => f.event === 'pusher:error' || f.event === 'pusher:connection_established', 5000, 'the first frame');
    const want = target.deviation('protocol-version', { pusher: 'pusher:error', soketi: 'pusher:connection_established' });
    assert.equal(first.event, want, query);
    if (want === 'pusher:error') {
      assert.equal(first.data.code, code);
      assert.equal((await withTimeout(r.closed, 5000, 'the close')).code, code);
    }
    r.close();
  }
  // pusher-js' own query (protocol=7) is what every other test uses.
});
