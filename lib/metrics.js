'use strict';
// Prometheus text exposition (format 0.0.4) of a server's counters and the
// allocator's gauges: server.metrics(). One table of metrics, read from
// server.stats(), allocator.stats() and allocator.arenaStats(); names follow
// Prometheus conventions (base units, _total for counters, _bytes, _seconds).

const allocator = require('./allocator');
const { version } = require('../package.json');

// [name, type, help, field of a thread's stats, scale]
const THREAD_METRICS = [
  ['symphony_connections', 'gauge', 'Open WebSocket connections.', 'connections'],
  ['symphony_connections_opened_total', 'counter', 'Connections that completed the upgrade.', 'opened'],
  ['symphony_connections_closed_total', 'counter', 'Upgraded connections that closed.', 'closed'],
  ['symphony_messages_received_total', 'counter', 'Messages received from clients.', 'messagesIn'],
  ['symphony_received_bytes_total', 'counter', 'Bytes read from client sockets.', 'bytesIn'],
  ['symphony_messages_sent_total', 'counter', 'Frames queued to clients.', 'messagesOut'],
  ['symphony_sent_bytes_total', 'counter', 'Bytes written to client sockets.', 'bytesOut'],
  ['symphony_messages_dropped_total', 'counter', 'Messages skipped for slow consumers.', 'dropped'],
  ['symphony_slow_consumer_closes_total', 'counter', 'Connections closed as slow consumers (1008).', 'slowCloses'],
  ['symphony_handshake_rejects_total', 'counter', 'Upgrade requests answered with an HTTP error.', 'handshakeRejects'],
  ['symphony_protocol_errors_total', 'counter', 'Connections failed for protocol errors (1002/1007/1009).', 'protocolErrors'],
  ['symphony_timeouts_total', 'counter', 'Handshake and idle timeouts.', 'timeouts'],
  ['symphony_oom_closes_total', 'counter', 'Connections closed (1011) for lack of memory.', 'oomCloses'],
  ['symphony_events_lost_total', 'counter', 'Events that could not be queued to JavaScript.', 'eventsLost'],
  ['symphony_accept_rejects_total', 'counter', 'Connections closed at accept: out of file descriptors.', 'acceptRejects'],
  ['symphony_reclaims_total', 'counter', 'Memory reclaims run by the policy.', 'reclaims'],
  ['symphony_reclaim_moved_blocks_total', 'counter', 'Blocks moved out of sparse slabs by reclaims.', 'reclaimMoved'],
  ['symphony_reclaim_freed_bytes_total', 'counter', 'Arena pages given back by reclaims.', 'reclaimFreedBytes'],
  ['symphony_reclaim_seconds_total', 'counter', 'Time spent in reclaims.', 'reclaimMicros', 1e-6],
  ['symphony_reclaim_max_seconds', 'gauge', 'The longest reclaim.', 'reclaimMaxMicros', 1e-6],
  ['symphony_tls_handshakes_total', 'counter', 'TLS handshakes completed.', 'tlsHandshakes'],
  ['symphony_tls_failures_total', 'counter', 'TLS handshakes failed (not TLS, unsupported version, bad record, closed).', 'tlsFailures'],
  ['symphony_tls_deferred_total', 'counter', 'TLS handshake steps left for the next loop turn (per-turn budget).', 'tlsDeferred'],
];

const ALLOCATOR_METRICS = [
  ['symphony_allocator_allocated_bytes', 'Bytes allocated by symphony and not yet freed.', 'allocated'],
  ['symphony_allocator_active_bytes', 'Bytes in pages that hold live allocations.', 'active'],
  ['symphony_allocator_resident_bytes', "Bytes resident in the allocator's mappings (an upper bound).", 'resident'],
  ['symphony_allocator_mapped_bytes', 'Bytes in active extents mapped by the allocator.', 'mapped'],
  ['symphony_allocator_retained_bytes', 'Virtual memory kept, already returned to the OS.', 'retained'],
  ['symphony_allocator_metadata_bytes', "Bytes of the allocator's own bookkeeping.", 'metadata'],
];

const ARENA_METRICS = [
  ['symphony_allocator_arena_active_bytes', 'Pages of an arena holding live allocations.', 'active'],
  ['symphony_allocator_arena_dirty_bytes', 'Unused pages of an arena not yet given back (decaying).', 'dirty'],
  ['symphony_allocator_arena_muzzy_bytes', 'Pages of an arena given back lazily (MADV_FREE).', 'muzzy'],
  ['symphony_allocator_arena_resident_bytes', 'Resident pages of an arena, its metadata included.', 'resident'],
];

// Label values escape backslash, double quote and newline.
function label(value) {
  return String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function number(v) {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function family(lines, name, type, help, samples) {
  if (samples.length === 0) return;
  lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  for (const [labels, value] of samples) {
    const l = Object.entries(labels).map(([k, v]) => `${k}="${label(v)}"`).join(',');
    lines.push(`${name}${l ? `{${l}}` : ''} ${number(value)}`);
  }
}

/**
 * Text exposition of stats (a server's stats(), or null for a closed one)
 * and the allocator's figures. labels: extra constant labels on every sample.
 */
function exposition(stats, labels = {}) {
  const lines = [];
  family(lines, 'symphony_build_info', 'gauge', 'The running build of symphony (value 1).', [[
    { ...labels, version, allocator: allocator.name, allocator_version: allocator.version },
    1,
  ]]);
  if (stats) {
    for (const [name, type, help, field, scale] of THREAD_METRICS) {
      family(lines, name, type, help, stats.threads.map((t, i) => [
        { ...labels, thread: i },
        scale ? t[field] * scale : t[field],
      ]));
    }
    family(lines, 'symphony_topics', 'gauge', 'Topics with at least one subscriber or pending publish.', [[labels, stats.topics]]);
  }
  const a = allocator.stats();
  for (const [name, help, field] of ALLOCATOR_METRICS) {
    if (a[field] !== null) family(lines, name, 'gauge', help, [[{ ...labels, allocator: allocator.name }, a[field]]]);
  }
  const arenas = allocator.arenaStats();
  if (arenas) {
    const owner = new Map();
    if (stats) stats.threads.forEach((t, i) => { if (t.arena >= 0) owner.set(t.arena, `io-${i}`); });
    for (const [name, help, field] of ARENA_METRICS) {
      family(lines, name, 'gauge', help, arenas.map((r) => [
        { ...labels, arena: r.arena, owner: owner.get(r.arena) ?? (r.arena === 0 ? 'js' : 'other') },
        r[field],
      ]));
    }
  }
  return `${lines.join('\n')}\n`;
}

module.exports = { exposition };
