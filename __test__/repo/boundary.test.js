'use strict';
// The boundary rules of DESIGN.md, read from the sources.
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
