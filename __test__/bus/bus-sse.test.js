'use strict';
// Event streams across nodes (docs/sse.md, "Several nodes"): a stream's
// POSTs may land on any node (no sticky sessions); a node that does not
// hold the stream forwards them over the bus' control channel to the one
// that does, and answers 202 once Redis took them, so POSTs sent one after
// another reach the stream's 'message' handler in order, whichever nodes
// they went through. A real redis-server, two servers with a bus.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { once } = require('node:events');
const { Server } = require('../..');
const { startRedis, numSub } = require('../helpers/redis');
const { waitFor } = require('../helpers/raw');
const { openStream, streamName, post } = require('../helpers/sse');
const { HoldProxy } = require('../helpers/fault-proxy');

const servers = [];
test.afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

// The nodes' control channel (docs/bus.md): forwarded POSTs travel on it.
// A bus is 'up' once connected; its subscription there follows a moment
// later, and what is published before reaches nobody.
const CTL = Buffer.concat([Buffer.from('symphony:'), Buffer.from([0xff]), Buffer.from('nodes')]);
const onControlChannel = (redis, n) => waitFor(async () => (await numSub(redis, CTL)) === n, 10000, `${n} nodes on the control channel`);

/** A POST through agent: { status, socket }. */
function keptPost(agent, port, name, body) {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, method: 'POST', agent, path: `/?sy.stream=${name}` }, (res) => {
      const { socket } = res;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, socket }));
    });
    r.once('error', reject);
    r.end(body);
  });
}

async function node(options) {
  const s = new Server({ host: '127.0.0.1', port: 0, threads: 2, ...options });
  servers.push(s);
  const { port } = await s.listen();
  if (options.bus && s.bus.state !== 'up') await once(s.bus, 'up');
  return { s, port };
}

test('POSTs for a stream land on either node and reach it in order; a forged name, or a closed stream\'s, reaches nobody (410 from its own node); without a bus 404', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  const bus = { url: redis.url, backoff: { min: 50, max: 300 } };
  const a = await node({ bus, onUpgrade: () => ({ topics: ['t'] }) });
  const b = await node({ bus });
  const alone = await node({});
  await onControlChannel(redis, 2);
  const got = [];
  a.s.on('message', (id, data) => got.push(String(data)));
  b.s.on('message', () => assert.fail('node b has no stream'));
  const stream = await openStream(a.port);
  const name = await streamName(stream);
  // 40 POSTs, each after the last one's answer, to a, b, b, a, ...
  const sent = [];
  for (let i = 0; i < 40; i++) {
    const port = [a.port, b.port, b.port, a.port][i % 4];
    const r = await post(port, name, `m${i}`);
    assert.equal(r.status, 202, `POST ${i} to ${port === a.port ? 'a' : 'b'}: ${r.body}`);
    sent.push(`m${i}`);
  }
  await waitFor(() => got.length === 40, 10000, '40 messages on node a');
  assert.deepEqual(got, sent);
  assert.equal(a.s.stats().ssePosts, 40);
  // A client that keeps its connection (HTTP/1.1 keep-alive) keeps it
  // through forwarded POSTs too: two on one socket to b, then to a.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set();
  for (const [port, m] of [[b.port, 'kept 1'], [b.port, 'kept 2'], [a.port, 'kept 3'], [a.port, 'kept 4']]) {
    const res = await keptPost(agent, port, name, m);
    assert.equal(res.status, 202, m);
    sockets.add(res.socket);
  }
  agent.destroy();
  assert.equal(sockets.size, 2, 'one socket per node');
  await waitFor(() => got.length === 44, 10000, 'the kept POSTs\' messages');
  assert.deepEqual(got.slice(40), ['kept 1', 'kept 2', 'kept 3', 'kept 4']);
  got.splice(40);
  // A name with a's tag and a wrong MAC: b cannot tell (it forwards, 202);
  // a drops it. One more real one shows nothing came in between.
  const forged = `${name.slice(0, 79)}${name[79] === '0' ? '1' : '0'}`;
  assert.equal((await post(b.port, forged, 'forged')).status, 202);
  assert.equal((await post(b.port, name, 'after')).status, 202);
  await waitFor(() => got.length === 41, 10000, 'the message after the forged one');
  assert.equal(got[40], 'after');
  // A node without a bus answers 404 for a stream it does not hold.
  assert.equal((await post(alone.port, name, 'lost')).status, 404);
  // Once the stream has closed: its node answers 410; the other forwards
  // (it cannot tell, 202) and the stream's node drops it.
  const closed = once(a.s, 'close');
  stream.close();
  await closed;
  const late = await post(a.port, name, 'late');
  assert.equal(late.status, 410);
  assert.match(late.body, /the event stream has closed/);
  assert.equal((await post(b.port, name, 'late')).status, 202);
  // A new stream's POST through b after it arrives, and nothing else: the
  // late one went over the same control channel before it, to a stream
  // whose serial no longer names anything.
  const stream2 = await openStream(a.port);
  const name2 = await streamName(stream2);
  assert.notEqual(name2, name);
  assert.equal((await post(b.port, name2, 'next stream')).status, 202);
  await waitFor(() => got.length === 42, 10000, 'the new stream\'s message');
  assert.deepEqual(got.slice(40), ['after', 'next stream']);
  stream2.close();
});

test('a POST straight to the stream\'s node waits for one another node forwarded before it, however late Redis is to that node (a fence on the control channel); with its bus down it is delivered at once', { timeout: 60000 }, async (t) => {
  const redis = await startRedis({ t });
  // Node a reads Redis through a proxy that can hold what Redis sends it.
  const proxy = new HoldProxy(redis.port);
  await proxy.start();
  t.after(() => proxy.close());
  const backoff = { min: 50, max: 300 };
  const a = await node({ bus: { url: `redis://127.0.0.1:${proxy.port}`, backoff }, onUpgrade: () => ({ topics: ['t'] }) });
  const b = await node({ bus: { url: redis.url, backoff } });
  await onControlChannel(redis, 2);
  const got = [];
  a.s.on('message', (id, data) => got.push(String(data)));
  const stream = await openStream(a.port);
  const name = await streamName(stream);
  proxy.hold();
  // Redis took it (202), and sent it to a: it waits in the proxy.
  assert.equal((await post(b.port, name, 'forwarded')).status, 202);
  proxy.mark();
  const direct = post(a.port, name, 'direct');
  const first = await Promise.race([proxy.sentText('PING').then(() => 'fence'), direct.then(() => 'answer')]);
  assert.equal(first, 'fence', 'node a answered the direct POST before the forwarded one could arrive');
  assert.deepEqual(got, []);
  proxy.release();
  assert.equal((await direct).status, 202);
  await waitFor(() => got.length === 2, 10000, 'both messages on node a');
  assert.deepEqual(got, ['forwarded', 'direct']);
  assert.equal(a.s.stats().ssePosts, 2);
  // Node a's bus down: nothing forwarded before can still come (Redis
  // pub/sub does not replay), so a POST to a is delivered, not refused.
  const down = once(a.s.bus, 'down');
  proxy.close();
  await down;
  assert.equal((await post(a.port, name, 'bus down')).status, 202);
  await waitFor(() => got.length === 3, 10000, 'the third message on node a');
  assert.deepEqual(got, ['forwarded', 'direct', 'bus down']);
  stream.close();
});
