'use strict';
// Every figure the README quotes comes from somewhere a test reads (issue 46):
// - a benchmark figure from the results folder it was measured in
//   (bench/results/<run>/report.md or summary.md, as committed with the run):
//   the test reads the table cell or line and finds the same number, or
//   computes the ratio the README prints from the two cells it divides;
// - a default from the running server (server.options);
// - a floor, a bound or a version from the file that sets it (package.json,
//   binding.gyp, THIRD_PARTY_NOTICES.md);
// - a figure another test already holds is named with that test.
// And no other figure: every number in the README's prose (outside code
// blocks and link targets) is one of these or named below as no figure (a
// port in a URL, a protocol's version, a close code). A new figure without
// its source fails here. Where the pages of docs/ the README links to
// restate one of these figures, they are held too: the restatement is on its
// page and its measurements are in the same run's report.
//
// The rest of docs/'s figures: docs-figures-pages.test.js (each page's
// numbers measured in a run it cites, made from their source, or named as
// no figure; what is not held yet is listed in docs-figures-pending.json).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');
const README = read('README.md');

/** The markdown tables of file: each a list of rows, each row its cells (trimmed, ** removed); the first row the header. */
function tables(file) {
  const out = [];
  let current = null;
  for (const l of read(file).split('\n')) {
    if (!l.startsWith('|')) { current = null; continue; }
    const cells = l.slice(1, l.lastIndexOf('|')).split('|').map((c) => c.replace(/\*\*/g, '').trim());
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue; // the header's rule
    if (current === null) out.push(current = []);
    current.push(cells);
  }
  return out;
}
/** The leading number of a cell: '4,871 (4,827–5,546)' -> 4871. */
const num = (cell) => Number(/-?[\d,]*\.?\d+/.exec(cell)[0].replace(/,/g, ''));
/** The one row, in a table of file whose header has `header` (any table when null), whose first cells are keys. */
function row(file, header, ...keys) {
  const found = [];
  for (const t of tables(file)) {
    const col = header === null ? 0 : t[0].indexOf(header);
    if (col < 0) continue;
    for (const r of t.slice(1)) if (keys.every((k, i) => r[i] === k)) found.push({ r, col });
  }
  assert.equal(found.length, 1, `${file}: one row ${keys.join(' | ')}${header ? ` under "${header}"` : ''} (found ${found.length})`);
  return found[0];
}
/** The cell under header in the row keys of file's table that has that column. */
const cell = (file, header, ...keys) => { const { r, col } = row(file, header, ...keys); return r[col]; };
/** The first match of re in file (its first group, or the whole). */
function line(file, re) {
  const m = re.exec(read(file));
  assert.ok(m, `${file}: ${re}`);
  return m[1] ?? m[0];
}

const R = 'bench/results';
const DEFAULT = `${R}/2026-11-30-default-3x/report.md`;
const POLICY = `${R}/2026-11-30-policy-soak/report.md`;
const UWS = `${R}/2026-12-01-issue14/report.md`;
const TLS = `${R}/2026-11-30-tls-3x/report.md`;
const HISTORY = `${R}/2026-12-01-history/summary.md`;
const BUS_HISTORY = `${R}/2026-12-02-bus-history-quiet/summary.md`;
const SSE = `${R}/2026-12-04-sse/report.md`;
const ASKS = `${R}/2026-12-04-asks-fast/report.md`;
const WINDOWS = `${R}/2026-12-04-windows-afd/report.md`;
const BUS = `${R}/2026-11-30-bus/report.md`;
const PUSHER = `${R}/2026-12-06-pusher/pusher.md`;

const fixed = (n, digits) => n.toFixed(digits);
const thousands = (n) => Math.round(n).toLocaleString('en-US');
const ratio = (a, b, digits = 2) => `${(a / b).toFixed(digits)}x`;

/**
 * The README's figures: the text as printed, where it comes from, and the
 * same text made from there (a figure that moves in its source fails here
 * until the README moves with it).
 */
const FIGURES = [
  // The memory policy: the default preset's soak (docs/benchmarks.md) and the policy runs (docs/memory.md).
  { quote: 'over 3 cycles of 19,000 ↔ 1,900 connections', source: DEFAULT,
    make: () => { const [, c, hi, lo] = /through (\d+) cycles of ramp to ([\d,]+) .*? drop to ([\d,]+)/.exec(read(DEFAULT)); return `over ${c} cycles of ${hi} ↔ ${lo} connections`; } },
  { quote: 'pages fell to 26.7% of the peak', source: DEFAULT,
    make: () => `pages fell to ${fixed(num(cell(DEFAULT, 'pages trough % of peak', 'jemalloc')), 1)}% of the peak` },
  { quote: '(82% for the same jemalloc without the policy)', source: POLICY,
    make: () => `(${Math.round(num(cell(POLICY, 'pages trough % of peak', 'no-reclaim')))}% for the same jemalloc without the policy)` },
  { quote: 'a glibc-malloc build stayed at 99-100% of its footprint', source: DEFAULT,
    make: () => {
      // Every cycle of both glibc arms, every repeat (median, min and max).
      const all = tables(DEFAULT).flat().filter((r) => /^system/.test(r[0]) && /^\d$/.test(r[1]))
        .flatMap((r) => (/([\d.]+) \(([\d.]+)–([\d.]+)\)/.exec(r[4]) ?? []).slice(1).map(Number));
      assert.ok(all.length >= 18, `${DEFAULT}: the glibc arms' cycles`);
      return `a glibc-malloc build stayed at ${Math.floor(Math.min(...all))}-${Math.ceil(Math.max(...all))}% of its footprint`;
    } },
  { quote: 'a parked connection costs 325 B over the idle process, where `ws` costs 4,871 B', source: DEFAULT,
    make: () => `a parked connection costs ${thousands(num(cell(DEFAULT, 'B/conn over idle', 'jemalloc')))} B over the idle process, where \`ws\` costs ${thousands(num(cell(DEFAULT, 'B/conn over idle', 'ws')))} B` },
  // Against uWebSockets.js (docs/performance.md).
  { quote: '0.50-0.77x its CPU per delivered message when the JS thread publishes 50,000-100,000 small messages/s to 10,000 one-subscriber topics', source: UWS,
    make: () => {
      const cpu = (rate, arm) => num(cell(UWS, 'CPU-s per 1M delivered', rate, arm));
      const topics = thousands(num(cell(UWS, 'connections', '100,000', 'jemalloc')));
      return `${ratio(cpu('100,000', 'jemalloc'), cpu('100,000', 'uws')).slice(0, -1)}-${ratio(cpu('50,000', 'jemalloc'), cpu('50,000', 'uws'))} its CPU per delivered message when the JS thread publishes 50,000-100,000 small messages/s to ${topics} one-subscriber topics`;
    } },
  { quote: '(due-p99 at 100,000/s: 28 ms against its 415 ms; largest rate with p99 ≤ 50 ms: 1.35x its)', source: UWS,
    make: () => {
      const p99 = (arm) => Math.round(num(cell(UWS, 'due-p99 ms', '100,000', arm)));
      const capacity = (arm) => num(cell(UWS, 'median (min–max)', arm));
      return `(due-p99 at 100,000/s: ${p99('jemalloc')} ms against its ${p99('uws')} ms; largest rate with p99 ≤ 50 ms: ${ratio(capacity('jemalloc'), capacity('uws'))} its)`;
    } },
  { quote: '0.63-0.74x when each publish goes to 1,000 subscribers', source: UWS,
    make: () => {
      const cpu = (shape, arm) => num(cell(UWS, 'CPU-s per 1M msgs', shape, arm));
      return `${ratio(cpu('256 B × 10/s', 'jemalloc'), cpu('256 B × 10/s', 'uws')).slice(0, -1)}-${ratio(cpu('4096 B × 2/s', 'jemalloc'), cpu('4096 B × 2/s', 'uws'))} when each publish goes to 1,000 subscribers`;
    } },
  // Against ws (docs/benchmarks.md).
  { quote: 'it spends 0.66x the CPU of `ws` per delivered message, and delivers all of them (`ws` delivers 67%', source: DEFAULT,
    make: () => {
      const cpu = (arm) => num(cell(DEFAULT, 'CPU-s per 1M msgs', '256 B × 10/s', arm));
      return `it spends ${ratio(cpu('jemalloc'), cpu('ws'))} the CPU of \`ws\` per delivered message, and delivers all of them (\`ws\` delivers ${Math.round(num(cell(DEFAULT, 'delivered %', '256 B × 10/s', 'ws')))}%`;
    } },
  // TLS (docs/tls.md): bytes over idle per parked connection, in KB (1,000 bytes).
  { quote: '12.9 KB per idle TLS connection, against 31.6 KB for `ws`', source: TLS,
    make: () => `${fixed(num(cell(TLS, 'B/conn over idle', 'jemalloc-tls')) / 1000, 1)} KB per idle TLS connection, against ${fixed(num(cell(TLS, 'B/conn over idle', 'ws-tls')) / 1000, 1)} KB for \`ws\`` },
  // History (docs/history.md) and across nodes (docs/bus.md).
  { quote: 'at 0.031x socket.io\'s server CPU per replayed message', source: HISTORY,
    make: () => `at ${line(HISTORY, /CPU per replayed message[^:]*:[^:]*: ([\d.]+x)/)} socket.io's server CPU per replayed message` },
  { quote: 'at 0.26x socket.io\'s (with its Redis Streams adapter) server CPU per delivered message', source: BUS_HISTORY,
    make: () => {
      const { r } = row(BUS_HISTORY, null, 'live: server CPU (3 nodes) per delivered message');
      return `at ${ratio(num(r[1]), num(r[2]))} socket.io's (with its Redis Streams adapter) server CPU per delivered message`;
    } },
  // Event streams (docs/benchmarks.md#event-streams-sse).
  { quote: 'at 1.10x a WebSocket\'s CPU per delivered message, 0.57x a node:http SSE hub\'s', source: SSE,
    make: () => {
      const { r } = row(SSE, null, 'server CPU-s per 1M delivered'); // symphony SSE, symphony WebSocket, node:http hub, better-sse
      return `at ${ratio(num(r[1]), num(r[2]))} a WebSocket's CPU per delivered message, ${ratio(num(r[1]), num(r[3]))} a node:http SSE hub's`;
    } },
  // Pusher against Soketi (docs/benchmarks.md#pusher-against-soketi-16).
  { quote: 'against Soketi 1.6 on one core, 0.32x its CPU per delivered message, 0.14x its memory per idle connection and 4.15x its HTTP publishes per CPU-second', source: PUSHER,
    make: () => {
      const r = (key) => row(PUSHER, null, key).r; // symphony-pusher, soketi
      const cpu = r('server CPU per delivered message (µs)');
      const mem = r('bytes per connection over idle');
      const http = r('publishes per server CPU-second');
      return `against Soketi 1.6 on one core, ${ratio(num(cpu[1]), num(cpu[2]))} its CPU per delivered message, ${ratio(num(mem[1]), num(mem[2]))} its memory per idle connection and ${ratio(num(http[1]), num(http[2]))} its HTTP publishes per CPU-second`;
    } },
  // Windows under Wine (docs/builds.md#windows).
  { quote: 'its poller waits 0.07 ms with 100 to 4,000 idle sockets where WSAPoll takes 0.28 to 36.6 ms, and 1,000 subscribers got 102,342 messages each with none lost', source: WINDOWS,
    make: () => {
      const ours = line(WINDOWS, /symphony's poller \(AFD\)[^|]*\| ([^|\n]+)/);
      const theirs = line(WINDOWS, /WSAPoll itself[^|]*\| ([^|\n]+)/);
      const waits = (s) => [...s.matchAll(/([\d,]+) sockets? ([\d.]+) ms|, ([\d,]+) ([\d.]+) ms/g)].map((m) => [m[1] ?? m[3], Number(m[2] ?? m[4])]);
      const o = waits(ours);
      const t = waits(theirs);
      assert.equal(o.length, 3, ours);
      // One figure for all three of ours: each within 0.01 ms of it.
      const flat = Math.round(o.reduce((a, [, v]) => a + v, 0) / o.length * 100) / 100;
      assert.ok(o.every(([, v]) => Math.abs(v - flat) < 0.01), `our waits ${ours} are one figure (${flat})`);
      const fan = line(WINDOWS, /\(([\d,]+) messages to each\), 0 gaps\/dups, 0 dropped/);
      const subs = line(WINDOWS, /fan-out: ([\d,]+) subscribers/);
      return `its poller waits ${fixed(flat, 2)} ms with ${o[0][0]} to ${o[2][0]} idle sockets where WSAPoll takes ${t[0][1]} to ${t[2][1]} ms, and ${subs} subscribers got ${fan} messages each with none lost`;
    } },
  // What a subscribe costs (docs/benchmarks.md, asks).
  { quote: '(3.5 µs of server CPU per subscribe with a token, 6.6 µs with a hook, against 28.0 µs for socket.io 4.8\'s `join`)', source: ASKS,
    make: () => {
      const { r } = row(ASKS, null, 'server CPU per subscribe (µs; utime + stime, /proc/<pid>/stat)');
      return `(${fixed(num(r[1]), 1)} µs of server CPU per subscribe with a token, ${fixed(num(r[2]), 1)} µs with a hook, against ${fixed(num(r[3]), 1)} µs for socket.io 4.8's \`join\`)`;
    } },
  // The bus (docs/bus.md).
  { quote: 'Measured with 3 processes × 19,000 connections: the bus adds 0.6% CPU per delivered message, cross-node p99 within 1.05 ms of same-node p99', source: BUS,
    make: () => {
      const [, procs, conns] = /(\d+) server processes × ([\d,]+) connections/.exec(read(BUS));
      const cpu = line(BUS, /bus adds ≤ 10% CPU[^\n]*per 1M: \+([\d.]+%)/);
      const p99 = line(BUS, /cross-node − same-node p99: ([\d.]+ ms)/);
      return `Measured with ${procs} processes × ${conns} connections: the bus adds ${cpu} CPU per delivered message, cross-node p99 within ${p99} of same-node p99`;
    } },
  // Floors and bounds, from the files that set them.
  { quote: 'Node ≥ 20.17', source: 'package.json',
    make: () => `Node ≥ ${/^>=(\d+\.\d+)\.0$/.exec(JSON.parse(read('package.json')).engines.node)[1]}` },
  { quote: 'Intel (10.15 or later)', source: 'binding.gyp',
    make: () => `Intel (${/'MACOSX_DEPLOYMENT_TARGET': '([\d.]+)'/.exec(read('binding.gyp'))[1]} or later)` },
  { quote: 'Apple silicon (macOS 11 or later)', source: 'scripts/macos-gate.js',
    make: () => `Apple silicon (macOS ${/arm64: \{[^}]*minos: '(\d+)\.0'/.exec(read('scripts/macos-gate.js'))[1]} or later)` },
  { quote: 'Windows x64 (10 or later)', source: 'binding.gyp',
    make: () => { assert.match(read('binding.gyp'), /_WIN32_WINNT=0x0A00/); return 'Windows x64 (10 or later)'; } },
  { quote: 'Each suite file is bounded in time (10 min)', source: 'package.json, scripts/test.js',
    make: () => {
      const ms = Number(/--test-timeout=(\d+)/.exec(JSON.parse(read('package.json')).scripts['test:js'])[1]);
      // scripts/test.js writes it as a product (10 * 60 * 1000): its factors multiplied.
      const file = /const FILE_TIMEOUT_MS = ([\d *]+);/.exec(read('scripts/test.js'))[1].split('*').reduce((a, n) => a * Number(n), 1);
      assert.equal(file, ms, 'npm test and npm run test:js bound a file alike');
      return `Each suite file is bounded in time (${ms / 60000} min)`;
    } },
  { quote: 'IO threads (1-64)', source: 'the running server',
    make: () => {
      const { Server } = require('../..');
      const refused = (threads) => { try { new Server({ noServer: true, threads }).close(); return false; } catch { return true; } };
      assert.ok(refused(0) && refused(65) && !refused(1) && !refused(64), 'threads: 1 to 64');
      return 'IO threads (1-64)';
    } },
  { quote: 'jemalloc 5.3.0 (BSD-2-Clause), OpenSSL 3.5.7 (Apache-2.0), libdeflate 1.23 (MIT), hiredis 1.2.0 (BSD-3-Clause) and yyjson 0.10.0 (MIT)', source: 'THIRD_PARTY_NOTICES.md',
    make: () => {
      const v = (name) => `${name} ${cell('THIRD_PARTY_NOTICES.md', 'version', name)} (${cell('THIRD_PARTY_NOTICES.md', 'licence', name)})`;
      return `${v('jemalloc')}, ${v('OpenSSL')}, ${v('libdeflate')}, ${v('hiredis')} and ${v('yyjson')}`;
    } },
];

/**
 * Where docs/ restate a README figure (the pages its links lead to), as
 * printed there, and the run it comes from: each must still be on its page,
 * and each of its numbers that is a measurement (not a ratio or a share,
 * which the README's checks above compute) must be in that run's report.
 * (Whitespace as single spaces, bold not counted.)
 */
const RESTATED = [
  ['docs/benchmarks.md', '| jemalloc | 90.2-90.7 | 58.1 (57.7-58.7) | 26.7 (26.5-26.8) |', DEFAULT],
  ['docs/benchmarks.md', 'A parked connection now costs 325 B of footprint over the idle process', DEFAULT],
  ['docs/benchmarks.md', '| ws | 52.0 | 140.3 | 4,871 (4,827-5,546) |', DEFAULT],
  ['docs/benchmarks.md', 'symphony spends 0.66x the CPU of `ws` per delivered message', DEFAULT],
  ['docs/benchmarks.md', '`ws` delivers 67%', DEFAULT],
  ['docs/memory.md', 'instead of 82% (jemalloc alone, any arena count)', POLICY],
  ['docs/performance.md', '| 10,000 topics × 1, 50,000 publishes/s: CPU-s per 1M | 6.59 | 8.55 | 0.77x |', UWS],
  ['docs/performance.md', '| 10,000 topics × 1, 100,000 publishes/s: CPU-s per 1M | 4.94 | 9.93 | 0.50x |', UWS],
  ['docs/performance.md', '| the same: due-p50 / p99 | 1.5 / 28 ms | 220 / 415 ms |', UWS],
  ['docs/performance.md', '| 108,000/s (108k–123k) | 80,000/s (60k–90k) | 1.35x |', UWS],
  ['docs/performance.md', '| 5.48 | 8.67 | 0.63x |', UWS],
  ['docs/performance.md', '| 9.82 | 13.32 | 0.74x |', UWS],
  ['docs/tls.md', '12.9 KB per idle TLS connection', TLS],
  ['docs/tls.md', '| 12,948 (12,888–12,971) | 31,625 (31,608–31,952) |', TLS],
  ['docs/history.md', '0.031x its server CPU per replayed message', HISTORY],
  ['docs/bus.md', '| 0.26x (15.4 vs 59.5 µs; per repeat 0.23-0.26x) |', BUS_HISTORY],
  ['docs/bus.md', 'The bus costs +0.6% CPU per delivered message (13.16 against 13.08,', BUS],
  ['docs/bus.md', 'Cross-node p99 is within 1.05 ms of same-node p99', BUS],
  ['docs/benchmarks.md', '| SSE ÷ WebSocket, CPU per delivered message | 1.10x (0.83–1.15) |', SSE],
  ['docs/benchmarks.md', '| 5.34 (5.24–5.43) | 4.87 (4.74–6.35) | 9.38 (9.20–9.43) |', SSE],
  ['docs/benchmarks.md', '| and no queue round trip | 3.5 µs (3.4–5.1) | 6.6 µs (5.0–9.3) | 28.0 µs (25.5–48.0) |', ASKS],
  ['docs/api.md', 'CPU per subscribe 3.5 µs with tokens and 6.6 µs with an `onSubscribe` hook (answered at once), against 28.0 µs for socket.io 4.8\'s `join`', ASKS],
  ['docs/builds.md', '0.28 / 4.3 / 36.6 ms', WINDOWS],
  ['docs/builds.md', '0.066 / 0.072 / 0.076 ms: flat', WINDOWS],
  ['docs/builds.md', '102,342 messages to each (102.3 M deliveries), none lost', WINDOWS],
];

/** Figures other tests hold: the quote, and the test that checks it against its source. */
const HELD_ELSEWHERE = [
  { quote: '8,190 bytes', test: '__test__/repo/client-size.test.js' }, // scripts/client-size.js
  { quote: 'glibc ≥ 2.17', test: '__test__/repo/docs.test.js' }, // scripts/glibc-floor.js
  { quote: '`lobby #1: hello from the quick start`, `{ members: 1 }`', test: '__test__/repo/docs.test.js' }, // the block's output
];

/** Numbers in the README's prose that are no figure: names, versions of other software, ports, codes. */
const NOT_FIGURES = [
  'OpenSSL 3.5 whose', 'OpenSSL 3.5 (TLS 1.2 and 1.3)', 'yarn 4', 'yarn 1\'s', 'Debian 12', 'Node 20 or later', 'Redis 7+',
  'localhost:8080', 'port 0 for 8080', '100k connections are 100k sockets', 'an estimate for 16 cores',
  'socket.io 4.8',
];

/** The README's options table: each row's default as printed, read as a value. */
function printedDefault(text) {
  const one = (t) => {
    t = t.trim();
    if (t === 'min(2, CPUs)') return Math.min(2, os.availableParallelism());
    if (t === "a second's worth") return null; // workBurst: null is one second's worth
    if (t === '0 (off)') return 0;
    let m = /^(\d+) MiB$/.exec(t);
    if (m) return Number(m[1]) * 1048576;
    m = /^`(.*)`$/.exec(t);
    if (m) return JSON.parse(m[1].replace(/'/g, '"'));
    if (/^\d+$/.test(t)) return Number(t);
    assert.fail(`a default the test cannot read: ${t}`);
  };
  return text.split(/,\s*(?![^(]*\))/).map(one);
}

/** What server.options says for an option that is off: history and presence have their own shapes. */
function effective(name, value) {
  if (name === 'history') return value.size === 0 ? false : value;
  if (name === 'presence') return value === null ? false : value;
  return value;
}

/** The README's prose: code blocks and link targets blanked, whitespace as single spaces (lines wrap anywhere). */
function prose(text) {
  return text.replace(/^```[\s\S]*?^```$/gm, ' ').replace(/\]\([^)]*\)/g, ']').replace(/\s+/g, ' ');
}
const PROSE = prose(README);

test('docs-figures: each of the README\'s figures is its source\'s (bench/results, the runtime, the files that set it)', () => {
  const wrong = [];
  for (const f of FIGURES) {
    assert.ok(PROSE.includes(f.quote), `README.md quotes: ${JSON.stringify(f.quote)}`);
    const made = f.make();
    if (made !== f.quote) wrong.push(`README.md: ${JSON.stringify(f.quote)}\n  ${f.source} says: ${JSON.stringify(made)}`);
  }
  assert.deepEqual(wrong, []);
  for (const h of HELD_ELSEWHERE) {
    assert.ok(PROSE.includes(h.quote), `README.md quotes: ${JSON.stringify(h.quote)}`);
    assert.ok(fs.existsSync(path.join(root, h.test)), `${h.test} holds ${h.quote}`);
  }
});

/** The README's options table (the rows under "| option | default |"). */
function optionsTable() {
  const at = README.indexOf('| option | default |');
  assert.ok(at >= 0, 'README.md has the options table');
  const end = README.indexOf('\n\n', at);
  return { at, end, rows: README.slice(at, end).split('\n').slice(2) };
}

test('docs-figures: the README\'s "options most people set" defaults are the running server\'s', () => {
  const { Server } = require('../..');
  const server = new Server({ noServer: true });
  try {
    const { rows } = optionsTable();
    assert.ok(rows.length >= 10, 'the table was read');
    const wrong = [];
    for (const r of rows) {
      const [names, def] = r.slice(1, r.lastIndexOf('|')).split('|').map((c) => c.trim());
      const keys = [...names.matchAll(/`(\w+)`/g)].map((m) => m[1]);
      const printed = printedDefault(def);
      // One default for several options (`0 (off)`), or one each.
      const values = printed.length === 1 ? keys.map(() => printed[0]) : printed;
      assert.equal(values.length, keys.length, `${names}: one default each`);
      keys.forEach((k, i) => {
        // noServer: this server has it; every other option is left to its default.
        const actual = k === 'noServer' ? false : effective(k, server.options[k]);
        if (JSON.stringify(actual) !== JSON.stringify(values[i])) wrong.push(`${k}: README ${JSON.stringify(values[i])}, server.options ${JSON.stringify(actual)}`);
      });
    }
    assert.deepEqual(wrong, []);
  } finally {
    server.close();
  }
});

test('docs-figures: every number in the README\'s prose is a figure checked above, or named as none', () => {
  // The options table is checked above.
  const { at, end } = optionsTable();
  const text = prose(README.slice(0, at) + README.slice(end));
  const covered = new Array(text.length).fill(false);
  for (const quote of [...FIGURES.map((f) => f.quote), ...HELD_ELSEWHERE.map((h) => h.quote), ...NOT_FIGURES]) {
    let i = text.indexOf(quote);
    // A figure of the options table (IO threads' range) is there, not in this text.
    assert.ok(i >= 0 || PROSE.includes(quote), `README.md has ${JSON.stringify(quote)} (moved? update this test)`);
    for (; i >= 0; i = text.indexOf(quote, i + 1)) covered.fill(true, i, i + quote.length);
  }
  const loose = [];
  for (const m of text.matchAll(/(?<![\w.-])\d[\d,]*(?:\.\d+)?(?![\w])/g)) {
    if (!covered[m.index]) loose.push(`${m[0]} in "...${text.slice(Math.max(0, m.index - 40), m.index + m[0].length + 20)}..."`);
  }
  assert.deepEqual(loose, [], 'a figure with no source: add it to FIGURES with where it comes from, or take it out');
});

test('docs-figures: the docs the README links to for its figures say the same figures', () => {
  const missing = [];
  const unsourced = [];
  for (const [page, quote, source] of RESTATED) {
    // Bold (**) and line breaks as the page prints them do not count.
    const text = read(page).replace(/\*\*/g, '').replace(/\s+/g, ' ');
    if (!text.includes(quote)) missing.push(`${page}: ${quote}`);
    const report = read(source).replace(/(\d),(?=\d{3})/g, '$1');
    for (const m of quote.matchAll(/(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\d.x%]|\w)/g)) {
      const n = m[0].replace(/,/g, '');
      // A measurement rounded as printed (28 ms: the report's 28.05; 28.0 µs: 27.98), in the
      // report's unit or a thousand or a million of them (12.9 KB: 12,948 B; 102.3 M: 102,341,885).
      const digits = (n.split('.')[1] ?? '').length;
      const found = [...report.matchAll(/(?<![\d.])\d+(?:\.\d+)?(?![\d])/g)]
        .some((r) => [1, 1e3, 1e6].some((scale) => (Number(r[0]) / scale).toFixed(digits) === Number(n).toFixed(digits)));
      if (!found) unsourced.push(`${page}: ${m[0]} in "${quote}" is not in ${source}`);
    }
  }
  assert.deepEqual(missing, [], 'a page no longer says what the README says (or says it differently): update the page, or this list with it');
  assert.deepEqual(unsourced, []);
});
