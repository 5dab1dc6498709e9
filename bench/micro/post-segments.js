'use strict';
// What a stream's POST costs the server when its body arrives in small
// segments (docs/sse.md, "Messages from the client: POST"): the IO
// thread's CPU (/proc/self/task/<tid>/schedstat) per 1-byte segment of a
// body sent one byte per write (TCP_NODELAY, each write taken by the
// kernel before the next), with a browser-sized head (~500 bytes).
//
//   node bench/micro/post-segments.js [--bytes N] [--posts N] [--pad N]
//
// SY_PKG=<another checkout> measures that one (a before/after).
const fs = require('node:fs');
const net = require('node:net');
const { once } = require('node:events');
const { Server } = require(process.env.SY_PKG || '../..');
const { openStream, streamName } = require('../../__test__/helpers/sse');

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return Number(i > 0 ? process.argv[i + 1] : def);
};
const BYTES = arg('bytes', 2000);
const POSTS = arg('posts', 3);
const PAD = arg('pad', 0); // bytes of an extra header line (cookies, tokens): a longer head

function threadCpu() {
  const out = new Map();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      out.set(tid, Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {}
  }
  return out;
}
function ioThreadNs(a, b) {
  let best = 0;
  for (const [tid, v] of b) if (tid !== String(process.pid)) best = Math.max(best, v - (a.get(tid) ?? v));
  return best;
}

(async () => {
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, maxPayload: 1 << 20, onUpgrade: () => ({ topics: ['t'] }) });
  const { port } = await server.listen();
  const s = await openStream(port);
  const name = await streamName(s);
  let got = 0;
  server.on('message', () => { got++; });
  const head = [
    `POST /?sy.stream=${name} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Connection: keep-alive',
    'User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'Accept: */*', 'Accept-Encoding: gzip, deflate, br, zstd', 'Accept-Language: en-US,en;q=0.9',
    'Origin: http://127.0.0.1:3000', 'Referer: http://127.0.0.1:3000/', 'Content-Type: text/plain;charset=UTF-8',
    ...(PAD > 0 ? [`Cookie: ${'c'.repeat(PAD)}`] : []), `Content-Length: ${BYTES}`, '', '',
  ].join('\r\n');
  let ns = 0;
  for (let p = 0; p < POSTS; p++) {
    const sock = net.connect(port, '127.0.0.1');
    sock.setNoDelay(true);
    sock.resume(); // the answer is read (and dropped): its end, then 'close'
    await once(sock, 'connect');
    await new Promise((resolve) => sock.write(head, resolve));
    const c0 = threadCpu();
    for (let i = 0; i < BYTES; i++) await new Promise((resolve) => sock.write('x', resolve));
    await once(sock, 'close');
    ns += ioThreadNs(c0, threadCpu());
  }
  while (got < POSTS) await new Promise((r) => setImmediate(r));
  console.log(JSON.stringify({ headBytes: head.length, bodyBytes: BYTES, posts: POSTS, usPerSegment: +(ns / POSTS / BYTES / 1000).toFixed(2) }));
  s.close();
  await server.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
