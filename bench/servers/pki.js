'use strict';
// A throwaway PKI for the TLS tests and the benchmark's TLS arms, made with
// the openssl command once per process in a temp folder (removed at exit):
// a CA, two server certificates for 127.0.0.1/localhost (a and b, for
// reloads), one for the SNI name sni.test, an RSA-2048 one, a client
// certificate, a self-signed client certificate (stranger), the key of `a` encrypted with the passphrase "secret", and a
// key that matches nothing.
// SYMPHONY_TEST_PKI=DIR: the files made in DIR beforehand by makePki (on a
// machine with the openssl command; the Windows gate makes them on Linux
// for the suites it runs under Wine, where there is none), read, not made.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

let made = null;

function openssl(dir, args) {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function leaf(dir, name, subject, san, keyArgs, usage = 'serverAuth') {
  openssl(dir, ['req', '-new', '-newkey', ...keyArgs, '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
  fs.writeFileSync(path.join(dir, `${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=${usage}\n`);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.pem`]);
}

/** Makes every file of the PKI in dir with the openssl command. */
function makePki(dir) {
  const ec = ['ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  openssl(dir, ['req', '-x509', '-newkey', ...ec, '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2',
    '-subj', '/CN=symphony test CA', '-addext', 'basicConstraints=critical,CA:true', '-addext', 'keyUsage=critical,keyCertSign']);
  const local = 'DNS:localhost,IP:127.0.0.1';
  leaf(dir, 'a', '/CN=symphony-a', local, ec);
  leaf(dir, 'b', '/CN=symphony-b', local, ec);
  leaf(dir, 'sni', '/CN=sni.test', 'DNS:sni.test', ec);
  leaf(dir, 'rsa', '/CN=symphony-rsa', local, ['rsa:2048']);
  leaf(dir, 'client', '/CN=symphony-client', 'DNS:client.test', ec, 'clientAuth');
  openssl(dir, ['req', '-x509', '-newkey', ...ec, '-nodes', '-keyout', 'stranger.key', '-out', 'stranger.pem', '-days', '2',
    '-subj', '/CN=stranger', '-addext', 'extendedKeyUsage=clientAuth']);
  openssl(dir, ['pkey', '-in', 'a.key', '-aes256', '-passout', 'pass:secret', '-out', 'a.enc.key']);
  openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'stray.key']);
}

/** { dir, ca, a: {cert, key}, b, sni, rsa, encryptedKey, strayKey } as Buffers
 * (a, b and sni are ECDSA P-256, rsa RSA-2048). */
function pki(env = process.env) {
  if (made) return made;
  const given = env.SYMPHONY_TEST_PKI;
  const dir = given || fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-pki-'));
  if (!given) makePki(dir);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  const pair = (n) => ({ cert: read(`${n}.pem`), key: read(`${n}.key`) });
  made = {
    dir, ca: read('ca.pem'), a: pair('a'), b: pair('b'), sni: pair('sni'), rsa: pair('rsa'), client: pair('client'), stranger: pair('stranger'),
    encryptedKey: read('a.enc.key'), strayKey: read('stray.key'),
  };
  if (!given) process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return made;
}

/** The server certificate of a benchmark arm: BENCH_TLS=ecdsa|rsa, or null. */
function benchTls(env = process.env) {
  const kind = env.BENCH_TLS;
  if (!kind) return null;
  if (kind !== 'ecdsa' && kind !== 'rsa') throw new Error(`BENCH_TLS must be ecdsa or rsa (got ${kind})`);
  const p = pki();
  return kind === 'rsa' ? p.rsa : p.a;
}

module.exports = { makePki, pki, benchTls };
