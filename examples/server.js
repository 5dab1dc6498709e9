#!/usr/bin/env node
'use strict';
// The showcase (npm start): one node:http server on one port serves a page at
// /, its numbers at /stats (JSON) and /metrics (Prometheus), and hands every
// WebSocket upgrade to symphony (noServer + handleUpgrade). Clients connect
// to ws://HOST:PORT/?topic=NAME, get every message published on that topic,
// and whatever they send is published to their topic. A "ticker" topic gets
// the time every second.
//
//   HOST=127.0.0.1 PORT=9001 THREADS=2 npm start              then open http://127.0.0.1:9001/
//   TLS_CERT=fullchain.pem TLS_KEY=privkey.pem npm start      (SIGHUP reloads them)
//   REDIS_URL=redis://127.0.0.1:6379 PORT=9001 npm start      one node of a bus: start a
//   REDIS_URL=redis://127.0.0.1:6379 PORT=9002 npm start      second one, and what a client of
//                                                             one sends reaches the other's
//
// With REDIS_URL the server is one node of a bus (README, "Scaling out"):
// what clients send is published to every node; the ticker stays local (each
// node has its own clock), and the welcome names the node's port.
//
// With TLS_CERT/TLS_KEY there are two ports: a TLS socket cannot be handed
// over (its TLS state is in Node's OpenSSL), so symphony serves wss:// on its
// own TLS listener on PORT, as before, and Node's https serves the page on
// PAGE_PORT (default PORT + 1, or a free port when PORT is 0).

const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const path = require('node:path');
const { Server, allocator } = require('..');

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 9001);
const threads = Number(process.env.THREADS || 2);
const redisUrl = process.env.REDIS_URL || null;
const tlsFiles = process.env.TLS_CERT && process.env.TLS_KEY ? { cert: process.env.TLS_CERT, key: process.env.TLS_KEY } : null;
const webPort = tlsFiles ? Number(process.env.PAGE_PORT || (port === 0 ? 0 : port + 1)) : port;
const readTls = () => ({ cert: fs.readFileSync(tlsFiles.cert), key: fs.readFileSync(tlsFiles.key) });
const HISTORY = 60; // seconds of samples /stats keeps (the page's charts)

const sy = new Server({
  host,
  port,
  threads,
  noServer: !tlsFiles,
  tls: tlsFiles ? readTls() : null,
  bus: redisUrl ? { url: redisUrl } : null,
  // The last 100 messages of each topic (5 minutes at most): a client of
  // symphony-ws/client that reconnects gets what it missed (README, "Nothing missed").
  history: { size: 100, ttl: 300 },
  onUpgrade: (req) => {
    const topic = new URL(req.url, 'ws://x').searchParams.get('topic') || 'ticker';
    if (topic.length > 64) return { status: 400 };
    return { topics: [topic], data: { topic } };
  },
});

sy.on('open', (id, info) => sy.send(id, `welcome to ${info.data.topic}${redisUrl ? ` on the node at port ${web.address().port}` : ''}`));
if (sy.bus) {
  sy.bus.on('up', () => console.log(`bus up (${redisUrl})`));
  sy.bus.on('down', (err) => console.log(`bus down: ${err.message}; local delivery goes on, reconnecting`));
}
sy.on('message', (id, data, isBinary) => {
  sy.publish(sy.getUserData(id).topic, data, { binary: isBinary });
});
sy.on('error', (err) => console.error(`symphony: ${err.message}`));

// One sample a second: symphony's counters and its allocator's bytes.
const samples = [];
let previous = null;

function sample() {
  const s = sy.stats();
  const a = allocator.stats();
  const t = Date.now();
  const perSecond = (key) => (previous ? Math.max(0, Math.round((s[key] - previous[key]) * 1000 / (t - previous.t))) : 0);
  samples.push({
    t,
    connections: s.connections,
    inPerSecond: perSecond('messagesIn'),
    outPerSecond: perSecond('messagesOut'),
    dropped: s.dropped,
    topics: s.topics,
    allocated: a.allocated,
    active: a.active,
    resident: a.resident,
    reclaims: s.reclaims,
    reclaimFreedBytes: s.reclaimFreedBytes,
  });
  if (samples.length > HISTORY) samples.shift();
  previous = { t, messagesIn: s.messagesIn, messagesOut: s.messagesOut };
}

function everySecond() {
  sy.publish('ticker', new Date().toISOString(), { local: true });
  sample();
}

// The page opens its WebSockets on its own host and port, or on the wss://
// port written into it.
const template = fs.readFileSync(path.join(__dirname, 'showcase.html'), 'utf8');
let page = template;

function reply(req, res, status, type, body) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function onRequest(req, res) {
  const { pathname } = new URL(req.url, 'http://x');
  if (req.method !== 'GET' && req.method !== 'HEAD') return reply(req, res, 405, 'text/plain', 'GET only\n');
  if (pathname === '/') return reply(req, res, 200, 'text/html; charset=utf-8', page);
  if (pathname === '/stats') {
    const bus = sy.bus ? { state: sy.bus.state, ...sy.stats().bus } : null;
    return reply(req, res, 200, 'application/json', JSON.stringify({ allocator: allocator.name, threads, samples, bus }));
  }
  if (pathname === '/metrics') return reply(req, res, 200, 'text/plain; version=0.0.4', sy.metrics());
  return reply(req, res, 404, 'text/plain', 'not found\n');
}

const web = tlsFiles ? https.createServer(readTls(), onRequest) : http.createServer(onRequest);
if (!tlsFiles) web.on('upgrade', (req, socket, head) => sy.handleUpgrade(req, socket, head));

async function start() {
  if (tlsFiles) {
    const { port: p } = await sy.listen();
    page = template.replace('data-ws-port=""', `data-ws-port="${p}"`);
  }
  await new Promise((resolve, reject) => {
    web.once('error', reject);
    web.listen(webPort, host, resolve);
  });
  const pagePort = web.address().port;
  const ws = tlsFiles ? `wss://${host}:${sy.address().port}` : `ws://${host}:${pagePort}`;
  sample();
  console.log(`symphony ${allocator.name} listening on ${ws}/?topic=ticker (${threads} IO threads); ` +
    `page on ${tlsFiles ? 'https' : 'http'}://${host}:${pagePort}/${redisUrl ? `; a node of the bus at ${redisUrl}` : ''}`);
}

const ticker = setInterval(everySecond, 1000);
const report = setInterval(() => {
  const s = sy.stats();
  const a = allocator.stats();
  console.log(`connections ${s.connections}  in ${s.messagesIn}  out ${s.messagesOut}  ` +
    `dropped ${s.dropped}  native allocated ${(a.allocated / 1024).toFixed(0)} KiB`);
}, 10000);

start().catch((err) => {
  console.error(`cannot start: ${err.message}`);
  process.exit(1);
});

// A renewed certificate: kill -HUP <pid>. New handshakes get it (symphony's
// and the page's); live connections stay; a bad file keeps the old one.
if (tlsFiles) {
  process.on('SIGHUP', () => {
    try {
      const files = readTls();
      sy.setTls(files);
      web.setSecureContext(files);
      console.log('certificates reloaded');
    } catch (err) {
      console.error(`reload failed, still serving the old certificate: ${err.message}`);
    }
  });
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, async () => {
    clearInterval(ticker);
    clearInterval(report);
    web.close();
    web.closeAllConnections();
    await sy.close(); // every client gets 1001
    process.exit(0);
  });
}
