'use strict';
// The arms: which server, which build, which environment.

const fs = require('node:fs');
const path = require('node:path');

const BENCH = path.join(__dirname, '..');
const FANOUT = path.join(BENCH, 'fanout-server.js');
const WS = path.join(BENCH, 'ws-server.js');
const NATIVE = path.join(BENCH, '..', 'native', `linux-${process.arch}`);

const BUILTIN = {
  jemalloc: {
    name: 'jemalloc',
    what: 'default build (private jemalloc)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    soak: true,
  },
  system: {
    name: 'system',
    what: 'system-allocator build (glibc malloc)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'system' },
    allocator: 'system',
    soak: true,
  },
  'system-arena2': {
    name: 'system-arena2',
    what: 'system-allocator build, MALLOC_ARENA_MAX=2',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'system', MALLOC_ARENA_MAX: '2' },
    allocator: 'system',
    soak: true,
  },
  'jemalloc-tls': {
    name: 'jemalloc-tls',
    what: 'default build over wss:// (private OpenSSL 3.5, ECDSA P-256)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc', BENCH_TLS: 'ecdsa' },
    allocator: 'jemalloc',
    tls: true,
    soak: false,
  },
  'ws-tls': {
    name: 'ws-tls',
    what: 'the ws server over wss:// (Node\'s https, its OpenSSL; peer)',
    script: WS,
    gate: 'ws',
    env: { BENCH_TLS: 'ecdsa' },
    allocator: null,
    tls: true,
    soak: false,
  },
  ws: {
    name: 'ws',
    what: 'the same server on the ws package (peer)',
    script: WS,
    gate: 'ws',
    env: {},
    allocator: null,
    soak: false, // parked and cpu phases only
  },
};

const DEFAULT_ARMS = ['jemalloc', 'system', 'system-arena2', 'ws', 'jemalloc-tls', 'ws-tls'];

/** "NAME=K=V,K2=V2" -> an arm: the default build plus that environment. */
function parseArmEnv(spec) {
  const m = /^([A-Za-z0-9_.-]+)=(.+)$/.exec(spec);
  if (!m) throw new Error(`--arm-env wants NAME=K=V[,K=V...] (got ${spec})`);
  const [, name, rest] = m;
  if (BUILTIN[name]) throw new Error(`--arm-env: ${name} is a built-in arm's name`);
  const env = {};
  // Values may hold commas (jemalloc's conf does): a piece without '=' that
  // follows a pair belongs to the previous value.
  let last = null;
  for (const piece of rest.split(',')) {
    const eq = piece.indexOf('=');
    if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(piece.slice(0, eq))) {
      last = piece.slice(0, eq);
      env[last] = piece.slice(eq + 1);
    } else if (last) {
      env[last] += `,${piece}`;
    } else {
      throw new Error(`--arm-env ${name}: "${piece}" is not K=V`);
    }
  }
  return {
    name,
    what: `default build + ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}`,
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc', ...env },
    allocator: 'jemalloc',
    soak: true,
  };
}

/**
 * The arms to run: names from --arms (default: all built-ins) plus every
 * --arm-env. Returns { arms, notes } where notes say what was left out and
 * why (nothing is skipped silently).
 */
function selectArms(names, armEnvs) {
  const notes = [];
  const extra = armEnvs.map(parseArmEnv);
  const explicit = names !== null;
  const list = explicit ? names : DEFAULT_ARMS.slice();
  const arms = [];
  for (const n of list) {
    const arm = BUILTIN[n] || extra.find((a) => a.name === n);
    if (!arm) throw new Error(`unknown arm ${n} (built-in: ${Object.keys(BUILTIN).join(', ')}; or define it with --arm-env)`);
    if (!fs.existsSync(arm.script)) {
      const why = `${path.relative(path.join(BENCH, '..'), arm.script)} does not exist`;
      if (explicit) throw new Error(`arm ${n}: ${why}`);
      notes.push(`arm ${n} left out: ${why}`);
      continue;
    }
    arms.push(arm);
  }
  for (const a of extra) if (!arms.includes(a)) arms.push(a);
  let files = [];
  try {
    files = fs.readdirSync(NATIVE);
  } catch {
    // reported below, arm by arm
  }
  for (const a of arms) {
    if (a.allocator && !files.some((f) => f.startsWith(`symphony.glibc.${a.allocator}`) && f.endsWith('.node'))) {
      throw new Error(`arm ${a.name}: no ${a.allocator} build in ${path.relative(path.join(BENCH, '..'), NATIVE)} (npm run build)`);
    }
  }
  if (arms.length === 0) throw new Error('no arm to run');
  return { arms, notes };
}

/** The order of the runs of one phase: [{ arm, repeat }], interleaved
 * (A B C A B C ...) unless fixedOrder (A A A B B B ...). */
function order(arms, repeats, fixedOrder) {
  const runs = [];
  if (fixedOrder) {
    for (const arm of arms) for (let r = 1; r <= repeats; r++) runs.push({ arm, repeat: r });
  } else {
    for (let r = 1; r <= repeats; r++) for (const arm of arms) runs.push({ arm, repeat: r });
  }
  return runs;
}

module.exports = { BUILTIN, DEFAULT_ARMS, selectArms, order, parseArmEnv };
