#!/usr/bin/env bash
# Fetches, verifies and builds hiredis 1.2.0 as a static, PIC library with
# hidden symbols, for the Redis bus (issue 12), linked into the addon
# (binding.gyp's sy_hiredis_dir). Its memory goes through sy_alloc
# (src/bus/sy_redis_alloc.c, hiredisSetAllocators).
#
#   deps/hiredis.sh [--host TRIPLE] [--cc CC] [--openssl DIR]   prints the build folder
#   deps/hiredis.sh --host x86_64-pc-windows-msvc --cc cl --openssl DIR
#       MSVC (Windows from source; deps/lib.sh msvc_select): the same files
#       (sockcompat.c is hiredis' Windows socket layer; ssl.c against the
#       MSVC OpenSSL of deps/openssl.sh) and define compiled by cl -O2 -MT,
#       archived by lib.exe ($AR, default lib) as libhiredis.lib
#       (binding.gyp's OS=="win" name).
#
# With --openssl (the private OpenSSL's build folder, deps/openssl.sh), ssl.c
# is compiled against it into the same archive, with hiredis_ssl.h: the
# bus' rediss:// (src/tls/sy_bus_tls.c). A static archive's members are
# linked only when referenced, so a build without TLS code never pulls it.
#
# The release tarball comes from, in order: $SYMPHONY_HIREDIS_TARBALL, the
# cache (deps/cache), Debian 13's source package (its .orig tarball is the
# upstream tag archive byte for byte; fetched through a private apt
# configuration, the system's apt setup is not changed), then the upstream
# release where the internet is reachable. Its sha256 is checked every time.
#
# The build folder holds libhiredis.a, the public headers in include/hiredis/
# (code says #include <hiredis/async.h>), COPYING (BSD-3-Clause) and the
# sources in src/ (for an instrumented fuzz build of the RESP reader). Seven
# files, compiled directly (no cmake or make, so the cross and musl
# toolchains need nothing more): not dict.c (async.c includes it), ssl.c
# only with --openssl, no adapters. hiredis marks nothing visible; all
# of it is hidden, and the addon's --exclude-libs,ALL and export map keep it
# out of the .node's exports (scripts/test-artifacts.js and
# __test__/package/binary.test.js check).
set -euo pipefail

HR_VERSION=1.2.0
HR_SHA256=82ad632d31ee05da13b537c124f819eb88e18851d9cb0c30ae0552084811588c
HR_URL="https://github.com/redis/hiredis/archive/refs/tags/v${HR_VERSION}.tar.gz"

here=$(cd "$(dirname "$0")" && pwd)
cache=${SYMPHONY_CACHE_DIR:-$here/cache}
host=
cc=${CC:-cc}
openssl=
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    --openssl) openssl=$(cd "$2" && pwd); shift 2 ;;
    *) echo "hiredis.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "hiredis: $*" >&2; }
# shellcheck source=deps/lib.sh
. "$here/lib.sh"

mkdir -p "$cache"
tarball="$cache/hiredis-${HR_VERSION}.tar.gz"
lock_file "$cache/.hiredis.lock"

fetch_from_debian() {
  debian_orig hiredis "$HR_VERSION" "$tarball" "$cache/apt-hiredis"
}

fetch_release "$tarball" "$HR_SHA256" SYMPHONY_HIREDIS_TARBALL "$HR_URL" fetch_from_debian

# MSVC (deps/lib.sh msvc_select): cl and lib.exe.
msvc_select

triple=${host:-$("$cc" -dumpmachine)}
ar=ar
[ -n "$host" ] && command -v "$host-ar" >/dev/null 2>&1 && ar="$host-ar"
files=(alloc.c async.c hiredis.c net.c read.c sds.c sockcompat.c)
# The public API and what it includes (async.h -> hiredis.h -> read.h, sds.h,
# alloc.h); sockcompat.h and win32.h for code that uses hiredis' socket layer.
headers=(alloc.h async.h hiredis.h read.h sds.h sockcompat.h win32.h)
if [ -n "$openssl" ]; then
  files+=(ssl.c)
  headers+=(hiredis_ssl.h)
fi
# -std=c99 as hiredis' own Makefile builds it (fmacros.h picks POSIX 2001).
cflags=(-O2 -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections -DNDEBUG -std=c99 -w)
if [ -n "$msvc" ]; then
  # -MT: node-gyp's Release runtime library (the static CRT); -w as -w.
  ar=${AR:-lib}
  cflags=(-O2 -MT -DNDEBUG -w)
fi
key=$( { echo "$HR_VERSION $cc $ar $triple $(key_flags "${CFLAGS:-}") ${cflags[*]} ${files[*]} ${headers[*]} keep-src $openssl"; included_files "${CFLAGS:-}"; } | sha256sum | cut -c1-12)
out="$cache/build/hiredis-${HR_VERSION}-${triple}-${key}"
shown=$(native_path "$out")
if [ -f "$out/.built" ]; then
  log "cached build $shown"
  echo "$shown"
  exit 0
fi
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp/src" "$out.tmp/include/hiredis"
tar -xzf "$tarball" -C "$out.tmp/src" --strip-components=1
start=$(date +%s)
objs=()
if [ -n "$msvc" ]; then
  # shellcheck disable=SC2086 # CFLAGS is a list of flags
  msvc_archive "$cc" "$ar" "$out.tmp" libhiredis.lib "${cflags[@]}" ${CFLAGS:-} -Isrc \
    ${openssl:+"-I$(native_path "$openssl")/include"} -- "${files[@]/#/src/}"
else
  for f in "${files[@]}"; do
    o="$out.tmp/${f%.c}.o"
    # shellcheck disable=SC2086 # CFLAGS is a list of flags (the glibc floor's -include)
    "$cc" "${cflags[@]}" ${CFLAGS:-} -I "$out.tmp/src" ${openssl:+-I "$openssl/include"} -c "$out.tmp/src/$f" -o "$o"
    objs+=("$o")
  done
  "$ar" rcs "$out.tmp/libhiredis.a" "${objs[@]}"
fi
for h in "${headers[@]}"; do
  cp "$out.tmp/src/$h" "$out.tmp/include/hiredis/"
done
cp "$out.tmp/src/COPYING" "$out.tmp/"
rm -f ${objs[@]+"${objs[@]}"}
mv "$out.tmp" "$out"
echo "$(( $(date +%s) - start ))" > "$out/.built"
log "built in $(cat "$out/.built") s"
echo "$shown"
