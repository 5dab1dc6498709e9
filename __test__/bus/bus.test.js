'use strict';
// The bus (options.bus) against a real Redis started here (Debian's
// redis-server, persistence off, a free loopback port): several symphony
// processes as one fan-out. Nodes are child processes
// (helpers/bus-node.js), clients the ws package.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Server } = require('../..');
const { startRedis, numSub, poll } = require('../helpers/redis');
const { startNode, connectClient, closeAll } = require('../helpers/bus-nodes');

test.after(closeAll);

const bus = (redis, extra = {}) => ({ bus: { url: redis.url, backoff: { min: 50, max: 300 }, ...extra } });

async function upNodes(redis, n, extra) {
  const nodes = [];
  for (let i = 0; i < n; i++) nodes.push(await startNode(bus(redis, extra)));
  for (const node of nodes) await node.waitBus('up', 5000);
  return nodes;
}

test('three nodes: every message reaches every subscriber once, each publisher in order', async (t) => {
  const redis = await startRedis({ t });
  const nodes = await upNodes(redis, 3);
  const clients = [];
  for (const node of nodes) clients.push(await connectClient(node.port, ['chat']), await connectClient(node.port, ['chat']));
  await poll(async () => (await numSub(redis, 'symphony:chat')) === 3, { what: 'one subscription per node', timeoutMs: 5000 });
  const per = 60;
  for (let i = 0; i < per; i++) {
    // Interleaved publishers on three nodes.
    await Promise.all(nodes.map((node, k) => node.publish('chat', `n${k}-${i}`)));
  }
  for (const c of clients) await c.waitFor(3 * per, 10000);
  await new Promise((r) => setTimeout(r, 200)); // a duplicate would arrive by now
  for (const c of clients) {
    assert.equal(c.messages.length, 3 * per, 'exactly once');
    assert.equal(new Set(c.messages).size, 3 * per, 'no duplicates');
    for (let k = 0; k < 3; k++) {
      const mine = c.messages.filter((m) => m.startsWith(`n${k}-`));
      assert.deepEqual(mine, Array.from({ length: per }, (_, i) => `n${k}-${i}`), `node ${k}'s messages in publish order`);
    }
  }
  // Redis' acknowledgements may reach a publisher after its messages reached the others.
  await poll(async () => (await Promise.all(nodes.map((n) => n.stats()))).every((s) => s.bus.published === per),
    { what: 'every publish acknowledged' });
  const stats = await Promise.all(nodes.map((n) => n.stats()));
  for (const s of stats) {
    assert.equal(s.bus.state, 'up');
    assert.equal(s.bus.published, per);
    assert.equal(s.bus.received, 2 * per);
    assert.equal(s.bus.dropped, 0);
    assert.equal(s.bus.channels, 1);
    assert.equal(s.bus.bufferedBytes, 0);
  }
});

test('local: true stays on its node; binary and text keep their kind across nodes', async (t) => {
  const redis = await startRedis({ t });
  const [a, b] = await upNodes(redis, 2);
  const ca = await connectClient(a.port, ['x']);
  const cb = await connectClient(b.port, ['x']);
  await poll(async () => (await numSub(redis, 'symphony:x')) === 2, { what: 'subscriptions' });
  await a.publish('x', 'only-a', { local: true });
  await a.publish('x', Buffer.from([0, 1, 2, 255]));
  assert.equal(await a.publish('x', 'both'), 1, "publish() returns this node's subscribers only");
  await ca.waitFor(3);
  await cb.waitFor(2);
  assert.deepEqual(ca.messages.slice(0, 1), ['only-a']);
  assert.equal(cb.messages.includes('only-a'), false);
  assert.equal(cb.frames[0].binary, true);
  assert.deepEqual([...cb.frames[0].data], [0, 1, 2, 255]);
  assert.equal(cb.frames[1].binary, false);
  assert.equal(cb.messages[1], 'both');
});

test('subscriptions follow local interest: the last one to leave unsubscribes the node', async (t) => {
  const redis = await startRedis({ t });
  const [a] = await upNodes(redis, 1);
  const c1 = await connectClient(a.port, ['room']);
  const c2 = await connectClient(a.port, ['room']);
  await poll(async () => (await numSub(redis, 'symphony:room')) === 1, { what: 'one subscription for two clients' });
  await c1.closeAndWait();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(await numSub(redis, 'symphony:room'), 1);
  await c2.closeAndWait();
  await poll(async () => (await numSub(redis, 'symphony:room')) === 0, { what: 'unsubscribed after the last left' });
  // 200 clients on 100 topics at once: a few commands, not 100.
  const before = (await a.stats()).bus.subscribeCommands;
  const many = [];
  for (let i = 0; i < 200; i++) many.push(connectClient(a.port, [`t${i % 100}`]));
  const cs = await Promise.all(many);
  await poll(async () => (await a.stats()).bus.channels === 100, { what: '100 channels' });
  const cmds = (await a.stats()).bus.subscribeCommands - before;
  assert.ok(cmds < 50, `${cmds} SSUBSCRIBE commands for 100 topics`);
  await Promise.all(cs.map((c) => c.closeAndWait()));
  await poll(async () => (await a.stats()).bus.channels === 0, { what: 'every channel unsubscribed' });
});

test('Redis killed and restarted: local delivery goes on, bus publishes dropped and counted, resubscribed after', async (t) => {
  const redis = await startRedis({ t });
  const [a, b] = await upNodes(redis, 2);
  const ca = await connectClient(a.port, ['feed']);
  const cb = await connectClient(b.port, ['feed']);
  await poll(async () => (await numSub(redis, 'symphony:feed')) === 2, { what: 'subscriptions' });
  await a.publish('feed', 'before');
  await cb.waitFor(1);
  const from = a.busEvents.length;
  await redis.kill9();
  await a.waitBus('down', 5000, from);
  const down = a.busEvents.slice(from).find((e) => e.state === 'down');
  assert.match(down.error.message, /127\.0\.0\.1:\d+: /);
  assert.equal(down.error.code, 'ERR_BUS_DOWN');
  await a.publish('feed', 'during');
  await ca.waitFor(2);
  assert.deepEqual(ca.messages, ['before', 'during'], 'local delivery went on');
  const dropped = (await a.stats()).bus.dropped;
  assert.ok(dropped >= 1);
  const restarted = Date.now();
  await redis.restart();
  await a.waitBus('up', 5000, from);
  await b.waitBus('up', 5000, from);
  await poll(async () => (await numSub(redis, 'symphony:feed')) === 2, { what: 'subscribed again', timeoutMs: 5000 });
  const took = Date.now() - restarted;
  assert.ok(took < 2000, `subscribed again ${took} ms after Redis returned`);
  await a.publish('feed', 'after');
  await cb.waitFor(2);
  assert.deepEqual(cb.messages, ['before', 'after'], 'nothing duplicated, nothing from while it was down');
  const s = await a.stats();
  assert.equal(s.bus.reconnects, 1);
});

test('a wrong password: down with Redis\' own words, retried until it is right', async (t) => {
  const redis = await startRedis({ t, password: 'right-one' });
  const url = `redis://:wrong-one@127.0.0.1:${redis.port}`;
  const node = await startNode({ bus: { url, backoff: { min: 50, max: 200 } } });
  await node.waitBus('down', 5000);
  const ev = node.busEvents.find((e) => e.state === 'down');
  assert.match(ev.error.message, /WRONGPASS/);
  await redis.call('CONFIG', 'SET', 'requirepass', 'wrong-one');
  await node.waitBus('up', 5000);
});

test('what another program publishes reaches every node; bad messages are ignored and counted', async (t) => {
  const redis = await startRedis({ t });
  const [a, b] = await upNodes(redis, 2, { prefix: 'app1:' });
  const ca = await connectClient(a.port, ['prices']);
  const cb = await connectClient(b.port, ['prices']);
  await poll(async () => (await numSub(redis, 'app1:prices')) === 2, { what: 'subscriptions' });
  assert.equal(await redis.call('SPUBLISH', 'app1:prices', 'héllo'), 2);
  await redis.call('SPUBLISH', 'app1:prices', Buffer.from([0xff, 0x00]));
  await ca.waitFor(2);
  await cb.waitFor(2);
  assert.equal(ca.messages[0], 'héllo');
  assert.equal(ca.frames[0].binary, false);
  assert.equal(ca.frames[1].binary, true);
  // A broken envelope, and a message over maxPayload (1 MiB default).
  await redis.call('SPUBLISH', 'app1:prices', Buffer.from([0xf5, 0x09]));
  await redis.call('SPUBLISH', 'app1:prices', Buffer.alloc((1 << 20) + 1, 0x61));
  await a.publish('prices', 'ok');
  await cb.waitFor(3);
  assert.deepEqual(cb.messages.slice(2), ['ok']);
  await poll(async () => (await b.stats()).bus.ignored === 2, { what: 'two ignored' });
  // Another prefix is another application: nothing arrives.
  await redis.call('SPUBLISH', 'app2:prices', 'not ours');
  await a.publish('prices', 'last');
  await cb.waitFor(4);
  assert.deepEqual(cb.messages.slice(3), ['last']);
});

test('a paused Redis cannot grow memory past maxBuffer: publishes past it are dropped and counted', async (t) => {
  const redis = await startRedis({ t });
  const maxBuffer = 64 * 1024;
  const [a] = await upNodes(redis, 1, { maxBuffer });
  await redis.call('CLIENT', 'PAUSE', '1500', 'ALL');
  const payload = 'x'.repeat(2000);
  for (let i = 0; i < 500; i++) await a.publish('slow', payload);
  const during = (await a.stats()).bus;
  assert.ok(during.bufferedBytes <= maxBuffer, `${during.bufferedBytes} bytes buffered`);
  assert.ok(during.dropped > 0);
  await poll(async () => {
    const s = (await a.stats()).bus;
    return s.bufferedBytes === 0 && s.published + s.dropped === 500;
  }, { what: 'every accepted publish acknowledged after the pause', timeoutMs: 10000 });
});

test('close() ends the bus: its connections leave Redis', async (t) => {
  const redis = await startRedis({ t });
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, bus: { url: redis.url } });
  const states = [];
  server.bus.on('state', (s) => states.push(s));
  await server.listen();
  await new Promise((resolve) => server.bus.once('up', resolve));
  assert.equal(server.bus.state, 'up');
  const clients = async () => (await redis.cli('CLIENT', 'LIST')).split('\n').filter((l) => /name=symphony-bus-/.test(l)).length;
  assert.equal(await clients(), 2);
  assert.match(server.metrics(), /^symphony_bus_up 1$/m);
  assert.match(server.metrics(), /^symphony_bus_published_total 0$/m);
  server.publish('t', 'last words');
  await server.close();
  await poll(async () => (await clients()) === 0, { what: 'the bus connections closed' });
  assert.deepEqual(states, ['up']);
  assert.equal(server.stats(), null);
});

test('bad bus options: a TypeError or RangeError naming the option, at new Server', () => {
  const bad = [
    [{ url: 'http://x' }, /options\.bus\.url.*redis:\/\//],
    [{ url: 'rediss://h:1', tls: false }, /options\.bus\.tls.*rediss/],
    [{ url: 'redis://h:1', tls: { cert: 'x' } }, /options\.bus\.tls.*cert and key/],
    [{ url: 'redis://h:1', tls: { verify: true } }, /options\.bus\.tls\.verify/],
    [{ url: 'redis://h:1', tls: { ca: 5 } }, /options\.bus\.tls\.ca/],
    [{ url: ['redis://a:1', 'rediss://b:2'] }, /options\.bus\.url.*mixes/],
    [{ url: 'not a url' }, /options\.bus\.url/],
    [{ url: 'redis://h:1/notadb' }, /options\.bus\.url.*database/],
    [{ url: 'redis://user@h:1' }, /options\.bus\.url.*password/],
    [{ url: ['redis://a:1', 'redis://b:2'], cluster: false }, /options\.bus\.url.*cluster/],
    [{ url: [] }, /options\.bus\.url/],
    [{}, /options\.bus\.url/],
    [{ url: 'redis://h:1', prefix: 3 }, /options\.bus\.prefix/],
    [{ url: 'redis://h:1', prefix: 'a{b}' }, /options\.bus\.prefix/],
    [{ url: 'redis://h:1', maxBuffer: -1 }, /options\.bus\.maxBuffer/],
    [{ url: 'redis://h:1', backoff: { min: 10, max: 5 } }, /options\.bus\.backoff\.max/],
    [{ url: 'redis://h:1', backoff: { jitter: 1 } }, /options\.bus\.backoff\.jitter/],
    [{ url: 'redis://h:1', nope: 1 }, /options\.bus\.nope/],
    [{ url: 'redis://h:1', connectTimeout: 0 }, /options\.bus\.connectTimeout/],
    [{ url: 'redis://h:1', cluster: 'yes' }, /options\.bus\.cluster/],
    [{ url: 'redis://h:1', prefix: 'x'.repeat(257) }, /options\.bus\.prefix/],
    [{ url: 'redis://h:1', tls: { servername: 5 } }, /options\.bus\.tls\.servername/],
    [{ url: 'redis://h:1', tls: { rejectUnauthorized: 'no' } }, /options\.bus\.tls\.rejectUnauthorized/],
    ['redis://h:1', /options\.bus/],
  ];
  for (const [opts, re] of bad) {
    assert.throws(() => new Server({ bus: opts }), (err) => (err instanceof TypeError || err instanceof RangeError) && re.test(err.message),
      JSON.stringify(opts));
  }
  const s = new Server({ bus: { url: 'redis://u:p%40ss@127.0.0.1:7/2' } });
  assert.equal(s.bus.state, 'connecting');
  assert.deepEqual(s.bus.options.seeds, [{ host: '127.0.0.1', port: 7 }]);
  assert.equal(JSON.stringify(s.bus.options).includes('p@ss'), false, 'no password in options');
  assert.equal(s.bus.options.url, 'redis://u:***@127.0.0.1:7/2');
  assert.throws(() => new Server({ bus: { url: 'rediss://127.0.0.1:7', tls: { ca: 'not a certificate' } } }),
    (err) => err.name === 'SymphonyTlsError' && err.code === 'ERR_SYMPHONY_TLS' && /options\.bus\.tls: ca: no PEM certificate/.test(err.message));
  assert.throws(() => s.publish('t', 'x', { local: 1 }), /options\.local/);
  return s.close();
});

test('Redis down at listen(): the server serves locally and connects in the background', async (t) => {
  const redis = await startRedis({ t });
  await redis.kill9();
  const node = await startNode(bus(redis));
  await node.waitBus('down', 5000);
  const c = await connectClient(node.port, ['t']);
  await node.publish('t', 'local');
  await c.waitFor(1);
  await redis.restart();
  await node.waitBus('up', 5000);
  await poll(async () => (await numSub(redis, 'symphony:t')) === 1, { what: 'subscribed once up' });
});

test('npm start with REDIS_URL: two nodes of one bus, a client of one reaches a client of the other', async (t) => {
  const { spawn } = require('node:child_process');
  const path = require('node:path');
  const WebSocket = require('ws');
  const redis = await startRedis({ t });
  const start = () => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'examples', 'server.js')], {
      env: { ...process.env, HOST: '127.0.0.1', PORT: '0', THREADS: '1', REDIS_URL: redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => child.kill('SIGKILL'));
    let out = '';
    let port = null;
    const timer = setTimeout(() => reject(new Error(`the demo did not come up:\n${out}`)), 10000);
    child.stdout.on('data', (d) => {
      out += d;
      port ??= Number(/page on http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[1]) || null;
      if (port && /bus up/.test(out)) {
        clearTimeout(timer);
        resolve(port);
      }
    });
    child.stderr.on('data', (d) => { out += d; });
  });
  const [p1, p2] = await Promise.all([start(), start()]);
  const open = (port) => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?topic=room`);
    ws.messages = [];
    ws.on('message', (m) => ws.messages.push(m.toString()));
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
  const c1 = await open(p1);
  const c2 = await open(p2);
  await poll(async () => (await numSub(redis, 'symphony:room')) === 2, { what: 'both nodes subscribed' });
  await poll(() => c2.messages.length >= 1, { what: 'the welcome' });
  assert.match(c2.messages[0], new RegExp(`welcome to room on the node at port ${p2}`));
  c1.send('hello from node 1');
  await poll(() => c2.messages.includes('hello from node 1'), { what: 'the message across the bus' });
  await poll(() => c1.messages.includes('hello from node 1'), { what: 'the message on its own node' });
  c1.close();
  c2.close();
});

test('rediss://: the bus over TLS on the private OpenSSL (a client certificate when Redis asks; a wrong CA or name: down)', async (t) => {
  const path = require('node:path');
  const { pki } = require('../helpers/pki');
  const { freePort } = require('../helpers/redis');
  const k = pki();
  // Strings: the options travel to the node processes as JSON.
  const p = { dir: k.dir, ca: k.ca.toString(), client: { cert: k.client.cert.toString(), key: k.client.key.toString() } };
  const tlsPort = await freePort();
  const redis = await startRedis({
    t,
    args: ['--tls-port', String(tlsPort), '--tls-cert-file', path.join(p.dir, 'a.pem'), '--tls-key-file', path.join(p.dir, 'a.key'),
      '--tls-ca-cert-file', path.join(p.dir, 'ca.pem'), '--tls-auth-clients', 'optional'],
  });
  const url = `rediss://127.0.0.1:${tlsPort}`;
  const opts = { bus: { url, tls: { ca: p.ca }, backoff: { min: 50, max: 300 } } };
  const [a, b] = [await startNode(opts), await startNode(opts)];
  await a.waitBus('up', 5000);
  await b.waitBus('up', 5000);
  const cb = await connectClient(b.port, ['secure']);
  await poll(async () => (await numSub(redis, 'symphony:secure')) === 1, { what: 'subscribed over TLS' });
  await a.publish('secure', 'over tls');
  await cb.waitFor(1);
  assert.deepEqual(cb.messages, ['over tls']);
  const clients = (await redis.cli('CLIENT', 'LIST')).split('\n').filter((l) => /name=symphony-bus-/.test(l));
  assert.equal(clients.length, 4);
  // A client certificate, for a Redis that requires one.
  await redis.call('CONFIG', 'SET', 'tls-auth-clients', 'yes');
  const mutual = await startNode({ bus: { url, tls: { ca: p.ca, cert: p.client.cert, key: p.client.key } } });
  await mutual.waitBus('up', 5000);
  const without = await startNode({ bus: { url, tls: { ca: p.ca }, backoff: { min: 50, max: 300 } } });
  await without.waitBus('down', 5000);
  // Node's public roots do not know our test CA; a name the certificate does not have.
  const stranger = await startNode({ bus: { url, tls: { cert: p.client.cert, key: p.client.key } } });
  await stranger.waitBus('down', 5000);
  assert.match(stranger.busEvents.find((e) => e.state === 'down').error.message, /certificate verify failed/);
  const misnamed = await startNode({ bus: { url, tls: { ca: p.ca, cert: p.client.cert, key: p.client.key, servername: 'elsewhere.test' } } });
  await misnamed.waitBus('down', 5000);
  assert.match(misnamed.busEvents.find((e) => e.state === 'down').error.message, /certificate verify failed/);
  // And without checking (rejectUnauthorized: false), as Node's own option.
  const lax = await startNode({ bus: { url, tls: { rejectUnauthorized: false, cert: p.client.cert, key: p.client.key } } });
  await lax.waitBus('up', 5000);
});
