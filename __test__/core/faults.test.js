'use strict';
// An IO thread whose poller fails for good (its epoll descriptor replaced
// by /dev/null under it, found through /proc/self/fd): the server reports it as an
// 'error' (ERR_SYMPHONY_IO_THREAD), the thread's clients are closed, the
// process goes on, and close() still completes.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const WebSocket = require('ws');
const { Server } = require('../..');

function epollFds() {
  const out = new Set();
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[eventpoll]') out.add(Number(fd));
    } catch { /* the directory's own descriptor, gone by now */ }
  }
  return out;
}

test('an IO thread whose poller fails: error event, its clients closed, close() completes',
  { timeout: 20000, skip: process.platform === 'linux' ? false : 'finds the epoll set in /proc/self/fd: Linux by nature' }, async () => {
  const before = epollFds();
  const server = new Server({ host: '127.0.0.1', port: 0, threads: 1 });
  const { port } = await server.listen();
  const ours = [...epollFds()].filter((fd) => !before.has(fd));
  assert.equal(ours.length, 1, 'one IO thread, one epoll set of its own');
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const clientClosed = new Promise((resolve) => ws.once('close', (code) => resolve(code)));
  const failed = new Promise((resolve) => server.once('error', resolve));
  const serverClose = new Promise((resolve) => server.once('close', (id, code) => resolve(code)));
  // Every later epoll_wait of the thread fails (EINVAL): its descriptor
  // number now names /dev/null. Taken again at once, so that nothing else
  // gets the number (symphony closes it when the server is freed).
  fs.closeSync(ours[0]);
  const spare = [];
  for (let fd = fs.openSync('/dev/null', 'r'); fd !== ours[0]; fd = fs.openSync('/dev/null', 'r')) {
    spare.push(fd);
    assert.ok(spare.length < 1000, 'the descriptor number came back');
  }
  spare.forEach((fd) => fs.closeSync(fd));
  const err = await failed;
  assert.equal(err.code, 'ERR_SYMPHONY_IO_THREAD');
  assert.equal(err.thread, 0);
  assert.ok(err.errno > 0);
  assert.match(err.message, /IO thread 0 stopped: its poller failed/);
  assert.equal(await clientClosed, 1006); // closed without a close frame
  assert.equal(await serverClose, 1011); // the server's own close event: a server error
  assert.ok(server.stats() === null || server.stats().pollFailures >= 100);
  await server.close();
});
