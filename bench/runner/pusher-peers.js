'use strict';
// The pusher phases' peer, Soketi 1.6, installed on demand from
// bench/peers/soketi/package.json into bench/out/peers/soketi/ (git-ignored;
// never a dependency of symphony: it pulls ~320 packages). `npm install`
// asks only the npm registry. Its uWebSockets.js dependency is a GitHub
// URL (v20.10.0) that npm cannot fetch here and whose binaries predate
// Node 20: package.json's `overrides` puts the npm republish
// uwebsockets@3.0.6 in its place (v20 binaries, loading on Node 20).
// Installed again when package.json changes; BENCH_SOKETI_DIR=DIR uses
// DIR as it is (a folder with node_modules/@soketi/soketi).

const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');

const BENCH = path.join(__dirname, '..');
const SPEC = path.join(BENCH, 'peers', 'soketi', 'package.json');
const DIR = path.join(BENCH, 'out', 'peers', 'soketi');

function installed(dir) {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', '@soketi', 'soketi', 'package.json'), 'utf8')).version;
    fs.accessSync(path.join(dir, 'node_modules', 'uWebSockets.js', 'package.json'));
    return v;
  } catch {
    return null;
  }
}

/** The folder Soketi is installed in (installing it first when missing or
 * stale); log(line) gets the progress. */
async function ensureSoketi(log) {
  if (process.env.BENCH_SOKETI_DIR) {
    const dir = path.resolve(process.env.BENCH_SOKETI_DIR);
    const v = installed(dir);
    if (!v) throw new Error(`BENCH_SOKETI_DIR=${dir}: no node_modules/@soketi/soketi with uWebSockets.js there`);
    log(`Soketi ${v}: ${dir} (BENCH_SOKETI_DIR)`);
    return { dir, version: v };
  }
  const spec = fs.readFileSync(SPEC, 'utf8');
  const copy = path.join(DIR, 'package.json');
  const v = installed(DIR);
  if (v && fs.existsSync(copy) && fs.readFileSync(copy, 'utf8') === spec) {
    log(`Soketi ${v}: ${path.relative(process.cwd(), DIR) || DIR} (installed)`);
    return { dir: DIR, version: v };
  }
  fs.mkdirSync(DIR, { recursive: true });
  fs.rmSync(path.join(DIR, 'node_modules'), { recursive: true, force: true });
  fs.rmSync(path.join(DIR, 'package-lock.json'), { force: true });
  fs.writeFileSync(copy, spec);
  log(`installing Soketi from ${path.relative(process.cwd(), SPEC)} into ${path.relative(process.cwd(), DIR)} (npm install, ~320 packages; 1-3 min)`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const child = spawn(npm, ['install', '--no-audit', '--no-fund', '--loglevel=http', '--omit=dev'], { cwd: DIR, stdio: ['ignore', 'pipe', 'pipe'] });
  let fetched = 0;
  let tail = [];
  const onLine = (l) => {
    if (/fetch GET 200/.test(l)) {
      fetched++;
      if (fetched % 50 === 0) log(`  npm: ${fetched} packages fetched`);
    } else if (l.trim()) {
      tail = [...tail.slice(-20), l];
    }
  };
  for (const s of [child.stdout, child.stderr]) {
    let buf = '';
    s.on('data', (d) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop();
      lines.forEach(onLine);
    });
  }
  const code = await new Promise((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`npm install of Soketi failed (exit ${code}):\n  ${tail.join('\n  ')}`);
  const got = installed(DIR);
  if (!got) throw new Error(`npm install of Soketi finished but ${DIR} has no @soketi/soketi with uWebSockets.js`);
  log(`Soketi ${got} installed (${fetched} packages fetched)`);
  return { dir: DIR, version: got };
}

module.exports = { ensureSoketi, SOKETI_DIR: DIR };
