#!/usr/bin/env bash
# Fetches, verifies and builds libdeflate 1.23 as a static, PIC library with
# hidden symbols, for permessage-deflate (src/io/model/sy_deflate.c), linked into the
# addon (binding.gyp's sy_libdeflate_dir). Why libdeflate and not zlib:
# bench/results/2026-11-30-deflate-choice/REPORT.md.
#
#   deps/libdeflate.sh [--host TRIPLE] [--cc CC]     prints the build folder
#   deps/libdeflate.sh --host x86_64-pc-windows-msvc --cc cl
#       MSVC (Windows from source; deps/lib.sh msvc_select): the same five
#       files and define compiled by cl -O2 -MT, archived by lib.exe ($AR,
#       default lib) as libdeflate.lib (binding.gyp's OS=="win" name).
#
# The release tarball comes from, in order: $SYMPHONY_LIBDEFLATE_TARBALL, the
# cache (deps/cache), Debian 13's source package (its .orig tarball is the
# upstream tag archive byte for byte; fetched through a private apt
# configuration, the system's apt setup is not changed), then the upstream
# release where the internet is reachable. Its sha256 is checked every time.
#
# Only raw DEFLATE is built (no zlib/gzip wrappers, no CLI): five files,
# compiled directly (no cmake, so the cross and musl toolchains need nothing
# more). libdeflate marks its API visibility("default"); the addon's
# --exclude-libs,ALL and export map keep it out of the .node's exports
# (scripts/test-artifacts.js and __test__/package/binary.test.js check).
set -euo pipefail

LD_VERSION=1.23
LD_SHA256=1ab18349b9fb0ce8a0ca4116bded725be7dcbfa709e19f6f983d99df1fb8b25f
LD_URL="https://github.com/ebiggers/libdeflate/archive/refs/tags/v${LD_VERSION}.tar.gz"

here=$(cd "$(dirname "$0")" && pwd)
cache=${SYMPHONY_CACHE_DIR:-$here/cache}
host=
cc=${CC:-cc}
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    *) echo "libdeflate.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "libdeflate: $*" >&2; }
# shellcheck source=deps/lib.sh
. "$here/lib.sh"

mkdir -p "$cache"
tarball="$cache/libdeflate-${LD_VERSION}.tar.gz"
lock_file "$cache/.libdeflate.lock"

fetch_from_debian() {
  debian_orig libdeflate "$LD_VERSION" "$tarball" "$cache/apt-libdeflate"
}

fetch_release "$tarball" "$LD_SHA256" SYMPHONY_LIBDEFLATE_TARBALL "$LD_URL" fetch_from_debian

# MSVC (deps/lib.sh msvc_select): cl and lib.exe.
msvc_select

triple=${host:-$("$cc" -dumpmachine)}
ar=ar
[ -n "$host" ] && command -v "$host-ar" >/dev/null 2>&1 && ar="$host-ar"
files=(lib/deflate_compress.c lib/deflate_decompress.c lib/utils.c lib/x86/cpu_features.c lib/arm/cpu_features.c)
cflags=(-O2 -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections -DNDEBUG -std=c99 -w)
# The sources stay in src/ (the fuzz target compiles them instrumented).
if [ -n "$msvc" ]; then
  # -MT: node-gyp's Release runtime library (the static CRT); -w as -w.
  ar=${AR:-lib}
  cflags=(-O2 -MT -DNDEBUG -w)
fi
key=$( { echo "$LD_VERSION $cc $ar $triple $(key_flags "${CFLAGS:-}") ${cflags[*]} ${files[*]} keep-src"; included_files "${CFLAGS:-}"; } | sha256sum | cut -c1-12)
out="$cache/build/libdeflate-${LD_VERSION}-${triple}-${key}"
shown=$(native_path "$out")
if [ -f "$out/.built" ]; then
  log "cached build $shown"
  echo "$shown"
  exit 0
fi
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp/src" "$out.tmp/include"
tar -xzf "$tarball" -C "$out.tmp/src" --strip-components=1
start=$(date +%s)
objs=()
if [ -n "$msvc" ]; then
  # shellcheck disable=SC2086 # CFLAGS is a list of flags
  msvc_archive "$cc" "$ar" "$out.tmp" libdeflate.lib "${cflags[@]}" ${CFLAGS:-} -Isrc -- "${files[@]/#/src/}"
else
  for f in "${files[@]}"; do
    o="$out.tmp/$(echo "$f" | tr / _).o"
    # shellcheck disable=SC2086 # CFLAGS is a list of flags (the glibc floor's -include)
    "$cc" "${cflags[@]}" ${CFLAGS:-} -I "$out.tmp/src" -c "$out.tmp/src/$f" -o "$o"
    objs+=("$o")
  done
  "$ar" rcs "$out.tmp/libdeflate.a" "${objs[@]}"
fi
cp "$out.tmp/src/libdeflate.h" "$out.tmp/include/"
cp "$out.tmp/src/COPYING" "$out.tmp/"
rm -f ${objs[@]+"${objs[@]}"}
mv "$out.tmp" "$out"
echo "$(( $(date +%s) - start ))" > "$out/.built"
log "built in $(cat "$out/.built") s"
echo "$shown"
