'use strict';
// A fan-out server under test, on symphony's public API: every connection
// is subscribed to topic t<n % topics> when it opens; each topic gets `rate`
// binary messages per second of `size` bytes, each starting with the
// little-endian process.hrtime.bigint() time at which it was due (t0 + (n+1) /
// rate: the clock loadgen reads as CLOCK_MONOTONIC), so latency is due-time
// latency and includes any queueing behind earlier messages. Stops by itself after `duration` s.
//
//   node bench/fanout-server.js [--port 0] [--threads 2] [--topics 1]
//        [--size 256] [--rate 100] [--duration 30] [--max-backpressure B]
//        [--stats-interval 0]
//
// Each option can also come from the environment: PORT, THREADS, TOPICS,
// SIZE, RATE, DURATION, MAX_BACKPRESSURE, STATS_INTERVAL (the command line
// wins).
// stdout: {"port":N} once listening; on exit one JSON line with what was
// published, server.stats() (taken just before close) and memory (the
// process and symphony's allocator, after close).
// stderr, every --stats-interval seconds (0: never): one JSON line with open
// connections, messages out, RSS, the JS heap and the allocator's counters.

const v8 = require('node:v8');
const { Server, allocator } = require('..');

const SPEC = {
  port: { env: 'PORT', def: 0, min: 0, max: 65535 },
  threads: { env: 'THREADS', def: 2, min: 1, max: 64 },
  topics: { env: 'TOPICS', def: 1, min: 1, max: 1e6 },
  size: { env: 'SIZE', def: 256, min: 8, max: 1 << 24 },
  rate: { env: 'RATE', def: 100, min: 0, max: 1e7 },
  duration: { env: 'DURATION', def: 30, min: 0.1, max: 3600 },
  'max-backpressure': { env: 'MAX_BACKPRESSURE', def: 1 << 20, min: 1, max: 2 ** 40 },
  'stats-interval': { env: 'STATS_INTERVAL', def: 0, min: 0, max: 3600 },
};
const FRACTIONAL = new Set(['rate', 'duration', 'stats-interval']);

function usageError(message) {
  return Object.assign(new Error(message), { usage: true });
}

function parseOptions(argv, env) {
  const o = {};
  for (const [name, s] of Object.entries(SPEC)) o[name] = env[s.env] !== undefined ? env[s.env] : s.def;
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m || !(m[1] in SPEC)) throw usageError(`unknown argument ${argv[i]}`);
    o[m[1]] = m[2] !== undefined ? m[2] : argv[++i];
  }
  for (const [name, s] of Object.entries(SPEC)) {
    const v = Number(o[name]);
    const integer = !FRACTIONAL.has(name);
    if (!Number.isFinite(v) || v < s.min || v > s.max || (integer && !Number.isInteger(v))) {
      throw usageError(`--${name} must be ${integer ? 'an integer ' : ''}${s.min}..${s.max} (got ${o[name]})`);
    }
    o[name] = v;
  }
  return o;
}

async function main() {
  const o = parseOptions(process.argv.slice(2), process.env);
  const server = new Server({
    host: '127.0.0.1',
    port: o.port,
    threads: o.threads,
    maxBackpressure: o['max-backpressure'],
  });
  const topics = Array.from({ length: o.topics }, (_, g) => `t${g}`);
  let opened = 0;
  let subscribeFailed = 0;
  const closes = {};
  server.on('open', (id) => {
    if (!server.subscribe(id, topics[opened % o.topics])) subscribeFailed++;
    opened++;
  });
  server.on('close', (id, code) => {
    closes[code] = (closes[code] || 0) + 1;
  });

  const { port } = await server.listen();
  process.stdout.write(`${JSON.stringify({ port })}\n`);

  // One payload buffer, rewritten per message: publish() copies it.
  const payload = Buffer.alloc(o.size, 0x61);
  const t0 = process.hrtime.bigint();
  let perTopic = 0; // messages sent on each topic so far
  let published = 0;
  let deliveries = 0; // sum of publish() results: subscribers targeted
  let maxBatch = 0;
  let skipped = 0; // messages given up after a stall longer than 1 s
  let stopping = false;

  // Every tick publishes what is due by now, so the offered rate is exact
  // whatever the timer's granularity. A stall of more than one second is not
  // made up (it would be a burst, not the offered rate): it is counted.
  function publishDue() {
    if (stopping || o.rate === 0) return;
    const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
    let due = Math.floor(elapsed * o.rate) - perTopic;
    if (due > o.rate) {
      skipped += (due - Math.ceil(o.rate)) * o.topics;
      perTopic += due - Math.ceil(o.rate);
      due = Math.ceil(o.rate);
    }
    if (due <= 0) return;
    if (due > maxBatch) maxBatch = due;
    for (let k = 0; k < due; k++) {
      // The due time of this message (t0 + (n + 1) / rate), not the time of the
      // call: latency then counts any wait behind earlier publishes, the
      // same way for every server under test, synchronous or not.
      const dueNs = t0 + BigInt(Math.round(((perTopic + 1) * 1e9) / o.rate));
      for (const topic of topics) {
        payload.writeBigUInt64LE(dueNs, 0);
        deliveries += server.publish(topic, payload, { binary: true });
        published++;
      }
      perTopic++;
    }
  }
  const timer = setInterval(publishDue, 1);

  // process.memoryUsage() reads /proc and throws EMFILE when the
  // connections have taken every file descriptor: then the RSS is null.
  function memory() {
    let m;
    try {
      m = process.memoryUsage();
    } catch {
      m = { rss: null, heapUsed: v8.getHeapStatistics().used_heap_size, external: null };
    }
    const a = allocator.stats();
    const kib = (n) => (n === null || n === undefined ? null : Math.round(n / 1024));
    return {
      rssKiB: kib(m.rss),
      heapUsedKiB: kib(m.heapUsed),
      externalKiB: kib(m.external),
      allocator: allocator.name,
      allocatedKiB: kib(a.allocated),
      activeKiB: kib(a.active),
      residentKiB: kib(a.resident),
      retainedKiB: kib(a.retained),
    };
  }
  const sampler = o['stats-interval'] > 0 ? setInterval(() => {
    const st = server.stats();
    if (!st) return;
    const t = Number(process.hrtime.bigint() - t0) / 1e9;
    process.stderr.write(`${JSON.stringify({ t: Math.round(t * 10) / 10, connections: st.connections,
      messagesOut: st.messagesOut, dropped: st.dropped, ...memory() })}\n`);
  }, o['stats-interval'] * 1000) : null;

  async function stop(reason) {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    clearInterval(sampler);
    clearTimeout(deadline);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const stats = server.stats();
    await server.close();
    process.stdout.write(`${JSON.stringify({
      reason,
      seconds,
      options: o,
      opened,
      subscribeFailed,
      closes,
      published,
      publishedPerSecond: published / seconds,
      deliveries,
      maxBatchPerTopic: maxBatch,
      skipped,
      stats,
      memoryAfterClose: memory(),
    })}\n`);
  }
  const deadline = setTimeout(() => stop('duration'), o.duration * 1000);
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`fanout-server: ${err && err.usage ? err.message : err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
