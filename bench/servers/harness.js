'use strict';
// What the three servers under test share (fanout-server.js on symphony,
// ws-server.js on ws, uws-server.js on uWebSockets.js): the frame they run
// in, so all three are driven and measured the same way. serve() parses the
// command line (SPEC), then, once the script listens, publishes the
// schedule (createSchedule: due-time stamps, createPayloads: the bytes),
// writes the stats lines, answers the runner's control lines
// (handleControl) and stops after --duration or on SIGINT / SIGTERM with the
// final JSON line. The script brings only what differs: its server, how it
// publishes one message, its counters and how it closes.

const path = require('node:path');
const v8 = require('node:v8');

const SPEC = {
  port: { env: 'PORT', def: 0, min: 0, max: 65535 },
  threads: { env: 'THREADS', def: 2, min: 1, max: 64 },
  topics: { env: 'TOPICS', def: 1, min: 1, max: 1e6 },
  size: { env: 'SIZE', def: 256, min: 8, max: 1 << 24 },
  rate: { env: 'RATE', def: 100, min: 0, max: 1e7 },
  duration: { env: 'DURATION', def: 30, min: 0.1, max: 3600 },
  'max-backpressure': { env: 'MAX_BACKPRESSURE', def: 1 << 20, min: 1, max: 2 ** 40 },
  'stats-interval': { env: 'STATS_INTERVAL', def: 0, min: 0, max: 3600 },
  // binary: `size` bytes starting with the 8-byte due time; json: a ~630 B
  // trade message per topic (bench/servers/json-trade.js; `size` is ignored), text
  payload: { env: 'PAYLOAD', def: 'binary', values: ['binary', 'json'] },
  // fanout-server.js: symphony's slowConsumer policy (the slow phase's arms)
  'slow-consumer': { env: 'SLOW_CONSUMER', def: 'drop', values: ['drop', 'close', 'conflate'] },
  // fanout-server.js: connections from this one on (in open order, from 1)
  // subscribe to every topic instead of one (the slow phase's slow
  // clients); 0: none
  'all-topics-from': { env: 'ALL_TOPICS_FROM', def: 0, min: 0, max: 1e7 },
  // permessage-deflate: 1 = on (each server's way), with this threshold (B)
  deflate: { env: 'DEFLATE', def: 0, min: 0, max: 1 },
  threshold: { env: 'DEFLATE_THRESHOLD', def: 128, min: 0, max: 1 << 24 },
  // 1: each binary message carries, after its due time, a uint64 LE sequence
  // number per topic (bytes 8..15, from 1), for loadgen --seq
  seq: { env: 'SEQ', def: 0, min: 0, max: 1 },
  // 1: the topics take turns instead of publishing together: topic g's
  // message n is due at t0 + (n * topics + g + 1) / (rate * topics), so one
  // publish goes out every 1 / (rate * topics) s (the bus phase: a round of
  // every topic at once would make latency the queue of that round; the
  // publish phase: N topics x 1 subscriber, the 1 ms timer publishing
  // ~rate * topics / 1000 per tick)
  stagger: { env: 'STAGGER', def: 0, min: 0, max: 1 },
  // a Redis URL: the server is one node of a fan-out over Redis (the bus
  // phase; fanout-server.js: symphony's bus option; ws-server.js and
  // uws-server.js: the hand-built relay of redis-relay.js)
  'bus-url': { env: 'BUS_URL', def: '', string: true },
  // the channel prefix of the relay (symphony's own default, so both
  // kinds of node use the same channel names)
  'bus-prefix': { env: 'BUS_PREFIX', def: 'symphony:', string: true },
  // fanout-server.js: 1 publishes through topic handles (server.topic(name))
  // where the build has them; 0 through server.publish(name, ...)
  handles: { env: 'HANDLES', def: 1, min: 0, max: 1 },
  // fanout-server.js: history { size, ttl } on every topic (0: no history);
  // with --bus-url the offsets are Redis' (docs/bus.md, "History across nodes")
  'history-size': { env: 'HISTORY_SIZE', def: 0, min: 0, max: 1e7 },
  'history-ttl': { env: 'HISTORY_TTL', def: 60, min: 0, max: 86400 },
};
const FRACTIONAL = new Set(['rate', 'duration', 'stats-interval']);

function usageError(message) {
  return Object.assign(new Error(message), { usage: true });
}

/** Options from the environment, overridden by --name value / --name=value. */
function parseOptions(argv, env) {
  const o = {};
  for (const [name, s] of Object.entries(SPEC)) o[name] = env[s.env] !== undefined ? env[s.env] : s.def;
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m || !(m[1] in SPEC)) throw usageError(`unknown argument ${argv[i]}`);
    o[m[1]] = m[2] !== undefined ? m[2] : argv[++i];
  }
  for (const [name, s] of Object.entries(SPEC)) {
    if (s.string) {
      o[name] = String(o[name] ?? '');
      continue;
    }
    if (s.values) {
      if (!s.values.includes(o[name])) throw usageError(`--${name} must be one of ${s.values.join(', ')} (got ${o[name]})`);
      continue;
    }
    const v = Number(o[name]);
    const integer = !FRACTIONAL.has(name);
    if (!Number.isFinite(v) || v < s.min || v > s.max || (integer && !Number.isInteger(v))) {
      throw usageError(`--${name} must be ${integer ? 'an integer ' : ''}${s.min}..${s.max} (got ${o[name]})`);
    }
    o[name] = v;
  }
  if (o.seq && o.payload === 'binary' && o.size < 16) throw usageError('--seq 1 needs --size 16 or more (due time + sequence number)');
  if (o['bus-url'] && !/^rediss?:\/\//.test(o['bus-url'])) throw usageError(`--bus-url must be a redis:// URL (got ${o['bus-url']})`);
  return o;
}

/**
 * The offered rate, message by message. due() returns the due times (as
 * process.hrtime.bigint() values) of the messages per topic that have come
 * due since the last call, so that every tick publishes exactly what is due
 * whatever the timer's granularity. Message n is due at t0 + (n + 1) / rate,
 * and that time, not the time of the publish call, is what goes into its
 * payload: latency then counts any wait behind earlier messages, the same
 * way for a synchronous sender (ws) and an asynchronous one (symphony). A
 * stall of more than one second is not made up (that would be a burst, not
 * the offered rate): it is counted in `skipped`.
 *
 * setRate(r, atNs) changes the rate from now on: the schedule starts again
 * at this moment, or at atNs (a process.hrtime.bigint() value, so that
 * several processes can start together; never in the past): message n of
 * the new rate is due at start + (n + 1) / r, so a change is not a burst
 * either. `t0` stays the script's start.
 *
 * duePairs() returns [topicIndex, dueNs] of every message due since the last
 * call, in due order: without `stagger`, each due time of due() for every
 * topic in turn; with it, the topics take turns (see SPEC.stagger), one
 * message every 1 / (rate * topics) s (maxBatch and skipped then count
 * messages, not rounds). A script uses one of due() and duePairs().
 */
function createSchedule({ rate: rate0, topics, stagger }) {
  const t0 = process.hrtime.bigint();
  let base = t0; // the start of the current rate's schedule
  let rate = rate0;
  let events = 0; // stagger: messages due so far at the current rate
  const s = { t0, perTopic: 0, maxBatch: 0, skipped: 0, rate };
  s.setRate = (r, atNs = null) => {
    const t = process.hrtime.bigint();
    base = atNs !== null && atNs > t ? atNs : t;
    rate = r;
    s.rate = r;
    s.perTopic = 0;
    events = 0;
  };
  s.duePairs = () => {
    const out = [];
    if (!stagger) {
      for (const dueNs of s.due()) for (let g = 0; g < topics; g++) out.push([g, dueNs]);
      return out;
    }
    if (rate === 0) return out;
    const R = rate * topics; // messages per second, every topic together
    const elapsed = Number(process.hrtime.bigint() - base) / 1e9;
    if (elapsed < 0) return out; // setRate's start is still to come
    let due = Math.floor(elapsed * R) - events;
    if (due > R) {
      s.skipped += due - Math.ceil(R);
      events += due - Math.ceil(R);
      due = Math.ceil(R);
    }
    for (let k = 0; k < due; k++) {
      const m = events++;
      out.push([m % topics, base + BigInt(Math.round(((m + 1) * 1e9) / R))]);
    }
    if (due > s.maxBatch) s.maxBatch = due;
    return out;
  };
  s.due = () => {
    if (rate === 0) return [];
    const elapsed = Number(process.hrtime.bigint() - base) / 1e9;
    if (elapsed < 0) return [];
    let due = Math.floor(elapsed * rate) - s.perTopic;
    if (due > rate) {
      s.skipped += (due - Math.ceil(rate)) * topics;
      s.perTopic += due - Math.ceil(rate);
      due = Math.ceil(rate);
    }
    const out = [];
    for (let k = 0; k < due; k++) {
      out.push(base + BigInt(Math.round(((s.perTopic + 1) * 1e9) / rate)));
      s.perTopic++;
    }
    if (due > s.maxBatch) s.maxBatch = due;
    return out;
  };
  return s;
}

/**
 * The messages of one publish round: payloadFor(topicIndex, dueNs) returns
 * the bytes to publish and whether they are binary. Binary: `size` bytes of
 * 'a' starting with the due time (uint64 LE); a fresh Buffer each call when
 * `fresh` (a server that keeps the Buffer queued, like ws), else one buffer
 * rewritten (symphony and uWS copy it). With `seq`, bytes 8..15 are the
 * topic's sequence number (uint64 LE, from 1: one more each call for that
 * topic), and with `size` 20 or more bytes 16..19 the topic's index
 * (uint32 LE). JSON: the topic's trade feed.
 */
function createPayloads(o, fresh) {
  if (o.payload === 'json') {
    const { createTradeFeed } = require('./json-trade');
    const feeds = Array.from({ length: o.topics }, (_, g) => createTradeFeed(g));
    return { binary: false, payloadFor: (g, dueNs) => feeds[g].next(dueNs) };
  }
  const shared = Buffer.alloc(o.size, 0x61);
  const seqs = o.seq ? new Array(o.topics).fill(0n) : null;
  return {
    binary: true,
    // the last sequence number given per topic (null without --seq)
    seqs: () => (seqs ? seqs.map(Number) : null),
    payloadFor(g, dueNs) {
      const buf = fresh ? Buffer.allocUnsafe(o.size).fill(0x61) : shared;
      buf.writeBigUInt64LE(dueNs, 0);
      if (seqs) buf.writeBigUInt64LE(++seqs[g], 8);
      if (seqs && o.size >= 20) buf.writeUInt32LE(g, 16);
      return buf;
    },
  };
}

/**
 * The runner's control lines (traffic-gate.js hands them over as
 * process.emit('bench-control', word, args)): "rate R [AT]" sets the
 * publishing rate per topic (schedule.setRate; AT: the schedule's start, a
 * process.hrtime.bigint() value in decimal); "mark" answers with
 * counters(). Each
 * answer is one JSON line on stderr, {"ctl":word,"mono_ns":"...",...}
 * (mono_ns: process.hrtime.bigint() when it was handled, the clock loadgen
 * and the runner read).
 */
function handleControl(schedule, counters) {
  const reply = (word, body) => line({ ctl: word, mono_ns: String(process.hrtime.bigint()), ...body });
  process.on('bench-control', (word, args) => {
    if (word === 'rate') {
      const r = Number(args[0]);
      if (!Number.isFinite(r) || r < 0 || r > 1e7) return reply(word, { error: `bad rate ${args[0]}` });
      if (args[1] !== undefined && !/^\d+$/.test(args[1])) return reply(word, { error: `bad start ${args[1]}` });
      schedule.setRate(r, args[1] !== undefined ? BigInt(args[1]) : null);
      return reply(word, { rate: r, start: args[1] ?? null });
    }
    if (word === 'mark') return reply(word, counters());
    return reply(word, { error: `unknown control ${word}` });
  });
}


/** The symphony a script and the traffic gate load: BENCH_SYMPHONY_ROOT (a
 * baseline checkout: its lib/ and native builds), else this checkout. */
function symphonyRoot() {
  return path.resolve(process.env.BENCH_SYMPHONY_ROOT || path.join(__dirname, '..', '..'));
}

/** The peers' close(), as symphony's closeDeadline default: 1001 to every
 * client, then this long for their replies before the rest are dropped. */
const CLOSE_DEADLINE_MS = 2000;

/** One JSON line on stderr (stats, bus events, control answers). */
function line(obj) {
  process.stderr.write(`${JSON.stringify(obj)}\n`);
}

/** A change of the bus's state, at once: {"busEvent":...,"mono_ns":...,"error":...}. */
function busEvent(ev, error) {
  line({ busEvent: ev, mono_ns: String(process.hrtime.bigint()), error: error ?? null });
}

const kib = (n) => (n === null || n === undefined ? null : Math.round(n / 1024));

/**
 * The memory fields of the stats lines and of the final line: the process
 * (process.memoryUsage() reads /proc and throws EMFILE when the connections
 * have taken every file descriptor: then the RSS is null) and the
 * allocator's counters, `allocator` (symphony's, in bytes) or null for the
 * peers.
 */
function memoryKiB(allocator = null) {
  let m;
  try {
    m = process.memoryUsage();
  } catch {
    m = { rss: null, heapUsed: v8.getHeapStatistics().used_heap_size, external: null };
  }
  const a = allocator || {};
  return {
    rssKiB: kib(m.rss),
    heapUsedKiB: kib(m.heapUsed),
    externalKiB: kib(m.external),
    allocator: a.name ?? null,
    allocatedKiB: kib(a.allocated),
    activeKiB: kib(a.active),
    residentKiB: kib(a.resident),
    retainedKiB: kib(a.retained),
    ...(allocator ? { metadataKiB: kib(a.metadata), pagesKiB: kib(a.pages) } : {}),
  };
}

/** A peer's counters in the shape of symphony's server.stats(): what it
 * cannot tell is null (and there are no per-thread entries). */
function peerStats(counters) {
  return {
    connections: null, opened: null, closed: null, messagesIn: null, bytesIn: null, messagesOut: null, bytesOut: null,
    dropped: null, slowCloses: null, handshakeRejects: null, protocolErrors: null, timeouts: null, oomCloses: null,
    eventsLost: null, acceptRejects: null, topics: null, threads: null, bus: null, ...counters,
  };
}

/**
 * Runs a server under test. setup(o, run) gets the options and the run's
 * counters (run.published, run.deliveries: subscribers reached; a relay
 * adds to run.deliveries as messages come back from Redis) and resolves,
 * once the server listens, to what the script does its own way:
 *   publish(g, dueNs)  publish topic g's message due at dueNs; returns the
 *                      subscribers it reached (0 when it only went to Redis)
 *   statsLine()        the fields of a stats line (--stats-interval), or null
 *                      for no line this time
 *   mark()             the fields of the answer to "ctl mark" (published and
 *                      deliveries are added)
 *   stats()            the counters of the final line, taken before close
 *   close()            stop serving (async)
 *   report()           the final line's opened, subscribeFailed, closes
 *   memory()           the final line's memoryAfterClose
 *   extra()            (optional) more fields at the end of the final line
 *   exit               (optional) process.exit(0) after the final line (a
 *                      loop that does not end by itself)
 * Every tick (1 ms) publishes what the schedule says is due; the final line
 * on stdout is {reason, seconds, options, opened, subscribeFailed, closes,
 * published, publishedPerSecond, deliveries, maxBatchPerTopic, skipped,
 * stats, memoryAfterClose, ...extra()}. An error ends the process with
 * "name: message" (usage errors) or its stack, exit code 1.
 */
function serve(name, setup) {
  const fail = (err) => {
    process.stderr.write(`${name}: ${err && err.usage ? err.message : err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  };
  try {
    const o = parseOptions(process.argv.slice(2), process.env);
    const run = { published: 0, deliveries: 0 };
    setup(o, run).then((srv) => start(o, run, srv)).catch(fail);
  } catch (err) {
    fail(err);
  }
}

function start(o, run, srv) {
  const schedule = createSchedule(o);
  const t0 = schedule.t0;
  const secondsSince = () => Number(process.hrtime.bigint() - t0) / 1e9;
  let stopping = false;

  const timer = setInterval(() => {
    if (stopping) return;
    for (const [g, dueNs] of schedule.duePairs()) {
      run.deliveries += srv.publish(g, dueNs);
      run.published++;
    }
  }, 1);
  const sampler = o['stats-interval'] > 0 ? setInterval(() => {
    const fields = srv.statsLine();
    if (fields) line({ t: Math.round(secondsSince() * 10) / 10, ...fields });
  }, o['stats-interval'] * 1000) : null;
  handleControl(schedule, () => ({ published: run.published, deliveries: run.deliveries, ...srv.mark() }));

  async function stop(reason) {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    clearInterval(sampler);
    clearTimeout(deadline);
    const seconds = secondsSince();
    const stats = srv.stats();
    await srv.close();
    process.stdout.write(`${JSON.stringify({
      reason,
      seconds,
      options: o,
      ...srv.report(),
      published: run.published,
      publishedPerSecond: run.published / seconds,
      deliveries: run.deliveries,
      maxBatchPerTopic: schedule.maxBatch,
      skipped: schedule.skipped,
      stats,
      memoryAfterClose: srv.memory(),
      ...(srv.extra ? srv.extra() : {}),
    })}\n`);
    if (srv.exit) process.exit(0);
  }
  const deadline = setTimeout(() => stop('duration'), o.duration * 1000);
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

module.exports = {
  SPEC, parseOptions, createSchedule, createPayloads, handleControl, serve, symphonyRoot, CLOSE_DEADLINE_MS, line, busEvent,
  memoryKiB, peerStats,
};
