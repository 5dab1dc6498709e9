'use strict';
// A Sentinel-managed Redis for the tests: one primary and one replica
// (redis-server --replicaof, helpers/redis.js' startRedis) and three
// sentinels (`redis-server <conf> --sentinel`, Debian's redis-server), each
// on a free loopback port, with a low down-after-milliseconds so that a
// failover takes seconds.
//
// Every sentinel started here is stopped by its PID: by stop(), by the
// process 'exit' handler below (SIGKILL), and, should this process be killed
// without running either, by the kernel (started through
// `setpriv --pdeathsig KILL`, as helpers/redis.js does for redis-server).
// Every wait is bounded (poll's deadline names what did not happen).

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startRedis, freePort, poll, call } = require('./redis');

const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';
const HOST = '127.0.0.1';
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p)) || null;

const children = new Map(); // pid -> ChildProcess
const dirs = new Set();

process.on('exit', () => {
  for (const pid of children.keys()) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
  for (const d of dirs) {
    try { fs.rmSync(d, { recursive: true, force: true }); } catch { /* best effort */ }
  }
});

function infoField(info, name) {
  const m = new RegExp(`^${name}:(.*)$`, 'm').exec(String(info));
  return m ? m[1].trim() : null;
}

/** Starts one sentinel (conf written to dir) on a free port; resolves once it answers PING. */
async function startSentinel(dir, conf) {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const file = path.join(dir, `sentinel-${port}.conf`);
    const log = path.join(dir, `sentinel-${port}.log`);
    fs.writeFileSync(file, [`port ${port}`, `bind ${HOST}`, 'daemonize no', `dir ${dir}`, `logfile ${log}`, ...conf, ''].join('\n'));
    const argv = [file, '--sentinel'];
    const child = SETPRIV ? spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', REDIS_SERVER, ...argv], { stdio: 'ignore' }) :
      spawn(REDIS_SERVER, argv, { stdio: 'ignore' });
    await new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    children.set(child.pid, child);
    const exited = new Promise((resolve) => child.once('exit', () => { children.delete(child.pid); resolve(); }));
    let gone = false;
    exited.then(() => { gone = true; });
    try {
      await poll(async () => gone || (await call(port, ['PING'], { timeoutMs: 1000 })) === 'PONG',
        { what: `sentinel on port ${port} to answer PING`, timeoutMs: 10000, intervalMs: 30 });
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    if (gone) {
      const text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
      if (attempt < 4 && /Address already in use|Could not create server TCP/.test(text)) continue;
      throw new Error(`sentinel on port ${port} exited before answering PING:\n${text.slice(-2000)}`);
    }
    const s = {
      port,
      url: `redis://${HOST}:${port}`,
      get alive() { return !gone; },
      /** SIGKILL, waits for the exit. */
      async kill9() {
        if (gone) return;
        child.kill('SIGKILL');
        await exited;
      },
      call: (...cmd) => call(port, cmd),
    };
    return s;
  }
}

/**
 * Starts a primary, a replica and three sentinels watching the primary as
 * `name`, and waits until every sentinel knows the replica and the two
 * other sentinels (a failover needs them). options: name ('mymaster'),
 * downAfterMs (1000), failoverTimeoutMs (5000), t (a node:test context:
 * t.after(stop)). Resolves { name, primary, replica, sentinels, urls,
 * nodes: [primary, replica], master(), byPort(port), waitMaster(port),
 * failover(), stop() }.
 */
async function startSentinels({ name = 'mymaster', downAfterMs = 1000, failoverTimeoutMs = 5000, t } = {}) {
  const fast = ['--repl-diskless-sync-delay', '0'];
  const primary = await startRedis({ t, args: fast });
  const replica = await startRedis({ t, args: [...fast, '--replicaof', HOST, String(primary.port)] });
  await poll(async () => infoField(await replica.call('INFO', 'replication'), 'master_link_status') === 'up',
    { what: 'the replica\'s link to the primary', timeoutMs: 15000 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-sentinel-'));
  dirs.add(dir);
  const conf = [
    `sentinel monitor ${name} ${HOST} ${primary.port} 2`,
    `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
    `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
    `sentinel parallel-syncs ${name} 1`,
  ];
  const sentinels = [];
  const set = {
    name,
    primary,
    replica,
    sentinels,
    nodes: [primary, replica],
    get urls() { return sentinels.map((s) => s.url); },
    /** The data node on port. */
    byPort(port) {
      const n = set.nodes.find((x) => x.port === Number(port));
      if (!n) throw new Error(`no data node on port ${port}`);
      return n;
    },
    /** What a live sentinel says the primary's port is. */
    async master() {
      for (const s of sentinels.filter((x) => x.alive)) {
        try {
          const r = await s.call('SENTINEL', 'get-master-addr-by-name', name);
          if (Array.isArray(r)) return Number(r[1]);
        } catch { /* the next one */ }
      }
      throw new Error('no sentinel answers');
    },
    /** Waits until every live sentinel names port and that node says ROLE master. */
    async waitMaster(port, timeoutMs = 30000) {
      await poll(async () => {
        for (const s of sentinels.filter((x) => x.alive)) {
          const r = await s.call('SENTINEL', 'get-master-addr-by-name', name);
          if (!Array.isArray(r) || Number(r[1]) !== port) return false;
        }
        const role = await set.byPort(port).call('ROLE');
        return role[0] === 'master';
      }, { what: `every sentinel to name ${port} the primary`, timeoutMs, intervalMs: 50 });
    },
    /** SENTINEL FAILOVER on one sentinel; resolves { from, to } once every sentinel names the replica. */
    async failover(timeoutMs = 30000) {
      const from = await set.master();
      const to = set.nodes.find((n) => n.port !== from).port;
      // A sentinel that has not yet read the replica's own INFO answers
      // NOGOODSLAVE: asked again until it takes the failover.
      await poll(async () => {
        try {
          await sentinels[0].call('SENTINEL', 'FAILOVER', name);
          return true;
        } catch (err) {
          if (/^NOGOODSLAVE/.test(err.message)) return false;
          throw err;
        }
      }, { what: 'a sentinel to take SENTINEL FAILOVER', timeoutMs: 15000, intervalMs: 50 });
      await set.waitMaster(to, timeoutMs);
      return { from, to };
    },
    /** Kills every sentinel and both data nodes; removes the sentinels' directory. Idempotent. */
    async stop() {
      await Promise.all(sentinels.map((s) => s.kill9()));
      await Promise.all([primary.stop(), replica.stop()]);
      fs.rmSync(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
  if (t) t.after(() => set.stop());
  for (let i = 0; i < 3; i++) sentinels.push(await startSentinel(dir, conf));
  await poll(async () => {
    for (const s of sentinels) {
      const [others, replicas] = await Promise.all([s.call('SENTINEL', 'sentinels', name), s.call('SENTINEL', 'replicas', name)]);
      if (others.length !== 2 || replicas.length !== 1) return false;
    }
    return true;
  }, { what: 'every sentinel to know the replica and the two other sentinels', timeoutMs: 20000, intervalMs: 100 });
  return set;
}

module.exports = { startSentinels };
