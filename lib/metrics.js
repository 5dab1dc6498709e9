'use strict';
// Prometheus text exposition (format 0.0.4) of a server's counters and the
// allocator's gauges: server.metrics(). Read from server.stats(),
// allocator.stats() and allocator.arenaStats(); names follow Prometheus
// conventions (base units, _total for counters, _bytes, _seconds).

const allocator = require('./allocator');
const { binding } = require('./native');
const { version } = require('../package.json');

// The per-thread families come from the one list of counters
// (src/io/model/sy_stats.h), which the binding exports as statFields: for each
// counter its stats() field, Prometheus name, type, help and scale.
const { statFields, busStatFields } = binding;

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
    for (const { name, metric, type, help, scale } of statFields) {
      family(lines, metric, type, help, stats.threads.map((t, i) => [
        { ...labels, thread: i },
        scale === 1 ? t[name] : t[name] * scale,
      ]));
    }
    family(lines, 'symphony_topics', 'gauge', 'Topics with at least one subscriber or pending publish.', [[labels, stats.topics]]);
    family(lines, 'symphony_addresses', 'gauge', 'Client addresses in the per-address table (with connections, or a rate of new ones not yet idle).', [[labels, stats.addresses]]);
    family(lines, 'symphony_history_messages', 'gauge', "Messages kept in topics' history.", [[labels, stats.historyMessages]]);
    family(lines, 'symphony_history_bytes', 'gauge', "Bytes of topics' history (frames plus 64 per message).", [[labels, stats.historyBytes]]);
    if (stats.bus) {
      family(lines, 'symphony_bus_up', 'gauge', 'Whether the bus is up (1) or not (0).', [[labels, stats.bus.state === 'up' ? 1 : 0]]);
      for (const { name, metric, type, help } of busStatFields) family(lines, metric, type, help, [[labels, stats.bus[name]]]);
    }
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
