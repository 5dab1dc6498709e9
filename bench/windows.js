#!/usr/bin/env node
'use strict';
// symphony on Windows, measured under Wine (once per change of the Windows
// port; the figures are in docs/builds.md): the addon the Windows gate
// builds (scripts/windows-gate.js, jemalloc build), bench/servers/fanout-server.js
// run by node.exe under Wine, and bench/loadgen (Linux, loopback) as the
// clients, checking every message's sequence number.
//
//   node bench/windows.js [--hold=10000] [--hold-seconds=S] [--subscribers=1000] [--rate=300] [--seconds=334]
//        [--phases=wsapoll,poll,hold,fanout,kill] [--out=DIR]
//
// 0. The pollers' cost with 100, 1,000 and 4,000 idle sockets: WSAPoll
//    itself, one wait (bench/micro/wsapoll_cost.c), and symphony's poller
//    (src/net/sy_poll_afd.c through sy_poll.h, bench/micro/poll_cost.c):
//    one wait with nothing ready, and one socket made ready, reported and
//    read among the idle ones.
// 1. hold: --hold connections on ONE IO thread, one message a second to
//    each; then the server closes with them open.
// 2. fan-out: --subscribers connections on two IO threads, --rate messages
//    a second for --seconds (rate x seconds messages to each subscriber),
//    none may be lost (loadgen's gaps, dups and back counts are 0).
// 3. kill: 200 clients that read nothing while 64 KiB messages go out, the
//    loadgen killed (SIGKILL) mid-send; the server goes on serving a new
//    client and closes cleanly.
// For each: the server's stats, its allocator's bytes after close (what
// symphony still holds: no leak the allocator's stats can see is 0), the
// loadgen summary. Writes results.json in --out (default
// bench/results/<date>-windows/).

const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { buildAll, nodeExe, wineEnv, runWine, DEFAULT_NODE } = require('../scripts/windows-gate');
const { loadgenMakeVars } = require('./runner/util');

const root = path.resolve(__dirname, '..');

function parseArgs(argv) {
  const o = { hold: 10000, holdSeconds: 0, subscribers: 1000, rate: 300, seconds: 334, phases: ['wsapoll', 'poll', 'hold', 'fanout', 'kill'],
    out: null };
  for (const a of argv) {
    const m = /^--(hold|subscribers|rate|seconds)=(\d+)$/.exec(a);
    const hs = /^--hold-seconds=(\d+)$/.exec(a);
    if (hs) { o.holdSeconds = Number(hs[1]); continue; }
    const ph = /^--phases=(.+)$/.exec(a);
    const out = /^--out=(.+)$/.exec(a);
    if (out) o.out = path.resolve(out[1]);
    else if (ph) o.phases = ph[1].split(',');
    else if (m) o[m[1]] = Number(m[2]);
    else throw new Error(`bench/windows.js: unknown argument ${a}`);
  }
  return o;
}

/** A process with its descriptor limit raised (10,000 sockets), output to a file. */
function launch(cmd, args, { env, logFile }) {
  const fd = fs.openSync(logFile, 'w');
  const quoted = [cmd, ...args].map((a) => `'${String(a).replace(/'/g, "'\\''")}'`).join(' ');
  const child = spawn('bash', ['-c', `ulimit -n "$(ulimit -Hn)" && exec ${quoted}`], { cwd: root, env, stdio: ['ignore', fd, fd] });
  const exited = new Promise((resolve) => child.on('close', (code, signal) => { fs.closeSync(fd); resolve(code ?? signal); }));
  return { child, exited, read: () => fs.readFileSync(logFile, 'utf8') };
}

const lastJson = (text, key) => text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((j) => key in j).pop();

async function waitFor(pred, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = pred();
    if (v) return v;
    if (Date.now() > end) throw new Error(`bench/windows.js: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** One phase: the server under Wine for serverSecs, loadgen against it; both summaries. */
async function phase(name, ctx, { serverArgs, loadgenArgs, serverSecs, kill = null }) {
  const logs = path.join(ctx.out, name);
  fs.mkdirSync(logs, { recursive: true });
  const server = launch(ctx.wine, [ctx.exe, 'bench/servers/fanout-server.js', '--port', '0', '--duration', String(serverSecs), ...serverArgs],
    { env: { ...ctx.env, SYMPHONY_NATIVE: ctx.file }, logFile: path.join(logs, 'server.log') });
  const { port } = await waitFor(() => lastJson(server.read(), 'port'), 120000, `${name}: the server's port`);
  console.log(`windows-bench: ${name}: server on ${port} (Wine), loadgen ${loadgenArgs.join(' ')}`);
  const lg = launch(path.join(root, 'bench', 'out', 'loadgen'), ['--url', `ws://127.0.0.1:${port}/`, '--json', ...loadgenArgs],
    { env: process.env, logFile: path.join(logs, 'loadgen.log') });
  let extra = {};
  if (kill) extra = await kill(lg, port, logs);
  const lgCode = await lg.exited;
  const serverCode = await server.exited;
  const final = lastJson(server.read(), 'stats');
  const summary = lastJson(lg.read(), 'connections');
  return { name, serverCode, lgCode, final, summary, ...extra };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const checks = [];
  const { tc, files } = await buildAll(['jemalloc'], (n, ok, d) => checks.push({ n, ok, d }));
  execFileSync('make', ['-s', '-C', path.join(root, 'bench'), ...loadgenMakeVars()], { stdio: 'inherit' });
  const day = new Date().toISOString().slice(0, 10);
  const out = o.out || path.join(root, 'bench', 'results', `${day}-windows`);
  fs.mkdirSync(out, { recursive: true });
  const node = DEFAULT_NODE;
  const ctx = { wine: tc.wine, env: wineEnv(tc), exe: nodeExe(node), file: files.jemalloc, out };
  const results = { machine: 'Debian 12, 2 cores, Wine 8.0', node, started: new Date(started).toISOString(), options: o, phases: [] };

  // 0. WSAPoll's cost per wait.
  const exe = path.join(out, 'wsapoll_cost.exe');
  execFileSync(tc.cc, ['-std=c11', '-Wall', '-Wextra', '-Werror', '-O2', '-D_WIN32_WINNT=0x0A00',
    path.join(root, 'bench', 'micro', 'wsapoll_cost.c'), '-o', exe, '-lws2_32'], { stdio: 'inherit' });
  results.wsapoll = [];
  for (const n of o.phases.includes('wsapoll') ? [100, 1000, 4000] : []) {
    const r = await runWine(tc, ctx.env, [exe, String(n)], { timeoutMs: 300000, logFile: path.join(out, `wsapoll-${n}.log`) });
    results.wsapoll.push(lastJson(r.output, 'sockets') || { sockets: n, error: r.output.trim().slice(-200) });
  }
  fs.rmSync(exe, { force: true });

  // 0b. symphony's poller through sy_poll.h, on the same sockets.
  const pexe = path.join(out, 'poll_cost.exe');
  execFileSync(tc.cc, ['-std=c11', '-Wall', '-Wextra', '-Werror', '-O2', '-D_WIN32_WINNT=0x0A00', `-I${path.join(root, 'src')}`,
    ...['bench/micro/poll_cost.c', 'src/net/sy_poll_afd.c', 'src/net/sy_sock.c', 'src/base/sy_alloc.c'].map((f) => path.join(root, f)),
    '-o', pexe, '-static', '-lws2_32'], { stdio: 'inherit' });
  results.poll = [];
  for (const n of o.phases.includes('poll') ? [100, 1000, 4000] : []) {
    const r = await runWine(tc, ctx.env, [pexe, String(n)], { timeoutMs: 300000, logFile: path.join(out, `poll-${n}.log`) });
    results.poll.push(lastJson(r.output, 'sockets') || { sockets: n, error: r.output.trim().slice(-200) });
  }
  fs.rmSync(pexe, { force: true });

  // 1. hold: every connection on one IO thread; the server's duration ends
  // while they are open (closed with connections open).
  // The ramp is gentle and the hold long: with WSAPoll (O(sockets) per
  // wait, under Wine ~10 us a socket), the first backend, accepting slowed
  // as the set grew; the same pacing since, so the runs compare.
  // (8,450 were open after 160 s in one run: the hold lasts hold / 30 s.)
  const holdSecs = o.holdSeconds || 60 + Math.ceil(o.hold / 30);
  if (o.phases.includes('hold')) results.phases.push(await phase('hold', ctx, {
    serverArgs: ['--threads', '1', '--topics', '1', '--rate', '1', '--size', '64', '--seq', '1'],
    loadgenArgs: ['--connections', String(o.hold), '--ramp-per-sec', '200', '--max-pending', '64', '--seq',
      '--duration', String(holdSecs + 30), '--hold', String(holdSecs + 20), '--connect-timeout', '60'],
    serverSecs: holdSecs,
  }));

  // 2. fan-out: rate x seconds messages to every subscriber, none lost.
  if (o.phases.includes('fanout')) results.phases.push(await phase('fanout', ctx, {
    serverArgs: ['--threads', '2', '--topics', '1', '--rate', String(o.rate), '--size', '64', '--seq', '1'],
    loadgenArgs: ['--connections', String(o.subscribers), '--ramp-per-sec', '200', '--max-pending', '64', '--connect-timeout', '60', '--seq',
      '--duration', String(o.seconds + 40), '--hold', String(o.seconds + 30)],
    serverSecs: o.seconds + 10,
  }));

  // 3. kill: clients that are killed while 64 KiB messages are on their way.
  if (o.phases.includes('kill')) results.phases.push(await phase('kill', ctx, {
    serverArgs: ['--threads', '2', '--topics', '1', '--rate', '200', '--size', '65536'],
    loadgenArgs: ['--connections', '200', '--ramp-per-sec', '1000', '--duration', '60', '--hold', '50'],
    serverSecs: 30,
    kill: async (lg) => {
      await new Promise((r) => setTimeout(r, 10000));
      lg.child.kill('SIGKILL');
      return { killedAfterS: 10 };
    },
  }));

  results.seconds = Math.round((Date.now() - started) / 1000);
  fs.writeFileSync(path.join(out, `results-${o.phases.join('-')}.json`), `${JSON.stringify(results, null, 2)}\n`);
  for (const p of results.phases) {
    const s = p.final ? p.final.stats : {};
    const m = p.final ? p.final.memoryAfterClose : {};
    const seq = p.summary && p.summary.seq ? p.summary.seq : null;
    console.log(`windows-bench: ${p.name}: server exit ${p.serverCode}, opened ${p.summary ? p.summary.connections.opened : '?'}, ` +
      `messages ${p.summary ? p.summary.messages : '?'}, seq ${JSON.stringify(seq)}, ` +
      `server messagesOut ${s.messagesOut}, allocated after close ${m.allocatedKiB} KiB, resident ${m.residentKiB} KiB`);
  }
  console.log(`windows-bench: ${path.relative(root, out)}/results-${o.phases.join('-')}.json in ${results.seconds} s`);
}

main().catch((err) => {
  console.error(err.stack || err.message);
  process.exit(1);
});
