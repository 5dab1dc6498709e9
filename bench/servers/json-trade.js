'use strict';
// The JSON shape's payload: a ~620 B market-data trade message, generated
// deterministically per topic and message (a seeded PRNG), shaped like
// bench/results/2026-11-30-deflate-choice's json-trade set (symbol, price, size, side,
// time in µs, trade id, sequence, two order UUIDs, venue, book with depth,
// flags, fees) so that it compresses like a real feed: ~0.6 of its size
// with no context takeover.
//
// The first field is the message's due time, {"ts":<process.hrtime.bigint()
// in decimal>, — what loadgen reads (after inflating) for the latency, as it
// reads the binary shapes' first 8 bytes.

const SYMBOLS = ['BTC-USD', 'ETH-USD', 'SOL-USD', 'XRP-USD', 'ADA-USD', 'DOGE-USD', 'BTC-EUR', 'ETH-EUR', 'AVAX-USD', 'LINK-USD'];
const BASE_PRICE = [43123.51, 2281.45, 98.12, 0.6123, 0.5871, 0.09123, 39880.1, 2104.77, 35.61, 14.92];
const HEX = '0123456789abcdef';
const DAY0_US = Date.UTC(2026, 10, 30, 12) * 1000; // 2026-11-30T12:00:00Z in µs

/** mulberry32: a small, fast, seeded 32-bit PRNG. */
function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { unit: next, int: (n) => Math.floor(next() * n) };
}

function uuid(rnd) {
  let s = '';
  for (let i = 0; i < 36; i++) s += i === 8 || i === 13 || i === 18 || i === 23 ? '-' : HEX[rnd.int(16)];
  return s;
}

function isoMicros(us) {
  const ms = Math.floor(us / 1000);
  return `${new Date(ms).toISOString().slice(0, 19)}.${String(us % 1000000).padStart(6, '0')}Z`;
}

/**
 * A feed for topic number `topic`: next(dueNs) returns the next message as
 * a Buffer (UTF-8 JSON). The same topic and message number always give the
 * same bytes, except the due time in "ts".
 */
function createTradeFeed(topic) {
  const si = topic % SYMBOLS.length;
  const symbol = SYMBOLS[si];
  const base = BASE_PRICE[si];
  const dp = base < 1 ? 5 : 2;
  const tick = base < 1 ? 0.00001 : 0.01;
  const currency = symbol.endsWith('EUR') ? 'EUR' : 'USD';
  const rnd = prng(0x5eed0000 + topic);
  let usec = DAY0_US;
  let tradeId = 512345678 + topic * 1000000;
  let sequence = 71234567890 + topic * 100000000;
  const px = (v) => v.toFixed(dp);
  return {
    next(dueNs) {
      const price = base * (1 + (rnd.unit() - 0.5) * 0.002);
      const size = rnd.unit() * (si === 0 ? 0.5 : 20);
      usec += 1 + rnd.int(20000);
      tradeId += 1 + rnd.int(5);
      sequence += 1 + rnd.int(40);
      const depth = [2, 3, 4].map((k) => `["${px(price - k * tick)}","${(rnd.unit() * 9).toFixed(4)}"]`).join(',');
      const json = `{"ts":${dueNs},"type":"trade","symbol":"${symbol}","price":"${px(price)}","size":"${size.toFixed(8)}",`
        + `"side":"${rnd.int(2) ? 'buy' : 'sell'}","time":"${isoMicros(usec)}","trade_id":${tradeId},"sequence":${sequence},`
        + `"maker_order_id":"${uuid(rnd)}","taker_order_id":"${uuid(rnd)}",`
        + '"venue":{"id":"XSYM","region":"us-east-1"},'
        + `"book":{"best_bid":"${px(price - tick)}","best_ask":"${px(price + tick)}","bid_size":"${(rnd.unit() * 5).toFixed(8)}",`
        + `"ask_size":"${(rnd.unit() * 5).toFixed(8)}","depth":[${depth}]},`
        + `"flags":{"liquidation":${rnd.int(50) === 0},"block":false,"odd_lot":${rnd.int(2) === 1}},`
        + `"fee":{"maker":"-0.0001","taker":"0.0004","currency":"${currency}"}}`;
      return Buffer.from(json, 'latin1');
    },
  };
}

module.exports = { createTradeFeed };
