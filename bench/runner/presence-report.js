'use strict';
// The presence phase's results: presence.md beside report.md (one column per
// arm, medians and min–max over its repeats; the ratios of presence on to
// off). Called by run.js after a run (and by --rebuild) when the presence
// phase ran.

const fs = require('node:fs');
const path = require('node:path');
const { summarize, fmt, fmtRange } = require('./util');

const ARMS = ['sy-presence', 'sy-nopresence'];

/** A count each node reported (list), as the mean per node. */
const perNode = (list, nodes) => list && list.reduce((a, b) => a + b, 0) / nodes;

const ROWS = [
  ['**open**: connections/s (the last 101 read by the clients)', (f) => f.open.connectionsPerS, 0],
  ['open: joins/s heard by every node (N ÷ the last \'join\' event on the slowest node)', (f) => f.open.joinsPerS, 0],
  ['open: seconds to the last 101', (f) => f.open.clientSeconds, 2],
  ['open: seconds to the last join heard (slowest node)', (f) => f.open.allHeardSeconds, 2],
  ['open: nodes\' CPU per connection (µs, 3 nodes together)', (f) => f.open.nodesCpuUsPer, 1],
  ['open: Redis CPU per connection (µs, INFO cpu)', (f) => f.open.redisCpuUsPer, 1],
  ['open: Redis time per connection (µs, INFO commandstats: the nodes\' commands, a script whole)', (f) => f.open.redisUsecPer, 2],
  ['open: of it scripts (EVAL: the joins\' WRITE and the renewals) (µs)', (f) => f.open.scriptUsecPer, 2],
  ['open: script calls per join (a WRITE takes a turn\'s joins of a room)', (f) => f.open.scriptCallsPer, 3],
  ['open: joins heard again, per node (a room\'s entries written whole again and announced again)', (f) => perNode(f.open.dupJoinsHeard, f.nodes), 0],
  ['open: Redis used_memory per entry (B)', (f) => f.open.usedMemoryPerEntry, 0],
  ['open: presence keys\' MEMORY USAGE per entry (B)', (f) => f.open.presenceBytesPerEntry, 1],
  ['open: presence keys in Redis', (f) => f.open.presenceKeys, 0],
  ['open: clients\' CPU per connection (µs)', (f) => (f.open.clientsCpuS / f.connections) * 1e6, 1],
  ['**hold**: Redis time per second, renewals (µs/s)', (f) => f.hold.redisUsecPerS, 0],
  ['hold: script calls per second', (f) => f.hold.scriptsPerS, 1],
  ['hold: Redis CPU (%)', (f) => f.hold.redisCpuPct, 2],
  ['hold: nodes\' CPU (% of a core, 3 together)', (f) => f.hold.nodesCpuPct, 2],
  ['**query** server.presence(room), sequential: p50 (ms)', (f) => f.queries.presenceSeq?.p50Ms, 2],
  ['server.presence(room), sequential: p99 (ms)', (f) => f.queries.presenceSeq?.p99Ms, 2],
  ['server.presence(room), sequential: calls/s', (f) => f.queries.presenceSeq?.perS, 0],
  ['server.presence(room): Redis time per call (µs, renewals taken out)', (f) => f.queries.presenceSeq?.redisUsecPerCall, 1],
  ['server.presence(room): Redis CPU per call (µs)', (f) => f.queries.presenceSeq?.redisCpuUsPerCall, 1],
  ['server.presence(room): node 0 CPU per call (µs)', (f) => f.queries.presenceSeq?.node0CpuUsPerCall, 1],
  ['server.presence(room), 16 at once: calls/s', (f) => f.queries.presenceConc?.perS, 0],
  ['server.presence(room), 16 at once: p99 (ms)', (f) => f.queries.presenceConc?.p99Ms, 2],
  ['**query** server.bus.subscribers(room), sequential: p50 (ms)', (f) => f.queries.subscribers.p50Ms, 2],
  ['server.bus.subscribers(room): p99 (ms)', (f) => f.queries.subscribers.p99Ms, 2],
  ['server.bus.subscribers(room): calls/s', (f) => f.queries.subscribers.perS, 0],
  ['server.bus.subscribers(room): Redis time per call (µs, renewals taken out)', (f) => f.queries.subscribers.redisUsecPerCall, 1],
  ['server.bus.subscribers(room): Redis commands per call', (f) => f.queries.subscribers.redisCallsPerCall, 2],
  ['server.bus.subscribers(room): CPU of the 3 nodes per call (µs)', (f) => f.queries.subscribers.nodesCpuUsPerCall, 1],
  ['**close**: closes/s (the last \'close\' on the slowest node)', (f) => f.close.closesPerS, 0],
  ['close: leaves/s heard by every node', (f) => f.close.leavesPerS, 0],
  ['close: seconds to the last leave heard (slowest node)', (f) => f.close.allHeardSeconds, 2],
  ['close: nodes\' CPU per connection (µs)', (f) => f.close.nodesCpuUsPer, 1],
  ['close: Redis CPU per connection (µs)', (f) => f.close.redisCpuUsPer, 1],
  ['close: Redis time per connection (µs, the nodes\' commands)', (f) => f.close.redisUsecPer, 2],
  ['close: of it scripts (µs)', (f) => f.close.scriptUsecPer, 2],
  ['close: presence keys left in Redis', (f) => f.close.presenceKeysAfter, 0],
  ['close: leaves by expiry (must be 0)', (f) => f.close.expired, 0],
  ['joins never heard, per node (0: every node heard every join)', (f) => perNode(f.open.joinsMissing, f.nodes), 0],
  ['leaves never heard, per node (0: every node heard every leave)', (f) => perNode(f.close.leavesMissing, f.nodes), 0],
  ['close: leaves heard again, per node', (f) => perNode(f.close.dupLeavesHeard, f.nodes), 0],
  ['joins heard again by the end (hold, queries and close included), per node', (f) => perNode(f.close.dupJoinsHeard, f.nodes), 0],
];

function cell(runs, arm, f, digits) {
  return fmtRange(summarize(runs.filter((r) => r.arm === arm).map((r) => {
    try {
      const v = f(r.figures, r);
      return typeof v === 'number' ? v : null;
    } catch {
      return null;
    }
  })), digits);
}

function med(runs, arm, f) {
  return summarize(runs.filter((r) => r.arm === arm).map((r) => f(r.figures))).median;
}

function writePresence(dir, res) {
  const runs = res.runs.filter((r) => r.phase === 'presence' && r.figures);
  if (!runs.length) return null;
  const arms = ARMS.filter((a) => runs.some((r) => r.arm === a));
  const f0 = runs[0].figures;
  const lines = [
    '# presence: joins and leaves across nodes',
    '',
    `${fmt(f0.connections)} connections opened as fast as ${f0.clientProcs} client processes can (raw sockets, ${f0.pending} handshakes in flight each) `
      + `over ${f0.nodes} symphony nodes on one Redis (${f0.threads} IO thread each), connection i to node i % ${f0.nodes}, in room r<i % ${f0.rooms}> `
      + `(${fmt(f0.membersPerRoom)} members a room) with presence info {"user":"u<i>"} (≤ ${f0.infoBytes} B of JSON); presence ttl ${f0.ttl} ms. `
      + 'Then every connection held for the renewals, the queries from node 0, and every connection closed (a close frame each). '
      + 'Medians over the repeats (min–max). Everything shares the machine\'s CPUs (nodes, Redis and clients).',
    '',
    `| figure | ${arms.join(' | ')} |`,
    `| --- | ${arms.map(() => '--:').join(' | ')} |`,
  ];
  for (const [name, f, digits] of [...ROWS, ['the machine\'s load average (1 min) at the run\'s start', (_, r) => r.loadavg, 1]]) {
    lines.push(`| ${name} | ${arms.map((a) => cell(runs, a, f, digits)).join(' | ')} |`);
  }
  if (arms.length === 2) {
    const on = (f) => med(runs, 'sy-presence', f);
    const off = (f) => med(runs, 'sy-nopresence', f);
    const r = (a, b) => (a !== null && b ? a / b : null);
    lines.push('', '## Presence on vs off (medians)', '',
      '| figure | on | off | on ÷ off | on − off |', '| --- | --: | --: | --: | --: |');
    for (const [name, f, d] of [
      ['connections/s', (x) => x.open.connectionsPerS, 0],
      ['seconds to open everything (presence: until every node heard every join)', (x) => (x.presence ? x.open.allHeardSeconds : x.open.nodeOpensSeconds), 2],
      ['nodes\' CPU per open (µs)', (x) => x.open.nodesCpuUsPer, 1],
      ['Redis CPU per open (µs)', (x) => x.open.redisCpuUsPer, 1],
      ['closes/s', (x) => x.close.closesPerS, 0],
      ['seconds to close everything (presence: until every node heard every leave)', (x) => (x.presence ? x.close.allHeardSeconds : x.close.nodeClosesSeconds), 2],
      ['nodes\' CPU per close (µs)', (x) => x.close.nodesCpuUsPer, 1],
      ['Redis CPU per close (µs)', (x) => x.close.redisCpuUsPer, 1],
      ['server.bus.subscribers(room) p50 (ms)', (x) => x.queries.subscribers.p50Ms, 2],
    ]) {
      const a = on(f);
      const b = off(f);
      lines.push(`| ${name} | ${fmt(a, d)} | ${fmt(b, d)} | ${fmt(r(a, b), 2)} | ${a !== null && b !== null ? fmt(a - b, d) : '–'} |`);
    }
  }
  const first = runs.find((x) => x.arm === 'sy-presence');
  if (first) {
    const cmds = (c) => Object.entries(c || {}).sort((a, b) => b[1].usec - a[1].usec)
      .map(([k, v]) => `${k} ${fmt(v.calls)} calls, ${fmt(v.usec)} µs`).join('; ');
    lines.push('', '## Redis commands (sy-presence, first run)', '',
      'INFO commandstats between the ends of each step. The commands the scripts run (HSET, ZADD, PEXPIRE, TIME, ...) are counted '
        + 'on their own and again inside the EVAL that ran them; the figures above count the nodes\' commands only (a script whole).', '',
      `- open: ${cmds(first.figures.open.commands)}`,
      `- hold (${fmt(first.figures.hold.seconds, 1)} s): ${cmds(first.figures.hold.commands)}`,
      ...(first.figures.queries.presenceSeq ? [`- server.presence(room) × ${first.figures.queries.presenceSeq.calls}: ${cmds(first.figures.queries.presenceSeq.commands)}`] : []),
      `- server.bus.subscribers(room) × ${first.figures.queries.subscribers.calls}: ${cmds(first.figures.queries.subscribers.commands)}`,
      `- close: ${cmds(first.figures.close.commands)}`);
  }
  fs.writeFileSync(path.join(dir, 'presence.md'), `${lines.join('\n')}\n`);
  return path.join(dir, 'presence.md');
}

module.exports = { writePresence };
