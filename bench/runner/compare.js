'use strict';
// --compare REF: another commit of this repository, checked out and built
// beside the working tree (bench/out/compare/<commit>), so that a run can
// measure it as its baseline (the base-* arms) in the same run as this code.
// The guard against a slower delivery path (docs/performance.md, "Keeping
// it"): `npm run bench -- --compare main` before a change to src/io, src/net
// or sy_server.c lands.

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const { REPO } = require('./arms');

const COMPARE_DIR = path.join(REPO, 'bench', 'out', 'compare');

function git(args, cwd = REPO) {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** The full commit REF names, or an error that says REF is not one. */
function resolveRef(ref) {
  try {
    return git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  } catch {
    throw new Error(`--compare ${ref}: not a commit of ${REPO} (git rev-parse found none)`);
  }
}

/** Whether DIR holds a jemalloc build of this machine's platform. */
function hasBuild(dir) {
  const native = path.join(dir, 'native', `linux-${process.arch}`);
  return fs.existsSync(native) && fs.readdirSync(native).some((f) => /\.jemalloc-[0-9a-z]+\.node$/.test(f));
}

/**
 * The checkout of REF beside the working tree, built: a detached git
 * worktree at bench/out/compare/<commit> (made once, kept for the next run),
 * its node_modules this repository's (node-gyp), its native build made with
 * this repository's deps cache (no download). Returns the folder; `log`
 * hears each step that takes time.
 */
function prepareCompare(ref, log) {
  const commit = resolveRef(ref);
  const dir = path.join(COMPARE_DIR, commit.slice(0, 12));
  if (!fs.existsSync(path.join(dir, 'package.json'))) {
    fs.mkdirSync(COMPARE_DIR, { recursive: true });
    if (fs.existsSync(dir)) fs.rmSync(dir, { recursive: true, force: true });
    git(['worktree', 'prune']);
    log(`--compare ${ref}: checking out ${commit.slice(0, 12)} in ${path.relative(REPO, dir)}`);
    git(['worktree', 'add', '--detach', dir, commit]);
  }
  const modules = path.join(dir, 'node_modules');
  if (!fs.existsSync(modules)) fs.symlinkSync(path.join(REPO, 'node_modules'), modules, 'dir');
  if (!hasBuild(dir)) {
    log(`--compare ${ref}: building ${commit.slice(0, 12)} (jemalloc; deps from ${path.relative(REPO, path.join(REPO, 'deps', 'cache'))})`);
    const env = { ...process.env, SYMPHONY_CACHE_DIR: process.env.SYMPHONY_CACHE_DIR || path.join(REPO, 'deps', 'cache') };
    try {
      execFileSync(process.execPath, ['scripts/build.js', '--allocator=jemalloc'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      const why = `${e.stderr || ''}`.trim().split('\n').slice(-3).join(' | ');
      throw new Error(`--compare ${ref}: the build of ${commit.slice(0, 12)} in ${dir} failed: ${why}`);
    }
    if (!hasBuild(dir)) throw new Error(`--compare ${ref}: the build of ${commit.slice(0, 12)} left no jemalloc addon in ${dir}/native`);
  }
  return { dir, commit };
}

module.exports = { prepareCompare, resolveRef, COMPARE_DIR };
