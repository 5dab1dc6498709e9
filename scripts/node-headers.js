'use strict';
// The running Node's headers for node-gyp, without Node's own OpenSSL
// headers: Node's include folder has OpenSSL 3.0's openssl/*.h, and node-gyp
// puts that folder before any include dir a .gyp file names, so the private
// OpenSSL 3.5 (deps/openssl.sh) would lose. This makes a folder of links to
// every entry of include/node except openssl/ and hands that to --nodedir.
// (src/tls/sy_tls.c also refuses headers older than 3.5 at compile time.)

const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

function nodeHeaders() {
  const dir = process.env.npm_config_nodedir || path.resolve(path.dirname(process.execPath), '..');
  const inc = path.join(dir, 'include', 'node');
  if (!fs.existsSync(path.join(inc, 'node_api.h'))) {
    throw new Error(`Node's headers are not at ${inc}; set npm_config_nodedir to a folder with include/node`);
  }
  const cache = process.env.SYMPHONY_CACHE_DIR || path.join(root, 'deps', 'cache');
  const out = path.join(cache, 'node-headers', `${process.version}-${Buffer.from(dir).toString('hex').slice(-16)}`);
  const outInc = path.join(out, 'include', 'node');
  const tmp = `${out}.tmp-${process.pid}`;
  if (!fs.existsSync(outInc)) {
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(path.join(tmp, 'include', 'node'), { recursive: true });
    for (const name of fs.readdirSync(inc)) {
      if (name === 'openssl') continue;
      fs.symlinkSync(path.join(inc, name), path.join(tmp, 'include', 'node', name));
    }
    fs.mkdirSync(path.dirname(out), { recursive: true });
    try {
      fs.renameSync(tmp, out);
    } catch (err) {
      fs.rmSync(tmp, { recursive: true, force: true }); // another build made it meanwhile
      if (!fs.existsSync(outInc)) throw err;
    }
  }
  return out;
}

/**
 * The environment for node-gyp: without npm's nodedir setting (an
 * npm_config_nodedir from ~/.npmrc or the command line), which node-gyp
 * would prefer to the --nodedir we pass, and so find Node's OpenSSL headers
 * again. nodeHeaders() has already used it as the source of the headers.
 */
function gypEnv(env) {
  const out = { ...env };
  for (const k of Object.keys(out)) if (k.toLowerCase() === 'npm_config_nodedir') delete out[k];
  return out;
}

module.exports = { nodeHeaders, gypEnv };
