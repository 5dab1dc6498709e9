#!/usr/bin/env bash
# Fetch, verify and build the private jemalloc that symphony links statically.
#
#   deps/jemalloc.sh [--lg-page N] [--host TRIPLE] [--cc CC]
#
# On macOS (a darwin host or triple) without its malloc zone
# (--disable-zone-allocator, below); Apple Silicon needs --lg-page 14.
#
# Prints the build folder on its last line of stdout; the archive is
# <folder>/lib/libjemalloc_pic.a and the header <folder>/include/jemalloc/jemalloc.h.
#
# The release tarball is taken from, in order:
#   1. $SYMPHONY_JEMALLOC_TARBALL (a path; it must match the pinned sha256),
#   2. the local cache ($SYMPHONY_CACHE_DIR, default deps/cache),
#   3. Debian's source package (its .orig tarball is the upstream release,
#      byte for byte), fetched with a private apt configuration that adds
#      deb-src to the machine's own apt sources without changing them,
#   4. the upstream release URL, where the internet is reachable.
# The sha256 is checked every time. A build is cached per (host, page size,
# configure flags, patches), so rebuilding symphony never rebuilds jemalloc.
# Nothing of jemalloc's source is ever committed.
set -euo pipefail

JE_VERSION=5.3.0
JE_SHA256=2db82d1e7119df3e71b7640219b6dfe84789bc0537983c3b7ac4f7189aecfeaa
JE_URL="https://github.com/jemalloc/jemalloc/releases/download/${JE_VERSION}/jemalloc-${JE_VERSION}.tar.bz2"

here=$(cd "$(dirname "$0")" && pwd)
cache=${SYMPHONY_CACHE_DIR:-$here/cache}
lg_page=12
host=
cc=${CC:-cc}

while [ $# -gt 0 ]; do
  case "$1" in
    --lg-page) lg_page=$2; shift 2 ;;
    --host) host=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    *) echo "jemalloc.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
case "$lg_page" in 12|14|16) ;; *) echo "jemalloc.sh: --lg-page must be 12, 14 or 16, not '$lg_page'" >&2; exit 2 ;; esac

log() { echo "jemalloc: $*" >&2; }
# shellcheck source=deps/lib.sh
. "$here/lib.sh"

mkdir -p "$cache"
tarball="$cache/jemalloc-${JE_VERSION}.tar.bz2"

# One build at a time per cache folder.
lock_file "$cache/.lock"

fetch_from_debian() {
  local apt="$cache/apt"
  private_apt "$apt" deb-src || return 1
  (cd "$apt/dl" && apt-get "${APT_OPTS[@]}" source --download-only "jemalloc=${JE_VERSION}-1" >&2 ||
                   apt-get "${APT_OPTS[@]}" source --download-only jemalloc >&2) || return 1
  local orig="$apt/dl/jemalloc_${JE_VERSION}.orig.tar.bz2"
  [ -f "$orig" ] || return 1
  cp "$orig" "$tarball.tmp" && mv "$tarball.tmp" "$tarball"
  rm -rf "$apt"
}

fetch_release "$tarball" "$JE_SHA256" SYMPHONY_JEMALLOC_TARBALL "$JE_URL" fetch_from_debian

configure_flags=(
  --with-jemalloc-prefix=sy_je_ --with-private-namespace=sy_je_
  --disable-cxx --enable-static --disable-shared --without-export
  --disable-doc --disable-prof --disable-libdl --enable-stats
  --disable-initial-exec-tls
  "--with-lg-page=$lg_page" --with-lg-hugepage=21
)
[ -n "$host" ] && configure_flags+=("--host=$host")

triple=${host:-$("$cc" -dumpmachine)}
# macOS: jemalloc's malloc zone would be registered at load, as the
# process's default zone: the whole process (Node too) would allocate from
# our jemalloc. symphony keeps to its prefixed functions, so there is none
# (scripts/macos-gate.js checks that no zone function is referenced).
case "$triple" in
  *-apple-darwin*) configure_flags+=(--disable-zone-allocator) ;;
esac
key=$( { echo "$JE_VERSION $cc $(key_flags "${CFLAGS:-}") ${configure_flags[*]}"; cat "$here"/patches/jemalloc/*.patch; included_files "${CFLAGS:-}"; } | sha256sum | cut -c1-12)
out="$cache/build/jemalloc-${JE_VERSION}-${triple}-lg${lg_page}-${key}"

if [ -f "$out/.built" ]; then
  log "cached build $out"
  echo "$out"
  exit 0
fi

log "building $out"
rm -rf "$out"
mkdir -p "$cache/build"
tmp="$out.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
tar -xjf "$tarball" -C "$tmp" --strip-components=1
for p in "$here"/patches/jemalloc/*.patch; do
  patch -d "$tmp" -p1 --quiet < "$p"
done
start=$(date +%s)
(cd "$tmp" && CC="$cc" ./configure "${configure_flags[@]}" >configure.out 2>&1) || {
  tail -30 "$tmp/configure.out" >&2; exit 1; }
# Windows (mingw-w64): the static library is lib/jemalloc.lib and there is
# no _pic twin (all code is position-independent there); it takes the name
# every consumer links.
lib=lib/libjemalloc_pic.a
case "$triple" in
  *-w64-mingw32*) lib=lib/jemalloc.lib ;;
esac
(cd "$tmp" && make -j"$(nproc)" "$lib" >make.out 2>&1) || {
  tail -30 "$tmp/make.out" >&2; exit 1; }
[ "$lib" = lib/libjemalloc_pic.a ] || mv "$tmp/$lib" "$tmp/lib/libjemalloc_pic.a"
mv "$tmp" "$out"
echo "$(( $(date +%s) - start ))" > "$out/.built"
log "built in $(cat "$out/.built") s"
echo "$out"
