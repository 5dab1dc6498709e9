'use strict';
// Every figure the pages of docs/ quote comes from somewhere a test reads
// (issue 46; docs-figures.test.js does the same for the README). Each number
// in a page's prose (outside code blocks and link targets) is one of:
// - a measurement: the section it is in (or a section above it) cites the
//   bench/results/<run> it was measured in (a link, or the run's name), and
//   the number is in that run's reports (its .md, .txt and .log files),
//   rounded as printed, in the report's unit or a thousand or a million of
//   them (12.9 KB: 12,948 B);
// - a value the code sets: HELD below makes the phrase from the source that
//   sets it (the running server's defaults and constants, lib/*.js, src/
//   #defines, the stats list) and the page must print exactly that phrase;
// - no figure: NONE below (per page, and ALL for every page) names it (an
//   RFC, a section, a year, a port in an example, an HTTP status or close
//   code whose meaning is checked by api-doc.test.js and lists.test.js...).
// A number that is none of these fails, with its page and line: give it its
// run, its source, or take it out.
//
// docs/internals.md and docs/pusher.md are not held here yet.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');
const RESULTS = path.join(root, 'bench', 'results');
const RUNS = new Set(fs.readdirSync(RESULTS));

/** A page's prose: code blocks and link targets blanked to spaces (so offsets are the file's). */
const prose = (text) => text
  .replace(/^```[\s\S]*?^```$/gm, (m) => m.replace(/[^\n]/g, ' '))
  .replace(/\]\([^)]*\)/g, (m) => `]${' '.repeat(m.length - 1)}`);
/** A number as prose writes it: 4,871 or 0.66 or 2048 (not part of a word, a version or a name). */
const NUMBER = /(?<![\w.-])\d[\d,]*(?:\.\d+)?(?![\w])/g;

/** The numbers of a run's reports (its .md, .txt, .log and extensionless files, in subfolders too). */
const reportCache = new Map();
function reportNumbers(run) {
  if (reportCache.has(run)) return reportCache.get(run);
  const nums = new Set();
  const walk = (dir) => {
    for (const f of fs.readdirSync(dir)) {
      const p = path.join(dir, f);
      if (fs.statSync(p).isDirectory()) walk(p);
      else if (/\.(md|txt|log)$/.test(f) || !f.includes('.')) {
        for (const m of fs.readFileSync(p, 'utf8').replace(/(\d),(?=\d{3})/g, '$1').matchAll(/(?<![\d.])\d+(?:\.\d+)?(?!\d)/g)) nums.add(Number(m[0]));
      }
    }
  };
  walk(path.join(RESULTS, run));
  reportCache.set(run, [...nums]);
  return reportCache.get(run);
}
/** Whether n (as printed) is in one of runs' reports, rounded as printed, in their unit or a thousand or a million of it. */
const rounded = new Map(); // run and digits -> every report number at that many digits, at each scale
function measured(n, runs) {
  const s = n.replace(/,/g, '');
  const digits = (s.split('.')[1] ?? '').length;
  const want = Number(s).toFixed(digits);
  return runs.some((run) => {
    const key = `${run} ${digits}`;
    if (!rounded.has(key)) rounded.set(key, new Set(reportNumbers(run).flatMap((r) => [1, 1e3, 1e6].map((scale) => (r / scale).toFixed(digits)))));
    return rounded.get(key).has(want);
  });
}

/** The runs each section of text cites (its own and its parents'), by offset: [{ at, runs }]. */
function sections(text) {
  const heads = [...text.matchAll(/^(#+) /gm)].map((m) => ({ at: m.index, level: m[1].length }));
  const bounds = [{ at: 0, level: 0 }, ...heads];
  const cited = (i) => {
    const body = text.slice(bounds[i].at, i + 1 < bounds.length ? bounds[i + 1].at : text.length);
    return [...body.matchAll(/(?<![\w-])(\d{4}-\d\d-\d\d-[\w.-]*[\w])/g)].map((m) => m[1]).filter((r) => RUNS.has(r));
  };
  return bounds.map((b, i) => {
    const runs = new Set(cited(i));
    // A section's parents: each earlier heading of a lower level (the page's top for all).
    for (let j = i - 1, level = b.level; j >= 0 && level > 0; j--) {
      if (bounds[j].level < level) { level = bounds[j].level; for (const r of cited(j)) runs.add(r); }
    }
    return { at: b.at, runs: [...runs] };
  });
}

/** Where a 1-based line of text starts. */
const lineOf = (text, at) => text.slice(0, at).split('\n').length;

// ---- the sources -------------------------------------------------------

let DEFAULTS = {}; try { ({ DEFAULTS } = require('../../lib/server')); } catch {}
const thousands = (n) => Math.round(n).toLocaleString('en-US');
const MiB = (n) => `${n / 1048576} MiB`;
/** The first group of re in file. */
function src(file, re) {
  const m = re.exec(read(file));
  assert.ok(m, `${file}: ${re}`);
  return m[1];
}
/** A #define's value in a C header: SY_X 8u, SY_X (64u * 1024u) evaluated. */
function define(file, name) {
  const v = src(file, new RegExp(`#define ${name}\\s+(.+?)\\s*(?:/[*/].*)?$`, 'm'));
  assert.match(v, /^[\d\s()u*+<-]+$/, `${file}: ${name} is a number: ${v}`);
  return Function(`return (${v.replace(/(\d)u/g, '$1')});`)();
}

/**
 * Values the code sets, as each page prints them: each phrase is made from
 * its source, and the page must print exactly it (a value that moves in its
 * source fails here until the page moves with it).
 */
const HELD = {
};

/** HTTP statuses and WebSocket close codes symphony answers with (what each means: api-doc.test.js, lists.test.js), not followed by a unit. */
const CODES = '(?:101|200|202|204|301|302|400|401|403|404|405|408|411|413|414|426|429|431|500|501|502|503|504|10(?:0[0-9]|1[0-5])|4\\d{3})';
const UNIT = '(?![\\d,.]|\\s*(?:ms|s|µs|B|KB|KiB|MB|MiB|GB|bytes|members|connections|clients|subscribers|topics|messages|entries|rooms|nodes|keys|tokens|sockets|times|publishes|deliveries|%|x|/s)(?![\\w-]))';

/** Numbers that are no figure, on every page. */
const ALL = [
  /\b20\d\d-\d\d-\d\d\b/, // a date
  /\bRFC \d+(?:,? §\s?\d+(?:\.\d+)*)?|§\s?\d+(?:\.\d+)*/, // a standard and its sections
  /^\s*(?:[-*] )?\d+\. /m, // a numbered list's item
  /\b[Ii]ssues? \d+(?: and \d+)?|#\d+/, // an issue of this project
  /\b[0-9a-f]{7,12}(?:\.\.[0-9a-f]{7,12})?\b(?=[^\n]*)(?<=[a-f][0-9a-f]*|\d{7,12})/, // a commit
  // another program's version (the project's own dependencies' versions: THIRD_PARTY_NOTICES.md, docs-figures.test.js)
  /\b(?:Node(?:\.js)?|Linux|Debian|Rocky Linux|Alpine|node:|OpenSSL|Redis|glibc|GLIBC_|musl|socket\.io|ws|uWebSockets\.js|npm|pnpm|yarn|Chromium|Chrome|Firefox|Safari|Wine|wine|macOS|Windows|Ubuntu|perf`?|GCC|gcc|clang|Clang|MinGW|jemalloc|libdeflate|hiredis|yyjson|Express|Fastify|TypeScript|ioredis|Valkey|HAProxy|haproxy|nginx|Envoy|Caddy|Python|Go|Java|Ruby|Bun|Deno|kernel|kernels|Kernel|ES|ECMAScript|Pusher|pusher-js|Kubernetes|Docker)\s?v?\d+(?:\.\d+)*(?:\.x)?\+?(?: or later)?/,
  new RegExp(`(?<![\\w.-])${CODES}${UNIT}`), // an HTTP status or a close code
  /`[^`\n]*(?:--|=|\$ )[^`\n]*`/, // a command line or a setting as typed
  /\b\d+[- ]vCPUs?\b|\bCPUs? \d(?:,\s?\d)*\b|\bcore \d\b|\b\d+ GiB(?= RAM|,)/, // the machine measured on, and the core pinned to
  /\b(?:TLS|HTTP)\/?\s?\d(?:\.\d)?(?: and \d\.\d)?|\bHTTP\/\d(?:\.\d)?|\bIPv[46]|\bx86_64|\bUTF-8|\bSHA-?\d+|\bP-256|\bsha256|\b(?:HS|RS|ES|PS)\d{3}|\bEd25519|\bbase64|\bv\d/, // names with a number in them
];

/** Numbers that are no figure, per page: a quote (or a pattern), with why. */
const NONE = {
};

/**
 * Not held yet: numbers these pages quoted when this test was written that
 * have no run, source or rule here yet (a measurement of a profile or a test
 * no file stores, a size worked out by hand...). Each is to be given its
 * run or source, or taken out of the page; this list may only shrink (a
 * phrase that is no longer on its page fails: take it out of the list).
 */
const PENDING = require('./docs-figures-pending.json');

/** The numbers of page not held, each with its line and words around it. */
function loose(page, { pending = true } = {}) {
  const raw = read(page);
  const text = prose(raw);
  const covered = new Array(text.length).fill(false);
  const cover = (at, len) => covered.fill(true, at, at + len);
  const problems = [];
  const unheld = [];
  for (const quote of HELD[page] ?? []) {
    const flat = text.replace(/\s+/g, ' ');
    let found = false;
    // Lines wrap anywhere: the phrase's spaces match any whitespace.
    const re = new RegExp(quote.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+'), 'g');
    for (const m of text.matchAll(re)) { found = true; cover(m.index, m[0].length); }
    if (!found) problems.push(`${page}: "${quote}" (made from its source) is not on the page${flat.includes(quote.split(' ')[0]) ? '' : ''}: the page or its source moved`);
  }
  for (const rule of [...ALL, ...(NONE[page] ?? []), ...(pending ? PENDING[page] ?? [] : [])]) {
    const re = typeof rule === 'string' ? new RegExp(rule.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+'), 'g') : new RegExp(rule.source, rule.flags.includes('g') ? rule.flags : `${rule.flags}g`);
    let found = false;
    for (const m of text.matchAll(re)) { found = true; cover(m.index, m[0].length); }
    if (!found && typeof rule === 'string') problems.push(`${page}: "${rule}" (${(NONE[page] ?? []).includes(rule) ? 'named as no figure' : 'not held yet'}) is not on the page: take it out of ${(NONE[page] ?? []).includes(rule) ? 'NONE' : 'docs-figures-pending.json'}`);
  }
  const secs = sections(raw);
  for (const m of text.matchAll(NUMBER)) {
    if (covered[m.index]) continue;
    let s = secs.length - 1;
    while (secs[s].at > m.index) s--;
    const { runs } = secs[s];
    if (runs.length > 0 && measured(m[0], runs)) continue;
    const at = lineOf(raw, m.index);
    const around = text.slice(Math.max(0, m.index - 40), m.index + m[0].length + 30).replace(/\s+/g, ' ').trim();
    problems.push(`${page}:${at}: ${m[0]} is not held: ${runs.length ? `not in ${runs.join(', ')}'s reports, ` : 'no run cited in its section, '}not made from a source (HELD), not named as no figure (NONE): "...${around}..."`);
    // Its line, as the prose has it (for docs-figures-pending.json).
    const start = text.lastIndexOf('\n', m.index) + 1;
    unheld.push(text.slice(start, (text.indexOf('\n', m.index) + 1 || text.length + 1) - 1).replace(/\s+/g, ' ').trim());
  }
  return Object.assign(problems, { unheld });
}

const PAGES = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md') && !['internals.md', 'pusher.md'].includes(f)).map((f) => `docs/${f}`);

for (const page of PAGES) {
  test(`docs-figures-pages: every number in ${page} is measured in a run it cites, made from its source, or named as no figure`, () => {
    assert.deepEqual([...loose(page)], []);
  });
}

test('docs-figures-pages: the rules name pages that exist', () => {
  for (const page of [...Object.keys(HELD), ...Object.keys(NONE)]) assert.ok(PAGES.includes(page), `${page} is a page held here`);
});

module.exports = { loose, PAGES, phrasesFor: (page) => [...new Set(loose(page, { pending: false }).unheld)] };
