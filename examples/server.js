#!/usr/bin/env node
'use strict';
// The demo fan-out server (npm start): clients connect to ws://HOST:PORT/?topic=NAME,
// get every message published on that topic, and whatever they send is
// published to their topic. A "ticker" topic gets the time every second.
//
//   HOST=127.0.0.1 PORT=9001 THREADS=2 npm start
//   TLS_CERT=fullchain.pem TLS_KEY=privkey.pem npm start      (wss://; SIGHUP reloads them)

const fs = require('node:fs');
const { Server, allocator } = require('..');

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 9001);
const threads = Number(process.env.THREADS || 2);
const tlsFiles = process.env.TLS_CERT && process.env.TLS_KEY ? { cert: process.env.TLS_CERT, key: process.env.TLS_KEY } : null;
const readTls = () => ({ cert: fs.readFileSync(tlsFiles.cert), key: fs.readFileSync(tlsFiles.key) });

const server = new Server({
  host,
  port,
  threads,
  tls: tlsFiles ? readTls() : null,
  onUpgrade: (req) => {
    const topic = new URL(req.url, 'ws://x').searchParams.get('topic') || 'ticker';
    if (topic.length > 64) return { status: 400 };
    return { topics: [topic], data: { topic } };
  },
});

server.on('open', (id, info) => server.send(id, `welcome to ${info.data.topic}`));
server.on('message', (id, data, isBinary) => {
  server.publish(server.getUserData(id).topic, data, { binary: isBinary });
});

const ticker = setInterval(() => server.publish('ticker', new Date().toISOString()), 1000);
const report = setInterval(() => {
  const s = server.stats();
  const a = allocator.stats();
  console.log(`connections ${s.connections}  in ${s.messagesIn}  out ${s.messagesOut}  ` +
    `dropped ${s.dropped}  native allocated ${(a.allocated / 1024).toFixed(0)} KiB`);
}, 10000);

server.listen().then(({ port: p }) => {
  console.log(`symphony ${allocator.name} listening on ${tlsFiles ? 'wss' : 'ws'}://${host}:${p}/?topic=ticker (${threads} IO threads)`);
});

// A renewed certificate: kill -HUP <pid>. New handshakes get it; live
// connections stay; a bad file keeps the old certificate.
if (tlsFiles) {
  process.on('SIGHUP', () => {
    try {
      server.setTls(readTls());
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
    await server.close();
    process.exit(0);
  });
}
