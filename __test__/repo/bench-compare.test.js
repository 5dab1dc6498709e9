'use strict';
// The A/B guard of docs/performance.md ("Keeping it"): the baseline
// comparison's figures and per-repeat ratios, and --compare's refusals.
// (The runs themselves are the benchmark's, not a test's: numbers in
// benchmarks, not in tests.)

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { baselineComparison } = require('../../bench/runner/report');

const ROOT = path.join(__dirname, '..', '..');
const RUN = path.join(ROOT, 'bench', 'runner', 'run.js');

const meta = { arms: [{ name: 'jemalloc' }, { name: 'base-jemalloc', baselineOf: 'jemalloc' }] };
const cpu = (arm, repeat, v) => ({ phase: 'cpu', arm, repeat, figures: { shapes: [{ shape: '256 B × 10/s', cpuSPer1M: v, deliveredPct: 100, p99ms: 1 }] } });
const pub = (arm, repeat, v) => ({ phase: 'publish', arm, repeat, figures: { windows: [{ rate: 100000, cpuSPer1M: v, deliveredPct: 100, p99Ms: 2 }] } });

test('each repeat is divided by its twin of the same repeat: the spread of those ratios, beside the ratio of the medians', () => {
  // The machine drifts between repeats (4, then 8): the medians' ratio
  // hides nothing here, and the paired ratios are all 0.9.
  const runs = [cpu('jemalloc', 1, 3.6), cpu('base-jemalloc', 1, 4), cpu('jemalloc', 2, 7.2), cpu('base-jemalloc', 2, 8),
    cpu('jemalloc', 3, 5.4), cpu('base-jemalloc', 3, 6)];
  const row = baselineComparison(meta, runs).find((r) => r.figure === 'CPU-s per 1M delivered, 256 B × 10/s');
  assert.ok(row);
  assert.equal(row.cur.median, 5.4);
  assert.equal(row.old.median, 6);
  assert.ok(Math.abs(row.ratio - 0.9) < 1e-9);
  assert.equal(row.pairs.n, 3);
  assert.ok(Math.abs(row.pairs.min - 0.9) < 1e-9 && Math.abs(row.pairs.max - 0.9) < 1e-9);
  assert.equal(row.overlap, true); // the ranges overlap though every pair says 0.9: why the pairs are shown
});

test('a repeat without its twin makes no pair', () => {
  const runs = [cpu('jemalloc', 1, 5), cpu('base-jemalloc', 1, 4), cpu('jemalloc', 2, 6)];
  const row = baselineComparison(meta, runs).find((r) => r.figure.startsWith('CPU-s per 1M'));
  assert.equal(row.pairs.n, 1);
  assert.equal(row.pairs.median, 1.25);
});

test('the publish phase is compared per rate', () => {
  const runs = [pub('jemalloc', 1, 5), pub('base-jemalloc', 1, 4), pub('jemalloc', 2, 4), pub('base-jemalloc', 2, 5)];
  const rows = baselineComparison(meta, runs);
  const row = rows.find((r) => r.figure === 'publish: CPU-s per 1M delivered, 100,000/s');
  assert.ok(row, rows.map((r) => r.figure).join('; '));
  assert.equal(row.pairs.min, 0.8);
  assert.equal(row.pairs.max, 1.25);
  assert.ok(rows.some((r) => r.figure === 'publish: delivered %, 100,000/s'));
});

test('--compare refuses what is not a commit, and --baseline beside it, before running anything', () => {
  const bad = spawnSync(process.execPath, [RUN, '--compare', 'no-such-ref-anywhere'], { cwd: ROOT, encoding: 'utf8' });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /--compare no-such-ref-anywhere: not a commit/);
  const both = spawnSync(process.execPath, [RUN, '--compare', 'HEAD', '--baseline', ROOT], { cwd: ROOT, encoding: 'utf8' });
  assert.notEqual(both.status, 0);
  assert.match(both.stderr, /--compare and --baseline exclude each other/);
});

test('--arm-env NAME=BENCH_SYMPHONY_ROOT=DIR refuses a DIR that is not a symphony checkout, naming the arm', () => {
  const r = spawnSync(process.execPath, [RUN, '--phases', 'cpu', '--arm-env', 'old=BENCH_SYMPHONY_ROOT=/no/such/dir'], { cwd: ROOT, encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--arm-env old: BENCH_SYMPHONY_ROOT \/no\/such\/dir: no such folder/);
  const notOurs = spawnSync(process.execPath, [RUN, '--phases', 'cpu', '--arm-env', `old=BENCH_SYMPHONY_ROOT=${path.join(ROOT, 'docs')}`],
    { cwd: ROOT, encoding: 'utf8' });
  assert.notEqual(notOurs.status, 0);
  assert.match(notOurs.stderr, /--arm-env old: BENCH_SYMPHONY_ROOT .*docs: not a symphony checkout/);
});
