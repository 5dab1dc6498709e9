'use strict';
// At the descriptor limit: a server in a child process with `ulimit -n 128`
// is given more connections than it has descriptors. Every connection over
// the limit is accepted and closed at once (acceptRejects), the client it
// already has is still served, it accepts again once descriptors are free,
// and it does not spin: its CPU time while refusing is a small fraction of
// the time that passed (a level-triggered listener it could not accept from
// would take a whole core, as uWebSockets.js's did at 93%).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { client, nextMessage } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

const LIMIT = 128;
const HELPER = path.join(__dirname, '..', 'helpers', 'limited-server.js');
const TICKS = 100; // USER_HZ: /proc/<pid>/stat's unit on Linux

/** utime + stime of pid, in seconds (/proc/<pid>/stat fields 14 and 15). */
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/** A TCP connection; resolves once connected, with `closed` (a promise of
 * the server's close). */
function tcp(port) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const st = { sock, ended: false };
    st.closed = new Promise((r) => sock.on('close', () => { st.ended = true; r(); }));
    sock.on('error', () => {});
    sock.once('connect', () => resolve(st));
    sock.once('error', reject);
  });
}

test('at the descriptor limit: refusals counted, the client served, accepting again, no spinning', async () => {
  const child = spawn('sh', ['-c', `ulimit -n ${LIMIT} && exec "$0" "$@"`, process.execPath, HELPER],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise((r) => child.once('exit', r));
  const reply = (key) => new Promise((resolve) => {
    const on = (m) => { if (key in m) { child.off('message', on); resolve(m); } };
    child.on('message', on);
  });
  const ask = (msg, key) => { const r = reply(key); child.send(msg); return r; };
  const stats = async () => (await ask({ op: 'stats' }, 'stats')).stats;
  const socks = [];
  try {
    const { port, pid } = await reply('port');
    const subscribed = async (n) => {
      while ((await ask({ op: 'subscribers' }, 'subscribers')).subscribers < n);
    };
    const by = await client(`ws://127.0.0.1:${port}`);
    await subscribed(1);
    // Connections until it refuses 16 (each refused one is closed at once;
    // the others wait in its upgrade phase: handshakeTimeout is 600 s).
    const refused = () => socks.filter((st) => st.ended).length;
    for (let i = 0; i < LIMIT + 64 && refused() < 16; i++) {
      socks.push(await tcp(port));
      if (i >= LIMIT / 2) await stats(); // a round trip: the server's turn for this one is done or under way
    }
    await waitFor(() => refused() >= 16, 5000, `16 refusals with ${LIMIT} descriptors`);
    const refusals = (await stats()).acceptRejects;
    assert.ok(refusals >= 16, `acceptRejects ${refusals}`);
    const held = socks.filter((st) => !st.ended);
    // The client it already had is served.
    let got = nextMessage(by);
    await ask({ op: 'publish', text: 'while full' }, 'published');
    assert.equal((await got).data.toString(), 'while full');
    // Refusing does not spin: CPU across K more attempts, each waited for
    // until the server closed it, against the time that took.
    const K = 50;
    const cpu0 = cpuSeconds(pid), t0 = process.hrtime.bigint();
    for (let k = 0; k < K; k++) {
      const st = await tcp(port);
      await st.closed;
    }
    const after = await stats();
    const wall = Number(process.hrtime.bigint() - t0) / 1e9, cpu = cpuSeconds(pid) - cpu0;
    assert.ok(after.acceptRejects >= refusals + K, `${after.acceptRejects - refusals} more refusals for ${K} attempts`);
    console.log(`# descriptor limit ${LIMIT}: ${held.length} held, ${K} refusals in ${(wall * 1000).toFixed(0)} ms, ` +
      `server CPU ${(cpu * 1000).toFixed(0)} ms (${((100 * cpu) / wall).toFixed(0)}%)`);
    assert.ok(cpu <= 0.5 * wall + 2 / TICKS, `the server used ${cpu} s of CPU in ${wall} s while refusing`);
    // Descriptors free again: a new client is accepted.
    for (const st of held.slice(0, 16)) st.sock.destroy();
    // The server learns of the closes by reading them: until then a new
    // client may still be refused (closed at once), and tries again.
    let again = null;
    for (let tries = 0; again === null; tries++) {
      try { again = await client(`ws://127.0.0.1:${port}`); } catch (err) { if (tries >= 100) throw err; }
    }
    await subscribed(2);
    got = nextMessage(again);
    await ask({ op: 'publish', text: 'after' }, 'published');
    assert.equal((await got).data.toString(), 'after');
    again.terminate();
    by.terminate();
  } finally {
    for (const st of socks) st.sock.destroy();
    child.kill();
    await exited;
  }
});
