#!/usr/bin/env bash
# Fetches a folder of another system's packages (unpacked with dpkg -x) into
# deps/cache/sysroot/NAME, once, through a private apt configuration derived
# from this machine's own sources (nothing in the system's apt setup changes).
#
#   deps/sysroot.sh musl-arm64      musl + musl-dev for arm64: headers, crt
#                                   files and libc for the arm64 musl builds
#   deps/sysroot.sh bullseye-x64    Debian 11's libc6 (glibc 2.31), libstdc++6
#                                   and libgcc-s1: runs Node on an old glibc
#                                   to prove the glibc floor of our builds
#
# Prints the folder on stdout; progress on stderr.
set -euo pipefail

name=${1:?usage: deps/sysroot.sh musl-arm64|bullseye-x64}
here=$(cd "$(dirname "$0")" && pwd)
cache=${SYMPHONY_CACHE_DIR:-$here/cache}
out="$cache/sysroot/$name"
log() { echo "sysroot: $*" >&2; }
# shellcheck source=deps/lib.sh
. "$here/lib.sh"

case "$name" in
  musl-arm64) arch=arm64; suite_from=; suite_to=; pkgs=(musl musl-dev) ;;
  bullseye-x64) arch=amd64; suite_from=bookworm; suite_to=bullseye
                pkgs=(libc6 libstdc++6 libgcc-s1) ;;
  *) echo "sysroot.sh: unknown sysroot '$name'" >&2; exit 2 ;;
esac

if [ -f "$out/.done" ]; then
  echo "$out"
  exit 0
fi
mkdir -p "$cache"
lock_file "$cache/.sysroot.lock"

apt="$cache/apt-$name"
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
log "apt-get update ($name)"
private_apt "$apt" deb "$suite_from" "$suite_to" "$arch" ||
  { echo "sysroot.sh: needs apt-get and /etc/apt/sources.list.d/debian.sources" >&2; exit 1; }
(cd "$apt/dl" && apt-get "${APT_OPTS[@]}" download "${pkgs[@]}" >&2)
for deb in "$apt"/dl/*.deb; do
  dpkg -x "$deb" "$out.tmp"
  log "unpacked $(basename "$deb")"
done
rm -rf "$apt" "$out"
mv "$out.tmp" "$out"
touch "$out/.done"
echo "$out"
