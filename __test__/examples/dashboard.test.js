'use strict';
// examples/dashboard in headless Chromium: the server as a child process
// publishing a sample every 50 ms; the page fills from its snapshot and the
// feed, leaves while a side client sees at least 10 more samples, comes
// back, and is reloaded: each time it resumes from the positions in its
// localStorage, and the samples it keeps are every number from its first
// to its last, once (no gap, no duplicate). Then the server restarts (a new
// epoch): the reloaded page cannot resume and gets the snapshot. Fails (does
// not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { launch } = require('../helpers/chromium');
const { freePort } = require('../helpers/redis');
const { start, once, untilDom } = require('./run');

const T = { timeout: 30000 };
const STORED = "JSON.parse(localStorage.getItem('dashboard') || 'null')";
const SEQ = "Number(document.getElementById('seq').textContent)";
const STATUS = "document.getElementById('status').textContent";

/** Asserts that the page's stored samples are consecutive, and returns their numbers. */
async function consecutive(page, what) {
  const stored = await page.evaluate(STORED);
  assert.ok(stored && stored.samples.length > 0, `${what}: samples stored`);
  const seqs = stored.samples.map((s) => s.seq);
  for (let i = 1; i < seqs.length; i++) {
    if (seqs[i] !== seqs[i - 1] + 1) {
      assert.fail(`${what}: ${seqs[i] <= seqs[i - 1] ? 'a duplicate' : 'a gap'} at ${i}: ${seqs.slice(Math.max(0, i - 3), i + 3)}`);
    }
  }
  assert.ok(stored.positions.metrics && stored.positions.metrics.offset > 0, `${what}: a position stored: ${JSON.stringify(stored.positions)}`);
  return seqs;
}

/** Waits for the page's load event after a navigation or reload started by go(). */
async function loaded(page, go) {
  const load = page.cdp.waitEvent('Page.loadEventFired', page.sessionId, 10000);
  await go();
  await load;
}

test('dashboard: a page that leaves, comes back and reloads resumes with no gap and no duplicate', T, async (t) => {
  const port = await freePort();
  const env = { PORT: String(port), INTERVAL_MS: '50' };
  let server = await start(t, 'examples/dashboard/server.js', { env, ready: /open http:\/\/127\.0\.0\.1:\d+\//m });
  const url = `http://127.0.0.1:${port}/`;
  const browser = await launch();
  t.after(() => browser.close());
  const page = await browser.newPage(url);

  // A first visit: the snapshot (the samples so far), then live.
  await untilDom(page, `${SEQ} >= 20 && ${STATUS} === 'open'`, 5000, 'the page to show 20 samples');
  const first = await consecutive(page, 'first visit');

  // It leaves; a side client sees 10 samples it misses.
  await loaded(page, () => page.send('Page.navigate', { url: 'about:blank' }));
  const side = new WebSocket(`ws://127.0.0.1:${port}/live`);
  t.after(() => side.terminate());
  const missed = [];
  await once(side, 'message', { pred: (d) => { const m = JSON.parse(d); if (m.seq) missed.push(m.seq); return missed.length >= 10; }, what: '10 samples while the page is away' });
  side.close();

  // Back: it resumes after its stored position and has every sample, once.
  await loaded(page, () => page.send('Page.navigate', { url }));
  await untilDom(page, `${SEQ} > ${missed.at(-1)} && /^open, resumed after #\\d+$/.test(${STATUS})`, 5000, 'the page to resume past what it missed');
  const back = await consecutive(page, 'after coming back');
  assert.ok(back[0] < missed[0] && back.includes(missed.at(-1)),
    `kept what it had and got what it missed: ${back[0]}..${back.at(-1)}, missed ${missed[0]}..${missed.at(-1)} (first visit ..${first.at(-1)})`);

  // A reload: the same.
  const before = (await page.evaluate(STORED)).samples.at(-1).seq;
  await loaded(page, () => page.send('Page.reload'));
  await untilDom(page, `${SEQ} > ${before + 5} && /^open, resumed after #\\d+$/.test(${STATUS})`, 5000, 'the page to resume after a reload');
  const reloaded = await consecutive(page, 'after a reload');
  assert.ok(reloaded.includes(before), 'the samples from before the reload are kept');

  // The server restarts while the page is closed (a new epoch, new
  // numbers): the stored position cannot be resumed from, so the page is
  // sent the snapshot. (Closed first: an open page's client would reconnect
  // to the new server by itself, and whether that or the reload came first
  // would be a race.)
  const epoch = (await page.evaluate(STORED)).positions.metrics.epoch;
  await loaded(page, () => page.send('Page.navigate', { url: 'about:blank' }));
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
  server = await start(t, 'examples/dashboard/server.js', { env, ready: /open http:\/\/127\.0\.0\.1:\d+\//m });
  await loaded(page, () => page.send('Page.navigate', { url }));
  await untilDom(page, `/could not resume \\(epoch\\): a snapshot/.test(${STATUS}) && ${SEQ} >= 5`, 5000, 'the snapshot after a restart');
  await consecutive(page, 'after a restart');
  assert.notEqual((await page.evaluate(STORED)).positions.metrics.epoch, epoch, 'the position is in the new epoch');
});
