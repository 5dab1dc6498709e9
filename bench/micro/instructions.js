'use strict';
// Instructions per delivered message, counted by valgrind (callgrind), this
// code against a baseline commit: the hot path's cost without the noise of a
// shared machine. A wall-clock CPU figure on a 2-core VM spreads ±20-40% from
// one repeat to the next (bench/results/*-compare-*); an instruction count
// of the same work does not depend on what else runs.
//
//   node bench/micro/instructions.js [--compare REF[,REF...]] [--subscribers 500]
//        [--rounds 200] [--warmup 20] [--size 256] [--shapes fanout,publish]
//        [--repeats 2] [--name NAME] [--keep DIR]
//
// Each arm (this checkout; with --compare, REF checked out and built by the
// benchmark's own --compare code, bench/runner/compare.js) runs
// bench/micro/lockstep-server.js under `valgrind --tool=callgrind
// --separate-threads=yes`, one IO thread. This process opens the control
// connection and the subscribers (ws), then runs rounds in lock step: one
// `go`, then wait until every subscriber has that round's message. Shapes:
// fanout (one publish to the topic every subscriber is on) and publish (one
// publish to each subscriber's own topic). After the warm-up rounds the
// counters are zeroed (callgrind_control -z), after the measured rounds
// dumped (-d): the dump holds exactly the measured rounds. --keep DIR keeps
// the callgrind files there (callgrind_annotate --inclusive=yes reads them:
// where the instructions go).
//
// Figures: the IO thread's instructions (the thread running io_main: the
// whole fan-out, the frames, the writes' user-space side) per delivered
// message; the JS thread's (V8, lib/, the binding's publish) per publish;
// every thread's per delivered message. Kernel work (the syscalls
// themselves) is not counted: both arms make one write per delivery.
// Results: bench/results/<date>-<name>/ (report.md, results.json).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const WebSocket = require('ws');
const { prepareCompare } = require('../runner/compare');
const { resultsName, freeDir, median, summarize, fmt, fmtRange } = require('../runner/util');

const REPO = path.resolve(__dirname, '..', '..');

function options(argv) {
  const o = { compare: [], keep: null, subscribers: 500, rounds: 200, warmup: 20, size: 256, shapes: ['fanout', 'publish'], repeats: 2, name: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[++i];
    if (v === undefined) throw new Error(`${k} needs a value`);
    if (k === '--compare') o.compare.push(...v.split(','));
    else if (k === '--keep') o.keep = path.resolve(v);
    else if (k === '--shapes') o.shapes = v.split(',');
    else if (k === '--name') o.name = v;
    else if (['--subscribers', '--rounds', '--warmup', '--size', '--repeats'].includes(k)) {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${k} ${v}: a positive integer`);
      o[k.slice(2)] = n;
    } else throw new Error(`unknown option ${k}`);
  }
  for (const s of o.shapes) if (s !== 'fanout' && s !== 'publish') throw new Error(`--shapes: unknown shape ${s}`);
  return o;
}

const log = (line) => process.stderr.write(`[instructions] ${line}\n`);

/** Resolves with the first value pred returns that is not undefined, from each message of ws. */
function nextMessage(ws, pred) {
  return new Promise((resolve, reject) => {
    const on = (data) => {
      const v = pred(data.toString());
      if (v !== undefined) {
        ws.off('message', on);
        resolve(v);
      }
    };
    ws.on('message', on);
    ws.once('close', () => reject(new Error('the control connection closed')));
  });
}

function opened(ws) {
  return new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
}

/** callgrind_control's command on pid (zero, dump): returns when valgrind has done it. */
function control(flag, pid) {
  execFileSync('callgrind_control', [flag, String(pid)], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000 });
}

/** The totals of the callgrind files of dump `part` of pid in dir: per thread, and which thread ran io_main. */
function readDump(dir, pid, part) {
  const threads = [];
  for (const f of fs.readdirSync(dir)) {
    const m = new RegExp(`^cg\\.${pid}\\.${part}-(\\d+)$`).exec(f);
    if (!m) continue;
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    const total = /^(?:summary|totals): (\d+)/m.exec(text);
    if (!total) throw new Error(`${f}: no totals line`);
    threads.push({ thread: Number(m[1]), ir: Number(total[1]), io: /^fn=io_main$/m.test(text) });
  }
  if (threads.length === 0) throw new Error(`no callgrind dump ${part} of ${pid} in ${dir}`);
  return threads;
}

async function runOne(arm, shape, o, dir) {
  const child = spawn('valgrind', ['--tool=callgrind', '--separate-threads=yes', '--compress-strings=no', `--callgrind-out-file=${dir}/cg.%p`,
    process.execPath, path.join(REPO, 'bench', 'micro', 'lockstep-server.js'), arm.root, shape, String(o.size)],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err = (err + d).slice(-4000); });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const sockets = [];
  try {
    const port = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const m = /\{"port":(\d+)\}/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      exited.then(({ code, signal }) => reject(new Error(`the server exited (${code ?? signal}) before listening:\n${err}`)));
    });
    const url = `ws://127.0.0.1:${port}/`;
    const ctl = new WebSocket(url);
    sockets.push(ctl);
    const hello = nextMessage(ctl, (m) => (m === 'hello' ? true : undefined));
    await opened(ctl);
    await hello;
    let delivered = 0;
    let want = 0;
    let wake = null;
    for (let i = 0; i < o.subscribers; i++) {
      const ws = new WebSocket(url);
      sockets.push(ws);
      ws.on('message', () => {
        delivered++;
        if (wake !== null && delivered >= want) wake();
      });
      await opened(ws);
    }
    // Every subscriber opened on the server (and so subscribed: the
    // subscription is queued before any later publish).
    for (;;) {
      const answer = nextMessage(ctl, (m) => (m.startsWith('opens ') ? Number(m.slice(6)) : undefined));
      ctl.send('opens');
      if (await answer === o.subscribers) break;
    }
    const round = () => new Promise((resolve) => {
      want += o.subscribers;
      wake = () => { wake = null; resolve(); };
      ctl.send('go');
    });
    for (let r = 0; r < o.warmup; r++) await round();
    control('-z', child.pid);
    const t0 = Date.now();
    for (let r = 0; r < o.rounds; r++) await round();
    control('-d', child.pid);
    const secs = (Date.now() - t0) / 1000;
    if (delivered !== (o.warmup + o.rounds) * o.subscribers) throw new Error(`delivered ${delivered}, not ${(o.warmup + o.rounds) * o.subscribers}`);
    ctl.send('stop');
    const { code, signal } = await exited;
    if (code !== 0) throw new Error(`the server exited ${code ?? signal}:\n${err}`);
    const threads = readDump(dir, child.pid, 1);
    const io = threads.filter((t) => t.io);
    if (io.length !== 1) throw new Error(`${io.length} threads ran io_main (want 1)`);
    const main = threads.find((t) => t.thread === 1);
    const deliveries = o.rounds * o.subscribers;
    const publishes = o.rounds * (shape === 'fanout' ? 1 : o.subscribers);
    return {
      arm: arm.name, shape, secs,
      ioPerDelivery: io[0].ir / deliveries,
      jsPerPublish: main.ir / publishes,
      allPerDelivery: threads.reduce((s, t) => s + t.ir, 0) / deliveries,
      threads,
    };
  } finally {
    for (const ws of sockets) ws.terminate();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  }
}


function report(o, arms, runs, started) {
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO, encoding: 'utf8' }).trim() !== '';
  const lines = [
    '# Instructions per delivered message (valgrind callgrind)', '',
    `- Date: ${started.toISOString()} · duration ${((Date.now() - started) / 60000).toFixed(1)} min`,
    `- Command: \`node bench/micro/instructions.js ${process.argv.slice(2).join(' ')}\``,
    `- Machine: ${os.cpus()[0].model.trim()}, ${os.cpus().length} CPUs, Node ${process.version}, ${execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim()}`,
    `- Code: ${REPO} at ${head.slice(0, 12)}${dirty ? ' with uncommitted changes' : ''}`,
    ...arms.filter((a) => a.commit).map((a) => `- Baseline (\`${a.name}\`): ${a.root} at ${a.commit.slice(0, 12)}`),
    `- Work: ${o.subscribers} subscribers, one IO thread, ${o.size} B binary messages; ${o.warmup} warm-up rounds, then ${o.rounds} measured rounds in lock step (every subscriber has round r's message before round r + 1 is asked for); ${o.repeats} repeat(s) per arm and shape, arms interleaved`,
    '- **IO thread** = the instructions of the thread running io_main (fan-out, frames, the user-space side of the writes) per delivered message; **JS thread** = the main thread (V8, lib/, the binding) per publish; **all** = every thread per delivered message. Medians over repeats (min–max). Syscalls\' kernel work is not counted.',
    '',
    '| shape | arm | IO thread per delivery | JS thread per publish | all threads per delivery | wall s (under valgrind) |',
    '| --- | --- | --: | --: | --: | --: |',
  ];
  const cell = (rs, k) => fmtRange(summarize(rs.map((r) => r[k])));
  for (const shape of o.shapes) {
    for (const arm of arms) {
      const rs = runs.filter((r) => r.shape === shape && r.arm === arm.name);
      lines.push(`| ${shape} | ${arm.name} | ${cell(rs, 'ioPerDelivery')} | ${cell(rs, 'jsPerPublish')} | ${cell(rs, 'allPerDelivery')} | ${median(rs.map((r) => r.secs)).toFixed(1)} |`);
    }
  }
  for (const base of arms.slice(1)) {
    lines.push('', `## This code ÷ ${base.name}`, '', '| shape | IO thread | JS thread | all threads |', '| --- | --: | --: | --: |');
    for (const shape of o.shapes) {
      const m = (arm, k) => median(runs.filter((r) => r.shape === shape && r.arm === arm).map((r) => r[k]));
      const ratio = (k) => (m(arms[0].name, k) / m(base.name, k)).toFixed(3);
      lines.push(`| ${shape} | ${ratio('ioPerDelivery')} | ${ratio('jsPerPublish')} | ${ratio('allPerDelivery')} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}

async function main() {
  const o = options(process.argv.slice(2));
  const started = new Date();
  const arms = [{ name: 'this', root: REPO, commit: null }];
  for (const ref of o.compare) {
    const base = prepareCompare(ref, log);
    arms.push({ name: `base-${base.commit.slice(0, 7)}`, root: base.dir, commit: base.commit });
  }
  const name = o.name ?? ['instructions', ...arms.slice(1).map((a) => a.commit.slice(0, 7))].join('-');
  const out = freeDir(path.join(REPO, 'bench', 'results'), resultsName({ name, phases: [], defaultPhases: [], preset: 'default', repeats: o.repeats }));
  fs.mkdirSync(out, { recursive: true });
  const tmp = o.keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-callgrind-'));
  fs.mkdirSync(tmp, { recursive: true });
  const runs = [];
  try {
    for (let rep = 0; rep < o.repeats; rep++) {
      for (const shape of o.shapes) {
        for (const arm of arms) {
          log(`${shape} · ${arm.name} · repeat ${rep + 1}/${o.repeats}`);
          const r = await runOne(arm, shape, o, tmp);
          log(`  IO thread ${fmt(r.ioPerDelivery)} per delivery, JS thread ${fmt(r.jsPerPublish)} per publish, all ${fmt(r.allPerDelivery)} (${r.secs.toFixed(1)} s)`);
          runs.push(r);
        }
      }
    }
  } finally {
    if (o.keep === null) fs.rmSync(tmp, { recursive: true, force: true });
  }
  const md = report(o, arms, runs, started);
  fs.writeFileSync(path.join(out, 'report.md'), md);
  fs.writeFileSync(path.join(out, 'results.json'), `${JSON.stringify({ options: o, arms, runs }, null, 2)}\n`);
  process.stdout.write(md);
  log(`results in ${path.relative(REPO, out)}`);
}

main().catch((err) => {
  process.stderr.write(`instructions: ${err.stack || err.message}\n`);
  process.exit(1);
});
