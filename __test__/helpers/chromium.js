'use strict';
// Headless Chromium (Debian's `chromium` package) driven over the Chrome
// DevTools Protocol with the `ws` client: no puppeteer, nothing downloaded.
//
//   const browser = await launch();
//   const page = await browser.newPage('http://127.0.0.1:8080/');
//   const value = await page.evaluate('fetchSomething()'); // awaits promises, JSON value
//   await browser.close();
//
// Every step is bounded by a timeout. The browser runs in its own process
// group, which close() (and a failed launch, and process exit) kills by the
// PID of the process this module started; its temporary profile is removed.
// Its crash handlers (chrome_crashpad_handler) start sessions of their own and
// end by themselves when the browser does (--disable-crashpad-for-testing
// would keep them from starting, but then Debian's build aborts page loads).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const WebSocket = require('ws');

/** The chromium executable: $CHROMIUM, or `chromium` on PATH. Throws if missing. */
function findChromium() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, 'chromium');
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {}
  }
  throw new Error('chromium not found on PATH: install Debian\'s `chromium` package '
    + '(npm run setup does), or set CHROMIUM to the browser executable');
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`chromium: timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Chrome DevTools Protocol over one WebSocket; sessions are flat (sessionId). */
class Cdp {
  constructor(ws) {
    this.ws = ws;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Set();
    ws.on('message', (data) => this.onMessage(JSON.parse(data.toString())));
    ws.on('close', () => this.failAll(new Error('chromium: DevTools connection closed')));
    ws.on('error', (err) => this.failAll(err));
  }

  onMessage(msg) {
    if (msg.id === undefined) {
      for (const fn of this.listeners) fn(msg);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`chromium: ${p.method}: ${msg.error.message}`));
    else p.resolve(msg.result);
  }

  failAll(err) {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  send(method, params = {}, sessionId, ms = 10000) {
    if (this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error(`chromium: ${method}: DevTools connection is not open`));
    }
    const id = this.nextId++;
    const reply = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject, method }));
    this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return withTimeout(reply, ms, method).finally(() => this.pending.delete(id));
  }

  /** Resolves with the first event `method` (of `sessionId`) that `pred` accepts. */
  waitEvent(method, sessionId, ms, pred = () => true) {
    let fn;
    const got = new Promise((resolve) => {
      fn = (msg) => {
        if (msg.method === method && msg.sessionId === sessionId && pred(msg.params)) resolve(msg.params);
      };
      this.listeners.add(fn);
    });
    return withTimeout(got, ms, `waiting for ${method}`).finally(() => this.listeners.delete(fn));
  }
}

class Page {
  constructor(cdp, sessionId, targetId) {
    this.cdp = cdp;
    this.sessionId = sessionId;
    this.targetId = targetId;
    this.console = []; // console messages and uncaught exceptions, as text, for failure messages
    this.recorded = new Map(); // method -> params of each event, for record()
    cdp.listeners.add((msg) => {
      if (msg.sessionId !== sessionId) return;
      const list = this.recorded.get(msg.method);
      if (list) list.push(msg.params);
      if (msg.method === 'Runtime.consoleAPICalled') {
        const text = msg.params.args.map((a) => (a.value !== undefined ? String(a.value) : a.description)).join(' ');
        this.console.push(`${msg.params.type}: ${text}`);
      } else if (msg.method === 'Runtime.exceptionThrown') {
        const d = msg.params.exceptionDetails;
        this.console.push(`exception: ${d.exception ? d.exception.description : d.text}`);
      }
    });
  }

  /** An array that fills with the params of each later event `method` of this page. */
  record(method) {
    if (!this.recorded.has(method)) this.recorded.set(method, []);
    return this.recorded.get(method);
  }

  /** Sends a DevTools command to this page (e.g. 'Network.enable'). */
  send(method, params, timeout) {
    return this.cdp.send(method, params, this.sessionId, timeout);
  }

  /** Evaluates `expression` in the page, awaiting a promise; returns its value as JSON. */
  async evaluate(expression, { timeout = 10000 } = {}) {
    const res = await this.cdp.send('Runtime.evaluate', {
      expression, awaitPromise: true, returnByValue: true, timeout,
    }, this.sessionId, timeout + 1000);
    if (res.exceptionDetails) {
      const d = res.exceptionDetails;
      throw new Error(`page: ${d.exception ? d.exception.description : d.text}`);
    }
    return res.result.value;
  }
}

// Browsers not closed yet: killed if this process exits or is told to stop
// (SIGINT, SIGTERM, SIGHUP: then the signal is raised again, as if unhandled).
const live = new Set();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
function killLive() {
  for (const b of live) {
    b.kill();
    try { fs.rmSync(b.userDataDir, { recursive: true, force: true }); } catch {}
  }
}
function onSignal(sig) {
  killLive();
  for (const s of SIGNALS) process.off(s, onSignal);
  process.off('exit', killLive);
  if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
}
function track(browser) {
  if (live.size === 0) {
    process.on('exit', killLive);
    for (const s of SIGNALS) process.on(s, onSignal);
  }
  live.add(browser);
}
function untrack(browser) {
  if (!live.delete(browser) || live.size > 0) return;
  process.off('exit', killLive);
  for (const s of SIGNALS) process.off(s, onSignal);
}

class Browser {
  constructor(child, userDataDir) {
    this.child = child;
    this.pid = child.pid;
    this.userDataDir = userDataDir;
    this.cdp = null;
    this.version = null;
    this.exited = new Promise((resolve) => child.once('exit', resolve));
    track(this);
  }

  /** Opens a tab, attaches to it and loads `url` (waits for the load event). */
  async newPage(url, { timeout = 10000 } = {}) {
    const { targetId } = await this.cdp.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this.cdp, sessionId, targetId);
    await this.cdp.send('Page.enable', {}, sessionId);
    await this.cdp.send('Runtime.enable', {}, sessionId);
    const loaded = this.cdp.waitEvent('Page.loadEventFired', sessionId, timeout);
    loaded.catch(() => {}); // a failed navigate below rejects first
    const nav = await this.cdp.send('Page.navigate', { url }, sessionId, timeout);
    if (nav.errorText) throw new Error(`chromium: loading ${url}: ${nav.errorText}`);
    await loaded;
    return page;
  }

  /** Kills the browser's process group (by the PID this module started). */
  kill() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    try { process.kill(-this.pid, 'SIGKILL'); } catch {}
  }

  /** Asks the browser to quit, kills its group if it has not within 3 s, removes its profile. */
  async close() {
    try {
      if (this.cdp) {
        await this.cdp.send('Browser.close', {}, undefined, 2000).catch(() => {});
        this.cdp.ws.terminate();
        await withTimeout(this.exited, 3000, 'browser exit').catch(() => {});
      }
    } finally {
      this.kill();
      await withTimeout(this.exited, 5000, 'browser exit after SIGKILL').catch(() => {});
      // Children of the group may outlive the main process by a moment.
      try { process.kill(-this.pid, 'SIGKILL'); } catch {}
      untrack(this);
      fs.rmSync(this.userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    }
  }
}

const FLAGS = [
  '--headless=new',
  '--no-sandbox', // CI runs as root
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-extensions',
  '--disable-component-update',
  '--disable-background-networking',
  '--disable-default-apps',
  '--disable-sync',
  '--disable-domain-reliability',
  '--metrics-recording-only',
  '--mute-audio',
  '--remote-debugging-address=127.0.0.1',
  '--remote-debugging-port=0',
  // Loopback only: no name resolves, and anything that is not loopback goes
  // to a proxy on the discard port, which nothing serves.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  '--proxy-server=127.0.0.1:9',
];

/** Starts headless chromium; resolves with a connected Browser. */
async function launch({ timeout = 15000 } = {}) {
  const exe = findChromium();
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-chromium-'));
  let child;
  try {
    child = spawn(exe, [...FLAGS, `--user-data-dir=${userDataDir}`, 'about:blank'], {
      detached: true, // its own process group, so kill(-pid) ends its children too
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } catch (err) {
    fs.rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
  const browser = new Browser(child, userDataDir);
  try {
    let stderr = '';
    const endpoint = await withTimeout(new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code, sig) => reject(new Error(
        `chromium exited (${sig || code}) before DevTools listened:\n${stderr.slice(-2000)}`)));
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (m) resolve(m[1]);
      });
    }), timeout, 'DevTools endpoint');
    child.stderr.removeAllListeners('data');
    child.stderr.resume(); // keep draining, so the browser never blocks on a full pipe
    const ws = new WebSocket(endpoint, { perMessageDeflate: false, maxPayload: 256 << 20 });
    await withTimeout(new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    }), timeout, 'DevTools connection');
    browser.cdp = new Cdp(ws);
    browser.version = (await browser.cdp.send('Browser.getVersion')).product;
    return browser;
  } catch (err) {
    await browser.close();
    throw err;
  }
}

module.exports = { launch, findChromium };
