'use strict';
// The README and docs/ against the code: every link between them resolves
// (file and heading), code in them names the package as users install it,
// the glibc floor they state is the one the artifact test enforces, and every
// code block that claims to run runs as printed. The claim is a marker on the
// line before the block's fence, `<!-- runs: NAME -->` (NAME unique in its
// page); each marked block is run by a test below (RUNS lists them), and a
// marked block that no test runs fails the suite.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const WebSocket = require('ws');
const { GLIBC_FLOOR } = require('../../scripts/glibc-floor');

const root = path.resolve(__dirname, '..', '..');
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (page) => fs.readFileSync(path.join(root, page), 'utf8');

/** Markdown without its fenced code blocks (a '#' comment there is no heading). */
function prose(text) {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/** GitHub's anchors for a page's headings. */
function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const m of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1].trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The code of every block marked `<!-- runs: NAME -->`, as 'page#NAME' -> code. */
function runnable() {
  const out = new Map();
  for (const page of pages) {
    const text = read(page);
    const markers = [...text.matchAll(/^<!-- runs: ?(.*?) ?-->$/gm)];
    for (const m of markers) {
      const key = `${page}#${m[1]}`;
      const fence = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(text.slice(m.index + m[0].length + 1));
      assert.ok(/^[a-z0-9-]+$/.test(m[1]), `${key}: a marker's name is a-z, 0-9 and -`);
      assert.ok(fence && fence.index === 0, `${key}: the marker is not on the line before a fenced block`);
      assert.ok(!out.has(key), `${key}: two blocks have this name`);
      out.set(key, fence[1]);
    }
  }
  return out;
}

/** The blocks the tests below run. */
const RUNS = ['README.md#quick-start-server', 'README.md#quick-start-client', 'README.md#asks-server', 'README.md#asks-client',
  'docs/sse.md#sse-quick', 'docs/faq.md#faq-body-parsers'];

function block(key) {
  assert.ok(RUNS.includes(key), `${key} is not in RUNS`);
  const code = runnable().get(key);
  assert.ok(code !== undefined, `no block marked <!-- runs: ${key.split('#')[1]} --> in ${key.split('#')[0]}`);
  return code;
}

test('docs: every block marked <!-- runs: NAME --> is run by a test, and every block run is marked', () => {
  const marked = [...runnable().keys()];
  assert.deepEqual(marked.filter((k) => !RUNS.includes(k)), [], 'marked as running, but no test runs them');
  assert.deepEqual(RUNS.filter((k) => !marked.includes(k)), [], 'run by a test, but not marked (moved or renamed?)');
});

test('docs: every relative link resolves to a file, and to a heading there', () => {
  const broken = [];
  for (const page of pages) {
    for (const m of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [file, anchor] = target.split('#');
      const dest = file ? path.normalize(path.join(path.dirname(page), file)) : page;
      if (!fs.existsSync(path.join(root, dest))) {
        broken.push(`${page}: ${target} (no ${dest})`);
        continue;
      }
      if (anchor !== undefined && dest.endsWith('.md') && !anchors(read(dest)).has(anchor)) {
        broken.push(`${page}: ${target} (no heading #${anchor} in ${dest})`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test("docs: code names the package as users install it ('symphony-ws')", () => {
  const pkg = JSON.parse(read('package.json'));
  assert.equal(pkg.name, 'symphony-ws');
  const wrong = [];
  for (const page of pages) {
    for (const m of read(page).matchAll(/(?:require\(|from )'(symphony[^']*)'/g)) {
      // The package, or one of its subpaths in "exports" ('symphony-ws/client').
      const sub = m[1].startsWith(`${pkg.name}/`) ? `.${m[1].slice(pkg.name.length)}` : null;
      if (m[1] !== pkg.name && !(sub && sub in pkg.exports)) wrong.push(`${page}: ${m[0]}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.match(read('README.md'), /^npm install symphony-ws$/m);
});

test(`docs: the glibc floor they state is scripts/glibc-floor.js's (${GLIBC_FLOOR})`, () => {
  const stated = [];
  for (const page of pages) {
    for (const m of read(page).matchAll(/glibc\)? ?(?:≥|>=) ?([0-9.]+)/g)) stated.push(`${page}: ${m[1]}`);
  }
  assert.ok(stated.some((s) => s.startsWith('README.md')), 'the README states the floor');
  assert.ok(stated.some((s) => s.startsWith('docs/builds.md')), 'docs/builds.md states the floor');
  assert.deepEqual(stated.filter((s) => !s.endsWith(`: ${GLIBC_FLOOR}`)), []);
});

test('docs: the event stream example of docs/sse.md runs as printed: it receives its publish and exits', { timeout: 30000 }, async (t) => {
  const code = block('docs/sse.md#sse-quick');
  const child = spawn(process.execPath, ['-e', code], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  t.after(() => child.kill());
  const [status] = await new Promise((resolve) => child.once('exit', (...a) => resolve(a)));
  assert.equal(status, 0, 'it ends by itself once the event arrived (server.close())');
});

test('docs: the README quick start (server and client) runs as printed', async (t) => {
  const code = block('README.md#quick-start-server');
  const clientCode = block('README.md#quick-start-client');
  assert.match(code, /port: 8080/);
  assert.ok(clientCode.includes("'ws://localhost:8080/?room=lobby'"));
  // Port 0 rather than 8080 (which may be taken here); run from the
  // package's folder, where require('symphony-ws') resolves to it.
  const child = spawn(process.execPath, ['-e', code.replace('port: 8080', 'port: 0')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill());
  let out = '';
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /ws:\/\/localhost:\d+\/\?room=lobby/.exec(out);
      if (m) resolve(m[0]);
    });
    child.once('exit', (code) => reject(new Error(`the quick start exited with ${code}: ${out}`)));
  });
  const connect = () => new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const got = [];
    ws.on('message', (d) => got.push(d.toString()));
    ws.once('open', () => resolve({ ws, got }));
    ws.once('error', reject);
  });
  const a = await connect();
  const b = await connect();
  const until = async (cond) => {
    for (const end = Date.now() + 5000; !cond() && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  };
  await until(() => a.got.length === 1 && b.got.length === 1);
  a.ws.send('hello room');
  await until(() => a.got.length === 2 && b.got.length === 2);
  assert.deepEqual(a.got, ['welcome to lobby', 'hello room']);
  assert.deepEqual(b.got, ['welcome to lobby', 'hello room']);
  // A client without a room is refused with 400.
  const status = await new Promise((resolve) => {
    const ws = new WebSocket(url.replace('?room=lobby', ''));
    ws.once('unexpected-response', (req, res) => resolve(res.statusCode));
    ws.once('error', () => {});
  });
  assert.equal(status, 400);
  a.ws.close();
  b.ws.close();
  await until(() => /closed \(1005\)[\s\S]*closed \(1005\)/.test(out));
  assert.match(out, /connection \d+ closed \(1005\)/);
  // The client block, alone in the room now: the welcome, then its own message back.
  const cli = spawn(process.execPath, ['-e', clientCode.replace('ws://localhost:8080/?room=lobby', url)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => cli.kill());
  let printed = '';
  await new Promise((resolve, reject) => {
    cli.stdout.on('data', (d) => {
      printed += d;
      if (printed.split('\n').length > 2) resolve();
    });
    cli.once('exit', (code) => reject(new Error(`the client block exited with ${code}: ${printed}`)));
  });
  assert.deepEqual(printed.trim().split('\n'), ['direct: welcome to lobby', 'lobby: hello room']);
});

test('docs: the README\'s "Clients subscribe, publish and request" blocks run as printed', async (t) => {
  const [server, client] = [block('README.md#asks-server'), block('README.md#asks-client')];
  assert.match(server, /port: 8080/);
  assert.match(client, /ws:\/\/localhost:8080\//);
  const run = (code) => spawn(process.execPath, ['-e', code], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const srv = run(server.replace('port: 8080', 'port: 0'));
  t.after(() => srv.kill());
  let out = '';
  const url = await new Promise((resolve, reject) => {
    srv.stdout.on('data', (d) => {
      out += d;
      const m = /ws:\/\/localhost:\d+\//.exec(out);
      if (m) resolve(m[0]);
    });
    srv.once('exit', (code) => reject(new Error(`the server block exited with ${code}: ${out}`)));
  });
  const cli = run(client.replace('ws://localhost:8080/', url));
  t.after(() => cli.kill());
  let printed = '';
  await new Promise((resolve, reject) => {
    cli.stdout.on('data', (d) => {
      printed += d;
      if (/admin: \w+/.test(printed)) resolve();
    });
    cli.once('exit', (code) => reject(new Error(`the client block exited with ${code}: ${printed}`)));
  });
  assert.deepEqual(printed.trim().split('\n'), ['lobby #1: hello from the quick start', '{ members: 1 }', 'admin: forbidden']);
});

test('docs: the FAQ\'s Express example (symphony before body parsers) runs as printed: a stream\'s JSON POST and the app\'s own JSON route both work', { timeout: 30000 }, async (t) => {
  const http = require('node:http');
  const code = block('docs/faq.md#faq-body-parsers');
  assert.match(code, /web\.listen\(8080,/);
  assert.ok(code.indexOf('symphony.handleRequest') < code.indexOf('express.json()'), 'handleRequest is mounted before express.json()');
  const child = spawn(process.execPath, ['-e', code.replace('web.listen(8080,', 'web.listen(0,')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill());
  let out = '';
  let errors = '';
  child.stderr.on('data', (d) => { errors += d; });
  const base = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/localhost:\d+\/)/.exec(out);
      if (m) resolve(m[1].replace('localhost', '127.0.0.1'));
    });
    child.once('exit', (status) => reject(new Error(`the example exited with ${status}: ${out}${errors}`)));
  });
  // The app's own JSON route, behind express.json().
  const echo = await fetch(`${base}api/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
  assert.deepEqual(await echo.json(), { n: 1 });
  // A stream, and a JSON POST to it: published to 'chat', received by the stream.
  let text = '';
  const req = http.get(`${base}`, { headers: { accept: 'text/event-stream' } });
  t.after(() => req.destroy());
  const res = await new Promise((resolve, reject) => { req.once('response', resolve); req.once('error', reject); });
  assert.equal(res.statusCode, 200);
  const waiting = new Set();
  res.on('data', (d) => { text += d; for (const w of waiting) w(); });
  res.once('end', () => { text += '\n(the stream ended)'; for (const w of waiting) w(); });
  const until = (re) => new Promise((resolve, reject) => {
    const check = () => {
      const m = re.exec(text);
      if (m) { waiting.delete(check); resolve(m); } else if (text.endsWith('(the stream ended)')) reject(new Error(text));
    };
    waiting.add(check);
    check();
  });
  const [, stream] = await until(/event: sy\.open\ndata: \{"stream":"([^"]+)"/);
  const post = await fetch(`${base}?sy.stream=${encodeURIComponent(stream)}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"hello":"sse"}',
  });
  assert.equal(post.status, 202);
  await until(/event: chat\ndata: \{"hello":"sse"\}\n/);
  assert.equal(errors, '', 'nothing reached \'error\'');
});
