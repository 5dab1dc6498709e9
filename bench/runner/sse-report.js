'use strict';
// The sse phase's results: a section of report.md (the fan-out table, the
// ratios against the issue's goals, the parked memory of both transports,
// the method) and two bar charts, sse-cpu-per-1M.svg and
// sse-parked-bytes.svg. Called by run.js after a run (and by --rebuild)
// when the sse phase ran; report.md has been written just before.

const fs = require('node:fs');
const path = require('node:path');
const { summarize, fmt, fmtRange, finite } = require('./util');
const { barChart } = require('./svg');

const ARMS = ['sse-symphony', 'sse-symphony-ws', 'sse-node', 'sse-better'];
const LABEL = {
  'sse-symphony': 'symphony, SSE',
  'sse-symphony-ws': 'symphony, WebSocket',
  'sse-node': 'node:http SSE hub',
  'sse-better': 'better-sse',
};
const COLOR = { 'sse-symphony': '#1f77b4', 'sse-symphony-ws': '#17becf', 'sse-node': '#d62728', 'sse-better': '#ff7f0e' };

const FAN_ROWS = [
  ['connections (open in the window)', (f) => f.connections, 0],
  ['offered deliveries/s', (f) => f.offeredPerS, 0],
  ['delivered msg/s', (f) => f.msgsPerS, 0],
  ['delivered %', (f) => f.deliveredPct, 1],
  ['**server CPU-s per 1M delivered**', (f) => f.cpuSPer1M, 2],
  ['server cores', (f) => f.serverCores, 2],
  ['of the server\'s CPU, user space (%)', (f) => f.userSharePct, 0],
  ['due-time latency p50 (ms)', (f) => f.p50ms, 1],
  ['p99 (ms)', (f) => f.p99ms, 1],
  ['p99.9 (ms)', (f) => f.p999ms, 1],
  ['loadgen CPU (% of its core)', (f) => f.loadgenCpuPct, 0],
  ['messages checked (size, bytes; whole run)', (f) => f.checked, 0],
  ['lost: deliveries the server reported − received (whole run, after the drain)', (f) => f.lost, 0],
  ['drain: window end → an interval with no message (s)', (f) => f.drainS, 1],
  ['sequence gaps / duplicates + out of order / bad payloads', null, 0],
  ['server RSS at the window\'s end (MiB)', (f) => (finite(f.rssKiB) ? f.rssKiB / 1024 : null), 1],
  ['connections failed', (f) => f.failed, 0],
];

const MEM_ROWS = [
  ['parked connections', (m) => m.n, 0],
  ['idle footprint (MiB)', (m) => m.idleKiB / 1024, 1],
  ['parked footprint (MiB)', (m) => m.levels[m.levels.length - 1].fpKiB / 1024, 1],
  ['**B/conn over idle**', (m) => m.bytesPerConnOverIdle, 0],
  ['B/conn marginal (level 1 → 2)', (m) => m.bytesPerConnMarginal, 0],
  ['symphony allocator B/conn', (m) => m.allocBytesPerConn, 0],
  ['V8 heap B/conn', (m) => m.heapBytesPerConn, 0],
  ['connections failed', (m) => m.failed, 0],
];

function values(runs, arm, f) {
  return runs.filter((r) => r.arm === arm && r.figures).sort((a, b) => a.repeat - b.repeat).map((r) => {
    try {
      const v = f(r.figures, r);
      return typeof v === 'number' && Number.isFinite(v) ? v : null;
    } catch {
      return null;
    }
  });
}

function cell(runs, arm, f, digits) {
  if (!runs.some((r) => r.arm === arm && r.figures)) return '–';
  return fmtRange(summarize(values(runs, arm, f)), digits);
}

const med = (runs, arm, f) => summarize(values(runs, arm, f)).median;

/** A ratio of medians a ÷ b, and the per-repeat ratios' range (repeat k of a ÷ repeat k of b). */
function ratio(runs, a, b, f) {
  const x = med(runs, a, f);
  const y = med(runs, b, f);
  const va = values(runs, a, f);
  const vb = values(runs, b, f);
  const pairs = va.map((v, i) => (finite(v) && finite(vb[i]) && vb[i] !== 0 ? v / vb[i] : null)).filter((v) => v !== null);
  return { ratio: finite(x) && finite(y) && y !== 0 ? x / y : null, pairs: pairs.length ? summarize(pairs) : null };
}

function build(res) {
  const runs = res.runs.filter((r) => r.phase === 'sse');
  if (!runs.length) return null;
  const arms = ARMS.filter((a) => runs.some((r) => r.arm === a));
  const charts = {};
  const lines = ['', '## sse: event streams (SSE) against WebSocket and Node\'s SSE servers', ''];
  for (const r of runs.filter((x) => x.error)) lines.push(`- **${r.arm}** (repeat ${r.repeat}) failed: ${r.error}`);
  const f0 = (runs.find((r) => r.figures) || {}).figures;
  const cfg = res.meta.cfg && res.meta.cfg.sse;
  if (f0 && cfg) {
    lines.push(`Fan-out: ${fmt(cfg.connections)} connections over ${f0.topics} topics (${fmt(cfg.connections / f0.topics)} subscribers a topic), `
      + `${f0.size} B of text per message, ${fmt(f0.rate)} messages/s per topic (${fmt(cfg.connections * f0.rate)} deliveries/s offered); `
      + `server pinned to CPU ${res.meta.cpus && res.meta.cpus.server ? res.meta.cpus.server : 'any'} with ${res.meta.cfg.cpuThreads} IO thread(s) `
      + `(symphony), loadgen on CPU ${res.meta.cpus && res.meta.cpus.loadgen ? res.meta.cpus.loadgen : 'any'}; a ${fmt(cfg.window)} s window after `
      + `${fmt(cfg.settle)} s of traffic. Medians over ${res.meta.repeats} repeat(s) (min–max).`, '');
  }
  lines.push(`| figure | ${arms.map((a) => `${a} (${LABEL[a]})`).join(' | ')} |`, `| --- | ${arms.map(() => '--:').join(' | ')} |`);
  for (const [name, f, d] of FAN_ROWS) {
    if (f) {
      lines.push(`| ${name} | ${arms.map((a) => cell(runs, a, f, d)).join(' | ')} |`);
    } else {
      const tot = (a, k) => values(runs, a, (x) => x[k]).reduce((s, v) => s + (v || 0), 0);
      lines.push(`| ${name} | ${arms.map((a) => `${fmt(tot(a, 'gaps'))} / ${fmt(tot(a, 'dups') + tot(a, 'back'))} / ${fmt(tot(a, 'badPayloads'))}`).join(' | ')} |`);
    }
  }
  lines.push(`| the machine's load average (1 min) at the run's start | ${arms.map((a) => cell(runs, a, (_, r) => r.loadavg, 2)).join(' | ')} |`);

  const cpu = (f) => f.cpuSPer1M;
  const overIdle = (f) => (f.memory ? f.memory.bytesPerConnOverIdle : null);
  const marginal = (f) => (f.memory ? f.memory.bytesPerConnMarginal : null);
  const T = [
    { name: 'SSE ÷ WebSocket, server CPU per delivered message (symphony)', a: 'sse-symphony', b: 'sse-symphony-ws', f: cpu, goal: '≤ 1.2x', ok: (x) => x <= 1.2 },
    { name: 'node:http SSE hub ÷ symphony SSE, server CPU per delivered message', a: 'sse-node', b: 'sse-symphony', f: cpu, goal: '≥ 3x', ok: (x) => x >= 3 },
    { name: 'better-sse ÷ symphony SSE, server CPU per delivered message', a: 'sse-better', b: 'sse-symphony', f: cpu, goal: null },
    { name: 'parked memory, SSE ÷ WebSocket, B/conn over idle (symphony)', a: 'sse-symphony', b: 'sse-symphony-ws', f: overIdle, goal: null },
    { name: 'parked memory, SSE ÷ WebSocket, B/conn marginal (symphony)', a: 'sse-symphony', b: 'sse-symphony-ws', f: marginal, goal: null },
  ];
  const targets = [];
  lines.push('', '**Ratios** (of the medians; per repeat: repeat k ÷ repeat k, min–max):', '',
    '| ratio | medians | per repeat | goal | |', '| --- | --: | --: | --: | --- |');
  for (const t of T) {
    if (!arms.includes(t.a) || !arms.includes(t.b)) continue;
    const r = ratio(runs, t.a, t.b, t.f);
    const result = r.ratio === null ? 'n/a' : t.goal ? (t.ok(r.ratio) ? 'MET' : 'MISSED') : 'info';
    targets.push({ name: t.name, ratio: r.ratio, pairs: r.pairs, goal: t.goal, result });
    lines.push(`| ${t.name} | ${r.ratio === null ? '–' : `${fmt(r.ratio, 2)}x`} | ${r.pairs && r.pairs.n > 1 ? `${fmtRange(r.pairs, 2)}` : '–'} | ${t.goal || ''} | ${result} |`);
  }
  res.sseTargets = targets;
  const bars = arms.map((a) => {
    const s = summarize(values(runs, a, cpu));
    return { name: LABEL[a], value: s.median, min: s.min, max: s.max, color: COLOR[a] };
  });
  charts['sse-cpu-per-1M.svg'] = barChart({
    title: `Fan-out: server CPU-s per 1M delivered (${f0 ? `${fmt(f0.connections)} conns, ${f0.size} B, ${fmt(f0.offeredPerS)}/s offered` : ''})`,
    yLabel: 'server CPU-s per 1M delivered',
    width: 860,
    groups: [{ label: 'CPU-s per 1M delivered (lower is better)', bars }],
    note: 'server pinned to one CPU, loadgen on the other; medians, whiskers min–max over repeats',
  });
  lines.push('', '![server CPU per 1M delivered](sse-cpu-per-1M.svg)');

  const memArms = arms.filter((a) => runs.some((r) => r.arm === a && r.figures && r.figures.memory));
  if (memArms.length) {
    const m0 = runs.find((r) => r.figures && r.figures.memory).figures.memory;
    lines.push('', '### Parked connections: SSE against WebSocket', '',
      `A fresh symphony server per run (${res.meta.cfg.threads} IO threads), idle, then ${fmt(m0.levels[0].target)} and ${fmt(m0.levels[m0.levels.length - 1].target)} `
        + 'parked connections (no traffic): footprint = VmRSS + VmSwap, the median of each level\'s last seconds.', '',
      `| figure | ${memArms.map((a) => `${a} (${LABEL[a]})`).join(' | ')} |`, `| --- | ${memArms.map(() => '--:').join(' | ')} |`);
    for (const [name, f, d] of MEM_ROWS) lines.push(`| ${name} | ${memArms.map((a) => cell(runs, a, (x) => (x.memory ? f(x.memory) : null), d)).join(' | ')} |`);
    const group = (label, f) => ({ label, bars: memArms.map((a) => {
      const s = summarize(values(runs, a, f));
      return { name: LABEL[a], value: s.median, min: s.min, max: s.max, color: COLOR[a] };
    }) });
    charts['sse-parked-bytes.svg'] = barChart({ title: 'Bytes per parked connection, SSE and WebSocket (symphony)', yLabel: 'bytes per connection',
      groups: [group('over idle', overIdle), group('marginal', marginal)], note: 'medians, whiskers min–max over repeats' });
    lines.push('', '![bytes per parked connection](sse-parked-bytes.svg)');
  }
  lines.push('', '### Method', '',
    '- One server script, `bench/servers/sse-server.js`, three implementations (`BENCH_SSE_IMPL`): symphony (its `onUpgrade` answers '
      + '`{ topics: [t<n % 10>] }` for the n-th connection whatever its transport, so `sse-symphony` and `sse-symphony-ws` are the same '
      + 'server with SSE or WebSocket clients; `server.topic(t).publish(text)`), a node:http hub as Node users write one (a Map of topic → '
      + 'Set of res, `res.write()` per subscriber per message, chunked) and better-sse (a session per request, a Channel per topic, '
      + '`channel.broadcast({ ts, seq, p }, topic)`: its JSON serializer per session, a random UUID id per broadcast, as shipped).',
    '- Every message is the same 256 B of text, `{"ts":T,"seq":S,"p":"xx…x"}` (T: the due time, for due-time latency; S: the topic\'s '
      + 'sequence number). loadgen (`bench/out/loadgen`, C, epoll) speaks SSE with an `http://` URL: a GET with `Accept: text/event-stream`, '
      + 'the body close-delimited or chunked, an event a message when its data starts with `{"ts":`; it checks every message\'s size and '
      + 'bytes (`--check-size`) and the sequence per connection (`--seq`).',
    '- The servers start at rate 0; once every connection is open the runner sets the rate (`ctl rate`), waits the settle, and marks the '
      + 'window\'s edges in loadgen (SIGUSR1), in /proc (the server\'s utime + stime) and in the server (`ctl mark`). **Lost** compares the '
      + 'deliveries the server\'s publish calls reported over the whole run with the messages loadgen received, after a drain at rate 0 '
      + '(marks every 0.5 s until one brings no message: a server that fell behind still writes its queue; – when it did not finish).');
  return { md: lines.join('\n'), charts };
}

/** Adds the sse section to dir/report.md (before its gates) and writes the charts. */
function writeSse(dir, res) {
  const b = build(res);
  if (!b) return null;
  const file = path.join(dir, 'report.md');
  let md = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const at = md.indexOf('\n## Gates');
  md = at >= 0 ? `${md.slice(0, at)}${b.md}\n${md.slice(at)}` : `${md}${b.md}\n`;
  fs.writeFileSync(file, md);
  for (const [name, svg] of Object.entries(b.charts)) fs.writeFileSync(path.join(dir, name), svg);
  return { file, targets: res.sseTargets || [] };
}

module.exports = { writeSse, build };
