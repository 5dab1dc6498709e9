#!/usr/bin/env node
'use strict';
// npx symphony-ws pusher [--config file.json] [--port N] [--host H] [--print-config]
//
// A standalone Pusher Channels server (docs/pusher.md): pusher-js, Laravel
// Echo and every Pusher server SDK connect to it unchanged. It reads Soketi's
// configuration, the SOKETI_* environment variables and its --config JSON
// file, wherever they mean the same thing, so moving from Soketi is changing
// one command (docs/pusher.md, "Moving from Soketi"). --print-config prints
// the options it would start with (secrets masked) and what it ignores, and
// exits.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const USAGE = `usage: symphony-ws pusher [options]

  --config FILE     Soketi's JSON configuration ("appManager.array.apps", "port", ...)
  --port N          the port (default: SOKETI_PORT, then 6001)
  --host H          the address to bind (default: SOKETI_HOST, then 0.0.0.0)
  --print-config    print the options it would start with, and exit
  -h, --help        this text

The SOKETI_* environment variables are read as Soketi reads them
(SOKETI_DEFAULT_APP_ID, _KEY, _SECRET, SOKETI_ADAPTER_DRIVER=redis with
SOKETI_DB_REDIS_HOST/PORT, SOKETI_SSL_CERT/KEY, the limits...): docs/pusher.md.`;

function fail(message, code = 2) {
  process.stderr.write(`symphony-ws: ${message}\n`);
  process.exit(code);
}

/** argv (after "pusher") → { config, port, host, print }; exits with the usage on a bad one. */
function parseArgs(argv) {
  const out = { config: null, port: null, host: null, print: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, null];
    const value = () => {
      if (inline !== null) return inline;
      if (i + 1 >= argv.length) fail(`${flag} needs a value\n\n${USAGE}`);
      return argv[++i];
    };
    if (flag === '--config') out.config = value();
    else if (flag === '--port') out.port = value();
    else if (flag === '--host') out.host = value();
    else if (flag === '--print-config') out.print = true;
    else if (flag === '-h' || flag === '--help') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else fail(`unknown argument ${JSON.stringify(a)}\n\n${USAGE}`);
  }
  if (out.port !== null && !/^\d{1,5}$/.test(out.port)) fail(`--port ${out.port}: not a port number`);
  return out;
}

/** The options as printable JSON: secrets and key material masked. */
function printable(options) {
  return JSON.stringify(options, (k, v) => {
    if (k === 'secret' || k === 'secrets' || k === 'passphrase' || k === 'key' && Buffer.isBuffer(v)) return '(set)';
    if (Buffer.isBuffer(v) || (v && v.type === 'Buffer')) return `(${k}: ${v.length ?? v.data?.length} bytes)`;
    if (k === 'url' && typeof v === 'string') return v.replace(/\/\/[^@/]*@/, '//(credentials)@');
    return v;
  }, 2);
}

async function pusher(argv) {
  const args = parseArgs(argv);
  const { fromSoketi, pusherOptions } = require('../lib/pusher/config');
  let file = {};
  if (args.config !== null) {
    try {
      file = JSON.parse(fs.readFileSync(path.resolve(args.config), 'utf8'));
    } catch (e) {
      fail(`--config ${args.config}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
    }
  }
  let conf;
  try {
    conf = fromSoketi({ env: process.env, file });
    if (args.port !== null) conf.options.port = Number(args.port);
    if (args.host !== null) conf.options.host = args.host;
    pusherOptions(conf.options.pusher); // its errors before anything starts
  } catch (e) {
    fail(e.message);
  }
  for (const line of conf.ignored) process.stderr.write(`symphony-ws: ignored ${line}\n`);
  if (args.print) {
    process.stdout.write(`${printable({ options: conf.options, metrics: conf.metrics, debug: conf.debug })}\n`);
    return;
  }

  const { Server } = require('..');
  let server;
  try {
    server = new Server(conf.options);
  } catch (e) {
    fail(e.message);
  }
  server.on('error', (err) => process.stderr.write(`symphony-ws: ${err.code ?? 'error'}: ${err.message}\n`));
  const { port } = await server.listen();
  const apps = conf.options.pusher.apps.map((a) => a.key).join(', ');
  process.stdout.write(`symphony-ws pusher: listening on ${conf.options.tls ? 'wss' : 'ws'}://${conf.options.host}:${port}/app/{key} (apps: ${apps})${server.bus ? ', bus: Redis' : ''}\n`);

  let metricsServer = null;
  if (conf.metrics) {
    metricsServer = http.createServer((req, res) => {
      if (req.url !== '/metrics') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(server.metrics());
    });
    metricsServer.listen(conf.metrics.port, conf.metrics.host);
    metricsServer.on('listening', () => process.stdout.write(`symphony-ws pusher: metrics on http://${conf.metrics.host}:${metricsServer.address().port}/metrics\n`));
    metricsServer.on('error', (e) => fail(`metrics server: ${e.message}`, 1));
  }

  let stopping = false;
  const stop = async (signal) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`symphony-ws pusher: ${signal}: closing\n`);
    metricsServer?.close();
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

const [command, ...rest] = process.argv.slice(2);
if (command === 'pusher') {
  pusher(rest).catch((e) => fail(e.stack || e.message, 1));
} else if (command === '-h' || command === '--help' || command === undefined) {
  process.stdout.write(`usage: symphony-ws <command>\n\n  pusher    a standalone Pusher Channels server (symphony-ws pusher --help)\n`);
  if (command === undefined) process.exit(2);
} else {
  fail(`unknown command ${JSON.stringify(command)} (commands: pusher)`);
}
