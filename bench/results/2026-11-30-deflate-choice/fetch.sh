#!/bin/bash
set -euo pipefail
log() { echo "fetch: $*" >&2; }
. /work/main/deps/lib.sh
SYMPHONY_CACHE_DIR=/tmp/deflate-measure/cache
apt=$SYMPHONY_CACHE_DIR/apt
private_apt "$apt" deb-src bookworm trixie
apt-cache "${APT_OPTS[@]}" showsrc zlib libdeflate | grep -E '^(Package|Version):'
cd "$apt/dl"
apt-get "${APT_OPTS[@]}" source --download-only zlib libdeflate
ls -l
