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
