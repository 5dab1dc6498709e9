'use strict';
// A registry on loopback that serves the packages of a release from their
// tarballs, as the npm registry would serve them once published: a
// packument per package name (GET /<name>, the scope's slash escaped or
// not) and the tarballs (GET /-/<file>), with their sha512 integrity. npm,
// pnpm and yarn install from it with --registry (yarn 4 with
// unsafeHttpWhitelist). It serves nothing else: a name it does not hold is
// a 404, which a package manager takes as "not published" (an optional
// dependency it then leaves out). Used by scripts/test-artifacts.js to show
// which tarballs each package manager fetches; every tarball request is
// recorded in `fetched`.

const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

/** package/package.json of an npm tarball, parsed. */
function manifestOfTarball(file) {
  return JSON.parse(execFileSync('tar', ['-xzOf', file, 'package/package.json'], { encoding: 'utf8' }));
}

/**
 * Starts the registry for the given tarballs. Resolves { url, fetched,
 * close() }: url ends with '/', fetched lists the tarball file names
 * requested, in order.
 */
async function startRegistry(tarballs) {
  const byName = new Map();
  const files = new Map();
  for (const tgz of tarballs) {
    const m = manifestOfTarball(tgz);
    const data = fs.readFileSync(tgz);
    const file = path.basename(tgz);
    files.set(file, data);
    byName.set(m.name, { manifest: m, file, data });
  }
  const fetched = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const p = decodeURIComponent(url.pathname);
    if (p.startsWith('/-/')) {
      const data = files.get(p.slice(3));
      if (!data) return notFound(res);
      fetched.push(p.slice(3));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length });
      return res.end(data);
    }
    const entry = byName.get(p.slice(1));
    if (!entry) return notFound(res);
    const { manifest: m, file, data } = entry;
    const base = `http://${req.headers.host}/-/`;
    const version = {
      ...m,
      _id: `${m.name}@${m.version}`,
      dist: {
        tarball: `${base}${encodeURIComponent(file)}`,
        integrity: `sha512-${crypto.createHash('sha512').update(data).digest('base64')}`,
        shasum: crypto.createHash('sha1').update(data).digest('hex'),
      },
    };
    const body = JSON.stringify({
      _id: m.name, name: m.name, 'dist-tags': { latest: m.version },
      versions: { [m.version]: version }, time: { [m.version]: new Date(0).toISOString() },
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    return res.end(body);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    fetched,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

function notFound(res) {
  const body = '{"error":"Not found"}';
  res.writeHead(404, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

module.exports = { startRegistry, manifestOfTarball };
