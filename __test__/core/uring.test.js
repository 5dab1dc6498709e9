'use strict';
// The two senders of the IO threads (docs/internals.md, "How a message
// travels"): io_uring batches where the kernel lets us, send()/sendmsg()
// per connection otherwise, chosen per thread, automatically.
//
// Each case runs __test__/helpers/uring-child.js in a child process (a
// server, 20 clients, bursts of publishes, one client whose socket fills)
// and checks that every client got exactly its messages in order, and what
// server.stats() says about the sender:
//   - as is: io_uring on a host that allows it (this one), batches counted;
//   - under a seccomp filter that refuses io_uring_setup with EPERM, as
//     Docker's default profile does (__test__/helpers/no-uring.c, built
//     here with cc): no thread uses io_uring, everything delivered;
//   - a filter that refuses only io_uring_enter: the ring is made, its
//     first batch fails, the thread falls back for good and sends what
//     that batch held with send()/sendmsg();
//   - SYMPHONY_IO_URING=0 forces the fallback; =1 is the default (auto).
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const child = path.join(__dirname, '..', 'helpers', 'uring-child.js');

/** Runs the child (through `launcher` when given) and returns its report. */
function run(env = {}, launcher = []) {
  const argv = [...launcher, process.execPath, child];
  const r = spawnSync(argv[0], argv.slice(1), { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, `child failed (${r.status ?? r.signal}): ${r.stderr}\n${r.stdout}`);
  const report = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.deepEqual(report.problems, [], 'every client got exactly its messages, in publish order');
  assert.equal(report.stats.dropped, 0);
  assert.equal(report.stats.slowCloses, 0);
  return report.stats;
}

/** True when nothing here should keep io_uring from us: Linux >= 5.6 (IORING_OP_SEND),
 * kernel.io_uring_disabled 0 and no seccomp filter on this process. */
function uringExpected() {
  const [major, minor] = os.release().split('.').map(Number);
  if (os.platform() !== 'linux' || major < 5 || (major === 5 && minor < 6)) return false;
  const read = (f) => { try { return fs.readFileSync(f, 'utf8'); } catch { return null; } };
  const disabled = read('/proc/sys/kernel/io_uring_disabled');
  if (disabled !== null && disabled.trim() !== '0') return false;
  return /^Seccomp:\s+0$/m.test(read('/proc/self/status') ?? '');
}

let launcher = null;
let launcherWhyNot = null;
test.before(() => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-no-uring-'));
  const out = path.join(dir, 'no-uring');
  const r = spawnSync('cc', ['-std=c11', '-O1', '-Wall', '-Wextra', '-Werror',
    path.join(__dirname, '..', 'helpers', 'no-uring.c'), '-o', out], { encoding: 'utf8' });
  if (r.status === 0) launcher = out;
  else launcherWhyNot = `cc could not build the launcher: ${r.error ? r.error.message : r.stderr}`;
});

test('as is: io_uring where the host allows it, with batches of several sends', { timeout: 90000 }, () => {
  const st = run();
  if (!uringExpected()) {
    test.diagnostic(`io_uring not expected on this host; ioUring=${st.ioUring}`);
    return;
  }
  assert.equal(st.ioUring, st.threads, 'every IO thread sends with io_uring');
  assert.ok(st.uringBatches > 0, `batches: ${st.uringBatches}`);
  assert.ok(st.uringSends >= 2 * st.uringBatches, `${st.uringSends} sends in ${st.uringBatches} batches`);
  const explicit = run({ SYMPHONY_IO_URING: '1' });
  assert.equal(explicit.ioUring, explicit.threads, 'SYMPHONY_IO_URING=1 is auto');
});

test('io_uring_setup refused by seccomp (EPERM): send/sendmsg, everything delivered', { timeout: 90000 }, () => {
  assert.ok(launcher !== null, launcherWhyNot); // cc comes with build-essential, which the build needs anyway
  const st = run({}, [launcher]);
  assert.equal(st.ioUring, 0, 'no thread uses io_uring');
  assert.equal(st.uringBatches, 0);
  assert.equal(st.uringSends, 0);
});

test('io_uring_enter refused: the first batch fails, the thread falls back for good', { timeout: 90000 }, () => {
  assert.ok(launcher !== null, launcherWhyNot); // cc comes with build-essential, which the build needs anyway
  const st = run({}, [launcher, '--enter']);
  assert.equal(st.ioUring, 0, 'no thread uses io_uring any more');
  assert.equal(st.uringBatches, 0, 'no batch went through');
});

test('SYMPHONY_IO_URING=0 forces send/sendmsg', { timeout: 90000 }, () => {
  const st = run({ SYMPHONY_IO_URING: '0' });
  assert.equal(st.ioUring, 0);
  assert.equal(st.uringBatches, 0);
  assert.equal(st.uringSends, 0);
});
