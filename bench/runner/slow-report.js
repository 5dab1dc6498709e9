'use strict';
// The slow phase's results: slow.md beside report.md (one row per arm,
// medians and min–max over its repeats; the staleness series of each arm's
// first run). Called by run.js after a run (and by --rebuild) when the slow
// phase ran.

const fs = require('node:fs');
const path = require('node:path');
const { summarize, fmt, fmtRange } = require('./util');

const ARMS = ['slow-drop', 'slow-close', 'slow-conflate'];

const ROWS = [
  ['normal clients: due-time p99 (ms)', (f) => f.normalP99Ms, 1],
  ['normal clients: delivered (%)', (f) => f.normalDeliveredPct, 1],
  ['normal clients: sequence gaps', (f) => f.normalGaps, 0],
  ['server: allocator allocated, window median (MiB)', (f) => f.allocatedMedianKiB / 1024, 2],
  ['server: allocator allocated, window max (MiB)', (f) => f.allocatedMaxKiB / 1024, 2],
  ['server: RSS, window median (MiB)', (f) => f.rssMedianKiB / 1024, 1],
  ['server: CPU in the window (cores)', (f) => f.serverCores, 2],
  ['slow clients closed by the server (slowCloses)', (f) => f.slowCloses, 0],
  ['messages dropped (dropped)', (f) => f.dropped, 0],
  ['messages replaced (conflated)', (f) => f.conflated, 0],
  ['slow clients: messages received in the window (% of published to them)', (f) => f.slowReceivedPct, 1],
  ['slow clients: staleness in the window, p50 over (client, topic), median of seconds (ms)', (f) => f.ageP50MsMedian, 0],
  ['slow clients: staleness in the window, p90 (ms)', (f) => f.ageP90MsMedian, 0],
  ['after the catch-up: (client, topic) holding the topic\'s last message', (f) => f.upToDate, 0],
  ['after the catch-up: messages behind the last, median', (f) => f.behindMedian, 0],
  ['after the catch-up: age of the newest value held when the traffic stopped, median (ms)', (f) => f.ageAtStopMsMedian, 0],
];

function writeSlow(dir, res) {
  const runs = res.runs.filter((r) => r.phase === 'slow' && r.figures);
  if (!runs.length) return null;
  const arms = ARMS.filter((a) => runs.some((r) => r.arm === a));
  const first = runs[0].figures;
  const lines = [
    '# slow clients among normal ones',
    '',
    `${first.normal} normal connections (loadgen, each on one topic) and ${first.slow} slow ones (bench/runner/slow-client.js, `
      + `each on all ${first.topics} topics and reading ${first.readRate} B/s, ${first.readPct}% of what is published to it); `
      + `${first.topics} topics × ${first.rate} msg/s × ${first.size} B; maxBackpressure ${first.maxBackpressure} B; `
      + `a window of ${fmt(first.window, 0)} s after the settle, then the traffic stops and the slow clients read as fast as they can. `
      + 'Medians over the repeats (min–max).',
    '',
    `| figure | ${arms.join(' | ')} |`,
    `| --- | ${arms.map(() => '--:').join(' | ')} |`,
  ];
  for (const [name, f, digits] of [...ROWS, ['the machine\'s load average (1 min) at the run\'s start', (_, r) => r.loadavg, 1]]) {
    const cells = arms.map((a) => fmtRange(summarize(runs.filter((r) => r.arm === a).map((r) => {
      try {
        return f(r.figures, r);
      } catch {
        return null;
      }
    })), digits));
    lines.push(`| ${name} | ${cells.join(' | ')} |`);
  }
  lines.push('', '## Staleness over time (each arm\'s first run)', '',
    'Seconds since the traffic started: p50 of the (client, topic) staleness, in s (open slow clients).', '');
  const series = arms.map((a) => runs.find((r) => r.arm === a).figures.ageSeries);
  const n = Math.max(...series.map((s) => s.length));
  lines.push(`| s | ${arms.join(' | ')} |`, `| --: | ${arms.map(() => '--:').join(' | ')} |`);
  for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 20))) {
    const s = series.find((x) => x[i]);
    lines.push(`| ${fmt(s[i].s, 0)} | ${series.map((x) => (x[i] && x[i].p50 !== null ? `${fmt(x[i].p50 / 1000, 1)} (${x[i].open})` : '–')).join(' | ')} |`);
  }
  fs.writeFileSync(path.join(dir, 'slow.md'), `${lines.join('\n')}\n`);
  return path.join(dir, 'slow.md');
}

module.exports = { writeSlow };
