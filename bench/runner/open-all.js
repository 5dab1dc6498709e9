'use strict';
// What the raw-socket clients of the presence and asks phases share:
// opening their connections, a bounded number of handshakes in flight, with
// a progress line every second.

const mono = () => process.hrtime.bigint();

/**
 * Opens `count` connections with connect(k) (k = 0 .. count - 1; it resolves
 * to a connection, or null when that one failed), `pending` at a time, each
 * pushed onto `into` as it opens. out() hears { ev: 'progress', open,
 * failed, started } every second meanwhile. Returns { failed, t0Ns, lastNs }:
 * the failures, and process.hrtime.bigint() at the start and at the last
 * open (0n: none opened).
 */
async function openAll(into, count, pending, connect, out) {
  const t0Ns = mono();
  let next = 0;
  let lastNs = 0n;
  let failed = 0;
  const tick = setInterval(() => out({ ev: 'progress', open: into.length, failed, started: next }), 1000);
  const worker = async () => {
    while (next < count) {
      const c = await connect(next++);
      if (c) {
        into.push(c);
        lastNs = mono();
      } else {
        failed++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(pending, count) }, worker));
  } finally {
    clearInterval(tick);
  }
  return { failed, t0Ns, lastNs };
}

module.exports = { openAll };
