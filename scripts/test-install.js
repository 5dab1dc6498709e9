#!/usr/bin/env node
'use strict';
// Installs the release's packages as a user would: from a registry (a local
// one on loopback serving the packed tarballs: scripts/local-registry.js),
// into empty projects, with a PATH that has node and no compiler, by npm,
// pnpm, yarn 4 and yarn 1, and checks what each package manager fetched:
// the main package and the one platform package that fits, nothing else
// (yarn 1 does not read `libc`, nor skip a non-matching optional
// dependency's download: what it does is checked as it is, and said in
// docs/faq.md). Then the installed project must load the addon from its
// platform package and pass the allocator's self-check.
//
// Besides this host, each package manager installs for other platforms by
// its own override (npm --os/--cpu/--libc, pnpm the same flags, yarn 4
// supportedArchitectures): what it fetches is the same decision it makes on
// that platform. When this run built the Windows package, the project npm
// installed for win32 is then run by node.exe under Wine: the addon loads
// from @symphony-ws/win32-x64. Platforms whose binaries this run did not build are served
// as stand-ins: the same package.json (name, os, cpu, libc), no binary, so
// the registry holds every name the published one will.
//
//   node scripts/test-install.js                  packs prebuilds/ (scripts/packages.js) and checks
//   node scripts/test-install.js --host-only      this host's installs only (release.yml on Alpine)
//
// Used by scripts/test-artifacts.js --pack. The package managers come from
// npm (npm pack checks their integrity), pinned below, cached in
// deps/cache/tools/.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startRegistry, manifestOfTarball } = require('./local-registry');
const { manifestOf, npmPack, MINGW_NOTICES } = require('./packages');
const { PLATFORMS, platformPackageName, platformPackage } = require('../lib/variants');
const { sh, mustSh } = require('./sh');

const root = path.resolve(__dirname, '..');
const cache = process.env.SYMPHONY_CACHE_DIR || path.join(root, 'deps', 'cache');

/** The package managers tried, pinned. */
const MANAGERS = {
  pnpm: { spec: 'pnpm@10.29.3', bin: 'bin/pnpm.cjs' },
  yarn4: { spec: '@yarnpkg/cli-dist@4.18.1', bin: 'bin/yarn.js' },
  yarn1: { spec: 'yarn@1.22.22', bin: 'bin/yarn.js' },
};

/** The platform package goal (issue 35): a download under 4 MiB. */
const GOAL_BYTES = 4 * 1048576;


/** spawnSync's result, without blocking the event loop (the registry answers from this process). */
function shAsync(cmd, args, { timeout, ...opts } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const timer = setTimeout(() => { out += `\n(killed after ${timeout} ms)`; child.kill('SIGKILL'); }, timeout);
    child.once('error', (error) => { clearTimeout(timer); resolve({ status: null, out, error }); });
    child.once('close', (status) => { clearTimeout(timer); resolve({ status, out }); });
  });
}


/** A package manager's entry script, fetched once into the cache. */
function managerScript(m) {
  const dir = path.join(cache, 'tools', m.spec.replace(/[@/]/g, '_'));
  const bin = path.join(dir, 'package', m.bin);
  if (fs.existsSync(bin)) return bin;
  fs.mkdirSync(dir, { recursive: true });
  const tgz = mustSh('npm', ['pack', m.spec, '--silent', '--pack-destination', dir]).trim().split('\n').pop();
  mustSh('tar', ['-xzf', path.join(dir, tgz), '-C', dir]);
  fs.rmSync(path.join(dir, tgz));
  return bin;
}

/**
 * Runs the checks; check(ok, what) records each, note(line) prints progress.
 * tarballs: { main, platforms: Map name -> tgz } (real packages of this run).
 */
async function installChecks({ check, note, tarballs, hostOnly = false, work }) {
  const mainPkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const host = platformPackage();
  check(host !== null, `this host (${process.platform}-${process.arch}) has a platform package`);
  if (host === null) return {};
  const hostName = platformPackageName(host);
  check(tarballs.platforms.has(hostName), `${hostName} was packed in this run`);

  // The main tarball: pure JS, with the licence and the notices, naming
  // every platform package at its version.
  const listing = mustSh('tar', ['-tzf', tarballs.main]).split('\n');
  const binaries = listing.filter((f) => /\.(node|so|dylib|dll)$/.test(f));
  check(binaries.length === 0, `the main package carries no binary (${binaries.slice(0, 3).join(', ') || 'none'})`);
  for (const f of ['LICENSE', 'CHANGELOG.md', 'THIRD_PARTY_NOTICES.md', 'lib/index.js', 'lib/index.d.ts', 'binding.gyp']) {
    check(listing.includes(`package/${f}`), `the main package carries ${f}`);
  }
  const published = manifestOfTarball(tarballs.main);
  const expected = Object.fromEntries(PLATFORMS.map((p) => [platformPackageName(p), mainPkg.version]));
  check(JSON.stringify(published.optionalDependencies) === JSON.stringify(expected),
    `the main package lists every platform package at ${mainPkg.version} in optionalDependencies`);
  for (const [name, tgz] of tarballs.platforms) {
    const files = mustSh('tar', ['-tzf', tgz]).split('\n');
    check(files.includes('package/LICENSE') && files.includes('package/THIRD_PARTY_NOTICES.md'), `${name} carries LICENSE and THIRD_PARTY_NOTICES.md`);
    check(files.some((f) => f.endsWith('.node')), `${name} carries its binaries`);
    if (name.endsWith('/win32-x64')) {
      check(files.includes(`package/${MINGW_NOTICES}`), `${name} carries ${MINGW_NOTICES} (the mingw-w64 runtime linked into the DLL)`);
    }
  }
  const hostBytes = fs.statSync(tarballs.platforms.get(hostName)).size;
  note(`  ${path.basename(tarballs.platforms.get(hostName))}: ${(hostBytes / 1048576).toFixed(2)} MiB (the one download of an install here)`);
  check(hostBytes < GOAL_BYTES, `${hostName} is under 4 MiB packed (${(hostBytes / 1048576).toFixed(2)} MiB)`);

  // Stand-ins for the platforms this run did not build. fileOf: each
  // platform package's tarball, real or stand-in, by name.
  const fileOf = new Map(tarballs.platforms);
  for (const p of PLATFORMS) {
    if (fileOf.has(platformPackageName(p))) continue;
    const dir = path.join(work, 'stand-in', p.name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifestOf(p, mainPkg), files: ['README.md'] }));
    fs.writeFileSync(path.join(dir, 'README.md'), 'A stand-in of this test run: the package.json of the real package, no binary.\n');
    fileOf.set(platformPackageName(p), npmPack(dir, dir));
  }
  const all = [tarballs.main, ...fileOf.values()];
  const registry = await startRegistry(all);
  try {
    // A PATH with node, sh and npm only: no cc, gcc, make or python.
    const bin = path.join(work, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    fs.symlinkSync(fs.realpathSync('/bin/sh'), path.join(bin, 'sh'));
    const npmCli = fs.realpathSync(mustSh('sh', ['-c', 'command -v npm']).trim());
    fs.writeFileSync(path.join(bin, 'npm'), `#!/bin/sh\nexec "${process.execPath}" "${npmCli}" "$@"\n`, { mode: 0o755 });
    for (const tool of ['cc', 'gcc', 'make', 'python3']) {
      check(sh('sh', ['-c', `command -v ${tool}`], { env: { PATH: bin } }).status !== 0, `no ${tool} on the install PATH`);
    }
    const scripts = Object.fromEntries(Object.entries(MANAGERS).map(([k, m]) => [k, managerScript(m)]));
    let n = 0;
    /** One install into a fresh project with a fresh cache; returns { ok, out, app, fetched }. */
    const install = async (manager, { platform = null, args = [], allow = null } = {}) => {
      const app = path.join(work, `app-${++n}`);
      const home = path.join(work, `home-${n}`);
      fs.mkdirSync(app);
      fs.mkdirSync(home);
      fs.writeFileSync(path.join(app, 'package.json'), `${JSON.stringify({ name: 'app', version: '1.0.0', private: true,
        ...(allow ? { allowScripts: allow } : {}) }, null, 2)}\n`);
      const env = { PATH: bin, HOME: home, npm_config_update_notifier: 'false', COREPACK_ENABLE_STRICT: '0' };
      const o = platform ? { os: platform.os, cpu: platform.cpu, libc: platform.libc } : null;
      let cmd;
      let argv;
      if (manager === 'npm') {
        cmd = path.join(bin, 'npm');
        argv = ['install', 'symphony-ws', '--registry', registry.url, '--cache', path.join(home, 'cache'), '--no-audit', '--no-fund',
          '--foreground-scripts', ...(o ? [`--os=${o.os}`, `--cpu=${o.cpu}`, ...(o.os === 'linux' ? [`--libc=${o.libc}`] : [])] : []), ...args];
      } else if (manager === 'pnpm') {
        cmd = path.join(bin, 'node');
        argv = [scripts.pnpm, 'add', 'symphony-ws', '--registry', registry.url, '--store-dir', path.join(home, 'store'),
          ...(o ? [`--os=${o.os}`, `--cpu=${o.cpu}`, ...(o.os === 'linux' ? [`--libc=${o.libc}`] : [])] : []), ...args];
      } else if (manager === 'yarn4') {
        fs.writeFileSync(path.join(app, 'yarn.lock'), '');
        fs.writeFileSync(path.join(app, '.yarnrc.yml'), [
          `npmRegistryServer: "${registry.url.replace(/\/$/, '')}"`, 'unsafeHttpWhitelist: ["127.0.0.1"]',
          'nodeLinker: node-modules', 'enableGlobalCache: false', 'enableTelemetry: false',
          ...(o ? ['supportedArchitectures:', `  os: [${o.os}]`, `  cpu: [${o.cpu}]`, ...(o.os === 'linux' ? [`  libc: [${o.libc}]`] : [])] : []),
        ].join('\n') + '\n');
        cmd = path.join(bin, 'node');
        argv = [scripts.yarn4, 'add', 'symphony-ws', ...args];
      } else {
        cmd = path.join(bin, 'node');
        argv = [scripts.yarn1, 'add', 'symphony-ws', '--registry', registry.url, '--cache-folder', path.join(home, 'cache'),
          '--no-progress', '--non-interactive', ...args];
      }
      const from = registry.fetched.length;
      const r = await shAsync(cmd, argv, { cwd: app, env, timeout: 300000 });
      return { ok: r.status === 0, out: r.out, app, env, fetched: registry.fetched.slice(from).sort() };
    };
    const want = (p) => [tarballs.main, fileOf.get(platformPackageName(p))].map((f) => path.basename(f)).sort();
    /** The platform packages installed in a project: in node_modules/@symphony-ws/, or pnpm's node_modules/.pnpm/. */
    const installed = (app) => {
      const dir = path.join(app, 'node_modules', '@symphony-ws');
      const pnpm = path.join(app, 'node_modules', '.pnpm');
      if (fs.existsSync(pnpm)) {
        return fs.readdirSync(pnpm).filter((d) => d.startsWith('@symphony-ws+')).map((d) => d.slice(13).replace(/@[^@]*$/, '')).sort();
      }
      return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
    };
    /** The installed project loads the addon from its platform package; returns what it said. */
    const loads = (label, r) => {
      const q = sh(path.join(bin, 'node'), ['-e', `const s = require('symphony-ws'); const c = s.allocator.selfCheck();
        console.log(JSON.stringify({ ok: c.ok, path: s.allocator.nativePath }))`], { cwd: r.app, env: r.env });
      let res = null;
      try { res = JSON.parse(q.stdout); } catch { /* below */ }
      check(res !== null && res.ok === true, `${label}: the installed project loads the addon and its self-check passes (${q.out.trim().slice(0, 300)})`);
      if (res) {
        check(res.path.includes(`${path.sep}@symphony-ws${path.sep}${host.name}${path.sep}`),
          `${label}: the addon comes from ${hostName} (${path.relative(r.app, res.path)})`);
      }
      return res;
    };

    /**
     * A project npm installed for Windows (--os=win32), run as it is by the
     * official node.exe under Wine (scripts/windows-gate.js): require()
     * loads the DLL from the platform package and its self-check passes.
     */
    const loadsUnderWine = async (label, p, app) => {
      const gate = require('./windows-gate');
      const tc = gate.toolchain();
      const logFile = path.join(work, `wine-${p.name}-${n}.log`);
      const r = await gate.runWine(tc, gate.wineEnv(tc), [gate.nodeExe(), '-e',
        "const s = require('symphony-ws'); console.log(JSON.stringify({ ok: s.allocator.selfCheck().ok, path: s.allocator.nativePath }))"],
      { timeoutMs: 180000, logFile, quiet: true, cwd: app, extraEnv: { SYMPHONY_NATIVE: '' } });
      let res = null;
      try { res = JSON.parse(r.output.trim().split('\n').pop()); } catch { /* below */ }
      check(r.code === 0 && res !== null && res.ok === true && /[\\/]@symphony-ws[\\/]win32-x64[\\/]symphony\.win32\.jemalloc-4k\.node$/.test(res.path),
        `${label}: node.exe under Wine loads the addon from ${platformPackageName(p)} and its self-check passes (${r.output.trim().slice(-300)})`);
      note(`  ${label}: node.exe under Wine loaded ${res ? res.path : '?'}`);
    };

    // This host, every package manager.
    for (const manager of ['npm', 'pnpm', 'yarn4', 'yarn1']) {
      const t0 = Date.now();
      const r = await install(manager);
      const label = `${manager} on this host (${host.name})`;
      check(r.ok, `${label}: the install works without a compiler${r.ok ? '' : `:\n${r.out.slice(-2000)}`}`);
      if (!r.ok) continue;
      if (manager === 'yarn1') {
        // yarn 1 downloads every optional dependency and ignores libc: say
        // exactly what it did, and that the loader still picks the right one.
        const sameCpu = PLATFORMS.filter((p) => p.os === host.os && p.cpu === host.cpu).map((p) => p.name).sort();
        check(JSON.stringify(installed(r.app)) === JSON.stringify(sameCpu),
          `${label}: installs every libc of its os and cpu (${installed(r.app).join(', ')}), as yarn 1 ignores libc`);
        note(`  ${label}: fetched ${r.fetched.length} tarballs (${r.fetched.join(', ')}), installed ${installed(r.app).join(', ')}`);
      } else {
        check(JSON.stringify(r.fetched) === JSON.stringify(want(host)),
          `${label}: fetches only symphony-ws and ${hostName} (fetched: ${r.fetched.join(', ')})`);
        check(JSON.stringify(installed(r.app)) === JSON.stringify([host.name]), `${label}: installs only ${hostName} (${installed(r.app).join(', ')})`);
      }
      loads(label, r);
      note(`  ${label}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }

    // npm's ways with the install script: skipped (npm 11's default until
    // approved), approved (it runs, finds the platform package, builds
    // nothing), and --ignore-scripts.
    {
      const r = await install('npm', { allow: { 'symphony-ws': true } });
      check(r.ok && /using the prebuilt @symphony-ws\//.test(r.out),
        `npm, the install script approved (allowScripts): it runs and finds the platform package (${r.out.trim().split('\n').slice(-4).join(' | ')})`);
      if (r.ok) loads('npm, the install script approved', r);
      const ig = await install('npm', { args: ['--ignore-scripts'] });
      check(ig.ok, `npm install --ignore-scripts works${ig.ok ? '' : `: ${ig.out.slice(-1000)}`}`);
      if (ig.ok) loads('npm install --ignore-scripts', ig);
      // Without the optional dependencies (and no compiler): the error
      // names the platform package and says what to do.
      const om = await install('npm', { args: ['--omit=optional', '--ignore-scripts'] });
      check(om.ok && installed(om.app).length === 0, 'npm install --omit=optional leaves the platform package out');
      const q = sh(path.join(bin, 'node'), ['-e', "try { require('symphony-ws') } catch (e) { console.log(e.code + '\\n' + e.message) }"],
        { cwd: om.app, env: om.env });
      check(/^ERR_SYMPHONY_LOAD/.test(q.stdout) && q.stdout.includes(`${hostName}: not installed`) && q.stdout.includes(`npm install ${hostName}`),
        `without its platform package, require() says which package is missing and what to do (${q.out.trim().split('\n').slice(0, 3).join(' | ')})`);
    }

    // Other platforms, by each package manager's own override.
    if (!hostOnly) {
      for (const p of PLATFORMS.filter((x) => x !== host)) {
        for (const manager of ['npm', 'pnpm', 'yarn4']) {
          const r = await install(manager, { platform: p, args: manager === 'npm' ? ['--ignore-scripts'] : [] });
          const label = `${manager} for ${p.name} (${p.os === 'linux' ? `os/cpu/libc ${p.os}/${p.cpu}/${p.libc}` : `os/cpu ${p.os}/${p.cpu}`})`;
          check(r.ok, `${label}: the install works${r.ok ? '' : `:\n${r.out.slice(-1500)}`}`);
          if (!r.ok) continue;
          check(JSON.stringify(r.fetched) === JSON.stringify(want(p)) && JSON.stringify(installed(r.app)) === JSON.stringify([p.name]),
            `${label}: fetches and installs only ${platformPackageName(p)} (fetched: ${r.fetched.join(', ')}; installed: ${installed(r.app).join(', ')})`);
          if (p.os === 'win32' && manager === 'npm' && tarballs.platforms.has(platformPackageName(p))) await loadsUnderWine(label, p, r.app);
        }
      }
      note(`  npm, pnpm and yarn 4 for the ${PLATFORMS.length - 1} other platforms: one platform package each`);
    }
    return { hostPackage: hostName, hostBytes };
  } finally {
    await registry.close();
  }
}

/** Packs prebuilds/ (scripts/packages.js --pack) into dir; returns { main, platforms }. */
function packAll(dir) {
  const r = mustSh(process.execPath, [path.join(__dirname, 'packages.js'), '--pack', `--out=${dir}`], { cwd: root });
  const made = JSON.parse(r.trim().split('\n').pop());
  return {
    main: path.join(root, made.main.tarball),
    platforms: new Map(made.packages.map((p) => [p.name, path.join(root, p.tarball)])),
  };
}

async function main() {
  const hostOnly = process.argv.includes('--host-only');
  const failures = [];
  let checks = 0;
  const check = (ok, what) => {
    checks++;
    if (!ok) {
      failures.push(what);
      console.error(`  FAIL ${what}`);
    }
    return ok;
  };
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-install-'));
  try {
    const tarballs = packAll(path.join(work, 'npm'));
    const res = await installChecks({ check, note: (l) => console.error(l), tarballs, hostOnly, work });
    console.log(JSON.stringify({ checks, failures: failures.length, ...res }));
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  if (failures.length) {
    console.error(`test-install: ${failures.length} of ${checks} checks failed`);
    process.exit(1);
  }
  console.error(`test-install: all ${checks} checks passed`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err.stack);
    process.exit(1);
  });
}

module.exports = { installChecks, packAll };
