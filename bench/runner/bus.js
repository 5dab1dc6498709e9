'use strict';
// The bus phase (issue 12): several server processes on this one machine as
// one fan-out over one Redis, against the same processes each publishing on
// its own (no bus), and against the hand-built ws + redis relay. See
// bench/README.md, "bus".
//
// One run = one arm, one repeat, from fresh processes to their exit:
//  1. Redis (bus arms only): redis-server on a free port of 127.0.0.1,
//     persistence off (bench/runner/redis.js);
//  2. `nodes` server processes, publishing nothing yet (rate 0), each
//     --seq 1 (a per-topic sequence number in every message) and --stagger 1
//     (the topics take turns: one publish every 1 / (rate * topics) s, not
//     a round of every topic at once), the bus arms with --bus-url; the
//     runner waits until every node says its bus is up;
//  3. `connections` per node, one loadgen (or more: sharded) per node,
//     ramped together; connection n of a node subscribes topic n % topics,
//     so every topic has subscribers on every node; the bus arms then wait
//     until Redis counts every topic's channel subscribed by every node;
//  4. for each rate point (the CPU point: `rate` deliveries/s in total; the
//     latency point: half of it): the publishers get "ctl rate R" (R per
//     topic = deliveries ÷ connections, so every connection receives R
//     msg/s in every arm) — node 0 alone with a bus, every node for itself
//     in symphony-local; after `settle` s a window of `window` s, its edges
//     (midway between two publishes of node 0) marked in every loadgen (SIGUSR1: latency and sequence counts of
//     exactly the window) and every server ("ctl mark": what it published);
//  5. the bus arms, at the latency point: Redis is killed (-9), started
//     again `outage` s later on the same port, and the runner polls PUBSUB
//     NUMSUB/SHARDNUMSUB every 10 ms until every channel is subscribed by
//     every node again; the loadgens' marks say when deliveries to nodes
//     1.. resumed and whether any message came twice;
//  6. everything stopped by PID (loadgens, servers, Redis).
//
// The history arm (symphony-bus-history, issue 24): the servers get
// --history-size/--history-ttl (every topic has history: Redis numbers each
// publish, every node delivers what Redis brings back), Redis keeps an AOF.
// The loadgens' clients do not ask for symphony.v1, so they see the payloads
// (and their sequence numbers) as in the other arms. At the restart, what a
// client of nodes 1.. could not get is counted from Redis itself: a message
// node 0 published while its bus was down is delivered to node 0's clients
// only (a node-local epoch) and never reaches Redis' stream; so after the
// restart the runner reads every topic's stream (XRANGE) and counts, per
// topic, the sequence numbers published over the restart that are not in
// it. missed = the gaps of nodes 1..'s clients - (those messages x each
// node's subscribers of the topic): a message that Redis kept and a client
// did not get.

const { ServerProc, Loadgen } = require('./procs');
const { wrongBuild } = require('./arms');
const { Sampler } = require('./sample');
const { RedisProc, RespClient, subscriberCounts } = require('./redis');
const { now, sleep, finite, nowToMono } = require('./util');
const hist = require('./hist');

const SETTLE_TIMEOUT_MIN = 30;
const rampBound = (n, r) => SETTLE_TIMEOUT_MIN + (r > 0 ? 3 * n / r : 0);
const range = (n) => Array.from({ length: n }, (_, i) => i);

/** Polls until every channel has at least `want` subscribers (Redis' own
 * count); resolves with the runner time, or null after `bound` s. */
async function waitSubscribed(port, channels, want, bound, every = 0.01) {
  const t1 = now() + bound;
  let client = null;
  try {
    while (now() < t1) {
      try {
        if (!client || client.closed) client = await RespClient.connect(port, 1);
        const counts = await subscriberCounts(client, channels);
        if (counts.every((n) => n >= want)) return { t: now(), counts };
      } catch {
        // Redis not answering yet
      }
      await sleep(every);
    }
    return null;
  } finally {
    if (client) client.close();
  }
}

/**
 * The history arm's restart, counted against Redis' own streams: for each
 * topic, node 0's sequence numbers published from mark m0 to m2 (seq0, seq2:
 * its last per topic; from the last one before m0 that the stream holds) and
 * how many of them Redis' stream holds. A message
 * that is not there (node 0 published it while its bus was down) cannot
 * reach nodes 1..; each of their subscribers of the topic counts it as a gap.
 */
async function historyAccount(redis, c, perNode, seq0, seq2, fOut, fAfter) {
  if (!Array.isArray(seq0) || !Array.isArray(seq2)) return { error: 'node 0 gave no sequence numbers' };
  const client = await RespClient.connect(redis.port, 2);
  client.raw = true;
  const published = [];
  const inStream = [];
  try {
    for (let g = 0; g < c.topics; g++) {
      const entries = await client.command(['XRANGE', `{symphony:t${g}}:stream`, '-', '+'], 10);
      // field m: the node's 18-byte envelope (0xF5 ...), then the payload: due time, sequence number
      const seqs = (entries || []).map(([, fields]) => {
        const m = fields[1];
        const p = m[0] === 0xf5 ? 18 : 0;
        return m.length >= p + 16 ? Number(m.readBigUInt64LE(p + 8)) : 0;
      });
      // from the last message before m0 that Redis holds: a publish in flight at m0 that never
      // reached Redis (the kill follows m0) is in the interval's gaps, so it is counted here too
      const lo = seqs.reduce((a, sq) => (sq <= seq0[g] && sq > a ? sq : a), 0);
      const n = seqs.filter((sq) => sq > lo && sq <= seq2[g]).length;
      published.push(seq2[g] - lo);
      inStream.push(n);
    }
  } finally {
    client.close();
  }
  const subsOf = (g) => Math.floor((perNode - g - 1) / c.topics) + 1; // connection n subscribes topic n % topics
  const notInRedis = published.map((n, g) => n - inStream[g]);
  const undeliverable = notInRedis.reduce((a, n, g) => a + n * subsOf(g), 0); // per node 1..
  const gaps = fOut.map((x, k) => x.gaps + fAfter[k].gaps);
  const missedByNode = gaps.map((x, k) => (k === 0 ? x : x - undeliverable));
  return {
    published: published.reduce((a, b) => a + b, 0),
    inRedis: inStream.reduce((a, b) => a + b, 0),
    notInRedis: notInRedis.reduce((a, b) => a + b, 0),
    undeliverablePerNode: undeliverable,
    gapsByNode: gaps,
    missedByNode,
    missed: missedByNode.reduce((a, b) => a + b, 0),
  };
}

async function bus(ctx, arm, repeat) {
  const c = ctx.cfg.bus;
  const nodes = c.nodes;
  const perNode = c.connections;
  const total = nodes * perNode;
  const withBus = !!arm.bus;
  const publishers = withBus ? [0] : range(nodes);
  const source = (k) => (withBus ? 0 : k); // whose publishes node k's clients receive
  const channels = range(c.topics).map((g) => `symphony:t${g}`);
  const info = (part) => ({ phase: 'bus', arm: arm.name, repeat, part });
  const notes = [];
  const redisLog = [];
  const points = [{ key: 'full', deliveries: c.rate }, { key: 'half', deliveries: c.rate / 2 }];
  const restartS = withBus && c.outage > 0 ? c.outage + c.resubBound + c.afterRestart + 20 : 0;
  const bound = Math.ceil(c.upBound + rampBound(perNode, c.ramp) + c.upBound + c.parked
    + points.length * (c.settle + c.window + 10) + restartS + 60);

  let redis = null;
  let redisSampler = null;
  const servers = [];
  const samplers = [];
  const lgs = [];
  const mark = (step, extra = {}) => {
    ctx.status.step = step;
    ctx.rec.event(info('runner'), { ev: 'mark', step, t: now(), ...extra });
    ctx.progress(true);
  };
  let marks = 0; // marks sent to the loadgens so far
  /** Closes an interval everywhere: SIGUSR1 to every loadgen, "ctl mark"
   * to every server. */
  async function markAll() {
    const t = now();
    for (const lg of lgs) lg.mark();
    const k = marks++;
    const ctl = await Promise.all(servers.map((s) => s.control('mark')));
    return { t, k, ctl };
  }
  const busOf = (r) => (r && r.bus) || {};
  const delta = (a, b, f) => (finite(f(b)) && finite(f(a)) ? f(b) - f(a) : null);

  let out;
  let error = null;
  try {
    if (withBus) {
      mark('redis');
      redis = await RedisProc.start({ bin: c.redisServer, cpus: ctx.cpus.server, log: redisLog, aof: arm.aof || null });
      ctx.live.add(redis);
      const r0 = { pid: redis.pid, t0: now() };
      redisSampler = new Sampler(redis.pid, { hz: ctx.cfg.sampleHz, onSample: (s) => ctx.rec.sample(info('redis'), r0, s) });
    }
    mark(`${nodes} servers`);
    for (const k of range(nodes)) {
      // kept before it is ready, so that one which never says its port is stopped too
      const s = new ServerProc({
        arm, threads: c.threads, topics: c.topics, size: c.size, rate: 0, duration: bound, statsInterval: 1,
        cpus: ctx.cpus.server, traffic: 'on', gate: 'none',
        extraArgs: ['--seq', '1', '--stagger', '1', ...(withBus ? ['--bus-url', redis.url] : []),
          ...(arm.history ? ['--history-size', String(arm.history.size), '--history-ttl', String(arm.history.ttl)] : [])],
      });
      servers.push(s);
      ctx.live.add(s);
      await s.ready;
      const wrong = wrongBuild(arm, s.loaded);
      if (wrong) throw new Error(wrong);
      samplers.push(new Sampler(s.pid, { hz: ctx.cfg.sampleHz, onSample: (x) => {
        if (k === 0) ctx.status.fpKiB = x.fpKiB;
        ctx.rec.sample(info(`node${k}`), s, x);
      } }));
    }
    // Every node's bus up (its own word for it).
    let busUpS = null;
    if (withBus) {
      const t0 = now();
      for (;;) {
        const st = await Promise.all(servers.map((s) => s.control('mark')));
        if (st.every((r) => busOf(r).state === 'up')) break;
        if (now() - t0 > c.upBound) {
          throw new Error(`the nodes' bus not up within ${c.upBound} s (states: ${st.map((r) => busOf(r).state || 'none').join(', ')})`);
        }
        await sleep(0.05);
      }
      busUpS = now() - t0;
    }

    mark(`ramp: ${nodes} × ${perNode} connections`);
    const tRamp = now();
    for (const k of range(nodes)) {
      const lg = new Loadgen({
        port: servers[k].port, connections: perNode, rampPerSec: c.ramp, duration: bound, sources: ctx.cfg.sources,
        shardMax: ctx.cfg.shardMax, cpus: ctx.cpus.loadgen, serverPid: servers[k].pid, maxPending: ctx.cfg.maxPending,
        seq: true, closeWait: 5,
      });
      lgs.push(lg);
      for (const s of lg.shards) ctx.live.add(s);
    }
    await Promise.all(lgs.map((lg) => lg.waitSettled(rampBound(perNode, c.ramp))));
    const rampS = now() - tRamp;
    const opened = lgs.map((lg) => lg.openNow());
    if (opened.some((n) => n < perNode)) {
      throw new Error(`ramp: ${opened.join(' + ')} of ${nodes} × ${perNode} connections open`);
    }
    let subscribedS = null;
    if (withBus) {
      const r = await waitSubscribed(redis.port, channels, nodes, c.upBound, 0.05);
      if (!r) throw new Error(`Redis does not count every topic's channel subscribed by ${nodes} nodes within ${c.upBound} s after the ramp`);
      subscribedS = r.t - tRamp;
    }
    await sleep(c.parked);

    // The rate points.
    const windows = [];
    let rate = 0;
    for (const p of points) {
      rate = p.deliveries / total;
      mark(`${p.key}: ${Math.round(p.deliveries)} deliveries/s (${rate.toFixed(3)} msg/s per topic, ${publishers.length} publisher(s))`);
      // Every publisher's schedule starts at the same instant (0.2 s from
      // now), so symphony-local's publishers publish together as the nodes
      // of a bus fan out together.
      const start = now() + 0.2;
      for (const k of publishers) await servers[k].control('rate', [String(rate), String(nowToMono(start))]);
      const bases = [start];
      // The window's edges fall midway between two publishes of node 0's
      // schedule (the topics take turns: message m is due at base + (m + 1)
      // / (rate * topics)), so that the fewest messages are in flight at an
      // edge and the publishers' count and the clients' agree (unless the
      // period is too long for the window: then plain times).
      const period = 1 / (rate * c.topics);
      const aligned = period <= c.window / 4;
      const edge = (t) => (aligned ? bases[0] + (Math.ceil((t - bases[0]) / period - 0.5) + 0.5) * period : t);
      const sleepUntil = (t) => sleep(Math.max(0, t - now()));
      await sleepUntil(edge(now() + c.settle));
      const w0 = await markAll();
      await sleepUntil(edge(w0.t + c.window));
      const w1 = await markAll();
      const f = await Promise.all(lgs.map((lg) => lg.markFigures(w1.k)));
      if (f.some((x) => !x)) throw new Error(`${p.key}: a loadgen gave no mark for the window`);
      const T = w1.t - w0.t;
      const published = range(nodes).map((k) => delta(w0.ctl[k], w1.ctl[k], (r) => r.published));
      const expectedBy = range(nodes).map((k) => (f[k].open * published[source(k)]) / c.topics);
      const expected = expectedBy.reduce((a, b) => a + b, 0);
      const delivered = f.reduce((a, x) => a + x.msgs, 0);
      const serverCpu = samplers.map((smp) => smp.delta('cpuS', w0.t, w1.t));
      const cpuS = serverCpu.every(finite) ? serverCpu.reduce((a, b) => a + b, 0) : null;
      const redisCpuS = redisSampler ? redisSampler.delta('cpuS', w0.t, w1.t) : null;
      const cross = f.slice(1);
      // nodes 1..'s clients as one distribution (their loadgens' histograms
      // pooled); the worst node's figure without histograms
      const crossHist = cross.every((x) => x.hists) ? hist.pool(cross.flatMap((x) => x.hists)) : null;
      const worst = (list, key, p) => {
        if (crossHist) return hist.percentileMs(crossHist, p);
        const v = list.map((x) => x[key]).filter(finite);
        return v.length ? Math.max(...v) : null;
      };
      const per1M = (x) => (finite(x) && delivered > 0 ? (x / delivered) * 1e6 : null);
      windows.push({
        key: p.key,
        deliveriesTarget: p.deliveries,
        ratePerTopic: rate,
        seconds: T,
        alignedToPublishes: aligned,
        open: f.reduce((a, x) => a + x.open, 0),
        serverConnections: w1.ctl.reduce((a, r) => a + (finite(r.connections) ? r.connections : 0), 0),
        published: published.reduce((a, b) => a + (finite(b) ? b : 0), 0),
        delivered,
        expected,
        msgsPerS: delivered / T,
        deliveredPct: expected > 0 ? (100 * delivered) / expected : null,
        dups: f.reduce((a, x) => a + x.dups, 0),
        back: f.reduce((a, x) => a + x.back, 0),
        gaps: f.reduce((a, x) => a + x.gaps, 0),
        same: { p50Ms: f[0].p50Ms, p99Ms: f[0].p99Ms, p999Ms: f[0].p999Ms, maxMs: f[0].maxMs },
        cross: cross.length ? { p50Ms: worst(cross, 'p50Ms', 50), p99Ms: worst(cross, 'p99Ms', 99), p999Ms: worst(cross, 'p999Ms', 99.9),
          maxMs: worst(cross, 'maxMs', 100), pooled: !!crossHist } : null,
        serverCpuS: cpuS,
        serverCores: finite(cpuS) ? cpuS / T : null,
        cpuSPer1M: per1M(cpuS),
        redisCpuS,
        redisCores: finite(redisCpuS) ? redisCpuS / T : null,
        redisCpuSPer1M: per1M(redisCpuS),
        // Redis' CPU per message node 0 sent it (a script call with history, an SPUBLISH without)
        redisCpuUsPerPublish: finite(redisCpuS) && delta(w0.ctl[0], w1.ctl[0], (x) => busOf(x).published) > 0
          ? (redisCpuS / delta(w0.ctl[0], w1.ctl[0], (x) => busOf(x).published)) * 1e6 : null,
        cpuSPer1MWithRedis: per1M(finite(cpuS) ? cpuS + (finite(redisCpuS) ? redisCpuS : 0) : null),
        loadgenCores: f.reduce((a, x) => a + x.cpu, 0) / T,
        busReceived: w1.ctl.map((r, k) => delta(w0.ctl[k], r, (x) => busOf(x).received)),
        busPublished: delta(w0.ctl[0], w1.ctl[0], (x) => busOf(x).published),
        perNode: f.map((x, k) => ({ open: x.open, msgs: x.msgs, expected: expectedBy[k], p50Ms: x.p50Ms, p99Ms: x.p99Ms,
          p999Ms: x.p999Ms, cpuS: serverCpu[k], dups: x.dups, back: x.back, gaps: x.gaps })),
      });
    }

    // Redis killed and started again (bus arms).
    let restart = null;
    if (withBus && c.outage > 0) {
      mark(`restart: kill -9 Redis, ${c.outage} s down, same port again`);
      const m0 = await markAll();
      const tKill = now();
      await redis.kill9();
      redisSampler.stop();
      await sleep(c.outage);
      let tBack;
      try {
        tBack = await redis.restart();
      } catch (err) {
        throw new Error(`restart: ${err.message}`);
      }
      const m1 = await markAll(); // the outage's interval ends as Redis answers again
      const r0 = { pid: redis.pid, t0: now() };
      redisSampler = new Sampler(redis.pid, { hz: ctx.cfg.sampleHz, onSample: (s) => ctx.rec.sample(info('redis'), r0, s) });
      const sub = await waitSubscribed(redis.port, channels, nodes, c.resubBound);
      await sleep(Math.max(0, tBack + c.afterRestart - now()));
      const m2 = await markAll();
      const [fOut, fAfter] = await Promise.all([
        Promise.all(lgs.map((lg) => lg.markFigures(m1.k))),
        Promise.all(lgs.map((lg) => lg.markFigures(m2.k))),
      ]);
      if (fOut.some((x) => !x) || fAfter.some((x) => !x)) throw new Error('restart: a loadgen gave no mark');
      const resumedBy = fAfter.map((x) => (finite(x.firstT) ? x.firstT - tBack : null));
      const crossResumed = resumedBy.slice(1);
      const firstAfter = (s, ev) => {
        const e = s.busEvents.find((x) => x.busEvent === ev && x.at >= tBack - 0.001);
        return e ? e.at - tBack : null;
      };
      const downSeen = servers.map((s) => s.busEvents.some((x) => x.busEvent === 'down' && x.at >= tKill - 0.001));
      const ups = servers.map((s) => firstAfter(s, 'up'));
      const sum = (list, k) => list.reduce((a, x) => a + x[k], 0);
      const counter = (name) => m2.ctl.map((r, k) => delta(m0.ctl[k], r, (x) => busOf(x)[name]));
      const accounted = arm.history ? await historyAccount(redis, c, perNode, m0.ctl[0].seq, m2.ctl[0].seq, fOut, fAfter) : null;
      restart = {
        outageS: tBack - tKill,
        resubscribeS: sub ? sub.t - tBack : null,
        resubscribedWithin: c.resubBound,
        resumedS: crossResumed.every(finite) ? Math.max(...crossResumed) : null,
        resumedByNode: resumedBy,
        busUpS: ups.every(finite) ? Math.max(...ups) : null,
        busUpByNode: ups,
        downSeen,
        // during the outage (kill to Redis answering again) and the
        // `afterRestart` s after it
        outageDelivered: fOut.map((x) => x.msgs),
        afterDelivered: fAfter.map((x) => x.msgs),
        dups: sum(fOut, 'dups') + sum(fAfter, 'dups'),
        back: sum(fOut, 'back') + sum(fAfter, 'back'),
        gaps: sum(fOut, 'gaps') + sum(fAfter, 'gaps'),
        busDropped: m2.ctl.map((r, k) => delta(m0.ctl[k], r, (x) => busOf(x).dropped)),
        busReconnects: m2.ctl.map((r, k) => delta(m0.ctl[k], r, (x) => busOf(x).reconnects)),
        afterP99Ms: Math.max(...fAfter.map((x) => (finite(x.p99Ms) ? x.p99Ms : 0))),
        afterMaxMs: Math.max(...fAfter.map((x) => (finite(x.maxMs) ? x.maxMs : 0))),
        gapsByNode: fOut.map((x, k) => x.gaps + fAfter[k].gaps),
        busSyncs: counter('syncs'),
        busFilled: counter('filled'),
        busRenewals: counter('renewals'),
        busLate: counter('late'),
        history: accounted,
      };
      if (!sub) notes.push(`restart: not every channel subscribed by ${nodes} nodes within ${c.resubBound} s of Redis answering again`);
    }
    for (const k of publishers) await servers[k].control('rate', ['0']);
    const sums = lgs.flatMap((lg) => lg.summaries());
    out = {
      figures: {
        nodes,
        perNode,
        topics: c.topics,
        size: c.size,
        connections: total,
        publishers: publishers.length,
        pin: { server: ctx.cpus.server || null, loadgen: ctx.cpus.loadgen || null },
        busUpS,
        rampS,
        subscribedS,
        heldMin: Math.min(...windows.map((w) => w.open)),
        windows,
        restart,
        failed: sums.reduce((n, s) => n + (s ? s.connections.failed : 0), 0),
      },
    };
  } catch (err) {
    error = err;
  }

  // Tear down: loadgens, servers, Redis; every record kept.
  const summaries = [];
  for (const lg of lgs) summaries.push(...await lg.stop(20));
  const finals = [];
  for (const s of servers) finals.push(await s.stop(30));
  for (const smp of samplers) {
    smp.take();
    smp.stop();
  }
  if (redisSampler) redisSampler.stop();
  if (redis) await redis.stop();
  for (const p of [...servers, ...lgs.flatMap((lg) => lg.shards), redis]) if (p) ctx.live.delete(p);
  for (const [k, s] of servers.entries()) {
    for (const st of s.stats) ctx.rec.stat(info(`node${k}`), s, st);
    ctx.rec.event(info(`node${k}`), { ev: 'server-final', pid: s.pid, final: finals[k], exit: s.exitInfo, odd: s.odd, busEvents: s.busEvents });
    for (const l of s.odd) notes.push(`node ${k}: ${l}`);
    if (s.exitInfo && s.exitInfo.code !== 0 && s.exitInfo.signal !== 'SIGTERM') notes.push(`node ${k} exit: ${s.exitInfo.code ?? s.exitInfo.signal}`);
    const f = finals[k];
    if (f && f.skipped) notes.push(`node ${k}: ${f.skipped} messages skipped after publishing stalls > 1 s`);
    if (k === 0 && f && f.ws) notes.push(`ws ${f.ws.version}, bufferutil ${f.ws.bufferutil}, redis client ${f.ws.redis}`);
    if (k === 0 && f && f.uws) notes.push(`uWebSockets.js from ${f.uws.path}, redis client ${f.uws.redis}`);
  }
  for (const [k, lg] of lgs.entries()) {
    for (const s of lg.shards) {
      for (const e of s.events) ctx.rec.event(info(`node${k}`), { ...e, source: 'loadgen', pid: s.pid });
      ctx.rec.event(info(`node${k}`), { ev: 'loadgen-summary', pid: s.pid, args: s.args, summary: s.summary, exit: s.exitInfo, notes: s.notes });
    }
    for (const n of lg.notes()) if (!/^loadgen: RLIMIT/.test(n)) notes.push(`loadgen ${k}: ${n}`);
  }
  for (const l of redisLog) notes.push(l);
  if (error) {
    error.notes = notes;
    throw error;
  }
  const natives = [...new Set(servers.map((s) => s.loaded && s.loaded.native).filter(Boolean))];
  return { ...out, notes, allocator: arm.allocator || null, native: natives.join(' ') || null, redisPort: redis ? redis.port : null };
}

module.exports = { bus };
