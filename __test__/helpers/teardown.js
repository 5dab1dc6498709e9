'use strict';
// What a test started, stopped after it in the reverse order of starting:
// the clients before the server they talk to, the server before the
// webhook receiver it posts to. node:test runs a test's t.after hooks in
// the order they were registered (the server, started first, would stop
// before its clients): here one t.after hook per test runs every function
// deferred to it, last deferred first, each even when one before it failed
// (the first failure is thrown once all have run).
//
// Why the order matters beyond tidiness: pusher-js (faye-websocket) closing
// a socket its server already dropped arms a 30 s close timer that nothing
// clears, and that timer held the test file's process 30 s after its last
// test.

const stacks = new WeakMap();

/** Runs fn after the test t, before what was deferred to t earlier. */
function defer(t, fn) {
  let stack = stacks.get(t);
  if (stack === undefined) {
    stack = [];
    stacks.set(t, stack);
    t.after(async () => {
      let first = null;
      while (stack.length > 0) {
        try {
          await stack.pop()();
        } catch (err) {
          first ??= err;
        }
      }
      if (first !== null) throw first;
    });
  }
  stack.push(fn);
}

module.exports = { defer };
