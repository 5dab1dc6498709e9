'use strict';
// The client's size as a page downloads it: client/symphony-client.mjs
// minified by esbuild (a devDependency) and gzipped (level 9). Prints bytes;
// README.md's quick start and docs/api.md's client section quote the min+gzip number.
//
//   node scripts/client-size.js [--json]

const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const esbuild = require('esbuild');

const file = path.resolve(__dirname, '..', 'client', 'symphony-client.mjs');
const source = fs.readFileSync(file, 'utf8');
const { code } = esbuild.transformSync(source, { minify: true, format: 'esm', target: 'es2020', loader: 'js' });
const sizes = {
  source: Buffer.byteLength(source),
  min: Buffer.byteLength(code),
  minGzip: zlib.gzipSync(code, { level: 9 }).length,
};
if (process.argv.includes('--json')) console.log(JSON.stringify(sizes));
else console.log(`client/symphony-client.mjs: ${sizes.source} bytes, minified ${sizes.min} bytes, minified + gzipped ${sizes.minGzip} bytes`);
