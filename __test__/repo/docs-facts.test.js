'use strict';
// Facts the README and docs/ state, held to the code (issue 46) beside
// docs.test.js (dead links, runnable blocks) and api-doc.test.js (docs/api.md
// against the types and the error codes):
// - no link is empty (`[text]()`, `[](target)`);
// - the platform packages' tables and counts are lib/variants.js' PLATFORMS;
// - the main package's packed size they quote is npm pack's, to 0.1 MiB;
// - every `allocator.config.NAME` they name is a field of allocator.config;
// - the server's options are one list (binding.optionSchema, from
//   src/io/model/sy_io_opts.h): docs/api.md's table, ServerOptions in the types and
//   lib/options.js' DEFAULTS name the same options, with the list's defaults.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { PLATFORMS, platformPackageName } = require('../../lib/variants');

const root = path.resolve(__dirname, '..', '..');
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (page) => fs.readFileSync(path.join(root, page), 'utf8');
const prose = (text) => text.replace(/^```[\s\S]*?^```/gm, '');
const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];

test('docs: no empty link ([text]() or [](target))', () => {
  const empty = [];
  for (const page of pages) {
    const lines = prose(read(page)).split('\n');
    lines.forEach((line, i) => {
      for (const m of line.matchAll(/\[[^\]]*\]\(\s*\)|\[\]\([^)]*\)/g)) empty.push(`${page}:${i + 1}: ${m[0]}`);
    });
  }
  assert.deepEqual(empty, []);
});

test('docs: the platform packages\' tables list exactly PLATFORMS (lib/variants.js), and the counts say how many', () => {
  const names = PLATFORMS.map(platformPackageName).sort();
  for (const page of ['docs/faq.md', 'docs/builds.md']) {
    const text = read(page);
    const rows = [...text.matchAll(/^\| `(@symphony-ws\/[a-z0-9-]+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual([...new Set(rows)].sort(), names, `${page}: the table's packages`);
    const counts = [...text.matchAll(/\b(?:all|the)\s+(\w+)\s+(?:in\s+`optionalDependencies`|platform\s+packages)/g)].map((m) => m[1]);
    assert.ok(counts.length > 0, `${page} says how many platform packages there are`);
    assert.deepEqual([...new Set(counts)], [WORDS[PLATFORMS.length]], `${page}: ${PLATFORMS.length} platform packages`);
  }
});

test('docs: the main package\'s packed size they quote is npm pack\'s (to 0.1 MiB)', () => {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stderr);
  const mib = (JSON.parse(r.stdout)[0].size / 1048576).toFixed(1);
  const quoted = [];
  for (const page of ['docs/faq.md', 'docs/builds.md']) {
    for (const m of read(page).matchAll(/build from source: about ([0-9.]+) MiB packed/g)) quoted.push(`${page}: ${m[1]}`);
  }
  assert.equal(quoted.length, 2, 'faq.md and builds.md each quote it');
  assert.deepEqual(quoted.filter((q) => !q.endsWith(`: ${mib}`)), [], `npm pack: about ${mib} MiB`);
});

test('docs: every allocator.config.NAME they name is a field of allocator.config', () => {
  const { allocator } = require('../..');
  // The fields as the types declare them (interface AllocatorConfig), and,
  // on a jemalloc build, as the running allocator has them: the same.
  const dts = read('lib/index.d.ts');
  const body = dts.slice(dts.indexOf('interface AllocatorConfig'), dts.indexOf('\n}', dts.indexOf('interface AllocatorConfig')));
  const fields = [...body.matchAll(/^\s+(?:readonly\s+)?([A-Za-z_]+)\??:/gm)].map((m) => m[1]);
  assert.ok(fields.length > 3, 'lib/index.d.ts declares AllocatorConfig');
  if (allocator.config !== null) assert.deepEqual(Object.keys(allocator.config).sort(), [...fields].sort(), 'the types say what allocator.config has');
  const wrong = [];
  for (const page of pages) {
    for (const m of read(page).matchAll(/allocator\.config\.([A-Za-z_]+)/g)) {
      if (!fields.includes(m[1])) wrong.push(`${page}: allocator.config.${m[1]}`);
    }
  }
  assert.deepEqual(wrong, [], `allocator.config has ${fields.join(', ')}`);
});

test("docs/api.md: the option table's defaults are the server's (lib/options.js DEFAULTS)", () => {
  const { DEFAULTS } = require('../../lib/options');
  const text = read('docs/api.md');
  const rows = text.slice(text.indexOf('| option |')).split('\n').slice(2);
  // Defaults that are rules, not values: what the code does for each is tested where it is made.
  const RULES = { threads: 'min(2, CPUs)', maxFragments: 'max(1024, `maxPayload` / 64)' };
  const wrong = [];
  let checked = 0;
  for (const row of rows) {
    if (!row.startsWith('|')) break;
    const [, name, cell] = row.split('|').map((c) => c.trim());
    const key = name.replace(/`/g, '');
    assert.ok(Object.hasOwn(DEFAULTS, key), `docs/api.md names option ${key}, which DEFAULTS lacks`);
    if (RULES[key] !== undefined) {
      assert.equal(cell, RULES[key], key);
      continue;
    }
    let value;
    if (/^`[^`]+`$/.test(cell)) value = Function(`return (${cell.slice(1, -1)});`)();
    else if (/^\d[\d,]*$/.test(cell)) value = Number(cell.replace(/,/g, ''));
    else if (/^\d+ MiB$/.test(cell)) value = Number(cell.split(' ')[0]) * 1048576;
    else { wrong.push(`${key}: a default docs-facts cannot read: ${cell}`); continue; }
    checked++;
    try {
      assert.deepEqual(value, DEFAULTS[key]);
    } catch {
      wrong.push(`${key}: docs/api.md says ${cell}, DEFAULTS has ${JSON.stringify(DEFAULTS[key])}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.ok(checked > 30, `${checked} defaults checked`);
});

test('the option list (binding.optionSchema, from src/io/model/sy_io_opts.h) is the one docs/api.md, the types and the runtime use', () => {
  const { binding } = require('../../lib/native');
  const { DEFAULTS } = require('../../lib/options');
  const api = read('docs/api.md');
  const table = api.slice(api.indexOf('| option |')).split('\n').slice(2);
  const rows = new Map();
  for (const row of table) {
    if (!row.startsWith('|')) break;
    const [, name, cell, meaning] = row.split('|').map((c) => c.trim());
    rows.set(name.replace(/`/g, ''), { cell, meaning });
  }
  const dts = read('lib/index.d.ts');
  const start = dts.indexOf('export interface ServerOptions');
  const body = dts.slice(start, dts.indexOf('\n}', start));
  // Each property with the doc comment above it.
  const props = new Map([...body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*\n\s+([A-Za-z]+)\?:/g)].map((m) => [m[2], m[1]]));
  // One set of options everywhere: the runtime's defaults, the table's rows, the types' properties.
  assert.deepEqual([...rows.keys()].sort(), Object.keys(DEFAULTS).sort(), 'docs/api.md\'s table lists exactly the options');
  assert.deepEqual([...props.keys()].sort(), Object.keys(DEFAULTS).sort(), 'ServerOptions declares exactly the options');
  const schema = binding.optionSchema.filter((r) => r.path !== '');
  const wrong = [];
  let typed = 0;
  for (const r of schema) {
    const [top, part] = r.path.split('.');
    if (!rows.has(top)) { wrong.push(`${r.path}: not in docs/api.md's table`); continue; }
    if (r.default === null || (r.path === 'reclaim' && process.env.SYMPHONY_RECLAIM !== undefined)) continue;
    if (part !== undefined) {
      // A part's default (history.size 100, compression.level 6...) is said in its option's row.
      const said = r.default >= 1048576 && r.default % 1048576 === 0 ? `${r.default / 1048576} MiB` : String(r.default);
      if (!rows.get(top).cell.includes(said) && !rows.get(top).meaning.includes(said)) {
        wrong.push(`${r.path}: docs/api.md's ${top} row does not say its default ${said}`);
      }
      continue;
    }
    if (!Object.hasOwn(DEFAULTS, r.path) || (typeof DEFAULTS[r.path] !== 'object' && DEFAULTS[r.path] !== r.default)) {
      wrong.push(`${r.path}: the list's default is ${JSON.stringify(r.default)}, lib/options.js has ${JSON.stringify(DEFAULTS[r.path])}`);
    }
    // The types say the same default ("Default 120.", "Default 1 MiB.", "Default 'drop'.").
    const m = /Default:? ('[^']*'|\d[\d,]*(?: MiB)?|true|false|null)\b/.exec(props.get(r.path) ?? '');
    if (m === null) continue;
    typed++;
    const v = m[1].startsWith("'") ? m[1].slice(1, -1) : m[1].endsWith('MiB') ? Number(m[1].split(' ')[0]) * 1048576
      : JSON.parse(m[1].replace(/,/g, ''));
    if (v !== r.default) wrong.push(`${r.path}: lib/index.d.ts says Default ${m[1]}, the list ${JSON.stringify(r.default)}`);
  }
  assert.deepEqual(wrong, []);
  assert.ok(typed > 20, `${typed} defaults of the types checked`);
});
