'use strict';
// tokens — what verifying one client's token costs, beside what OpenSSL
// and Node cost for the same signature, on one core (docs/tokens.md's
// figures come from it).
//
//   node bench/micro/tokens.js [--cpu 1] [--passes 3] [--rounds 3] [--ms 200] [--driver FILE] [--no-openssl] [--json FILE] [--out DIR | --no-store]
//   (npm run bench:tokens -- ...)
//
// What it prints is also stored, so that a figure docs/tokens.md quotes can
// name the run it comes from (__test__/repo/docs-figures-pages.test.js reads
// bench/results/<run>/report.md): DIR/report.md and DIR/results.json, DIR
// bench/results/<date>-tokens/ unless --out says otherwise (--no-store: only
// print).
//
// For each algorithm (HS256, RS256 2,048 bits, ES256, EdDSA) a key and a
// token of docs/tokens.md's claims are made with node:crypto, then, each
// pinned to the same core (taskset -c CPU) and timed in CPU time (what
// `openssl speed` counts; steadier than wall time on a machine others
// share):
//   - symphony: bench/micro/jwt_verify.c, built here into bench/out/ at
//     -O2 against the addon's own OpenSSL, jemalloc and yyjson
//     (deps/*.sh, the builds scripts/build.js links): src/auth's signature
//     step ("sig"), the JWS layer ("jws": base64url, the header's JSON, the
//     key) and the whole token ("token": and the claims), and the same
//     OpenSSL with every context kept, as `openssl speed` runs it ("raw");
//   - node: Node's own crypto.verify (createHmac for HS256) on a KeyObject
//     made once, the signature already decoded (Node's OpenSSL);
//   - openssl speed: the `openssl` command when there is one (the
//     system's OpenSSL, named in the output): rsa2048, ecdsap256, ed25519
//     verify, and -hmac sha256 over the signing input's length.
// --passes passes, each running all three (so that a busy spell of the
// machine falls on all of them), of --rounds rounds of about --ms ms each
// (openssl speed: one run of 1 s a pass). Each figure is the median of
// every round, with the rounds' spread. The ratios: symphony's signature
// step over the same OpenSSL's raw loop, and over Node's verify (the goal
// of issue 43: 1.1x at most).

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const ALGS = ['HS256', 'RS256', 'ES256', 'EdDSA'];

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  return typeof def === 'number' ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
const flag = (name) => process.argv.includes(`--${name}`);

const b64url = (b) => Buffer.from(b).toString('base64url');

/** docs/tokens.md's claims: a sub, an audience, an expiry and topics. */
function claims() {
  return {
    sub: 'user-42', aud: 'chat', iss: 'https://auth.example.com', exp: 4102444800, iat: 1767225600,
    topics: { subscribe: ['chat.room-1', 'chat.room-2', 'presence.*', 'user-42.*'], publish: ['chat.room-1', 'user-42.typing'] },
  };
}

/** One key and token per algorithm: { alg, jwk (JSON), token, input, sig, key }. */
function makeTokens() {
  const out = [];
  for (const alg of ALGS) {
    let priv;
    let pub;
    if (alg === 'HS256') {
      priv = pub = crypto.createSecretKey(crypto.randomBytes(32));
    } else {
      const kp = alg === 'RS256' ? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 })
        : alg === 'ES256' ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
          : crypto.generateKeyPairSync('ed25519');
      priv = kp.privateKey;
      pub = kp.publicKey;
    }
    const header = { alg, typ: 'JWT', kid: `${alg.toLowerCase()}-1` };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims()))}`;
    const data = Buffer.from(input);
    const sig = alg === 'HS256' ? crypto.createHmac('sha256', priv).update(data).digest()
      : alg === 'ES256' ? crypto.sign('sha256', data, { key: priv, dsaEncoding: 'ieee-p1363' })
        : crypto.sign(alg === 'EdDSA' ? null : 'sha256', data, priv);
    const jwk = { ...pub.export({ format: 'jwk' }), alg, kid: header.kid };
    out.push({ alg, jwk: JSON.stringify(jwk), token: `${input}.${b64url(sig)}`, input, sig: sig.toString('base64') });
  }
  return out;
}

/** bench/out/jwt_verify, built when missing or older than what it is made of. */
function buildDriver() {
  const { depDir } = require(path.join(root, 'scripts', 'deps'));
  const dirs = { ssl: depDir('openssl'), je: depDir('jemalloc', ['--lg-page', '12']), yy: depDir('yyjson') };
  const srcs = [path.join('bench', 'micro', 'jwt_verify.c'),
    ...fs.readdirSync(path.join(root, 'src', 'auth')).filter((f) => f.endsWith('.c')).map((f) => path.join('src', 'auth', f)),
    'src/base/sy_json.c', 'src/base/sy_alloc.c', 'src/tls/sy_tls.c', 'src/proto/sy_base64.c'];
  const out = path.join(root, 'bench', 'out', 'jwt_verify');
  const libs = [`${dirs.ssl}/libssl.a`, `${dirs.ssl}/libcrypto.a`, `${dirs.yy}/libyyjson.a`, `${dirs.je}/lib/libjemalloc_pic.a`];
  const inputs = [...srcs.map((f) => path.join(root, f)), ...fs.readdirSync(path.join(root, 'src', 'auth')).map((f) => path.join(root, 'src', 'auth', f)), ...libs];
  const built = fs.existsSync(out) ? fs.statSync(out).mtimeMs : 0;
  if (built > 0 && inputs.every((f) => fs.statSync(f).mtimeMs < built)) return out;
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const args = ['-std=c11', '-O2', '-Wall', '-Wextra', '-Werror', '-DSY_USE_JEMALLOC', '-DSY_LG_PAGE=12', '-Isrc',
    `-I${dirs.ssl}/include`, `-I${dirs.yy}/include`, `-I${dirs.je}/include`, ...srcs, '-o', out, ...libs, '-lpthread', '-ldl', '-lm'];
  const r = spawnSync(process.env.CC || 'gcc', args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`tokens: building ${out} failed`);
  return out;
}

function pinned(cpu, cmd, args, opts = {}) {
  const hasTaskset = spawnSync('taskset', ['--version']).status === 0;
  const [c, a] = hasTaskset ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args];
  const r = spawnSync(c, a, { encoding: 'utf8', maxBuffer: 16 << 20, ...opts });
  if (r.error) throw r.error;
  return r;
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const stat = (v) => ({ median: median(v), min: Math.min(...v), max: Math.max(...v), rounds: v });

/** The iterations of a round of about ms for one token (a short probe). */
function iterations(driver, t, cpu, ms) {
  const probe = pinned(cpu, driver, ['1', '20', t.jwk, t.token]);
  if (probe.status !== 0) throw new Error(`tokens: jwt_verify ${t.alg}: ${probe.stderr}`);
  return Math.max(20, Math.round((ms * 1000) / JSON.parse(probe.stdout).sig[0]));
}

/** The C driver for one token: { raw, sig, jws, token }, µs per round. */
function symphony(driver, t, cpu, rounds, n) {
  const r = pinned(cpu, driver, [String(rounds), String(n), t.jwk, t.token]);
  if (r.status !== 0) throw new Error(`tokens: jwt_verify ${t.alg}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** The child's side: Node's verify of each token, µs of CPU time per call per round. */
function nodeChild() {
  const { tokens, rounds, ms } = JSON.parse(fs.readFileSync(0, 'utf8'));
  const res = {};
  for (const t of tokens) {
    const jwk = JSON.parse(t.jwk);
    const data = Buffer.from(t.input);
    const sig = Buffer.from(t.sig, 'base64');
    let once;
    if (t.alg === 'HS256') {
      const key = crypto.createSecretKey(Buffer.from(jwk.k, 'base64url'));
      once = () => crypto.timingSafeEqual(crypto.createHmac('sha256', key).update(data).digest(), sig);
    } else {
      const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
      const md = t.alg === 'EdDSA' ? null : 'sha256';
      const k = t.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key;
      once = () => crypto.verify(md, data, k, sig);
    }
    const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
    const time = (n) => {
      const t0 = cpu();
      for (let i = 0; i < n; i++) if (!once()) throw new Error(`node: ${t.alg} does not verify`);
      return (cpu() - t0) / n;
    };
    time(200); // warm: the JIT, OpenSSL's fetches
    const probe = time(200);
    const n = Math.max(20, Math.round((ms * 1000) / Math.max(probe, 0.05)));
    res[t.alg] = Array.from({ length: rounds }, () => time(n));
  }
  process.stdout.write(JSON.stringify(res));
}

function nodeVerify(tokens, cpu, rounds, ms) {
  const r = pinned(cpu, process.execPath, [__filename, '--node-child'], { input: JSON.stringify({ tokens, rounds, ms }) });
  if (r.status !== 0) throw new Error(`tokens: the Node child failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function opensslVersion() {
  const version = spawnSync('openssl', ['version'], { encoding: 'utf8' });
  return version.error || version.status !== 0 ? null : version.stdout.trim();
}

/** One `openssl speed -mr -seconds 1` run per alg: µs per verify by alg, in its own CPU time. */
function opensslSpeed(tokens, cpu) {
  const out = {};
  const per = (alg, args, pick) => {
    const r = pinned(cpu, 'openssl', ['speed', '-mr', '-seconds', '1', ...args]);
    const us = pick(`${r.stdout}\n${r.stderr}`);
    if (us != null) out[alg] = [us];
  };
  // -mr lines: +F2:i:bits:sign/s:verify/s (RSA) ... (3.0) or +F2:i:bits:sign:verify:enc:dec (3.x later);
  // ECDSA +F4:i:bits:sign/s:verify/s, EdDSA +F6:i:bits:name:sign/s:verify/s; HMAC +F:i:name:bytes/s.
  const verifyRate = (re, col) => (text) => {
    const m = text.split('\n').find((l) => re.test(l));
    return m ? 1e6 / Number(m.split(':')[col]) : null;
  };
  per('RS256', ['rsa2048'], verifyRate(/^\+F2:/, 4));
  per('ES256', ['ecdsap256'], verifyRate(/^\+F4:/, 4));
  per('EdDSA', ['ed25519'], verifyRate(/^\+F6:/, 5));
  const bytes = tokens.find((t) => t.alg === 'HS256').input.length;
  per('HS256', ['-hmac', 'sha256', '-bytes', String(bytes)], (text) => {
    const m = text.split('\n').find((l) => /^\+F:/.test(l));
    return m ? (1e6 * bytes) / Number(m.split(':').pop()) : null;
  });
  return out;
}

function fmt(s) {
  if (!s) return '-';
  const d = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  return `${d(s.median)} (${d(s.min)}-${d(s.max)})`;
}

function main() {
  if (flag('node-child')) return nodeChild();
  const cpu = arg('cpu', Math.min(1, os.cpus().length - 1));
  const passes = arg('passes', 3);
  const rounds = arg('rounds', 3);
  const ms = arg('ms', 200);
  const driver = arg('driver', null) || buildDriver();
  const speedVersion = flag('no-openssl') ? null : opensslVersion();
  const tokens = makeTokens();
  const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const n = Object.fromEntries(tokens.map((t) => [t.alg, iterations(driver, t, cpu, ms)]));
  // by alg: { raw, sig, jws, token, node, speed: [µs per round] }
  const all = Object.fromEntries(ALGS.map((a) => [a, { raw: [], sig: [], jws: [], token: [], node: [], speed: [] }]));
  const add = (alg, key, v) => all[alg][key].push(...v);
  for (let p = 0; p < passes; p++) {
    for (const t of tokens) for (const [k, v] of Object.entries(symphony(driver, t, cpu, rounds, n[t.alg]))) add(t.alg, k, v);
    for (const [alg, v] of Object.entries(nodeVerify(tokens, cpu, rounds, ms))) add(alg, 'node', v);
    if (speedVersion) for (const [alg, v] of Object.entries(opensslSpeed(tokens, cpu))) add(alg, 'speed', v);
  }
  const loadAfter = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const st = Object.fromEntries(ALGS.map((a) => [a, Object.fromEntries(Object.entries(all[a]).map(([k, v]) => [k, v.length ? stat(v) : null]))]));

  const lines = [];
  const out = (l) => { lines.push(l); console.log(l); };
  out(`tokens: µs of CPU time per verification, median (min-max) of ${passes} passes × ${rounds} rounds of ~${ms} ms, pinned to cpu ${cpu}`);
  out(`${os.cpus()[0].model}, ${os.cpus().length} cores; load average ${load} before, ${loadAfter} after`);
  out(`symphony: ${path.relative(root, driver)} (OpenSSL 3.5.7 of deps/openssl.sh); node ${process.version} (OpenSSL ${process.versions.openssl})${speedVersion ? `; openssl speed: ${speedVersion}` : ''}`);
  const rows = [['alg', 'sig step', 'jws layer', 'whole token', 'same OpenSSL, raw', 'Node verify', 'openssl speed', 'sig/raw', 'sig/Node']];
  for (const t of tokens) {
    const s = st[t.alg];
    rows.push([t.alg, fmt(s.sig), fmt(s.jws), fmt(s.token), fmt(s.raw), fmt(s.node), fmt(s.speed),
      `${(s.sig.median / s.raw.median).toFixed(2)}x`, `${(s.sig.median / s.node.median).toFixed(2)}x`]);
  }
  const w = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const [i, r] of rows.entries()) {
    out(`| ${r.map((c, j) => c.padEnd(w[j])).join(' | ')} |`);
    if (i === 0) out(`|${w.map((x) => '-'.repeat(x + 2)).join('|')}|`);
  }
  const results = JSON.stringify({ cpu, passes, rounds, ms, load: [load, loadAfter], node: process.version, speed: speedVersion,
    tokens: tokens.map((t) => ({ alg: t.alg, bytes: t.token.length })), results: st }, null, 2);
  const json = arg('json', null);
  if (json) fs.writeFileSync(json, results);
  if (!flag('no-store')) {
    const dir = path.resolve(arg('out', path.join(root, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}-tokens`)));
    fs.mkdirSync(dir, { recursive: true });
    const cmd = `node bench/micro/tokens.js ${process.argv.slice(2).join(' ')}`.trim();
    fs.writeFileSync(path.join(dir, 'report.md'), `# Token verification cost, ${new Date().toISOString()}\n\n\`${cmd}\`\n\n${lines.join('\n')}\n`);
    fs.writeFileSync(path.join(dir, 'results.json'), `${results}\n`);
    console.log(`stored in ${path.relative(process.cwd(), dir) || '.'}/report.md and results.json`);
  }
}

main();
