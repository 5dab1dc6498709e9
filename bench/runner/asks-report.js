'use strict';
// The asks phase's results: a section of report.md (the storm's table, the
// ratios to socket.io against the issue's goals, the round trips' table,
// the method) and two bar charts, asks-subscribes.svg and
// asks-round-trips.svg. Called by run.js after a run (and by --rebuild)
// when the asks phase ran; report.md has been written just before.

const fs = require('node:fs');
const path = require('node:path');
const { summarize, fmt, fmtRange } = require('./util');
const { barChart } = require('./svg');

const STORM_ARMS = ['asks-token', 'asks-hook', 'asks-socketio'];
const LABEL = { 'asks-token': 'symphony, tokens', 'asks-hook': 'symphony, onSubscribe', 'asks-socketio': 'socket.io 4.8 join' };
// The issue's goals: subscribes per server CPU-second, as a multiple of socket.io's.
const GOALS = [['asks-token', 10], ['asks-hook', 3]];

const STORM_ROWS = [
  ['subscribes asked (connections × per connection)', (f) => f.storm.asked, 0],
  ['answered: granted', (f) => f.storm.granted, 0],
  ['answered: refused', (f) => f.storm.refused, 0],
  ['**subscribes per second** (wall: first ask written → last answer read)', (f) => f.storm.subscribesPerS, 0],
  ['wall seconds, first ask → last answer', (f) => f.storm.wallS, 3],
  ['seconds to write every ask (the clients)', (f) => f.storm.sendS, 3],
  ['**server CPU per subscribe** (µs; utime + stime, /proc/<pid>/stat)', (f) => f.storm.serverCpuUsPerSub, 2],
  ['**subscribes per server CPU-second** (/proc)', (f) => f.storm.subsPerCpuS, 0],
  ['server CPU per subscribe, process.cpuUsage() (µs)', (f) => f.storm.cpuUsageUsPerSub, 2],
  ['subscribes per server CPU-second, process.cpuUsage()', (f) => f.storm.subsPerCpuUsageS, 0],
  ['server CPU per subscribe with the second after the last answer, idle taken out (µs)', (f) => f.storm.withTailUsPerSub, 2],
  ['server cores during the storm', (f) => f.storm.serverCores, 2],
  ['of the server\'s CPU, user space (%)', (f) => f.storm.userSharePct, 0],
  ['clients\' cores during the storm (all on one CPU: ≥ 0.9 means the clients were the limit of the wall rate)', (f) => f.storm.clientCores, 2],
  ['server RSS growth per subscription (B)', (f) => f.storm.rssBytesPerSub, 0],
  ['the JS thread\'s garbage collection in the timed part (ms; perf_hooks)', (f) => f.storm.gcMs, 0],
  ['of it major GCs (count)', (f) => f.storm.gcMajorCount, 0],
  ['V8 heap in use before the storm (MiB)', (f) => (f.storm.heapUsedKiB ?? NaN) / 1024, 1],
  ['server idle cores, every connection open (before the storm)', (f) => f.idleCores, 3],
  ['open (before the timed part): connections/s', (f) => f.open.perS, 0],
  ['open: server CPU per connection (µs)', (f) => f.open.serverCpuUsPerConn, 1],
  ['open: server RSS per connection (B)', (f) => f.open.rssBytesPerConn, 0],
];

const RT = [
  ['asks-rt-symphony', 'publish', 'ack', 'symphony `client.publish()` → its answer (`published`)'],
  ['asks-rt-symphony', 'publish', 'delivered', 'symphony `client.publish()` → the message back on its own subscription'],
  ['asks-rt-symphony', 'request', 'ack', 'symphony `client.request()` → the reply (onRequest echoes)'],
  ['asks-rt-socketio', 'publish', 'ack', 'socket.io `emit(\'publish\', room, data, ack)` → the ack (the server `io.to(room).emit`s)'],
  ['asks-rt-socketio', 'publish', 'delivered', 'socket.io `emit(\'publish\', ...)` → the `m` event back (the client is in the room)'],
  ['asks-rt-socketio', 'echo', 'ack', 'socket.io `emit(\'echo\', data, ack)` → the ack with the data'],
];

function ok(r) {
  return r.figures && !r.figures.skipped;
}

function values(runs, arm, f) {
  return runs.filter((r) => r.arm === arm && ok(r)).map((r) => {
    try {
      const v = f(r.figures, r);
      return typeof v === 'number' && Number.isFinite(v) ? v : null;
    } catch {
      return null;
    }
  });
}

function cell(runs, arm, f, digits) {
  if (!runs.some((r) => r.arm === arm && ok(r))) return runs.some((r) => r.arm === arm && r.figures && r.figures.skipped) ? 'skipped' : '–';
  return fmtRange(summarize(values(runs, arm, f)), digits);
}

function med(runs, arm, f) {
  return summarize(values(runs, arm, f)).median;
}

/** The section's markdown and the charts (name → svg), or null when the phase did not run. */
function build(res) {
  const runs = res.runs.filter((r) => r.phase === 'asks');
  if (!runs.length) return null;
  const charts = {};
  const lines = ['', '## asks: clients that subscribe, publish and request', ''];
  const stormArms = STORM_ARMS.filter((a) => runs.some((r) => r.arm === a));
  const f0 = (runs.find((r) => ok(r) && r.figures.storm) || {}).figures;
  const skipped = runs.filter((r) => r.figures && r.figures.skipped);
  const failed = runs.filter((r) => r.error);
  for (const r of skipped) lines.push(`- **${r.arm}** (repeat ${r.repeat}): ${r.figures.skipped}`);
  for (const r of failed) lines.push(`- **${r.arm}** (repeat ${r.repeat}) failed: ${r.error}`);
  if (skipped.length || failed.length) lines.push('');
  if (stormArms.length) {
    lines.push('### Subscribe storm', '');
    if (f0) {
      lines.push(`${fmt(f0.connections)} connections × ${f0.subsPerConn} subscribes each = ${fmt(f0.connections * f0.subsPerConn)} subscribes over `
        + `${fmt(f0.rooms)} rooms, from ${f0.clientProcs} client processes (raw sockets) on CPU ${f0.pin.clients || 'any'}, the server on CPU `
        + `${f0.pin.server || 'any'} (${f0.threads} IO thread). Medians over the repeats (min–max).`, '');
    }
    lines.push(`| figure | ${stormArms.map((a) => `${a} (${LABEL[a]})`).join(' | ')} |`, `| --- | ${stormArms.map(() => '--:').join(' | ')} |`);
    for (const [name, f, d] of [...STORM_ROWS, ['the machine\'s load average (1 min) at the run\'s start', (_, r) => r.loadavg, 2]]) {
      lines.push(`| ${name} | ${stormArms.map((a) => cell(runs, a, f, d)).join(' | ')} |`);
    }
    const sio = med(runs, 'asks-socketio', (f) => f.storm.subsPerCpuS);
    const sioU = med(runs, 'asks-socketio', (f) => f.storm.subsPerCpuUsageS);
    lines.push('', '**Subscribes per server CPU-second, as a multiple of socket.io\'s** (medians; the issue\'s goals):', '',
      '| arm | ÷ socket.io (/proc) | ÷ socket.io (process.cpuUsage()) | goal | |', '| --- | --: | --: | --: | --- |');
    const targets = [];
    for (const [arm, goal] of GOALS) {
      const v = med(runs, arm, (f) => f.storm.subsPerCpuS);
      const u = med(runs, arm, (f) => f.storm.subsPerCpuUsageS);
      const ratio = v !== null && sio ? v / sio : null;
      const ratioU = u !== null && sioU ? u / sioU : null;
      const result = ratio === null ? (runs.some((r) => r.arm === arm && r.figures && r.figures.skipped) ? 'skipped' : 'n/a') : ratio >= goal ? 'MET' : 'MISSED';
      targets.push({ arm, goal, ratio, ratioCpuUsage: ratioU, result });
      lines.push(`| ${arm} (${LABEL[arm]}) | ${ratio === null ? '–' : `${fmt(ratio, 2)}x`} | ${ratioU === null ? '–' : `${fmt(ratioU, 2)}x`} | ≥ ${goal}x | ${result} |`);
    }
    res.asksTargets = targets;
    const bars = stormArms.map((a, i) => {
      const s = summarize(values(runs, a, (f) => f.storm.subsPerCpuS));
      return { name: LABEL[a], value: s.median, min: s.min, max: s.max, color: ['#2ca02c', '#1f77b4', '#d62728'][i] };
    });
    const wall = stormArms.map((a, i) => {
      const s = summarize(values(runs, a, (f) => f.storm.subscribesPerS));
      return { name: LABEL[a], value: s.median, min: s.min, max: s.max, color: ['#2ca02c', '#1f77b4', '#d62728'][i] };
    });
    charts['asks-subscribes.svg'] = barChart({
      title: `Subscribe storm: ${f0 ? `${fmt(f0.connections)} × ${f0.subsPerConn}` : ''} subscribes`,
      yLabel: 'subscribes per second',
      groups: [{ label: 'per server CPU-second (/proc)', bars }, { label: 'per second of wall time', bars: wall }],
      note: 'server pinned to one CPU, clients on the other; medians, whiskers min–max over repeats',
    });
    lines.push('', '![subscribes per server CPU-second and per second](asks-subscribes.svg)');
  }
  const rtRuns = runs.filter((r) => r.arm.startsWith('asks-rt-') && ok(r));
  if (rtRuns.length) {
    const r0 = rtRuns[0].figures;
    lines.push('', '### Round trips, one client, one call at a time', '',
      `${fmt(r0.count)} calls of each (after ${fmt(r0.warmup)} of warm-up), ${r0.payloadBytes} B of text each way, `
        + `the client library users use (symphony's client over \`ws\`; socket.io-client 4.8, websocket transport) on CPU ${r0.pin.clients || 'any'}, `
        + `the server on CPU ${r0.pin.server || 'any'}. Microseconds; medians over the repeats (min–max).`, '',
      '| round trip | p50 | p90 | p99 | p99.9 | mean | max | calls/s | server CPU per call (µs) |',
      '| --- | --: | --: | --: | --: | --: | --: | --: | --: |');
    for (const [arm, series, kind, name] of RT) {
      if (!rtRuns.some((r) => r.arm === arm)) continue;
      const g = (k) => (f) => (f.series[series] && f.series[series][kind] ? f.series[series][kind][k] : null);
      const c = (f, d) => cell(runs, arm, f, d);
      lines.push(`| ${name} | ${c(g('p50Us'), 0)} | ${c(g('p90Us'), 0)} | ${c(g('p99Us'), 0)} | ${c(g('p999Us'), 0)} | ${c(g('meanUs'), 0)} | ${c(g('maxUs'), 0)} | `
        + `${kind === 'ack' ? c((f) => f.series[series].perS, 0) : ''} | ${kind === 'ack' ? c((f) => f.series[series].serverCpuUsPerCall, 1) : ''} |`);
    }
    const pick = [['asks-rt-symphony', 'publish', 'ack', 'symphony publish'], ['asks-rt-symphony', 'request', 'ack', 'symphony request'],
      ['asks-rt-socketio', 'publish', 'ack', 'socket.io emit publish + ack'], ['asks-rt-socketio', 'echo', 'ack', 'socket.io emit echo + ack']]
      .filter(([arm]) => rtRuns.some((r) => r.arm === arm));
    const colors = ['#1f77b4', '#17becf', '#d62728', '#ff7f0e'];
    const group = (k, label) => ({ label, bars: pick.map(([arm, series, kind, name], i) => {
      const s = summarize(values(runs, arm, (f) => (f.series[series] && f.series[series][kind] ? f.series[series][kind][k] : null)));
      return { name, value: s.median, min: s.min, max: s.max, color: colors[i] };
    }) });
    charts['asks-round-trips.svg'] = barChart({ title: 'Round trips, one client, one at a time', yLabel: 'µs', width: 860,
      groups: [group('p50Us', 'p50'), group('p99Us', 'p99')], note: 'server pinned to one CPU, client on the other; medians, whiskers min–max over repeats' });
    lines.push('', '![round trips p50 and p99](asks-round-trips.svg)');
  }
  lines.push('', '### Method', '',
    '- **Storm** (`asks-token`, `asks-hook`, `asks-socketio`): a fresh server per run (`bench/servers/asks-server.js`), pinned to one CPU with '
      + 'one IO thread; the clients (`bench/runner/asks-client.js`: raw sockets, ≤ 5,000 connections per process) pinned to the other. '
      + 'Every connection is opened before the timed part (symphony: `symphony.v2` chosen in the 101; socket.io: Engine.IO 4 over websocket, '
      + 'its namespace connected); with tokens, each connection\'s JWT (HS256; `{ sub, exp, topics: { subscribe: [\'room.*\'] } }`) is signed '
      + 'with node:crypto then too. The timed part: every process writes each connection\'s subscribes, one frame per subscribe (symphony '
      + '`s{"subs":[{"rid","topic"[,"token"]}]}`, as `client.subscribe()` sends on an open connection; socket.io `42<ack>["join","room.N"]`, '
      + 'as `socket.emit(\'join\', room, ack)`), a connection\'s frames in one write, and reads every answer (symphony\'s `subscribed` '
      + 'notice, socket.io\'s ack). Wall time: the first write of any process to the last answer read by any (CLOCK_MONOTONIC). '
      + 'Server CPU: utime + stime of the server process (`/proc/<pid>/stat`, every thread) read just before the clients are told to go '
      + 'and just after the last process says it has every answer; `process.cpuUsage()` over the same part beside it (µs resolution).',
    '- **Authorization**: `asks-token`: `tokens: { keys: [{ alg: \'HS256\', secret }] }` and no `onSubscribe` (the IO thread verifies the '
      + 'token and subscribes; no call into JavaScript); `asks-hook`: `onSubscribe: (id, topic) => topic.startsWith(\'room.\')`, at once; '
      + '`asks-socketio`: socket.io 4.8, `socket.on(\'join\', (room, ack) => { socket.join(room); ack(true); })` (the same `room.` check). '
      + 'No keepalive during the runs on either side (symphony `idleTimeout: 0`; socket.io `pingInterval` 10 min).',
    '- **Round trips** (`asks-rt-symphony`, `asks-rt-socketio`): a fresh server (symphony: `onSubscribe`, `onPublish` true for `room.*`, '
      + '`onRequest` returning the data; socket.io: `publish` does `io.to(room).emit(\'m\', data)` then acks, `echo` acks with the data) and one '
      + 'client process (`bench/runner/asks-rt-client.js`), subscribed to / in the room it publishes to, so the topic has one subscriber, '
      + 'the publisher; calls one after another, each timed with `process.hrtime.bigint()`; a publish waits for its answer and for its '
      + 'message before the next. Server CPU per call: /proc across the timed calls.');
  return { md: lines.join('\n'), charts };
}

/** Adds the asks section to dir/report.md (before its gates) and writes the charts. */
function writeAsks(dir, res) {
  const b = build(res);
  if (!b) return null;
  const file = path.join(dir, 'report.md');
  let md = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const at = md.indexOf('\n## Gates');
  md = at >= 0 ? `${md.slice(0, at)}${b.md}\n${md.slice(at)}` : `${md}${b.md}\n`;
  fs.writeFileSync(file, md);
  for (const [name, svg] of Object.entries(b.charts)) fs.writeFileSync(path.join(dir, name), svg);
  return { file, targets: res.asksTargets || [] };
}

module.exports = { writeAsks, build };
