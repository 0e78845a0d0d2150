#!/usr/bin/env bash
# Copies GoogleTest, GoogleMock and Google Benchmark (headers, libraries and
# their CMake package files) from this Debian machine into .carry/prefix, for a
# GPU machine that has no package manager. CMake finds them there with
# -DCMAKE_PREFIX_PATH=$PWD/.carry/prefix (tools/gpu/stage.sh 04 passes it).
#
#   tools/gpu/carry_test_libs.sh          (needs libgtest-dev libgmock-dev libbenchmark-dev)
#
# The libraries are position-relative (the package files compute their prefix
# from their own location), so the folder works wherever the tree lands. Built
# with Debian 12's GCC 12 and glibc 2.36 (libbenchmark needs glibc >= 2.32),
# they link with any newer GCC.
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
SRC_LIB=/usr/lib/$ARCH
PREFIX=.carry/prefix
for f in /usr/include/gtest/gtest.h /usr/include/benchmark/benchmark.h "$SRC_LIB/libgtest.a" \
         "$SRC_LIB/cmake/GTest/GTestConfig.cmake" "$SRC_LIB/cmake/benchmark/benchmarkConfig.cmake"; do
  [ -e "$f" ] || { echo "missing $f: apt-get install libgtest-dev libgmock-dev libbenchmark-dev" >&2; exit 1; }
done
rm -rf "$PREFIX"
mkdir -p "$PREFIX/include" "$PREFIX/lib/$ARCH/cmake"
cp -r /usr/include/gtest /usr/include/benchmark "$PREFIX/include/"
[ -d /usr/include/gmock ] && cp -r /usr/include/gmock "$PREFIX/include/"
cp -P "$SRC_LIB"/libgtest*.a "$SRC_LIB"/libbenchmark*.so* "$SRC_LIB"/libbenchmark_main.a "$PREFIX/lib/$ARCH/"
ls "$SRC_LIB"/libgmock*.a >/dev/null 2>&1 && cp -P "$SRC_LIB"/libgmock*.a "$PREFIX/lib/$ARCH/"
cp -r "$SRC_LIB/cmake/GTest" "$SRC_LIB/cmake/benchmark" "$PREFIX/lib/$ARCH/cmake/"
du -sh "$PREFIX"
