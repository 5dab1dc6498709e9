'use strict';
// Sampling a process from /proc: footprint (VmRSS + VmSwap), CPU time
// (utime + stime) and minor faults, several times a second. Also the
// open-file limit and descriptor count the runner uses to size populations.

const fs = require('node:fs');
const { execFileSync } = require('node:child_process');
const { now, median, finite } = require('./util');

let clkTck = null;
function ticksPerSecond() {
  if (clkTck === null) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** One reading of /proc/<pid>/{status,stat}; null when the process is gone. */
function readProc(pid) {
  let status;
  let stat;
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  const kib = (name) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? Number(m[1]) : null;
  };
  const rssKiB = kib('VmRSS');
  if (rssKiB === null) return null; // a zombie has no VmRSS
  const swapKiB = kib('VmSwap') || 0;
  // Fields after the command name (which may hold spaces): state is field 3.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tck = ticksPerSecond();
  const userS = Number(f[11]) / tck; // field 14
  const sysS = Number(f[12]) / tck; // field 15
  return {
    rssKiB,
    swapKiB,
    fpKiB: rssKiB + swapKiB,
    userS,
    sysS,
    cpuS: userS + sysS,
    minflt: Number(f[7]), // field 10
    majflt: Number(f[9]), // field 12
    threads: Number(f[17]), // field 20
  };
}

/** The soft and hard RLIMIT_NOFILE of a process (from /proc/<pid>/limits). */
function fdLimits(pid = 'self') {
  const text = fs.readFileSync(`/proc/${pid}/limits`, 'latin1');
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  const n = (s) => (s === 'unlimited' ? Infinity : Number(s));
  return m ? { soft: n(m[1]), hard: n(m[2]) } : { soft: null, hard: null };
}

function fdCount(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/**
 * Samples one process at `hz` until stopped. Every sample is kept (with the
 * runner clock `t`) and handed to `onSample`.
 */
class Sampler {
  constructor(pid, { hz = 4, onSample = null } = {}) {
    this.pid = pid;
    this.samples = [];
    this.onSample = onSample;
    this.timer = setInterval(() => this.take(), Math.max(20, 1000 / hz));
    this.take();
  }

  take() {
    const r = readProc(this.pid);
    if (!r) return null;
    const s = { t: now(), ...r };
    this.samples.push(s);
    if (this.onSample) this.onSample(s);
    return s;
  }

  stop() {
    clearInterval(this.timer);
  }

  last() {
    return this.samples.length ? this.samples[this.samples.length - 1] : null;
  }

  /** Samples with a <= t <= b. */
  between(a, b) {
    return this.samples.filter((s) => s.t >= a && s.t <= b);
  }

  /** Median footprint (KiB) over [a, b]. */
  footprint(a, b) {
    return median(this.between(a, b).map((s) => s.fpKiB));
  }

  maxFootprint(a, b) {
    const v = this.between(a, b).map((s) => s.fpKiB);
    return v.length ? Math.max(...v) : null;
  }

  /** The sample closest to time t. */
  at(t) {
    let best = null;
    for (const s of this.samples) if (!best || Math.abs(s.t - t) < Math.abs(best.t - t)) best = s;
    return best;
  }

  /** A counter (cpuS, userS, sysS, minflt) linearly interpolated at time t. */
  counterAt(key, t) {
    const s = this.samples;
    if (s.length === 0) return null;
    if (t <= s[0].t) return s[0][key];
    for (let i = 1; i < s.length; i++) {
      if (s[i].t >= t) {
        const a = s[i - 1];
        const b = s[i];
        return a[key] + ((b[key] - a[key]) * (t - a.t)) / (b.t - a.t || 1);
      }
    }
    return s[s.length - 1][key];
  }

  /** Increase of a counter over [a, b]. */
  delta(key, a, b) {
    const x = this.counterAt(key, a);
    const y = this.counterAt(key, b);
    return finite(x) && finite(y) ? y - x : null;
  }
}

module.exports = { readProc, fdLimits, fdCount, Sampler, ticksPerSecond };
