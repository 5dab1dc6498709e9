'use strict';
// What a stream's POST costs its client in time (docs/sse.md, "Several
// nodes"): the round trip of POSTs sent one after another (each after the
// last one's answer) to a stream of node a, on loopback, in four shapes:
//
//   new connection   no bus, a new TCP connection per POST (agent: false)
//   kept             no bus, one kept connection (HTTP/1.1 keep-alive)
//   kept, bus        node a has a bus: each POST waits for the fence on
//                    the bus' control channel (a PING to Redis and back)
//   kept, forwarded  the POSTs go to node b, which forwards them over Redis
//
//   node bench/micro/post-latency.js [--posts N]
//
// Prints the median and p99 in µs of each. A real redis-server on a free
// loopback port (Debian's, as the tests start it); everything stopped at
// the end.
const http = require('node:http');
const { Server } = require('../..');
const { openStream, streamName } = require('../../__test__/helpers/sse');
const { startRedis, numSub } = require('../../__test__/helpers/redis');

const i = process.argv.indexOf('--posts');
const POSTS = i > 0 ? Number(process.argv[i + 1]) : 2000;
const CTL = Buffer.concat([Buffer.from('symphony:'), Buffer.from([0xff]), Buffer.from('nodes')]);

function post(agent, port, name, body) {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, method: 'POST', agent, path: `/?sy.stream=${name}` }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 202 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
    });
    r.once('error', reject);
    r.end(body);
  });
}

async function measure(what, agent, port, name, got) {
  const times = [];
  const before = got.n;
  for (let k = 0; k < POSTS + 100; k++) {
    const t0 = process.hrtime.bigint();
    await post(agent, port, name, `m${k}`);
    if (k >= 100) times.push(Number(process.hrtime.bigint() - t0) / 1000); // the first 100: warm-up
  }
  // A forwarded POST is answered once Redis took it: its delivery follows.
  for (let w = 0; w < 500 && got.n - before < POSTS + 100; w++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (got.n - before !== POSTS + 100) throw new Error(`${what}: ${got.n - before} of ${POSTS + 100} delivered`);
  times.sort((x, y) => x - y);
  const at = (p) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))];
  console.log(`${what.padEnd(18)} median ${at(50).toFixed(0).padStart(5)} µs   p99 ${at(99).toFixed(0).padStart(5)} µs   (${POSTS} POSTs)`);
}

async function main() {
  const redis = await startRedis();
  const servers = [];
  try {
    const start = async (options) => {
      const s = new Server({ host: '127.0.0.1', port: 0, threads: 1, ...options });
      servers.push(s);
      const { port } = await s.listen();
      if (options.bus && s.bus.state !== 'up') await new Promise((resolve) => s.bus.once('up', resolve));
      return { s, port };
    };
    const onUpgrade = () => ({ topics: ['t'] });
    const got = { n: 0 };
    const alone = await start({ onUpgrade });
    alone.s.on('message', () => got.n++);
    let stream = await openStream(alone.port);
    let name = await streamName(stream);
    await measure('new connection', false, alone.port, name, got);
    const agent = () => new http.Agent({ keepAlive: true, maxSockets: 1 });
    await measure('kept', agent(), alone.port, name, got);
    stream.close();
    const a = await start({ onUpgrade, bus: { url: redis.url } });
    const b = await start({ bus: { url: redis.url } });
    a.s.on('message', () => got.n++);
    while ((await numSub(redis, CTL)) !== 2) await new Promise((resolve) => setTimeout(resolve, 10));
    stream = await openStream(a.port);
    name = await streamName(stream);
    await measure('kept, bus', agent(), a.port, name, got);
    await measure('kept, forwarded', agent(), b.port, name, got);
    stream.close();
  } finally {
    for (const s of servers) await s.close();
    await redis.stop();
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
