'use strict';
// proxy-accept — what reading a PROXY protocol header costs an upgrade.
//
// With proxyProtocol, each connection's first bytes are peeked (MSG_PEEK)
// and the header's bytes taken off the socket before HTTP is read: two
// more system calls per connection, and getpeername at accept. This opens
// --conns connections (--inflight at a time) to one server per arm: no
// header (proxyProtocol off), a v1 line, a v2 header with an AWS TLV; each
// sends its header and upgrade request in one write, waits for the 101 and
// closes. Arms alternate over --rounds; the best and median upgrades/s per
// arm are printed. The client (this process, raw sockets) shares the
// machine: compare the arms, not the absolute numbers.
//
//   node bench/micro/proxy-accept.js [--conns 3000] [--inflight 64] [--rounds 5]
const net = require('node:net');
const { Server } = require('../..');

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
const CONNS = arg('conns', 3000), INFLIGHT = arg('inflight', 64), ROUNDS = arg('rounds', 5);

const REQUEST = Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
const V1 = Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 54321 443\r\n');
const V2 = (() => {
  const tlv = Buffer.concat([Buffer.from([0xea, 0x00, 0x0e, 0x01]), Buffer.from('vpce-0a1b2c3d')]);
  const h = Buffer.alloc(28);
  Buffer.from('0d0a0d0a000d0a515549540a', 'hex').copy(h);
  h[12] = 0x21;
  h[13] = 0x11;
  h.writeUInt16BE(12 + tlv.length, 14);
  Buffer.from([203, 0, 113, 7, 10, 0, 0, 1, 0xd4, 0x31, 0x01, 0xbb]).copy(h, 16);
  return Buffer.concat([h, tlv]);
})();

function one(port, first) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.setNoDelay(true);
    let got = '';
    s.on('connect', () => s.write(first));
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n')) {
        if (!got.startsWith('HTTP/1.1 101')) reject(new Error(got.split('\r\n')[0]));
        s.destroy();
        resolve();
      }
    });
    s.on('error', reject);
  });
}

async function arm(proxyProtocol, header) {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 2, proxyProtocol });
  const { port } = await server.listen();
  const first = header ? Buffer.concat([header, REQUEST]) : REQUEST;
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: INFLIGHT }, async () => {
    while (next < CONNS) {
      next++;
      await one(port, first);
    }
  }));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const s = server.stats();
  if (s.opened !== CONNS || s.proxyHeaders !== (header ? CONNS : 0)) throw new Error(`counts: ${JSON.stringify(s)}`);
  await server.close();
  return CONNS / secs;
}

(async () => {
  const arms = { 'no header': [false, null], 'v1 line': [true, V1], 'v2 + TLV': [true, V2] };
  const rates = Object.fromEntries(Object.keys(arms).map((k) => [k, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, [p, h]] of Object.entries(arms)) rates[name].push(await arm(p, h));
  }
  for (const [name, list] of Object.entries(rates)) {
    const sorted = [...list].sort((a, b) => a - b);
    console.log(`${name.padEnd(10)} upgrades/s: median ${sorted[sorted.length >> 1].toFixed(0)}, best ${sorted[sorted.length - 1].toFixed(0)} (${ROUNDS} rounds of ${CONNS})`);
  }
})().catch((e) => { console.error(e); process.exit(1); });
