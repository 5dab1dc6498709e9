'use strict';
// What the Chromium chaos suites (browser/recovery, eventsource, fallback)
// share besides their proxy (cut-proxy.js): choices drawn from a seed (a
// failure's seed replays them), a publisher of numbered messages at a rate,
// and the check that the numbers a page saw are exactly first..last, with a
// readable account of them for a failure's message.

/** mulberry32 from seed: { random() in [0, 1), between(lo, hi) an integer in [lo, hi] }. */
function seeded(seed) {
  let a = seed >>> 0;
  const random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { random, between: (lo, hi) => lo + Math.floor(random() * (hi - lo + 1)) };
}

/**
 * Publishes to topic 'feed' of get().server ~rate messages/s (checked every
 * `every` ms), each {"seq":n,"note":note}; seq counts what was published.
 * Nothing while get() returns nothing (a server being restarted).
 */
class Publisher {
  constructor(get, { rate, note, every = 5 }) {
    this.get = get;
    this.rate = rate;
    this.note = note;
    this.every = every;
    this.seq = 0;
    this.timer = null;
  }

  one() {
    const feed = this.get();
    if (!feed) return;
    this.seq++;
    feed.server.publish('feed', JSON.stringify({ seq: this.seq, note: this.note }));
  }

  now(n) { for (let i = 0; i < n; i++) this.one(); }

  start() {
    const t0 = performance.now();
    const base = this.seq;
    this.timer = setInterval(() => {
      const target = base + Math.floor((performance.now() - t0) * this.rate / 1000);
      while (this.seq < target && this.get()) this.one();
    }, this.every);
  }

  stop() { clearInterval(this.timer); this.timer = null; }
}

/** 1,2,3,7,8 -> "1-3 7-8": a list of numbers as its runs, at most `max` of them. */
function runs(xs, max = 40) {
  const out = [];
  for (let i = 0; i < xs.length;) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j] + 1) j++;
    out.push(i === j ? `${xs[i]}` : `${xs[i]}-${xs[j]}`);
    i = j + 1;
  }
  return out.length > max ? `${out.slice(0, max / 2).join(' ')} ... ${out.slice(-max / 2).join(' ')} (${out.length} runs)` : out.join(' ');
}

/** null when xs is exactly first, first+1, ..., last; else what is wrong, with the neighbourhood. */
function notARun(xs, first, last) {
  for (let i = 0; i < xs.length; i++) {
    if (xs[i] !== first + i) {
      const dup = xs.indexOf(xs[i]) < i;
      const kind = dup ? 'a duplicate' : (xs.indexOf(first + i, i) > i || xs[i] < first + i ? 'out of order' : 'a gap');
      return `${kind} at index ${i}: expected ${first + i}, got ${xs[i]}; around it: ${xs.slice(Math.max(0, i - 5), i + 6).join(',')}`;
    }
  }
  if (xs.length !== last - first + 1) return `${xs.length} messages, expected ${last - first + 1} (${first} to ${last}); the last was ${xs.at(-1)}`;
  return null;
}

module.exports = { seeded, Publisher, runs, notARun };
