#!/usr/bin/env node
'use strict';
// Issue 43's "Done when", measured: hostile connections send bad tokens as
// fast as they can be written while 5 bystanders on the same IO thread
// watch a topic published every 20 ms. Prints the bystanders' latency (max,
// p99, messages later than 250 ms, messages missing), the IO thread's CPU
// while attacked, and how long after the attackers stop the thread is idle
// again (its first 100 ms window under 10% of a core), with the server's
// counters (tokenChecks, tokenRefused, workRefused, workCloses).
//
//   node bench/attack-tokens.js [--scenario eddsa|es256|both] [--attackers 4]
//        [--seconds 6] [--entries 1024] [--bystanders 5] [--threads 1]
//        [--work N (maxWorkPerSecond; 0: no budget)] [--reconnect 1|0] [--after 3] [--json]
//   npm run bench:attack -- [options]
//
// Scenarios: eddsa, one Ed25519 key; bad EdDSA tokens (a valid header and
// claims, a random signature: every one different, so no cache helps).
// es256, two ES256 keys without kid; bad ES256 tokens without kid: each is
// tried with both keys (two checks). Attackers write symphony.v2 subscribe
// frames of --entries entries, each with its own token (64 frames made
// beforehand, in turn: 65,536 distinct tokens with the default), whenever
// their socket takes more (and read and drop what the server answers); a
// closed attacker connects again at once (--reconnect 0: it does not, and
// the attack is the issue's 4 connections and no more). After --seconds
// they stop writing and keep their sockets open for --after seconds
// (default 3: what they queued is still the server's to read), then go.
//
// Processes: this one (the orchestrator: it samples the server's threads in
// /proc), the server, the bystanders and the attackers, each its own Node
// process. BENCH_SYMPHONY_ROOT=DIR runs another checkout's build (lib/ and
// native/), for a before/after. Linux (/proc) only; loopback only.

const { fork } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const crypto = require('node:crypto');

const ROOT = process.env.BENCH_SYMPHONY_ROOT ? path.resolve(process.env.BENCH_SYMPHONY_ROOT) : path.join(__dirname, '..');
const LATE_MS = 250;
const TICK_MS = 20;

function args(argv) {
  const o = { scenario: 'both', port: null, reconnect: 1, after: 3, attackers: 4, seconds: 6, entries: 1024, bystanders: 5, threads: 1, work: null, json: false, role: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    if (k === 'json') { o.json = true; continue; }
    if (!(k in o)) throw new Error(`unknown option --${k}`);
    const v = argv[++i];
    o[k] = ['scenario', 'role'].includes(k) ? v : Number(v);
  }
  return o;
}

// ---- the server ---------------------------------------------------------------

async function serverRole(o) {
  const { Server } = require(ROOT);
  const key = (type, opts) => crypto.generateKeyPairSync(type, opts).publicKey.export({ type: 'spki', format: 'pem' });
  const keys = o.scenario === 'es256'
    ? [{ alg: 'ES256', publicKey: key('ec', { namedCurve: 'P-256' }) }, { alg: 'ES256', publicKey: key('ec', { namedCurve: 'P-256' }) }]
    : [{ alg: 'EdDSA', publicKey: key('ed25519') }];
  const opts = { port: 0, host: '127.0.0.1', threads: o.threads, tokens: { keys } };
  if (o.work !== null) opts.maxWorkPerSecond = o.work;
  const server = new Server(opts);
  let watchers = 0;
  server.on('open', (id) => { if (watchers++ < o.bystanders) server.subscribe(id, 'tick'); });
  const { port } = await server.listen();
  let seq = 0;
  const timer = setInterval(() => server.publish('tick', `${seq++} ${process.hrtime.bigint()}`), TICK_MS);
  const totals = () => {
    const s = server.stats();
    const t = {};
    for (const k of ['tokenChecks', 'tokenRefused', 'tokenSubscribes', 'workRefused', 'workCloses', 'askErrors', 'dropped', 'slowCloses']) t[k] = s[k];
    return t;
  };
  process.on('message', (m) => {
    if (m.cmd === 'stats') process.send({ ev: 'stats', stats: totals(), published: seq });
    if (m.cmd === 'exit') { clearInterval(timer); server.close().then(() => process.exit(0)); }
  });
  process.send({ ev: 'ready', port });
}

// ---- the bystanders --------------------------------------------------------------

async function bystandersRole(o) {
  const WebSocket = require(require.resolve('ws', { paths: [ROOT, __dirname] }));
  const lat = [];
  const last = [];
  let missing = 0;
  let measuring = false;
  const socks = [];
  for (let i = 0; i < o.bystanders; i++) {
    const ws = new WebSocket(`ws://127.0.0.1:${o.port}/`);
    last.push(-1);
    ws.on('message', (data) => {
      const now = process.hrtime.bigint();
      const [s, t] = data.toString().split(' ');
      const n = Number(s);
      if (last[i] >= 0 && n !== last[i] + 1) missing += n - last[i] - 1;
      last[i] = n;
      if (measuring) lat.push(Number(now - BigInt(t)) / 1e6);
    });
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    socks.push(ws);
  }
  process.on('message', (m) => {
    if (m.cmd === 'measure') { measuring = true; missing = 0; }
    if (m.cmd === 'report') {
      measuring = false;
      const sorted = lat.slice().sort((a, b) => a - b);
      const q = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : null);
      process.send({ ev: 'report', messages: lat.length, missing, maxMs: sorted.length ? sorted[sorted.length - 1] : null,
        p50Ms: q(0.5), p99Ms: q(0.99), late: lat.filter((x) => x > LATE_MS).length });
    }
    if (m.cmd === 'exit') { for (const ws of socks) ws.terminate(); process.exit(0); }
  });
  process.send({ ev: 'ready' });
}

// ---- the attackers ----------------------------------------------------------------

const b64 = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');

/** A maker of distinct bad tokens: a real header and claims, a random
 * signature (one that costs a whole check) whose first 11 characters are a
 * counter. */
function badTokens(scenario) {
  const alg = scenario === 'es256' ? 'ES256' : 'EdDSA';
  const head = `${b64({ alg, typ: 'JWT' })}.${b64({ sub: 'attacker', exp: Math.floor(Date.now() / 1000) + 3600, topics: { subscribe: ['*'] } })}.`;
  // 86 characters. An Ed25519 S (the last 32 bytes, little-endian) at or
  // past the group order is refused before any work: below 2^252 it is not.
  const raw = crypto.randomBytes(64);
  if (alg === 'EdDSA') raw[63] &= 0x0f;
  const sig = raw.toString('base64url');
  let n = 0;
  return () => {
    const c = (n++).toString(36).padStart(11, '0').replace(/[^A-Za-z0-9]/g, 'A');
    return head + c + sig.slice(11);
  };
}

/** A masked (zero key) text frame of payload. */
function frame(payload) {
  const body = Buffer.from(payload);
  const n = body.length;
  let head;
  if (n < 126) head = Buffer.from([0x81, 0x80 | n]);
  else if (n < 65536) { head = Buffer.alloc(4); head[0] = 0x81; head[1] = 0x80 | 126; head.writeUInt16BE(n, 2); }
  else { head = Buffer.alloc(10); head[0] = 0x81; head[1] = 0x80 | 127; head.writeBigUInt64BE(BigInt(n), 2); }
  return Buffer.concat([head, Buffer.alloc(4), body]);
}

function attackersRole(o) {
  const next = badTokens(o.scenario);
  let writing = true;
  const st = { frames: 0, entries: 0, bytes: 0, connects: 0, closes: 0, rateLimited: 0, closed1008: 0 };
  const socks = new Set();
  // Frames made before the attack (so that the attackers' own CPU does not
  // limit it), POOL of them in turn: POOL x entries distinct tokens, far
  // more than the server's cache of refused tokens holds.
  const POOL = 64;
  const pool = [];
  let rid = 1;
  for (let k = 0; k < POOL; k++) {
    const subs = [];
    for (let i = 0; i < o.entries; i++) subs.push(`{"rid":${rid++},"topic":"t${rid % 64}","token":"${next()}"}`);
    pool.push(frame(`s{"subs":[${subs.join(',')}]}`));
  }
  let turn = 0;
  const makeFrame = () => {
    st.entries += o.entries;
    return pool[turn++ % POOL];
  };
  const attack = (sock) => {
    const pump = () => {
      while (writing && !sock.destroyed && sock.writable) {
        const f = makeFrame();
        st.frames++;
        st.bytes += f.length;
        if (!sock.write(f)) return; // 'drain' calls again
      }
    };
    sock.on('drain', pump);
    pump();
  };
  const connect = () => {
    const sock = net.connect(o.port, '127.0.0.1');
    socks.add(sock);
    st.connects++;
    let open = false;
    let tail = '';
    sock.on('data', (d) => {
      const s = tail + d.toString('latin1');
      if (!open) {
        const end = s.indexOf('\r\n\r\n');
        if (end < 0) { tail = s; return; }
        open = true;
        attack(sock);
      }
      for (let i = s.indexOf('rate-limited'); i >= 0; i = s.indexOf('rate-limited', i + 1)) st.rateLimited++;
      if (s.includes('\x88') && s.includes('work budget')) st.closed1008++;
      tail = s.slice(-16);
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      socks.delete(sock);
      st.closes++;
      if (writing && o.reconnect) connect();
    });
    sock.write('GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
      'Sec-WebSocket-Protocol: symphony.v2\r\n\r\n');
  };
  process.on('message', (m) => {
    if (m.cmd === 'stop') { writing = false; process.send({ ev: 'stopped', ...st }); }
    if (m.cmd === 'exit') { for (const s of socks) s.destroy(); process.exit(0); }
  });
  for (let i = 0; i < o.attackers; i++) connect();
  process.send({ ev: 'ready' });
}

// ---- the orchestrator ---------------------------------------------------------------

/** CPU ticks (utime + stime) of each thread of pid. */
function threadTicks(pid) {
  const out = new Map();
  let tids = [];
  try { tids = fs.readdirSync(`/proc/${pid}/task`); } catch { return out; }
  for (const tid of tids) {
    try {
      const s = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.set(tid, Number(f[11]) + Number(f[12]));
    } catch { /* gone */ }
  }
  return out;
}

const HZ = 100; // USER_HZ on Linux
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function child(role, o, extra = {}) {
  const argv = ['--role', role];
  for (const [k, v] of Object.entries({ ...o, ...extra })) if (v !== null && k !== 'role' && k !== 'json') argv.push(`--${k}`, String(v));
  const c = fork(__filename, argv, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  c.waitFor = (ev) => new Promise((resolve) => { const f = (m) => { if (m.ev === ev) { c.off('message', f); resolve(m); } }; c.on('message', f); });
  return c;
}

async function scenario(o, name) {
  const so = { ...o, scenario: name };
  const server = child('server', so);
  const { port } = await server.waitFor('ready');
  const by = child('bystanders', so, { port });
  await by.waitFor('ready');
  const pid = server.pid;
  await sleep(500);
  const t0 = threadTicks(pid);
  by.send({ cmd: 'measure' });
  const att = child('attackers', so, { port });
  await att.waitFor('ready');
  // Every 100 ms: the threads' CPU, to find the IO thread (the busiest but
  // the main one) and when it goes idle.
  const samples = [];
  const tStart = Date.now();
  let stopAt = null;
  let stopped = null;
  while (Date.now() - tStart < (o.seconds + o.after) * 1000) {
    await sleep(100);
    samples.push({ t: Date.now() - tStart, ticks: threadTicks(pid) });
    if (stopAt === null && Date.now() - tStart >= o.seconds * 1000) {
      stopAt = Date.now() - tStart;
      att.send({ cmd: 'stop' });
      stopped = att.waitFor('stopped');
    }
  }
  const attack = await stopped;
  server.send({ cmd: 'stats' });
  const { stats, published } = await server.waitFor('stats');
  by.send({ cmd: 'report' });
  const rep = await by.waitFor('report');
  const last = samples[samples.length - 1].ticks;
  let io = null;
  let ioTicks = -1;
  for (const [tid, v] of last) {
    if (tid === String(pid)) continue;
    const d = v - (t0.get(tid) || 0);
    if (d > ioTicks) { ioTicks = d; io = tid; }
  }
  const at = (s) => s.ticks.get(io) || 0;
  const during = samples.filter((s) => s.t <= stopAt);
  const busy = during.length > 1 ? (at(during[during.length - 1]) - at(during[0])) / HZ / ((during[during.length - 1].t - during[0].t) / 1000) : null;
  let idleMs = null;
  for (let i = 1; i < samples.length; i++) {
    if (samples[i].t <= stopAt) continue;
    const share = (at(samples[i]) - at(samples[i - 1])) / HZ / ((samples[i].t - samples[i - 1].t) / 1000);
    if (share < 0.1) { idleMs = Math.max(0, samples[i - 1].t - stopAt); break; }
  }
  att.send({ cmd: 'exit' });
  by.send({ cmd: 'exit' });
  server.send({ cmd: 'exit' });
  await Promise.all([server, by, att].map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.once('exit', r)))));
  return { scenario: name, published, bystanders: rep, ioBusy: busy, idleAfterStopMs: idleMs, attack, stats };
}

const f1 = (x) => (x === null || x === undefined ? '–' : x.toFixed(1));

async function main() {
  const o = args(process.argv.slice(2));
  if (o.role === 'server') return serverRole(o);
  if (o.role === 'bystanders') return bystandersRole(o);
  if (o.role === 'attackers') return attackersRole(o);
  const names = o.scenario === 'both' ? ['eddsa', 'es256'] : [o.scenario];
  const results = [];
  for (const name of names) {
    const r = await scenario(o, name);
    results.push(r);
    if (o.json) continue;
    const b = r.bystanders;
    console.log(`${name}: ${o.attackers} attackers x ${o.seconds} s, ${o.entries} entries a frame; ${o.bystanders} bystanders; ` +
      `build ${path.relative(process.cwd(), ROOT) || '.'}${o.work !== null ? `, maxWorkPerSecond ${o.work}` : ''}` +
      `${o.reconnect ? ', closed attackers connect again' : ', no reconnects'}`);
    console.log(`  bystanders: ${b.messages} messages, ${b.missing} missing, max ${f1(b.maxMs)} ms, p99 ${f1(b.p99Ms)} ms, ` +
      `p50 ${f1(b.p50Ms)} ms, ${b.late} later than ${LATE_MS} ms`);
    console.log(`  IO thread: ${f1(r.ioBusy === null ? null : r.ioBusy * 100)}% of a core while attacked; idle ` +
      `${r.idleAfterStopMs === null ? `not within ${o.after} s` : `${r.idleAfterStopMs} ms`} after the attackers stopped`);
    const a = r.attack;
    console.log(`  attackers: ${a.frames} frames, ${a.entries} entries, ${(a.bytes / 1048576).toFixed(1)} MiB written, ` +
      `${a.connects} connections (${a.closes} closed), ${a.rateLimited} 'rate-limited' answers read`);
    console.log(`  server: ${Object.entries(r.stats).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  }
  if (o.json) console.log(JSON.stringify(results, null, 1));
}

main().catch((err) => { console.error(err); process.exit(1); });
