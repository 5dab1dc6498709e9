'use strict';
// One node of a bus, run by node.exe under Wine (scripts/windows-gate.js):
// every client is subscribed to 'to-windows'; a client's text "publish N"
// makes this node publish N numbered messages to 'to-linux'; "exit" closes
// it. stdout: {"port":P} once listening, {"bus":"up"} when the bus is up.
// BUS_URL: the Redis (on Linux, loopback) both nodes share.
const { Server } = require('../..');

const server = new Server({
  host: '127.0.0.1', port: 0, threads: 2, bus: { url: process.env.BUS_URL },
  onUpgrade: () => ({ topics: ['to-windows'] }),
});
server.bus.on('up', () => console.log(JSON.stringify({ bus: 'up' })));
server.on('message', (id, data) => {
  const text = data.toString();
  const m = /^publish (\d+)$/.exec(text);
  if (m) {
    for (let i = 0; i < Number(m[1]); i++) server.publish('to-linux', `w${i}`);
  } else if (text === 'exit') {
    server.close().then(() => process.exit(0));
  }
});
server.listen().then(({ port }) => console.log(JSON.stringify({ port })));
