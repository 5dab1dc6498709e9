#!/bin/bash
set -euxo pipefail
root=/tmp/deflate-measure
rm -rf $root/build/zlib $root/build/libdeflate
cp -a $root/src/zlib-1.3.1 $root/build/zlib
cd $root/build/zlib
CFLAGS="-O2 -fPIC" ./configure --static
make -j2 libz.a
cd $root/build
cmake -S $root/src/libdeflate-1.23 -B libdeflate -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS="-fPIC" \
  -DLIBDEFLATE_BUILD_SHARED_LIB=OFF -DLIBDEFLATE_BUILD_STATIC_LIB=ON -DLIBDEFLATE_BUILD_GZIP=OFF
cmake --build libdeflate -j2 --verbose
ls -l $root/build/zlib/libz.a $root/build/libdeflate/libdeflate.a
