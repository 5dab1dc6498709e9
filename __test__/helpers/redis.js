'use strict';
// Real Redis for the tests (Debian's redis-server and redis-cli, no mocks):
// a standalone server or a local Redis Cluster, each on free loopback ports,
// persistence off, in its own temporary directory.
//
// Every process started here is stopped by its PID: by stop(), by stopAll()
// (test.after(stopAll) in a test file), by the process 'exit' handler below
// (SIGKILL to each one still alive, and the temporary directories removed),
// and, should this process be killed
// without running any of them, by the kernel: redis-server is started through
// `setpriv --pdeathsig KILL`, which execs it (same PID) with a parent-death
// signal.
//
// Every wait is bounded: a poll with a deadline that throws an Error naming
// what did not happen.
//
// Also here: a small RESP2/RESP3 client (respClient) for the tests' own
// commands and for watching pub/sub pushes (HELLO 3) byte-exactly. It parses
// RESP in JS for the tests only; the addon's bus uses hiredis.

const { spawn, execFile } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';
const REDIS_CLI = process.env.REDIS_CLI || 'redis-cli';
const HOST = '127.0.0.1';
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p)) || null;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls fn (may be async) until it returns a truthy value, which it
 * resolves to; throws `timed out after N ms waiting for <what>` (with the
 * last error or value seen) at the deadline.
 */
async function poll(fn, { timeoutMs = 10000, intervalMs = 50, what = 'a condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      const detail = last instanceof Error ? `: last error: ${last.message}` :
        last !== undefined && last !== false && last !== null ? `: last value: ${JSON.stringify(last)}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await sleep(intervalMs);
  }
}

// ---------------------------------------------------------------------------
// Processes: every redis-server this module started, by PID.

const children = new Map(); // pid -> ChildProcess
const tempDirs = new Set(); // the directories of the servers and clusters not stopped yet

process.on('exit', () => {
  for (const pid of children.keys()) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
  }
  for (const dir of tempDirs) {
    try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* best effort */ }
  }
});

function makeTempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

function removeTempDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

/** A port nobody listens on right now (bind 0 on loopback, close). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function tail(file, lines = 15) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Spawns redis-server with argv; resolves once it is running (spawned), with { child, exited }. */
function spawnRedis(argv) {
  const cmd = SETPRIV ? SETPRIV : REDIS_SERVER;
  const args = SETPRIV ? ['--pdeathsig', 'KILL', '--', REDIS_SERVER, ...argv] : argv;
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child.pid);
      resolve({ code, signal });
    });
  });
  return new Promise((resolve, reject) => {
    child.once('error', (err) => reject(new Error(`could not start ${cmd}: ${err.message}`)));
    child.once('spawn', () => {
      children.set(child.pid, child);
      resolve({ child, exited, stderr: () => stderr });
    });
  });
}

/**
 * Starts one redis-server with argv on port and waits for PING.
 * Resolves { child, exited } or rejects (with the log's tail) when it exited
 * first; err.addressInUse says the port was taken.
 */
async function launch({ port, argv, logFile, password, timeoutMs = 10000 }) {
  const proc = await spawnRedis(argv);
  let exitedEarly = null;
  proc.exited.then((e) => { exitedEarly = e; });
  try {
    await poll(async () => {
      if (exitedEarly) return true;
      // Our process answers (not another one that holds the port): INFO's process_id.
      const info = await call(port, ['INFO', 'server'], { password, timeoutMs: 1000 });
      return Number(infoField(info, 'process_id')) === proc.child.pid;
    }, { timeoutMs, intervalMs: 30, what: `redis-server on port ${port} to answer PING` });
  } catch (err) {
    await killPid(proc.child, proc.exited);
    err.message += `\n${tail(logFile)}`;
    throw err;
  }
  if (exitedEarly) {
    const log = `${tail(logFile)}\n${proc.stderr()}`.trim();
    const err = new Error(`redis-server on port ${port} exited (${JSON.stringify(exitedEarly)}) before answering PING:\n${log}`);
    err.addressInUse = /Address already in use|Could not create server TCP listening socket|Failed listening on port/.test(log);
    throw err;
  }
  return proc;
}

/** SIGKILL to one child we started, waiting (bounded) for its exit. */
async function killPid(child, exited, signal = 'SIGKILL', timeoutMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try { process.kill(child.pid, signal); } catch { return; }
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis-server pid ${child.pid} did not exit ${timeoutMs} ms after ${signal}`)), timeoutMs);
  });
  try {
    await Promise.race([exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** SIGTERM (then SIGKILL after timeoutMs), waiting for the exit. */
async function terminate(child, exited, timeoutMs = 5000) {
  try {
    await killPid(child, exited, 'SIGTERM', timeoutMs);
  } catch {
    await killPid(child, exited, 'SIGKILL');
  }
}

// Everything startRedis/startCluster returned that is not stopped yet.
const live = new Set();

/** Stops every Redis and cluster this module started that is still up: test.after(stopAll). */
async function stopAll() {
  const all = [...live];
  await Promise.all(all.map((r) => r.stop()));
}

function baseArgs(port, dir, logFile) {
  return [
    '--port', String(port), '--bind', HOST, '--daemonize', 'no',
    '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', logFile,
    '--enable-debug-command', 'yes', '--protected-mode', 'yes',
  ];
}

// ---------------------------------------------------------------------------
// Standalone.

/**
 * Starts a standalone redis-server on a free loopback port.
 * options: password (--requirepass), args (more redis-server arguments),
 * t (a node:test context: t.after(stop) is registered).
 * Resolves { port, url, pid, password, dir, cli(...args), call(...args),
 * client(opts), kill9(), restart(), stop() }.
 */
async function startRedis({ password, args = [], t } = {}) {
  const dir = makeTempDir('symphony-redis-');
  const logFile = path.join(dir, 'redis.log');
  const extra = [...(password !== undefined ? ['--requirepass', password] : []), ...args];
  let port;
  let proc;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      proc = await launch({ port, argv: [...baseArgs(port, dir, logFile), ...extra], logFile, password });
      break;
    } catch (err) {
      if (!err.addressInUse || attempt >= 4) {
        removeTempDir(dir);
        throw err;
      }
    }
  }
  let stopped = false;
  const auth = password !== undefined ? `:${encodeURIComponent(password)}@` : '';
  const redis = {
    port,
    url: `redis://${auth}${HOST}:${port}`,
    password,
    dir,
    logFile,
    get pid() { return proc.child.pid; },
    get alive() { return proc.child.exitCode === null && proc.child.signalCode === null; },
    /** redis-cli -p PORT [-a pass] -e ...args → stdout trimmed; rejects on a non-zero exit (an error reply too). */
    cli: (...cmd) => cli(port, cmd, { password }),
    /** One command over RESP (a short-lived connection) → the parsed reply; an error reply rejects. */
    call: (...cmd) => call(port, cmd, { password }),
    /** A RESP client (RESP3 by default) authenticated with this server's password. */
    client: (opts = {}) => respClient(port, { password, ...opts }),
    /** SIGKILL, waits for the exit. */
    async kill9() {
      await killPid(proc.child, proc.exited);
    },
    /** Starts it again on the same port with the same options (after kill9 or when still up: kills it first). */
    async restart() {
      if (stopped) throw new Error('restart() after stop()');
      await killPid(proc.child, proc.exited);
      // The port was ours a moment ago; another process could take it
      // meanwhile, which is an error here (restarting elsewhere would not be
      // a restart). A socket in TIME_WAIT does not stop redis (SO_REUSEADDR).
      proc = await launch({ port, argv: [...baseArgs(port, dir, logFile), ...extra], logFile, password });
    },
    /** SHUTDOWN NOSAVE (SIGTERM, then SIGKILL, if that fails), waits, removes the directory. Idempotent. */
    async stop() {
      if (stopped) return;
      stopped = true;
      live.delete(redis);
      if (redis.alive) {
        try {
          await call(port, ['SHUTDOWN', 'NOSAVE'], { password, timeoutMs: 2000 });
        } catch { /* the connection closes under the reply: expected */ }
        // SHUTDOWN's own exit, else terminate() (the bound's timer cleared
        // either way: one left would hold the file's process 2 s after its
        // last test).
        let timer;
        await Promise.race([proc.exited, new Promise((r) => { timer = setTimeout(r, 2000); })]);
        clearTimeout(timer);
        await terminate(proc.child, proc.exited);
      }
      removeTempDir(dir);
    },
  };
  live.add(redis);
  if (t) t.after(() => redis.stop());
  return redis;
}

/** PUBSUB SHARDNUMSUB channel on a standalone Redis → the number of shard subscribers. */
async function numSub(redis, channel) {
  const reply = await redis.call('PUBSUB', 'SHARDNUMSUB', channel);
  return Number(reply[1]);
}

// ---------------------------------------------------------------------------
// redis-cli and one-shot commands.

/** Runs redis-cli -h 127.0.0.1 -p port [-a password --no-auth-warning] -e ...args → stdout trimmed. */
function cli(port, args, { password, timeoutMs = 15000 } = {}) {
  const argv = ['-h', HOST, '-p', String(port), '-e'];
  if (password !== undefined) argv.push('-a', password, '--no-auth-warning');
  argv.push(...args.map(String));
  return new Promise((resolve, reject) => {
    execFile(REDIS_CLI, argv, { timeout: timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) {
        const what = err.killed ? `timed out after ${timeoutMs} ms` : `exited ${err.code}`;
        reject(new Error(`redis-cli -p ${port} ${args.join(' ')}: ${what}: ${`${stdout}${stderr}`.trim()}`));
      } else {
        resolve(stdout.trim());
      }
    });
  });
}

/** One command on a fresh connection (RESP2 unless resp3) → the reply. */
async function call(port, args, { password, timeoutMs = 5000, resp3 = false } = {}) {
  const c = await respClient(port, { password, resp3, timeoutMs });
  try {
    return await c.call(...args);
  } finally {
    c.close();
  }
}

// ---------------------------------------------------------------------------
// A RESP2/RESP3 client for the tests.

const SUB_COMMANDS = new Set(['subscribe', 'unsubscribe', 'psubscribe', 'punsubscribe', 'ssubscribe', 'sunsubscribe']);

class RespError extends Error {
  constructor(message) {
    super(message);
    this.name = 'RespError';
    this.code = message.split(' ', 1)[0]; // ERR, MOVED, NOAUTH, WRONGPASS, ...
  }
}

/** Parses one RESP value at buf[off]; undefined when incomplete, else [value, nextOffset]. */
function parseResp(buf, off, buffers) {
  if (off >= buf.length) return undefined;
  const type = String.fromCharCode(buf[off]);
  const eol = buf.indexOf('\r\n', off);
  if (eol < 0) return undefined;
  const line = buf.toString('utf8', off + 1, eol);
  let next = eol + 2;
  const blob = () => {
    const len = Number(line);
    if (len < 0) return [null, next];
    if (buf.length < next + len + 2) return undefined;
    const body = buf.subarray(next, next + len);
    return [buffers ? Buffer.from(body) : body.toString('utf8'), next + len + 2];
  };
  const aggregate = (count) => {
    if (count < 0) return [null, next];
    const out = [];
    for (let i = 0; i < count; i++) {
      const r = parseResp(buf, next, buffers);
      if (!r) return undefined;
      out.push(r[0]);
      next = r[1];
    }
    return [out, next];
  };
  switch (type) {
    case '+': return [line, next];
    case '-': return [new RespError(line), next];
    case ':': return [Number(line), next];
    case '$': return blob();
    case '*': return aggregate(Number(line));
    case '_': return [null, next];
    case ',': return [line === 'inf' ? Infinity : line === '-inf' ? -Infinity : Number(line), next];
    case '#': return [line === 't', next];
    case '(': return [BigInt(line), next];
    case '!': {
      const r = blob();
      return r && [new RespError(r[0].toString()), r[1]];
    }
    case '=': {
      const r = blob();
      return r && [buffers ? r[0].subarray(4) : r[0].slice(4), r[1]]; // drop "txt:"
    }
    case '~': return aggregate(Number(line));
    case '%': {
      const r = aggregate(Number(line) * 2);
      if (!r) return undefined;
      const obj = {};
      for (let i = 0; i < r[0].length; i += 2) obj[String(r[0][i])] = r[0][i + 1];
      return [obj, r[1]];
    }
    case '|': { // attribute: skipped, the value follows
      const r = aggregate(Number(line) * 2);
      return r && parseResp(buf, r[1], buffers);
    }
    case '>': {
      const r = aggregate(Number(line));
      return r && [{ push: r[0] }, r[1]];
    }
    default:
      throw new Error(`RESP: unexpected type byte 0x${buf[off].toString(16)} at ${off}`);
  }
}

function encode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/**
 * A RESP client on 127.0.0.1:port. resp3 (default true): HELLO 3 first, so
 * pub/sub messages arrive as push frames beside replies; buffers: bulk
 * strings as Buffers. password: AUTH (HELLO ... AUTH default pass).
 * Resolves { call(...args), send(...args), pushes, waitPush(pred, ms, what),
 * closed, close(), socket }.
 *  - call(): the reply (an error reply rejects with a RespError, .code the
 *    first word: MOVED, NOAUTH, ...). With RESP3, (s|p)(un)subscribe resolve
 *    to the array of their confirmation pushes (one per channel).
 *  - pushes: every push frame so far, in order, as arrays
 *    (['smessage', channel, payload], ['sunsubscribe', channel, count], ...),
 *    each with .at = Date.now() when it arrived.
 *  - closed: a promise of { error } once the socket closed.
 */
function respClient(port, { host = HOST, password, user = 'default', resp3 = true, buffers = false, timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host);
    socket.setNoDelay(true);
    let buf = Buffer.alloc(0);
    const pending = []; // { resolve, reject, sub: name, expect, got }
    const pushes = [];
    const waiters = new Set();
    let closedInfo = null;
    let resolveClosed;
    const closed = new Promise((r) => { resolveClosed = r; });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`could not connect to Redis on ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);

    const onPush = (p) => {
      p.at = Date.now();
      pushes.push(p);
      const head = pending[0];
      const kind = String(p[0]).toLowerCase();
      if (head && head.sub === kind) {
        head.got.push(p);
        const done = head.expect === null ? Number(p[2]) === 0 || p[1] === null : head.got.length >= head.expect;
        if (done) { pending.shift(); head.resolve(head.got); }
      }
      for (const w of waiters) w();
    };

    socket.on('data', (d) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      let off = 0;
      for (;;) {
        let r;
        try {
          r = parseResp(buf, off, buffers);
        } catch (err) {
          socket.destroy(err);
          return;
        }
        if (!r) break;
        off = r[1];
        const v = r[0];
        if (v && typeof v === 'object' && !Array.isArray(v) && Array.isArray(v.push)) {
          onPush(v.push);
          continue;
        }
        const head = pending.shift();
        if (!head) continue; // an unasked reply: ignored
        if (v instanceof RespError) head.reject(v);
        else head.resolve(v);
      }
      buf = off === buf.length ? Buffer.alloc(0) : buf.subarray(off);
    });
    socket.on('error', (err) => { closedInfo = { error: err }; });
    socket.on('close', () => {
      clearTimeout(timer);
      if (!closedInfo) closedInfo = { error: null };
      const err = new Error(`Redis connection to port ${port} closed${closedInfo.error ? `: ${closedInfo.error.message}` : ''}`);
      while (pending.length) pending.shift().reject(err);
      for (const w of waiters) w();
      resolveClosed(closedInfo);
      reject(err); // no-op once resolved
    });

    const client = {
      socket,
      pushes,
      closed,
      get isClosed() { return closedInfo !== null; },
      call(...args) {
        if (closedInfo) return Promise.reject(new Error(`Redis connection to port ${port} is closed`));
        const name = String(args[0]).toLowerCase();
        return new Promise((res, rej) => {
          const entry = { resolve: res, reject: rej };
          if (resp3 && SUB_COMMANDS.has(name)) {
            entry.sub = name;
            entry.expect = args.length > 1 ? args.length - 1 : null;
            entry.got = [];
          }
          pending.push(entry);
          socket.write(encode(args));
        });
      },
      /** Writes a command without waiting for (or matching) a reply: pair it with waitPush. */
      send(...args) {
        socket.write(encode(args));
      },
      /** Resolves to the first push (from the start of pushes) for which pred is true. */
      waitPush(pred, ms = 5000, what = 'a push message') {
        return new Promise((res, rej) => {
          const check = () => {
            const hit = pushes.find(pred);
            if (hit) { done(); res(hit); return; }
            if (closedInfo) { done(); rej(new Error(`${what}: the connection closed before it arrived`)); }
          };
          const t = setTimeout(() => { done(); rej(new Error(`timed out after ${ms} ms waiting for ${what}`)); }, ms);
          const done = () => { clearTimeout(t); waiters.delete(check); };
          waiters.add(check);
          check();
        });
      },
      close() {
        socket.destroy();
      },
    };

    socket.once('connect', async () => {
      try {
        if (resp3) {
          const hello = ['HELLO', '3'];
          if (password !== undefined) hello.push('AUTH', user, password);
          await client.call(...hello);
        } else if (password !== undefined) {
          await client.call('AUTH', password);
        }
        clearTimeout(timer);
        resolve(client);
      } catch (err) {
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      }
    });
  });
}

// ---------------------------------------------------------------------------
// Cluster.

/** CRC16-XMODEM (poly 0x1021, init 0), Redis Cluster's key hash. */
const CRC16_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

function crc16(bytes) {
  let crc = 0;
  for (const b of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ b) & 0xff];
  return crc;
}

/** The hash slot of a key (string or Buffer): hash tags honoured ({...} non-empty, first '{'). */
function slotOf(key) {
  let bytes = Buffer.isBuffer(key) ? key : Buffer.from(String(key));
  const open = bytes.indexOf(0x7b); // {
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  return crc16(bytes) % 16384;
}

/** Parses CLUSTER NODES into [{ id, port, busPort, flags, role, primaryId, myself, failed, linkState, slots, importing, migrating }]. */
function parseClusterNodes(text) {
  return String(text).trim().split('\n').filter(Boolean).map((line) => {
    const f = line.trim().split(' ');
    const [addr] = f[1].split(',');
    const [hostPort, cport] = addr.split('@');
    const port = Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
    const flags = f[2].split(',');
    const slots = [];
    const importing = {};
    const migrating = {};
    for (const s of f.slice(8)) {
      let m;
      if ((m = /^\[(\d+)->-(\w+)\]$/.exec(s))) migrating[m[1]] = m[2];
      else if ((m = /^\[(\d+)-<-(\w+)\]$/.exec(s))) importing[m[1]] = m[2];
      else {
        const [a, b] = s.split('-').map(Number);
        slots.push([a, b === undefined ? a : b]);
      }
    }
    return {
      id: f[0],
      port,
      busPort: Number(cport),
      flags,
      role: flags.includes('master') ? 'primary' : flags.includes('slave') ? 'replica' : 'unknown',
      primaryId: f[3] === '-' ? null : f[3],
      myself: flags.includes('myself'),
      failed: flags.includes('fail'),
      pfail: flags.includes('fail?'),
      linkState: f[7],
      configEpoch: Number(f[6]),
      slots,
      importing,
      migrating,
    };
  });
}

function infoField(info, name) {
  const m = new RegExp(`^${name}:(.*)$`, 'm').exec(String(info));
  return m ? m[1].trim() : null;
}

/**
 * Starts a local Redis Cluster: primaries * (1 + replicas) redis-server
 * processes, created with `redis-cli --cluster create`, and waits until every
 * node says cluster_state:ok, agrees on the slot map and the roles, and every
 * replica's link to its primary is up.
 * options: primaries (3), replicas (1 per primary), nodeTimeout (ms, 2000),
 * args (more redis-server arguments for every node), password (--requirepass
 * and --masterauth), t (a node:test context: t.after(stop)).
 */
async function startCluster({ primaries = 3, replicas = 1, nodeTimeout = 2000, args = [], password, t } = {}) {
  const base = makeTempDir('symphony-cluster-');
  const count = primaries * (1 + replicas);
  const auth = password !== undefined ? ['--requirepass', password, '--masterauth', password] : [];
  const nodes = [];
  let stopped = false;

  const argvOf = (n) => [
    ...baseArgs(n.port, n.dir, n.logFile),
    '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
    '--cluster-node-timeout', String(nodeTimeout), '--cluster-port', String(n.busPort),
    // A replica may always take over, however long ago it last heard from
    // its primary (the default, 10, refuses after a long enough outage).
    '--cluster-replica-validity-factor', '0',
    // A replica's first full sync starts at once (the default waits 5 s for more replicas).
    '--repl-diskless-sync-delay', '0',
    ...auth, ...args,
  ];

  const startNode = async (i) => {
    for (let attempt = 0; ; attempt++) {
      const port = await freePort();
      const busPort = await freePort();
      if (port === busPort) continue;
      const dir = path.join(base, `node-${i}-${attempt}`);
      fs.mkdirSync(dir);
      const n = { index: i, port, busPort, dir, logFile: path.join(dir, 'redis.log') };
      try {
        n.proc = await launch({ port, argv: argvOf(n), logFile: n.logFile, password });
        return n;
      } catch (err) {
        fs.rmSync(dir, { recursive: true, force: true });
        if (!err.addressInUse || attempt >= 4) throw err;
      }
    }
  };

  const isAlive = (n) => n.proc.child.exitCode === null && n.proc.child.signalCode === null;
  const byPort = (port) => {
    const n = nodes.find((x) => x.port === port);
    if (!n) throw new Error(`no cluster node on port ${port} (nodes: ${nodes.map((x) => x.port).join(', ')})`);
    return n;
  };
  const alive = () => nodes.filter(isAlive);
  const c = (port, ...cmd) => call(port, cmd, { password });

  /** Every alive node's CLUSTER NODES and cluster_state: [{ port, state, view }]. */
  const views = () => Promise.all(alive().map(async (n) => {
    const [info, text] = await Promise.all([c(n.port, 'CLUSTER', 'INFO'), c(n.port, 'CLUSTER', 'NODES')]);
    return { port: n.port, state: infoField(info, 'cluster_state'), view: parseClusterNodes(text) };
  }));

  /** One view's summary: slot ranges -> primary port, and each node's role (and primary's port). */
  const summarize = (view) => {
    const idToPort = new Map(view.map((x) => [x.id, x.port]));
    const owners = view.filter((x) => x.role === 'primary' && !x.failed).flatMap((x) => x.slots.map(([a, b]) => `${a}-${b}:${x.port}`)).sort();
    const roles = view.filter((x) => !x.failed).map((x) => `${x.port}:${x.role}${x.primaryId ? `<${idToPort.get(x.primaryId)}` : ''}`).sort();
    const covered = view.filter((x) => x.role === 'primary' && !x.failed).reduce((s, x) => s + x.slots.reduce((a, [p, q]) => a + q - p + 1, 0), 0);
    return { owners: owners.join(' '), roles: roles.join(' '), covered };
  };

  /**
   * Waits until every alive node: cluster_state:ok, the same slot owners and
   * roles, all 16384 slots covered, dead nodes flagged fail (or forgotten),
   * no slot importing/migrating, and check(summary, views) (optional) holds.
   */
  const waitAgree = async (what, check, timeoutMs = 20000) => {
    let lastProblem = '';
    await poll(async () => {
      const vs = await views();
      const deadPorts = new Set(nodes.filter((n) => !isAlive(n)).map((n) => n.port));
      const alivePorts = new Set(alive().map((n) => n.port));
      for (const v of vs) {
        if (v.state !== 'ok') { lastProblem = `node ${v.port}: cluster_state:${v.state}`; return false; }
        for (const x of v.view) {
          if (deadPorts.has(x.port) && !x.failed) { lastProblem = `node ${v.port} does not see dead ${x.port} as failed`; return false; }
          if (alivePorts.has(x.port) && (x.failed || x.pfail)) { lastProblem = `node ${v.port} sees live ${x.port} as ${x.flags}`; return false; }
          if (Object.keys(x.importing).length || Object.keys(x.migrating).length) { lastProblem = `node ${x.port} has a slot importing/migrating`; return false; }
        }
        for (const p of alivePorts) {
          if (!v.view.some((x) => x.port === p)) { lastProblem = `node ${v.port} does not know ${p}`; return false; }
        }
      }
      const sums = vs.map((v) => ({ port: v.port, ...summarize(v.view) }));
      for (const s of sums) {
        if (s.covered !== 16384) { lastProblem = `node ${s.port} sees ${s.covered} slots covered`; return false; }
        if (s.owners !== sums[0].owners) { lastProblem = `slot owners differ: ${s.port}: ${s.owners} / ${sums[0].port}: ${sums[0].owners}`; return false; }
        if (s.roles !== sums[0].roles) { lastProblem = `roles differ: ${s.port}: ${s.roles} / ${sums[0].port}: ${sums[0].roles}`; return false; }
      }
      if (check && !(await check(sums[0], vs))) { lastProblem = `not yet: ${what}`; return false; }
      return true;
    }, { timeoutMs, intervalMs: 100, what: `the cluster to agree (${what})` }).catch((err) => {
      err.message += ` [${lastProblem}]`;
      throw err;
    });
    await refresh();
  };

  /** Re-reads roles and ids into nodes[] from an alive node's CLUSTER NODES. */
  const refresh = async () => {
    const a = alive();
    if (!a.length) return;
    const view = parseClusterNodes(await c(a[0].port, 'CLUSTER', 'NODES'));
    const idToPort = new Map(view.map((x) => [x.id, x.port]));
    for (const n of nodes) {
      const x = view.find((v) => v.port === n.port);
      n.alive = isAlive(n);
      if (!x) continue;
      n.id = x.id;
      n.role = x.role;
      n.primaryPort = x.primaryId ? idToPort.get(x.primaryId) : null;
      n.slots = x.slots;
    }
  };

  /** The port of the (alive) primary owning slot, per an alive node's view. */
  const primaryForSlot = async (slot) => {
    const a = alive();
    if (!a.length) throw new Error('no cluster node is alive');
    const view = parseClusterNodes(await c(a[0].port, 'CLUSTER', 'NODES'));
    const owner = view.find((x) => x.role === 'primary' && !x.failed && x.slots.some(([p, q]) => slot >= p && slot <= q));
    if (!owner) throw new Error(`no primary owns slot ${slot} in node ${a[0].port}'s view`);
    return owner.port;
  };

  const replicasOf = async (primaryPort) => {
    await refresh();
    return nodes.filter((n) => isAlive(n) && n.role === 'replica' && n.primaryPort === primaryPort);
  };

  const waitReplicationUp = () => poll(async () => {
    await refresh();
    for (const n of alive().filter((x) => x.role === 'replica')) {
      const info = await c(n.port, 'INFO', 'replication');
      if (infoField(info, 'master_link_status') !== 'up') return false;
    }
    return true;
  }, { timeoutMs: 20000, intervalMs: 100, what: 'every replica\'s link to its primary (master_link_status:up)' });

  const cluster = {
    nodes,
    base,
    nodeTimeout,
    password,
    get urls() {
      const a = password !== undefined ? `:${encodeURIComponent(password)}@` : '';
      return nodes.filter(isAlive).map((n) => `redis://${a}${HOST}:${n.port}`);
    },
    /** The primaries' ports (alive, per the last refresh). */
    get primaries() { return nodes.filter((n) => isAlive(n) && n.role === 'primary').map((n) => n.port); },
    slotOf,
    refresh,
    primaryForSlot,
    /** redis-cli on one node (stdout trimmed; rejects on an error). */
    cli: (port, ...cmd) => cli(port, cmd, { password }),
    /** One command on one node over RESP → the reply. */
    call: c,
    /** A RESP client (RESP3 by default) on one node. */
    client: (port, opts = {}) => respClient(port, { password, ...opts }),
    waitAgree,
    /**
     * Makes a replica of primaryPort take over with CLUSTER FAILOVER
     * (force: FORCE, takeover: TAKEOVER) and waits until every node agrees.
     * Resolves { primary: the new primary's port, replica: the old one's }.
     */
    async failover(primaryPort, { force = false, takeover = false, replicaPort, timeoutMs = 20000 } = {}) {
      const reps = await replicasOf(primaryPort);
      const rep = replicaPort !== undefined ? reps.find((r) => r.port === replicaPort) : reps[0];
      if (!rep) throw new Error(`no alive replica of ${primaryPort} to fail over to`);
      if (!force && !takeover) await waitReplicationUp();
      const opt = takeover ? ['TAKEOVER'] : force ? ['FORCE'] : [];
      await c(rep.port, 'CLUSTER', 'FAILOVER', ...opt);
      await waitAgree(`${rep.port} to replace ${primaryPort}`, (s) =>
        s.roles.split(' ').includes(`${rep.port}:primary`) && s.roles.split(' ').includes(`${primaryPort}:replica<${rep.port}`), timeoutMs);
      return { primary: rep.port, replica: primaryPort };
    },
    /**
     * SIGKILL to one node. A primary with replicas: waits (unless wait is
     * false) until one of them is promoted and every other node agrees.
     * Resolves { primary: the new primary's port, or null }.
     */
    async killNode(port, { wait = true, timeoutMs = 30000 } = {}) {
      const n = byPort(port);
      await refresh();
      const wasPrimary = n.role === 'primary' && n.slots && n.slots.length > 0;
      const reps = wasPrimary ? nodes.filter((x) => isAlive(x) && x.primaryPort === port).map((x) => x.port) : [];
      await killPid(n.proc.child, n.proc.exited);
      if (!wait) return { primary: null };
      let promoted = null;
      await waitAgree(wasPrimary ? `a replica of ${port} (${reps.join(', ')}) promoted` : `${port} flagged failed`, (s) => {
        if (!wasPrimary) return true;
        promoted = reps.find((r) => s.roles.split(' ').includes(`${r}:primary`)) ?? null;
        return promoted !== null;
      }, timeoutMs);
      return { primary: promoted };
    },
    /**
     * Starts a killed node again (same port, directory and nodes.conf), waits
     * until every node sees it and agrees; an old primary whose slots moved
     * comes back as a replica.
     */
    async restartNode(port, { timeoutMs = 30000 } = {}) {
      if (stopped) throw new Error('restartNode() after stop()');
      const n = byPort(port);
      await killPid(n.proc.child, n.proc.exited);
      n.proc = await launch({ port: n.port, argv: argvOf(n), logFile: n.logFile, password });
      await waitAgree(`${port} back`, null, timeoutMs);
      return n;
    },
    /**
     * Moves a slot to the primary on toPort: SETSLOT IMPORTING on the target,
     * MIGRATING on the source, MIGRATE of its keys, SETSLOT NODE on the target,
     * the source, then every other primary; waits until every node agrees.
     * Resolves { from, to }.
     */
    async migrateSlot(slot, toPort, { timeoutMs = 20000 } = {}) {
      await refresh();
      const from = await primaryForSlot(slot);
      const src = byPort(from);
      const dst = byPort(toPort);
      if (dst.role !== 'primary') throw new Error(`migrateSlot: ${toPort} is not a primary`);
      if (from === toPort) return { from, to: toPort };
      await c(toPort, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', src.id);
      await c(from, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', dst.id);
      for (;;) {
        const keys = await c(from, 'CLUSTER', 'GETKEYSINSLOT', slot, 100);
        if (!keys.length) break;
        const auth2 = password !== undefined ? ['AUTH', password] : [];
        await c(from, 'MIGRATE', HOST, toPort, '', 0, 5000, ...auth2, 'KEYS', ...keys);
      }
      await c(toPort, 'CLUSTER', 'SETSLOT', slot, 'NODE', dst.id);
      await c(from, 'CLUSTER', 'SETSLOT', slot, 'NODE', dst.id);
      for (const p of nodes.filter((x) => isAlive(x) && x.role === 'primary' && x.port !== from && x.port !== toPort)) {
        await c(p.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', dst.id);
      }
      await waitAgree(`slot ${slot} owned by ${toPort}`, (s) => s.owners.split(' ').some((o) => {
        const [range, port] = o.split(':');
        const [a, b] = range.split('-').map(Number);
        return Number(port) === toPort && slot >= a && slot <= b;
      }), timeoutMs);
      return { from, to: toPort };
    },
    /** PUBSUB SHARDNUMSUB channel on the primary that owns its slot now → a number. */
    async shardNumSub(channel) {
      const port = await primaryForSlot(slotOf(channel));
      const reply = await c(port, 'PUBSUB', 'SHARDNUMSUB', channel);
      return Number(reply[1]);
    },
    /** SIGTERM to every node (SIGKILL past 5 s), waits, removes the directories. Idempotent. */
    async stop() {
      if (stopped) return;
      stopped = true;
      live.delete(cluster);
      await Promise.all(nodes.map((n) => terminate(n.proc.child, n.proc.exited)));
      removeTempDir(base);
    },
  };
  live.add(cluster);
  if (t) t.after(() => cluster.stop());

  try {
    for (let i = 0; i < count; i++) nodes.push(await startNode(i));
    const created = await cli(nodes[0].port, ['--cluster', 'create', ...nodes.map((n) => `${HOST}:${n.port}`),
      '--cluster-replicas', String(replicas), '--cluster-yes'], { password, timeoutMs: 60000 });
    if (!/All 16384 slots covered/.test(created)) throw new Error(`redis-cli --cluster create did not cover every slot:\n${created}`);
    await waitAgree('created', (s) => s.roles.split(' ').filter((r) => /:primary$/.test(r)).length === primaries &&
      s.roles.split(' ').filter((r) => /:replica</.test(r)).length === primaries * replicas);
    await waitReplicationUp();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

module.exports = {
  startRedis,
  startCluster,
  stopAll,
  numSub,
  slotOf,
  crc16,
  cli,
  call,
  respClient,
  RespError,
  parseClusterNodes,
  freePort,
  poll,
};
