'use strict';
// Small helpers shared by the benchmark runner: time, statistics, formatting.

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

function pad2(n) {
  return String(n).padStart(2, '0');
}

/** 2025-01-31T12-34-56 in local time: a folder name that sorts. */
function stamp(d = new Date()) {
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}T${pad2(d.getHours())}-${pad2(d.getMinutes())}-${pad2(d.getSeconds())}`;
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

module.exports = { opensslDir, loadgenMakeVars, now, monoToNow, nowToMono, sleep, within, finite, median, summarize, slope, fmt, fmtRange, mib, stamp };
