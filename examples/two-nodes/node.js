'use strict';
// One symphony node of examples/two-nodes (server.js starts two of them,
// Redis and HAProxy). It serves:
//
// - WebSockets on WS_PORT, symphony's own listener, behind the load
//   balancer: every connection begins with a PROXY protocol header (v2)
//   that names the client, accepted from loopback only;
// - the page on WEB_PORT (node:http), also behind the balancer.
//
// The nodes share the "wall" topic through Redis (the bus); Redis numbers
// its messages, so a client that moves to the other node resumes there with
// nothing missed.
//
//   NODE=a WS_PORT=9101 WEB_PORT=9111 REDIS_URL=redis://127.0.0.1:6390 node examples/two-nodes/node.js

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { Server } = require('symphony-ws');

const node = process.env.NODE || 'a';
const host = process.env.HOST || '127.0.0.1';

const server = new Server({
  host,
  port: Number(process.env.WS_PORT || 9101),
  bus: { url: process.env.REDIS_URL || 'redis://127.0.0.1:6390' },
  history: { size: 1000, ttl: 600 },
  proxyProtocol: true,              // the balancer says who the client is...
  proxyProtocolFrom: ['127.0.0.1'], // ...and only the balancer may say it
  onUpgrade: (req) => ({
    topics: ['wall'],
    data: {
      node,
      client: `${req.remoteAddress}:${req.remotePort}`, // from the PROXY header
      via: `${req.socketAddress}:${req.socketPort}`,    // the balancer's side of the TCP connection
    },
  }),
  onPublish: (id, topic, data) => topic === 'wall' && typeof data === 'string' && data.length <= 500,
  // How many are on the wall, on every node (asked over Redis).
  onRequest: async () => ({ node, subscribers: await server.bus.subscribers('wall') }),
});
server.on('open', (id, { data }) => server.send(id, JSON.stringify(data)));
server.on('error', (err) => console.error(`node ${node}: ${err.message}`));
server.bus.on('down', (err) => console.error(`node ${node}: bus down (${err.message}), reconnecting`));

const clientFile = path.join(path.dirname(require.resolve('symphony-ws/package.json')), 'client', 'symphony-client.mjs');
const web = http.createServer((req, res) => {
  const { pathname } = new URL(req.url, 'http://x');
  if (pathname === '/') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    fs.createReadStream(path.join(__dirname, 'index.html')).pipe(res);
  } else if (pathname === '/symphony-client.mjs') {
    res.writeHead(200, { 'content-type': 'text/javascript' });
    fs.createReadStream(clientFile).pipe(res);
  } else {
    res.writeHead(404).end('not found\n');
  }
});

(async () => {
  const { port } = await server.listen();
  await new Promise((resolve) => web.listen(Number(process.env.WEB_PORT || 9111), host, resolve));
  console.log(`node ${node}: WebSockets on ${host}:${port} (PROXY protocol), page on ${host}:${web.address().port}`);
})().catch((err) => {
  console.error(`node ${node}: cannot start: ${err.message}`);
  process.exit(1);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, async () => {
    web.close();
    await server.close(); // its clients get 1001 and reconnect, through the balancer, to the other node
    process.exit(0);
  });
}
