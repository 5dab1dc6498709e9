'use strict';
// npm start's page in a real browser: examples/server.js (PORT=0) in a child
// process, its page loaded into headless Chromium from the port the
// WebSocket is on. The ticker feed must arrive, the numbers must follow 50
// extra connections opened by ?clients=50 up and back down after the close
// button, the chart must move, and SIGTERM must close the page's feed with
// 1001. Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { launch } = require('../helpers/chromium');
const { waitFor } = require('../helpers/raw');

const T = { timeout: 20000 };
const N = 50;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let child, browser, page, port;
let out = '';

/** Polls `expression` in the page until it is truthy; returns its value. */
async function until(expression, ms, what) {
  const start = Date.now();
  for (;;) {
    const value = await page.evaluate(expression);
    if (value) return value;
    if (Date.now() - start > ms) {
      throw new Error(`timed out after ${ms} ms waiting for ${what} (${expression});\npage: ${page.console.join('\n')}\nserver: ${out}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const number = (id) => `Number(document.getElementById('${id}').dataset.value)`;

test.before(async () => {
  child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'examples', 'server.js')], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', THREADS: '2' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const line = /listening on ws:\/\/127\.0\.0\.1:(\d+)\/\?topic=ticker .*page on http:\/\/127\.0\.0\.1:(\d+)\//;
  await waitFor(() => line.test(out), 10000, 'the showcase to listen');
  const [, wsPort, pagePort] = line.exec(out);
  assert.equal(wsPort, pagePort, 'one port');
  port = Number(pagePort);
  browser = await launch();
});

test.after(async () => {
  if (browser) await browser.close();
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

test('the page loads from the WebSocket\'s port and the ticker feed arrives', T, async () => {
  page = await browser.newPage(`http://127.0.0.1:${port}/?clients=${N}`);
  assert.equal(await page.evaluate("document.getElementById('ws-url').textContent"), `ws://127.0.0.1:${port}/?topic=NAME`);
  await until("document.getElementById('status').textContent === 'open'", 5000, 'the feed to open');
  const feed = "[...document.querySelectorAll('#feed li')].map((li) => li.textContent)";
  await until(`${feed}.filter((t) => ${ISO_TIME}.test(t)).length >= 2`, 5000, 'two ticker lines');
  const lines = await page.evaluate(feed);
  assert.equal(lines.at(-1), 'welcome to ticker', 'the oldest line is the welcome');
  const times = lines.filter((t) => ISO_TIME.test(t));
  assert.ok(times[0] > times[1], `newest first: ${times.slice(0, 2)}`);
});

test('what the page sends is published to ticker', T, async () => {
  await page.evaluate("document.getElementById('text').value = 'hello from the page'; document.getElementById('say').requestSubmit()");
  await until("document.querySelector('#feed li').textContent === 'hello from the page'", 5000, 'the echo in the feed');
  assert.equal(await page.evaluate("document.getElementById('text').value"), '');
});

test(`the numbers follow ${N} extra connections up and back down; the charts move`, T, async () => {
  await until(`${number('extra')} === ${N}`, 8000, `${N} extra connections open in the page`);
  await until(`${number('connections')} === ${N + 1}`, 5000, `the server to show ${N + 1} connections`);
  // Every one of them subscribes to ticker: a second's fan-out reaches N + 1.
  await until(`${number('outPerSecond')} >= ${N + 1}`, 5000, 'messages out/s to follow');
  const allocator = await page.evaluate("document.getElementById('allocator').textContent");
  assert.ok(await page.evaluate(`${number('allocated')} > 0`), 'allocated bytes shown');
  if (allocator === 'jemalloc') assert.ok(await page.evaluate(`${number('resident')} > 0`), 'resident bytes shown');
  else assert.equal(await page.evaluate("document.getElementById('resident').textContent"), 'n/a');
  const line = "document.getElementById('connections-line').getAttribute('points')";
  const before = await page.evaluate(line);
  assert.match(before, /^(\d+,[\d.]+ )+\d+,[\d.]+$/, 'the connections chart is a polyline');

  await page.evaluate("document.getElementById('close').click()");
  assert.equal(await page.evaluate(number('extra')), 0);
  await until(`${number('connections')} === 1`, 5000, 'the server to show 1 connection again');
  const after = await page.evaluate(line);
  assert.notEqual(after, before, 'the chart moved');
  assert.ok(after.split(' ').length > before.split(' ').length || after.split(' ').length === 60, 'one point a second, up to 60');
  // y runs from 95 (the window's least) to 5 (its most): the peak of N + 1
  // is in the window, and the last point is near the bottom again.
  const ys = after.split(' ').map((p) => Number(p.split(',')[1]));
  assert.equal(Math.min(...ys), 5, `the peak is in the window: ${after}`);
  assert.ok(ys.at(-1) > 90, `the last point is low again: ${after}`);
});

test('SIGTERM: the page\'s feed gets 1001 and the server exits 0', T, async () => {
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.kill('SIGTERM');
  await until("document.getElementById('status').textContent === 'closed (1001)'", 5000, 'the feed to close with 1001');
  assert.deepEqual(await exited, { code: 0, signal: null });
  await until("document.getElementById('updated').textContent === '(the server does not answer)'", 5000, 'the page to notice');
});
