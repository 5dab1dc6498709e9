#!/usr/bin/env bash
# Fetches, verifies and builds yyjson 0.10.0 as a static, PIC library with
# hidden symbols: the JSON reader of src/ (base/sy_json.h), for what clients
# send (proto/sy_v2.c) and the claims of tokens.
#
#   deps/yyjson.sh [--host TRIPLE] [--cc CC]     prints the build folder
#   deps/yyjson.sh --host x86_64-pc-windows-msvc --cc cl
#       MSVC (Windows from source; deps/lib.sh msvc_select): yyjson.c with the
#       same defines compiled by cl -O2 -MT, archived by lib.exe ($AR,
#       default lib) as libyyjson.lib (binding.gyp's OS=="win" name).
#
# Debian's source packages (checked with apt-cache showsrc through a private
# apt configuration): yyjson 0.10.0+ds-1 in Debian 13 (trixie) only; jansson
# 2.14-2 in Debian 12 and 13; cJSON 1.7.15-1+deb12u4 in Debian 12 and
# 1.7.18-3.1+deb13u1 in Debian 13.
#
# Why yyjson and not jansson or cJSON (both in Debian 12): yyjson takes an
# allocator per call (yyjson_alc), so a document's memory comes from
# sy_alloc on the thread that parses it (its own jemalloc arena) and nothing
# process-wide is set; jansson (json_set_alloc_funcs) and cJSON
# (cJSON_InitHooks) only have global hooks. yyjson validates UTF-8 while it
# reads (the default; nothing here turns it off), rejects comments,
# trailing commas and NaN unless asked, is one C file with no dependencies
# (no cmake, so the cross and musl toolchains need nothing more) and keeps
# its own fuzzing in its tree. MIT licence.
#
# The release comes from, in order: $SYMPHONY_YYJSON_TARBALL, the cache
# (deps/cache), Debian 13's source package (yyjson 0.10.0+ds: upstream's
# 0.10.0 with nothing removed from src/; fetched through a private apt
# configuration, the system's apt setup is not changed). Its sha256 is
# checked every time. Debian's .orig tarball is the one pinned (upstream's
# tag archive is another file), kept in the cache as yyjson-0.10.0.tar.xz.
set -euo pipefail

YY_VERSION=0.10.0
YY_SHA256=ae6fde69a193e10afab426ef13f113d6903446405f9db9ee98bfb572bd6c961a

here=$(cd "$(dirname "$0")" && pwd)
cache=${SYMPHONY_CACHE_DIR:-$here/cache}
host=
cc=${CC:-cc}
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    *) echo "yyjson.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "yyjson: $*" >&2; }
# shellcheck source=deps/lib.sh
. "$here/lib.sh"

mkdir -p "$cache"
tarball="$cache/yyjson-${YY_VERSION}.tar.xz"
lock_file "$cache/.yyjson.lock"

fetch_from_debian() {
  local apt="$cache/apt-yyjson" ver
  private_apt "$apt" deb-src bookworm trixie || return 1
  ver=$(apt-cache "${APT_OPTS[@]}" showsrc yyjson | awk -v v="$YY_VERSION+ds" '/^Version: /{ if (index($2, v "-") == 1) { print $2; exit } }')
  [ -n "$ver" ] || return 1
  (cd "$apt/dl" && apt-get "${APT_OPTS[@]}" source --download-only --tar-only "yyjson=$ver" >&2 ||
                   apt-get "${APT_OPTS[@]}" source --download-only "yyjson=$ver" >&2) || true
  local orig="$apt/dl/yyjson_${YY_VERSION}+ds.orig.tar.xz"
  [ -f "$orig" ] || return 1
  cp "$orig" "$tarball.tmp" && mv "$tarball.tmp" "$tarball"
  rm -rf "$apt"
}

fetch_release "$tarball" "$YY_SHA256" SYMPHONY_YYJSON_TARBALL "" fetch_from_debian

# MSVC (deps/lib.sh msvc_select): cl and lib.exe.
msvc_select

triple=${host:-$("$cc" -dumpmachine)}
ar=ar
[ -n "$host" ] && command -v "$host-ar" >/dev/null 2>&1 && ar="$host-ar"
# Only the reader and the writer of values (sy_v2 writes a subscribe's data
# back as text) are needed: no mutable documents, no incremental reader.
cflags=(-O2 -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections -DNDEBUG -std=c99 -w
        -DYYJSON_DISABLE_INCR_READER=1 -DYYJSON_DISABLE_UTILS=1)
if [ -n "$msvc" ]; then
  # -MT: node-gyp's Release runtime library (the static CRT); -w as -w.
  ar=${AR:-lib}
  cflags=(-O2 -MT -DNDEBUG -w -DYYJSON_DISABLE_INCR_READER=1 -DYYJSON_DISABLE_UTILS=1)
fi
key=$( { echo "$YY_VERSION $cc $ar $triple $(key_flags "${CFLAGS:-}") ${cflags[*]} keep-src"; included_files "${CFLAGS:-}"; } | sha256sum | cut -c1-12)
out="$cache/build/yyjson-${YY_VERSION}-${triple}-${key}"
shown=$(native_path "$out")
if [ -f "$out/.built" ]; then
  log "cached build $shown"
  echo "$shown"
  exit 0
fi
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp/src" "$out.tmp/include"
tar -xJf "$tarball" -C "$out.tmp/src" --strip-components=1
start=$(date +%s)
if [ -n "$msvc" ]; then
  # shellcheck disable=SC2086 # CFLAGS is a list of flags
  msvc_archive "$cc" "$ar" "$out.tmp" libyyjson.lib "${cflags[@]}" ${CFLAGS:-} -- src/src/yyjson.c
else
  # shellcheck disable=SC2086 # CFLAGS is a list of flags (the glibc floor's -include)
  "$cc" "${cflags[@]}" ${CFLAGS:-} -c "$out.tmp/src/src/yyjson.c" -o "$out.tmp/yyjson.o"
  "$ar" rcs "$out.tmp/libyyjson.a" "$out.tmp/yyjson.o"
  rm -f "$out.tmp/yyjson.o"
fi
cp "$out.tmp/src/src/yyjson.h" "$out.tmp/include/"
cp "$out.tmp/src/LICENSE" "$out.tmp/"
mv "$out.tmp" "$out"
echo "$(( $(date +%s) - start ))" > "$out/.built"
log "built in $(cat "$out/.built") s"
echo "$shown"
