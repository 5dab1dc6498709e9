'use strict';
// The graph of src/io/ (issue 44): its modules in floors, the arrows
// between them (an #include of another module's header, or a call of a
// sy_ function another module's .c defines), the arrows that run up a
// floor, and the circles. `node scripts/io-graph.js [root]` prints the
// counts; __test__/repo/boundary.test.js uses the same functions.
//
// A module is a .c and its .h (src/io/conn/sy_conn.{c,h}); its floor is
// its folder under src/io/ (FLOORS, lowest first), or, for a file still
// flat in src/io/ (the layout before the floors), FLAT_FLOOR's entry.
const fs = require('node:fs');
const path = require('node:path');

/** The floors of src/io/, lowest first: each may use only those before it. */
const FLOORS = ['model', 'loop', 'conn', 'wire', 'app', 'thread'];
/** The thread (the top) lives in src/io/ itself. */
const TOP_FOLDER = '';
/** Where each flat file of the layout before floors belongs (to count that layout's arrows). */
const FLAT_FLOOR = {
  sy_topic: 'model', sy_history: 'model', sy_slots: 'model', sy_stats: 'model', sy_deflate: 'model',
  sy_reclaim: 'model', sy_budget: 'model', sy_ratelimit: 'model', sy_addrlimit: 'model', sy_events: 'model',
  sy_io_opts: 'model',
  sy_io_struct: 'loop', sy_io_thread: 'loop',
  sy_conn: 'conn', sy_io_send: 'conn',
  sy_peer: 'wire', sy_upgrade: 'wire', sy_sse_out: 'wire', sy_post: 'wire',
  sy_ask: 'app', sy_resume: 'app', sy_conflate: 'app', sy_park: 'app', sy_admit: 'app',
  sy_io: 'thread',
};

function walk(dir, exts, out = []) {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, exts, out);
    else if (exts.some((x) => e.name.endsWith(x))) out.push(p);
  }
  return out;
}

/** Comments and string literals blanked (line numbers kept). */
function code(text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' '))
    .replace(/\/\/.*$/gm, '')
    .replace(/"(?:[^"\\\n]|\\.)*"/g, '""');
}

/** The floor of a module path relative to src/io ('conn/sy_conn'), or null. */
function floorOf(mod) {
  const parts = mod.split('/');
  if (parts.length === 1) return FLAT_FLOOR[parts[0]] || 'thread';
  return FLOORS.includes(parts[0]) ? parts[0] : null;
}

/** The sy_ functions a C text defines (not static), by name. */
function definitions(text) {
  const out = [];
  const re = /^(?!static\b)[A-Za-z_][\w \t*]*?\b(sy_\w+)\s*\([^;{]*\)\s*\{/gm;
  let m;
  while ((m = re.exec(text)) !== null) out.push(m[1]);
  return out;
}

/** The sy_ functions a C text declares (prototypes ending in ';' at file scope). */
function declarations(text) {
  const out = [];
  const re = /^(?!static\b|#|typedef\b|\s)[A-Za-z_][\w \t*]*?\b(sy_\w+)\s*\([^;{)]*(?:\([^)]*\)[^;{)]*)*\)\s*;/gm;
  let m;
  while ((m = re.exec(text)) !== null) out.push(m[1]);
  return out;
}

/**
 * The graph of root/src/io: { modules: {mod: floor}, arrows: [[from, to, why]],
 * up: arrows whose target's floor is above the source's, cycles: [[mod...]] }.
 */
function ioGraph(root) {
  const base = path.join(root, 'src', 'io');
  const srcs = walk(base, ['.c', '.h']);
  const modOf = (f) => path.relative(base, f).split(path.sep).join('/').replace(/\.[ch]$/, '');
  const modules = {};
  const texts = {};
  for (const f of srcs) {
    const mod = modOf(f);
    modules[mod] = floorOf(mod);
    texts[f] = code(fs.readFileSync(f, 'utf8'));
  }
  // Who defines each function (by its .c).
  const definer = {};
  for (const f of srcs) {
    if (!f.endsWith('.c')) continue;
    for (const name of definitions(texts[f])) definer[name] = modOf(f);
  }
  const arrows = new Map();
  const add = (from, to, why) => {
    if (from === to || modules[to] === undefined) return;
    const k = `${from} -> ${to}`;
    if (!arrows.has(k)) arrows.set(k, [from, to, why]);
  };
  for (const f of srcs) {
    const from = modOf(f);
    const raw = fs.readFileSync(f, 'utf8');
    for (const m of raw.matchAll(/^#\s*include\s*"io\/([^"]+)\.h"/gm)) add(from, m[1], 'include');
    if (f.endsWith('.c')) {
      for (const m of texts[f].matchAll(/\b(sy_\w+)\s*\(/g)) {
        const to = definer[m[1]];
        if (to !== undefined) add(from, to, `calls ${m[1]}`);
      }
    }
  }
  const list = [...arrows.values()];
  const rank = (mod) => FLOORS.indexOf(modules[mod]);
  const up = list.filter(([from, to]) => rank(to) > rank(from));
  return { modules, arrows: list, up, cycles: cycles(Object.keys(modules), list) };
}

/** The strongly connected components of more than one node (Tarjan). */
function cycles(nodes, arrows) {
  const next = new Map(nodes.map((n) => [n, []]));
  for (const [a, b] of arrows) next.get(a).push(b);
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of next.get(v)) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v), idx.get(w)));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const n of nodes) if (!idx.has(n)) strong(n);
  return out;
}

/** The include cycles among the files of root/src (a header that, through others, includes itself). */
function srcIncludeCycles(root) {
  const base = path.join(root, 'src');
  const srcs = walk(base, ['.c', '.h']);
  const rel = (f) => path.relative(base, f).split(path.sep).join('/');
  const nodes = new Set(srcs.map(rel));
  const arrows = [];
  for (const f of srcs) {
    for (const m of fs.readFileSync(f, 'utf8').matchAll(/^#\s*include\s*"([^"]+)"/gm)) {
      if (nodes.has(m[1])) arrows.push([rel(f), m[1]]);
    }
  }
  return cycles([...nodes], arrows);
}

/** Declarations in a file of src/io of a sy_ function that a module on a higher floor defines. */
function declaredAbove(root) {
  const base = path.join(root, 'src', 'io');
  const g = ioGraph(root);
  const srcs = walk(base, ['.c', '.h']);
  const modOf = (f) => path.relative(base, f).split(path.sep).join('/').replace(/\.[ch]$/, '');
  const definer = {};
  for (const f of srcs.filter((x) => x.endsWith('.c'))) {
    for (const name of definitions(code(fs.readFileSync(f, 'utf8')))) definer[name] = modOf(f);
  }
  const bad = [];
  for (const f of srcs) {
    const mod = modOf(f);
    for (const name of declarations(code(fs.readFileSync(f, 'utf8')))) {
      const d = definer[name];
      if (d !== undefined && d !== mod && FLOORS.indexOf(g.modules[d]) > FLOORS.indexOf(g.modules[mod])) {
        bad.push(`${path.relative(root, f)}: declares ${name}, defined in io/${d} (floor ${g.modules[d]})`);
      }
    }
  }
  return bad;
}

function report(root) {
  const g = ioGraph(root);
  const lines = [];
  for (const fl of FLOORS) {
    const mods = Object.keys(g.modules).filter((m) => g.modules[m] === fl).sort();
    lines.push(`${fl}: ${mods.length} modules: ${mods.join(' ')}`);
  }
  lines.push(`arrows: ${g.arrows.length}`);
  lines.push(`upward arrows: ${g.up.length}`);
  for (const [a, b, why] of g.up) lines.push(`  up: ${a} (${g.modules[a]}) -> ${b} (${g.modules[b]}): ${why}`);
  lines.push(`cycles: ${g.cycles.length}${g.cycles.length ? ` (largest ${Math.max(...g.cycles.map((c) => c.length))} modules)` : ''}`);
  for (const c of g.cycles) lines.push(`  cycle: ${c.join(' ')}`);
  const inc = srcIncludeCycles(root);
  lines.push(`include cycles in src/: ${inc.length}`);
  for (const c of inc) lines.push(`  include cycle: ${c.join(' ')}`);
  const decl = declaredAbove(root);
  lines.push(`declared below, defined above: ${decl.length}`);
  for (const d of decl) lines.push(`  ${d}`);
  return lines.join('\n');
}

module.exports = { FLOORS, ioGraph, srcIncludeCycles, declaredAbove, report };

if (require.main === module) {
  console.log(report(path.resolve(process.argv[2] || path.join(__dirname, '..'))));
}
