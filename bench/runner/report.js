'use strict';
// From the runs' figures to report.md, the gates and the charts.

const { summarize, fmt, fmtRange, finite, median } = require('./util');
const { lineChart, barChart, COLORS } = require('./svg');

const MiB = (kib) => (finite(kib) ? kib / 1024 : null);

function byArm(runs, phase, arms) {
  const out = new Map();
  for (const a of arms) out.set(a, runs.filter((r) => r.phase === phase && r.arm === a && r.figures));
  return out;
}

function S(list, f) {
  return summarize(list.map(f));
}

function table(head, rows) {
  if (rows.length === 0) return '_(no runs)_\n';
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map((h, i) => (i === 0 ? '---' : '--:'))), ...rows.map(line)].join('\n') + '\n';
}

// ---- gates -------------------------------------------------------------------

/**
 * The gates of the issue, set before collecting. Each: { name, result:
 * 'PASS'|'FAIL'|'n/a', figures }.
 */
function gates(runs, armNames) {
  const out = [];
  const has = (a) => armNames.includes(a);
  const soakJ = runs.filter((r) => r.phase === 'soak' && r.arm === 'jemalloc' && r.figures);
  // 1. jemalloc trough <= 35% of peak in every cycle
  if (soakJ.length) {
    const all = soakJ.flatMap((r) => r.figures.cycles.map((c, i) => ({ rep: r.repeat, cycle: i + 1, pct: c.troughPctOfPeak })));
    const worst = all.reduce((w, x) => (!w || x.pct > w.pct ? x : w), null);
    const overIdle = soakJ.flatMap((r) => r.figures.cycles.map((c) => (c.peakKiB - r.figures.idleKiB > 0
      ? (100 * (c.troughKiB - r.figures.idleKiB)) / (c.peakKiB - r.figures.idleKiB) : null)));
    out.push({
      name: 'jemalloc trough ≤ 35% of peak in every cycle',
      result: all.every((x) => finite(x.pct) && x.pct <= 35) ? 'PASS' : 'FAIL',
      figures: `worst ${fmt(worst && worst.pct, 1)}% (repeat ${worst && worst.rep}, cycle ${worst && worst.cycle}); all cycles: ${all.map((x) => `${fmt(x.pct, 1)}%`).join(', ')}`
        + ` [footprint over the idle server instead: worst ${fmt(Math.max(...overIdle.filter(finite)), 1)}%]`,
    });
    const g = summarize(soakJ.map((r) => r.figures.troughGrowthPctOfPeak));
    out.push({
      name: 'jemalloc trough growth first→last cycle ≤ 5% of peak',
      result: finite(g.median) && g.max <= 5 ? 'PASS' : 'FAIL',
      figures: `${fmtRange(g, 2, '%')} of the first cycle's peak (median (min–max) over repeats; gate on the max)`,
    });
  } else {
    out.push({ name: 'jemalloc trough ≤ 35% of peak in every cycle', result: 'n/a', figures: 'the soak phase did not run for jemalloc' });
    out.push({ name: 'jemalloc trough growth first→last cycle ≤ 5% of peak', result: 'n/a', figures: 'the soak phase did not run for jemalloc' });
  }
  const cmp = (phase, f, name, limitPct, unit, digits) => {
    const j = runs.filter((r) => r.phase === phase && r.arm === 'jemalloc' && r.figures).map(f);
    const s = runs.filter((r) => r.phase === phase && r.arm === 'system' && r.figures).map(f);
    const sj = summarize(j);
    const ss = summarize(s);
    if (!has('jemalloc') || !has('system') || !finite(sj.median) || !finite(ss.median)) {
      return { name, result: 'n/a', figures: `needs both the jemalloc and system arms in the ${phase} phase` };
    }
    const ratio = sj.median / ss.median;
    return {
      name,
      result: ratio <= 1 + limitPct / 100 ? 'PASS' : 'FAIL',
      figures: `jemalloc ${fmtRange(sj, digits, unit)} vs system ${fmtRange(ss, digits, unit)}: ${ratio >= 1 ? '+' : ''}${fmt((ratio - 1) * 100, 1)}% (limit +${limitPct}%)`,
      ratio, sj, ss,
    };
  };
  out.push(cmp('parked', (r) => r.figures.bytesPerConnOverIdle, 'parked bytes per connection (over idle, largest level) within +10% of system', 10, ' B', 0));
  const shapes = [...new Set(runs.filter((r) => r.phase === 'cpu' && r.figures).flatMap((r) => r.figures.shapes.map((s) => s.shape)))];
  if (shapes.length === 0) {
    out.push({ name: 'CPU per 1M messages within +5% of system', result: 'n/a', figures: 'the cpu phase did not run' });
    out.push({ name: 'p99 latency within +10% of system or within its spread', result: 'n/a', figures: 'the cpu phase did not run' });
  }
  for (const shape of shapes) {
    const f = (k) => (r) => {
      const s = r.figures.shapes.find((x) => x.shape === shape);
      return s ? s[k] : null;
    };
    out.push(cmp('cpu', f('cpuSPer1M'), `CPU per 1M messages within +5% of system (${shape})`, 5, ' s', 2));
    const p = cmp('cpu', f('p99ms'), `p99 latency within +10% of system or within its spread (${shape})`, 10, ' ms', 2);
    if (p.result === 'FAIL' && finite(p.sj.median) && p.sj.median <= p.ss.max) {
      p.result = 'PASS';
      p.figures += `; within the system arm's spread (max ${fmt(p.ss.max, 2)} ms)`;
    }
    out.push(p);
  }
  // The TLS issue's target: an idle TLS connection costs ≤ 16 KB in total.
  const tlsName = 'parked bytes per TLS connection (jemalloc-tls, over idle, largest level) ≤ 16 KB';
  const tl = summarize(runs.filter((r) => r.phase === 'parked' && r.arm === 'jemalloc-tls' && r.figures).map((r) => r.figures.bytesPerConnOverIdle));
  if (finite(tl.median)) {
    const peer = summarize(runs.filter((r) => r.phase === 'parked' && r.arm === 'ws-tls' && r.figures).map((r) => r.figures.bytesPerConnOverIdle));
    out.push({
      name: tlsName,
      result: tl.max <= 16384 ? 'PASS' : 'FAIL',
      figures: `${fmtRange(tl, 0, ' B')} (gate on the max)${finite(peer.median) ? `; ws-tls ${fmtRange(peer, 0, ' B')}: ${fmt(tl.median / peer.median, 2)}x` : ''}`,
    });
  } else {
    out.push({ name: tlsName, result: 'n/a', figures: 'the parked phase did not run for jemalloc-tls' });
  }
  out.push(...busGates(runs));
  out.push(...publishGates(runs));
  return out.map(({ name, result, figures }) => ({ name, result, figures }));
}

// ---- the bus phase's targets (issue 12) -----------------------------------------

const BUS_OURS = 'symphony-bus';
// The names of busGates() (the report lists them again in the bus section).
const BUS_GATE_RE = /symphony-bus|bus adds|connections held across/;
const BUS_PEERS = ['ws-redis', 'uws-redis'];

function busRuns(runs) {
  return runs.filter((r) => r.phase === 'bus' && r.figures);
}

/** The window of a bus run at rate point `key` ('full': the CPU point, 'half': the latency point). */
function busWin(r, key) {
  return r.figures.windows.find((w) => w.key === key) || null;
}

/**
 * Issue 12's benchmark targets, as gates: only when the bus phase ran (a run
 * without it prints none of them). Medians over repeats unless said.
 */
function busGates(runs) {
  const list = busRuns(runs);
  if (!runs.some((r) => r.phase === 'bus')) return [];
  const of = (arm) => list.filter((r) => r.arm === arm);
  const med = (arm, f) => summarize(of(arm).map(f));
  const ours = of(BUS_OURS);
  const out = [];
  const na = (name, why) => out.push({ name, result: 'n/a', figures: why });
  const pct = (x) => `${x >= 0 ? '+' : ''}${fmt(x * 100, 1)}%`;

  const cpuName = 'bus adds ≤ 10% CPU per delivered message (symphony-bus vs symphony-local, servers\' CPU, the CPU point)';
  const a = med(BUS_OURS, (r) => busWin(r, 'full') && busWin(r, 'full').cpuSPer1M);
  const b = med('symphony-local', (r) => busWin(r, 'full') && busWin(r, 'full').cpuSPer1M);
  if (finite(a.median) && finite(b.median)) {
    const aR = med(BUS_OURS, (r) => busWin(r, 'full') && busWin(r, 'full').cpuSPer1MWithRedis);
    const ratio = a.median / b.median;
    out.push({ name: cpuName, result: ratio <= 1.1 ? 'PASS' : 'FAIL',
      figures: `symphony-bus ${fmtRange(a, 2, ' s')} vs symphony-local ${fmtRange(b, 2, ' s')} per 1M: ${pct(ratio - 1)} (limit +10%); `
        + `with Redis' own CPU: ${fmtRange(aR, 2, ' s')} (${pct(aR.median / b.median - 1)})` });
  } else {
    na(cpuName, 'needs the symphony-bus and symphony-local arms');
  }

  const latName = 'cross-node p99 within 2 ms of same-node p99 at the latency point (symphony-bus)';
  const d = summarize(ours.map((r) => {
    const w = busWin(r, 'half');
    return w && w.cross && finite(w.cross.p99Ms) && finite(w.same.p99Ms) ? w.cross.p99Ms - w.same.p99Ms : null;
  }));
  if (finite(d.median)) {
    const same = med(BUS_OURS, (r) => busWin(r, 'half').same.p99Ms);
    const cross = med(BUS_OURS, (r) => busWin(r, 'half').cross.p99Ms);
    out.push({ name: latName, result: d.median <= 2 ? 'PASS' : 'FAIL',
      figures: `cross-node − same-node p99: ${fmtRange(d, 2, ' ms')} (same-node ${fmtRange(same, 2, ' ms')}, cross-node ${fmtRange(cross, 2, ' ms')}; limit 2 ms)` });
  } else {
    na(latName, 'needs the symphony-bus arm');
  }

  const dupName = 'zero duplicates (symphony-bus: every window and the Redis restart, every repeat)';
  const dupsOf = (r) => r.figures.windows.reduce((n, w) => n + w.dups + w.back, 0) + (r.figures.restart ? r.figures.restart.dups + r.figures.restart.back : 0);
  const armsRun = [...new Set(list.map((r) => r.arm))];
  const dupFig = armsRun.map((arm) => `${arm} ${fmt(of(arm).reduce((n, r) => n + dupsOf(r), 0))}`).join(', ');
  if (ours.length) {
    const n = ours.reduce((x, r) => x + dupsOf(r), 0);
    out.push({ name: dupName, result: n === 0 ? 'PASS' : 'FAIL', figures: `messages again or out of order: ${dupFig}` });
  } else {
    na(dupName, `needs the symphony-bus arm${dupFig ? ` (${dupFig})` : ''}`);
  }

  const heldName = 'every connection held across the processes (symphony-bus, every window of every repeat)';
  if (ours.length) {
    const f0 = ours[0].figures;
    const bad = ours.filter((r) => r.figures.failed > 0 || r.figures.windows.some((w) => w.open < r.figures.connections || w.serverConnections < r.figures.connections));
    out.push({ name: `${fmt(f0.connections)} connections held across the ${f0.nodes} processes (symphony-bus, every window of every repeat)`,
      result: bad.length === 0 ? 'PASS' : 'FAIL',
      figures: `fewest open in a window: ${fmt(Math.min(...ours.map((r) => r.figures.heldMin)))} (loadgen), `
        + `${fmt(Math.min(...ours.flatMap((r) => r.figures.windows.map((w) => w.serverConnections))))} (the servers' count); `
        + `failed connection attempts ${fmt(ours.reduce((n, r) => n + r.figures.failed, 0))}` });
  } else {
    na(heldName, 'needs the symphony-bus arm');
  }

  const peers = BUS_PEERS.filter((p) => of(p).length);
  const ahead = (name, pick, digits, unit) => {
    const x = med(BUS_OURS, pick);
    if (!finite(x.median) || !peers.length) return na(name, 'needs symphony-bus and a peer (ws-redis, uws-redis)');
    const cmp = peers.map((p) => ({ p, s: med(p, pick) }));
    const ok = cmp.every((c) => finite(c.s.median) && x.median < c.s.median);
    return out.push({ name, result: ok ? 'PASS' : 'FAIL',
      figures: `symphony-bus ${fmtRange(x, digits, unit)}; ${cmp.map((c) => `${c.p} ${fmtRange(c.s, digits, unit)}${finite(c.s.median) && c.s.median > 0 ? ` (${fmt(x.median / c.s.median, 2)}x)` : ''}`).join('; ')}` });
  };
  ahead('symphony-bus ahead of the hand-built peers on CPU per delivered message (servers, the CPU point)',
    (r) => busWin(r, 'full') && busWin(r, 'full').cpuSPer1M, 2, ' s');
  ahead('symphony-bus ahead of the hand-built peers on CPU per delivered message with Redis\' CPU (the CPU point)',
    (r) => busWin(r, 'full') && busWin(r, 'full').cpuSPer1MWithRedis, 2, ' s');
  for (const key of ['half', 'full']) {
    ahead(`symphony-bus ahead of the hand-built peers on cross-node p99 (the ${key === 'half' ? 'latency' : 'CPU'} point)`,
      (r) => busWin(r, key) && busWin(r, key).cross && busWin(r, key).cross.p99Ms, 2, ' ms');
  }

  const resubName = 'resubscribed within 1 s of Redis returning (symphony-bus; gate on the worst repeat)';
  const rs = ours.map((r) => r.figures.restart).filter(Boolean);
  if (rs.length) {
    const worst = rs.some((x) => !finite(x.resubscribeS)) ? null : Math.max(...rs.map((x) => x.resubscribeS));
    const resumed = summarize(rs.map((x) => x.resumedS));
    out.push({ name: resubName, result: finite(worst) && worst <= 1 ? 'PASS' : 'FAIL',
      figures: `${finite(worst) ? `worst ${fmt(worst * 1000)} ms` : `not every channel subscribed again within ${rs[0].resubscribedWithin} s`} after Redis answered again `
        + `(Redis' PUBSUB SHARDNUMSUB/NUMSUB, polled every 10 ms; down ${fmt(rs[0].outageS, 1)} s); deliveries to nodes 1.. again after ${fmtRange(summarize(rs.map((x) => (finite(x.resumedS) ? x.resumedS * 1000 : null))), 0, ' ms')}`
        + `${resumed.n < rs.length ? ' (not in every repeat)' : ''}` });
  } else {
    na(resubName, 'needs the symphony-bus arm with the restart step (--bus-outage > 0)');
  }
  return out;
}

// ---- the publish phase's targets (issue 14) ------------------------------------

const PUB_OURS = 'jemalloc';
const PUB_PEER = 'uws';
// The names of publishGates() (the report lists them again in the publish section).
const PUB_GATE_RE = /^publish-heavy/;

function publishRuns(runs) {
  return runs.filter((r) => r.phase === 'publish' && r.figures);
}

/** The window of a publish run at `rate` publishes/s. */
function pubWin(r, rate) {
  return r.figures.windows.find((w) => w.rate === rate) || null;
}

/** A capacity as text: "≥ 150,000", "< 50,000", "90,000". */
function capText(cap) {
  if (!cap || cap.rate === null || cap.rate === undefined) return '–';
  return `${cap.bound === 'atLeast' ? '≥ ' : cap.bound === 'below' ? '< ' : ''}${fmt(cap.rate)}`;
}

/**
 * Issue 14's targets, as gates: only when the publish phase ran. symphony
 * (jemalloc) against uWebSockets.js (uws), medians over repeats: due-p99
 * at the largest named rate no worse; CPU per delivered message ≤ 0.95x at
 * every named rate; latency-bound capacity ≥ 1.15x (when the sweep ran).
 */
function publishGates(runs) {
  if (!runs.some((r) => r.phase === 'publish')) return [];
  const list = publishRuns(runs);
  const of = (arm) => list.filter((r) => r.arm === arm);
  const med = (arm, f) => summarize(of(arm).map(f));
  const out = [];
  const na = (name, why) => out.push({ name, result: 'n/a', figures: why });
  const rates = [...new Set(list.flatMap((r) => r.figures.windows.filter((w) => w.kind !== 'refine').map((w) => w.rate)))];
  const named = list.length && list[0].figures.points ? list[0].figures.points : rates;
  const hi = named.length ? Math.max(...named) : null;
  const need = `needs the ${PUB_OURS} and ${PUB_PEER} arms (--uws-path)`;
  const both = of(PUB_OURS).length && of(PUB_PEER).length;

  const p99Name = `publish-heavy: due-p99 at ${hi === null ? 'the largest rate' : `${fmt(hi)} publishes/s`} no worse than uWebSockets.js's (${PUB_OURS} vs ${PUB_PEER})`;
  const pick = (rate, k) => (r) => (pubWin(r, rate) ? pubWin(r, rate)[k] : null);
  if (both && hi !== null) {
    const a = med(PUB_OURS, pick(hi, 'p99Ms'));
    const b = med(PUB_PEER, pick(hi, 'p99Ms'));
    const ok = finite(a.median) && finite(b.median) && a.median <= b.median;
    out.push({ name: p99Name, result: finite(a.median) && finite(b.median) ? (ok ? 'PASS' : 'FAIL') : 'n/a',
      figures: `${PUB_OURS} ${fmtRange(a, 2, ' ms')} vs ${PUB_PEER} ${fmtRange(b, 2, ' ms')}${finite(a.median) && finite(b.median) && b.median > 0 ? ` (${fmt(a.median / b.median, 2)}x)` : ''}; `
        + `p50 ${fmtRange(med(PUB_OURS, pick(hi, 'p50Ms')), 2, ' ms')} vs ${fmtRange(med(PUB_PEER, pick(hi, 'p50Ms')), 2, ' ms')}; `
        + `delivered ${fmtRange(med(PUB_OURS, pick(hi, 'deliveredPct')), 1, '%')} vs ${fmtRange(med(PUB_PEER, pick(hi, 'deliveredPct')), 1, '%')}` });
  } else {
    na(p99Name, need);
  }

  const cpuName = `publish-heavy: CPU per delivered message ≤ 0.95x uWebSockets.js's at ${named.map((x) => fmt(x)).join(' and ')} publishes/s (${PUB_OURS} vs ${PUB_PEER})`;
  if (both && named.length) {
    const cmp = named.map((rate) => {
      const a = med(PUB_OURS, pick(rate, 'cpuSPer1M'));
      const b = med(PUB_PEER, pick(rate, 'cpuSPer1M'));
      const ratio = finite(a.median) && finite(b.median) && b.median > 0 ? a.median / b.median : null;
      return { rate, a, b, ratio };
    });
    const ok = cmp.every((x) => finite(x.ratio) && x.ratio <= 0.95);
    out.push({ name: cpuName, result: cmp.every((x) => finite(x.ratio)) ? (ok ? 'PASS' : 'FAIL') : 'n/a',
      figures: cmp.map((x) => `${fmt(x.rate)}/s: ${fmtRange(x.a, 2, ' s')} vs ${fmtRange(x.b, 2, ' s')} per 1M = ${fmt(x.ratio, 3)}x`).join('; ') + ' (limit 0.95x)' });
  } else {
    na(cpuName, need);
  }

  const capName = `publish-heavy: latency-bound capacity (largest rate with due-p99 ≤ ${list.length ? fmt(list[0].figures.p99BoundMs) : '50'} ms, delivered ≥ 99%) ≥ 1.15x uWebSockets.js's`;
  const caps = (arm) => of(arm).map((r) => r.figures.capacity).filter((c) => c && c.rate !== null);
  if (both && caps(PUB_OURS).length && caps(PUB_PEER).length) {
    const a = summarize(caps(PUB_OURS).map((c) => c.rate));
    const b = summarize(caps(PUB_PEER).map((c) => c.rate));
    const bounded = (arm) => caps(arm).filter((c) => c.bound !== 'exact').map((c) => capText(c));
    const loose = [...bounded(PUB_OURS).map((x) => `${PUB_OURS} ${x}`), ...bounded(PUB_PEER).map((x) => `${PUB_PEER} ${x}`)];
    const ratio = a.median / b.median;
    // A bound (every sweep point passed, or the first failed) makes the ratio a bound too: n/a unless it decides.
    const result = loose.length ? 'n/a' : ratio >= 1.15 ? 'PASS' : 'FAIL';
    out.push({ name: capName, result,
      figures: `${PUB_OURS} ${fmtRange(a, 0, '/s')} vs ${PUB_PEER} ${fmtRange(b, 0, '/s')}: ${fmt(ratio, 2)}x (limit 1.15x)`
        + `${loose.length ? `; not exact (the sweep's edge): ${loose.join(', ')}` : ''}` });
  } else {
    na(capName, both ? 'needs the capacity sweep (--publish-sweep)' : need);
  }
  return out;
}

// ---- the JSON shape's targets -------------------------------------------------

/**
 * Issue 13's targets for the JSON shape, reported, not gates: each
 * { name, result: 'MET'|'MISSED'|'n/a', figures }, on medians over repeats.
 */
function jsonTargets(runs) {
  const list = runs.filter((r) => r.phase === 'json' && r.figures);
  const med = (arm, k) => summarize(list.filter((r) => r.arm === arm).map((r) => r.figures[k]));
  const ours = 'jemalloc-deflate';
  const peers = ['ws-deflate', 'uws-deflate'].filter((a) => finite(med(a, 'cpuSPer1M').median));
  const out = [];
  const within = (name, k, limitPct, digits, unit) => {
    const a = med(ours, k);
    const b = med('jemalloc', k);
    if (!finite(a.median) || !finite(b.median)) return out.push({ name, result: 'n/a', figures: `needs the ${ours} and jemalloc arms` });
    const ratio = a.median / b.median;
    return out.push({ name, result: ratio <= 1 + limitPct / 100 ? 'MET' : 'MISSED',
      figures: `${ours} ${fmtRange(a, digits, unit)} vs jemalloc ${fmtRange(b, digits, unit)}: ${ratio >= 1 ? '+' : ''}${fmt((ratio - 1) * 100, 1)}% (target ≤ +${limitPct}%)` });
  };
  within('parked bytes per connection with deflate negotiated within 5% of without', 'bytesPerConnOverIdle', 5, 0, ' B');
  within('CPU per delivered message with compression within 10% of without', 'cpuSPer1M', 10, 2, ' s');
  const ahead = (name, k, digits, unit, orEqual) => {
    const a = med(ours, k);
    if (!finite(a.median) || !peers.length) return out.push({ name, result: 'n/a', figures: `needs ${ours} and a peer (ws-deflate, uws-deflate)` });
    const cmp = peers.map((p) => ({ p, s: med(p, k) })).filter((x) => finite(x.s.median));
    const ok = cmp.every((x) => (orEqual ? a.median <= x.s.median : a.median < x.s.median));
    return out.push({ name, result: ok ? 'MET' : 'MISSED',
      figures: `${ours} ${fmtRange(a, digits, unit)}; ${cmp.map((x) => `${x.p} ${fmtRange(x.s, digits, unit)} (${fmt(a.median / x.s.median, 2)}x)`).join('; ')}`
        + `${peers.length < 2 ? ` (only ${peers.join(', ')} ran)` : ''}` });
  };
  ahead('ahead of the peers on CPU per delivered message (compression on)', 'cpuSPer1M', 2, ' s', false);
  ahead('ahead of the peers on memory per parked connection (deflate negotiated)', 'bytesPerConnOverIdle', 0, ' B', false);
  ahead('ahead of the peers on memory per connection while active', 'activeBytesPerConnOverIdle', 0, ' B', false);
  ahead('wire bytes per delivered message no worse than the peers\'', 'wireBytesPerMsg', 1, ' B', true);
  return out;
}

// ---- charts ------------------------------------------------------------------

function armColor(arms, a) {
  return COLORS[arms.indexOf(a) % COLORS.length];
}

function charts(runs, arms) {
  const out = {};
  const soakArms = arms.filter((a) => runs.some((r) => r.phase === 'soak' && r.arm === a && r.series));
  const med = (list, f) => median(list.map(f));
  for (const a of soakArms) {
    const list = runs.filter((r) => r.phase === 'soak' && r.arm === a && r.series);
    const series = list.map((r, i) => ({
      name: `repeat ${r.repeat}`,
      points: r.series.footprint.map(([t, kib]) => [t, kib / 1024]),
      color: armColor(arms, a),
      opacity: i === 0 ? 1 : 0.35,
      width: i === 0 ? 1.6 : 1,
    }));
    const f = list.map((r) => r.figures);
    const refs = [
      { y: MiB(med(f, (x) => Math.max(...x.cycles.map((c) => c.peakKiB)))), label: 'peak', color: '#d62728' },
      { y: MiB(med(f, (x) => x.cycles[x.cycles.length - 1].troughKiB)), label: 'trough (last cycle)', color: '#ff7f0e' },
      { y: MiB(med(f, (x) => x.freshLowKiB)), label: 'fresh-low', color: '#2ca02c' },
      { y: MiB(med(f, (x) => x.zeroKiB)), label: 'zero', color: '#555' },
      { y: MiB(med(f, (x) => x.idleKiB)), label: 'idle', color: '#999', dash: '2,3' },
    ];
    const first = f[0];
    const vmarks = first ? [
      ...first.cycles.map((c, i) => ({ x: c.tUp, label: `c${i + 1}` })),
      { x: first.tq0, label: 'quiet' },
      { x: first.tz0, label: 'zero' },
    ] : [];
    out[`soak-${a}.svg`] = lineChart({
      title: `Soak footprint (VmRSS+VmSwap), arm ${a}`,
      xLabel: 'seconds since the server started',
      yLabel: 'MiB',
      series,
      refs,
      vmarks,
      y2: list[0] ? { label: 'open connections (repeat 1)', points: list[0].series.connections } : null,
    });
  }
  if (soakArms.length > 1) {
    out['soak-all.svg'] = lineChart({
      title: 'Soak footprint, every arm (repeat 1)',
      xLabel: 'seconds since the server started',
      yLabel: 'MiB',
      series: soakArms.map((a) => {
        const r = runs.find((x) => x.phase === 'soak' && x.arm === a && x.series);
        return { name: a, points: r.series.footprint.map(([t, kib]) => [t, kib / 1024]), color: armColor(arms, a) };
      }),
    });
  }
  const parkedArms = arms.filter((a) => runs.some((r) => r.phase === 'parked' && r.arm === a && r.figures));
  if (parkedArms.length) {
    const kinds = [['bytesPerConnOverIdle', 'over idle'], ['bytesPerConnMarginal', 'marginal'], ['allocBytesPerConn', "symphony's allocator"]];
    out['parked-bytes.svg'] = barChart({
      title: 'Server footprint per parked connection (median, min–max)',
      yLabel: 'bytes per connection',
      groups: kinds.map(([k, label]) => ({
        label,
        bars: parkedArms.map((a) => {
          const s = S(runs.filter((r) => r.phase === 'parked' && r.arm === a && r.figures), (r) => r.figures[k]);
          return { name: a, value: s.median, min: s.min, max: s.max, color: armColor(arms, a) };
        }),
      })),
      note: 'over idle = (footprint − idle) / connections at the largest level; marginal = between the two levels; allocator = its allocated bytes',
    });
  }
  const cpuRuns = runs.filter((r) => r.phase === 'cpu' && r.figures);
  const cpuArms = arms.filter((a) => cpuRuns.some((r) => r.arm === a));
  if (cpuArms.length) {
    const shapes = [...new Set(cpuRuns.flatMap((r) => r.figures.shapes.map((s) => s.shape)))];
    out['cpu-per-1M.svg'] = barChart({
      title: 'Server CPU seconds per 1M delivered messages (median, min–max)',
      yLabel: 'CPU-s per 1M messages',
      groups: shapes.map((shape) => ({
        label: shape,
        bars: cpuArms.map((a) => {
          const s = S(cpuRuns.filter((r) => r.arm === a), (r) => (r.figures.shapes.find((x) => x.shape === shape) || {}).cpuSPer1M);
          return { name: a, value: s.median, min: s.min, max: s.max, color: armColor(arms, a) };
        }),
      })),
    });
  }
  const bRuns = busRuns(runs);
  const bArms = arms.filter((a) => bRuns.some((r) => r.arm === a));
  if (bArms.length) {
    const points = [['full', 'CPU point'], ['half', 'latency point']];
    const bar = (a, f) => {
      const s = S(bRuns.filter((r) => r.arm === a), f);
      return { name: a, value: s.median, min: s.min, max: s.max, color: armColor(arms, a) };
    };
    out['bus-cpu-per-1M.svg'] = barChart({
      title: 'Several processes over Redis: server CPU seconds per 1M delivered (median, min–max)',
      yLabel: 'CPU-s per 1M delivered',
      groups: [
        ...points.map(([k, label]) => ({ label: `servers, ${label}`, bars: bArms.map((a) => bar(a, (r) => busWin(r, k) && busWin(r, k).cpuSPer1M)) })),
        { label: 'servers + Redis, CPU point', bars: bArms.map((a) => bar(a, (r) => busWin(r, 'full') && busWin(r, 'full').cpuSPer1MWithRedis)) },
      ],
      note: 'the sum of every server process\'s CPU (and Redis\') over the window ÷ messages delivered to the clients',
    });
    out['bus-p99.svg'] = barChart({
      title: 'Several processes over Redis: delivery latency p99 (median, min–max)',
      yLabel: 'ms',
      groups: points.flatMap(([k, label]) => [
        { label: `same-node, ${label}`, bars: bArms.map((a) => bar(a, (r) => busWin(r, k) && busWin(r, k).same.p99Ms)) },
        { label: `cross-node, ${label}`, bars: bArms.map((a) => bar(a, (r) => busWin(r, k) && busWin(r, k).cross && busWin(r, k).cross.p99Ms)) },
      ]),
      width: 900,
      note: 'same-node: clients of the publishing process (node 0); cross-node: of the others, pooled',
    });
  }
  const jsonRuns = runs.filter((r) => r.phase === 'json' && r.figures);
  const jsonArms = arms.filter((a) => jsonRuns.some((r) => r.arm === a));
  if (jsonArms.length) {
    const bars = (k, scale = 1) => jsonArms.map((a) => {
      const s = S(jsonRuns.filter((r) => r.arm === a), (r) => (finite(r.figures[k]) ? r.figures[k] * scale : null));
      return { name: a, value: s.median, min: s.min, max: s.max, color: armColor(arms, a) };
    });
    out['json-wire-bytes.svg'] = barChart({
      title: 'JSON shape: wire bytes per delivered message (median, min–max)',
      yLabel: 'payload bytes on the wire per message',
      groups: [{ label: 'wire (compressed where it was)', bars: bars('wireBytesPerMsg') }, { label: 'inflated', bars: bars('bytesPerMsg') }],
    });
    out['json-cpu-per-1M.svg'] = barChart({
      title: 'JSON shape: server CPU seconds per 1M delivered messages (median, min–max)',
      yLabel: 'CPU-s per 1M messages',
      groups: [{ label: 'CPU-s per 1M delivered', bars: bars('cpuSPer1M') }],
    });
    out['json-bytes-per-conn.svg'] = barChart({
      title: 'JSON shape: server footprint per connection over idle (median, min–max)',
      yLabel: 'bytes per connection',
      groups: [{ label: 'parked', bars: bars('bytesPerConnOverIdle') }, { label: 'active (traffic on)', bars: bars('activeBytesPerConnOverIdle') }],
    });
  }
  return out;
}

// ---- baseline ----------------------------------------------------------------

/**
 * --baseline: each base-* arm beside the arm it is the twin of, figure by
 * figure (medians and min–max over repeats). Not a gate. Rows: { figure,
 * arm, base, cur, old, ratio (cur ÷ old medians), overlap (the min–max
 * ranges overlap; null unless both arms have 2 repeats or more) }.
 */
function baselineComparison(meta, runs) {
  const rows = [];
  for (const b of meta.arms.filter((a) => a.baselineOf)) {
    const a = b.baselineOf;
    if (!meta.arms.some((x) => x.name === a)) continue;
    const of = (phase, arm) => runs.filter((r) => r.phase === phase && r.arm === arm && r.figures);
    const pick = (phase, arm, f) => summarize(of(phase, arm).map((r) => f(r.figures)));
    // Runs are interleaved: repeat k of the arm and of its twin ran side by
    // side, so their ratio cancels the drift between repeats; the spread of
    // those ratios is the comparison's own.
    const paired = (phase, f) => {
      const olds = new Map(of(phase, b.name).map((r) => [r.repeat, f(r.figures)]));
      return summarize(of(phase, a).map((r) => {
        const x = f(r.figures);
        const y = olds.get(r.repeat);
        return finite(x) && finite(y) && y !== 0 ? x / y : null;
      }));
    };
    const add = (figure, digits, phase, f) => {
      const cur = pick(phase, a, f);
      const old = pick(phase, b.name, f);
      if (!cur.n && !old.n) return;
      rows.push({ figure, digits, arm: a, base: b.name, cur, old,
        ratio: finite(cur.median) && finite(old.median) && old.median !== 0 ? cur.median / old.median : null,
        pairs: paired(phase, f),
        overlap: cur.n > 1 && old.n > 1 ? cur.min <= old.max && old.min <= cur.max : null });
    };
    add('parked B/conn over idle (largest level)', 0, 'parked', (f) => f.bytesPerConnOverIdle);
    add('parked B/conn marginal', 0, 'parked', (f) => f.bytesPerConnMarginal);
    const shapes = [...new Set(runs.filter((r) => r.phase === 'cpu' && r.figures && (r.arm === a || r.arm === b.name))
      .flatMap((r) => r.figures.shapes.map((x) => x.shape)))];
    const shapeOf = (f, shape) => f.shapes.find((x) => x.shape === shape) || {};
    for (const shape of shapes) add(`CPU-s per 1M delivered, ${shape}`, 2, 'cpu', (f) => shapeOf(f, shape).cpuSPer1M);
    for (const shape of shapes) add(`delivered %, ${shape}`, 1, 'cpu', (f) => shapeOf(f, shape).deliveredPct);
    for (const shape of shapes) add(`p99 ms, ${shape}`, 2, 'cpu', (f) => shapeOf(f, shape).p99ms);
    const rates = [...new Set(runs.filter((r) => r.phase === 'publish' && r.figures && (r.arm === a || r.arm === b.name))
      .flatMap((r) => r.figures.windows.map((w) => w.rate)))].sort((x, y) => x - y);
    const windowOf = (f, rate) => f.windows.find((w) => w.rate === rate) || {};
    for (const rate of rates) add(`publish: CPU-s per 1M delivered, ${fmt(rate)}/s`, 2, 'publish', (f) => windowOf(f, rate).cpuSPer1M);
    for (const rate of rates) add(`publish: delivered %, ${fmt(rate)}/s`, 1, 'publish', (f) => windowOf(f, rate).deliveredPct);
    for (const rate of rates) add(`publish: p99 ms, ${fmt(rate)}/s`, 2, 'publish', (f) => windowOf(f, rate).p99Ms);
    for (const key of ['ecdsa', 'rsa']) {
      add(`handshakes/s per server core, ${key === 'ecdsa' ? 'ECDSA P-256' : 'RSA 2048'}`, 0, 'handshakes',
        (f) => (f.keys.find((x) => x.key === key) || {}).perCoreS);
    }
    const most = (l) => (l.filter(finite).length ? Math.max(...l.filter(finite)) : null);
    add('soak: worst trough % of peak', 1, 'soak', (f) => most(f.cycles.map((c) => c.troughPctOfPeak)));
    add('soak: highest peak MiB', 1, 'soak', (f) => MiB(most(f.cycles.map((c) => c.peakKiB))));
  }
  return rows;
}

// ---- markdown ----------------------------------------------------------------

function markdown(res) {
  const { meta, runs } = res;
  const arms = meta.arms.map((a) => a.name);
  const L = [];
  const P = (s = '') => L.push(s);
  P(`# symphony benchmark — ${meta.preset} preset`);
  P();
  P(`- Date: ${meta.date} · duration ${fmt(meta.elapsedS / 60, 1)} min`);
  P(`- Command: \`${meta.command}\``);
  P(`- Machine: ${meta.machine.cpu}, ${meta.machine.nproc} CPUs, ${fmt(meta.machine.memMiB)} MiB RAM, Linux ${meta.machine.kernel}, Node ${meta.machine.node}; THP ${meta.machine.thp}; load average at start ${meta.machine.loadavg}`);
  const loads = runs.map((r) => r.loadavg).filter(finite);
  if (loads.length) {
    P(`- Other load on the machine: 1-minute load average at the start of each run ${fmt(Math.min(...loads), 1)}–${fmt(Math.max(...loads), 1)} `
      + `(${meta.machine.nproc} CPUs)${Math.max(...loads) > meta.machine.nproc ? ' — **the machine was shared and busy: CPU and latency figures carry that noise**' : ''}`);
  }
  P(`- Repeats: ${meta.repeats}${meta.repeats === 1 ? ' (**one repeat: no spread; medians are single values**)' : ''}; order: ${meta.fixedOrder ? 'fixed (A A A B B B …)' : 'interleaved (A B C A B C …)'}`);
  P(`- Arms: ${meta.arms.map((a) => `\`${a.name}\` (${a.what})`).join('; ')}`);
  if (meta.source) P(`- Code: ${checkout(meta.source)}${meta.baseline ? `; baseline (\`base-*\` arms): ${checkout(meta.baseline)}` : ''}`);
  for (const n of meta.notes) P(`- ${n}`);
  P(`- Populations: ${meta.populationNote}`);
  P(`- Pinning: ${meta.pinningNote}`);
  P(`- Footprint = VmRSS + VmSwap of the server process, sampled ${meta.cfg.sampleHz}×/s from /proc; CPU = utime + stime; a level's footprint is the median of its last ${meta.cfg.measure} s.`);
  P();
  const phasesRun = new Set(runs.map((r) => r.phase));
  const failedRuns = runs.filter((r) => r.error);
  if (failedRuns.length) {
    P('## Runs that failed');
    P();
    for (const r of failedRuns) P(`- ${r.phase} / ${r.arm} / repeat ${r.repeat}: ${r.error}`);
    P();
  }

  if (phasesRun.has('parked')) {
    const c = meta.cfg.parked;
    const m = byArm(runs, 'parked', arms);
    P('## Parked connections');
    P();
    P(`A fresh server at idle (${c.idle} s), then ${c.levels.map((x) => fmt(x)).join(' and ')} connections parked (no traffic, ${c.settle} s settle each), `
      + `then the same connections active: ${c.rate} msg/s each, ${c.size} B, ${c.topics} topics, ${c.active} s. Medians over repeats, (min–max).`);
    P();
    const rows = [];
    for (const [a, list] of m) {
      if (!list.length) continue;
      rows.push([a, fmtRange(S(list, (r) => r.figures.n)), fmtRange(S(list, (r) => MiB(r.figures.idleKiB)), 1),
        fmtRange(S(list, (r) => MiB(r.figures.levels[r.figures.levels.length - 1].fpKiB)), 1),
        fmtRange(S(list, (r) => r.figures.bytesPerConnTotal)), fmtRange(S(list, (r) => r.figures.bytesPerConnOverIdle)),
        fmtRange(S(list, (r) => r.figures.bytesPerConnMarginal)), fmtRange(S(list, (r) => r.figures.allocBytesPerConn)),
        fmtRange(S(list, (r) => r.figures.heapBytesPerConn))]);
    }
    P(table(['arm', 'connections', 'idle MiB', 'parked MiB', 'B/conn total', 'B/conn over idle', 'B/conn marginal', 'allocator B/conn', 'JS heap B/conn'], rows));
    P('_total_ = footprint ÷ connections; _over idle_ = (footprint − idle) ÷ connections; _marginal_ = between the two levels; '
      + '_allocator_ = growth of symphony\'s allocator `allocated` (its own counter; for ws: n/a) ÷ connections; _JS heap_ = growth of V8 heapUsed ÷ connections.');
    P();
    const rows2 = [];
    for (const [a, list] of m) {
      if (!list.length) continue;
      rows2.push([a, fmtRange(S(list, (r) => r.figures.activeMsgsPerS)), fmtRange(S(list, (r) => r.figures.activeDeliveredPct), 1),
        fmtRange(S(list, (r) => MiB(r.figures.activeDeltaKiB)), 2), fmtRange(S(list, (r) => r.figures.activeSlopeKiBs), 1),
        fmtRange(S(list, (r) => r.figures.activeCpuPct), 1)]);
    }
    P(table(['arm', 'delivered msg/s', 'delivered % of target', 'active − parked MiB', 'RSS slope KiB/s (active)', 'server CPU % (of one core)'], rows2));
    P('![bytes per parked connection](parked-bytes.svg)');
    P();
  }

  if (phasesRun.has('soak')) {
    const c = meta.cfg.soak;
    const m = byArm(runs, 'soak', arms);
    P('## Soak: peak ↔ trough cycles');
    P();
    P(`Each arm: first a **fresh-low** server that only ever sees the trough (${fmt(c.trough)} connections under the same churn, ${c.freshHold} s); `
      + `then a fresh server through ${c.cycles} cycles of ramp to ${fmt(c.peak)} at ${fmt(c.ramp)}/s under churn ${c.churn * 100}%/s → hold ${c.peakHold} s → drop to ${fmt(c.trough)} → hold ${c.troughHold} s, `
      + `traffic ${c.rate} msg/s per connection (${c.size} B, ${c.topics} topics) throughout; then a **quiet** trough (${fmt(c.trough)} connections handed to a churn-free loadgen, traffic stopped, ${c.quietHold} s; `
      + 'the handoff replaces the survivors of the cycles with fresh connections, so the quiet figure no longer holds survivors scattered through the peak\'s memory) '
      + `and a **zero** hold (every connection closed, ${c.zeroHold} s). Peak = the highest footprint from the start of the ramp to the drop; trough = the end of the trough hold; `
      + `+${c.afterDrop} s = ${c.afterDrop} s after the drop completed.`);
    P();
    const rows = [];
    for (const [a, list] of m) {
      if (!list.length) continue;
      const n = Math.max(...list.map((r) => r.figures.cycles.length));
      for (let k = 0; k < n; k++) {
        const cyc = list.map((r) => r.figures.cycles[k]).filter(Boolean);
        const fake = cyc.map((x) => ({ figures: x }));
        rows.push([a, String(k + 1), fmtRange(S(fake, (r) => MiB(r.figures.peakKiB)), 1), fmtRange(S(fake, (r) => MiB(r.figures.troughKiB)), 1),
          fmtRange(S(fake, (r) => r.figures.troughPctOfPeak), 1), fmtRange(S(fake, (r) => r.figures.troughOverFreshLow), 2),
          fmtRange(S(fake, (r) => MiB(r.figures.afterDropKiB)), 1), fmtRange(S(fake, (r) => MiB(r.figures.peakAllocatedKiB)), 1),
          fmtRange(S(fake, (r) => MiB(r.figures.troughAllocatedKiB)), 1)]);
      }
    }
    P(table(['arm', 'cycle', 'peak MiB', 'trough MiB', 'trough % of peak', 'trough ÷ fresh-low', `trough +${c.afterDrop} s MiB`, 'allocator allocated at peak MiB', 'at trough MiB'], rows));
    const rows2 = [];
    for (const [a, list] of m) {
      if (!list.length) continue;
      rows2.push([a, fmtRange(S(list, (r) => MiB(r.figures.idleKiB)), 1), fmtRange(S(list, (r) => MiB(r.figures.freshLowKiB)), 1),
        fmtRange(S(list, (r) => MiB(r.figures.peakGrowthKiB)), 1), fmtRange(S(list, (r) => r.figures.peakGrowthPctOfPeak), 2),
        fmtRange(S(list, (r) => MiB(r.figures.troughGrowthKiB)), 1), fmtRange(S(list, (r) => r.figures.troughGrowthPctOfPeak), 2),
        fmtRange(S(list, (r) => MiB(r.figures.quietKiB)), 1), fmtRange(S(list, (r) => MiB(r.figures.zeroKiB)), 1),
        fmtRange(S(list, (r) => MiB(r.figures.zeroResidentKiB)), 1)]);
    }
    P(table(['arm', 'idle MiB', 'fresh-low MiB', 'peak growth MiB', 'peak growth % of peak', 'trough growth MiB', 'trough growth % of peak', 'quiet MiB', 'zero MiB', 'allocator resident at zero MiB'], rows2));
    P('Growth = last cycle − first cycle, as a share of the first cycle\'s peak. Footprints include Node itself (the idle column); the allocator columns are symphony\'s own counters (for the system arms, what its build reports).');
    P();
    const rows3 = [];
    const worst = (list, f) => S(list, (r) => Math.max(...r.figures.cycles.map(f).filter(Number.isFinite)));
    for (const [a, list] of m) {
      if (!list.length) continue;
      const pct = (x, y) => (finite(x) && finite(y) && y > 0 ? (100 * x) / y : null);
      rows3.push([a, fmtRange(worst(list, (cy) => cy.overIdleTroughPctOfPeak), 1),
        fmtRange(worst(list, (cy) => MiB(cy.peakPagesKiB)), 2), fmtRange(worst(list, (cy) => MiB(cy.troughPagesKiB)), 2),
        fmtRange(worst(list, (cy) => cy.pagesTroughPctOfPeak), 1),
        fmtRange(worst(list, (cy) => pct(cy.afterDropPagesKiB, cy.peakPagesKiB)), 1),
        fmtRange(S(list, (r) => MiB(r.figures.zeroPagesKiB)), 2),
        fmtRange(S(list, (r) => MiB(r.figures.zeroMetadataKiB)), 2),
        fmtRange(S(list, (r) => r.figures.zeroOverIdle), 3),
        fmtRange(S(list, (r) => r.figures.reclaims), 0), fmtRange(S(list, (r) => (r.figures.reclaimMaxUs === null ? null : r.figures.reclaimMaxUs / 1000)), 2),
        fmtRange(worst(list, (cy) => cy.holdP999Ms), 1), fmtRange(worst(list, (cy) => cy.dropP999Ms), 1),
        fmtRange(S(list, (r) => r.figures.cyclesCpuS), 1), fmtRange(S(list, (r) => r.figures.cyclesSysS), 1),
        fmtRange(S(list, (r) => (finite(r.figures.cyclesMinflt) ? r.figures.cyclesMinflt / 1000 : null)), 0)]);
    }
    P('Where the memory is. Node itself (V8, libuv, glibc heap: the idle footprint) does not follow the load and dominates these small totals, so the policy is judged on what is symphony\'s: the footprint **over the idle server**, and the allocator\'s **pages** (active + dirty + muzzy over every arena: pages holding blocks or not yet given back; jemalloc\'s `resident` also books its radix-tree metadata as wholly resident, shown apart at zero). Worst cycle shown; _zero ÷ idle_ = the zero-connection footprint after its hold over the same process\'s idle footprint before the first cycle; _reclaims_ and _longest_ from the policy\'s counters (the time one reclaim held its IO thread); the p99.9 columns are delivery latency (send timestamp to client receive) of the worst single second, during the peak hold and from the drop to 10 s after it, where the reclaims run.');
    P();
    P(table(['arm', 'trough over idle, % of peak over idle', 'allocator pages at peak MiB', 'pages at trough MiB', 'pages trough % of peak', `pages +${c.afterDrop} s % of peak`, 'pages at zero MiB', 'metadata at zero MiB', 'zero ÷ idle', 'reclaims', 'longest reclaim ms', 'p99.9 at peak hold ms (worst second)', 'p99.9 through the drop ms (worst second)', 'server CPU s (cycles)', 'of it kernel s', 'minor faults (k)'], rows3));
    P();
    for (const a of arms) if (m.get(a) && m.get(a).length) P(`![soak footprint, ${a}](soak-${a}.svg)`);
    if ([...m.values()].filter((l) => l.length).length > 1) P('![soak footprint, every arm](soak-all.svg)');
    P();
  }

  if (phasesRun.has('cpu')) {
    const c = meta.cfg.cpu;
    const list = runs.filter((r) => r.phase === 'cpu' && r.figures);
    P('## Fan-out CPU');
    P();
    P(`${fmt(c.connections)} connections over ${c.topics} topics; the server ${meta.cpus.server ? `pinned to CPU ${meta.cpus.server} with ${meta.cfg.cpuThreads} IO thread(s)` : 'not pinned'}, `
      + `loadgen ${meta.cpus.loadgen ? `on CPU ${meta.cpus.loadgen}` : 'not pinned'}. `
      + (c.rampTrafficOff
        ? `The connections ramp with the traffic off; then the traffic starts, and the window is ${c.window} s from ${c.settle} s later. `
        : `(Runner version of this run: the traffic ran during the ramp.) The window is ${c.window} s from ${c.settle} s after the ramp. `)
      + 'CPU-s per GB counts payload bytes through the server both ways (published in + delivered out). Latency = due time (the servers stamp when each message was due, t0 + (n+1)/rate) to client receive, over every message after the ramp.');
    P();
    const shapes = [...new Set(list.flatMap((r) => r.figures.shapes.map((s) => s.shape)))];
    const rows = [];
    for (const shape of shapes) {
      for (const a of arms) {
        const l = list.filter((r) => r.arm === a).map((r) => r.figures.shapes.find((s) => s.shape === shape)).filter(Boolean).map((x) => ({ figures: x }));
        if (!l.length) continue;
        const limited = l.some((r) => r.figures.loadgenLimited);
        const partial = l.some((r) => r.figures.rampIncomplete);
        rows.push([shape, a, fmtRange(S(l, (r) => r.figures.msgsPerS)), fmtRange(S(l, (r) => r.figures.deliveredPct), 1),
          fmtRange(S(l, (r) => r.figures.serverCores), 3), fmtRange(S(l, (r) => r.figures.userSharePct), 1),
          fmtRange(S(l, (r) => r.figures.cpuSPerGB), 1), fmtRange(S(l, (r) => r.figures.cpuSPer1M), 2),
          fmtRange(S(l, (r) => r.figures.minfltPerS)), fmtRange(S(l, (r) => r.figures.p50ms), 2),
          fmtRange(S(l, (r) => r.figures.p99ms), 2), fmtRange(S(l, (r) => r.figures.p999ms), 2),
          `${fmtRange(S(l, (r) => r.figures.loadgenCpuPct))}${limited ? ' **loadgen-limited**' : ''}${partial ? ' **ramp incomplete**' : ''}`]);
      }
    }
    P(table(['shape', 'arm', 'delivered msg/s', 'delivered %', 'server cores', 'user-space % of server CPU', 'CPU-s per GB', 'CPU-s per 1M msgs', 'minor faults/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'loadgen CPU %'], rows));
    P('![CPU per 1M messages](cpu-per-1M.svg)');
    P();
  }

  if (phasesRun.has('json')) {
    const c = meta.cfg.json;
    const list = runs.filter((r) => r.phase === 'json' && r.figures);
    const armInfo = (a) => meta.arms.find((x) => x.name === a) || {};
    P('## JSON shape with permessage-deflate');
    P();
    P(`A fresh server per run, ${meta.cpus.server ? `pinned to CPU ${meta.cpus.server} with ${meta.cfg.cpuThreads} IO thread(s)` : 'not pinned'}, `
      + `loadgen ${meta.cpus.loadgen ? `on CPU ${meta.cpus.loadgen}` : 'not pinned'}: idle ${c.idle} s; ${fmt(c.connections)} connections over ${c.topics} topics `
      + `(${fmt(c.connections / c.topics)} subscribers per topic) ramp with the traffic off, every one offering \`permessage-deflate; client_no_context_takeover; server_no_context_takeover\` `
      + `(the arm decides whether the server accepts); parked ${c.parked} s; then each topic publishes ${c.rate} msg/s of a ~630 B JSON trade message `
      + '(bench/servers/json-trade.js: deterministic per topic and message, text frames, the due time as its first field `{"ts":N,`), '
      + `and after ${c.settle} s a window of ${c.window} s. loadgen inflates each compressed message whole (libdeflate) to read its time stamp.`);
    P();
    P('Thresholds: symphony and the fair ws arm compress messages of 128 B and more (symphony\'s default; ws\'s own default is 1024 B, '
      + 'which leaves every ~630 B message of this shape uncompressed: the `ws-deflate-defaults` arm); uWS has no threshold (it compresses whatever publish is asked to). '
      + 'No arm keeps compression context: symphony never does, ws honours the client\'s server_no_context_takeover, uWS\'s shared compressor answers it.');
    P();
    const rows = [];
    for (const a of arms) {
      const l = list.filter((r) => r.arm === a);
      if (!l.length) continue;
      const dfl = armInfo(a).deflate;
      const limited = l.some((r) => r.figures.loadgenLimited);
      rows.push([a, dfl ? (dfl.threshold ? `≥ ${dfl.threshold} B` : 'all') : 'off', fmtRange(S(l, (r) => r.figures.n)),
        fmtRange(S(l, (r) => r.figures.negotiated)),
        fmtRange(S(l, (r) => r.figures.bytesPerConnOverIdle)), fmtRange(S(l, (r) => r.figures.activeBytesPerConnOverIdle)),
        fmtRange(S(l, (r) => r.figures.msgsPerS)), fmtRange(S(l, (r) => r.figures.deliveredPct), 1),
        fmtRange(S(l, (r) => r.figures.compressedPct), 0),
        fmtRange(S(l, (r) => r.figures.wireBytesPerMsg), 1), fmtRange(S(l, (r) => r.figures.bytesPerMsg), 1),
        fmtRange(S(l, (r) => r.figures.wireRatio), 3),
        fmtRange(S(l, (r) => r.figures.serverCores), 3), fmtRange(S(l, (r) => r.figures.cpuSPer1M), 2),
        fmtRange(S(l, (r) => r.figures.p50ms), 2), fmtRange(S(l, (r) => r.figures.p99ms), 2), fmtRange(S(l, (r) => r.figures.p999ms), 2),
        `${fmtRange(S(l, (r) => r.figures.loadgenCpuPct))}${limited ? ' **loadgen-limited**' : ''}`]);
    }
    P(table(['arm', 'compresses', 'connections', 'deflate negotiated', 'parked B/conn over idle', 'active B/conn over idle',
      'delivered msg/s', 'delivered %', 'compressed %', 'wire B/msg', 'inflated B/msg', 'wire ÷ inflated', 'server cores',
      'CPU-s per 1M delivered', 'p50 ms', 'p99 ms', 'p99.9 ms', 'loadgen CPU %'], rows));
    P('_wire B/msg_ = frame payload bytes as they came (compressed where they were; the 2–4 B frame header not counted) per delivered message; '
      + '_parked_ = (footprint − idle) ÷ connections before any traffic; _active_ = the same at the end of the window (where a per-connection compressor shows); '
      + '_CPU-s per 1M_ = server CPU (every thread, and the kernel\'s receive work for the client sockets on loopback) per 1M delivered messages.');
    P();
    const srv = list.filter((r) => finite(r.figures.compressions));
    if (srv.length) {
      const rows2 = [];
      for (const a of arms) {
        const l = srv.filter((r) => r.arm === a);
        if (!l.length) continue;
        rows2.push([a, fmtRange(S(l, (r) => r.figures.compressions / r.figures.seconds), 1), fmtRange(S(l, (r) => r.figures.compressUsPerMsg), 1),
          fmtRange(S(l, (r) => r.figures.compressRatio), 3)]);
      }
      P('symphony\'s own counters over the window (`server.stats()`: compressed, compressMicros, compressBytesIn/Out):');
      P();
      P(table(['arm', 'compressions/s', 'µs per compression', 'compressed ÷ original'], rows2));
      P();
    }
    P('Targets (issue 13; reported, not gates):');
    P();
    for (const t of res.targets) P(`- **${t.result}** — ${t.name}: ${t.figures}`);
    P();
    P('![wire bytes per message](json-wire-bytes.svg)');
    P();
    P('![CPU per 1M delivered](json-cpu-per-1M.svg)');
    P();
    P('![bytes per connection](json-bytes-per-conn.svg)');
    P();
  }

  if (phasesRun.has('handshakes')) {
    const c = meta.cfg.handshakes;
    const list = runs.filter((r) => r.phase === 'handshakes' && r.figures);
    P('## TLS handshakes');
    P();
    P(`${fmt(c.connections)} new connections per key type against a server with 1 IO thread, each a full TLS handshake `
      + `(loadgen keeps no session; X25519 key exchange; TLS 1.3) and then the WebSocket upgrade, ${c.pending} in flight. `
      + '_per server core_ = connections ÷ the server process\'s CPU seconds over the ramp (its IO thread and its JS thread); '
      + '_wall_ = connections ÷ seconds, with loadgen\'s own TLS on the same 2 CPUs.');
    P();
    const rows = [];
    for (const key of ['ecdsa', 'rsa']) {
      for (const a of arms) {
        const l = list.filter((r) => r.arm === a).map((r) => r.figures.keys.find((x) => x.key === key)).filter(Boolean).map((x) => ({ figures: x }));
        if (!l.length) continue;
        rows.push([key === 'ecdsa' ? 'ECDSA P-256' : 'RSA 2048', a, fmtRange(S(l, (r) => r.figures.connections)),
          fmtRange(S(l, (r) => r.figures.perCoreS)), fmtRange(S(l, (r) => r.figures.wallPerS)),
          fmtRange(S(l, (r) => r.figures.serverCpuS), 2), fmtRange(S(l, (r) => r.figures.failed))]);
      }
    }
    P(table(['certificate', 'arm', 'connections', 'handshakes/s per server core', 'handshakes/s wall', 'server CPU-s', 'failed'], rows));
    P();
  }

  if (phasesRun.has('bus')) {
    const c = meta.cfg.bus;
    const list = busRuns(runs);
    const total = c.nodes * c.connections;
    const ms = (x) => (finite(x) ? x * 1000 : null);
    const pin = list.length ? list[0].figures.pin : null;
    P(`## Past one process: ${c.nodes} processes as one fan-out over Redis (bus)`);
    P();
    P(`${c.nodes} server processes × ${fmt(c.connections)} connections = ${fmt(total)} connections on this machine (each process under its open-file limit; `
      + `one loadgen per process${meta.cfg.shardMax < c.connections ? ', sharded' : ''}), ${c.topics} topics, each subscribed on every process `
      + `(connection n of a process subscribes topic n % ${c.topics}), binary messages of ${c.size} B carrying their due time and a per-topic sequence number `
      + `(loadgen --seq: a number seen again or lower is a duplicate or out of order, a jump counts missed messages), ${c.threads} IO thread(s) per symphony process, `
      + `${pin && pin.server ? `servers and Redis on CPU ${pin.server}, loadgen on ${pin.loadgen || 'the same CPUs'}` : 'nothing pinned (--cpus pins the servers and Redis)'}. `
      + `${meta.redis ? `Redis: ${meta.redis}, ` : ''}started by the runner on a free port of 127.0.0.1 with \`--save '' --appendonly no\`, a fresh one per run. `
      + 'Arms: **symphony-bus**: node 0 publishes (server.publish), nodes 1.. receive only through the bus; **symphony-local**: no Redis, every process '
      + 'publishes the same rate to its own subscribers (the same deliveries per connection: the cost without the bus); **ws-redis** / **uws-redis**: the hand-built '
      + 'relay (bench/servers/redis-relay.js: the redis npm client, a channel per topic, node 0 PUBLISHes and every node, node 0 included, sends what comes back to its sockets).');
    P();
    P(`Two rate points: the CPU point, ${fmt(c.rate)} deliveries/s in total (${fmt(c.rate / total, 3)} msg/s per connection = per topic), and the latency point, half of it; `
      + `each after ${c.settle} s a window of ${c.window} s. _same-node_ = clients of node 0 (the publisher's; in symphony-local every node is its own publisher), `
      + '_cross-node_ = clients of nodes 1.. (their latencies pooled into one distribution); latency = due time (stamped by the publisher) to client receive over exactly the window '
      + '(loadgen marks its edges). _delivered %_ = messages received ÷ (the publisher\'s publishes in the window × subscribers); _CPU-s per 1M_ = the '
      + `${c.nodes} server processes' CPU (/proc, utime + stime, every thread, and the kernel's work for the client sockets on loopback) per 1M delivered; Redis' own CPU beside it.`);
    P();
    const rows = [];
    for (const key of ['full', 'half']) {
      for (const a of arms) {
        const l = list.filter((r) => r.arm === a).map((r) => busWin(r, key)).filter(Boolean).map((w) => ({ figures: w }));
        if (!l.length) continue;
        const x = (f, d) => fmtRange(S(l, (r) => f(r.figures)), d);
        rows.push([key === 'full' ? `CPU point (${fmt(c.rate)}/s)` : `latency point (${fmt(c.rate / 2)}/s)`, a, x((w) => w.open), x((w) => w.msgsPerS),
          x((w) => w.deliveredPct, 2), x((w) => w.dups, 0), x((w) => w.back, 0), x((w) => w.gaps, 0),
          x((w) => w.same.p50Ms, 2), x((w) => w.same.p99Ms, 2), x((w) => w.same.p999Ms, 2),
          x((w) => w.cross && w.cross.p50Ms, 2), x((w) => w.cross && w.cross.p99Ms, 2), x((w) => w.cross && w.cross.p999Ms, 2),
          x((w) => w.serverCores, 3), x((w) => w.cpuSPer1M, 2), x((w) => w.redisCores, 3), x((w) => w.redisCpuSPer1M, 3),
          x((w) => w.cpuSPer1MWithRedis, 2), x((w) => w.loadgenCores, 2)]);
      }
    }
    P(table(['point', 'arm', 'connections', 'delivered msg/s', 'delivered %', 'duplicates', 'out of order', 'missed', 'same-node p50 ms', 'p99 ms', 'p99.9 ms',
      'cross-node p50 ms', 'p99 ms', 'p99.9 ms', 'server cores (all)', 'server CPU-s per 1M', 'Redis cores', 'Redis CPU-s per 1M', 'CPU-s per 1M with Redis', 'loadgen cores'], rows));
    P('_duplicates_: a message whose sequence number equals the last one its connection got; _out of order_: one below it (an older message again, or a late one); '
      + '_missed_: numbers skipped. Medians over repeats (min–max).');
    P();
    const rrows = [];
    for (const a of arms) {
      const l = list.filter((r) => r.arm === a && r.figures.restart).map((r) => ({ figures: r.figures.restart }));
      if (!l.length) continue;
      const x = (f, d) => fmtRange(S(l, (r) => f(r.figures)), d);
      const sumDropped = (r) => (r.busDropped.some(finite) ? r.busDropped.filter(finite).reduce((p, q) => p + q, 0) : null);
      rrows.push([a, x((r) => r.outageS, 2), x((r) => ms(r.resubscribeS), 0), x((r) => ms(r.resumedS), 0), x((r) => ms(r.busUpS), 0),
        x((r) => r.dups + r.back, 0), x((r) => r.gaps, 0), x(sumDropped, 0), x((r) => r.afterP99Ms, 1), x((r) => r.afterMaxMs, 1)]);
    }
    if (rrows.length) {
      P(`Redis killed (-9) at the latency point, started again ${c.outage} s later on the same port. _resubscribed_: from Redis answering PING again until it counts `
        + `every topic's channel subscribed by all ${c.nodes} nodes (PUBSUB SHARDNUMSUB + NUMSUB, polled every 10 ms); _delivering again_: until the first message `
        + 'reaches a client of each of nodes 1.. (the slowest); _bus up_: the nodes\' own \'up\' event (the slowest); duplicates and missed messages from the kill to '
        + `${c.afterRestart} s after Redis returned; _dropped_: the nodes' bus counter (publishes dropped while Redis was away; symphony only); p99/max: latency over the ${c.afterRestart} s after.`);
      P();
      P(table(['arm', 'down s', 'resubscribed after ms', 'delivering again after ms', 'bus up after ms', 'duplicates + out of order', 'missed', 'dropped (bus counter)',
        'p99 after ms', 'max after ms'], rrows));
      P();
    }
    P('Targets (issue 12), as gates:');
    P();
    for (const g of res.gates.filter((x) => BUS_GATE_RE.test(x.name))) P(`- **${g.result}** — ${g.name}: ${g.figures}`);
    P();
    P('![bus: CPU per 1M delivered](bus-cpu-per-1M.svg)');
    P();
    P('![bus: p99 latency](bus-p99.svg)');
    P();
  }

  if (phasesRun.has('publish')) {
    const c = meta.cfg.publish;
    const list = publishRuns(runs);
    const pin = list.length ? list[0].figures.pin : null;
    P(`## Publish-heavy: ${fmt(c.topics)} topics × 1 subscriber (publish)`);
    P();
    P(`A fresh server per run, ${pin && pin.server ? `pinned to CPU ${pin.server} with ${meta.cfg.cpuThreads} IO thread(s)` : 'not pinned'}, `
      + `loadgen ${pin && pin.loadgen ? `on CPU ${pin.loadgen}` : 'not pinned'}: ${fmt(c.connections)} connections ramp (no traffic), connection n subscribes topic n `
      + `(${fmt(c.topics)} topics, ${fmt(c.connections / c.topics)} subscriber(s) each), then the JS thread publishes R messages/s in total of ${c.size} B (binary, the due time first). `
      + 'The schedule is the same code for every arm (bench/servers/harness.js, `--stagger 1`): the topics take turns, message m goes to topic m mod N and is due at '
      + 'start + (m + 1) / R; the 1 ms timer publishes whatever has come due (~R / 1000 per tick), so each topic\'s messages are evenly spaced N / R s apart and no tick '
      + `publishes a round of every topic. Each rate point: ${c.settle} s settle, a window of ${c.window} s (its edges marked in loadgen, /proc and the server); `
      + `after a warm-up of ${c.warmup} s the points follow each other without a pause, except after a failing one: rate 0 until loadgen receives nothing (the drain). Points in ascending order: the sweep until the first point that fails `
      + `(delivered < ${c.minDeliveredPct}% or due-p99 > ${c.p99BoundMs} ms), ${c.refine} bisection(s) between the last pass and that failure, then the named points `
      + `(${c.points.map((x) => fmt(x)).join(', ')}/s) if not measured yet. _capacity_ = the largest passing rate below the first failure (≥: every sweep point passed; <: the first failed).`);
    P();
    const rates = [...new Set(list.flatMap((r) => r.figures.windows.map((w) => w.rate)))].sort((x, y) => x - y);
    const rows = [];
    for (const rate of rates) {
      for (const a of arms) {
        const l = list.filter((r) => r.arm === a).map((r) => pubWin(r, rate)).filter(Boolean).map((w) => ({ figures: w }));
        if (!l.length) continue;
        const x = (f, d) => fmtRange(S(l, (r) => f(r.figures)), d);
        const named = c.points.includes(rate);
        const limited = l.some((r) => r.figures.loadgenLimited);
        rows.push([`${named ? '**' : ''}${fmt(rate)}${named ? '**' : ''}`, a, `${l.length}`, x((w) => w.open), x((w) => w.publishedPerS), x((w) => w.msgsPerS),
          x((w) => w.deliveredPct, 2), x((w) => w.serverCores, 3), x((w) => w.userSharePct, 1), x((w) => w.cpuSPer1M, 2),
          x((w) => w.p50Ms, 2), x((w) => w.p99Ms, 2), x((w) => w.p999Ms, 2), x((w) => w.maxMs, 1),
          `${x((w) => w.loadgenCpuPct, 0)}${limited ? ' **loadgen-limited**' : ''}`,
          l.every((r) => r.figures.pass) ? 'yes' : l.some((r) => r.figures.pass) ? 'some repeats' : 'no']);
      }
    }
    P(table(['publishes/s', 'arm', 'runs', 'connections', 'published/s', 'delivered msg/s', 'delivered %', 'server cores', 'user-space %',
      'CPU-s per 1M delivered', 'due-p50 ms', 'due-p99 ms', 'due-p99.9 ms', 'max ms', 'loadgen CPU %', `p99 ≤ ${c.p99BoundMs} ms and ≥ ${c.minDeliveredPct}%`], rows));
    P('Named points in bold; the others are the capacity sweep (an arm stops climbing at its first failure, so not every arm has every rate; _runs_ = repeats with that point). '
      + '_delivered %_ = messages received ÷ (R × window × subscribers per topic); _published/s_ = the server\'s own count of publish calls over the window; '
      + '_CPU-s per 1M_ = the server process\'s CPU (/proc utime + stime at the window\'s edges: every thread, and the kernel\'s loopback receive work for the client sockets) per 1M delivered; '
      + 'latency = due time (stamped in the message) to client receive over exactly the window. Medians over repeats (min–max).');
    P();
    const crow = [];
    for (const a of arms) {
      const l = list.filter((r) => r.arm === a);
      if (!l.length) continue;
      crow.push([a, l.map((r) => capText(r.figures.capacity)).join(', '), fmtRange(summarize(l.map((r) => (r.figures.capacity ? r.figures.capacity.rate : null))), 0),
        l.map((r) => r.figures.windows.length).join(', ')]);
    }
    P(table(['arm', `capacity per repeat (publishes/s, p99 ≤ ${c.p99BoundMs} ms)`, 'median (min–max)', 'points measured per repeat'], crow));
    P('Targets (issue 14), as gates:');
    P();
    for (const g of res.gates.filter((x) => PUB_GATE_RE.test(x.name))) P(`- **${g.result}** — ${g.name}: ${g.figures}`);
    P();
  }

  if (res.baselineComparison && res.baselineComparison.length) {
    P('## This code vs the baseline');
    P();
    P(`Each \`base-*\` arm is its twin arm (same server script, load, settings and place in the interleaving) on the symphony of the baseline checkout `
      + `${meta.baseline ? `(${checkout(meta.baseline)})` : ''}. Medians over repeats (min–max); _ratio_ = this code's median ÷ the baseline's; `
      + '_per repeat_: the ratio of each repeat to its twin\'s, which ran beside it (median, min–max: the comparison\'s spread); '
      + '_ranges overlap_: the two min–max ranges overlap (– with one repeat: no range). Not a gate.');
    P();
    P(table(['figure', 'arm', 'this code', 'baseline arm', 'baseline', 'ratio', 'per repeat', 'ranges overlap'],
      res.baselineComparison.map((r) => [r.figure, r.arm, fmtRange(r.cur, r.digits), r.base, fmtRange(r.old, r.digits), fmt(r.ratio, 3),
        r.pairs ? fmtRange(r.pairs, 3) : '–', r.overlap === null ? '–' : r.overlap ? 'yes' : '**no**'])));
    P();
  }

  P('## Gates (set before collecting)');
  P();
  for (const g of res.gates) P(`- **${g.result}** — ${g.name}: ${g.figures}`);
  P();
  const notes = runs.filter((r) => r.notes && r.notes.length);
  if (notes.length || res.oddSummary.length) {
    P('## What the processes said');
    P();
    for (const line of res.oddSummary) P(`- ${line}`);
    P();
  }
  P(`Raw data in this folder: \`samples.jsonl\` (every /proc sample), \`server-stats.jsonl\` (the server's stats lines), \`events.jsonl\` (marks, loadgen events and summaries, server final lines), \`results.json\` (every figure of every run).`);
  return `${L.join('\n')}\n`;
}

function checkout(c) {
  return `${c.dir} at ${c.commit ? `${c.commit.slice(0, 12)}${c.dirty ? ' with uncommitted changes' : ''}` : '(not a git checkout)'}`;
}

/** Distinct notes of the runs (what the servers and loadgens printed), counted. */
function oddSummary(runs) {
  const counts = new Map();
  for (const r of runs) {
    for (const n of r.notes || []) {
      const key = `${r.arm}: ${n.replace(/\d+/g, 'N').slice(0, 200)}`;
      const e = counts.get(key) || { n: 0, example: `${r.arm} (${r.phase}): ${n.slice(0, 300)}` };
      e.n++;
      counts.set(key, e);
    }
  }
  return [...counts.values()].map((e) => `${e.example}${e.n > 1 ? ` (×${e.n})` : ''}`);
}

function build(res) {
  const arms = res.meta.arms.map((a) => a.name);
  res.gates = gates(res.runs, arms);
  res.targets = jsonTargets(res.runs);
  res.oddSummary = oddSummary(res.runs);
  res.baselineComparison = baselineComparison(res.meta, res.runs);
  return { md: markdown(res), charts: charts(res.runs, arms), gates: res.gates, targets: res.targets, baselineComparison: res.baselineComparison };
}

module.exports = { build, gates, jsonTargets, publishGates, baselineComparison };
