'use strict';
// The client's real address behind proxies: the PROXY protocol (v1 and v2)
// on the native listener, over raw sockets and real `ws` clients whose
// connection starts with a header (as HAProxy's send-proxy, nginx's
// proxy_protocol or an AWS NLB send it), plain and TLS; every bad,
// truncated, lying or missing header closes its socket at once, moves its
// counter and leaves a bystander getting its publishes; and trustProxy's
// Forwarded / X-Forwarded-For, on the listener and through handleUpgrade.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const tls = require('node:tls');
const http = require('node:http');
const WebSocket = require('ws');
const { Server } = require('../..');
const { startServer, nextMessage, closeAll } = require('../helpers/server');
const { connect, request, frame, waitFor, statusOf } = require('../helpers/raw');
const { pki } = require('../helpers/pki');

test.afterEach(closeAll);

// ---- building headers ---------------------------------------------------------

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function v1(src, dst, sport, dport, proto = 'TCP4') {
  return Buffer.from(`PROXY ${proto} ${src} ${dst} ${sport} ${dport}\r\n`, 'latin1');
}

/** IPv4 "a.b.c.d" or IPv6 text → bytes. */
function ipBytes(text) {
  if (net.isIPv4(text)) return Buffer.from(text.split('.').map(Number));
  const [head, tail = ''] = text.split('::');
  const groups = (s) => (s === '' ? [] : s.split(':'));
  const h = groups(head), t = groups(text.includes('::') ? tail : '');
  const all = text.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  const b = Buffer.alloc(16);
  all.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2));
  return b;
}

function tlv(type, value) {
  const v = Buffer.from(value);
  const h = Buffer.alloc(3);
  h[0] = type;
  h.writeUInt16BE(v.length, 1);
  return Buffer.concat([h, v]);
}

/** A v2 header: verCmd 0x21 (PROXY) or 0x20 (LOCAL), fam 0x11 (TCP4), 0x21 (TCP6)... */
function v2(verCmd, fam, body, length = body.length) {
  const h = Buffer.alloc(16);
  SIG.copy(h);
  h[12] = verCmd;
  h[13] = fam;
  h.writeUInt16BE(length, 14);
  return Buffer.concat([h, body]);
}

function addrs(src, dst, sport, dport) {
  const p = Buffer.alloc(4);
  p.writeUInt16BE(sport, 0);
  p.writeUInt16BE(dport, 2);
  return Buffer.concat([ipBytes(src), ipBytes(dst), p]);
}

// ---- clients --------------------------------------------------------------------

/** A `ws` client whose TCP connection starts with `header` (a load balancer's). */
function wsVia(url, header, opts = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      ...opts,
      createConnection: (o) => {
        const raw = net.connect(o.port, o.host);
        if (header) raw.write(header);
        if (!url.startsWith('wss:')) return raw;
        return tls.connect({ socket: raw, ca: opts.ca, host: o.host });
      },
    });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** A server that records every onUpgrade request and subscribes every client to 'feed'. */
async function proxyServer(options = {}) {
  const reqs = [];
  const r = await startServer({
    handshakeTimeout: 1,
    onUpgrade: (req) => { reqs.push(req); return { topics: ['feed'] }; },
    ...options,
  });
  return { ...r, reqs };
}

/** The bystander, connected before the bad input, still gets what is published. */
async function stillServed(server, ws, text) {
  const got = nextMessage(ws);
  server.publish('feed', text);
  assert.equal((await got).data.toString(), text);
}

// ---- good headers -----------------------------------------------------------------

test('v1 TCP4, its request and a first frame in one write: onUpgrade sees the client, the frame arrives', async () => {
  const { server, port, reqs } = await proxyServer({ proxyProtocol: true });
  const msgs = [];
  server.on('message', (id, data) => msgs.push(data.toString()));
  const st = await connect(port);
  st.sock.write(Buffer.concat([v1('203.0.113.7', '10.0.0.1', 54321, 443), Buffer.from(request('/')),
    frame(1, 'right behind the header')]));
  await waitFor(() => msgs.length === 1, 5000, 'the frame after the request');
  assert.equal(msgs[0], 'right behind the header');
  await waitFor(() => st.data.indexOf('\r\n\r\n') >= 0, 5000, 'the 101');
  assert.equal(statusOf(st.data.toString('latin1')), 101);
  assert.equal(reqs.length, 1);
  assert.equal(reqs[0].remoteAddress, '203.0.113.7');
  assert.equal(reqs[0].remotePort, 54321);
  assert.equal(reqs[0].socketAddress, '127.0.0.1');
  assert.equal(reqs[0].socketPort, st.sock.localPort);
  const s = server.stats();
  assert.equal(s.proxyHeaders, 1);
  assert.equal(s.proxyRejects, 0);
  assert.match(server.metrics(), /^symphony_proxy_headers_total\{thread="\d+"\} 1$/m);
  st.sock.destroy();
});

test('v1 TCP6 and UNKNOWN, v2 IPv4, IPv6 with TLVs, LOCAL and UNSPEC, with real ws clients', async () => {
  const { server, url, reqs } = await proxyServer({ proxyProtocol: true });
  const cases = [
    [v1('2001:db8::17', '2001:db8::1', 4711, 443, 'TCP6'), '2001:db8::17', 4711],
    [Buffer.from('PROXY UNKNOWN\r\n'), '127.0.0.1', null],
    [v2(0x21, 0x11, addrs('192.0.2.60', '10.1.2.3', 40000, 443)), '192.0.2.60', 40000],
    // AWS NLB's VPC endpoint TLV (0xEA), ALPN, an empty NOOP: skipped.
    [v2(0x21, 0x21, Buffer.concat([addrs('2001:db8:cafe::9', '2001:db8::2', 65535, 80), tlv(0xea, '\x01vpce-0a1b2c3d'),
      tlv(0x01, 'http/1.1'), tlv(0x04, '')])), '2001:db8:cafe::9', 65535],
    [v2(0x20, 0x00, Buffer.alloc(0)), '127.0.0.1', null], // LOCAL: the proxy's own health check
    [v2(0x21, 0x00, Buffer.alloc(0)), '127.0.0.1', null], // UNSPEC
  ];
  const clients = [];
  for (const [header, address, port] of cases) {
    const ws = await wsVia(url, header);
    clients.push(ws);
    const req = reqs[reqs.length - 1];
    assert.equal(req.remoteAddress, address, header.toString('latin1'));
    assert.equal(req.socketAddress, '127.0.0.1');
    assert.equal(req.remotePort, port ?? req.socketPort);
  }
  await waitFor(() => server.subscribers('feed') === cases.length, 5000, 'every client subscribed');
  const got = clients.map(nextMessage);
  assert.equal(server.publish('feed', 'to all'), cases.length);
  for (const m of await Promise.all(got)) assert.equal(m.data.toString(), 'to all');
  assert.equal(server.stats().proxyHeaders, cases.length);
  for (const ws of clients) ws.close();
});

test('a header split across many writes (one byte each) is read whole, and nothing after it is lost', async () => {
  const { server, port, reqs } = await proxyServer({ proxyProtocol: true });
  const bytes = Buffer.concat([
    v2(0x21, 0x11, Buffer.concat([addrs('198.51.100.23', '10.0.0.1', 1234, 443), tlv(0xea, '\x01vpce-x')])),
    Buffer.from(request('/')),
  ]);
  const st = await connect(port);
  st.sock.setNoDelay(true);
  for (const b of bytes) await new Promise((resolve) => st.sock.write(Buffer.from([b]), resolve));
  await waitFor(() => st.data.indexOf('\r\n\r\n') >= 0, 5000, 'the 101');
  assert.equal(statusOf(st.data.toString('latin1')), 101);
  assert.equal(reqs[0].remoteAddress, '198.51.100.23');
  assert.equal(reqs[0].remotePort, 1234);
  const v1st = await connect(port);
  v1st.sock.setNoDelay(true);
  for (const b of Buffer.concat([v1('192.0.2.1', '192.0.2.2', 5, 6), Buffer.from(request('/'))])) {
    await new Promise((resolve) => v1st.sock.write(Buffer.from([b]), resolve));
  }
  await waitFor(() => v1st.data.indexOf('\r\n\r\n') >= 0, 5000, 'the 101');
  assert.equal(reqs[1].remoteAddress, '192.0.2.1');
  assert.equal(server.stats().proxyHeaders, 2);
  st.sock.destroy();
  v1st.sock.destroy();
});

// ---- bad headers ---------------------------------------------------------------------

const BAD = [
  ['a missing header (plain HTTP) where one is required', Buffer.from(request('/'))],
  ['a TLS ClientHello where a header is required', Buffer.from('160301020001', 'hex')],
  ['an over-long v1 line', Buffer.from(`PROXY UNKNOWN ${'x'.repeat(200)}\r\n`)],
  ['a v1 address that is not one', v1('999.1.1.1', '10.0.0.1', 1, 2)],
  ['a v1 family that lies (TCP4 with IPv6)', v1('2001:db8::1', '10.0.0.1', 1, 2)],
  ['a v1 port over 65535', v1('192.0.2.1', '10.0.0.1', 65536, 2)],
  ['a v1 line ending in a bare LF', Buffer.from('PROXY TCP4 192.0.2.1 10.0.0.1 1 2\nGET / HTTP/1.1\r\n')],
  ['a v2 length shorter than its addresses', v2(0x21, 0x11, Buffer.alloc(5))],
  ['a v2 TLV longer than the header', v2(0x21, 0x11, Buffer.concat([addrs('192.0.2.1', '10.0.0.1', 1, 2),
    Buffer.from([0x01, 0x00, 0x40, 0x68])]))],
  ['a v2 length over 4 KiB', v2(0x21, 0x11, Buffer.alloc(12), 5000)],
  ['a v2 version 1', v2(0x11, 0x11, addrs('192.0.2.1', '10.0.0.1', 1, 2))],
  ['a v2 UDP header', v2(0x21, 0x12, addrs('192.0.2.1', '10.0.0.1', 1, 2))],
];

test('bad headers: each socket closed at once, without an answer, counted; a bystander keeps its publishes', async () => {
  const { server, port, url } = await proxyServer({ proxyProtocol: true });
  const bystander = await wsVia(url, v1('192.0.2.200', '10.0.0.1', 999, 443));
  await waitFor(() => server.subscribers('feed') === 1, 5000, 'the bystander subscribed');
  let n = 0;
  for (const [name, bytes] of BAD) {
    const st = await connect(port);
    st.sock.write(Buffer.concat([bytes, Buffer.from(request('/'))]));
    await waitFor(() => st.ended, 5000, `${name}: the server to close`);
    assert.equal(st.data.length, 0, `${name}: nothing answered`);
    n++;
    await waitFor(() => server.stats().proxyRejects === n, 5000, `${name}: counted`);
    await stillServed(server, bystander, `after ${name}`);
  }
  const s = server.stats();
  assert.equal(s.proxyHeaders, 1); // the bystander's
  assert.equal(s.proxyUntrusted, 0);
  assert.equal(s.handshakeRejects, 0);
  bystander.close();
});

test('truncated headers: a peer that stops is closed at handshakeTimeout, one that ends is closed at once', async () => {
  const { server, port, url } = await proxyServer({ proxyProtocol: true, handshakeTimeout: 1 });
  const bystander = await wsVia(url, v1('192.0.2.200', '10.0.0.1', 999, 443));
  const stalled = [Buffer.from('PROXY TCP4 192.0.2.1 10.0.0.1'), v2(0x21, 0x11, Buffer.alloc(4), 12),
    Buffer.from('\r\n\r\n\0\r\nQU')];
  const socks = [];
  for (const b of stalled) {
    const st = await connect(port);
    st.sock.write(b);
    socks.push(st);
  }
  // What makes this true is the deadline (1 s, checked by the once-a-second sweep).
  await waitFor(() => socks.every((st) => st.ended), 5000, 'the deadline to close them');
  await waitFor(() => server.stats().proxyRejects === stalled.length, 5000, 'counted');
  assert.ok(server.stats().timeouts >= stalled.length);
  const cut = await connect(port);
  cut.sock.end(Buffer.from('PROXY TCP6 2001:db8::1'));
  await waitFor(() => cut.ended, 5000, 'the cut one closed');
  await waitFor(() => server.stats().proxyRejects === stalled.length + 1, 5000, 'counted');
  await stillServed(server, bystander, 'after the truncated ones');
  bystander.close();
});

test('a header from a source not in proxyProtocolFrom is refused and counted; a listed one is accepted', async () => {
  const { server, port, url } = await proxyServer({ proxyProtocol: true, proxyProtocolFrom: ['10.0.0.0/8', '2001:db8::/32'] });
  const st = await connect(port);
  st.sock.write(Buffer.concat([v1('192.0.2.1', '10.0.0.1', 1, 2), Buffer.from(request('/'))]));
  await waitFor(() => st.ended, 5000, 'the server to close');
  assert.equal(st.data.length, 0);
  await waitFor(() => server.stats().proxyUntrusted === 1, 5000, 'counted');
  assert.equal(server.stats().proxyRejects, 0);
  assert.equal(server.stats().proxyHeaders, 0);
  await assert.rejects(wsVia(url, v2(0x20, 0x00, Buffer.alloc(0)))); // LOCAL from an untrusted source too
  const { reqs, url: url2 } = await proxyServer({ proxyProtocol: true, proxyProtocolFrom: ['127.0.0.0/8'] });
  const ws = await wsVia(url2, v1('192.0.2.1', '10.0.0.1', 7, 8));
  assert.equal(reqs[0].remoteAddress, '192.0.2.1');
  ws.close();
});

test("proxyProtocol: 'optional': with a header the client, without one the socket; no false rejects", async () => {
  const { server, port, url, reqs } = await proxyServer({ proxyProtocol: 'optional' });
  const a = await wsVia(url, v1('192.0.2.50', '10.0.0.1', 4242, 443));
  assert.equal(reqs[0].remoteAddress, '192.0.2.50');
  const b = await wsVia(url, null);
  assert.equal(reqs[1].remoteAddress, '127.0.0.1');
  assert.equal(reqs[1].remotePort, reqs[1].socketPort);
  // Leading empty lines (allowed before an HTTP request) begin like the v2
  // signature: taken as a possible header, then handed to the HTTP parser.
  const st = await connect(port);
  await new Promise((resolve) => st.sock.write('\r\n\r\n', resolve));
  st.sock.write(request('/'));
  await waitFor(() => st.data.indexOf('\r\n\r\n') >= 0, 5000, 'the 101');
  assert.equal(statusOf(st.data.toString('latin1')), 101);
  // Not HTTP and not a header: the HTTP path answers it, as without the option.
  const bad = await connect(port);
  bad.sock.write('HELLO\x00 WORLD\r\n\r\n');
  await waitFor(() => bad.ended, 5000, 'the 400 and close');
  assert.equal(statusOf(bad.data.toString('latin1')), 400);
  // A header that is bad is still bad.
  const lie = await connect(port);
  lie.sock.write(v2(0x21, 0x11, Buffer.alloc(3)));
  await waitFor(() => lie.ended, 5000, 'closed');
  await waitFor(() => server.stats().proxyRejects === 1, 5000, 'counted');
  const s = server.stats();
  assert.equal(s.proxyHeaders, 1);
  assert.equal(s.handshakeRejects, 1);
  await stillServed(server, a, 'a');
  a.close();
  b.close();
  st.sock.destroy();
});

test('TLS: the PROXY header before the ClientHello (required and optional), and a missing one refused', async () => {
  const p = pki();
  const { server, url, port, reqs } = await proxyServer({ proxyProtocol: true, tls: { cert: p.a.cert, key: p.a.key } });
  const wss = url.replace('ws:', 'wss:');
  const ws = await wsVia(wss, v2(0x21, 0x21, addrs('2001:db8::beef', '2001:db8::1', 50000, 443)), { ca: p.ca });
  assert.equal(reqs[0].remoteAddress, '2001:db8::beef');
  assert.equal(reqs[0].remotePort, 50000);
  await waitFor(() => server.subscribers('feed') === 1, 5000, 'subscribed');
  await stillServed(server, ws, 'over TLS');
  await assert.rejects(wsVia(wss, null, { ca: p.ca }));
  await waitFor(() => server.stats().proxyRejects === 1, 5000, 'the missing header counted');
  assert.equal(server.stats().tlsHandshakes, 1);
  const st = await connect(port);
  st.sock.write(Buffer.from('PROXY TCP4 1.2.3.4'));
  st.sock.end();
  await waitFor(() => st.ended, 5000, 'closed');
  await stillServed(server, ws, 'after the bad ones');
  ws.close();
  const opt = await proxyServer({ proxyProtocol: 'optional', tls: { cert: p.a.cert, key: p.a.key } });
  const ows = opt.url.replace('ws:', 'wss:');
  const x = await wsVia(ows, null, { ca: p.ca });
  const y = await wsVia(ows, v1('192.0.2.77', '10.0.0.1', 1, 443), { ca: p.ca });
  assert.equal(opt.reqs[0].remoteAddress, '127.0.0.1');
  assert.equal(opt.reqs[1].remoteAddress, '192.0.2.77');
  x.close();
  y.close();
});

// ---- trustProxy --------------------------------------------------------------------------

function xff(url, headers) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

test('trustProxy: X-Forwarded-For and Forwarded from trusted peers, ignored from others', async () => {
  const XFF = { 'X-Forwarded-For': '198.51.100.1, 203.0.113.9' };
  const FWD = { Forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"', ...XFF };
  const cases = [
    // [trustProxy, headers, address, port]
    ['loopback', XFF, '203.0.113.9', 0], // the rightmost untrusted hop
    [['127.0.0.1', '203.0.113.0/24'], XFF, '198.51.100.1', 0],
    [true, XFF, '198.51.100.1', 0],
    [1, XFF, '203.0.113.9', 0], // one hop: the socket's peer
    [2, XFF, '198.51.100.1', 0],
    ['loopback', FWD, '2001:db8:cafe::17', 4711], // Forwarded first
    [true, FWD, '192.0.2.60', 0],
    ['loopback', { Forwarded: 'for=unknown', ...XFF }, '127.0.0.1', null], // not an IP: the walk ends
    ['loopback', { 'X-Forwarded-For': '192.0.2.1:8080' }, '192.0.2.1', 8080],
    [['10.0.0.0/8'], XFF, '127.0.0.1', null], // the peer is not trusted: headers ignored
    [false, FWD, '127.0.0.1', null],
  ];
  for (const [trustProxy, headers, address, port] of cases) {
    const { url, reqs } = await proxyServer({ trustProxy });
    const ws = await xff(url, headers);
    const what = `${JSON.stringify(trustProxy)} ${JSON.stringify(headers)}`;
    assert.equal(reqs[0].remoteAddress, address, what);
    assert.equal(reqs[0].remotePort, port ?? reqs[0].socketPort, what);
    assert.equal(reqs[0].socketAddress, '127.0.0.1');
    ws.close();
  }
});

test('trustProxy after a PROXY header: the header\'s source is the peer that must be trusted', async () => {
  const headers = { 'X-Forwarded-For': '198.51.100.1' };
  const a = await proxyServer({ proxyProtocol: true, trustProxy: ['192.0.2.0/24'] });
  const ws1 = await wsVia(a.url, v1('192.0.2.9', '10.0.0.1', 1, 443), { headers });
  assert.equal(a.reqs[0].remoteAddress, '198.51.100.1');
  const ws2 = await wsVia(a.url, v1('203.0.113.5', '10.0.0.1', 2, 443), { headers });
  assert.equal(a.reqs[1].remoteAddress, '203.0.113.5');
  ws1.close();
  ws2.close();
});

test('trustProxy through handleUpgrade (one port with node:http behind an HTTP proxy)', async () => {
  const sym = new Server({ noServer: true, trustProxy: 'loopback', onUpgrade: (req) => { seen.push(req); return true; } });
  const seen = [];
  const web = http.createServer();
  web.on('upgrade', (req, socket, head) => sym.handleUpgrade(req, socket, head));
  await new Promise((resolve) => web.listen(0, '127.0.0.1', resolve));
  try {
    const ws = await xff(`ws://127.0.0.1:${web.address().port}/`, { 'X-Forwarded-For': '198.51.100.77' });
    assert.equal(seen[0].remoteAddress, '198.51.100.77');
    assert.equal(seen[0].socketAddress, '127.0.0.1');
    ws.close();
  } finally {
    await sym.close();
    await new Promise((resolve) => web.close(resolve));
  }
});

test('options: proxyProtocol, proxyProtocolFrom and trustProxy are checked at new Server, naming the option', () => {
  const bad = [
    [{ proxyProtocol: 'yes' }, /options\.proxyProtocol/, TypeError],
    [{ proxyProtocol: true, proxyProtocolFrom: '10.0.0.0/8' }, /options\.proxyProtocolFrom/, TypeError],
    [{ proxyProtocol: true, proxyProtocolFrom: [] }, /options\.proxyProtocolFrom/, RangeError],
    [{ proxyProtocol: true, proxyProtocolFrom: ['10.0.0.0/33'] }, /options\.proxyProtocolFrom\[0\]/, RangeError],
    [{ proxyProtocol: true, proxyProtocolFrom: ['10.0.0.0/8', 'example.com'] }, /options\.proxyProtocolFrom\[1\]/, TypeError],
    [{ proxyProtocol: true, proxyProtocolFrom: Array(65).fill('10.0.0.0/8') }, /options\.proxyProtocolFrom/, RangeError],
    [{ proxyProtocolFrom: ['10.0.0.0/8'] }, /options\.proxyProtocolFrom.*needs options\.proxyProtocol/, TypeError],
    [{ proxyProtocol: true, noServer: true }, /options\.proxyProtocol/, TypeError],
    [{ trustProxy: 0 }, /options\.trustProxy/, RangeError],
    [{ trustProxy: 1.5 }, /options\.trustProxy/, RangeError],
    [{ trustProxy: {} }, /options\.trustProxy/, TypeError],
    [{ trustProxy: ['10.0.0.0/8', 'nope'] }, /options\.trustProxy\[1\]/, TypeError],
  ];
  for (const [opts, re, Type] of bad) {
    assert.throws(() => new Server({ host: '127.0.0.1', ...opts }), (e) => e instanceof Type && re.test(e.message),
      JSON.stringify(opts).slice(0, 80));
  }
  const ok = new Server({ host: '127.0.0.1', proxyProtocol: 'optional', proxyProtocolFrom: ['10.1.2.3/8', '::ffff:10.0.0.0/104', 'fd00::1'], trustProxy: 'loopback, uniquelocal' });
  assert.equal(ok.options.proxyProtocol, 'optional');
  return ok.close();
});
