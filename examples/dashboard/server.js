'use strict';
// A live dashboard that survives a reload. The server publishes a sample on
// the "metrics" topic every half second and keeps the topic's recent
// history; the page keeps its chart and the client library's positions in
// localStorage, so a reloaded page (or one that lost its connection) gets
// exactly what it missed: no gap, no duplicate.
//
//   node examples/dashboard/server.js     then open http://127.0.0.1:3001/ and reload it
//
// A client the history cannot serve (a first visit, a server restarted
// since, or away for longer than the history holds) gets a snapshot instead:
// the last samples, in one direct message.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { Server } = require('symphony-ws');

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 3001);
const interval = Number(process.env.INTERVAL_MS || 500);
const KEEP = 120; // samples on the chart (and in a snapshot)

const live = new Server({
  noServer: true,
  path: '/live',
  history: { size: 1000, ttl: 600 }, // 1,000 samples, none older than 10 minutes
  // Every page gets the metrics; req.since says where it was, and symphony
  // replays what it missed before anything newer.
  onUpgrade: () => ({ topics: ['metrics'] }),
});

// Resumed: nothing to do. Not resumed (or a first visit): the snapshot.
live.on('open', (id, { recovery }) => {
  if (recovery.length === 0 || recovery.some((r) => !r.recovered)) {
    live.send(id, JSON.stringify({ snapshot: samples }));
  }
});
live.on('error', (err) => console.error(`dashboard: ${err.message}`));

// Made-up metrics: a random walk of requests per second and latency.
const samples = [];
let seq = 0;
let requests = 500;
let latency = 40;
const metrics = live.topic('metrics');
setInterval(() => {
  requests = Math.max(0, Math.round(requests + (Math.random() - 0.5) * 60));
  latency = Math.max(1, Math.round(latency + (Math.random() - 0.5) * 8));
  const sample = { seq: ++seq, t: Date.now(), requests, latency };
  samples.push(sample);
  if (samples.length > KEEP) samples.shift();
  metrics.publish(JSON.stringify(sample));
}, interval);

const files = {
  '/': [path.join(__dirname, 'index.html'), 'text/html; charset=utf-8'],
  '/symphony-client.mjs': [path.join(path.dirname(require.resolve('symphony-ws/package.json')), 'client', 'symphony-client.mjs'), 'text/javascript'],
};
const web = http.createServer((req, res) => {
  const file = files[new URL(req.url, 'http://x').pathname];
  if (!file) return res.writeHead(404).end('not found\n');
  res.writeHead(200, { 'content-type': file[1] });
  fs.createReadStream(file[0]).pipe(res);
});
web.on('upgrade', (req, socket, head) => live.handleUpgrade(req, socket, head));
web.listen(port, host, () => console.log(`dashboard: open http://${host}:${web.address().port}/`));

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, async () => {
    web.close();
    await live.close();
    process.exit(0);
  });
}
