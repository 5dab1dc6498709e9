'use strict';
// Event streams across nodes (docs/sse.md, "Several nodes"): a stream's
// POSTs may land on any node (no sticky sessions); a node that does not
// hold the stream forwards them over the bus' control channel to the one
// that does, and answers 202 once Redis took them, so POSTs sent one after
// another reach the stream's 'message' handler in order, whichever nodes
// they went through. A real redis-server, two servers with a bus.
const test = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const { Server } = require('../..');
const { startRedis } = require('../helpers/redis');
const { waitFor } = require('../helpers/raw');
const { openStream, streamName, post } = require('../helpers/sse');

const servers = [];
test.afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

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
