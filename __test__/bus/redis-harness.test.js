'use strict';
// The test harness for the Redis bus (issue 12), tested on its own against
// real Redis (Debian's redis-server and redis-cli): a standalone server
// (password, kill -9 and a restart on the same port), a 3-primary +
// 3-replica cluster (slots, a slot migration, a manual failover, a kill -9
// failover, a restart), the Redis behaviour the bus relies on (sharded
// subscribers told `sunsubscribe` when their slot leaves their node), and
// the multi-process node runner (bus-node.js / bus-nodes.js) without a bus.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { startRedis, startCluster, stopAll, numSub, slotOf, crc16, parseClusterNodes } = require('../helpers/redis');
const { startNode, connectClient, closeAll } = require('../helpers/bus-nodes');

test.after(closeAll);
test.after(stopAll);

function gone(pid) {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
}

test('standalone: loopback, no persistence, SSUBSCRIBE/SPUBLISH, SHARDNUMSUB, stop', async (t) => {
  const redis = await startRedis({ t });
  assert.equal(redis.url, `redis://127.0.0.1:${redis.port}`);
  assert.equal(await redis.cli('PING'), 'PONG');
  assert.deepEqual(await redis.call('CONFIG', 'GET', 'save'), ['save', '']);
  assert.deepEqual(await redis.call('CONFIG', 'GET', 'appendonly'), ['appendonly', 'no']);
  assert.deepEqual(await redis.call('CONFIG', 'GET', 'bind'), ['bind', '127.0.0.1']);
  await assert.rejects(redis.cli('NOSUCHCOMMAND'), /unknown command/);

  const sub = await redis.client(); // RESP3: HELLO 3
  assert.deepEqual((await sub.call('SSUBSCRIBE', 'symphony:a', 'symphony:b')).map((p) => [...p]),
    [['ssubscribe', 'symphony:a', 1], ['ssubscribe', 'symphony:b', 2]]);
  assert.equal(await numSub(redis, 'symphony:a'), 1);
  assert.equal(await numSub(redis, 'symphony:none'), 0);
  assert.equal(await redis.cli('SPUBLISH', 'symphony:a', 'hello from redis-cli'), '1');
  const m = await sub.waitPush((p) => p[0] === 'smessage', 5000, 'the smessage');
  assert.deepEqual([...m], ['smessage', 'symphony:a', 'hello from redis-cli']);
  await sub.call('SUNSUBSCRIBE', 'symphony:a');
  assert.equal(await numSub(redis, 'symphony:a'), 0);

  const bin = await redis.client({ buffers: true });
  await bin.call('SSUBSCRIBE', 'symphony:bin');
  const payload = Buffer.from([0xf5, 0x01, 0, 1, 2, 3, 4, 5, 6, 7, 0xff, 0x00]);
  assert.equal(await redis.call('SPUBLISH', 'symphony:bin', payload), 1);
  const b = await bin.waitPush((p) => String(p[0]) === 'smessage', 5000, 'the binary smessage');
  assert.deepEqual(b[2], payload);

  const { pid, dir } = redis;
  await redis.stop();
  await redis.stop(); // idempotent
  assert.ok(gone(pid), `redis-server pid ${pid} still runs after stop()`);
  assert.equal(fs.existsSync(dir), false);
  await sub.closed;
});

test('standalone: a password', async (t) => {
  const redis = await startRedis({ password: 's3cret pass', t });
  assert.equal(redis.url, `redis://:s3cret%20pass@127.0.0.1:${redis.port}`);
  assert.equal(await redis.cli('PING'), 'PONG');
  const anon = await redis.client({ resp3: false, password: undefined });
  await assert.rejects(anon.call('PING'), (err) => err.code === 'NOAUTH');
  anon.close();
  await assert.rejects(redis.client({ password: 'wrong' }), (err) => err.code === 'WRONGPASS');
  const sub = await redis.client();
  await sub.call('SSUBSCRIBE', 'symphony:p');
  assert.equal(await numSub(redis, 'symphony:p'), 1);
});

test('standalone: kill -9 and a restart on the same port', async (t) => {
  const redis = await startRedis({ t });
  const { port, pid } = redis;
  const sub = await redis.client();
  await sub.call('SSUBSCRIBE', 'symphony:k');
  await redis.call('SET', 'k', 'v');
  await redis.kill9();
  assert.ok(gone(pid));
  assert.equal(redis.alive, false);
  await sub.closed;
  await assert.rejects(redis.call('PING'), /ECONNREFUSED|closed/);

  await redis.restart();
  assert.equal(redis.port, port);
  assert.notEqual(redis.pid, pid);
  assert.equal(await redis.cli('PING'), 'PONG');
  assert.equal(await redis.call('GET', 'k'), null); // persistence off: nothing came back
  assert.equal(await numSub(redis, 'symphony:k'), 0);
  const again = await redis.client();
  await again.call('SSUBSCRIBE', 'symphony:k');
  assert.equal(await redis.cli('SPUBLISH', 'symphony:k', 'after restart'), '1');
  await again.waitPush((p) => p[0] === 'smessage' && p[2] === 'after restart');
});

test('slotOf: CRC16-XMODEM with hash tags, as CLUSTER KEYSLOT says', async (t) => {
  assert.equal(crc16(Buffer.from('123456789')), 0x31c3); // the check value of CRC-16/XMODEM
  const cluster = await startCluster({ primaries: 3, replicas: 1, t });
  t.diagnostic(`nodes: ${cluster.nodes.map((n) => `${n.port} ${n.role}${n.primaryPort ? `<${n.primaryPort}` : ''}`).join(', ')}`);
  assert.equal(cluster.nodes.length, 6);
  assert.equal(cluster.primaries.length, 3);
  assert.equal(cluster.urls.length, 6);
  const keys = [
    'foo', 'bar', 'symphony:news', 'symphony:{room}', '{user1000}.following', '{user1000}.followers',
    'foo{}{bar}', 'foo{{bar}}zap', 'foo{bar}{zap}', '{}', '{', '}{x}', 'x{', 'héllo wörld', '',
    Buffer.from([0xf5, 0x00, 0xff, 0x7b, 0x61, 0x7d]),
  ];
  for (const key of keys) {
    const expected = await cluster.call(cluster.nodes[0].port, 'CLUSTER', 'KEYSLOT', key);
    assert.equal(slotOf(key), expected, `slotOf(${JSON.stringify(String(key))})`);
  }
  assert.equal(slotOf('{user1000}.following'), slotOf('{user1000}.followers'));
  assert.equal(slotOf('foo'), 12182);
  await cluster.stop();
});

test('cluster: 3 primaries + 3 replicas, a slot migration, a failover, kill -9 and a restart', async (t) => {
  const cluster = await startCluster({ primaries: 3, replicas: 1, t });
  const channel = 'symphony:moving';
  const slot = slotOf(channel);
  const from = await cluster.primaryForSlot(slot);
  const replicaOfFrom = cluster.nodes.find((n) => n.primaryPort === from).port;
  const to = cluster.primaries.find((p) => p !== from);

  // Sharded subscribers on the owner and on its replica; a key in the slot.
  const onPrimary = await cluster.client(from);
  await onPrimary.call('SSUBSCRIBE', channel, '{symphony:moving}2');
  const onReplica = await cluster.client(replicaOfFrom);
  await onReplica.call('SSUBSCRIBE', channel);
  await assert.rejects(cluster.call(to, 'SSUBSCRIBE', channel), (err) => err.code === 'MOVED');
  await cluster.call(from, 'SET', '{symphony:moving}key', 'v');
  assert.equal(await cluster.shardNumSub(channel), 1);
  assert.equal(await cluster.call(from, 'SPUBLISH', channel, 'before'), 1);
  await onReplica.waitPush((p) => p[0] === 'smessage' && p[2] === 'before', 5000, 'a publish on the primary, on its replica');

  // Migration: every node agrees on the new owner; the key went along; the
  // subscribers of the old shard are told `sunsubscribe` (one per channel).
  const t0 = Date.now();
  assert.deepEqual(await cluster.migrateSlot(slot, to), { from, to });
  t.diagnostic(`migrateSlot ${slot} ${from} -> ${to}: ${Date.now() - t0} ms`);
  for (const n of cluster.nodes) {
    const view = parseClusterNodes(await cluster.call(n.port, 'CLUSTER', 'NODES'));
    const owner = view.find((x) => x.role === 'primary' && x.slots.some(([a, b]) => slot >= a && slot <= b));
    assert.equal(owner.port, to, `node ${n.port} sees ${owner.port} own slot ${slot}`);
  }
  assert.equal(await cluster.primaryForSlot(slot), to);
  assert.equal(await cluster.call(to, 'GET', '{symphony:moving}key'), 'v');
  await assert.rejects(cluster.call(from, 'SPUBLISH', channel, 'x'), (err) => err.code === 'MOVED' && err.message.endsWith(`:${to}`));
  const unsub = await onPrimary.waitPush((p) => p[0] === 'sunsubscribe' && p[2] === 0, 5000, 'sunsubscribe on the old primary');
  const told = onPrimary.pushes.filter((p) => p[0] === 'sunsubscribe');
  assert.deepEqual(told.map((p) => p[1]).sort(), ['symphony:moving', '{symphony:moving}2'].sort());
  assert.deepEqual(told.map((p) => p[2]), [1, 0]); // the count left, as SUNSUBSCRIBE's own replies say
  assert.ok(!onPrimary.isClosed, 'the subscriber connection stays open');
  t.diagnostic(`sunsubscribe reached the old primary's subscriber ${unsub.at - t0} ms after the migration began`);
  await onReplica.waitPush((p) => p[0] === 'sunsubscribe' && p[1] === channel, 5000, 'sunsubscribe on the old replica');
  assert.equal(await cluster.shardNumSub(channel), 0);

  // Manual failover of the new owner: its replica takes over, every node agrees.
  const sub = await cluster.client(to);
  await sub.call('SSUBSCRIBE', channel);
  const promoted = cluster.nodes.find((n) => n.primaryPort === to).port;
  const subOnPromoted = await cluster.client(promoted);
  await subOnPromoted.call('SSUBSCRIBE', channel);
  const t1 = Date.now();
  assert.deepEqual(await cluster.failover(to), { primary: promoted, replica: to });
  t.diagnostic(`CLUSTER FAILOVER: ${Date.now() - t1} ms until every node agreed`);
  assert.equal(await cluster.primaryForSlot(slot), promoted);
  assert.equal(cluster.nodes.find((n) => n.port === to).role, 'replica');
  assert.equal(cluster.nodes.find((n) => n.port === to).primaryPort, promoted);
  // The demoted primary's subscriber is told sunsubscribe; the promoted
  // replica's subscriber is told nothing and goes on receiving.
  await sub.waitPush((p) => p[0] === 'sunsubscribe', 5000, 'sunsubscribe on the demoted primary');
  await cluster.call(promoted, 'SPUBLISH', channel, 'after failover');
  await subOnPromoted.waitPush((p) => p[0] === 'smessage' && p[2] === 'after failover');
  assert.deepEqual(subOnPromoted.pushes.map((p) => p[0]), ['ssubscribe', 'smessage']);

  // kill -9 of that primary: its replica (the old one) is promoted.
  const t2 = Date.now();
  assert.deepEqual(await cluster.killNode(promoted), { primary: to });
  t.diagnostic(`kill -9 of a primary (node timeout ${cluster.nodeTimeout} ms): ${Date.now() - t2} ms until every node agreed on its replica`);
  await subOnPromoted.closed;
  assert.equal(await cluster.primaryForSlot(slot), to);
  assert.equal(await cluster.call(to, 'GET', '{symphony:moving}key'), 'v');
  assert.equal(cluster.urls.length, 5);

  // And back: the killed node returns as a replica of the one that replaced it.
  await cluster.restartNode(promoted);
  assert.equal(cluster.urls.length, 6);
  const back = cluster.nodes.find((n) => n.port === promoted);
  assert.equal(back.role, 'replica');
  assert.equal(back.primaryPort, to);

  const pids = cluster.nodes.map((n) => n.proc.child.pid);
  await cluster.stop();
  for (const pid of pids) assert.ok(gone(pid), `cluster node pid ${pid} still runs after stop()`);
  assert.equal(fs.existsSync(cluster.base), false);
});

test('bus nodes without a bus: a local publish reaches the ws clients of its own node only', async () => {
  const [a, b] = await Promise.all([startNode(), startNode()]);
  assert.equal(a.busState, null); // no bus configured
  const onA = await connectClient(a.port, ['news', 'a,b']);
  const onAOther = await connectClient(a.port, ['other']);
  const onB = await connectClient(b.port, ['news']);

  assert.equal(await a.publish('news', 'one'), 1);
  assert.equal(await a.publish('news', 'two', { local: true }), 1);
  assert.equal(await a.publish('a,b', Buffer.from([0xf5, 0, 1])), 1);
  assert.equal(await b.publish('news', 'on b'), 1);
  assert.equal(await a.publish('nobody', 'x'), 0);
  assert.deepEqual(await onA.waitFor(3), ['one', 'two', '\uFFFD\u0000\u0001']);
  assert.deepEqual(onA.frames.map((f) => f.binary), [false, false, true]);
  assert.deepEqual(onA.frames[2].data, Buffer.from([0xf5, 0, 1]));
  assert.deepEqual(await onB.waitFor(1), ['on b']);
  await assert.rejects(a.publish('', 'x'), (err) => err.code === 'ERR_OUT_OF_RANGE');

  const stats = await a.stats();
  assert.equal(typeof stats, 'object');
  assert.deepEqual(onAOther.messages, []);
  await onA.closeAndWait();

  assert.deepEqual(await a.close(), { code: 0, signal: null });
  assert.ok(gone(a.pid));
  const killed = await b.kill9();
  assert.equal(killed.signal, 'SIGKILL');
  await assert.rejects(b.publish('news', 'x'), /exited/);
});
