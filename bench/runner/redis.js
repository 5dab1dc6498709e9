'use strict';
// The bus phase's Redis: Debian's redis-server, started by the runner on a
// free port of 127.0.0.1 with persistence off (the history arms: AOF), stopped (or killed -9 and
// started again on the same port) by its PID; and a minimal RESP2 client for
// the runner's own questions to it (PING, PUBSUB NUMSUB / SHARDNUMSUB), so
// that watching Redis costs nothing that the arms under test depend on.

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const { now, sleep, within } = require('./util');

/** A port that was free on 127.0.0.1 a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The redis-server binary's version line, or null when there is none. */
function redisVersion(bin = 'redis-server') {
  try {
    return execFileSync(bin, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

// ---- a minimal RESP2 client -------------------------------------------------------

function encode(args) {
  const parts = [`*${args.length}\r\n`];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(`$${b.length}\r\n`, b, '\r\n');
  }
  return Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p))));
}

/** Parses one reply at buf[i..]: [value, next index], or null when incomplete.
 * raw: bulk strings as Buffers (binary stream entries), else UTF-8 strings. */
function parse(buf, i, raw = false) {
  const eol = buf.indexOf('\r\n', i);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[i]);
  const line = buf.toString('utf8', i + 1, eol);
  const next = eol + 2;
  if (type === '+') return [line, next];
  if (type === '-') return [new Error(line), next];
  if (type === ':') return [Number(line), next];
  if (type === '$') {
    const n = Number(line);
    if (n < 0) return [null, next];
    if (buf.length < next + n + 2) return null;
    return [raw ? Buffer.from(buf.subarray(next, next + n)) : buf.toString('utf8', next, next + n), next + n + 2];
  }
  if (type === '*') {
    const n = Number(line);
    if (n < 0) return [null, next];
    const out = [];
    let j = next;
    for (let k = 0; k < n; k++) {
      const r = parse(buf, j, raw);
      if (!r) return null;
      out.push(r[0]);
      j = r[1];
    }
    return [out, j];
  }
  throw new Error(`redis: unexpected reply type ${JSON.stringify(type)}`);
}

/** One connection; command(...args) resolves with the reply (an Error
 * reply rejects). Every command is bounded by `timeout` seconds. */
class RespClient {
  static connect(port, timeout = 2) {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host: '127.0.0.1', port });
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error(`redis: no connection to 127.0.0.1:${port} in ${timeout} s`));
      }, timeout * 1000);
      sock.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      sock.once('connect', () => {
        clearTimeout(timer);
        resolve(new RespClient(sock));
      });
    });
  }

  constructor(sock) {
    this.sock = sock;
    this.raw = false; // true: bulk strings come back as Buffers
    this.buf = Buffer.alloc(0);
    this.waiting = [];
    this.closed = false;
    sock.setNoDelay(true);
    sock.on('data', (d) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      for (;;) {
        const r = parse(this.buf, 0, this.raw);
        if (!r) break;
        this.buf = this.buf.subarray(r[1]);
        const w = this.waiting.shift();
        if (w) w(r[0]);
      }
    });
    const fail = () => {
      this.closed = true;
      for (const w of this.waiting.splice(0)) w(new Error('redis: connection closed'));
    };
    sock.on('error', fail);
    sock.on('close', fail);
  }

  async command(args, timeout = 2) {
    if (this.closed) throw new Error('redis: connection closed');
    const reply = new Promise((resolve) => this.waiting.push(resolve));
    this.sock.write(encode(args));
    const r = await within(reply, timeout, undefined);
    if (r === undefined) {
      this.close();
      throw new Error(`redis: no answer to ${args[0]} in ${timeout} s`);
    }
    if (r instanceof Error) throw r;
    return r;
  }

  close() {
    this.closed = true;
    this.sock.destroy();
  }
}

// ---- the server process ------------------------------------------------------------

/** redis-server on 127.0.0.1:port, persistence off (or, with `aof`, the
 * append-only file with that appendfsync: 'always' | 'everysec', so a
 * restart after kill -9 keeps what it acknowledged), in its own temporary
 * folder (kept across restarts: the AOF is read back). */
class RedisProc {
  /** Starts one on a free port (or `port`); resolves once it answers PING. */
  static async start({ port = null, bin = 'redis-server', cpus = null, log = null, aof = null } = {}) {
    const r = new RedisProc(bin, port || await freePort(), cpus, log);
    r.aof = aof;
    try {
      await r.launch();
    } catch (err) {
      await r.stop(2); // one that started but never answered goes too
      throw err;
    }
    return r;
  }

  constructor(bin, port, cpus, log) {
    this.bin = bin;
    this.port = port;
    this.cpus = cpus;
    this.logLines = log || [];
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-redis-'));
    this.child = null;
    this.pid = null;
    this.exited = null;
    this.restarts = 0;
    this.aof = null;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  get alive() {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Spawns redis-server and waits until it answers PING (bounded); resolves with the runner time it first did. */
  async launch(bound = 10) {
    const persist = this.aof ? ['--appendonly', 'yes', '--appendfsync', this.aof] : ['--appendonly', 'no'];
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', ...persist,
      '--daemonize', 'no', '--dir', this.dir, '--loglevel', 'warning', '--logfile', ''];
    const [cmd, argv] = this.cpus ? ['taskset', ['-c', this.cpus, this.bin, ...args]] : [this.bin, args];
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.pid = child.pid;
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, t: now() })));
    const keep = (d) => {
      for (const l of String(d).split('\n')) if (l.trim() && this.logLines.length < 200) this.logLines.push(`redis: ${l.trim()}`);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const t1 = now() + bound;
    for (;;) {
      if (!this.alive) throw new Error(`redis-server exited at start (port ${this.port})${this.logLines.length ? `: ${this.logLines.slice(-3).join(' / ')}` : ''}`);
      try {
        const c = await RespClient.connect(this.port, 1);
        try {
          if ((await c.command(['PING'], 1)) === 'PONG') return now();
        } finally {
          c.close();
        }
      } catch {
        // not yet listening
      }
      if (now() > t1) throw new Error(`redis-server did not answer PING within ${bound} s (port ${this.port})`);
      await sleep(0.005);
    }
  }

  /** kill -9 (this PID only); resolves once it has exited. */
  async kill9() {
    if (this.alive) this.child.kill('SIGKILL');
    await within(this.exited, 10);
  }

  /** Starts it again on the same port (after kill9): resolves with the runner time it first answered PING. */
  async restart() {
    this.restarts++;
    return this.launch();
  }

  /** One question on a short-lived connection. */
  async ask(args, timeout = 2) {
    const c = await RespClient.connect(this.port, timeout);
    try {
      return await c.command(args, timeout);
    } finally {
      c.close();
    }
  }

  /** SIGTERM, SIGKILL after `grace` s; removes its folder. */
  async stop(grace = 5) {
    if (this.alive) {
      this.child.kill('SIGTERM');
      if (!(await within(this.exited, grace))) {
        this.child.kill('SIGKILL');
        await within(this.exited, 5);
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Subscribers per channel as Redis counts them: PUBSUB NUMSUB (classic
 * SUBSCRIBE, the hand-built relays) plus PUBSUB SHARDNUMSUB (sharded
 * SSUBSCRIBE, symphony's bus), on one open client. Returns an array of
 * counts in the order of `channels`.
 */
async function subscriberCounts(client, channels) {
  const pairs = (reply) => {
    const m = new Map();
    for (let i = 0; i + 1 < reply.length; i += 2) m.set(reply[i], Number(reply[i + 1]));
    return m;
  };
  const classic = pairs(await client.command(['PUBSUB', 'NUMSUB', ...channels], 1));
  let sharded = new Map();
  try {
    sharded = pairs(await client.command(['PUBSUB', 'SHARDNUMSUB', ...channels], 1));
  } catch {
    // Redis < 7: no sharded pub/sub
  }
  return channels.map((ch) => (classic.get(ch) || 0) + (sharded.get(ch) || 0));
}

module.exports = { RedisProc, RespClient, freePort, redisVersion, subscriberCounts };
