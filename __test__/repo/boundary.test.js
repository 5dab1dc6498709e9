'use strict';
// The boundary rules (docs/internals.md, 'Boundary rules' and 'The layers of
// src/'), read from the sources.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');

function files(dir, exts) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (exts.some((x) => e.name.endsWith(x))) out.push(p);
    }
  };
  walk(path.join(root, dir));
  return out;
}

// Comments and string literals removed, so that prose about malloc is allowed.
function code(text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' '))
    .replace(/\/\/.*$/gm, '')
    .replace(/"(?:[^"\\\n]|\\.)*"/g, '""');
}

const cFiles = [...files('src', ['.c', '.h']), ...files('binding', ['.c', '.h'])];
const ALLOC_MODULE = [path.join(root, 'src', 'base', 'sy_alloc.c'), path.join(root, 'src', 'base', 'sy_alloc.h')];

test('there are sources to check', () => {
  assert.ok(cFiles.length >= 6, `only ${cFiles.length} C files found`);
});

test('no libc allocation call outside the allocator module', () => {
  const bad = [];
  const re = /(^|[^_a-zA-Z0-9.>])(malloc|calloc|realloc|free|strdup|strndup|posix_memalign|aligned_alloc|valloc|memalign|reallocarray|asprintf|vasprintf|malloc_trim|mallopt)\s*\(/;
  for (const f of cFiles) {
    if (ALLOC_MODULE.includes(f)) continue;
    code(fs.readFileSync(f, 'utf8')).split('\n').forEach((line, i) => {
      if (re.test(line)) bad.push(`${path.relative(root, f)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(bad, []);
});

test('the allocator module never tunes the process\'s own malloc', () => {
  const text = code(ALLOC_MODULE.map((f) => fs.readFileSync(f, 'utf8')).join('\n'));
  assert.doesNotMatch(text, /\b(mallopt|malloc_trim|prctl|M_ARENA_MAX|setenv|putenv)\b/);
});

test('no external buffers hand native memory to JS', () => {
  const bad = [...cFiles, ...files('lib', ['.js'])].filter((f) =>
    /napi_create_external_(buffer|arraybuffer)|node_api_create_external/.test(code(fs.readFileSync(f, 'utf8'))));
  assert.deepEqual(bad.map((f) => path.relative(root, f)), []);
});

// What MSVC does not take, each in one door (the Windows gate's MSVC
// dialect check parses the rest as MSVC's C11; clang takes these silently
// in MSVC mode): GNU-only forms in src/base/sy_port.h, pthread in
// src/base/sy_thread.h. binding/glibc_floor.h and binding/glibc/ are
// Linux's glibc symbol versions, never built elsewhere.
const GNU_ONLY = /\b(__attribute__|__builtin_\w+|__typeof__|typeof|__thread|__int128|__extension__|__asm__|asm)\b/;
const LINUX_GLIBC = (f) => f === path.join(root, 'binding', 'glibc_floor.h') || f.startsWith(path.join(root, 'binding', 'glibc') + path.sep);

/** Every line of code (not comment or string) of src/ and binding/ outside door and LINUX_GLIBC that matches re. */
function outsideDoor(re, door) {
  const found = [];
  for (const f of cFiles) {
    if (f === path.join(root, door) || LINUX_GLIBC(f)) continue;
    code(fs.readFileSync(f, 'utf8')).split('\n').forEach((line, i) => {
      const m = re.exec(line);
      if (m) found.push(`${path.relative(root, f)}:${i + 1}: ${m[0]}`);
    });
  }
  return found;
}

test('GNU-only forms (__attribute__, __builtin_*, typeof, asm...) only in src/base/sy_port.h', () => {
  assert.deepEqual(outsideDoor(GNU_ONLY, 'src/base/sy_port.h'), []);
});

test('pthread only in src/base/sy_thread.h, the door to threads', () => {
  assert.deepEqual(outsideDoor(/\bpthread\w*/, 'src/base/sy_thread.h'), []);
});

test('src/ never includes the N-API headers', () => {
  const bad = files('src', ['.c', '.h']).filter((f) =>
    /#\s*include\s*[<"](node_api|js_native_api|node|uv)\.h[>"]/.test(fs.readFileSync(f, 'utf8')));
  assert.deepEqual(bad.map((f) => path.relative(root, f)), []);
});

test('only binding/ includes node_api.h, and every binding file is C with the same checks', () => {
  for (const f of files('binding', ['.c'])) {
    const text = fs.readFileSync(f, 'utf8');
    if (/napi_/.test(text)) assert.match(text, /#include "(addon|sy_napi)\.h"/, path.relative(root, f));
  }
});

// The layers of src/: each folder includes only the folders below it, and
// every include of a core header names its folder ("proto/sy_http.h"), so
// the dependencies show in the text. src/sy_server.{c,h} are the top.
const LAYERS = {
  base: [],
  proto: ['base'],
  net: ['base'],
  auth: ['base'],
  tls: ['base', 'net'],
  io: ['base', 'proto', 'net', 'auth'],
  bus: ['base', 'proto', 'net', 'io'],
};
const FOLDERS = Object.keys(LAYERS);
// Headers private to their folder (only its own files include them).
const PRIVATE = {
  'io/loop/sy_io_struct.h': 'io', 'io/loop/sy_io_thread.h': 'io', 'io/conn/sy_conn.h': 'io', 'io/wire/sy_upgrade.h': 'io',
  'io/model/sy_reclaim.h': 'io', 'io/wire/sy_peer.h': 'io',
  'bus/sy_bus_int.h': 'bus', 'bus/sy_bus_shard.h': 'bus', 'bus/sy_bus_subs.h': 'bus', 'bus/sy_bus_chan.h': 'bus',
  'bus/sy_bus_order.h': 'bus', 'bus/sy_bus_sentinel.h': 'bus',
};

// The floors of src/io, lowest first (scripts/io-graph.js has the same
// list and counts the graph's arrows): a file in src/io/<floor>/ includes
// only headers of its floor and those below; the thread's files, in
// src/io/ itself, are the top.
const { FLOORS: FLOORS_IO, ioGraph, srcIncludeCycles, declaredAbove } = require('../../scripts/io-graph.js');
/** The floor of a path under src/io ('conn/sy_conn.c': conn; 'sy_io.c': thread). */
function ioFloor(rel) {
  const parts = rel.split('/');
  return parts.length > 1 && FLOORS_IO.includes(parts[0]) ? parts[0] : 'thread';
}

/**
 * What is wrong with the includes of one file: `rel` is its path under the
 * repository root, `text` its source. Returns a list of messages.
 */
function includeViolations(rel, text) {
  const out = [];
  const parts = rel.split('/');
  const inSrc = parts[0] === 'src';
  const folder = inSrc ? (parts.length === 2 ? 'top' : parts[1]) : parts[0];
  code(text.replace(/#\s*include\s*"([^"]+)"/g, '#include <<$1>>')).split('\n').forEach((line, i) => {
    const m = /#\s*include\s*<<([^>]+)>>/.exec(line);
    if (!m) return;
    const inc = m[1];
    const where = `${rel}:${i + 1}: #include "${inc}"`;
    const target = inc.includes('/') ? inc.split('/')[0] : null;
    if (target === null) {
      // A bare name is a file of the same folder outside src/ (binding's
      // own headers), or a third-party header; a core header must be named
      // with its folder.
      if (/^sy_/.test(inc) && fs.existsSync(path.join(root, 'src', inc)) === false &&
          FOLDERS.some((f) => fs.existsSync(path.join(root, 'src', f, inc)))) {
        out.push(`${where}: name its folder`);
      }
      return;
    }
    if (!FOLDERS.includes(target)) return; // a third-party header (hiredis/, openssl/)
    // (The C unit tests are white-box: they may include a folder's private headers.)
    const whiteBox = rel.startsWith('__test__/c/');
    if (PRIVATE[inc] && folder !== PRIVATE[inc] && !whiteBox) out.push(`${where}: private to src/${PRIVATE[inc]}/`);
    if (inSrc && folder === 'io' && target === 'io') {
      // The floors of src/io (scripts/io-graph.js): one way down.
      const from = ioFloor(parts.slice(2).join('/'));
      const to = ioFloor(inc.split('/').slice(1).join('/'));
      if (FLOORS_IO.indexOf(to) > FLOORS_IO.indexOf(from)) {
        out.push(`${where}: src/io/${from === 'thread' ? '' : `${from}/`} may include only its floor and those below it (${FLOORS_IO.slice(0, FLOORS_IO.indexOf(from) + 1).join(', ')})`);
      }
      return;
    }
    if (!inSrc || folder === 'top' || folder === target) return;
    if (!LAYERS[folder].includes(target)) {
      out.push(`${where}: src/${folder}/ may include only ${LAYERS[folder].map((f) => `${f}/`).join(', ') || 'its own folder'}`);
    }
  });
  return out;
}

test('src/ is in its layer folders, and nothing else is there', () => {
  const stray = fs.readdirSync(path.join(root, 'src'), { withFileTypes: true })
    .filter((e) => (e.isDirectory() ? !FOLDERS.includes(e.name) : !/^sy_server(_int\.h|_publish\.c|\.[ch])$/.test(e.name)))
    .map((e) => e.name);
  assert.deepEqual(stray, []);
});

test('every include goes down the layers and names its folder', () => {
  const bad = [];
  for (const f of [...cFiles, ...files('__test__/c', ['.c', '.h']), ...files('__test__/fuzz', ['.c']),
    ...files('bench/loadgen', ['.c', '.h'])]) {
    bad.push(...includeViolations(path.relative(root, f).split(path.sep).join('/'), fs.readFileSync(f, 'utf8')));
  }
  assert.deepEqual(bad, []);
});

test('the include rule fails on an include that goes up, sideways, or names no folder', () => {
  assert.deepEqual(includeViolations('src/proto/sy_http.c', '#include "proto/sy_utf8.h"\n#include "base/sy_alloc.h"\n'), []);
  assert.equal(includeViolations('src/net/sy_outq.c', '#include "io/conn/sy_conn.h"\n').length, 2); // up, and private
  assert.match(includeViolations('src/base/sy_refbuf.c', '#include "proto/sy_ws_frame.h"\n')[0], /may include only its own folder/);
  assert.match(includeViolations('src/tls/sy_tls.c', '#include "io/sy_io.h"\n')[0], /src\/tls\/ may include only base\/, net\//);
  assert.match(includeViolations('src/io/sy_io.c', '#include "sy_alloc.h"\n')[0], /name its folder/);
  assert.match(includeViolations('binding/server.c', '#include "io/loop/sy_io_thread.h"\n')[0], /private to src\/io\//);
  // Inside src/io, a floor includes only its own and those below it.
  assert.deepEqual(includeViolations('src/io/app/sy_fanout.c', '#include "io/conn/sy_conn.h"\n#include "io/app/sy_conflate.h"\n'), []);
  assert.match(includeViolations('src/io/conn/sy_conn.c', '#include "io/app/sy_ask.h"\n')[0], /src\/io\/conn\/ may include only its floor and those below it \(model, loop, conn\)/);
  assert.match(includeViolations('src/io/model/sy_reclaim.c', '#include "io/sy_io.h"\n')[0], /src\/io\/model\/ may include only/);
  assert.deepEqual(includeViolations('src/io/sy_io.c', '#include "io/app/sy_protos.h"\n'), []);
  // Commented-out includes do not count.
  assert.deepEqual(includeViolations('src/base/sy_buf.c', '/* #include "io/sy_io.h" */\n'), []);
});

// A header's contract (docs/internals.md, rule 7): its first comment block
// states, each as a labelled paragraph, which threads may call it, who owns
// what its functions take and return, and how they report failure
// (base/sy_errors.h). Returns what name's text lacks: [] or one line naming
// the missing labels.
const CONTRACT = [['Threads', /^ \* Threads:/m], ['Ownership', /^ \* Ownership:/m], ['Errors', /^ \* Errors:/m]];
function contractMissing(name, text) {
  const first = /\/\*[\s\S]*?\*\//.exec(text);
  const top = first ? first[0] : '';
  const missing = CONTRACT.filter(([, re]) => !re.test(top)).map(([label]) => `${label}:`);
  return missing.length ? [`${name}: no ${missing.join(', ')}`] : [];
}

test('every header of src/ states its threads, ownership and errors', () => {
  const headers = files('src', ['.h']);
  assert.ok(headers.length >= 40, `only ${headers.length} headers found`);
  const bad = [];
  for (const f of headers) {
    bad.push(...contractMissing(path.relative(root, f).split(path.sep).join('/'), fs.readFileSync(f, 'utf8')));
  }
  assert.deepEqual(bad, []);
});

test('the header contract check fails on a header without its labels', () => {
  const x = 'src/base/sy_x.h';
  const full = '/*\n * sy_x — a module.\n *\n * Threads: any.\n *\n' +
    ' * Ownership: nothing is kept.\n *\n * Errors: none.\n */\n';
  assert.deepEqual(contractMissing(x, full), []);
  assert.deepEqual(contractMissing(x, '/*\n * sy_x — a module. Threads: any.\n */\nint x;\n'),
    [`${x}: no Threads:, Ownership:, Errors:`]);
  // Labels count only in the first comment, and only at the start of a line.
  assert.deepEqual(contractMissing(x, '/*\n * Threads: any.\n */\n/*\n * Ownership: none.\n * Errors: none.\n */\n'),
    [`${x}: no Ownership:, Errors:`]);
  assert.deepEqual(contractMissing(x, '/*\n * Threads: any. Ownership: none.\n * Errors: none.\n */\n'),
    [`${x}: no Ownership:`]);
  assert.deepEqual(contractMissing(x, 'int x;\n'), [`${x}: no Threads:, Ownership:, Errors:`]);
});

// Issue 44: src/io is a stack of floors with one way down, in the include
// graph and in the call graph (a .c calling a sy_ function another module
// defines), and nothing below names what is above it.
test('src/io: no arrow runs up a floor, no circle, nothing declared below what a floor above defines', () => {
  const g = ioGraph(root);
  assert.ok(g.arrows.length > 50, `only ${g.arrows.length} arrows found`);
  for (const floor of FLOORS_IO) {
    assert.ok(Object.values(g.modules).includes(floor), `no module on floor ${floor}`);
  }
  assert.deepEqual(g.up.map(([a, b, why]) => `${a} -> ${b}: ${why}`), []);
  assert.deepEqual(g.cycles, []);
  assert.deepEqual(declaredAbove(root), []);
});

test('no include cycle anywhere in src/', () => {
  assert.deepEqual(srcIncludeCycles(root), []);
});

test('the graph check finds an upward arrow and a circle (checked on a copy of src/io with one of each)', () => {
  const tmp = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'io-graph-'));
  try {
    const w = (rel, text) => {
      fs.mkdirSync(path.dirname(path.join(tmp, rel)), { recursive: true });
      fs.writeFileSync(path.join(tmp, rel), text);
    };
    w('src/io/model/sy_a.h', '#include "io/model/sy_b.h"\nvoid sy_a(void);\n');
    w('src/io/model/sy_a.c', '#include "io/model/sy_a.h"\nvoid sy_a(void) { sy_up(); }\n');
    w('src/io/model/sy_b.h', '#include "io/model/sy_a.h"\nvoid sy_b(void);\n');
    w('src/io/model/sy_b.c', '#include "io/model/sy_b.h"\n#include "io/model/sy_a.h"\nvoid sy_b(void) { sy_a(); }\n');
    w('src/io/app/sy_up.h', 'void sy_up(void);\n');
    w('src/io/app/sy_up.c', '#include "io/app/sy_up.h"\nvoid sy_up(void) {}\n');
    const g = ioGraph(tmp);
    assert.deepEqual(g.up.map(([a, b]) => `${a} -> ${b}`), ['model/sy_a -> app/sy_up']);
    assert.deepEqual(g.cycles, [['model/sy_a', 'model/sy_b']]);
    assert.deepEqual(srcIncludeCycles(tmp), [['io/model/sy_a.h', 'io/model/sy_b.h']]);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('the connection\'s core (src/io/loop, src/io/conn) names no protocol: it knows them by their tables', () => {
  // (A type such as sy_peer_addr_t, the connection's address, is not a protocol's.)
  const names = /\b(SY_WIRE_(WS|SSE|PROXY)|SY_PROTO_V[12]|sy_conn_(sse|v1|v2)|sy_(ws|sse|upgrade|peer|post|ask|resume|admit|conflate|park|subs|fanout)_\w+)\b/;
  const bad = [];
  for (const f of [...files('src/io/loop', ['.c']), ...files('src/io/conn', ['.c'])]) {
    code(fs.readFileSync(f, 'utf8')).split('\n').forEach((line, i) => {
      const m = names.exec(line);
      if (m && !m[0].endsWith('_t')) bad.push(`${path.relative(root, f)}:${i + 1}: ${m[0]}`);
    });
  }
  assert.deepEqual(bad, []);
});

test('no .c file of src/ is over 900 lines (split by seam, issue 44)', () => {
  const long = files('src', ['.c']).map((f) => [path.relative(root, f), fs.readFileSync(f, 'utf8').split('\n').length - 1])
    .filter(([, n]) => n > 900).map(([f, n]) => `${f}: ${n}`);
  assert.deepEqual(long, []);
});
