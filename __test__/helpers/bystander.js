'use strict';
// A bystander for the limit suites (protocol/limits, protocol/ratelimit): a
// healthy ws client on the same IO thread as the attackers, which must
// still be served while they attack. Every wait is bounded and waits for
// the event.
const assert = require('node:assert/strict');
const { allocator } = require('../..');
const { client, nextMessage } = require('./server');
const { waitFor } = require('./raw');

/** What symphony holds: allocated less jemalloc's thread caches (as __test__/memory reads it). */
const held = () => { const a = allocator.stats(); return a.allocated - a.cached; };

/** A ws client subscribed to `topic` on server (at url); resolves { ws, id }. */
async function bystander(server, url, topic) {
  const ids = [];
  const onOpen = (id) => ids.push(id);
  server.on('open', onOpen);
  const ws = await client(url);
  await waitFor(() => ids.length > 0, 5000, 'the bystander\'s open event');
  server.off('open', onOpen);
  server.subscribe(ids[0], topic);
  return { ws, id: ids[0] };
}

/** The bystander receives a publish to topic (bounded: 5 s); resolves how
 * long it took in ms, for the log. */
async function served(server, by, topic, what) {
  const t0 = process.hrtime.bigint();
  const text = `tick ${t0}`;
  const got = nextMessage(by.ws);
  server.publish(topic, text);
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: the bystander got no publish within 5 s`)), 5000); });
  const m = await Promise.race([got, late]).finally(() => clearTimeout(timer));
  assert.equal(m.data.toString(), text);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

module.exports = { held, bystander, served };
