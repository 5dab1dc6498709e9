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
cache=${SYMPHONY_DEPS_CACHE:-$here/cache}
out="$cache/sysroot/$name"
log() { echo "sysroot: $*" >&2; }

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
command -v apt-get >/dev/null 2>&1 || { echo "sysroot.sh: needs apt-get" >&2; exit 1; }
src=/etc/apt/sources.list.d/debian.sources
[ -f "$src" ] || { echo "sysroot.sh: $src not found" >&2; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/.sysroot.lock"
flock 9

apt="$cache/apt-$name"
rm -rf "$apt" "$out.tmp"
mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl" "$out.tmp"
# The machine's own sources, binary packages, perhaps another suite.
sed -e 's/^Types:.*$/Types: deb/' "$src" > "$apt/parts/main.sources"
if [ -n "$suite_from" ]; then
  sed -i -e "s/\b$suite_from\b/$suite_to/g" "$apt/parts/main.sources"
fi
opts=(-q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/parts"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
      -o "Dir::State::status=$apt/status" -o APT::Sandbox::User=root
      -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch")
: > "$apt/status"
log "apt-get update ($name)"
apt-get "${opts[@]}" update >&2
resolved=("${pkgs[@]}")
(cd "$apt/dl" && apt-get "${opts[@]}" download "${resolved[@]}" >&2)
for deb in "$apt"/dl/*.deb; do
  dpkg -x "$deb" "$out.tmp"
  log "unpacked $(basename "$deb")"
done
rm -rf "$apt" "$out"
mv "$out.tmp" "$out"
touch "$out/.done"
echo "$out"
