'use strict';
// examples/two-nodes: its one command (server.js: redis-server, two nodes,
// haproxy with haproxy.cfg) on free loopback ports. Through HAProxy: two
// clients land on the two nodes, each node sees the client's own address
// (the PROXY protocol), what one writes on the wall reaches the other
// across Redis, and when one node stops, its client reconnects through
// HAProxy to the other node and resumes with nothing missed and nothing
// twice. Fails (does not skip) when haproxy or redis-server is missing:
// .ci/run installs both.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { SymphonyClient } = require('symphony-ws/client');
const { freePort } = require('../helpers/redis');
const { start, once } = require('./run');

const T = { timeout: 30000 };
const NAMES = ['LB_PORT', 'REDIS_PORT', 'A_WS_PORT', 'B_WS_PORT', 'A_WEB_PORT', 'B_WEB_PORT'];

test('two nodes behind HAProxy: PROXY protocol, one wall across Redis, failover with nothing missed', T, async (t) => {
  const env = {};
  for (const name of NAMES) env[name] = String(await freePort());
  const ex = await start(t, 'examples/two-nodes/server.js', { env, ready: /open http:\/\/127\.0\.0\.1:(\d+)\//m, ms: 15000 });
  // Every process it started, killed by its PID should it not stop them itself.
  const pids = Object.fromEntries([...ex.output().matchAll(/^(redis|node a|node b|haproxy): pid (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
  assert.deepEqual(Object.keys(pids).sort(), ['haproxy', 'node a', 'node b', 'redis']);
  t.after(async () => {
    await ex.exited; // start()'s own t.after (SIGTERM to server.js) runs first
    for (const pid of Object.values(pids)) try { process.kill(pid, 'SIGKILL'); } catch {}
  });
  const lb = `127.0.0.1:${env.LB_PORT}`;

  // The page, from a node's HTTP port through HAProxy.
  const page = await fetch(`http://${lb}/`);
  assert.match(await page.text(), /<title>symphony: two nodes behind HAProxy<\/title>/);

  // Two plain WebSockets: round robin puts them on both nodes; each node
  // sees the client's own port (the PROXY header), not HAProxy's.
  const hellos = [];
  for (let i = 0; i < 2; i++) {
    const ws = new WebSocket(`ws://${lb}/ws`);
    t.after(() => ws.terminate());
    const [data] = await once(ws, 'message', { what: 'a node\'s welcome' });
    const hello = JSON.parse(data);
    assert.equal(hello.client, `127.0.0.1:${ws._socket.localPort}`, 'the client\'s address, from the PROXY header');
    assert.notEqual(hello.via, hello.client, 'the TCP peer is HAProxy');
    hellos.push(hello.node);
    ws.close();
  }
  assert.deepEqual(hellos.sort(), ['a', 'b']);

  // Two clients of the library, one on each node (the next two in the round).
  const clients = [];
  for (let i = 0; i < 2; i++) {
    const c = new SymphonyClient(`ws://${lb}/ws`, { WebSocket, backoff: { min: 20, max: 200 } });
    t.after(() => c.close());
    c.wall = [];
    c.on('message', (topic, data, { offset }) => {
      if (topic === null) c.node = JSON.parse(data).node;
      else c.wall.push([offset, data]);
    });
    await once(c, 'message', { pred: (topic) => topic === null, what: 'a welcome' });
    clients.push(c);
  }
  const [x, y] = clients;
  assert.notEqual(x.node, y.node, 'one on each node');
  const subscribers = await x.request('count');
  assert.deepEqual(subscribers, { node: x.node, subscribers: 2 });

  // What x writes, y gets across Redis, with Redis' offsets.
  const got = once(y, 'message', { pred: (topic, data) => data === 'hello from x', what: 'x\'s message on y' });
  await x.publish('wall', 'hello from x');
  const [, , info] = await got;
  assert.ok(info.offset >= 1);
  // x has its own message too before its node stops. Each client first
  // subscribed in its node's own epoch (Redis had nothing of the wall): the
  // first message, in Redis' epoch, came after a notice that moved it there
  // ('recovered', since 0). That notice is behind us only once x has the
  // message; the 'recovered' awaited below must be the resume's.
  if (!x.wall.some(([, d]) => d === 'hello from x')) {
    await once(x, 'message', { pred: (topic, data) => data === 'hello from x', what: 'x\'s own message' });
  }

  // x's node stops; x reconnects through HAProxy to y's node and resumes
  // there, while y keeps writing.
  const moved = once(x, 'message', { pred: (topic, data) => topic === null && JSON.parse(data).node === y.node, ms: 10000, what: 'x welcomed by the other node' });
  const recovered = once(x, 'recovered', { ms: 10000, what: 'x to resume' });
  process.kill(pids[`node ${x.node}`], 'SIGTERM');
  for (let i = 0; i < 20; i++) await y.publish('wall', `y ${i}`);
  await moved;
  const [topic, ok, { reason }] = await recovered;
  assert.deepEqual([topic, ok, reason], ['wall', true, undefined]);
  for (const c of [x, y]) {
    if (!c.wall.some(([, d]) => d === 'y 19')) await once(c, 'message', { pred: (topic, data) => data === 'y 19', what: 'y\'s last message' });
  }
  assert.deepEqual(x.wall, y.wall, 'the same wall, offsets and all, on both');
  const offsets = x.wall.map(([o]) => o);
  assert.deepEqual(offsets, offsets.map((_, i) => offsets[0] + i), 'no gap, no duplicate');
});
