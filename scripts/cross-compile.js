'use strict';
// The compile step of the gates that cross-build the addon for another
// system (scripts/macos-gate.js, scripts/windows-gate.js): binding.gyp's
// sources for that system, compiled two at a time with -Werror, each object
// cached by the hash of its source, every header of src/ and binding/, the
// flags and the toolchain's identity.

const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const DIRS = ['src', 'src/base', 'src/proto', 'src/net', 'src/io', 'src/io/model', 'src/io/loop', 'src/io/conn', 'src/io/wire', 'src/io/app', 'src/bus', 'src/tls', 'src/auth', 'binding'];

/** Every C source of the addon but the ones named in leave (paths from the repository's root). */
function sources(leave) {
  const list = [];
  for (const dir of DIRS) {
    for (const f of fs.readdirSync(path.join(root, dir)).sort()) if (f.endsWith('.c')) list.push(`${dir}/${f}`);
  }
  return list.filter((f) => !leave.includes(f));
}

/** A hash of every header of src/ and binding/: part of each object's key. */
function headersHash() {
  const h = crypto.createHash('sha256');
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.h')) h.update(p).update(fs.readFileSync(p));
    }
  };
  walk(path.join(root, 'src'));
  walk(path.join(root, 'binding'));
  return h.digest('hex');
}

function runAsync(cmd, args) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b) => { err += b; });
    p.on('close', (code) => resolve({ code, err }));
  });
}

/**
 * Compiles srcs with cc and flags into outDir/obj, reusing cached objects.
 * toolId: what names the compiler (its version or the package's integrity).
 * syntaxOnly: flags has -fsyntax-only; each file that passes leaves an empty
 * stamp in place of its object (so that a warm run checks nothing again).
 * Returns { objects, compiled }; throws with every compiler error.
 */
async function compileAll({ cc, flags, toolId, srcs, outDir, what, syntaxOnly = false }) {
  const base = crypto.createHash('sha256').update(`${toolId} ${flags.join(' ')}`).update(headersHash()).digest('hex');
  const objDir = path.join(outDir, 'obj');
  fs.mkdirSync(objDir, { recursive: true });
  const jobs = srcs.map((src) => {
    const key = crypto.createHash('sha256').update(base).update(src).update(fs.readFileSync(path.join(root, src))).digest('hex').slice(0, 16);
    return { src, obj: path.join(objDir, `${src.replace(/[/.]/g, '_')}-${key}.o`) };
  });
  const todo = jobs.filter((j) => !fs.existsSync(j.obj));
  const failures = [];
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const j = todo[next++];
      const tmp = `${j.obj}.tmp`;
      const r = await runAsync(cc, syntaxOnly ? [...flags, j.src] : [...flags, '-c', j.src, '-o', tmp]);
      if (r.code === 0 && syntaxOnly) fs.writeFileSync(j.obj, '');
      else if (r.code === 0) fs.renameSync(tmp, j.obj);
      else failures.push(`${j.src}:\n${r.err}`);
    }
  };
  await Promise.all([worker(), worker()]);
  if (failures.length) throw new Error(`${what}: compile errors:\n${failures.join('\n')}`);
  // Objects of older sources go.
  const keep = new Set(jobs.map((j) => path.basename(j.obj)));
  for (const f of fs.readdirSync(objDir)) if (!keep.has(f)) fs.rmSync(path.join(objDir, f), { force: true });
  return { objects: jobs.map((j) => j.obj), compiled: todo.length };
}

/** The Linux build's exports (binding/exports.map's global: list). */
function linuxExports() {
  const text = fs.readFileSync(path.join(root, 'binding', 'exports.map'), 'utf8');
  const global = /global:([^}]*?)local:/s.exec(text)[1];
  return global.split(';').map((s) => s.trim()).filter(Boolean).sort();
}

module.exports = { sources, headersHash, compileAll, linuxExports };
