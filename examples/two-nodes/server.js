'use strict';
// Two symphony nodes with Redis behind HAProxy, on loopback, with one
// command:
//
//   node examples/two-nodes/server.js     then open http://127.0.0.1:8000/ in two tabs
//
// It starts redis-server, two nodes (node.js) and haproxy (haproxy.cfg),
// prints their PIDs, and stops them all on Ctrl-C. Each tab lands on one
// node or the other; what one writes on the wall, every tab shows. Stop a
// node (kill <its pid>): its tabs reconnect through HAProxy to the other
// node and resume with nothing missed. Needs redis-server (7+) and haproxy
// on PATH (Debian: apt-get install redis-server haproxy).
//
// Ports (environment): LB_PORT 8000, REDIS_PORT 6390, A_WS_PORT 9101,
// B_WS_PORT 9102, A_WEB_PORT 9111, B_WEB_PORT 9112.

const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');

const host = '127.0.0.1';
const env = {
  LB_HOST: host,
  LB_PORT: process.env.LB_PORT || '8000',
  REDIS_PORT: process.env.REDIS_PORT || '6390',
  A_WS_PORT: process.env.A_WS_PORT || '9101',
  B_WS_PORT: process.env.B_WS_PORT || '9102',
  A_WEB_PORT: process.env.A_WEB_PORT || '9111',
  B_WEB_PORT: process.env.B_WEB_PORT || '9112',
};
const children = [];
let stopping = false;

/** Starts a program; resolves once its output matches ready (or at once without one). */
function run(name, cmd, args, { extraEnv = {}, ready, quiet = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.once('error', (err) => reject(new Error(err.code === 'ENOENT'
      ? `${cmd} not found: install it (Debian: apt-get install ${cmd === 'haproxy' ? 'haproxy' : 'redis-server'})`
      : `${name}: ${err.message}`)));
    let out = '';
    const onData = (d) => {
      out += d;
      if (!quiet) for (const line of String(d).split('\n')) if (line.trim()) console.log(`[${name}] ${line}`);
      if (ready && ready.test(out)) resolve(child);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('spawn', () => {
      children.push({ name, child });
      console.log(`${name}: pid ${child.pid}`);
      if (!ready) resolve(child);
    });
    child.once('exit', (code, signal) => {
      console.log(`${name} exited (${signal || code})${quiet && !stopping ? `:\n${out}` : ''}`);
      reject(new Error(`${name} exited (${signal || code}) before it was ready`));
    });
  });
}

/** Resolves once something accepts connections on port (tries every 50 ms, for 5 s, while child runs). */
async function listening(port, child) {
  for (let i = 0; i < 100 && child.exitCode === null; i++) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, host, () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(child.exitCode === null ? `nothing listens on ${host}:${port}` : 'haproxy exited (see above)');
}

async function main() {
  await run('redis', 'redis-server', ['--port', env.REDIS_PORT, '--bind', host, '--save', '', '--appendonly', 'no'],
    { ready: /Ready to accept connections/, quiet: true });
  const node = path.join(__dirname, 'node.js');
  const redis = `redis://${host}:${env.REDIS_PORT}`;
  await Promise.all(['a', 'b'].map((n) => run(`node ${n}`, process.execPath, [node], {
    extraEnv: { NODE: n, HOST: host, WS_PORT: env[`${n.toUpperCase()}_WS_PORT`], WEB_PORT: env[`${n.toUpperCase()}_WEB_PORT`], REDIS_URL: redis },
    ready: /WebSockets on/,
  })));
  // -db: in the foreground, so that it is our child and stops with us.
  const haproxy = await run('haproxy', 'haproxy', ['-db', '-f', path.join(__dirname, 'haproxy.cfg')]);
  await listening(Number(env.LB_PORT), haproxy);
  console.log(`two nodes behind HAProxy: open http://${host}:${env.LB_PORT}/ (Ctrl-C stops everything)`);
}

async function stop(code) {
  stopping = true;
  await Promise.all(children.map(({ child }) => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', resolve);
    child.kill('SIGTERM');
  })));
  process.exit(code);
}

process.once('SIGINT', () => stop(0));
process.once('SIGTERM', () => stop(0));
main().catch((err) => {
  console.error(`cannot start: ${err.message}`);
  stop(1);
});
