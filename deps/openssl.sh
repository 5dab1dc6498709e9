#!/usr/bin/env bash
# Fetches, verifies and builds OpenSSL 3.5 (the LTS line, supported to
# 2030-04-08) as static, PIC libraries with hidden symbols, for the
# TLS of src/tls, linked into the addon (binding.gyp's sy_openssl_dir).
#
#   deps/openssl.sh [--host TRIPLE] [--cc CC]     prints the build folder
#   deps/openssl.sh --host x86_64-pc-windows-msvc --cc cl
#       MSVC (Windows from source; deps/lib.sh msvc_select): VC-WIN64A with
#       the same lean flags (not the GCC ones), no-shared, so OpenSSL's own
#       configuration compiles the libraries with /MT /Zl (the static CRT,
#       node-gyp's Release one); nmake build_libs makes libssl.lib and
#       libcrypto.lib. Configure wants a native perl ($PERL, else
#       Strawberry's at C:\Strawberry, else perl) and nasm on PATH.
#
# The release tarball comes from, in order: $SYMPHONY_OPENSSL_TARBALL, the
# cache (deps/cache), Debian 13's source package (its .orig tarball is the
# upstream release byte for byte; fetched through a private apt
# configuration, the system's apt setup is not changed), then the upstream
# release where the internet is reachable. Its sha256 is checked every time.
set -euo pipefail

SSL_VERSION=3.5.7
SSL_SHA256=a8c0d28a529ca480f9f36cf5792e2cd21984552a3c8e4aa11a24aa31aeac98e8
SSL_URL="https://github.com/openssl/openssl/releases/download/openssl-${SSL_VERSION}/openssl-${SSL_VERSION}.tar.gz"

here=$(cd "$(dirname "$0")" && pwd)
cache=${SYMPHONY_CACHE_DIR:-$here/cache}
host=
cc=${CC:-cc}
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    *) echo "openssl.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "openssl: $*" >&2; }
# shellcheck source=deps/lib.sh
. "$here/lib.sh"

mkdir -p "$cache"
tarball="$cache/openssl-${SSL_VERSION}.tar.gz"
lock_file "$cache/.openssl.lock"

fetch_from_debian() {
  # Debian 13 (trixie): its openssl is the 3.5 line.
  debian_orig openssl "$SSL_VERSION" "$tarball" "$cache/apt-openssl"
}

fetch_release "$tarball" "$SSL_SHA256" SYMPHONY_OPENSSL_TARBALL "$SSL_URL" fetch_from_debian

# MSVC (deps/lib.sh msvc_select): cl, nmake and a native perl.
msvc_select
if [ -n "$msvc" ]; then
  perl=${PERL:-perl}
  [ -z "${PERL:-}" ] && [ -x /c/Strawberry/perl/bin/perl.exe ] && perl=/c/Strawberry/perl/bin/perl.exe
fi

triple=${host:-$("$cc" -dumpmachine)}
case "$triple" in
  # macOS: a native cc says arm64-apple-darwin24..., the macOS gate's
  # cross cc (deps/darwin-toolchain.sh) aarch64-apple-darwin.
  x86_64-apple-darwin*) target=darwin64-x86_64 ;;
  arm64-apple-darwin* | aarch64-apple-darwin*) target=darwin64-arm64 ;;
  # Windows x64 with mingw-w64 (the Windows gate, scripts/windows-gate.js).
  x86_64-w64-mingw32*) target=mingw64 ;;
  # Windows x64 with MSVC (cl, nmake; Windows from source).
  x86_64-*-windows-msvc) target=VC-WIN64A ;;
  x86_64-*) target=linux-x86_64 ;;
  aarch64-*) target=linux-aarch64 ;;
  *) echo "openssl.sh: no OpenSSL target for $triple" >&2; exit 2 ;;
esac
# Lean: no shared libraries, modules, engines, legacy provider, tests, docs
# or apps; no configuration file (--openssldir points nowhere); PIC, hidden,
# one section per function (the addon links with --gc-sections).
# Also left out: what a TLS 1.2/1.3 server never uses (QUIC, DTLS, SSL 3,
# SRP, compression, CMS/TS/CMP/OCSP/HTTP clients, national and legacy
# ciphers and hashes, binary-field curves, SLH-DSA signatures), and the
# secure heap (never initialised here; it needs Linux kernel headers, which
# the musl toolchains do not carry).
flags=(no-shared no-module no-dso no-engine no-legacy no-tests no-docs no-apps no-ui-console
       no-autoload-config "--openssldir=/nonexistent/symphony-openssl"
       no-quic no-dtls no-ssl3 no-srp no-comp no-ct no-cms no-ts no-cmp no-http no-ocsp
       no-srtp no-sctp no-nextprotoneg no-rfc3779 no-secure-memory
       no-gost no-sm2 no-sm3 no-sm4 no-idea no-camellia no-aria no-seed no-whirlpool no-rc2 no-rc4
       no-bf no-cast no-md4 no-mdc2 no-rmd160 no-siphash no-ec2m no-slh-dsa
       -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections)
if [ -n "$msvc" ]; then
  # The GCC flags (the last four) mean nothing to cl: MSVC's COFF objects
  # are not PIC, export nothing unless asked (dllexport), and the linker's
  # /OPT:REF (node-gyp's Release) drops what is not reached.
  flags=("${flags[@]:0:${#flags[@]}-4}")
fi
# Configure takes CFLAGS from the environment *instead of* its target's
# (-O3 -Wall for gcc and clang: linux, mingw64, darwin64; /O2 for cl), so
# a caller's CFLAGS (scripts/deps.js gives the glibc floor's -include)
# built OpenSSL at -O0: its C code paths (Ed25519 above all) ran 3x
# slower (issue 43). The target's optimisation goes first, the caller's
# flags after it (a caller's own -O still wins).
if [ -n "${CFLAGS:-}" ]; then
  if [ -n "$msvc" ]; then CFLAGS="/O2 $CFLAGS"; else CFLAGS="-O3 $CFLAGS"; fi
  export CFLAGS
fi
key=$( { echo "$SSL_VERSION $cc $target $(key_flags "${CFLAGS:-}") ${flags[*]}"; cat "$here"/patches/openssl/*.patch; included_files "${CFLAGS:-}"; } | sha256sum | cut -c1-12)
out="$cache/build/openssl-${SSL_VERSION}-${triple}-${key}"
shown=$(native_path "$out")
if [ -f "$out/.built" ]; then
  log "cached build $shown"
  echo "$shown"
  exit 0
fi
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
tar -xzf "$tarball" -C "$out.tmp" --strip-components=1
# symphony's patches (deps/patches/openssl/, each says why).
for p in "$here"/patches/openssl/*.patch; do
  patch -d "$out.tmp" -p1 --quiet < "$p"
done
start=$(date +%s)
# A cross build for macOS uses the toolchain's archiver (Apple's ranlib -c);
# one for Windows mingw-w64's (COFF objects) and resource compiler.
tools=()
case "$host" in
  *-apple-darwin*) tools=(AR="$host-ar" RANLIB="$host-ranlib") ;;
  *-w64-mingw32*) tools=(AR="$host-ar" RANLIB="$host-ranlib" RC="$host-windres") ;;
esac
if [ -n "$msvc" ]; then
  # SYMPHONY_OPENSSL_CONFIGURE_ONLY=1 stops after Configure (the check on
  # Linux, scripts/msvc-deps-check.js, which has no nmake: it reads the
  # makefile), leaving the folder unbuilt (no .built).
  (cd "$out.tmp" && CC="$cc" "$perl" Configure "$target" "${flags[@]}" >configure.out 2>&1) || { tail -30 "$out.tmp/configure.out" >&2; exit 1; }
  if [ "${SYMPHONY_OPENSSL_CONFIGURE_ONLY:-}" = 1 ]; then
    log "configured only (SYMPHONY_OPENSSL_CONFIGURE_ONLY=1): $out.tmp/makefile"
    native_path "$out.tmp"
    exit 0
  fi
  # nmake runs one job at a time.
  (cd "$out.tmp" && nmake -nologo build_libs >make.out 2>&1) || { tail -30 "$out.tmp/make.out" >&2; exit 1; }
else
  (cd "$out.tmp" && env ${tools[@]+"${tools[@]}"} CC="$cc" ./Configure "$target" "${flags[@]}" >configure.out 2>&1) || { tail -30 "$out.tmp/configure.out" >&2; exit 1; }
  # The same stop after Configure (__test__/package/deps.test.js reads the
  # Makefile's CFLAGS).
  if [ "${SYMPHONY_OPENSSL_CONFIGURE_ONLY:-}" = 1 ]; then
    log "configured only (SYMPHONY_OPENSSL_CONFIGURE_ONLY=1): $out.tmp/Makefile"
    native_path "$out.tmp"
    exit 0
  fi
  (cd "$out.tmp" && make -j"$(nproc)" build_libs >make.out 2>&1) || { tail -30 "$out.tmp/make.out" >&2; exit 1; }
fi
mv "$out.tmp" "$out"
echo "$(( $(date +%s) - start ))" > "$out/.built"
log "built in $(cat "$out/.built") s"
echo "$shown"
