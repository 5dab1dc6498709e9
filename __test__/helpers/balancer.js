'use strict';
// A TCP balancer for the tests: one loopback port in front of several
// backends (symphony nodes), each new connection piped to the current
// one. moveTo(i) makes backend i current and cuts every open connection,
// so clients reconnect, through the balancer, to the new backend: a
// client moving between nodes as it would behind a load balancer.

const net = require('node:net');

/**
 * Starts a balancer on 127.0.0.1 in front of ports (backend 0 current).
 * Resolves { port, moveTo(i), stall(), hold(on), cut(), connections(), close() }.
 */
async function startBalancer(ports) {
  let current = 0;
  let held = false;
  const open = new Set();
  const server = net.createServer((client) => {
    if (held) {
      client.destroy();
      return;
    }
    const upstream = net.connect({ host: '127.0.0.1', port: ports[current] });
    const pair = { client, upstream };
    open.add(pair);
    const done = () => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', done);
    upstream.on('error', done);
    client.on('close', done);
    upstream.on('close', done);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: server.address().port,
    /** Backend i takes new connections; open ones are cut (RST-free close of both sides). */
    moveTo(i) {
      if (!(i >= 0 && i < ports.length)) throw new RangeError(`no backend ${i}`);
      current = i;
      for (const { client, upstream } of open) {
        client.destroy();
        upstream.destroy();
      }
      open.clear();
    },
    /** Open connections stop forwarding what clients send (a request in flight that never arrives). */
    stall() {
      for (const { client, upstream } of open) client.unpipe(upstream);
    },
    /** While held, new connections are closed at once (and cut() closes the open ones): an outage. */
    hold(on) { held = on; },
    cut() {
      for (const { client, upstream } of open) {
        client.destroy();
        upstream.destroy();
      }
      open.clear();
    },
    connections: () => open.size,
    close() {
      for (const { client, upstream } of open) {
        client.destroy();
        upstream.destroy();
      }
      open.clear();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

module.exports = { startBalancer };
