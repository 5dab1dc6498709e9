'use strict';
// For the examples' suites: start an example as a user would (node
// examples/<name>/server.js, from the repository's root), on ports the test
// gives it, and wait for events, never for time.
//
// - start(t, file, { env, ready }): spawns `node file` and resolves with the
//   match of `ready` (a RegExp) in its output; t.after kills it by its PID
//   (SIGTERM, then SIGKILL after 5 s). Rejects if it exits first.
// - once(emitter, event, { pred, ms }): the arguments of the next event
//   that pred accepts, or a rejection after ms naming what it waited for.
// - untilDom(page, cond, ms, what): resolves once the expression cond holds
//   in a Chromium page, checked at each DOM change (a MutationObserver).
const { spawn } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');

function start(t, file, { env = {}, ready, ms = 10000 } = {}) {
  const child = spawn(process.execPath, [path.join(root, file)], {
    cwd: root, env: { ...process.env, HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let out = '';
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  });
  const api = { child, exited, output: () => out, match: null };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not print ${ready} within ${ms} ms:\n${out}`)), ms);
    const onData = (d) => {
      out += d;
      const m = ready.exec(out);
      if (m && api.match === null) {
        api.match = m;
        clearTimeout(timer);
        resolve(api);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited (${signal || code}) before it was ready:\n${out}`));
    });
  });
}

function once(emitter, event, { pred = () => true, ms = 5000, what = event } = {}) {
  return new Promise((resolve, reject) => {
    const on = (...args) => {
      if (!pred(...args)) return;
      done();
      resolve(args);
    };
    const timer = setTimeout(() => { done(); reject(new Error(`timed out after ${ms} ms waiting for ${what}`)); }, ms);
    const done = () => { clearTimeout(timer); emitter.off(event, on); };
    emitter.on(event, on);
  });
}

async function untilDom(page, cond, ms, what) {
  try {
    return await page.evaluate(`new Promise((resolve, reject) => {
      const cond = () => (${cond});
      const check = () => { const v = cond(); if (v) { obs.disconnect(); clearTimeout(timer); resolve(v); } };
      const obs = new MutationObserver(check);
      const timer = setTimeout(() => { obs.disconnect(); reject(new Error('timed out')); }, ${ms});
      obs.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
      check();
    })`, { timeout: ms + 1000 });
  } catch (err) {
    const body = await page.evaluate('document.body.innerText').catch(() => '?');
    throw new Error(`${what}: ${err.message} (${cond});\npage console: ${page.console.join('\n')}\npage text: ${body}`);
  }
}

module.exports = { start, once, untilDom, root };
