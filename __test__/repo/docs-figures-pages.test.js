'use strict';
// Every figure the pages of docs/ quote comes from somewhere a test reads
// (issue 46; docs-figures.test.js does the same for the README). Each number
// in a page's prose (outside code blocks and link targets; a range's two
// ends both) is one of:
// - a measurement: its paragraph or table (a table: with the paragraph
//   before it and a bracketed note after it), or its section (## or deeper)
//   or a section above it, cites the bench/results/<run> it was measured in
//   (a link, or the run's full name), and the number is in that run's
//   reports (its .md, .txt, .log files), rounded as printed, in the
//   report's unit or a thousand or a million of them (12.9 KB: 12,948 B);
//   in such a table, a ratio of two of its row's figures (an "on / off"
//   column) is held too; a test file cited the same way (`__test__/...`)
//   lends the numbers its source has, as written (what the test does);
// - a value the code sets: HELD below makes the phrase from the source that
//   sets it (the running server's defaults and binding constants, lib/*.js,
//   the client, src/ #defines, package.json, what a test does) and the page
//   must print exactly that phrase;
// - no figure: ALL (every page), CODE (inline code) and NONE (per page) name
//   it: a date, an RFC and its sections, another program's version, an HTTP
//   status or a close code (their meanings: api-doc.test.js, lists.test.js),
//   a command or an example as typed, a figure another test holds;
// - not held yet: a line of docs-figures-pending.json (what the pages said
//   when this test was written that has no run, source or rule yet: profiles
//   and test timings no file keeps, sizes worked out by hand). That list
//   may only shrink: an edited line is no longer on its page and fails
//   until it leaves the list, and its numbers are then held like any other.
// A number that is none of these fails, with its page and line: give it its
// run, its source, or take it out.
//
// docs/internals.md and docs/pusher.md are not held here yet (other work
// edits them).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');
const RESULTS = path.join(root, 'bench', 'results');
const RUNS = new Set(fs.readdirSync(RESULTS));

/** A page's prose: code blocks and link targets blanked to spaces (so offsets are the file's). */
const prose = (text) => text
  .replace(/^```[\s\S]*?^```$/gm, (m) => m.replace(/[^\n]/g, ' '))
  .replace(/\]\([^)]*\)/g, (m) => `]${' '.repeat(m.length - 1)}`);
/** A number as prose writes it: 4,871 or 0.66 or 2048 (not part of a word, a version or a name). */
const NUMBER = /(?<![\w.,])(?<![^\d]-)\d[\d,]*(?:\.\d+)?(?![\w])/g;

/** The numbers of a run's reports (its .md, .txt, .log and extensionless files, in subfolders too), or of a test's source. */
const reportCache = new Map();
function reportNumbers(run) {
  if (reportCache.has(run)) return reportCache.get(run);
  const nums = new Set();
  if (run.startsWith('__test__/')) {
    for (const m of read(run).replace(/(\d)_(?=\d{3})/g, '$1').matchAll(/(?<![\w.])\d+(?:\.\d+)?(?![\w])/g)) nums.add(Number(m[0]));
    reportCache.set(run, [...nums]);
    return reportCache.get(run);
  }
  const walk = (dir) => {
    for (const f of fs.readdirSync(dir)) {
      const p = path.join(dir, f);
      if (fs.statSync(p).isDirectory()) walk(p);
      else if (/\.(md|txt|log)$/.test(f) || !f.includes('.')) {
        for (const m of fs.readFileSync(p, 'utf8').replace(/(\d),(?=\d{3})/g, '$1').matchAll(/(?<![\d.])\d+(?:\.\d+)?(?!\d)/g)) nums.add(Number(m[0]));
      }
    }
  };
  walk(path.join(RESULTS, run));
  reportCache.set(run, [...nums]);
  return reportCache.get(run);
}
/** Whether n (as printed) is in one of runs' reports, rounded as printed, in their unit or a thousand or a million of it. */
const rounded = new Map(); // run and digits -> every report number at that many digits, at each scale
function measured(n, runs) {
  const s = n.replace(/,/g, '');
  const digits = (s.split('.')[1] ?? '').length;
  const want = Number(s).toFixed(digits);
  return runs.some((run) => {
    const key = `${run} ${digits}`;
    const scales = run.startsWith('__test__/') ? [1] : [1, 1e3, 1e6];
    if (!rounded.has(key)) rounded.set(key, new Set(reportNumbers(run).flatMap((r) => scales.map((scale) => (r / scale).toFixed(digits)))));
    return rounded.get(key).has(want);
  });
}

/**
 * The runs (and test files) a number at each offset of text may come from:
 * those its block (a paragraph, a list, a table) cites, for a table those
 * of the paragraph just before it and of a note in brackets just after it
 * too, and those its section (## or deeper) and each section above it (##
 * or deeper) cite anywhere (a section that says once "The run:
 * bench/results/<run>"). The page's title section lends none: a page that
 * cites a run once does not make its every number that run's.
 * Returns (offset) => [run or test file].
 */
function citedRuns(text) {
  const cite = (body) => [
    ...[...body.matchAll(/(?<![\w-])(\d{4}-\d\d-\d\d-[\w.-]*[\w])/g)].map((m) => m[1]).filter((r) => RUNS.has(r)),
    ...[...body.matchAll(/\b(__test__\/[\w/.-]+\.(?:js|mjs|c))\b/g)].map((m) => m[1]).filter((f) => fs.existsSync(path.join(root, f))),
  ];
  const blocks = [];
  for (const m of text.matchAll(/(?:^|\n)((?:[^\n]+(?:\n|$))+)/g)) {
    const at = m.index + (m[0].startsWith('\n') ? 1 : 0);
    blocks.push({ at, end: at + m[1].length, table: m[1].startsWith('|'), runs: cite(m[1]) });
  }
  const heads = [...text.matchAll(/^(#+) /gm)].map((m) => ({ at: m.index, level: m[1].length }));
  const sectionRuns = heads.map((h, i) => {
    if (h.level < 2) return [];
    const end = heads.slice(i + 1).find((n) => n.level <= h.level)?.at ?? text.length;
    return cite(text.slice(h.at, end));
  });
  return (offset) => {
    const i = blocks.findIndex((b) => offset >= b.at && offset < b.end);
    if (i < 0) return [];
    const b = blocks[i];
    // Every section (## or deeper) the offset is in: each heading before it whose section has not ended.
    const inherited = heads.flatMap((h, j) => (h.at <= offset && (heads.slice(j + 1).find((n) => n.level <= h.level)?.at ?? text.length) > offset ? sectionRuns[j] : []));
    const note = b.table && blocks[i + 1]?.at !== undefined && text[blocks[i + 1].at] === '(' ? blocks[i + 1].runs : [];
    return [...new Set([...b.runs, ...(b.table && i > 0 ? blocks[i - 1].runs : []), ...note, ...inherited])];
  };
}

/**
 * Whether the number m (in a table row of text whose figures a run holds) is
 * the ratio of two other figures of its row (each cell's leading number), as
 * printed: an "on / off" or "÷" column.
 */
function ratioInRow(text, m) {
  const start = text.lastIndexOf('\n', m.index) + 1;
  const end = (text.indexOf('\n', m.index) + 1 || text.length + 1) - 1;
  const row = text.slice(start, end);
  if (!row.startsWith('|')) return false;
  const s = m[0].replace(/,/g, '');
  const digits = (s.split('.')[1] ?? '').length;
  const want = Number(s).toFixed(digits);
  const lead = row.split('|').map((c) => /^\s*\**~?(\d[\d,]*(?:\.\d+)?)/.exec(c)?.[1]).filter(Boolean).map((c) => Number(c.replace(/,/g, '')));
  return lead.some((a) => lead.some((b) => b !== 0 && a !== Number(s) && (a / b).toFixed(digits) === want));
}

/** The 1-based line of an offset of text. */
const lineOf = (text, at) => text.slice(0, at).split('\n').length;

// ---- the sources -------------------------------------------------------

const thousands = (n) => Math.round(n).toLocaleString('en-US');
/** The first group of re in file (a number when it reads as one). */
function src(file, re) {
  const m = re.exec(read(file));
  assert.ok(m, `${file}: ${re}`);
  return /^\d+$/.test(m[1]) ? Number(m[1]) : m[1];
}
/** A #define's value in a C header (SY_X 8u, SY_X 64). */
const define = (file, name) => src(file, new RegExp(`#define ${name}\\s+(?:\\\\\\n\\s*)?(\\d+)u?\\b`));
/** A default as docs/api.md's tables print it: 1 MiB, `null`, `{ min: 100, max: 1000 }`, 2000. */
function printed(v) {
  if (typeof v === 'number') return v >= 1048576 && v % 1048576 === 0 ? `${v / 1048576} MiB` : String(v);
  if (typeof v === 'string') return `\`'${v}'\``;
  if (v !== null && typeof v === 'object') return `\`{ ${Object.entries(v).map(([k, x]) => `${k}: ${x}`).join(', ')} }\``;
  return `\`${v}\``;
}
/** A table's rows `| \`name\` | default |`, made from defaults (the names the page's table has that defaults has). */
function defaultRows(page, header, defaults, skip = []) {
  const text = read(page);
  const at = text.indexOf(`\n| ${header} |`);
  assert.ok(at >= 0, `${page} has the table "${header}"`);
  const rows = text.slice(at + 1, (text.indexOf('\n\n', at) + 1 || text.length + 1) - 1).split('\n').slice(2);
  const names = rows.map((r) => /^\| `(\w+)` \|/.exec(r)?.[1]).filter((n) => n && Object.hasOwn(defaults, n) && !skip.includes(n));
  assert.ok(names.length > 0, `${page}: the table "${header}" has rows of defaults`);
  return names.map((n) => `| \`${n}\` | ${printed(defaults[n])} |`);
}

/**
 * Values the code sets, as each page prints them: each phrase is made from
 * its source, and the page must print exactly it (a value that moves in its
 * source fails here until the page moves with it). Made once, at the first
 * page's test (the running server's values need the addon).
 */
let held = null;
function HELD() {
  if (held) return held;
  const { constants } = require('../../lib/native').binding;
  const { DEFAULTS } = require('../../lib/options');
  const { BUS_DEFAULTS } = require('../../lib/bus');
  const { PRESENCE_DEFAULTS } = require('../../lib/presence');
  // The parts of object options (history.size...): their defaults from the one list (src/io/model/sy_io_opts.h).
  const part = (path) => require('../../lib/native').binding.optionSchema.find((r) => r.path === path).default;
  const range = (key, sep = '-') => `${thousands(constants.options[key].min)}${sep}${thousands(constants.options[key].max)}`;
  const HISTORY = { size: part('history.size'), ttl: part('history.ttl'), maxBytes: part('history.maxBytes') };
  const COMPRESSION = { threshold: part('compression.threshold'), level: part('compression.level') };
  const CLIENT = 'client/symphony-client.mjs';
  const client = {
    backoff: { min: src(CLIENT, /backoff\.min', backoff\.min, (\d+)/), max: src(CLIENT, /backoff\.max', backoff\.max, Math\.max\((\d+)/) },
    heartbeat: src(CLIENT, /'heartbeat', options\.heartbeat, (\d+)/),
    fallback: { after: src(CLIENT, /const fb = \{ after: (\d+)/), retryWebSocket: src(CLIENT, /const fb = \{.*retryWebSocket: (\d+)/) },
    openTimeout: src(CLIENT, /const fb = \{.*openTimeout: (\d+)/),
  };
  const JWT = 'src/auth/sy_jwt.h';
  held = {
    'docs/api.md': [
      // The options tables' defaults (the server's table: docs-facts.test.js reads it too).
      ...defaultRows('docs/api.md', 'option', DEFAULTS, ['threads', 'maxFragments', 'port']),
      `| \`port\` | \`${DEFAULTS.port}\` |`,
      `subscribers get (1 to ${require('../../lib/pusher/server').EVENT_MAX_BYTES} bytes`,
      `| \`threads\` | min(2, CPUs) | IO threads (${range('threads')}) |`,
      `| \`maxFragments\` | max(${src('lib/options.js', /Math\.max\((\d+), Math\.floor\(o\.maxPayload/)}, \`maxPayload\` / ${src('lib/options.js', /o\.maxPayload \/ (\d+)\)/)}) |`,
      `refuse with that status (${constants.REFUSE_STATUS_MIN}-${constants.REFUSE_STATUS_MAX})`,
      `(${thousands(Math.max(1024, DEFAULTS.maxPayload / 64))} with the default \`maxPayload\`: enough for a whole message in ${src('lib/options.js', /o\.maxPayload \/ (\d+)\)/)}-byte fragments`,
      `its first ${range('addressPrefixV4')} (IPv4) or ${range('addressPrefixV6')} (IPv6) bits`,
      `at most ${src('lib/options.js', /BURST_MAX_SECONDS = (\d+)/)} seconds' worth`,
      `how many ms (${range('rateLimitGrace')})`, `\`rateLimitGrace\` ms (default ${DEFAULTS.rateLimitGrace})`,
      `(about ${src('src/io/model/sy_budget.h', /about (\d+) µs of a server core/)} µs of a core each: each subscribe entry, publish, request, unsubscribe, or message POSTed to a symphony.v2 event stream ${define('src/io/model/sy_budget.h', 'SY_WORK_ENTRY')};`,
      `each token signature checked ${define(JWT, 'SY_JWT_WORK_HS256')} (HS256) to ${define(JWT, 'SY_JWT_WORK_EDDSA')} (EdDSA)`,
      `or it is idle for ${define('src/io/model/sy_reclaim.h', 'SY_RECLAIM_IDLE_MS') / 1000} s`,
      `(payloads under \`threshold\` bytes, default ${COMPRESSION.threshold}, go uncompressed; \`level\` ${range('compressLevel')}, default ${COMPRESSION.level})`,
      `\`true\` (${HISTORY.size} messages per topic, none older than ${HISTORY.ttl} s, ${HISTORY.maxBytes / 1048576} MiB for all topics)`,
      `one frame of ${thousands(define('src/proto/sy_v2.h', 'SY_V2_BATCH_MAX') - 1)} subscribes`,
      `up to ${src('lib/proxy.js', /PROXY_FROM_MAX = (\d+)/)} addresses or CIDR ranges`,
      ...defaultRows('docs/api.md', '`compression` option', COMPRESSION),
      `libdeflate's level, ${constants.options.compressLevel.min} (fastest) to ${constants.options.compressLevel.max} (smallest)`,
      ...defaultRows('docs/api.md', '`history` option', HISTORY),
      `(the frames plus ${define('src/io/model/sy_history.h', 'SY_HIST_ENTRY_OVERHEAD')} B per message)`,
      ...defaultRows('docs/api.md', '`bus` option', BUS_DEFAULTS, ['url', 'cluster']),
      `Redis Sentinel: 1 to ${src('lib/bus.js', /sentinels\.length > (\d+)\) throw/)} sentinels`,
      `±${src('src/bus/sy_bus_link.h', /\+-(\d+)% jitter/)}% jitter`,
      `| \`leeway\` | ${src('lib/tokens.js', /leeway: (\d+) \}/)} |`,
      ...defaultRows('docs/api.md', '`presence` option', PRESENCE_DEFAULTS).map((r) => r.replace(/\| (\d+) \|$/, '| `$1` |')),
      `(default ${PRESENCE_DEFAULTS.ttl / 1000} s + ${PRESENCE_DEFAULTS.ttl / 3000} s)`,
      `within \`timeout\` ms (default ${src('lib/bus.js', /let timeout = (\d+);/)})`,
      `after \`askTimeout\` ms (default ${thousands(DEFAULTS.askTimeout)})`,
      `\`maxSubscriptions\` (default ${thousands(DEFAULTS.maxSubscriptions)} per connection)`,
      `(default ${DEFAULTS.maxPending} asks waiting for a hook per connection`,
      `after the ${DEFAULTS.maxPending} answers`,
      `| \`backoff\` | ${printed(client.backoff)} |`,
      `| \`openTimeout\` | ${client.openTimeout} (`,
      `| \`heartbeat\` | ${client.heartbeat} |`,
      `| \`fallback\` | ${printed(client.fallback)} |`,
      `(over ${thousands(src(CLIENT, /n > (\d+) \? 'topic over/))} bytes of UTF-8, or not UTF-8)`,
      `${thousands(define('src/proto/sy_v2.h', 'SY_V2_BATCH_MAX'))} entries); an entry bigger`,
      `subscribe not answered in ${src(CLIENT, /const ASK_TIMEOUT = (\d+);/) / 1000} s is refused`,
      `${src(CLIENT, /const ASK_TIMEOUT = (\d+);/)} ms by default;`,
      `at most ${thousands(src(CLIENT, /const MAX_QUEUED = (\d+);/))} (then \`too-many-pending\`)`,
      `past four times \`maxBackpressure\` plus ${src('src/io/conn/sy_conn.c', /notice_cap.*max_backpressure \+ (\d+);/) / 1024} KiB); ${define('src/io/app/sy_ask.h', 'SY_ASK_BAD_MAX') + 1} malformed symphony.v2 frames`,
      `then ${define('src/io/conn/sy_conn.h', 'SY_CONN_DRAIN_MS') / 1000} s more for the client's FIN`,
      `or as soon as ${thousands(define('src/io/loop/sy_loop.h', 'SY_IO_DEFER_MAX'))} are waiting`,
      `(\`sy.open\`'s \`heartbeat\`, × ${src(CLIENT, /transport === 'sse' \? ([\d.]+) \* \(\(ws\.hello/)})`,
      `codes are ${src('lib/errors.js', /must be (\d+ to \d+) characters of a-z/)} characters of a-z`,
    ],
    'docs/limits.md': [
      `an IPv4 address or an IPv6 /${DEFAULTS.addressPrefix.v6}`,
      `which stays ${src('src/io/conn/sy_conn.c', /sizeof\(sy_conn_t\) == (\d+)/)} bytes`,
      `the rest of one ${src('src/io/loop/sy_loop.h', /#define SY_IO_RX_SIZE \((\d+) \* 1024\)/)} KiB read`,
      `(default ${DEFAULTS.rateLimitGrace}, at most ${thousands(constants.options.rateLimitGrace.max)})`,
      `(1,024 entries and one check: at most ${thousands(define('src/proto/sy_v2.h', 'SY_V2_BATCH_MAX') * define('src/io/model/sy_budget.h', 'SY_WORK_ENTRY') + define('src/auth/sy_jwt.h', 'SY_JWT_WORK_EDDSA'))} units; with a token per topic, HS256: ${thousands(define('src/proto/sy_v2.h', 'SY_V2_BATCH_MAX') * (define('src/io/model/sy_budget.h', 'SY_WORK_ENTRY') + define('src/auth/sy_jwt.h', 'SY_JWT_WORK_HS256')))})`,
      `about ${Math.floor(DEFAULTS.maxWorkPerSecond / (define('src/io/model/sy_budget.h', 'SY_WORK_ENTRY') + define('src/auth/sy_jwt.h', 'SY_JWT_WORK_EDDSA')))} of them are granted at once`,
      `(a larger key: times the square of its size in 2,048-bit steps: 4,096 bits ${define('src/auth/sy_jwt.h', 'SY_JWT_WORK_RS256') * 4})`,
    ],
    'docs/protocol.md': (() => {
      const topic = thousands(define('src/sy_server.h', 'SY_TOPIC_MAX_LEN'));
      const batch = thousands(define('src/proto/sy_v2.h', 'SY_V2_BATCH_MAX'));
      const epoch = define('src/proto/sy_since.h', 'SY_SINCE_EPOCH_HEX');
      const bad = define('src/io/app/sy_ask.h', 'SY_ASK_BAD_MAX');
      return [
        `control frame over ${define('src/proto/sy_ws_frame.h', 'SY_WS_MAX_CONTROL_PAYLOAD')} bytes`,
        `(default max(1,024, \`maxPayload\` / 64): ${thousands(Math.max(1024, DEFAULTS.maxPayload / 64))};`,
        `(default ${DEFAULTS.controlRate}, bursts of as many)`,
        `four times \`maxBackpressure\` plus ${src('src/io/conn/sy_conn.c', /notice_cap.*max_backpressure \+ (\d+);/) / 1024} KiB`,
        `after the ${bad} answers`, `${bad + 1} malformed symphony.v2 frames`, `holds ${bad + 1} topics`, `After ${bad} the next one closes`, `the answers to the ${bad}`,
        `(1 to ${topic} bytes of UTF-8)`, `1 to ${topic} bytes`, `at most ${topic} bytes`,
        `1 to ${batch} topics`, `1 to ${batch} entries`, `more than ${thousands(define('src/proto/sy_since.h', 'SY_SINCE_MAX'))})`, `At most ${thousands(define('src/proto/sy_since.h', 'SY_SINCE_MAX'))} parameters`,
        `${epoch} lowercase hexadecimal characters`, `exactly ${epoch} hexadecimal characters`, `epoch not ${epoch} hex`, `must be ${epoch} hexadecimal characters`, `"<${epoch} hex>"`,
        `(the client library: \`heartbeat\`, ${src(CLIENT, /'heartbeat', options\.heartbeat, (\d+)/) / 1000} s, then another ${src(CLIENT, /'heartbeat', options\.heartbeat, (\d+)/) / 1000} s`,
        `and ${src('src/io/app/sy_ask.c', /: \(size_t\)(\d+) << 10;/)} KiB of their topics`,
        `the last ${define('src/auth/sy_tokcache.h', 'SY_TOKCACHE_WAYS') * define('src/auth/sy_tokcache.h', 'SY_TOKCACHE_SETS')} tokens it refused`,
        `(default ${thousands(DEFAULTS.maxWorkPerSecond)} units a second`,
        `request and unsubscribe costs ${define('src/io/model/sy_budget.h', 'SY_WORK_ENTRY')}, each token signature checked ${define(JWT, 'SY_JWT_WORK_HS256')} (HS256) to ${define(JWT, 'SY_JWT_WORK_EDDSA')} (EdDSA)`,
        `resubscribe of ${batch} topics with one token`,
        `\`maxSubscriptions\` (default ${thousands(DEFAULTS.maxSubscriptions)})`, `\`maxPending\` (default ${DEFAULTS.maxPending})`,
        `entries, else ${batch},`, `resubscribe of ${thousands(define('src/proto/sy_v2.h', 'SY_V2_BATCH_MAX') - 1)} topics`,
      ];
    })(),
    'docs/faq.md': [
      `\`maxEventBytes\` (${DEFAULTS.maxEventBytes / 1048576} MiB)`,
      `\`maxFragments\` frames (${thousands(Math.max(1024, DEFAULTS.maxPayload / 64))} by default)`,
      `pings and pongs per second (${DEFAULTS.controlRate}, in bursts`,
      `\`handshakeTimeout\` (${DEFAULTS.handshakeTimeout} s)`,
      `half of \`idleTimeout\` (${DEFAULTS.idleTimeout / 2} s by default)`,
      `glibc (≥ ${src('scripts/glibc-floor.js', /GLIBC_FLOOR = '([\d.]+)'/)})`, `a glibc older than ${src('scripts/glibc-floor.js', /GLIBC_FLOOR = '([\d.]+)'/)}`,
      `minimum macOS ${src('scripts/macos-gate.js', /arm64: \{[^}]*minos: '([\d.]+)'/)} (arm64) and ${src('binding.gyp', /'MACOSX_DEPLOYMENT_TARGET': '([\d.]+)'/)} (x64)`,
    ],
    'docs/bus.md': [
      `(${BUS_DEFAULTS.backoff.min} ms doubling to ${BUS_DEFAULTS.backoff.max / 1000} s)`,
      `(\`maxBuffer\`, ${BUS_DEFAULTS.maxBuffer / 1048576} MiB;`,
      `| \`maxBuffer\` | ${BUS_DEFAULTS.maxBuffer / 1048576} MiB |`, `| \`connectTimeout\` | ${BUS_DEFAULTS.connectTimeout} ms |`,
      `Redis Sentinel: 1 to ${src('lib/bus.js', /sentinels\.length > (\d+)\) throw/)} sentinels`,
      `1 to ${define('src/bus/sy_bus_sentinel.h', 'SY_BUS_SENTINEL_NAME_MAX')} bytes without spaces`,
      `±${src('src/bus/sy_bus_link.h', /\+-(\d+)% jitter/)}% jitter`,
      `the next waits up to ${define('src/bus/sy_bus_subs.c', 'BUS_SUBSCRIBE_WINDOW_MS')} ms to gather more`,
      `its acknowledgements awaited (at most ${define('src/sy_server.h', 'SY_SERVER_BUS_FLUSH_MS')} ms)`,
      `(up to ${define('src/bus/sy_bus_int.h', 'SY_BUS_REDIRECTS_MAX')} redirections)`,
      ...['shard', 'sentinel'].map((f) => {
        const [down, up] = f === 'shard' ? ['BUS_REFRESH_DOWN_MS', 'BUS_REFRESH_UP_MS'] : ['SENTINEL_ASK_DOWN_MS', 'SENTINEL_ASK_UP_MS'];
        return `every ${define(`src/bus/sy_bus_${f}.c`, down)} ms while the bus is not up, and every ${define(`src/bus/sy_bus_${f}.c`, up) / 1000} s while it is`;
      }),
      `an ${define('src/bus/sy_bus_env.h', 'SY_BUS_ENV_LEN')}-byte envelope`,
      `(bit ${Math.log2(define('src/bus/sy_bus_env.h', 'SY_BUS_ENV_BINARY'))}: binary, bit ${Math.log2(define('src/bus/sy_bus_env.h', 'SY_BUS_ENV_COMPRESS'))}: may be compressed, bit ${Math.log2(define('src/bus/sy_bus_env.h', 'SY_BUS_ENV_META'))}: carries extras)`,
    ],
    'docs/builds.md': [
      `minimum macOS ${src('scripts/macos-gate.js', /arm64: \{[^}]*minos: '([\d.]+)'/)} / ${src('binding.gyp', /'MACOSX_DEPLOYMENT_TARGET': '([\d.]+)'/)}`,
    ],
    'docs/contributing.md': [
      `(JSON: the last ${src('examples/server.js', /const HISTORY = (\d+);/)} one-second samples)`,
      `(${src('examples/showcase.html', /Number\(params\.get\('clients'\)\) \|\| (\d+)\)/)} by default, at most ${src('examples/showcase.html', /const MAX_EXTRA = (\d+);/)}: Chromium allows ${src('examples/showcase.html', /fails WebSockets past (\d+) per tab/)} WebSockets per tab`,
    ],
    'docs/testing.md': [
      `Node 20 (≥ ${/^>=(\d+\.\d+)\.0$/.exec(JSON.parse(read('package.json')).engines.node)[1]})`,
      `${src('__test__/fuzz/Makefile', /^SMOKE_TIME \?= (\d+)$/m)} s of fuzzing per parser`, `${src('__test__/fuzz/Makefile', /^SMOKE_TIME \?= (\d+)$/m)} s of libFuzzer on each parser`,
      `bounded to ${Number(/--test-timeout=(\d+)/.exec(JSON.parse(read('package.json')).scripts['test:js'])[1]) / 60000} minutes`,
      `the ${define('src/proto/sy_proxy.h', 'SY_PROXY_V1_MAX')}-byte and length bounds`,
    ],
    'docs/memory.md': (() => {
      const conf = src('src/base/sy_alloc.c', /#define SY_JE_BUILTIN_CONF "([^"]+)"/);
      const R = 'src/io/model/sy_reclaim.h';
      return [
        ...conf.split(',').filter((c) => /\d/.test(c) && !c.startsWith('dirty')).map((c) => `\`${c}\``),
        `\`${conf.split(',').find((c) => c.startsWith('dirty'))}\` (jemalloc's default)`,
        `\`${conf.replace(/,(?=dirty)/, ', ')}\``, // the page wraps the line after a comma
        `(from at least ${define(R, 'SY_RECLAIM_MIN_PEAK')}), or ${define(R, 'SY_RECLAIM_IDLE_MS') / 1000} s without any event`,
        `at most one per ${define(R, 'SY_RECLAIM_INTERVAL_MS') / 1000} s`,
        `keeps its ${src('src/io/conn/sy_conn.c', /sizeof\(sy_conn_t\) == (\d+)/)}-byte struct`,
        `(${define(R, 'SY_RECLAIM_SLICE')} connections looked at per slice`,
        `Up to ${define(R, 'SY_RECLAIM_PASSES')} passes, while a pass still moves 1 block in ${src('src/io/model/sy_reclaim.c', /r->moved_pass \* (\d+) > r->seen/)}`,
        `\`sy_conn_t\` ${src('src/io/conn/sy_conn.c', /sizeof\(sy_conn_t\) == (\d+)/)}`,
      ];
    })(),
    'docs/sse.md': [
      `\`retry: ${define('src/io/wire/sy_upgrade.c', 'SY_UPGRADE_SSE_RETRY_MS')}\` (browsers reconnect after ${define('src/io/wire/sy_upgrade.c', 'SY_UPGRADE_SSE_RETRY_MS') / 1000} s)`,
      `(${define('src/io/wire/sy_post.h', 'SY_POST_NAME_LEN')} hex digits)`,
      `(${define('src/io/wire/sy_sse_out.h', 'SY_SSE_HEARTBEAT_MS') / 1000} s without one)`,
      `\`fallback.retryWebSocket\` (${client.fallback.retryWebSocket / 1000} s)`,
      `\`fallback.after\` (${client.fallback.after})`,
      `\`openTimeout\` (${client.openTimeout / 1000} s)`,
      `\`heartbeat\` (${client.heartbeat / 1000} s)`,
      `for ${src(CLIENT, /transport === 'sse' \? ([\d.]+) \* \(\(ws\.hello/)} times the heartbeat`,
      // what bench/micro/sse-ids.js measures (no stored run keeps its figures: the page gives orders of size)
      `| ${thousands(src('bench/micro/sse-ids.js', /arg\('topics', '1,(\d+)'\)/))} topics, symphony.v2 |`,
      `| ${thousands(src('bench/micro/sse-ids.js', /arg\('topics', '1,(\d+)'\)/))} topics, symphony.v1 |`,
      `| ${thousands(src('bench/micro/sse-ids.js', /await asks\((\d+)\)/) - 1)} granted subscribes asked by POST`,
    ],
    'docs/tls.md': (() => {
      const T = '__test__/tls/tls.test.js';
      const length = (n) => src(T, new RegExp(`Array\\.from\\(\\{ length: (${n}) \\}`));
      const [peak, low] = src(T, /'--schedule', '(\d+:\d+,\d+):\d+'/).split(/:\d+,/).map(Number);
      return [
        `each IO thread spends at most ${src('src/io/conn/sy_conn.c', /#define SY_HANDSHAKE_TURN_US (\d+)/) / 1000} ms of handshake work per loop`,
        // what tls.test.js does
        `a test opens ${length(150)} RSA handshakes at once on one IO thread while publishing every ${src(T, /server\.publish\('feed', `tick \$\{n\+\+\}`\), (\d+)\)/)} ms`,
        `A test holds ${length(20)} TLS connections`, `another that ${length(40)} closed TLS connections`,
        `falling from ${thousands(peak)} connections to ${low} gives its pages back to at most ${Number(src(T, /share\(\) <= ([\d.]+) &&/)) * 100}% of the peak's`,
      ];
    })(),
    'docs/performance.md': [
      `per batch of up to ${define('src/io/loop/sy_loop.h', 'SY_IO_URING_ENTRIES')} sends`,
      `(or ${thousands(define('src/io/loop/sy_loop.h', 'SY_IO_DEFER_MAX'))} waiting commands`,
    ],
    'docs/benchmarks.md': [`they are now ${define('src/io/model/sy_reclaim.h', 'SY_RECLAIM_SLICE')} connections`],
    'docs/history.md': [
      `Counted as each frame's bytes plus ${define('src/io/model/sy_history.h', 'SY_HIST_ENTRY_OVERHEAD')} per message`,
      `its frame plus ${define('src/io/model/sy_history.h', 'SY_HIST_ENTRY_OVERHEAD')} bytes`,
      `(a ${src('src/io/model/sy_history.h', /its ring slot\s*\*?\s*\((\d+)\)/)}-byte ring slot, the frame's ${src('src/io/model/sy_history.h', /the frame's header \((\d+)\)/)}-byte header, the allocator's rounding)`,
      `**epoch**, ${src(CLIENT, /const EPOCH = \/\^\[0-9a-fA-F\]\{(\d+)\}\$\//)} hexadecimal characters`,
    ],
    'docs/metrics.md': [
      `the thread stops after ${define('src/io/loop/sy_loop.h', 'SY_IO_POLL_FAILURES_MAX')} in a row`,
      `a fixed ${define('src/io/model/sy_history.h', 'SY_HIST_ENTRY_OVERHEAD')} per message`,
    ],
    'docs/operations.md': [
      `more than ${define('src/io/wire/sy_peer.h', 'SY_PEER_PROXY_MAX') / 1024} KiB, a v1 line over ${define('src/proto/sy_proxy.h', 'SY_PROXY_V1_MAX')} bytes`,
      `per batch of up to ${define('src/io/loop/sy_loop.h', 'SY_IO_URING_ENTRIES')} sends`,
    ],
    'docs/tokens.md': [
      `at least ${define('src/auth/sy_jwt_int.h', 'SY_JWT_SECRET_MIN')} bytes`,
      `an RSA public key of ${thousands(define('src/auth/sy_jwt_int.h', 'SY_JWT_RSA_MIN_BITS'))} to ${thousands(define('src/auth/sy_jwt_int.h', 'SY_JWT_RSA_MAX_BITS'))} bits`,
      `RS256 needs an RSA key of ${define('src/auth/sy_jwt_int.h', 'SY_JWT_RSA_MIN_BITS')} to ${define('src/auth/sy_jwt_int.h', 'SY_JWT_RSA_MAX_BITS')} bits`,
      `over ${thousands(define('src/proto/sy_v2.h', 'SY_V2_TOKEN_MAX'))} bytes`,
    ],
  };
  return held;
}

/** HTTP statuses and WebSocket close codes symphony answers with (what each means: api-doc.test.js, lists.test.js), not followed by a unit. */
const CODES = '(?:101|410|200|202|204|301|302|400|401|403|404|405|408|411|413|414|426|429|431|500|501|502|503|504|505|10(?:0[0-9]|1[0-5]))';
const UNIT = '(?!\\d|[,.]\\d|\\s*(?:ms|s|µs|B|KB|KiB|MB|MiB|GB|bytes|members|connections|clients|subscribers|topics|messages|entries|rooms|nodes|keys|tokens|sockets|times|publishes|deliveries|%|x|/s)(?![\\w-]))';

/** Numbers that are no figure, on every page. */
const ALL = [
  /\b20\d\d-\d\d-\d\d\b/, // a date
  /\bRFC \d+(?:,? §\s?\d+(?:\.\d+)*)?|§\s?\d+(?:\.\d+)*/, // a standard and its sections
  /^\s*(?:[-*] )?\d+\. /m, // a numbered list's item
  /\b[Ii]ssues? \d+(?: and \d+)?|#\d+/, // an issue of this project
  /\b[0-9a-f]{7,12}(?:\.\.[0-9a-f]{7,12})?\b(?=[^\n]*)(?<=[a-f][0-9a-f]*|\d{7,12})/, // a commit
  // another program's version (the project's own dependencies' versions: THIRD_PARTY_NOTICES.md, docs-figures.test.js)
  /\b(?:Node(?:\.js)?|Linux|Debian|Rocky Linux|Alpine|node:|OpenSSL|Redis|glibc|GLIBC_|musl|socket\.io|ws|uWebSockets\.js|npm|pnpm|yarn|Chromium|Chrome|Firefox|Safari|Wine|wine|macOS|Windows|Ubuntu|perf`?|GCC|gcc|clang|Clang|MinGW|jemalloc|libdeflate|hiredis|yyjson|Express|Fastify|TypeScript|ioredis|Valkey|HAProxy|haproxy|nginx|Envoy|Caddy|Python|Go|Java|Ruby|Bun|Deno|kernel|kernels|Kernel|ES|ECMAScript|Pusher|pusher-js|Kubernetes|Docker|RHEL|Visual Studio|clang-format|valgrind|Valgrind)\s*v?\d+(?:\.\d+)*(?:\.x)?\+?(?: or later)?/,
  new RegExp(`(?<=(?:\\b(?:answered|answers?|gets?|got|with|refused?|refuses|HTTP|status|statuses|returns?|codes?|close|closes|closed|an?|or|and|then|is|not|no|every|its|each|by|to|than|on|from|but|else|the|server's|sends?|writes|POST|whose)|[,/(|\`:*-])\\s*)${CODES}${UNIT}`), // an HTTP status or a close code (after a word that names one)
  /\b[14]000-4999\b|\b(?:close|code)s? 4\d{3}\b/, // the application's close codes
  /(?<![\w.])0(?=`?:? (?:no|none|off|disables)\b)/, // 0 as "no limit" (what each option does with it: its tests)
  /\b\d+\.\d+\.\d+(?:\.\d+)?(?::\d+)?(?:\/\d+)?/, // a version or an address (1.2.3, 10.0.0.5:8080, 10.0.0.0/8)
  /\bhttps?:\/\/[^\s)>]+/, // a URL
  /\b\d\d:\d\d(?::\d\d)? UTC\b|\bO\(\d\)|\b(?:since|offset|head) \+ 1\b|\brules? \d+\b|\b1, 2, 3,? (?:\.\.\.|…)|\(`?1`? or (?:0|unset)\b|\b1 or 0\b/, // a rule's number, a counting, a flag's values
  /\b\d+[- ]vCPUs?\b|\bCPUs? \d(?:,\s?\d)*\b|\bcore \d\b|\b\d+ GiB(?= RAM|,)/, // the machine measured on, and the core pinned to
  /\b(?:TLS|HTTP)\/?\s?\d(?:\.\d)?(?: and \d\.\d)?|\bHTTP\/\d(?:\.\d)?|\bIPv[46]|\bx86[-_]64|\bUTF-8|\bSHA-?\d+|\bP-256|\bsha256|\b(?:HS|RS|ES|PS)\d{3}|\bEd25519|\bbase64|\bv\d/, // names with a number in them
];

/**
 * Inline code that is no figure, on every page: what the reader types or
 * reads as it is (each span `...` as the page pairs them, across a line
 * break too).
 */
const CODE = [
  /--|=|\$ |(?:^|\s)-[a-zA-Z]/, // a command line or a setting
  /[{"[]/, // an example: JSON, an object, a list
  /\//, // a path, or a name with a slash (`deps/patches/openssl/0001-...`, `http/1.1`)
];

/** Numbers that are no figure, per page: a quote (or a pattern), with why. */
const NONE = {
  'docs/api.md': [
    '`0` | 0 picks a free port', "`['10.0.0.0/8']`", // an example
    '0 → 1 and 1 → 0', 'random(0, min(max, min × 2^attempt', '[0, 1)', '2^53-1', '`ttl`/3', 'ttl/3', 'a-z, 0-9', '`publish` returns 0', // arithmetic, not figures
    '**8,190 bytes**', // client-size.test.js holds it (scripts/client-size.js)
    'a loop of 100 publishes costs one hand-over, not 100', // an example
  ],
  'docs/history.md': ['`since + 1 .. head`', 'IO thread 0 visits'],
  'docs/faq.md': [
    /about \d\.\d MiB packed/, // docs-facts.test.js holds it (npm pack, to 0.1 MiB)
    'idle timeout are 60 s by default', // other programs' defaults
    'kernels come with 4, 16 or 64 KiB pages', 'a 4 KiB and a 64 KiB build', 'on a 16 KiB-page kernel', 'the 64 KiB build', '(16 KiB pages on Apple silicon, 4 KiB on Intel)', 'jemalloc (4 KiB pages)', // page sizes of the platforms
    'PE32+ x86-64', 'RFC 6455', 'Autobahn\'s 2.10', // a format's name, the suite's case
    'a shorter `idleTimeout` (say 100, pinging at 50 s)', // an example
    '**npm** (10 and 11), **pnpm** (10)', 'with Node 20 and 22', '20 and 22 (the release', // other programs' versions
  ],
  'docs/sse.md': ['`tryAllTransports` (4.8)', 'event says 1006'], // a close code
  'docs/contributing.md': ['PORT+1'],
  'docs/testing.md': ['PORT+1', '3.2, 3.3, 4.1.3, 4.1.4, 4.2.3, 4.2.4 and 5.15', '127.x.y.z'], // a port's arithmetic, Autobahn's case numbers, an address's pattern
  'docs/builds.md': [
    /\b(?:4|16|64) KiB\b/, /\blg-page \d+|\b12 \(4 KiB\)|\bboth 12 and 16\b|,\s+12 on x64|\b16 and 64 KiB/, // the platforms' page sizes (and jemalloc's log2 of them)
    /\b2\.(?:17|2\d|3\d)\b/, // glibc's versions (the floor, 2.17: docs.test.js holds it)
    /about \d\.\d MiB packed/, // docs-facts.test.js holds it (npm pack, to 0.1 MiB)
  ],
  'docs/bus.md': [
    '`HELLO 3`', 'port 26379 by default', 'modulo 16384', '`down-after-milliseconds 30000`', '`down-after-milliseconds 1000`', '`--cluster-pipeline`, 10 by default', // Redis's
    'private OpenSSL (3.5)', 'random 64-bit id', // a version, a type
  ],
  'docs/memory.md': ['jemalloc\'s default of 4 arenas per CPU', 'up to 4 KiB (jemalloc\'s defaults span up to 7 pages)', 'instead of 4 times per CPU'], // jemalloc's defaults // socket.io's client version
  'docs/tls.md': [
    'anything older than 3.5', 'the 3.5 LTS line', '3.0\'s support ended in September 2026', 'SSL 3', // OpenSSL's versions
    '`SSL_MAX_PIPELINES` (32)', // OpenSSL's constant
  ],
  'docs/protocol.md': [
    'other than 13', '`Sec-WebSocket-Version: 13`', '64-bit length', 'close frame of 1 byte', 'its 2 wire bytes', '1 to 20 decimal digits', '18446744073709551615', // RFC 6455's and a u64's
    '64-bit integer', 'a 64-bit id', 'they are 64-bit', '`0` is the position', 'at 0)', 'an integer 0 to 2^32-1', 'counts up from 1', // the wire's types
    '`p7,1043', 'is offset 1043 of the topic whose id is 7', // an example
  ],
  'docs/limits.md': ['(`v6: 48`, `v4: 24`)', 'off by default (0)', 'a 60 Hz game', 'A /64 because', '2^64', 'one 32-bit time'],
  'docs/metrics.md': ['(1 per thread; 0: send/sendmsg', '`ioUring` is 1 per IO thread that sends with io_uring and 0 for one'], // a gauge's values
  'docs/operations.md': ['else it is 0'],
  'docs/tokens.md': [
    'RFC 7518 section 3.2: at least the hash\'s 256 bits', 'R‖S, 64 bytes', // the standards'
    '`tokens.keys[1]:', 'this one has 1024', // an error message as printed
  ],
};

/**
 * Not held yet: numbers these pages quoted when this test was written that
 * have no run, source or rule here yet (a measurement of a profile or a test
 * no file stores, a size worked out by hand...). Each is to be given its
 * run or source, or taken out of the page; this list may only shrink (a
 * phrase that is no longer on its page fails: take it out of the list).
 */
const PENDING = require('./docs-figures-pending.json');

/** The numbers of page not held, each with its line and words around it. */
function loose(page, { pending = true } = {}) {
  const raw = read(page);
  const text = prose(raw);
  const covered = new Array(text.length).fill(false);
  const cover = (at, len) => covered.fill(true, at, at + len);
  const problems = [];
  const unheld = [];
  for (const quote of HELD()[page] ?? []) {
    const flat = text.replace(/\s+/g, ' ');
    let found = false;
    // Lines wrap anywhere: the phrase's spaces match any whitespace.
    const re = new RegExp(quote.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+'), 'g');
    for (const m of text.matchAll(re)) { found = true; cover(m.index, m[0].length); }
    if (!found) {
      // Where the page says the same words with other numbers, show it.
      const words = quote.split(/\d[\d,.]*/).filter((w) => w.trim().length > 3).sort((a, b) => b.length - a.length)[0];
      const at = words ? flat.indexOf(words.trim()) : -1;
      const near = at >= 0 ? `; the page has "...${flat.slice(Math.max(0, at - 40), at + words.length + 40)}..."` : '';
      problems.push(`${page}: "${quote}" (made from its source) is not on the page${near}: the page or its source moved`);
    }
  }
  for (const rule of [...ALL, ...(NONE[page] ?? []), ...(pending ? PENDING[page] ?? [] : [])]) {
    const re = typeof rule === 'string' ? new RegExp(rule.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+'), 'g') : new RegExp(rule.source, rule.flags.includes('g') ? rule.flags : `${rule.flags}g`);
    let found = false;
    for (const m of text.matchAll(re)) { found = true; cover(m.index, m[0].length); }
    if (!found && typeof rule === 'string') problems.push(`${page}: "${rule}" (${(NONE[page] ?? []).includes(rule) ? 'named as no figure' : 'not held yet'}) is not on the page: take it out of ${(NONE[page] ?? []).includes(rule) ? 'NONE' : 'docs-figures-pending.json'}`);
  }
  for (const m of text.matchAll(/`(?:[^`\n]|\n(?![ \t]*\n))+`/g)) if (CODE.some((re) => re.test(m[0].slice(1, -1)))) cover(m.index, m[0].length);
  const runsAt = citedRuns(raw);
  for (const m of text.matchAll(NUMBER)) {
    if (covered[m.index]) continue;
    const runs = runsAt(m.index);
    if (runs.length > 0 && measured(m[0], runs)) continue;
    if (runs.length > 0 && ratioInRow(text, m)) continue;
    const at = lineOf(raw, m.index);
    const around = text.slice(Math.max(0, m.index - 40), m.index + m[0].length + 30).replace(/\s+/g, ' ').trim();
    problems.push(`${page}:${at}: ${m[0]} is not held: ${runs.length ? `not in ${runs.join(', ')}'s reports, ` : 'no run cited in its section, '}not made from a source (HELD), not named as no figure (NONE): "...${around}..."`);
    // Its line, as the prose has it (for docs-figures-pending.json).
    const start = text.lastIndexOf('\n', m.index) + 1;
    unheld.push(text.slice(start, (text.indexOf('\n', m.index) + 1 || text.length + 1) - 1).replace(/\s+/g, ' ').trim());
  }
  return Object.assign(problems, { unheld });
}

const PAGES = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md') && !['internals.md', 'pusher.md'].includes(f)).map((f) => `docs/${f}`);

for (const page of PAGES) {
  test(`docs-figures-pages: every number in ${page} is measured in a run it cites, made from its source, or named as no figure`, () => {
    assert.deepEqual([...loose(page)], []);
  });
}

test('docs-figures-pages: the rules name pages that exist', () => {
  for (const page of [...Object.keys(HELD()), ...Object.keys(NONE), ...Object.keys(PENDING)]) assert.ok(PAGES.includes(page), `${page} is a page held here`);
});

module.exports = { loose, PAGES, phrasesFor: (page) => [...new Set(loose(page, { pending: false }).unheld)] };
