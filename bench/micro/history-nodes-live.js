'use strict';
// The live window of the history phase's arms across nodes (sy-history-nodes,
// socketio-nodes; bench/README.md, "history"), alone and short, with each
// process's CPU apart and, optionally, `perf record -g` on each server node:
// where the CPU per delivered message goes, node by node.
//
//   node bench/micro/history-nodes-live.js --impl symphony|socketio [--clients 1000]
//        [--rate 10] [--topics 10] [--settle 5] [--window 20] [--perf DIR] [--nodes 3]
//        [--strace DIR] [--server-cpus 0] [--client-cpus 1]
//
// The same processes as the runner's arms: one Redis (AOF everysec) and
// `nodes` bench/servers/history-server.js over it on --server-cpus, one IO
// thread each; node 0 publishes (rate msg/s per topic) and has no clients;
// the clients (bench/runner/history-client.js, on --client-cpus) are on
// node 1. Prints one JSON line: delivered (the clients' count), and per
// process (node k, redis, clients) CPU seconds in the window and µs per
// delivered message. With --perf DIR: DIR/node<k>.data per node (perf
// record -g -p PID for the window), read them with `perf report -i`. With
// --strace DIR: DIR/node<k>.txt, `strace -f -c` of each node for the window
// (system calls per thread kind; ptrace slows the nodes: not a CPU run).

const path = require('node:path');
const fs = require('node:fs');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { RedisProc } = require('../runner/redis');
const { readProc } = require('../runner/sample');
const { now, sleep } = require('../runner/util');

const o = { impl: 'symphony', clients: 1000, rate: 10, topics: 10, settle: 5, window: 20, perf: '', strace: '', nodes: 3, 'server-cpus': '0', 'client-cpus': '1' };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in o)) throw new Error(`unknown option ${process.argv[i]}`);
  o[k] = typeof o[k] === 'number' ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
const BENCH = path.join(__dirname, '..');

/** A child on cpus that answers JSON lines (stdout or stderr). */
function child(args, cpus) {
  const c = spawn('taskset', ['-c', cpus, process.execPath, ...args], { stdio: ['pipe', 'pipe', 'pipe'], cwd: path.join(BENCH, '..') });
  const waiters = [];
  const odd = [];
  const onLine = (line) => {
    let j = null;
    try { j = line.startsWith('{') ? JSON.parse(line) : null; } catch { j = null; }
    if (!j) { if (line.trim() && odd.length < 20) odd.push(line); return; }
    for (let i = 0; i < waiters.length; i++) if (waiters[i].pred(j)) waiters.splice(i--, 1)[0].resolve(j);
  };
  readline.createInterface({ input: c.stdout }).on('line', onLine);
  readline.createInterface({ input: c.stderr }).on('line', onLine);
  return {
    pid: c.pid,
    proc: c,
    wait(pred, s, what) {
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`pid ${c.pid}: no ${what} within ${s} s ${odd.slice(-3).join(' | ')}`)), s * 1000);
        waiters.push({ pred, resolve: (j) => { clearTimeout(t); resolve(j); } });
      });
    },
    send(line) { c.stdin.write(`${line}\n`); },
    stop() { if (c.exitCode === null) c.kill('SIGTERM'); },
  };
}

const cpuOf = (pid) => (readProc(pid) || {}).cpuS || 0;

async function main() {
  const redis = await RedisProc.start({ cpus: o['server-cpus'], aof: 'everysec' });
  const nodes = [];
  const clients = [];
  try {
    for (let k = 0; k < o.nodes; k++) {
      nodes.push(child([path.join(BENCH, 'servers', 'history-server.js'), '--impl', o.impl, '--history', '1', '--size', '2000', '--ttl', '60',
        '--topics', String(o.topics), '--rate', '0', '--payload', '80', '--threads', '1', '--duration', '600', '--bus-url', redis.url], o['server-cpus']));
    }
    const hellos = await Promise.all(nodes.map((n) => n.wait((j) => typeof j.port === 'number', 30, 'port')));
    const ask = (n, word) => { const p = n.wait((j) => j.ctl === word.split(' ')[0], 30, word); n.send(word); return p; };
    for (const t1 = now() + 20; ;) {
      const st = await Promise.all(nodes.map((n) => ask(n, 'mark')));
      if (st.every((x) => x.busState === 'up')) break;
      if (now() > t1) throw new Error('the nodes\' Redis not up');
      await sleep(0.05);
    }
    const per = 2500;
    const procs = Math.max(1, Math.ceil(o.clients / per));
    for (let k = 0; k < procs; k++) {
      const first = Math.floor((k * o.clients) / procs);
      const count = Math.floor(((k + 1) * o.clients) / procs) - first;
      const cl = child([path.join(BENCH, 'runner', 'history-client.js'), '--impl', o.impl, '--port', String(hellos[o.nodes > 1 ? 1 : 0].port),
        '--count', String(count), '--first', String(first), '--topics', String(o.topics), '--local', `127.0.0.${2 + k}`, '--pending', '200'], o['client-cpus']);
      clients.push(cl);
    }
    await Promise.all(clients.map((cl) => cl.wait((j) => j.ev === 'ready', 30, 'ready')));
    const all = async (word, ev) => {
      const ps = clients.map((cl) => cl.wait((j) => j.ev === ev, 120, ev));
      for (const cl of clients) cl.send(word);
      return (await Promise.all(ps)).reduce((a, x) => a + (x.msgs || 0), 0);
    };
    const opened = await Promise.all(clients.map((cl) => { const p = cl.wait((j) => j.ev === 'connected', 120, 'connected'); cl.send('connect'); return p; }));
    const open = opened.reduce((a, x) => a + (x.open || 0), 0);
    await ask(nodes[0], `rate ${o.rate}`);
    await sleep(o.settle);
    const perfs = o.perf ? nodes.map((n, k) => {
      fs.mkdirSync(o.perf, { recursive: true });
      return spawn('perf', ['record', '-g', '-q', '-F', '999', '-p', String(n.pid), '-o', path.join(o.perf, `node${k}.data`), '--', 'sleep', String(o.window)],
        { stdio: 'ignore' });
    }) : [];
    const straces = o.strace ? nodes.map((n, k) => {
      fs.mkdirSync(o.strace, { recursive: true });
      return spawn('strace', ['-f', '-c', '-p', String(n.pid), '-o', path.join(o.strace, `node${k}.txt`)], { stdio: 'ignore' });
    }) : [];
    const pids = [...nodes.map((n) => n.pid), redis.pid, ...clients.map((c) => c.pid)];
    const m0 = await all('mark', 'mark');
    const c0 = pids.map(cpuOf);
    const t0 = now();
    await sleep(o.window);
    const c1 = pids.map(cpuOf);
    const t1 = now();
    const m1 = await all('mark', 'mark');
    for (const st of straces) st.kill('SIGINT');
    await Promise.all([...perfs, ...straces].map((p) => new Promise((resolve) => (p.exitCode !== null ? resolve() : p.on('exit', resolve)))));
    const delivered = m1 - m0;
    const T = t1 - t0;
    const us = (d) => Math.round((d / delivered) * 1e8) / 100;
    const names = [...nodes.map((_, k) => `node${k}`), 'redis', 'clients'];
    const cpu = Object.fromEntries(names.map((nm, i) => {
      const d = names[i] === 'clients' ? c1.slice(i).reduce((a, x) => a + x, 0) - c0.slice(i).reduce((a, x) => a + x, 0) : c1[i] - c0[i];
      return [nm, { cpuS: Math.round(d * 1000) / 1000, cores: Math.round((d / T) * 1000) / 1000, usPerMsg: us(d) }];
    }));
    const serversS = nodes.reduce((a, _, k) => a + cpu[`node${k}`].cpuS, 0);
    process.stdout.write(`${JSON.stringify({ impl: o.impl, clients: o.clients, open, rate: o.rate, window: Math.round(T * 100) / 100,
      delivered, perS: Math.round(delivered / T), expectedPerS: o.rate * o.clients, serversUsPerMsg: us(serversS), cpu })}\n`);
  } finally {
    for (const c of [...clients, ...nodes]) c.stop();
    await sleep(1);
    for (const c of [...clients, ...nodes]) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    await redis.stop(5);
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
