'use strict';
// Hand-written SVG charts (no dependencies): a line chart over time with
// reference lines and an optional second axis, and a grouped bar chart with
// min–max whiskers.

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

function esc(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** About n "nice" ticks covering [lo, hi]. */
function ticks(lo, hi, n = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
  const out = [];
  // from the first tick >= lo to the first tick >= hi, so the data fit
  for (let k = Math.ceil(lo / step - 1e-9); ; k++) {
    const v = Math.round(k * step * 1e9) / 1e9;
    out.push(v);
    if (v >= hi - step * 1e-9 || out.length > 50) break;
  }
  return { step, values: out };
}

function num(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(0)}k`;
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return +v.toFixed(1) + '';
  return +v.toFixed(2) + '';
}

/**
 * series: [{ name, points: [[x, y]...], color, width, opacity, dash }]
 * refs: [{ y, label, color, dash }]  (horizontal reference lines, y axis)
 * y2: { label, points: [[x, y]...], color } (drawn as a light area on a right axis)
 * vmarks: [{ x, label }] (vertical marks)
 */
function lineChart({ title, xLabel, yLabel, series, refs = [], y2 = null, vmarks = [], width = 900, height = 420, yMin = 0 }) {
  const m = { l: 70, r: y2 ? 70 : 20, t: 40, b: 50 };
  const w = width - m.l - m.r;
  const h = height - m.t - m.b;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = [...series.flatMap((s) => s.points.map((p) => p[1])), ...refs.map((r) => r.y)].filter(Number.isFinite);
  const x0 = xs.length ? Math.min(...xs) : 0;
  const x1 = xs.length ? Math.max(...xs) : 1;
  const y0 = yMin === null ? Math.min(...ys) : yMin;
  const yt = ticks(y0, (ys.length ? Math.max(...ys) : 1) * 1.05);
  const yTop = yt.values[yt.values.length - 1] || 1;
  const xt = ticks(x0, x1, 8);
  const X = (x) => m.l + ((x - x0) / (x1 - x0 || 1)) * w;
  const Y = (y) => m.t + h - ((y - y0) / (yTop - y0 || 1)) * h;
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="#fff"/>`);
  out.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`);
  if (y2 && y2.points.length) {
    const vmax = Math.max(...y2.points.map((p) => p[1]), 1);
    const t2 = ticks(0, vmax * 1.05);
    const top2 = t2.values[t2.values.length - 1] || 1;
    const Y2 = (v) => m.t + h - (v / top2) * h;
    const pts = y2.points.map((p) => `${X(p[0]).toFixed(1)},${Y2(p[1]).toFixed(1)}`);
    out.push(`<polygon points="${X(y2.points[0][0]).toFixed(1)},${Y2(0)} ${pts.join(' ')} ${X(y2.points[y2.points.length - 1][0]).toFixed(1)},${Y2(0)}" fill="${y2.color || '#999'}" fill-opacity="0.12" stroke="none"/>`);
    for (const v of t2.values) {
      out.push(`<text x="${m.l + w + 6}" y="${Y2(v) + 4}" fill="#777">${num(v)}</text>`);
    }
    out.push(`<text transform="translate(${width - 12},${m.t + h / 2}) rotate(90)" text-anchor="middle" fill="#777">${esc(y2.label)}</text>`);
  }
  for (const v of yt.values) {
    out.push(`<line x1="${m.l}" x2="${m.l + w}" y1="${Y(v)}" y2="${Y(v)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.l - 6}" y="${Y(v) + 4}" text-anchor="end">${num(v)}</text>`);
  }
  for (const v of xt.values) {
    if (v < x0 || v > x1) continue;
    out.push(`<line x1="${X(v)}" x2="${X(v)}" y1="${m.t + h}" y2="${m.t + h + 4}" stroke="#333"/>`);
    out.push(`<text x="${X(v)}" y="${m.t + h + 18}" text-anchor="middle">${num(v)}</text>`);
  }
  out.push(`<rect x="${m.l}" y="${m.t}" width="${w}" height="${h}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${m.l + w / 2}" y="${height - 10}" text-anchor="middle">${esc(xLabel)}</text>`);
  out.push(`<text transform="translate(16,${m.t + h / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`);
  for (const vm of vmarks) {
    if (!Number.isFinite(vm.x)) continue;
    out.push(`<line x1="${X(vm.x)}" x2="${X(vm.x)}" y1="${m.t}" y2="${m.t + h}" stroke="#bbb" stroke-dasharray="2,3"/>`);
    if (vm.label) out.push(`<text x="${X(vm.x) + 3}" y="${m.t + 12}" fill="#888" font-size="10">${esc(vm.label)}</text>`);
  }
  for (const [i, s] of series.entries()) {
    if (!s.points.length) continue;
    const d = s.points.map((p, k) => `${k ? 'L' : 'M'}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join('');
    out.push(`<path d="${d}" fill="none" stroke="${s.color || COLORS[i % COLORS.length]}" stroke-width="${s.width || 1.5}" stroke-opacity="${s.opacity ?? 1}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
  }
  // reference lines; labels staggered from the right so close lines stay legible
  for (const [i, r] of refs.entries()) {
    if (!Number.isFinite(r.y)) continue;
    const c = r.color || '#555';
    out.push(`<line x1="${m.l}" x2="${m.l + w}" y1="${Y(r.y)}" y2="${Y(r.y)}" stroke="${c}" stroke-dasharray="${r.dash || '6,4'}"/>`);
    out.push(`<text x="${m.l + w - 4 - i * 130}" y="${Y(r.y) - 4}" text-anchor="end" fill="${c}" font-size="11" stroke="#fff" stroke-width="3" paint-order="stroke">${esc(r.label)} ${num(r.y)}</text>`);
  }
  // legend
  let lx = m.l + 8;
  for (const [i, s] of series.entries()) {
    if (!s.name) continue;
    const color = s.color || COLORS[i % COLORS.length];
    out.push(`<line x1="${lx}" x2="${lx + 18}" y1="${m.t + 14}" y2="${m.t + 14}" stroke="${color}" stroke-width="3" stroke-opacity="${s.opacity ?? 1}"/>`);
    out.push(`<text x="${lx + 22}" y="${m.t + 18}">${esc(s.name)}</text>`);
    lx += 30 + 7 * s.name.length;
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/**
 * groups: [{ label, bars: [{ name, value, min, max, color }] }]; every group
 * has the same bar names, in the same order (a legend lists them).
 */
function barChart({ title, yLabel, groups, width = 760, height = 400, note = '' }) {
  const m = { l: 70, r: 20, t: 60, b: 60 };
  const w = width - m.l - m.r;
  const h = height - m.t - m.b;
  const vals = groups.flatMap((g) => g.bars.flatMap((b) => [b.value, b.max])).filter(Number.isFinite);
  const yt = ticks(0, (vals.length ? Math.max(...vals) : 1) * 1.1);
  const yTop = yt.values[yt.values.length - 1] || 1;
  const Y = (v) => m.t + h - (v / yTop) * h;
  const names = groups.length ? groups[0].bars.map((b) => b.name) : [];
  const gw = w / Math.max(1, groups.length);
  const bw = Math.min(60, (gw * 0.8) / Math.max(1, names.length));
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="#fff"/>`);
  out.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`);
  for (const v of yt.values) {
    out.push(`<line x1="${m.l}" x2="${m.l + w}" y1="${Y(v)}" y2="${Y(v)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.l - 6}" y="${Y(v) + 4}" text-anchor="end">${num(v)}</text>`);
  }
  out.push(`<text transform="translate(16,${m.t + h / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`);
  for (const [gi, g] of groups.entries()) {
    const gx = m.l + gi * gw + (gw - bw * g.bars.length) / 2;
    for (const [bi, b] of g.bars.entries()) {
      const color = b.color || COLORS[bi % COLORS.length];
      const x = gx + bi * bw;
      if (Number.isFinite(b.value)) {
        out.push(`<rect x="${(x + 2).toFixed(1)}" y="${Y(Math.max(0, b.value)).toFixed(1)}" width="${(bw - 4).toFixed(1)}" height="${(Y(0) - Y(Math.max(0, b.value))).toFixed(1)}" fill="${color}"/>`);
        out.push(`<text x="${(x + bw / 2).toFixed(1)}" y="${(Y(Math.max(0, b.value, b.max || 0)) - 5).toFixed(1)}" text-anchor="middle" font-size="10">${num(b.value)}</text>`);
      } else {
        out.push(`<text x="${(x + bw / 2).toFixed(1)}" y="${Y(0) - 5}" text-anchor="middle" font-size="10">n/a</text>`);
      }
      if (Number.isFinite(b.min) && Number.isFinite(b.max) && b.max > b.min) {
        const cx = x + bw / 2;
        out.push(`<line x1="${cx}" x2="${cx}" y1="${Y(b.min)}" y2="${Y(b.max)}" stroke="#000"/>`);
        out.push(`<line x1="${cx - 5}" x2="${cx + 5}" y1="${Y(b.min)}" y2="${Y(b.min)}" stroke="#000"/>`);
        out.push(`<line x1="${cx - 5}" x2="${cx + 5}" y1="${Y(b.max)}" y2="${Y(b.max)}" stroke="#000"/>`);
      }
    }
    out.push(`<text x="${m.l + gi * gw + gw / 2}" y="${m.t + h + 18}" text-anchor="middle">${esc(g.label)}</text>`);
  }
  out.push(`<line x1="${m.l}" x2="${m.l + w}" y1="${Y(0)}" y2="${Y(0)}" stroke="#333"/>`);
  let lx = m.l;
  for (const [i, n] of names.entries()) {
    const color = (groups[0].bars[i] && groups[0].bars[i].color) || COLORS[i % COLORS.length];
    out.push(`<rect x="${lx}" y="34" width="12" height="12" fill="${color}"/>`);
    out.push(`<text x="${lx + 16}" y="44">${esc(n)}</text>`);
    lx += 30 + 7 * n.length;
  }
  if (note) out.push(`<text x="${m.l}" y="${height - 10}" fill="#666" font-size="11">${esc(note)}</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

module.exports = { lineChart, barChart, COLORS };
