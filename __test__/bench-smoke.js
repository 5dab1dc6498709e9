'use strict';
// Smoke test of the benchmark runner (bench/runner/run.js): a --quick run of the
// parked and cpu phases with the jemalloc and system arms at tiny
// populations; the TLS arm's parked and handshakes phases; the JSON shape
// with permessage-deflate (symphony's and ws's, loadgen inflating); the bus
// phase (3 processes over a Redis the runner starts: symphony's bus, no bus,
// the ws + redis relay); the publish-heavy phase (N topics x 1 subscriber); the slow
// phase (slow clients under each slowConsumer policy); the presence phase (joins and
// leaves over 3 nodes and one Redis, presence on and off); the sse phase (event streams
// against WebSocket on one symphony server, a node:http hub and better-sse). It checks the shape of what the runner writes (files, table
// rows for both arms, the gates printed), not the numbers. And bench/attack-tokens.js
// (issue 43's token attack) for a second, its JSON's shape.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const RUN_BOUND_S = 150; // the run itself takes ~30-45 s on 2 busy cores

function run(args, seconds) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'bench', 'runner', 'run.js'), ...args], {
      cwd: root, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGINT'), seconds * 1000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

function section(md, title) {
  const start = md.indexOf(`## ${title}`);
  if (start < 0) return null;
  const next = md.indexOf('\n## ', start + 3);
  return md.slice(start, next < 0 ? undefined : next);
}

test('bench/runner/run.js --quick: parked and cpu phases, jemalloc and system arms', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-'));
  try {
    const t0 = Date.now();
    // one cpu shape: the runner's rows and gates per shape are the same code for each
    const r = await run(['--quick', '--repeats', '1', '--phases', 'parked,cpu', '--arms', 'jemalloc,system',
      '--connections', '200', '--settle', '1', '--active', '1', '--cpu-shapes', '256x10', '--cpu-window', '2', '--out', out], RUN_BOUND_S);
    const secs = (Date.now() - t0) / 1000;
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal} after ${secs.toFixed(0)} s\n${r.stderr.slice(-3000)}`);

    // files
    for (const f of ['report.md', 'results.json', 'config.json', 'samples.jsonl', 'server-stats.jsonl', 'events.jsonl', 'run.log',
      'parked-bytes.svg', 'cpu-per-1M.svg']) {
      assert.ok(fs.existsSync(path.join(out, f)), `${f} is missing`);
    }
    for (const f of ['parked-bytes.svg', 'cpu-per-1M.svg']) {
      const svg = fs.readFileSync(path.join(out, f), 'utf8');
      assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      assert.match(svg.trim(), /<\/svg>$/);
      assert.match(svg, /jemalloc/);
      assert.match(svg, /system/);
    }
    const samples = fs.readFileSync(path.join(out, 'samples.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(samples.length > 20, `only ${samples.length} /proc samples`);
    for (const k of ['fpKiB', 'rssKiB', 'cpuS', 'minflt']) assert.equal(typeof samples[0][k], 'number', k);

    // results: every run of both arms, none failed
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const phase of ['parked', 'cpu']) {
      for (const arm of ['jemalloc', 'system']) {
        const runs = res.runs.filter((x) => x.phase === phase && x.arm === arm);
        assert.equal(runs.length, 1, `${phase}/${arm}: ${runs.length} runs`);
        assert.equal(runs[0].error, undefined, `${phase}/${arm} failed: ${runs[0].error}`);
      }
    }
    const allocators = new Set(res.runs.map((x) => `${x.arm}:${x.allocator}`));
    assert.ok(allocators.has('jemalloc:jemalloc') && allocators.has('system:system'), [...allocators].join(', '));

    // the report: tables with a row for each arm, the gates
    const md = fs.readFileSync(path.join(out, 'report.md'), 'utf8');
    const parked = section(md, 'Parked connections');
    const cpu = section(md, 'Fan-out CPU');
    const gates = section(md, 'Gates');
    assert.ok(parked && cpu && gates, 'report sections missing');
    for (const arm of ['jemalloc', 'system']) {
      assert.equal((parked.match(new RegExp(`^\\| ${arm} \\|`, 'gm')) || []).length, 2, `parked tables: rows for ${arm}`);
      assert.equal((cpu.match(new RegExp(`^\\| [^|]+ \\| ${arm} \\|`, 'gm')) || []).length, 1, `cpu table: a row per shape for ${arm}`);
    }
    assert.ok(!section(md, 'Soak: peak ↔ trough cycles'), 'no soak section when the soak did not run');
    const gateLines = gates.split('\n').filter((l) => /^- \*\*(PASS|FAIL|n\/a)\*\* — /.test(l));
    assert.equal(gateLines.length, 6, gates); // 4 + 2 per cpu shape
    assert.ok(gateLines.some((l) => /\*\*n\/a\*\*.*TLS connection/.test(l)), 'the TLS gate is n/a without jemalloc-tls');
    assert.equal(gateLines.filter((l) => /\*\*n\/a\*\*.*soak/.test(l)).length, 2, 'the two soak gates are n/a');
    for (const l of gateLines.filter((x) => /system/.test(x))) assert.match(l, /\*\*(PASS|FAIL)\*\*.*jemalloc .* vs system /, l);
    // and on stderr
    assert.match(r.stderr, /gates:\n(.*(PASS|FAIL|n\/a) .*\n){6}/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/run.js --quick over TLS: parked and handshakes phases, jemalloc-tls arm', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-tls-'));
  try {
    const r = await run(['--quick', '--repeats', '1', '--phases', 'parked,handshakes', '--arms', 'jemalloc-tls',
      '--connections', '200', '--handshakes', '100', '--settle', '1', '--active', '1', '--out', out], RUN_BOUND_S);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(-3000)}`);
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const phase of ['parked', 'handshakes']) {
      const runs = res.runs.filter((x) => x.phase === phase && x.arm === 'jemalloc-tls');
      assert.equal(runs.length, 1, `${phase}: ${runs.length} runs`);
      assert.equal(runs[0].error, undefined, `${phase} failed: ${runs[0].error}`);
    }
    const parked = res.runs.find((x) => x.phase === 'parked').figures;
    assert.equal(parked.n, 200, 'every TLS connection parked');
    assert.equal(parked.failed, 0);
    const hs = res.runs.find((x) => x.phase === 'handshakes').figures.keys;
    assert.deepEqual(hs.map((k) => k.key), ['ecdsa', 'rsa']);
    for (const k of hs) {
      assert.equal(k.connections, 100, `${k.key}: every handshake completed`);
      assert.equal(k.failed, 0);
      assert.ok(k.perCoreS > 0 && Number.isFinite(k.perCoreS), `${k.key}: a rate per core (${k.perCoreS})`);
    }
    const md = fs.readFileSync(path.join(out, 'report.md'), 'utf8');
    const table = section(md, 'TLS handshakes');
    assert.ok(table, 'the handshakes section');
    assert.equal((table.match(/^\| (ECDSA P-256|RSA 2048) \| jemalloc-tls \|/gm) || []).length, 2, table);
    assert.match(section(md, 'Gates (set before collecting)'), /\*\*(PASS|FAIL)\*\* — parked bytes per TLS connection/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/run.js --quick json: the JSON shape with permessage-deflate, jemalloc-deflate and ws-deflate arms', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-json-'));
  try {
    const r = await run(['--quick', '--repeats', '1', '--phases', 'json', '--arms', 'jemalloc-deflate,ws-deflate',
      '--connections', '200', '--settle', '1', '--json-window', '2', '--out', out], RUN_BOUND_S);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(-3000)}`);
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const arm of ['jemalloc-deflate', 'ws-deflate']) {
      const runs = res.runs.filter((x) => x.phase === 'json' && x.arm === arm);
      assert.equal(runs.length, 1, `${arm}: ${runs.length} runs`);
      assert.equal(runs[0].error, undefined, `${arm} failed: ${runs[0].error}`);
      const f = runs[0].figures;
      assert.equal(f.n, 200, `${arm}: every connection open`);
      assert.equal(f.negotiated, 200, `${arm}: every connection negotiated permessage-deflate`);
      assert.equal(f.inflateErrors, 0, `${arm}: every compressed message inflated`);
      assert.equal(f.compressedPct, 100, `${arm}: every ~630 B message came compressed`);
      assert.ok(f.bytesPerMsg > 600 && f.bytesPerMsg < 660, `${arm}: inflated ${f.bytesPerMsg} B/msg`);
      assert.ok(f.wireRatio > 0.5 && f.wireRatio < 0.7, `${arm}: wire ÷ inflated ${f.wireRatio}`);
      for (const k of ['cpuSPer1M', 'p99ms', 'bytesPerConnOverIdle', 'activeBytesPerConnOverIdle']) {
        assert.ok(Number.isFinite(f[k]), `${arm}: ${k} ${f[k]}`);
      }
    }
    for (const f of ['report.md', 'json-wire-bytes.svg', 'json-cpu-per-1M.svg', 'json-bytes-per-conn.svg']) {
      assert.ok(fs.existsSync(path.join(out, f)), `${f} is missing`);
    }
    const md = section(fs.readFileSync(path.join(out, 'report.md'), 'utf8'), 'JSON shape with permessage-deflate');
    assert.ok(md, 'the JSON section');
    for (const arm of ['jemalloc-deflate', 'ws-deflate']) assert.match(md, new RegExp(`^\\| ${arm} \\| ≥ 128 B \\| 200 \\| 200 \\|`, 'm'), md);
    assert.equal((md.match(/^- \*\*(MET|MISSED|n\/a)\*\* — /gm) || []).length, 6, md);
    assert.match(md, /\*\*(MET|MISSED)\*\* — ahead of the peers on CPU per delivered message/);
    assert.match(r.stderr, /targets of the JSON shape \(reported, not gates\):\n(.*(MET|MISSED|n\/a) .*\n){6}/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/run.js --quick bus: 3 processes over one Redis, without it, and the ws + redis relay', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-bus-'));
  try {
    const r = await run(['--quick', '--repeats', '1', '--phases', 'bus', '--arms', 'symphony-bus,symphony-local,ws-redis',
      '--bus-connections', '40', '--bus-window', '2', '--bus-outage', '0.5', '--out', out], RUN_BOUND_S);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(-3000)}`);
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const arm of ['symphony-bus', 'symphony-local', 'ws-redis']) {
      const runs = res.runs.filter((x) => x.phase === 'bus' && x.arm === arm);
      assert.equal(runs.length, 1, `${arm}: ${runs.length} runs`);
      assert.equal(runs[0].error, undefined, `${arm} failed: ${runs[0].error}`);
      const f = runs[0].figures;
      assert.equal(f.connections, 120);
      assert.deepEqual(f.windows.map((w) => w.key), ['full', 'half']);
      for (const w of f.windows) {
        assert.equal(w.open, 120, `${arm} ${w.key}: every connection open`);
        assert.equal(w.dups + w.back, 0, `${arm} ${w.key}: no message twice or out of order`);
        // How much of the window's messages arrived within it is a speed (a
        // peer on a busy machine falls behind): the bench's figure, not a
        // check. The smoke checks that they arrive, and none counted twice.
        assert.ok(w.delivered > 0 && w.deliveredPct < 103, `${arm} ${w.key}: delivered ${w.deliveredPct}%`);
        for (const k of ['cpuSPer1M', 'msgsPerS']) assert.ok(Number.isFinite(w[k]), `${arm} ${w.key}: ${k} ${w[k]}`);
        assert.ok(Number.isFinite(w.same.p99Ms) && Number.isFinite(w.cross.p99Ms), `${arm} ${w.key}: latency`);
        if (arm !== 'symphony-local') assert.ok(Number.isFinite(w.redisCpuS), `${arm} ${w.key}: Redis' CPU`);
      }
      if (arm === 'symphony-local') {
        assert.equal(f.restart, null);
      } else {
        assert.ok(f.restart, `${arm}: the restart step`);
        assert.equal(f.restart.dups + f.restart.back, 0, `${arm}: no message twice through the restart`);
        assert.ok(Number.isFinite(f.restart.resubscribeS), `${arm}: resubscribed (${f.restart.resubscribeS})`);
      }
    }
    for (const f of ['report.md', 'bus-cpu-per-1M.svg', 'bus-p99.svg']) assert.ok(fs.existsSync(path.join(out, f)), `${f} is missing`);
    const md = section(fs.readFileSync(path.join(out, 'report.md'), 'utf8'), 'Past one process');
    assert.ok(md, 'the bus section');
    for (const arm of ['symphony-bus', 'symphony-local', 'ws-redis']) assert.match(md, new RegExp(`^\\| CPU point \\([0-9,]+/s\\) \\| ${arm} \\| 120 \\|`, 'm'), md);
    assert.match(md, /^\| symphony-bus \| [0-9.]+ \| [0-9,]+ \|/m, md);
    assert.match(md, /\*\*PASS\*\* — zero duplicates/);
    assert.match(r.stderr, /PASS 120 connections held across the 3 processes/);
    assert.match(r.stderr, /(PASS|FAIL) bus adds ≤ 10% CPU per delivered message/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/run.js --quick publish: publish-heavy, N topics x 1 subscriber, jemalloc and ws arms', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-publish-'));
  try {
    const r = await run(['--quick', '--repeats', '1', '--phases', 'publish', '--arms', 'jemalloc,ws',
      '--publish-connections', '200', '--publish-rates', '1000,2000', '--publish-window', '2', '--settle', '0.5', '--out', out], RUN_BOUND_S);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(-3000)}`);
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const arm of ['jemalloc', 'ws']) {
      const runs = res.runs.filter((x) => x.phase === 'publish' && x.arm === arm);
      assert.equal(runs.length, 1, `${arm}: ${runs.length} runs`);
      assert.equal(runs[0].error, undefined, `${arm} failed: ${runs[0].error}`);
      const f = runs[0].figures;
      assert.equal(f.connections, 200);
      assert.equal(f.topics, 200);
      assert.deepEqual(f.windows.map((w) => w.rate), [1000, 2000]);
      for (const w of f.windows) {
        assert.equal(w.open, 200, `${arm} ${w.rate}: every connection open`);
        assert.ok(w.deliveredPct > 97 && w.deliveredPct < 103, `${arm} ${w.rate}: delivered ${w.deliveredPct}%`);
        assert.ok(w.publishedPerS > 0.9 * w.rate && w.publishedPerS < 1.1 * w.rate, `${arm} ${w.rate}: published ${w.publishedPerS}/s`);
        for (const k of ['cpuSPer1M', 'p50Ms', 'p99Ms', 'msgsPerS']) assert.ok(Number.isFinite(w[k]), `${arm} ${w.rate}: ${k} ${w[k]}`);
        assert.ok(Number.isFinite(w.drainS), `${arm} ${w.rate}: drained`);
      }
      assert.ok(f.capacity && ['exact', 'atLeast', 'below'].includes(f.capacity.bound), `${arm}: capacity ${JSON.stringify(f.capacity)}`);
    }
    const md = section(fs.readFileSync(path.join(out, 'report.md'), 'utf8'), 'Publish-heavy');
    assert.ok(md, 'the publish section');
    for (const arm of ['jemalloc', 'ws']) assert.match(md, new RegExp(`^\\| \\*\\*2,000\\*\\* \\| ${arm} \\| 1 \\| 200 \\|`, 'm'), md);
    // the three gates, n/a without the uws arm
    assert.equal((md.match(/^- \*\*n\/a\*\* — publish-heavy/gm) || []).length, 3, md);
    assert.match(r.stderr, /n\/a +publish-heavy: due-p99 at 2,000 publishes\/s no worse than uWebSockets.js's/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/run.js --quick slow: slow clients under drop, close and conflate', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-slow-'));
  try {
    const r = await run(['--quick', '--repeats', '1', '--phases', 'slow', '--slow-normal', '50', '--slow-clients', '4',
      '--slow-settle', '2', '--slow-window', '1', '--out', out], RUN_BOUND_S);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(-3000)}`);
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const policy of ['drop', 'close', 'conflate']) {
      const runs = res.runs.filter((x) => x.phase === 'slow' && x.arm === `slow-${policy}`);
      assert.equal(runs.length, 1, `${policy}: ${runs.length} runs`);
      assert.equal(runs[0].error, undefined, `${policy} failed: ${runs[0].error}`);
      const f = runs[0].figures;
      assert.equal(f.policy, policy);
      assert.equal(f.normalOpen, 50);
      assert.equal(f.pairs, 4 * f.topics);
      for (const k of ['normalP99Ms', 'allocatedMaxKiB', 'rssMedianKiB', 'ageP50MsMedian']) assert.ok(Number.isFinite(f[k]), `${policy}: ${k} ${f[k]}`);
      assert.equal(f.normalGaps, 0, `${policy}: the normal clients miss nothing`);
      assert.equal(f.slowBackwards, 0, `${policy}: no topic goes back`);
      if (policy !== 'conflate') assert.equal(f.conflated, 0);
      if (policy === 'conflate') {
        // whatever was conflated, once caught up every (client, topic) holds the topic's last message
        assert.equal(f.dropped, 0);
        assert.equal(f.upToDate, f.pairs, `conflate: ${f.upToDate} of ${f.pairs} up to date`);
      }
    }
    const md = fs.readFileSync(path.join(out, 'slow.md'), 'utf8');
    assert.match(md, /^\| figure \| slow-drop \| slow-close \| slow-conflate \|$/m);
    assert.match(md, /^\| messages replaced \(conflated\) \|/m);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/run.js --quick presence: joins and leaves over 3 nodes and one Redis, presence on and off', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-presence-'));
  try {
    const r = await run(['--quick', '--repeats', '1', '--phases', 'presence', '--presence-connections', '60', '--presence-rooms', '4',
      '--presence-queries', '10', '--presence-hold', '0.5', '--out', out], RUN_BOUND_S);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(-3000)}`);
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const arm of ['sy-presence', 'sy-nopresence']) {
      const runs = res.runs.filter((x) => x.phase === 'presence' && x.arm === arm);
      assert.equal(runs.length, 1, `${arm}: ${runs.length} runs`);
      assert.equal(runs[0].error, undefined, `${arm} failed: ${runs[0].error}`);
      const f = runs[0].figures;
      const on = arm === 'sy-presence';
      assert.equal(f.presence, on);
      assert.equal(f.connections, 60);
      for (const k of ['connectionsPerS', 'nodesCpuUsPer', 'redisCpuUsPer']) assert.ok(Number.isFinite(f.open[k]), `${arm} open: ${k} ${f.open[k]}`);
      assert.ok(Number.isFinite(f.close.closesPerS), `${arm} close: closesPerS ${f.close.closesPerS}`);
      // every node heard all 60 joins (and leaves), none by expiry; Redis kept an entry a connection, then none
      if (on) {
        assert.deepEqual(f.open.joinsHeard, [60, 60, 60]);
        assert.ok(f.open.joinsPerS > 0 && f.close.leavesPerS > 0);
        assert.ok(f.open.scriptCalls > 0 && f.open.presenceBytesPerEntry > 0, `${arm}: scripts ${f.open.scriptCalls}, bytes ${f.open.presenceBytesPerEntry}`);
        assert.equal(f.open.presenceKeys, 4 * 4); // per room: the sorted set and a hash per node
        assert.deepEqual(f.queries.presenceSeq.entries, { min: 15, max: 15 });
        assert.equal(f.queries.presenceSeq.failed, 0);
      } else {
        assert.equal(f.open.joinsHeard, null);
        assert.equal(f.open.scriptCalls, 0);
        assert.equal(f.open.presenceKeys, 0);
      }
      assert.equal(f.close.presenceKeysAfter, 0);
      assert.equal(f.close.expired, 0);
      assert.deepEqual(f.queries.subscribers.counts, { min: 15, max: 15 });
      assert.equal(f.queries.subscribers.failed, 0);
    }
    const md = fs.readFileSync(path.join(out, 'presence.md'), 'utf8');
    assert.match(md, /^\| figure \| sy-presence \| sy-nopresence \|$/m);
    assert.match(md, /^\| connections\/s \| [0-9,]+ \| [0-9,]+ \| [0-9.]+ \|/m);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/run.js --quick sse: event streams against WebSocket, a node:http hub and better-sse', { timeout: (RUN_BOUND_S + 60) * 1000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-sse-'));
  try {
    const r = await run(['--quick', '--repeats', '1', '--phases', 'sse', '--sse-connections', '100', '--sse-memory-connections', '100',
      '--sse-window', '1', '--settle', '1', '--out', out], RUN_BOUND_S);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(-3000)}`);
    const res = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'));
    for (const arm of ['sse-symphony', 'sse-symphony-ws', 'sse-node', 'sse-better']) {
      const runs = res.runs.filter((x) => x.phase === 'sse' && x.arm === arm);
      assert.equal(runs.length, 1, `${arm}: ${runs.length} runs`);
      assert.equal(runs[0].error, undefined, `${arm} failed: ${runs[0].error}`);
      const f = runs[0].figures;
      assert.equal(f.client, arm === 'sse-symphony-ws' ? 'ws' : 'sse');
      assert.equal(f.connections, 100, `${arm}: every connection open in the window`);
      assert.equal(f.failed, 0);
      // every message loadgen got was checked, and nothing the server's publish calls reported was lost
      assert.ok(f.received > 0 && f.checked === f.received, `${arm}: received ${f.received}, checked ${f.checked}`);
      assert.equal(f.lost, 0, `${arm}: lost ${f.lost}`);
      assert.deepEqual([f.gaps, f.dups, f.back, f.badPayloads], [0, 0, 0, 0], `${arm}: gaps, dups, back, bad`);
      assert.ok(Number.isFinite(f.cpuSPer1M) && f.cpuSPer1M > 0, `${arm}: CPU per 1M ${f.cpuSPer1M}`);
      if (arm.startsWith('sse-symphony')) {
        assert.equal(f.memory.n, 100, `${arm}: every connection parked`);
        assert.equal(f.memory.failed, 0);
        assert.equal(f.memory.sseConnections, arm === 'sse-symphony' ? 100 : 0, `${arm}: the server's sseConnections`);
        assert.ok(Number.isFinite(f.memory.bytesPerConnOverIdle), `${arm}: parked bytes ${f.memory.bytesPerConnOverIdle}`);
      } else {
        assert.equal(f.memory, null);
      }
    }
    const md = fs.readFileSync(path.join(out, 'report.md'), 'utf8');
    const sec = section(md, 'sse: event streams (SSE) against WebSocket and Node\'s SSE servers');
    assert.ok(sec, 'the sse section');
    assert.match(sec, /^\| \*\*server CPU-s per 1M delivered\*\* \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$/m);
    assert.match(sec, /^\| SSE ÷ WebSocket, server CPU per delivered message \(symphony\) \| [0-9.]+x \|/m);
    assert.match(sec, /^\| node:http SSE hub ÷ symphony SSE, server CPU per delivered message \| [0-9.]+x \|/m);
    assert.match(sec, /^\| \*\*B\/conn over idle\*\* \| [0-9,]+ \| [0-9,]+ \|$/m);
    for (const f of ['sse-cpu-per-1M.svg', 'sse-parked-bytes.svg']) {
      assert.match(fs.readFileSync(path.join(out, f), 'utf8'), /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/, f);
    }
    assert.match(r.stderr, /sse phase: .*\n.*SSE ÷ WebSocket/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('bench/runner/publish.js: the order of the rate points and the capacity', () => {
  const { nextRate, capacityOf } = require('../bench/runner/publish');
  const c = { sweep: [50, 60, 70, 80, 100], points: [50, 100], refine: 1 };
  const walk = (passAt) => {
    const done = [];
    for (let s = nextRate(c, done); s && done.length < 20; s = nextRate(c, done)) done.push({ ...s, pass: passAt(s.rate) });
    return done;
  };
  // fails from 70 on: 50, 60, 70, then one bisection (65), then the named point 100
  let done = walk((r) => r < 66);
  assert.deepEqual(done.map((w) => `${w.rate}:${w.kind}`), ['50:sweep', '60:sweep', '70:sweep', '65:refine', '100:point-only']);
  assert.deepEqual(capacityOf(done), { rate: 65, bound: 'exact', failedAt: 70 });
  done = walk(() => true);
  assert.deepEqual(done.map((w) => w.rate), [50, 60, 70, 80, 100]);
  assert.deepEqual(capacityOf(done), { rate: 100, bound: 'atLeast' });
  done = walk(() => false);
  assert.deepEqual(done.map((w) => `${w.rate}:${w.kind}`), ['50:sweep', '100:point-only']);
  assert.deepEqual(capacityOf(done), { rate: 50, bound: 'below' });
});

test('bench/runner/util.js: results folders are named YYYY-MM-DD-<what>', () => {
  const { resultsName, freeDir } = require('../bench/runner/util');
  const d = new Date('2026-12-01T23:59:59Z');
  const defaults = ['parked', 'soak', 'cpu', 'handshakes', 'json'];
  const name = (o) => resultsName({ defaultPhases: defaults, preset: 'default', repeats: 3, ...o }, d);
  assert.equal(name({ phases: defaults.slice() }), '2026-12-01-default-3x');
  assert.equal(name({ phases: ['cpu', 'publish'], preset: 'quick', repeats: 1 }), '2026-12-01-cpu-publish-quick-1x');
  assert.equal(name({ phases: ['json', 'cpu'], name: 'issue14' }), '2026-12-01-issue14');
  assert.throws(() => name({ phases: ['cpu'], name: 'Issue 14' }), /--name must be/);
  assert.throws(() => name({ phases: ['cpu'], name: '../x' }), /--name must be/);
  // every folder kept in the repository follows the convention
  const kept = fs.readdirSync(path.join(root, 'bench', 'results'), { withFileTypes: true }).filter((e) => e.isDirectory() && e.name !== 'tmp').map((e) => e.name); // tmp: .gitignore's scratch folder
  assert.ok(kept.length > 0);
  for (const f of kept) assert.match(f, /^\d{4}-\d{2}-\d{2}-[a-z0-9]+(?:[.-][a-z0-9]+)*$/, `bench/results/${f}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-'));
  try {
    assert.equal(freeDir(dir, '2026-12-01-x'), path.join(dir, '2026-12-01-x'));
    fs.mkdirSync(path.join(dir, '2026-12-01-x'));
    fs.mkdirSync(path.join(dir, '2026-12-01-x-2'));
    assert.equal(freeDir(dir, '2026-12-01-x'), path.join(dir, '2026-12-01-x-3'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bench --baseline: the twin arms, their checkout, the build check', () => {
  const { selectArms, baselineCheckout, wrongBuild } = require('../bench/runner/arms');
  const base = baselineCheckout(root); // this checkout as its own baseline: no second build needed
  const names = (l) => selectArms(l, [], base).arms.map((a) => a.name);
  assert.deepEqual(names(null), ['jemalloc', 'base-jemalloc', 'system', 'system-arena2', 'ws', 'jemalloc-tls', 'base-jemalloc-tls', 'ws-tls',
    'jemalloc-deflate', 'ws-deflate', 'ws-deflate-defaults', 'symphony-bus', 'symphony-bus-history', 'symphony-local', 'ws-redis',
    'sy-history', 'sy-nohistory', 'sy-history-peer', 'socketio', 'slow-drop', 'slow-close', 'slow-conflate', 'sy-presence', 'sy-nopresence']);
  assert.deepEqual(selectArms(null, [], base).notes, ['arm uws left out: no --uws-path', 'arm uws-deflate left out: no --uws-path',
    'arm uws-redis left out: no --uws-path']);
  assert.throws(() => selectArms(['uws'], [], null), /needs --uws-path/);
  assert.deepEqual(names(['jemalloc', 'system']), ['jemalloc', 'base-jemalloc', 'system']);
  assert.deepEqual(names(['jemalloc-tls', 'base-jemalloc-tls']), ['jemalloc-tls', 'base-jemalloc-tls']);
  assert.throws(() => selectArms(['base-jemalloc'], [], null), /needs --baseline/);
  const [cur, twin] = selectArms(['jemalloc'], [], base).arms;
  assert.deepEqual(twin.env, { ...cur.env, BENCH_SYMPHONY_ROOT: base.dir });
  assert.equal(twin.script, cur.script);
  const native = (dir) => ({ native: path.join(dir, 'native', 'linux-x64', 'symphony.glibc.jemalloc-4k.node'), allocator: 'jemalloc' });
  assert.equal(wrongBuild(twin, native(base.dir)), null);
  assert.match(wrongBuild(twin, native('/elsewhere')), /expected a build under/);
  assert.match(wrongBuild(twin, { ...native(base.dir), allocator: 'system' }), /allocator system, expected jemalloc/);
  assert.match(wrongBuild(twin, null), /did not say/);
});

test('bench/runner/run.js refuses bad options and --full beyond the open-file limit', async () => {
  const bad = await run(['--phases', 'nope'], 20);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--phases: unknown nope/);
  const noBase = await run(['--baseline', path.join(os.tmpdir(), 'no-such-symphony-checkout')], 20);
  assert.equal(noBase.code, 2);
  assert.match(noBase.stderr, /--baseline .*: no such folder/);
  const help = await run(['--help'], 20);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--quick/);
  const soft = Number((/^Max open files\s+(\S+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8')) || [])[1]);
  if (soft < 100000) {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-bench-'));
    try {
      const full = await run(['--full', '--phases', 'parked', '--arms', 'jemalloc', '--out', out], 60);
      assert.equal(full.code, 2);
      assert.match(full.stderr, /--full needs 100,000 connections in one server process, but its open-file limit allows/);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  }
});

test('bench/attack-tokens.js: a short attack of each kind, the shape of what it prints (not the numbers)', { timeout: 120 * 1000 }, async () => {
  const child = spawn(process.execPath, [path.join(root, 'bench', 'attack-tokens.js'), '--seconds', '1', '--after', '1',
    '--attackers', '1', '--bystanders', '1', '--entries', '64', '--json'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, stderr);
  const results = JSON.parse(stdout);
  assert.deepEqual(results.map((r) => r.scenario), ['eddsa', 'es256']);
  for (const r of results) {
    assert.ok(r.bystanders.messages > 0, 'the bystander got publishes');
    assert.equal(typeof r.bystanders.maxMs, 'number');
    assert.ok(r.attack.entries > 0 && r.attack.connects >= 1);
    for (const k of ['tokenChecks', 'tokenRefused', 'workRefused', 'workCloses']) assert.equal(typeof r.stats[k], 'number', k);
    assert.ok(r.stats.tokenChecks > 0, 'bad tokens were checked');
  }
});
