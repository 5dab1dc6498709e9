'use strict';
// A hook's answer that JSON cannot write (issue 43, item 1): onRequest's
// reply, onSubscribe's { data }, onPublish's and onSubscribe's { code,
// reason }: a BigInt, a cycle, a client's 200,000-level data echoed back, a
// toJSON or a getter that throws, a function. Each reaches the client as
// the documented 'internal' refusal or error, the server's 'error' gets a
// HookError (ERR_SYMPHONY_HOOK_ANSWER) naming the hook, the connection and
// the topic, sync and async alike, and the process goes on. Then a
// fuzz-style suite: seeded random values (JSON and not) as replies and as
// { data }, sync and async, each answered exactly once as JSON.stringify
// says it can be. Real `ws` clients on loopback; every wait is for a frame
// or an event.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, closeAll, healthy } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { connectV2: connectV2Base } = require('../helpers/v1');
const { HookError, SymphonyError, ClientError } = require('../..');

test.afterEach(closeAll);

async function connectV2(url) {
  const c = await connectV2Base(url);
  c.reply = (rid) => c.raw.find((f) => f.data.toString('latin1').startsWith(`r${rid}\n`));
  return c;
}

function cycle() {
  const a = { name: 'a' };
  a.self = a;
  return a;
}

/** A value JSON.stringify throws on, with what it should say. */
const UNWRITABLE = {
  bigint: () => ({ n: 1n }),
  cycle,
  toJSON: () => ({ toJSON() { throw new Error('toJSON says no'); } }),
  getter: () => ({ get bad() { throw new Error('getter says no'); } }),
};

/** Errors the server reported, and a wait for the next n. */
function collect(server) {
  const errors = [];
  server.on('error', (err) => errors.push(err));
  return errors;
}

function assertHookError(err, hook, id, topic) {
  assert.ok(err instanceof HookError, `a HookError, got ${err && err.stack}`);
  assert.ok(err instanceof SymphonyError);
  assert.equal(err.code, 'ERR_SYMPHONY_HOOK_ANSWER');
  assert.equal(err.hook, hook);
  assert.equal(err.id, id);
  assert.equal(err.topic, topic);
  assert.ok(err.cause !== undefined);
  assert.match(err.message, new RegExp(`${hook}'s answer to connection ${id}`));
}

for (const mode of ['sync', 'async']) {
  const answer = (v) => (mode === 'sync' ? v : new Promise((r) => setImmediate(() => r(v))));

  test(`onRequest (${mode}) replying a BigInt, a cycle, a throwing toJSON or getter, a function: 'internal' and a HookError`, async () => {
    const kinds = [...Object.keys(UNWRITABLE), 'function'];
    const { server, url } = await startServer({
      onRequest: (id, data) => {
        const kind = kinds[Number(data.toString())];
        return answer(kind === 'function' ? () => 1 : UNWRITABLE[kind]());
      },
    });
    const errors = collect(server);
    const ids = [];
    server.on('open', (id) => ids.push(id));
    const c = await connectV2(url);
    kinds.forEach((_, i) => c.ws.send(`r{"rid":${i + 1}}\n${i}`));
    c.ws.send('r{"rid":99}\n0'); // answered after: the connection still works
    await c.until(() => kinds.every((_, i) => c.answer('error', i + 1)), 10000, 'every error');
    for (let i = 0; i < kinds.length; i++) {
      assert.deepEqual([c.answer('error', i + 1).code, c.answer('error', i + 1).reason], ['internal', 'internal error']);
      assert.equal(c.reply(i + 1), undefined);
    }
    await waitFor(() => errors.length === kinds.length + 1, 10000, 'the errors');
    for (const err of errors) assertHookError(err, 'onRequest', ids[0], null);
    assert.match(errors[0].cause.message, /BigInt/);
    assert.equal(errors[2].cause.message, 'toJSON says no');
    assert.equal(await healthy(server, url), 'still here');
    c.ws.close();
  });

  test(`onSubscribe (${mode}) granting { data } JSON cannot write, and a client's 200,000-level data echoed: refused 'internal'`, async () => {
    const { server, url } = await startServer({
      onSubscribe: (id, topic, ctx) => {
        if (topic === 'echo') return answer({ data: ctx.data });
        if (topic === 'fine') return answer({ data: { ok: [1] } });
        return answer({ data: UNWRITABLE[topic]() });
      },
    });
    const errors = collect(server);
    const ids = [];
    server.on('open', (id) => ids.push(id));
    const c = await connectV2(url);
    const topics = Object.keys(UNWRITABLE);
    c.sub(...topics.map((topic, i) => ({ rid: i + 1, topic })));
    // 200,000 levels: JSON.parse takes it, JSON.stringify throws RangeError.
    const depth = 200000;
    c.ws.send(`s{"subs":[{"rid":50,"topic":"echo","data":${'['.repeat(depth)}${']'.repeat(depth)}}]}`);
    c.sub({ rid: 51, topic: 'fine' });
    await c.waitAnswer('subscribed', 51);
    await c.until(() => topics.every((_, i) => c.answer('refused', i + 1)) && c.answer('refused', 50), 10000, 'refusals');
    for (const rid of [...topics.map((_, i) => i + 1), 50]) {
      const r = c.answer('refused', rid);
      assert.deepEqual([r.code, r.reason], ['internal', 'internal error']);
    }
    assert.equal(c.answer('refused', 50).topic, 'echo');
    assert.deepEqual(c.answer('subscribed', 51).data, { ok: [1] });
    assert.equal(server.subscribers('echo'), 0);
    assert.equal(server.subscribers('bigint'), 0);
    await waitFor(() => errors.length === topics.length + 1, 10000, 'the errors');
    const byTopic = new Map(errors.map((e) => [e.topic, e]));
    for (const topic of [...topics, 'echo']) assertHookError(byTopic.get(topic), 'onSubscribe', ids[0], topic);
    assert.ok(byTopic.get('echo').cause instanceof RangeError);
    assert.equal(await healthy(server, url), 'still here');
    c.ws.close();
  });

  test(`onPublish and onSubscribe (${mode}) answering { code, reason } that cannot be read: 'internal' and a HookError`, async () => {
    const bad = { get code() { throw new Error('code getter'); } };
    const { server, url } = await startServer({
      onPublish: () => answer(bad),
      onSubscribe: () => answer({ code: 'nope', reason: { toString() { throw new Error('reason toString'); } } }),
    });
    const errors = collect(server);
    const ids = [];
    server.on('open', (id) => ids.push(id));
    const c = await connectV2(url);
    c.ws.send('p{"rid":1,"topic":"room"}\nhi');
    c.sub({ rid: 2, topic: 'room' });
    await c.waitAnswer('error', 1);
    await c.waitAnswer('refused', 2);
    assert.equal(c.answer('error', 1).code, 'internal');
    assert.equal(c.answer('refused', 2).code, 'internal');
    await waitFor(() => errors.length === 2, 10000, 'two errors');
    assertHookError(errors.find((e) => e.hook === 'onPublish'), 'onPublish', ids[0], 'room');
    assertHookError(errors.find((e) => e.hook === 'onSubscribe'), 'onSubscribe', ids[0], 'room');
    assert.equal(await healthy(server, url), 'still here');
    c.ws.close();
  });
}

test('an onRequest returning a thenable whose then throws: the throw is the hook\'s error, answered internal', async () => {
  const boom = new Error('then exploded');
  const { server, url } = await startServer({ onRequest: () => ({ then() { throw boom; } }) });
  const errors = collect(server);
  const c = await connectV2(url);
  c.ws.send('r{"rid":1}\nx');
  await c.waitAnswer('error', 1);
  assert.equal(c.answer('error', 1).code, 'internal');
  await waitFor(() => errors.length === 1, 10000, 'the error');
  // Said as a hook that threw: which hook, which connection, and the throw itself.
  assert.equal(errors[0].code, 'ERR_SYMPHONY_HOOK_THREW');
  assert.equal(errors[0].hook, 'onRequest');
  assert.equal(errors[0].cause, boom);
  c.ws.close();
});

// ---- fuzz-style: seeded random answers --------------------------------

/** mulberry32: a small seeded PRNG, so a failure can be replayed. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random value: JSON, or not (BigInt, cycle, deep, toJSON/getter throwing, function, symbol, bytes). */
function randomValue(rnd, depth = 0) {
  const pick = Math.floor(rnd() * 16);
  switch (pick) {
    case 0: return null;
    case 1: return rnd() < 0.5;
    case 2: return Math.floor(rnd() * 2 ** 40) - 2 ** 39;
    case 3: return rnd() * 1e6;
    case 4: return String.fromCharCode(...Array.from({ length: Math.floor(rnd() * 12) }, () => Math.floor(rnd() * 0xd7ff)));
    case 5: return depth > 3 ? 'leaf' : Array.from({ length: Math.floor(rnd() * 4) }, () => randomValue(rnd, depth + 1));
    case 6: {
      if (depth > 3) return {};
      const o = {};
      for (let i = Math.floor(rnd() * 4); i > 0; i--) o[`k${i}\n"`] = randomValue(rnd, depth + 1);
      return o;
    }
    case 7: return BigInt(Math.floor(rnd() * 1000));
    case 8: return cycle();
    case 9: { // nesting JSON.stringify cannot follow
      let v = 0;
      for (let i = 0; i < 200000; i++) v = [v];
      return v;
    }
    case 10: return { toJSON() { throw new Error('fuzz toJSON'); } };
    case 11: return { get x() { throw new Error('fuzz getter'); } };
    case 12: return () => 'fn';
    case 13: return Symbol('s');
    case 14: return undefined;
    default: return NaN; // JSON writes null
  }
}

/** What JSON.stringify makes of v as a reply: its text, or null when it cannot. */
function replyText(v) {
  try {
    const json = JSON.stringify(v === undefined ? null : v);
    return json === undefined ? null : json;
  } catch {
    return null;
  }
}

/** What { data: v } puts in a notice: undefined (no data), its value, or null when it cannot be written. */
function dataOf(v) {
  if (v === undefined) return { ok: true, data: undefined };
  try {
    const json = JSON.stringify(v);
    return { ok: true, data: json === undefined ? undefined : JSON.parse(json) };
  } catch {
    return { ok: false };
  }
}

test('fuzz: seeded random replies and { data } grants (150 of each), sync and async: each answered once, as JSON.stringify can', async () => {
  // SY_FUZZ_SEED replays a failure; SY_FUZZ_N (at most 1,000) runs longer.
  const seed = Number(process.env.SY_FUZZ_SEED ?? 0x5eed43);
  const rnd = prng(seed);
  const N = Math.min(Number(process.env.SY_FUZZ_N ?? 150), 1000);
  const replies = Array.from({ length: N }, () => ({ v: randomValue(rnd), async: rnd() < 0.5 }));
  const grants = Array.from({ length: N }, () => ({ v: randomValue(rnd), async: rnd() < 0.5 }));
  const later = (x, async) => (async ? new Promise((r) => setImmediate(() => r(x))) : x);
  // maxPending past N: the requests all go to the hook (a request past it
  // is refused at once); the subscribes past it wait natively.
  const { server, url } = await startServer({
    maxPending: N + 50,
    onRequest: (id, data) => { const r = replies[Number(data.toString())]; return later(r.v, r.async); },
    onSubscribe: (id, topic) => { const g = grants[Number(topic.slice(1))]; return later({ data: g.v }, g.async); },
  });
  const errors = collect(server);
  const c = await connectV2(url);
  replies.forEach((_, i) => c.ws.send(`r{"rid":${i}}\n${i}`));
  // One frame of N subscribes.
  c.sub(...grants.map((_, i) => ({ rid: 1000 + i, topic: `t${i}` })));
  const answered = (i) => c.reply(i) !== undefined || c.answer('error', i) !== undefined;
  const decided = (i) => c.answer('subscribed', 1000 + i) !== undefined || c.answer('refused', 1000 + i) !== undefined;
  await c.until(() => replies.every((_, i) => answered(i)) && grants.every((_, i) => decided(i)), 30000, 'every answer');
  let unwritable = 0;
  replies.forEach((r, i) => {
    const text = replyText(r.v);
    const what = `seed ${seed}, reply ${i}`;
    if (r.v instanceof Uint8Array) return;
    if (text === null) {
      unwritable++;
      assert.equal(c.reply(i), undefined, what);
      assert.equal(c.answer('error', i).code, 'internal', what);
    } else {
      assert.equal(c.reply(i).data.toString(), `r${i}\n${text}`, what);
    }
    assert.equal(c.raw.filter((f) => f.data.toString('latin1').startsWith(`r${i}\n`)).length + c.notices('error').filter((n) => n.rid === i).length, 1, what);
  });
  grants.forEach((g, i) => {
    const d = dataOf(g.v);
    const what = `seed ${seed}, grant ${i}`;
    if (!d.ok) {
      unwritable++;
      assert.equal(c.answer('refused', 1000 + i).code, 'internal', what);
      assert.equal(c.answer('subscribed', 1000 + i), undefined, what);
    } else {
      assert.deepEqual(c.answer('subscribed', 1000 + i).data, d.data, what);
    }
  });
  await waitFor(() => errors.length === unwritable, 10000, `${unwritable} errors`);
  assert.ok(errors.every((e) => e instanceof HookError), 'every error a HookError');
  assert.ok(unwritable > 20 && unwritable < 2 * N - 20, `a mix (${unwritable} of ${2 * N} unwritable)`);
  assert.equal(await healthy(server, url), 'still here');
  c.ws.close();
});

test('ClientError stays the client\'s: code and message as they are, no HookError', async () => {
  const { server, url } = await startServer({ onRequest: () => Promise.reject(new ClientError('nope', 'not you')) });
  const errors = collect(server);
  const c = await connectV2(url);
  c.ws.send('r{"rid":1}\nx');
  await c.waitAnswer('error', 1);
  assert.deepEqual([c.answer('error', 1).code, c.answer('error', 1).reason], ['nope', 'not you']);
  assert.equal(errors.length, 0);
  c.ws.close();
});
