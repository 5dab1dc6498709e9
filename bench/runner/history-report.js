'use strict';
// The history phase's results: history.json (the figures and the targets),
// summary.md and history.svg, beside report.md. Called by run.js after a run
// (and by --rebuild) when the history phase ran.

const fs = require('node:fs');
const path = require('node:path');
const { summarize, fmt, fmtRange, finite } = require('./util');
const { barChart } = require('./svg');

function runsOf(res, arm) {
  return res.runs.filter((r) => r.phase === 'history' && r.arm === arm && r.figures);
}

function S(runs, f) {
  return summarize(runs.map((r) => {
    try {
      return f(r.figures);
    } catch {
      return null;
    }
  }));
}

function ratio(a, b) {
  return finite(a) && finite(b) && b !== 0 ? a / b : null;
}

function analyse(res) {
  const hist = runsOf(res, 'sy-history');
  const off = runsOf(res, 'sy-nohistory');
  const peer = runsOf(res, 'sy-history-peer');
  const sio = runsOf(res, 'socketio');
  const storms = [...hist, ...peer];
  const arms = {};
  for (const [name, runs] of Object.entries({ 'sy-history': hist, 'sy-nohistory': off, 'sy-history-peer': peer, socketio: sio })) {
    if (!runs.length) continue;
    arms[name] = {
      runs: runs.length,
      clients: runs[0].figures.clients,
      liveMsgsPerS: S(runs, (f) => f.live.msgsPerS),
      liveDeliveredPct: S(runs, (f) => f.live.deliveredPct),
      liveCpuUsPerMsg: S(runs, (f) => f.live.cpuUsPerMsg),
      liveServerCores: S(runs, (f) => f.live.serverCores),
      liveClientCores: S(runs, (f) => f.live.clientCores),
      connectS: S(runs, (f) => f.connectS),
      cpuPerConnMs: S(runs, (f) => f.cpuPerConnMs),
      peakRssMiB: S(runs, (f) => f.peakRssKiB / 1024),
      ...(runs[0].figures.storm ? {
        missedPerClient: S(runs, (f) => f.storm.missedPerClient),
        replayed: S(runs, (f) => f.storm.replayed),
        replayedPerClient: S(runs, (f) => f.storm.replayedPerClient),
        allConnectedS: S(runs, (f) => f.storm.allConnectedS),
        allCaughtUpS: S(runs, (f) => f.storm.allCaughtUpS),
        allLiveS: S(runs, (f) => f.storm.allLiveS),
        resumeServerCores: S(runs, (f) => f.storm.serverCores),
        resumeClientCores: S(runs, (f) => f.storm.clientCores),
        cpuUsPerReplayedRaw: S(runs, (f) => f.storm.cpuUsPerReplayedRaw),
        cpuUsPerReplayed: S(runs, (f) => f.storm.cpuUsPerReplayed),
        cpuUsPerReplayedNoHandshakes: S(runs, (f) => f.storm.cpuUsPerReplayedNoHandshakes),
        cpuUsPerReplayedBeyondLive: S(runs, (f) => f.storm.cpuUsPerReplayedBeyondLive),
        cpuUsPerReplayedBeyondLiveNoHandshakes: S(runs, (f) => f.storm.cpuUsPerReplayedBeyondLiveNoHandshakes),
        gaps: S(runs, (f) => f.storm.gaps + f.storm.offsetGaps),
        dups: S(runs, (f) => f.storm.dups + f.storm.offsetDups),
        notRecovered: S(runs, (f) => f.storm.notRecovered),
        liveAfter: S(runs, (f) => f.storm.live),
      } : {}),
    };
  }
  const mem = S(hist.filter((r) => r.figures.memory), (f) => f.memory.overheadAllocatorB);
  const memory = hist.filter((r) => r.figures.memory).length ? {
    frameBytes: S(hist, (f) => f.memory.frameBytes),
    historyBytesPerMsg: S(hist, (f) => f.memory.historyBytesPerMsg),
    allocatorBytesPerMsg: S(hist, (f) => f.memory.allocatorBytesPerMsg),
    rssBytesPerMsg: S(hist, (f) => f.memory.rssBytesPerMsg),
    overheadAllocatorB: mem,
    overheadRssB: S(hist, (f) => f.memory.overheadRssB),
    stored: hist[0].figures.memory.stored,
  } : null;
  const a = (n, k) => (arms[n] && arms[n][k] ? arms[n][k].median : null);
  const zero = storms.every((r) => r.figures.storm && r.figures.storm.gaps + r.figures.storm.offsetGaps + r.figures.storm.dups + r.figures.storm.offsetDups === 0
    && r.figures.storm.notRecovered === 0 && r.figures.storm.live === r.figures.clients);
  const targets = [
    {
      name: 'zero gaps and duplicates in every symphony arm (every client live again, every resume recovered)',
      value: storms.length ? storms.map((r) => `${r.arm}#${r.repeat}: gaps ${r.figures.storm.gaps + r.figures.storm.offsetGaps}, dups ${r.figures.storm.dups + r.figures.storm.offsetDups}, not recovered ${r.figures.storm.notRecovered}, live ${r.figures.storm.live}/${r.figures.clients}`).join('; ') : null,
      result: storms.length ? (zero ? 'MET' : 'NOT MET') : 'n/a',
    },
    (() => {
      const r = ratio(a('sy-history-peer', 'cpuUsPerReplayedBeyondLive'), a('socketio', 'cpuUsPerReplayedBeyondLive'));
      const rn = ratio(a('sy-history-peer', 'cpuUsPerReplayedBeyondLiveNoHandshakes'), a('socketio', 'cpuUsPerReplayedBeyondLiveNoHandshakes'));
      const rr = ratio(a('sy-history-peer', 'cpuUsPerReplayedRaw'), a('socketio', 'cpuUsPerReplayedRaw'));
      return { name: 'symphony CPU per replayed message ≤ 0.2x socket.io\'s (same population; resume-window CPU minus the live deliveries in it at the live CPU/msg)',
        ratio: r, ratioNoHandshakes: rn, ratioRaw: rr,
        value: `${fmt(a('sy-history-peer', 'cpuUsPerReplayedBeyondLive'), 2)} vs ${fmt(a('socketio', 'cpuUsPerReplayedBeyondLive'), 2)} µs: ${fmt(r, 3)}x (handshakes taken out ${fmt(rn, 3)}x; raw ${fmt(rr, 3)}x)`,
        result: finite(r) ? (r <= 0.2 ? 'MET' : 'NOT MET') : 'n/a' };
    })(),
    (() => {
      if (!memory) return { name: 'history memory per kept message ≤ frame + 64 B', result: 'n/a' };
      const over = memory.overheadAllocatorB.median;
      return { name: 'history memory per kept message ≤ frame + 64 B (allocator bytes; RSS beside it)',
        ratio: ratio(memory.allocatorBytesPerMsg.median, memory.frameBytes.median + 64),
        value: `frame ${fmt(memory.frameBytes.median, 1)} B; allocator ${fmt(memory.allocatorBytesPerMsg.median, 1)} B/msg = frame + ${fmt(over, 1)} B; `
          + `RSS ${fmt(memory.rssBytesPerMsg.median, 1)} B/msg = frame + ${fmt(memory.overheadRssB.median, 1)} B; historyBytes counts frame + 64`,
        result: finite(over) ? (over <= 64 ? 'MET' : 'NOT MET') : 'n/a' };
    })(),
    (() => {
      const r = ratio(a('sy-history', 'liveCpuUsPerMsg'), a('sy-nohistory', 'liveCpuUsPerMsg'));
      return { name: 'live CPU per delivered message, history on ≤ 1.10x off (1,000 subscribers per topic)', ratio: r,
        value: `${fmtRange(arms['sy-history'] && arms['sy-history'].liveCpuUsPerMsg, 2)} vs ${fmtRange(arms['sy-nohistory'] && arms['sy-nohistory'].liveCpuUsPerMsg, 2)} µs: ${fmt(r, 3)}x`,
        result: finite(r) ? (r <= 1.1 ? 'MET' : 'NOT MET') : 'n/a' };
    })(),
  ];
  return { arms, memory, targets };
}

function markdown(res, h) {
  const c = res.meta.cfg.history;
  const L = [];
  L.push('# History phase: a reconnect storm with recovery', '');
  L.push(`Command: \`${res.meta.command}\`; ${res.meta.date}; ${res.meta.machine.cpu}, ${res.meta.machine.nproc} vCPU, Node ${res.meta.machine.node}; `
    + `load average at the start ${res.meta.machine.loadavg}. Server pinned to CPU ${res.meta.cpus.server || '–'} (1 IO thread), clients to CPU ${res.meta.cpus.loadgen || '–'}.`, '');
  L.push(`Shape: ${c.topics} topics, ${c.payload} B text messages (sequence number, due time, padding), live ${c.rate} msg/s per topic; `
    + `cut: every client closes, the topics get ${c.outageRate} msg/s each for ${c.outage} s, then every client reconnects with its position `
    + `(≤ ${c.pending} handshakes at once per client process). symphony: history { size: ${c.size}, ttl: ${c.ttl} }, clients on \`ws\` speaking symphony.v1; `
    + 'socket.io 4.8: connectionStateRecovery { maxDisconnectionDuration: 60000 }, socket.io-client 4.8. Repeats: ' + res.meta.repeats + ' (median, min–max).', '');
  L.push('## Targets', '');
  for (const t of h.targets) L.push(`- **${t.result}** — ${t.name}: ${t.value || '–'}`);
  L.push('', '## Reconnect storm', '');
  L.push('| arm | clients | missed/client | replayed (server) | all connected s | all caught up s | all live s | server cores in window | client cores in window | µs CPU/replayed (raw) | µs above live baseline cores | µs beyond the window’s live deliveries | … − handshakes | gaps | dups | not recovered | peak RSS MiB |');
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const [name, x] of Object.entries(h.arms)) {
    if (!x.replayed) continue;
    L.push(`| ${name} | ${fmt(x.clients)} | ${fmtRange(x.missedPerClient)} | ${fmtRange(x.replayed)} | ${fmtRange(x.allConnectedS, 2)} | ${fmtRange(x.allCaughtUpS, 2)} | ${fmtRange(x.allLiveS, 2)} | `
      + `${fmtRange(x.resumeServerCores, 2)} | ${fmtRange(x.resumeClientCores, 2)} | ${fmtRange(x.cpuUsPerReplayedRaw, 2)} | ${fmtRange(x.cpuUsPerReplayed, 2)} | ${fmtRange(x.cpuUsPerReplayedBeyondLive, 2)} | ${fmtRange(x.cpuUsPerReplayedBeyondLiveNoHandshakes, 2)} | `
      + `${fmtRange(x.gaps)} | ${fmtRange(x.dups)} | ${fmtRange(x.notRecovered)} | ${fmtRange(x.peakRssMiB, 1)} |`);
  }
  L.push('', '## Live (steady window)', '');
  L.push('| arm | clients | delivered msg/s | delivered % | server cores | µs CPU per delivered | client cores | connect s | ms CPU per connect |');
  L.push('|---|---|---|---|---|---|---|---|---|');
  for (const [name, x] of Object.entries(h.arms)) {
    L.push(`| ${name} | ${fmt(x.clients)} | ${fmtRange(x.liveMsgsPerS)} | ${fmtRange(x.liveDeliveredPct, 1)} | ${fmtRange(x.liveServerCores, 2)} | ${fmtRange(x.liveCpuUsPerMsg, 2)} | `
      + `${fmtRange(x.liveClientCores, 2)} | ${fmtRange(x.connectS, 1)} | ${fmtRange(x.cpuPerConnMs, 3)} |`);
  }
  if (h.memory) {
    const m = h.memory;
    L.push('', `## History memory per kept message (${fmt(m.stored)} messages into topics with no subscriber)`, '');
    L.push('| frame B | historyBytes / msg | allocator B/msg | allocator − frame | RSS B/msg | RSS − frame |');
    L.push('|---|---|---|---|---|---|');
    L.push(`| ${fmtRange(m.frameBytes, 1)} | ${fmtRange(m.historyBytesPerMsg, 1)} | ${fmtRange(m.allocatorBytesPerMsg, 1)} | ${fmtRange(m.overheadAllocatorB, 1)} | ${fmtRange(m.rssBytesPerMsg, 1)} | ${fmtRange(m.overheadRssB, 1)} |`);
  }
  L.push('', '## Method', '');
  L.push('- Server CPU: utime + stime of the server process from /proc at the window edges. Live: a steady window after a settle, divided by what the clients counted. '
    + 'Resume window: from the reconnect command until every client is live; "above baseline cores" subtracts the live window\'s cores × the window '
    + '(too much when the clients come back slowly: fewer live subscribers meanwhile); "beyond the live deliveries" (the target\'s figure) subtracts the live '
    + 'messages the clients got in the window (their count minus the replayed) × the live window\'s CPU per message; "− handshakes" also subtracts the CPU per connection measured on the first connect (no traffic) × clients. Replayed: the server\'s own count '
    + '(symphony: stats().replayed; socket.io: the missedPackets of each restoreSession()).');
  L.push('- Caught up: the client has every sequence number up to the live edge at the reconnect command. Live: caught up, then a message published < '
    + `${c.freshMs} ms before it arrived. Gaps/duplicates: per client, the payload's sequence numbers (and symphony.v1 offsets) must be consecutive across the cut.`);
  L.push('- Memory: server.topic(name, { history: { size: N, ttl: 0 } }) × T, N publishes each, no subscriber; symphony allocator stats().allocated (jemalloc, '
    + 'size-class rounded) and process RSS before/after; the frame is historyBytes / messages − 64.');
  L.push('', 'Figures per run: results.json / history.json. Files: history-server.js (bench/servers), history.js and history-client.js (bench/runner).', '');
  return L.join('\n');
}

function chart(h) {
  const bar = (name, x, k, color) => ({ name, value: x && x[k] ? x[k].median : null, min: x && x[k] ? x[k].min : null, max: x && x[k] ? x[k].max : null, color });
  return barChart({
    title: 'Server CPU per replayed message (µs), reconnect storm',
    yLabel: 'µs CPU per replayed message',
    groups: [
      { label: 'raw (whole resume window)', bars: [bar('symphony (same population)', h.arms['sy-history-peer'], 'cpuUsPerReplayedRaw', '#1f77b4'), bar('socket.io 4.8', h.arms.socketio, 'cpuUsPerReplayedRaw', '#d62728')] },
      { label: 'beyond the live deliveries', bars: [bar('symphony (same population)', h.arms['sy-history-peer'], 'cpuUsPerReplayedBeyondLive', '#1f77b4'), bar('socket.io 4.8', h.arms.socketio, 'cpuUsPerReplayedBeyondLive', '#d62728')] },
      { label: '… minus handshakes', bars: [bar('symphony (same population)', h.arms['sy-history-peer'], 'cpuUsPerReplayedBeyondLiveNoHandshakes', '#1f77b4'), bar('socket.io 4.8', h.arms.socketio, 'cpuUsPerReplayedBeyondLiveNoHandshakes', '#d62728')] },
    ],
    note: 'median over repeats, whiskers min–max; server pinned to one CPU',
  });
}

/** Writes history.json, summary.md and history.svg into dir; returns the targets (or null). */
function writeHistory(dir, res) {
  // only the arms it reads (the nodes arms of issue 24 have their summary by hand)
  const mine = ['sy-history', 'sy-nohistory', 'sy-history-peer', 'socketio'];
  if (!res.runs.some((r) => r.phase === 'history' && mine.includes(r.arm))) return null;
  const h = analyse(res);
  fs.writeFileSync(path.join(dir, 'history.json'), `${JSON.stringify({ config: res.meta.cfg.history, machine: res.meta.machine, command: res.meta.command,
    ...h, runs: res.runs.filter((r) => r.phase === 'history') }, null, 1)}\n`);
  fs.writeFileSync(path.join(dir, 'summary.md'), markdown(res, h));
  fs.writeFileSync(path.join(dir, 'history.svg'), chart(h));
  return h.targets;
}

module.exports = { writeHistory, analyse };
