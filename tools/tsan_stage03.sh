#!/usr/bin/env bash
# ThreadSanitizer run of stage 03's tests (solutions track).
#
#   tools/tsan_stage03.sh [BUILD_DIR] [gtest options...]     (default BUILD_DIR: build/tsan-clang)
#
# Why clang: ThreadSanitizer knows that one thread's writes are visible to
# another only through synchronisation it observes. GCC's OpenMP runtime
# (libgomp) is not instrumented, so TSan never sees its forks, joins and
# barriers, and reports every buffer handed from one parallel region to the
# next as a race: hundreds of false reports, which no suppression can remove
# without hiding real races in the same lines. LLVM's runtime (libomp) ships
# Archer (libarcher.so), an OMPT tool that libomp loads at start-up and that
# tells TSan about every OpenMP synchronisation (OMP_TOOL_LIBRARIES names the
# one beside this libomp, so no other copy is picked up). TSAN_OPTIONS=ignore_noninstrumented_modules=1, which
# Archer asks for, ignores accesses made inside libomp.so itself; our code,
# stage 01 and stage 02 are all instrumented. If Archer were missing, TSan
# would report libomp's synchronisation as races; and the script fails unless
# Archer says it attached to a TSan build, so it cannot pass by accident.
#
# Exit status: that of the test binary (TSan makes it 66 when it reported
# anything), 3 when Archer did not attach, 2 when clang or Archer is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/tsan-clang}
[ $# -gt 0 ] && shift
CLANG=${CLANG_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
if [ -z "$CLANG" ]; then
  echo "tools/tsan_stage03.sh needs clang++ and LLVM's OpenMP runtime (Debian: apt-get install clang libomp-dev)" >&2
  exit 2
fi
# A build folder configured with another compiler would have its cache wiped, -D options and all.
if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "^CMAKE_CXX_COMPILER:.*=$CLANG\$" "$BUILD/CMakeCache.txt"; then
  echo "$BUILD was configured with another compiler; remove it or name another folder" >&2
  exit 2
fi
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_CXX_COMPILER="$CLANG" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCOURSE_SANITIZE=thread -DCOURSE_TRACKS=solution -DCOURSE_BUILD_BENCHMARKS=OFF -DCOURSE_ENABLE_CUDA=OFF \
  -DCOURSE_WERROR=ON
cmake --build "$BUILD" -j"$(nproc)" --target s03_tests_solution

# The Archer of the same LLVM as libomp, by its full path.
LIBOMP=$(sed -n 's/^OpenMP_omp_LIBRARY:FILEPATH=//p' "$BUILD/CMakeCache.txt")
ARCHER=""
[ -n "$LIBOMP" ] && ARCHER=$(find "$(dirname "$(readlink -f "$LIBOMP")")" -maxdepth 1 -name libarcher.so | head -1)
if [ -z "$ARCHER" ]; then
  echo "libarcher.so not found beside libomp (${LIBOMP:-not found}): without it TSan cannot see OpenMP's synchronisation" >&2
  exit 2
fi
export OMP_TOOL_LIBRARIES="$ARCHER"
export ARCHER_OPTIONS="verbose=1 ${ARCHER_OPTIONS:-}"
export TSAN_OPTIONS="ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
set +e
"$BUILD/bin/s03_tests_solution" --gtest_color=no "$@" 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e
# Archer prints this once per process when it is loaded into a TSan build; anything else means
# the run above proved nothing.
if ! grep -q "Archer detected OpenMP application with TSan, supplying" "$LOG"; then
  echo "tools/tsan_stage03.sh: Archer did not attach to a ThreadSanitizer build ($ARCHER): the run proves nothing" >&2
  exit 3
fi
exit "$status"
