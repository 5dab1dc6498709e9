'use strict';
// Soketi 1.6 (the peer of the pusher phases) in this process, as its own
// `soketi start` runs it (its Cli: options from SOKETI_* variables), so
// that the runner's ServerProc drives and measures it as any other server:
// the first stdout line {"port":N,"soketi":{version,dir,uws}}, a stats line
// a second on stderr (connections: Soketi's local namespace's sockets),
// SIGTERM to stop (Soketi closes its sockets, then exits).
//
//   BENCH_SOKETI_DIR=<bench/out/peers/soketi> BENCH_PUSHER_APP=id:key:secret \
//     node bench/servers/soketi-server.js --port 0
//
// The runner installs Soketi there on demand (bench/runner/pusher-peers.js,
// from bench/peers/soketi/package.json). Settings beyond Soketi's defaults,
// each so that a limit of Soketi's does not stand in for its cost:
// SOKETI_PRESENCE_MAX_MEMBERS (default 100: BENCH_PRESENCE_MAX_MEMBERS or
// 100000), SOKETI_EVENT_MAX_BATCH_SIZE 100, SOKETI_SHUTDOWN_GRACE_PERIOD 0;
// the metrics server on another free port (it always listens), metrics off,
// debug off, host 127.0.0.1.

const path = require('node:path');
const { parseArgs, app, freePort, accepting, statsLines, bound } = require('./pusher-common');

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const dir = process.env.BENCH_SOKETI_DIR;
  if (!dir) throw new Error('BENCH_SOKETI_DIR is not set (the folder Soketi was installed in)');
  const pkgDir = path.join(dir, 'node_modules', '@soketi', 'soketi');
  const version = require(path.join(pkgDir, 'package.json')).version;
  const uws = require(path.join(dir, 'node_modules', 'uWebSockets.js', 'package.json'));
  const a = app();
  const port = o.port > 0 ? o.port : await freePort();
  const metricsPort = await freePort();
  Object.assign(process.env, {
    SOKETI_HOST: '127.0.0.1',
    SOKETI_PORT: String(port),
    SOKETI_METRICS_SERVER_PORT: String(metricsPort),
    SOKETI_METRICS_ENABLED: 'false',
    SOKETI_DEBUG: 'false',
    SOKETI_DEFAULT_APP_ID: a.id,
    SOKETI_DEFAULT_APP_KEY: a.key,
    SOKETI_DEFAULT_APP_SECRET: a.secret,
    SOKETI_PRESENCE_MAX_MEMBERS: process.env.BENCH_PRESENCE_MAX_MEMBERS || '100000',
    SOKETI_EVENT_MAX_BATCH_SIZE: '100',
    SOKETI_SHUTDOWN_GRACE_PERIOD: '0',
  });
  // Soketi's Cli reads .env from the working directory (dotenv): run where
  // there is none of the user's.
  process.chdir(dir);
  // aws-sdk v2 (a dependency Soketi loads whatever its drivers) prints its
  // end-of-support notice unless told not to; Soketi's banner and its
  // console.log lines are not JSON and would land among the runner's notes.
  process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
  const out = process.stdout.write.bind(process.stdout);
  console.log = () => {};
  console.info = () => {};
  const { Cli } = require(path.join(pkgDir, 'dist', 'cli', 'cli.js'));
  const cli = new Cli();
  await cli.start({});
  await accepting(port);
  const adapter = cli.server.adapter;
  const local = adapter && (adapter.driver || adapter);
  const sockets = () => {
    const ns = local && local.namespaces && local.namespaces.get(a.id);
    return ns ? ns.sockets.size : 0;
  };
  out(`${JSON.stringify({ port, soketi: { version, dir, uws: `${uws.name}@${uws.version}` } })}\n`);
  statsLines(o['stats-interval'], () => ({ connections: sockets() }));
  bound(o.duration);
}

main().catch((err) => {
  process.stderr.write(`soketi-server: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
