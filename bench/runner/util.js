'use strict';
// Small helpers shared by the benchmark runner: time, statistics, formatting.

const fs = require('node:fs');
const path = require('node:path');

// CLOCK_MONOTONIC, the clock loadgen reports in (its "start" event's mono_ns).
const T0 = process.hrtime.bigint();

/** Seconds since the runner started (monotonic). Every timestamp in a
 * results folder is on this clock. */
function now() {
  return Number(process.hrtime.bigint() - T0) / 1e9;
}

/** A CLOCK_MONOTONIC nanosecond count (e.g. from loadgen) on the runner clock. */
function monoToNow(ns) {
  return Number(BigInt(ns) - T0) / 1e9;
}

/** The inverse: a runner time as a CLOCK_MONOTONIC nanosecond count (BigInt). */
function nowToMono(t) {
  return T0 + BigInt(Math.round(t * 1e9));
}

function sleep(seconds) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, seconds * 1000)));
}

/** Awaits p, calling tick() (it may be async) every second while p is
 * pending: progress lines during a long wait. */
async function watching(p, tick) {
  let settled = false;
  const r = p.finally(() => {
    settled = true;
  });
  while (!settled) {
    await Promise.race([r.catch(() => {}), sleep(1)]);
    if (!settled) await tick();
  }
  return r;
}

/** p, or `fallback` after `seconds` (the timer never outlives the race). */
function within(p, seconds, fallback = null) {
  let timer;
  const t = new Promise((resolve) => {
    timer = setTimeout(() => resolve(fallback), Math.max(0, seconds * 1000));
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function finite(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

function median(values) {
  const v = values.filter(finite).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** { median, min, max, n } of the finite values (nulls when none). */
function summarize(values) {
  const v = values.filter(finite);
  if (v.length === 0) return { median: null, min: null, max: null, n: 0 };
  return { median: median(v), min: Math.min(...v), max: Math.max(...v), n: v.length };
}

/** Least-squares slope of y over x (units of y per unit of x). */
function slope(points) {
  const p = points.filter((q) => finite(q.x) && finite(q.y));
  if (p.length < 3) return null;
  const mx = p.reduce((s, q) => s + q.x, 0) / p.length;
  const my = p.reduce((s, q) => s + q.y, 0) / p.length;
  let num = 0;
  let den = 0;
  for (const q of p) {
    num += (q.x - mx) * (q.y - my);
    den += (q.x - mx) ** 2;
  }
  return den > 0 ? num / den : null;
}

/** A number for a table: `digits` decimals, thousands separated; '–' for none. */
function fmt(v, digits = 0) {
  if (!finite(v)) return '–';
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** "median (min–max)" of a summary, or just the value for one sample. */
function fmtRange(s, digits = 0, unit = '') {
  if (!s || !finite(s.median)) return '–';
  const m = `${fmt(s.median, digits)}${unit}`;
  if (s.n <= 1 || s.min === s.max) return m;
  return `${m} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
}

function mib(kib) {
  return finite(kib) ? kib / 1024 : null;
}

/** What a --name may be: the <what> of a results folder's name. */
const RESULTS_WHAT = /^[a-z0-9]+(?:[.-][a-z0-9]+)*$/;

/**
 * The name of a results folder, one convention for all: YYYY-MM-DD-<what>
 * (the UTC date the run started). <what> is `name` (--name) when given, else
 * said by the run: its phases ("default" for the default ones), the preset
 * when not the default one, and the repeats, e.g. 2026-12-01-default-3x,
 * 2026-12-01-cpu-publish-3x, 2026-12-01-parked-cpu-quick-1x.
 */
function resultsName({ name, phases, defaultPhases, preset, repeats }, d = new Date()) {
  let what = name;
  if (what === undefined || what === null) {
    const same = phases.length === defaultPhases.length && phases.every((p, i) => p === defaultPhases[i]);
    what = [same ? 'default' : phases.join('-'), ...(preset && preset !== 'default' ? [preset] : []), `${repeats}x`].join('-');
  }
  if (!RESULTS_WHAT.test(what)) throw new Error(`--name must be lower-case letters and digits, words joined by - or . (got ${what})`);
  return `${d.toISOString().slice(0, 10)}-${what}`;
}

/** parent/name, or parent/name-2, -3 ... when that folder is already there. */
function freeDir(parent, name) {
  for (let n = 1; ; n++) {
    const dir = path.join(parent, n === 1 ? name : `${name}-${n}`);
    if (!fs.existsSync(dir)) return dir;
  }
}

/** The private OpenSSL's build folder (deps/openssl.sh: built once, then cached). */
function opensslDir() {
  return require('../../scripts/deps').depDir('openssl');
}

/** make's variables for bench/Makefile (loadgen links the private OpenSSL
 * and libdeflate, each from its deps/ script's build folder). */
function loadgenMakeVars() {
  const { depDir } = require('../../scripts/deps');
  return [`OPENSSL_DIR=${depDir('openssl')}`, `LIBDEFLATE_DIR=${depDir('libdeflate')}`];
}

module.exports = { opensslDir, loadgenMakeVars, now, monoToNow, nowToMono, sleep, watching, within, finite, median, summarize, slope, fmt, fmtRange, mib, resultsName, freeDir };
