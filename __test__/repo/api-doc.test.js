'use strict';
// docs/api.md against the types (lib/index.d.ts, client/symphony-client.d.ts)
// and the codes the sources throw, in both directions, so that neither drifts:
//
// - each options interface has a table in docs/api.md whose first header
//   cell names it ('option' for ServerOptions, '`history` option', ...; see
//   TABLES): its rows are exactly the interface's properties;
// - the events of Server, server.bus, the client and a Subscription have
//   their tables ('event', 'bus event', ...): exactly the .d.ts's events;
// - the exports tables ('export', 'client export') are exactly the runtime
//   names the .d.ts files export (classes, consts, functions);
// - every public method and property appears as `server.NAME`,
//   `server.bus.NAME`, `topic.NAME`, `allocator.NAME`, `client.NAME` or
//   `subscription.NAME`, and every such name the page uses exists;
// - the 'error code' table lists exactly the ERR_ codes of lib/, client/,
//   the .d.ts files and the codes binding/ throws, and the page names no
//   other ERR_ code.
// The .d.ts files are read with the TypeScript compiler (a devDependency).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { EventEmitter } = require('node:events');
const ts = require('typescript');

const root = path.resolve(__dirname, '..', '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');
const DOC = 'docs/api.md';

/** What a .d.ts declares: interfaces and classes with their members and events, and its runtime exports. */
function declarations(file) {
  const sf = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);
  const types = new Map(); // name -> { members: Set, events: Set }
  const exported = new Set();
  const isExported = (node) => (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const nameOf = (n) => (n.name && (ts.isIdentifier(n.name) || ts.isStringLiteral(n.name)) ? n.name.text : null);
  function collect(name, members) {
    const t = { members: new Set(), events: new Set() };
    for (const m of members) {
      if (ts.isConstructorDeclaration(m) || ts.isConstructSignatureDeclaration(m)) continue;
      const n = nameOf(m);
      if (n === null) continue;
      const first = (ts.isMethodDeclaration(m) || ts.isMethodSignature(m)) && m.parameters[0];
      if (n === 'on' && first && first.type && ts.isLiteralTypeNode(first.type) && ts.isStringLiteral(first.type.literal)) {
        t.events.add(first.type.literal.text);
      } else if (!['on', 'off', 'once'].includes(n) || !first || !first.type || !ts.isTypeReferenceNode(first.type)) {
        t.members.add(n);
      } else {
        t.members.add(n); // on/off/once<E extends keyof Events>(event: E, ...): a method
      }
    }
    types.set(name, t);
  }
  for (const st of sf.statements) {
    if (ts.isInterfaceDeclaration(st) || ts.isClassDeclaration(st)) {
      collect(st.name.text, st.members);
      if (ts.isClassDeclaration(st) && isExported(st)) exported.add(st.name.text);
    } else if (ts.isVariableStatement(st) && isExported(st)) {
      for (const d of st.declarationList.declarations) {
        exported.add(d.name.text);
        if (d.type && ts.isTypeLiteralNode(d.type)) collect(d.name.text, d.type.members);
      }
    } else if (ts.isFunctionDeclaration(st) && isExported(st)) {
      exported.add(st.name.text);
    }
  }
  return { types, exported };
}

const lib = declarations('lib/index.d.ts');
const client = declarations('client/symphony-client.d.ts');
const type = (decl, name) => {
  const t = decl.types.get(name);
  assert.ok(t, `${name} is declared`);
  return t;
};
const union = (...sets) => new Set(sets.flatMap((s) => [...s]));

/** docs/api.md's tables: first header cell -> the names in the first cell of their rows (backticks and quotes taken off). */
function tables(text) {
  const out = new Map();
  const lines = text.replace(/^```[\s\S]*?^```/gm, '').split('\n');
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!/^\|/.test(lines[i]) || !/^\|[\s:|-]+\|$/.test(lines[i + 1]) || (i > 0 && /^\|/.test(lines[i - 1]))) continue;
    const head = lines[i].split('|')[1].trim();
    const rows = out.get(head) ?? [];
    for (let j = i + 2; j < lines.length && /^\|/.test(lines[j]); j++) {
      const cell = lines[j].split('|')[1].trim();
      // `name`, `'event'`, or `a`, `b` (several names in one row)
      const names = [...cell.matchAll(/`'?([^`']+)'?`/g)].map((m) => m[1]);
      rows.push(...(names.length > 0 ? names : [`(a row that names nothing: ${lines[j]})`]));
    }
    out.set(head, rows);
  }
  return out;
}

/** Both directions at once, naming what is missing where. */
function same(what, documented, declared) {
  const doc = new Set(documented);
  const missing = [...declared].filter((n) => !doc.has(n)).sort();
  const extra = [...doc].filter((n) => !declared.has(n)).sort();
  const dupes = documented.filter((n, i) => documented.indexOf(n) !== i);
  assert.deepEqual({ missing, extra, dupes }, { missing: [], extra: [], dupes: [] },
    `${what}: 'missing' are declared but not in ${DOC}; 'extra' are in ${DOC} but not declared; 'dupes' are listed twice`);
}

const text = read(DOC);
const found = tables(text);

// first header cell in docs/api.md -> what it must list exactly
const TABLES = {
  option: type(lib, 'ServerOptions').members,
  '`compression` option': type(lib, 'CompressionOptions').members,
  '`history` option': type(lib, 'HistoryOptions').members,
  '`presence` option': type(lib, 'PresenceOptions').members,
  '`tls` option': type(lib, 'TlsOptions').members,
  '`bus` option': union(type(lib, 'BusRedisOptions').members, type(lib, 'BusSentinelOptions').members, type(lib, 'BusCommonOptions').members),
  '`bus.tls` option': type(lib, 'BusTlsOptions').members,
  '`tokens` option': type(lib, 'TokensOptions').members,
  'send option': union(type(lib, 'SendOptions').members, type(lib, 'PublishOptions').members),
  event: type(lib, 'Server').events,
  'bus event': type(lib, 'Bus').events,
  export: lib.exported,
  'client option': type(client, 'ClientOptions').members,
  'subscribe option': type(client, 'SubscribeOptions').members,
  'client event': type(client, 'ClientEvents').members,
  'subscription event': type(client, 'SubscriptionEvents').members,
  'client export': client.exported,
};

test('api.md: the .d.ts files were read (a parse that finds nothing checks nothing)', () => {
  assert.ok(TABLES.option.size > 40, `ServerOptions: ${[...TABLES.option]}`);
  assert.ok(TABLES.event.has('open') && TABLES.event.has('error'), 'Server events');
  assert.ok(lib.exported.has('Server') && lib.exported.has('allocator') && lib.exported.has('LoadError'), 'lib exports');
  assert.ok(client.exported.has('SymphonyClient') && client.exported.has('connect'), 'client exports');
  assert.ok(type(lib, 'Server').members.has('publish') && type(client, 'SymphonyClient').members.has('request'), 'methods');
});

for (const [head, declared] of Object.entries(TABLES)) {
  test(`api.md: the '${head}' table lists exactly the .d.ts's`, () => {
    assert.ok(found.has(head), `${DOC} has a table whose first header cell is '${head}'`);
    same(`'${head}' table`, found.get(head), declared);
  });
}

test('api.md: every table it has is one of those checked (a renamed header is not silently unchecked)', () => {
  const unchecked = [...found.keys()].filter((h) => !(h in TABLES) && !['error code', 'code'].includes(h));
  // Tables that list no declared names: close codes ('code'); the error codes are checked below.
  assert.deepEqual(unchecked, []);
});

// receiver in docs/api.md -> the declared members it must show, and may use
const emitter = new Set(Object.getOwnPropertyNames(EventEmitter.prototype));
const RECEIVERS = [
  { prefix: 'server.bus.', members: type(lib, 'Bus').members, allowed: emitter },
  { prefix: 'server.', members: type(lib, 'Server').members, allowed: emitter },
  { prefix: 'topic.', members: type(lib, 'Topic').members, allowed: null }, // topic.startsWith() in examples: not checked back
  { prefix: 'allocator.', members: type(lib, 'allocator').members, allowed: new Set() },
  { prefix: 'client.', members: type(client, 'SymphonyClient').members, allowed: new Set() },
  { prefix: 'subscription.', members: type(client, 'Subscription').members, allowed: new Set() },
];

/** Each NAME the page uses as `prefix.NAME` (server.bus.x counts for server.bus., not for server.). */
function uses(prefix) {
  const names = [];
  const re = new RegExp(`(?<![\\w./-])${prefix.replace(/\./g, '\\.')}([A-Za-z_$][\\w$]*)`, 'g');
  for (const m of text.matchAll(re)) {
    if (prefix === 'server.' && m[1] === 'bus' && text[m.index + m[0].length] === '.') continue;
    names.push(m[1]);
  }
  return names;
}

for (const { prefix, members, allowed } of RECEIVERS) {
  test(`api.md: every method and property of ${prefix.slice(0, -1)} is shown as ${prefix}NAME, and each one shown exists`, () => {
    const used = uses(prefix);
    const skip = new Set(['on', 'off', 'once']); // shown in the events' sections, and as client.on(...)
    const missing = [...members].filter((n) => !skip.has(n) && !used.includes(n)).sort();
    assert.deepEqual(missing, [], `declared, but ${DOC} never shows ${prefix}NAME for them`);
    if (allowed) {
      const unknown = [...new Set(used)].filter((n) => !members.has(n) && !allowed.has(n)).sort();
      assert.deepEqual(unknown, [], `${DOC} shows ${prefix}NAME for names that are not declared`);
    }
  });
}

/** Every error code the sources give: quoted in lib/ and client/ JS, named in the .d.ts files, thrown by binding/. */
function sourceCodes() {
  const codes = new Set();
  const add = (file, re) => { for (const m of read(file).matchAll(re)) codes.add(m[1]); };
  for (const f of fs.readdirSync(path.join(root, 'lib')).filter((f) => f.endsWith('.js'))) add(`lib/${f}`, /'(ERR_[A-Z0-9_]+)'/g);
  add('client/symphony-client.mjs', /'(ERR_[A-Z0-9_]+)'/g);
  add('lib/index.d.ts', /\b(ERR_[A-Z0-9_]+)\b/g);
  add('client/symphony-client.d.ts', /\b(ERR_[A-Z0-9_]+)\b/g);
  for (const f of fs.readdirSync(path.join(root, 'binding')).filter((f) => f.endsWith('.c'))) {
    add(`binding/${f}`, /(?:sy_napi_throw|napi_throw_(?:type_|range_)?error)\(\s*env,\s*(?:[^,;]*\?\s*)?"(ERR_[A-Z0-9_]+)"/g);
    add(`binding/${f}`, /:\s*"(ERR_[A-Z0-9_]+)"/g); // the second arm of a ternary code
  }
  return codes;
}

test("api.md: the 'error code' table lists exactly the codes the sources give, and the page names no other", () => {
  const codes = sourceCodes();
  assert.ok(codes.size > 20 && codes.has('ERR_SYMPHONY_LOAD') && codes.has('ERR_SYMPHONY_NOT_SUPPORTED'), [...codes].join(' '));
  assert.ok(found.has('error code'), `${DOC} has a table whose first header cell is 'error code'`);
  same("'error code' table", found.get('error code'), codes);
  const named = [...new Set([...text.matchAll(/\b(ERR_[A-Z0-9_]+)\b/g)].map((m) => m[1]))];
  assert.deepEqual(named.filter((c) => !codes.has(c)).sort(), [], `${DOC} names codes that no source gives`);
});
