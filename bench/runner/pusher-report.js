'use strict';
// The pusher phases' results (issue 45): pusher.md in the results folder,
// one table per phase (median (min–max) over repeats, per arm), and the
// issue's goals as ratios of medians, symphony-pusher against soketi:
// CPU per delivered message ≤ 0.5x, memory per subscribed idle connection
// ≤ 0.5x, HTTP publishes per server CPU-second ≥ 3x; the presence storm is
// reported beside them (no goal). Called by run.js after a run (and by
// --rebuild) when a pusher phase ran.

const fs = require('node:fs');
const path = require('node:path');
const { summarize, fmt, fmtRange, finite } = require('./util');

const ARMS = ['symphony-pusher', 'soketi'];

const TABLES = {
  'pusher-fanout': {
    title: 'Fan-out: channels × subscribers, events through the HTTP API',
    rows: [
      ['subscribers (all subscribed before publishing)', (f) => f.subscribers, 0],
      ['events/s per channel × 256 B', (f) => f.rate, 1],
      ['publishes accepted/s (HTTP API)', (f) => f.publishesPerS, 0],
      ['delivered msg/s', (f) => f.msgsPerS, 0],
      ['delivered %', (f) => f.deliveredPct, 1],
      ['**server CPU per delivered message (µs)**', (f) => f.cpuUsPerMsg, 3],
      ['server cores', (f) => f.serverCores, 2],
      ['of the server\'s CPU, user space (%)', (f) => f.userSharePct, 0],
      ['due-time latency p50 (ms)', (f) => f.p50ms, 1],
      ['p99 (ms)', (f) => f.p99ms, 1],
      ['lost: owed by the accepted publishes − received (after the drain)', (f) => f.lost, 0],
      ['gaps / duplicates + out of order / bad payloads', (f) => (f.gaps || 0) + (f.dups || 0) + (f.back || 0) + (f.badPayloads || 0), 0],
      ['publishes failed', (f) => f.publishFailed, 0],
      ['publishes dropped by the publisher (due > 1 s ago: it could not keep the rate)', (f) => f.publisherLate, 0],
      ['loadgen CPU (% of its core)', (f) => f.loadgenCpuPct, 0],
    ],
  },
  'pusher-idle': {
    title: 'Memory per subscribed idle connection',
    rows: [
      ['subscribed connections', (f) => f.n, 0],
      ['server idle, no connection (MiB)', (f) => (finite(f.idleKiB) ? f.idleKiB / 1024 : null), 1],
      ['**bytes per connection over idle**', (f) => f.bytesPerConnOverIdle, 0],
      ['bytes per connection, marginal (second half)', (f) => f.bytesPerConnMarginal, 0],
      ['subscribe errors', (f) => f.subscribeErrors, 0],
    ],
  },
  'pusher-http': {
    title: 'HTTP API publishes, closed loop',
    rows: [
      ['publishes accepted', (f) => f.publishes, 0],
      ['publishes/s (wall)', (f) => f.publishesPerS, 0],
      ['**publishes per server CPU-second**', (f) => f.publishesPerCpuS, 0],
      ['server CPU per publish (µs)', (f) => f.cpuUsPerPublish, 1],
      ['server cores', (f) => f.serverCores, 2],
      ['TCP connections per publish (the server closing after an answer)', (f) => f.connectsPerPublish, 2],
      ['publishes failed', (f) => f.failed, 0],
    ],
  },
  'pusher-presence': {
    title: 'Presence join storm',
    rows: [
      ['joins (subscription_succeeded)', (f) => f.joins, 0],
      ['member_added received / expected', null, 0],
      ['**time to settle (s)**', (f) => f.settleS, 2],
      ['joins/s', (f) => f.joinsPerS, 0],
      ['**server CPU (s)**', (f) => f.serverCpuS, 2],
      ['server CPU per join (µs)', (f) => f.cpuUsPerJoin, 1],
      ['server CPU per member_added delivered (µs)', (f) => f.cpuUsPerMemberAdded, 2],
      ['errors', (f) => f.errors, 0],
    ],
  },
};

const GOALS = [
  { phase: 'pusher-fanout', name: 'server CPU per delivered message, symphony ÷ Soketi', get: (f) => f.cpuUsPerMsg, goal: 0.5, dir: 'le' },
  { phase: 'pusher-idle', name: 'memory per subscribed idle connection, symphony ÷ Soketi', get: (f) => f.bytesPerConnOverIdle, goal: 0.5, dir: 'le' },
  { phase: 'pusher-http', name: 'HTTP publishes per server CPU-second, symphony ÷ Soketi', get: (f) => f.publishesPerCpuS, goal: 3, dir: 'ge' },
  { phase: 'pusher-presence', name: 'presence join storm: server CPU, symphony ÷ Soketi', get: (f) => f.serverCpuS, goal: null },
  { phase: 'pusher-presence', name: 'presence join storm: time to settle, symphony ÷ Soketi', get: (f) => f.settleS, goal: null },
];

function writePusher(dir, res) {
  const runs = res.runs.filter((r) => r.phase && r.phase.startsWith('pusher-'));
  if (runs.length === 0) return null;
  const of = (phase, arm) => runs.filter((r) => r.phase === phase && r.arm === arm);
  const lines = ['# Pusher protocol v7: symphony against Soketi (issue 45)', '',
    `Command: \`${res.meta.command}\` (${res.meta.date}, ${res.meta.preset} preset, ${res.meta.repeats} repeat(s)).`,
    `Machine: ${res.meta.machine.cpu}, ${res.meta.machine.nproc} CPUs, Node ${res.meta.machine.node}. Pinning: ${res.meta.pinningNote}.`, ''];
  const arms = ARMS.filter((a) => runs.some((r) => r.arm === a));
  for (const [phase, t] of Object.entries(TABLES)) {
    if (!runs.some((r) => r.phase === phase)) continue;
    lines.push(`## ${phase}: ${t.title}`, '');
    const unavailable = arms.map((a) => of(phase, a).find((r) => r.figures && r.figures.unavailable)).filter(Boolean);
    for (const u of unavailable) lines.push(`- ${u.arm}: **not available yet**: ${u.figures.unavailable}`);
    const failed = arms.flatMap((a) => of(phase, a).filter((r) => r.error));
    for (const r of failed) lines.push(`- ${r.arm} repeat ${r.repeat}: **failed**: ${r.error}`);
    if (unavailable.length || failed.length) lines.push('');
    lines.push(`| | ${arms.join(' | ')} |`, `| --- |${arms.map(() => ' ---: |').join('')}`);
    for (const [label, get, digits] of t.rows) {
      const cells = arms.map((a) => {
        const fs2 = of(phase, a).map((r) => r.figures).filter((f) => f && !f.unavailable);
        if (!fs2.length) return '–';
        if (get === null) return fs2.map((f) => `${fmt(f.memberAdded)} / ${fmt(f.expectAdded)}`).join(', ');
        return fmtRange(summarize(fs2.map(get)), digits);
      });
      lines.push(`| ${label} | ${cells.join(' | ')} |`);
    }
    lines.push('');
  }
  const targets = [];
  for (const g of GOALS) {
    if (!runs.some((r) => r.phase === g.phase)) continue;
    const m = (arm) => summarize(of(g.phase, arm).map((r) => r.figures).filter((f) => f && !f.unavailable).map(g.get)).median;
    const a = m('symphony-pusher');
    const b = m('soketi');
    const ratio = finite(a) && finite(b) && b !== 0 ? a / b : null;
    const result = ratio === null ? 'n/a' : g.goal === null ? 'report' : (g.dir === 'le' ? ratio <= g.goal : ratio >= g.goal) ? 'PASS' : 'FAIL';
    const goal = g.goal === null ? '' : ` (goal ${g.dir === 'le' ? '≤' : '≥'} ${g.goal}x)`;
    targets.push({ name: g.name, ratio, result, goal: g.goal,
      figures: `${ratio === null ? '–' : `${fmt(ratio, 2)}x`}${goal}; symphony ${fmt(a, 3)}, Soketi ${fmt(b, 3)}` });
  }
  lines.push('## The issue\'s goals (ratios of medians)', '', '| | ratio | result |', '| --- | ---: | --- |');
  for (const t of targets) lines.push(`| ${t.name} | ${t.figures} | ${t.result} |`);
  lines.push('', 'What each figure means: bench/README.md, "pusher (issue 45)".', '');
  const file = path.join(dir, 'pusher.md');
  fs.writeFileSync(file, lines.join('\n'));
  return { file, targets };
}

module.exports = { writePusher };
